//! `grove pull`

use std::path::Path;

use grove::project::Project;
use grove::worktree::Repo;

use super::Output;

/// Fetch the threads pushed to a git remote (`refs/grove/threads/*`) and
/// bring them in: a thread this machine has gets the messages it lacks
/// (merged by message id: every message once, the same order on every
/// machine); another machine's thread goes into grove's cache with status
/// `remote`, where show, search, export, fork and resume find it.
#[derive(clap::Args)]
pub struct Args {
    /// The remote (default: the current branch's upstream remote, else origin).
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,

    /// Print {remote, threads: [{threadId, outcome, newMessages}], failed:
    /// [{threadId, reason, keptHome}], snapshots: [threadId]} (the threads
    /// whose turn snapshots here gained the remote's).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let repo = Repo::new(&project.main_root)?;
    let remote = grove::sync::remote_for(&repo, cwd, args.remote.as_deref())?;
    let report = grove::sync::pull(&project, &repo, &remote)?;
    for f in &report.failed {
        out.warn(&format!("could not bring in {}: {}", f.thread_id, f.reason));
    }
    if args.json {
        out.json(&report)?;
    } else {
        for t in report.threads.iter().filter(|t| t.outcome != "unchanged") {
            out.line(&format!(
                "{}  {}, {} new message(s)",
                t.thread_id, t.outcome, t.new_messages
            ))?;
        }
    }
    let changed = report
        .threads
        .iter()
        .filter(|t| t.outcome != "unchanged")
        .count();
    out.status(&format!(
        "grove: {} thread(s) on {}: {changed} new or updated, {} could not be brought in",
        report.threads.len() + report.failed.len(),
        report.remote,
        report.failed.len()
    ));
    Ok(if report.failed.is_empty() {
        super::exit::SUCCESS
    } else {
        super::exit::ERROR
    })
}
