//! `grove merge`

use std::io::IsTerminal;
use std::path::Path;

use grove::land::{self, LandError, LandOptions, Landed, Strategy};
use grove::project::Project;
use grove::worktree::Repo;

use super::{Output, progress::Reporter};

/// Land a task: its branch onto the target branch (default: the default
/// branch), tested, then the task removed.
///
/// Refuses uncommitted work in the task (--commit commits it). Squashes by
/// default: one commit on the target, titled after the task. The tests
/// (--test, else the project's trusted preMergeCommands) run in the task's
/// worktree on what will land; the target then moves only if it is still
/// where grove found it, and its own worktree, if one has it checked out,
/// is brought along — refused, naming the files, where that worktree has
/// uncommitted changes the merge would touch. On any failure nothing
/// changes on the target. Prints the target's new commit.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it (default: the task whose
    /// worktree grove runs in).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// One commit on the target with the task's whole change (the default).
    #[arg(long, group = "strategy")]
    squash: bool,

    /// Rebase the task's commits onto the target, then fast-forward it.
    #[arg(long, group = "strategy")]
    rebase: bool,

    /// A merge commit on the target.
    #[arg(long, group = "strategy")]
    merge: bool,

    /// The branch to land on (default: the default branch).
    #[arg(long, value_name = "BRANCH")]
    into: Option<String>,

    /// Run CMD in the task's worktree on what will land, instead of the
    /// project's preMergeCommands; a failure stops the merge.
    #[arg(long, value_name = "CMD")]
    test: Option<String>,

    /// Commit the task's uncommitted work first instead of refusing.
    #[arg(long)]
    commit: bool,

    /// Keep the task (worktree, branch and thread) after landing it.
    #[arg(long)]
    keep: bool,

    /// Print what was done as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread.as_deref().unwrap_or("."))?;
    let repo = Repo::new(&found.repo_root)?;
    let options = LandOptions {
        strategy: strategy(&args),
        into: args.into.clone(),
        test: args.test.clone(),
        commit: args.commit,
        keep: args.keep,
        background: std::io::stderr().is_terminal(),
    };
    let reporter = Reporter::new(out.is_quiet() || args.json);
    let leaving = super::shell_init::Leaving::worktree(cwd, found.worktree.as_deref());
    let landed = match land::land(&repo, &found, &options, &reporter) {
        Ok(landed) => landed,
        Err(e) => return Ok(refused(out, &e)),
    };
    drop(reporter);
    if landed.removed.is_some() {
        leaving.done(&found.repo_root);
    }
    report(out, &landed);
    if args.json {
        out.json(&landed)?;
    } else {
        out.line(&landed.target_after)?;
    }
    Ok(match landed.not_removed {
        Some(_) => super::exit::PARTIAL,
        None => super::exit::SUCCESS,
    })
}

fn strategy(args: &Args) -> Strategy {
    match (args.rebase, args.merge) {
        (true, _) => Strategy::Rebase,
        (_, true) => Strategy::Merge,
        _ => Strategy::Squash,
    }
}

/// The error on stderr, with the flag that helps where one does, and the
/// failing test's output; its exit code.
fn refused(out: &Output, e: &LandError) -> u8 {
    let hint = match e {
        LandError::Uncommitted { .. } => " (`grove merge --commit` commits them for you)",
        _ => "",
    };
    out.error(&format!("{e}{hint}"));
    match e {
        LandError::Conflict { .. } => super::exit::CONFLICT,
        LandError::TestFailed {
            outcome, signal, ..
        } => {
            show_log(outcome.log_file.as_deref());
            // Interrupted, as a shell reports it: 128 + the signal.
            signal.map_or(super::exit::TEST_FAILED, |n| {
                u8::try_from(128 + n).unwrap_or(super::exit::ERROR)
            })
        }
        _ => super::exit::ERROR,
    }
}

/// The last lines of a failed test's log, on stderr.
fn show_log(log: Option<&str>) {
    const LINES: usize = 40;
    let Some(text) = log.and_then(|l| grove::fsutil::read(Path::new(l)).ok()) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(LINES);
    for line in &lines[from..] {
        eprintln!("  | {}", super::output::escape_line(line));
    }
}

/// What was done, on stderr.
fn report(out: &Output, landed: &Landed) {
    let short = |c: &str| c.chars().take(12).collect::<String>();
    if let Some(c) = &landed.committed {
        out.status(&format!(
            "grove: committed the uncommitted work as {}",
            short(c)
        ));
    }
    match &landed.already_integrated {
        Some(i) => out.status(&format!(
            "grove: {} is already in {} ({}); nothing to merge",
            landed.branch,
            landed.target,
            i.reason.as_str()
        )),
        None => out.status(&format!(
            "grove: merged {} into {} ({}): {}..{}",
            landed.branch,
            landed.target,
            landed.strategy.as_str(),
            short(&landed.target_before),
            short(&landed.target_after)
        )),
    }
    if let (Some(twt), None) = (&landed.target_worktree, &landed.already_integrated) {
        out.status(&format!(
            "grove: updated the checkout of {} in {}",
            landed.target,
            twt.display()
        ));
    }
    if let Some(why) = &landed.not_recorded {
        out.warn(&format!(
            "the outcome could not be written into the thread: {why}"
        ));
    }
    match (&landed.removed, &landed.not_removed) {
        (Some(removed), _) => {
            super::rm::report_teardown(out, &removed.teardown);
            out.status(&format!(
                "grove: removed {}{}",
                removed.worktree_path.display(),
                if removed.branch_deleted {
                    " and its branch"
                } else {
                    ""
                }
            ));
        }
        (None, Some(why)) => out.warn(&format!("the task was not removed: {why}")),
        (None, None) => {}
    }
}
