//! `grove push`

use std::path::Path;

use grove::discovery::{self, Options};
use grove::project::Project;
use grove::worktree::Repo;

use super::Output;

/// Send threads to a git remote: each is stored as a commit under
/// `refs/grove/threads/<id>` (its files as the tree, the previous push as
/// parent) and those refs are pushed with your git (its credentials, SSH,
/// hooks). No branch or file of the code changes. A thread that holds
/// secrets (see `grove scan`) is refused unless --redact or
/// --allow-secrets; one with `metadata.grove.share: false`, or a tag of
/// the user config's `push-exclude-tags`, never leaves.
/// When the remote's copy moved, it is fetched, merged (every message
/// once) and pushed again.
#[derive(clap::Args)]
pub struct Args {
    /// Threads to push (id or unique prefix).
    #[arg(value_name = "THREAD", required_unless_present = "all")]
    #[arg(add = super::complete::threads())]
    threads: Vec<String>,

    /// Every thread of this repository.
    #[arg(long, conflicts_with = "threads")]
    all: bool,

    /// The remote (default: the current branch's upstream remote, else origin).
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,

    #[command(flatten)]
    secrets: super::SecretFlags,

    /// Print {remote, pushed: [{threadId, commit, unchanged, merged,
    /// redacted}], skipped: [{threadId, reason, keptHome}], snapshots:
    /// [threadId]} (the threads whose turn snapshots the remote now has).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let repo = Repo::new(&project.main_root)?;
    let found = if args.all {
        let d = discovery::discover(
            &project,
            Options {
                all_repos: false,
                statuses: false,
                details: false,
            },
        )?;
        super::warn_skipped(out, &d.errors);
        d.threads
    } else {
        args.threads
            .iter()
            .map(|t| super::resolve(out, &project, t))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let remote = grove::sync::remote_for(&repo, cwd, args.remote.as_deref())?;
    let excluded = &grove::userconfig::get()?.push_exclude_tags;
    let report = grove::sync::push(&repo, &found, &remote, args.secrets.policy(), excluded)?;
    for s in &report.skipped {
        out.warn(&format!("skipped {}: {}", s.thread_id, s.reason));
    }
    if args.json {
        out.json(&report)?;
    } else {
        for p in &report.pushed {
            let how = match (p.unchanged, p.merged) {
                (true, _) => "unchanged".to_string(),
                (_, true) => "merged with the remote's copy, pushed".to_string(),
                _ => "pushed".to_string(),
            };
            let redacted = match p.redacted {
                0 => String::new(),
                n => format!(", {n} secret(s) redacted"),
            };
            out.line(&format!(
                "{}  {how}{redacted}  {}",
                p.thread_id,
                &p.commit[..p.commit.len().min(12)]
            ))?;
        }
    }
    out.status(&format!(
        "grove: {} thread(s) on {} ({} skipped)",
        report.pushed.len(),
        report.remote,
        report.skipped.len()
    ));
    // A thread refused for its secrets is a failure; one kept home is not.
    let refused = report.skipped.iter().any(|s| !s.kept_home);
    Ok(if refused {
        super::exit::ERROR
    } else {
        super::exit::SUCCESS
    })
}
