//! The commit that lands, made without touching the target's worktree, and
//! the task's branch moved onto it in the task's own worktree — so the
//! tests run on exactly what will land.
//!
//! Squash and merge are made with plumbing: `git merge-tree --write-tree`
//! merges in memory and names the conflicting files, `git commit-tree`
//! makes the commit. Rebase is git's own rebase in the task's worktree
//! (aborted on a conflict).

use std::path::PathBuf;

use super::plan::{Plan, subject};
use super::{LandError, Strategy};
use crate::error::{Error, Result};
use crate::git::Git;
use crate::worktree::Repo;

/// Makes the commit that lands by `strategy` and moves the task's branch
/// to it; returns it.
pub(super) fn integrate(
    repo: &Repo,
    plan: &Plan,
    strategy: Strategy,
) -> std::result::Result<String, LandError> {
    let new = match strategy {
        Strategy::Rebase => return rebase(repo, plan),
        Strategy::Squash => {
            let tree = merged_tree(repo, plan)?;
            let message = squash_message(repo, plan)?;
            commit_tree(repo, &tree, &[&plan.old], &message)?
        }
        Strategy::Merge => {
            let tree = merged_tree(repo, plan)?;
            let message = merge_message(plan);
            commit_tree(repo, &tree, &[&plan.old, &plan.tip], &message)?
        }
    };
    move_branch(&repo.git, plan, &new)?;
    Ok(new)
}

/// The tree of the target merged with the task's branch (in memory); the
/// conflicting files when they do not merge.
fn merged_tree(repo: &Repo, plan: &Plan) -> std::result::Result<String, LandError> {
    let out = repo.git.output(
        &repo.main_root,
        &[
            "merge-tree",
            "--write-tree",
            "-z",
            "--name-only",
            "--no-messages",
            &plan.old,
            &plan.tip,
        ],
    )?;
    let mut fields = out.stdout.split('\0').filter(|f| !f.is_empty());
    match (out.code, fields.next()) {
        (Some(0), Some(tree)) => Ok(tree.to_string()),
        (Some(1), Some(_)) => Err(conflict(plan, fields.map(str::to_string).collect())),
        _ => Err(Error::Git(format!(
            "`git merge-tree --write-tree {} {}` failed (grove merge needs git 2.38 or newer): {}",
            plan.old, plan.tip, out.stderr
        ))
        .into()),
    }
}

fn conflict(plan: &Plan, mut files: Vec<String>) -> LandError {
    files.dedup();
    LandError::Conflict {
        branch: plan.branch.clone(),
        target: plan.target.clone(),
        worktree: plan.wt.clone(),
        files,
    }
}

/// A new commit of `tree` with `parents` and `message` (the user's
/// identity, as `git commit` would use).
fn commit_tree(repo: &Repo, tree: &str, parents: &[&str], message: &str) -> Result<String> {
    let mut args = vec!["commit-tree", tree];
    for p in parents {
        args.extend(["-p", p]);
    }
    args.extend(["-F", "-"]);
    let out = repo
        .git
        .bytes(&repo.main_root, &args, Some(message.as_bytes()), false)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// The task's title, the subjects of the commits it squashes, and the
/// thread's id as a trailer.
fn squash_message(repo: &Repo, plan: &Plan) -> Result<String> {
    let range = format!("{}..{}", plan.old, plan.tip);
    let subjects = repo.git.run(
        &repo.main_root,
        &["log", "--reverse", "--no-merges", "--format=* %s", &range],
    )?;
    let mut message = subject(plan);
    message.push_str("\n\n");
    if !subjects.is_empty() {
        message.push_str(&subjects);
        message.push_str("\n\n");
    }
    message.push_str(&format!("Grove-Thread: {}\n", plan.thread_id));
    Ok(message)
}

fn merge_message(plan: &Plan) -> String {
    format!(
        "Merge branch '{}' into {}\n\n{}\n\nGrove-Thread: {}\n",
        plan.branch,
        plan.target,
        subject(plan),
        plan.thread_id
    )
}

/// Moves the task's branch (checked out in its worktree, which holds no
/// uncommitted work) to `to`, its files with it.
fn move_branch(git: &Git, plan: &Plan, to: &str) -> Result<()> {
    git.run(&plan.wt, &["reset", "-q", "--keep", to]).map(drop)
}

/// Rebases the task's branch onto the target in its worktree; on a conflict
/// the rebase is aborted and the files named. Returns the new tip.
fn rebase(repo: &Repo, plan: &Plan) -> std::result::Result<String, LandError> {
    let out = repo.git.output(
        &plan.wt,
        &[
            "-c",
            "rebase.autoStash=false",
            "rebase",
            "-q",
            "--no-autosquash",
            "--no-update-refs",
            &plan.old,
        ],
    )?;
    if !out.success {
        let files = repo
            .git
            .run(&plan.wt, &["diff", "--name-only", "--diff-filter=U"])
            .unwrap_or_default();
        let _ = repo.git.output(&plan.wt, &["rebase", "--abort"]);
        let files: Vec<String> = files.lines().map(str::to_string).collect();
        if files.is_empty() {
            return Err(Error::Git(format!(
                "`git rebase {}` failed in {}: {}",
                plan.old,
                plan.wt.display(),
                out.stderr
            ))
            .into());
        }
        return Err(conflict(plan, files));
    }
    Ok(repo.git.run(&plan.wt, &["rev-parse", "HEAD"])?)
}

/// Puts the task's branch back where it was when dropped armed: a step
/// after the integration stopped, and the task is left as it was.
pub(super) struct Restore {
    git: Git,
    wt: PathBuf,
    tip: String,
    armed: bool,
}

impl Restore {
    pub(super) fn new(repo: &Repo, plan: &Plan) -> Restore {
        Restore {
            git: repo.git.clone(),
            wt: plan.wt.clone(),
            tip: plan.tip.clone(),
            armed: true,
        }
    }

    /// The merge landed: the branch stays on the new commit.
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // `--keep` never overwrites a change a test left in the worktree;
        // the old tip stays in the branch's reflog if it refuses.
        let head = self.git.run(&self.wt, &["rev-parse", "HEAD"]);
        if head.is_ok_and(|h| h != self.tip) {
            let _ = self
                .git
                .run(&self.wt, &["reset", "-q", "--keep", &self.tip]);
        }
    }
}
