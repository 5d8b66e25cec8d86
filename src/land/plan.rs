//! What a merge works with, gathered and checked before anything changes:
//! the task's worktree and branch, the target and its commit, the worktree
//! that has the target checked out; uncommitted work in the task refused
//! (or committed, when asked); a branch already integrated found.

use std::path::{Path, PathBuf};

use super::{LandError, LandOptions, Landed, Strategy};
use crate::discovery::Found;
use crate::error::{Error, Result};
use crate::setup::HookOutcome;
use crate::worktree::{Integration, Reason, Repo};

/// The facts a merge acts on.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub thread_id: String,
    pub title: String,
    /// The task's worktree.
    pub wt: PathBuf,
    /// The branch checked out there.
    pub branch: String,
    /// Its tip (after `--commit`'s commit).
    pub tip: String,
    /// The commit `--commit` made.
    pub committed: Option<String>,
    /// The target branch, short and full.
    pub target: String,
    pub target_ref: String,
    /// The target's commit when grove looked: the ref moves only from here.
    pub old: String,
    /// The worktree that has the target checked out, if one does.
    pub target_wt: Option<PathBuf>,
}

/// Gathers the plan for `found`; refuses a task without a live worktree,
/// a detached HEAD, and a target that is not a branch or is the task's own.
pub(super) fn gather(repo: &Repo, found: &Found, options: &LandOptions) -> Result<Plan> {
    let id = found.thread.id().to_string();
    let wt = found
        .live_worktree()
        .ok_or_else(|| match found.worktree {
            Some(_) => Error::Refused(format!(
                "the worktree of thread {id} is gone ({}); `grove switch {id}` makes it again, \
                 from its branch",
                found.status.as_str()
            )),
            None => Error::Refused(format!(
                "thread {id} has no worktree, so no branch of its own to merge"
            )),
        })?
        .to_path_buf();
    let branch = branch_of(repo, &wt)?;
    let tip = commit_of(repo, &format!("refs/heads/{branch}"))?;
    let target = match &options.into {
        Some(b) => b.clone(),
        None => default_branch(repo)?,
    };
    if target == branch {
        return Err(Error::Refused(format!(
            "{branch} is the task's own branch; name another branch to merge into"
        )));
    }
    let target_ref = format!("refs/heads/{target}");
    let old = commit_of(repo, &target_ref)?;
    let target_wt = repo
        .worktrees()?
        .into_iter()
        // A checkout whose directory is gone has no files to bring along.
        .find(|w| w.branch.as_deref() == Some(target.as_str()) && !w.bare && w.path.is_dir())
        .map(|w| w.path);
    Ok(Plan {
        thread_id: id,
        title: found.meta.title.clone(),
        wt,
        branch,
        tip,
        committed: None,
        target,
        target_ref,
        old,
        target_wt,
    })
}

/// The branch checked out in the task's worktree.
fn branch_of(repo: &Repo, wt: &Path) -> Result<String> {
    let out = repo
        .git
        .output(wt, &["symbolic-ref", "-q", "--short", "HEAD"])?;
    if !out.success {
        return Err(Error::Refused(format!(
            "{} is on a detached HEAD; check out the task's branch there, then merge again",
            wt.display()
        )));
    }
    Ok(out.stdout.trim().to_string())
}

/// The commit `full_ref` points at; an error naming it when it is none.
fn commit_of(repo: &Repo, full_ref: &str) -> Result<String> {
    repo.resolve_commit(full_ref)?.ok_or_else(|| {
        Error::Refused(format!(
            "{} is not a branch with a commit",
            full_ref.trim_start_matches("refs/heads/")
        ))
    })
}

/// The default branch's local name.
fn default_branch(repo: &Repo) -> Result<String> {
    repo.default_branch_refs()?
        .iter()
        .find_map(|r| r.strip_prefix("refs/heads/").map(str::to_string))
        .ok_or_else(|| {
            Error::Refused(format!(
                "no default branch found in {} (no origin/HEAD, init.defaultBranch, main or \
                 master); name the branch to merge into",
                repo.main_root.display()
            ))
        })
}

/// The task's uncommitted work: refused, or committed when `commit`.
pub(super) fn commit_or_refuse(
    repo: &Repo,
    mut plan: Plan,
    commit: bool,
) -> std::result::Result<Plan, LandError> {
    let files = uncommitted(repo, &plan.wt)?;
    if files.is_empty() {
        return Ok(plan);
    }
    if !commit {
        return Err(LandError::Uncommitted {
            worktree: plan.wt,
            files,
        });
    }
    let made = commit_all(repo, &plan)?;
    plan.tip = made.clone();
    plan.committed = Some(made);
    Ok(plan)
}

/// The worktree's uncommitted paths (untracked ones too), grove's own
/// files left out.
pub(super) fn uncommitted(repo: &Repo, wt: &Path) -> Result<Vec<String>> {
    let out = repo
        .git
        .bytes(wt, &crate::worktree::STATUS_OF_EVERY_CHANGE, None, true)?;
    Ok(status_paths(&out)
        .filter(|p| !crate::store::is_grove_path(p))
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The paths of `git status --porcelain=v1 -z --no-renames`.
pub(super) fn status_paths(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|&b| b == 0)
        .filter(|e| e.len() > 3)
        .map(|e| &e[3..])
}

/// Commits everything in the task's worktree but grove's own files, with
/// the task's title as the message (the user's commit hooks run); returns
/// the new tip.
fn commit_all(repo: &Repo, plan: &Plan) -> Result<String> {
    use crate::atsf::{AGENT_DIR, THREADS_DIR};
    let threads = format!(":(top,exclude){AGENT_DIR}/{THREADS_DIR}");
    let private = format!(":(top,exclude){AGENT_DIR}/{}", crate::store::PRIVATE_DIR);
    repo.git
        .run(&plan.wt, &["add", "-A", "--", ":/", &threads, &private])?;
    let message = format!("{}\n\nGrove-Thread: {}\n", subject(plan), plan.thread_id);
    repo.git.bytes(
        &plan.wt,
        &["commit", "-q", "-F", "-"],
        Some(message.as_bytes()),
        false,
    )?;
    repo.git.run(&plan.wt, &["rev-parse", "HEAD"])
}

/// The first line of the commits grove writes: the task's title, else its
/// branch.
pub(super) fn subject(plan: &Plan) -> String {
    let title = plan.title.lines().next().unwrap_or("").trim();
    if title.is_empty() {
        plan.branch.clone()
    } else {
        title.to_string()
    }
}

/// How the task's branch is already in the target, if it is: then there is
/// nothing to merge.
pub(super) fn already_integrated(repo: &Repo, plan: &Plan) -> Result<Option<Integration>> {
    let targets = [plan.target_ref.clone()];
    let git = crate::git::open(&repo.main_root);
    let oid = git2::Oid::from_str(&plan.tip).ok();
    if let (Some(git), Some(oid)) = (git, oid) {
        let checker = crate::git::integrated::Checker::open(&repo.main_root);
        let found = checker.check(&git, oid, &targets);
        checker.save();
        return found;
    }
    // libgit2 cannot open this repository: ancestry, through git.
    Ok(repo
        .is_integrated(&plan.tip, &targets)?
        .then(|| Integration {
            reason: Reason::Ancestor,
            target: plan.target_ref.clone(),
        }))
}

impl Plan {
    /// The outcome of a merge that landed `new` on the target.
    pub(super) fn landed_at(
        &self,
        strategy: Strategy,
        new: String,
        tests: Vec<HookOutcome>,
    ) -> Landed {
        Landed {
            thread_id: self.thread_id.clone(),
            branch: self.branch.clone(),
            target: self.target.clone(),
            strategy,
            target_before: self.old.clone(),
            target_after: new,
            branch_tip: self.tip.clone(),
            committed: self.committed.clone(),
            already_integrated: None,
            target_worktree: self.target_wt.clone(),
            tests,
            removed: None,
            not_removed: None,
            not_recorded: None,
        }
    }

    /// The outcome when the branch was already integrated: the target is
    /// left where it is.
    pub(super) fn landed(&self, strategy: Strategy, integration: Integration) -> Landed {
        let mut landed = self.landed_at(strategy, self.old.clone(), Vec::new());
        landed.already_integrated = Some(integration);
        landed.target_worktree = None;
        landed
    }
}
