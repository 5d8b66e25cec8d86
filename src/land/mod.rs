//! `grove merge`: land a task's branch on a target branch, then remove the
//! task.
//!
//! The steps, one module each: [`plan`] gathers and checks (nothing changes
//! there but `--commit`'s commit in the task); [`integrate`] makes the
//! commit that lands — a squash, a merge or a rebase — and moves the task's
//! branch onto it in the task's own worktree; [`test`] runs the checks
//! there, on exactly what will land; [`advance`] moves the target with a
//! compare-and-swap ref update, bringing the target's worktree along only
//! where it holds no uncommitted work; [`record`] writes the outcome into
//! the thread. One guard ([`integrate::Restore`]) puts the task's branch
//! back when a step after the integration stops: then nothing has changed
//! on the target, and the task is as it was.

mod advance;
mod integrate;
mod plan;
mod record;
mod test;

use std::path::PathBuf;

use serde::Serialize;

use crate::discovery::Found;
use crate::setup::{HookOutcome, HookReporter};
use crate::worktree::{Integration, RemoveOptions, Removed, Repo};

pub use advance::finish_interrupted;
pub use test::merge_hash;

/// How the task's branch lands on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// One new commit on the target holding the task's whole change (the
    /// default: a task is one unit of work, and an agent's many small
    /// commits are its notes, not the project's history).
    #[default]
    Squash,
    /// The task's commits rebased onto the target, which is fast-forwarded.
    Rebase,
    /// A merge commit on the target (always one, even when a fast-forward
    /// was possible).
    Merge,
}

impl Strategy {
    /// Its name: `squash`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Squash => "squash",
            Strategy::Rebase => "rebase",
            Strategy::Merge => "merge",
        }
    }
}

/// What `grove merge` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct LandOptions {
    pub strategy: Strategy,
    /// The target branch; the default branch when `None`.
    pub into: Option<String>,
    /// A command run instead of the configured `preMergeCommands`.
    pub test: Option<String>,
    /// Commit uncommitted work in the task first instead of refusing.
    pub commit: bool,
    /// Keep the task (its worktree and branch) after landing.
    pub keep: bool,
    /// Delete the removed worktree's files in the background.
    pub background: bool,
}

/// Why `grove merge` stopped. Every variant leaves the target as it was.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    /// The task's worktree holds uncommitted work.
    #[error(
        "{} has uncommitted changes: {}; commit them (or let grove commit them), then merge again",
        worktree.display(), files.join(", ")
    )]
    Uncommitted {
        worktree: PathBuf,
        files: Vec<String>,
    },

    /// The task's branch and the target change the same lines.
    #[error(
        "{branch} conflicts with {target} in: {}; nothing was changed on {target}. Rebase {branch} \
         onto {target} in {} and resolve the conflicts, then merge again",
        files.join(", "), worktree.display()
    )]
    Conflict {
        branch: String,
        target: String,
        worktree: PathBuf,
        files: Vec<String>,
    },

    /// A test command failed on what would have landed.
    #[error(
        "the test {:?} failed ({}); nothing was changed on {target}{}",
        outcome.label,
        outcome.reason.as_deref().unwrap_or("failed"),
        outcome.log_file.as_deref().map(|l| format!(", its output is in {l}")).unwrap_or_default()
    )]
    TestFailed {
        target: String,
        outcome: Box<HookOutcome>,
        /// The signal that stopped it (Ctrl-C: SIGINT), when one did.
        signal: Option<i32>,
    },

    /// The configured `preMergeCommands` are not trusted.
    #[error(
        "the preMergeCommands of {} are not trusted ({}); nothing was changed. Review them in \
         .agent/config.json and run `grove trust` there",
        repo.display(), commands.join("; ")
    )]
    Untrusted {
        repo: PathBuf,
        commands: Vec<String>,
    },

    /// The target's worktree has uncommitted changes (or an untracked or
    /// ignored file in the way) where the landing commit changes files.
    #[error(
        "{target} is checked out in {}, which has uncommitted changes (or an untracked or \
         ignored file in the way) in files this merge changes: {}; nothing was changed. Commit, \
         stash or move them there, then merge again",
        worktree.display(), files.join(", ")
    )]
    TargetDirty {
        target: String,
        worktree: PathBuf,
        files: Vec<String>,
    },

    /// The target moved while grove worked (the compare-and-swap failed).
    #[error(
        "{target} moved while grove was merging (from {expected} to {found}); nothing was \
         changed. Merge again to land on its new tip"
    )]
    TargetMoved {
        target: String,
        expected: String,
        found: String,
    },

    #[error(transparent)]
    Grove(#[from] crate::Error),
}

/// What `grove merge` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Landed {
    pub thread_id: String,
    /// The task's branch.
    pub branch: String,
    /// The target branch (short name).
    pub target: String,
    pub strategy: Strategy,
    /// The target's commit before the merge.
    pub target_before: String,
    /// The target's commit after it (the same when the branch was already
    /// integrated).
    pub target_after: String,
    /// The task branch's tip before the merge (after `--commit`'s commit).
    pub branch_tip: String,
    /// The commit `--commit` made of uncommitted work, if it made one.
    pub committed: Option<String>,
    /// Why the branch was already integrated, when it was: nothing was
    /// merged.
    pub already_integrated: Option<Integration>,
    /// The worktree that has the target checked out, brought to the new
    /// commit too.
    pub target_worktree: Option<PathBuf>,
    /// The test commands' outcomes (`--test`, or `preMergeCommands`).
    pub tests: Vec<HookOutcome>,
    /// The removal of the task (`null` with `--keep`, or when it failed).
    pub removed: Option<Removed>,
    /// Why the task could not be removed after landing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_removed: Option<String>,
    /// Why the outcome could not be written into the thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_recorded: Option<String>,
}

/// Lands the task `found` as `options` say; see the module's steps.
pub fn land(
    repo: &Repo,
    found: &Found,
    options: &LandOptions,
    reporter: &dyn HookReporter,
) -> Result<Landed, LandError> {
    let plan = plan::gather(repo, found, options)?;
    let plan = plan::commit_or_refuse(repo, plan, options.commit)?;
    let mut landed = match plan::already_integrated(repo, &plan)? {
        Some(integration) => plan.landed(options.strategy, integration),
        None => land_new_commit(repo, found, &plan, options, reporter)?,
    };
    landed.not_recorded = record::record(found, &landed).err().map(|e| e.to_string());
    // Best effort: the merge is done; without it `rm` says why it keeps
    // the task.
    let _ = track_target(repo, &plan);
    finish(repo, found, options, &mut landed);
    Ok(landed)
}

/// Landed on a branch other than the default one, the task's branch
/// tracks it (when it tracks nothing): its work is saved there, which is
/// what `rm` asks of a branch not in the default branch.
fn track_target(repo: &Repo, plan: &plan::Plan) -> crate::Result<()> {
    let default = repo.default_branch_refs()?;
    if default.contains(&plan.target_ref) || repo.upstream(&plan.branch)?.is_some() {
        return Ok(());
    }
    let upstream = format!("--set-upstream-to={}", plan.target);
    repo.git
        .run(&repo.main_root, &["branch", "-q", &upstream, &plan.branch])
        .map(drop)
}

/// Integrates, tests and advances the target; the task's branch is put back
/// if any of it stops.
fn land_new_commit(
    repo: &Repo,
    found: &Found,
    plan: &plan::Plan,
    options: &LandOptions,
    reporter: &dyn HookReporter,
) -> Result<Landed, LandError> {
    let restore = integrate::Restore::new(repo, plan);
    let new = integrate::integrate(repo, plan, options.strategy)?;
    advance::check_target_worktree(repo, plan, &new)?;
    let tests = test::run(repo, found, plan, options.test.as_deref(), reporter)?;
    advance::advance(repo, plan, &new)?;
    restore.disarm();
    Ok(plan.landed_at(options.strategy, new, tests))
}

/// Removes the task unless `--keep` (a removal that fails is reported, not
/// an error: the merge is done).
fn finish(repo: &Repo, found: &Found, options: &LandOptions, landed: &mut Landed) {
    if options.keep {
        return;
    }
    let remove = RemoveOptions {
        background: options.background,
        ..RemoveOptions::default()
    };
    match crate::worktree::remove(repo, found, remove) {
        Ok(removed) => landed.removed = Some(removed),
        Err(e) => landed.not_removed = Some(e.to_string()),
    }
}
