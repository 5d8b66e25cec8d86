//! The target moved to the landing commit: `git update-ref <target> <new>
//! <old>`, a compare-and-swap (git refuses when the target is no longer at
//! `old`). A worktree that has the target checked out would otherwise show
//! the change reversed as uncommitted work, so it is brought along with a
//! two-tree `git read-tree -m -u old new`, which changes only the files the
//! merge changes and keeps every other local change. Where one of those
//! files has uncommitted changes there, the merge is refused first, naming
//! them; if the worktree cannot be brought along after all, the ref goes
//! back (again a compare-and-swap).

use std::path::Path;

use super::LandError;
use super::plan::{Plan, status_paths};
use crate::error::Error;
use crate::intent::{self, Action};
use crate::worktree::Repo;

type Result<T> = std::result::Result<T, LandError>;

/// Refuses when the target's worktree has uncommitted changes in a file
/// the landing commit `new` changes.
pub(super) fn check_target_worktree(repo: &Repo, plan: &Plan, new: &str) -> Result<()> {
    let Some(twt) = &plan.target_wt else {
        return Ok(());
    };
    let touched = changed_files(repo, &plan.old, new)?;
    let dirty = dirty_files(repo, twt)?;
    let mut both: Vec<String> = dirty
        .into_iter()
        .filter(|d| touched.iter().any(|t| overlaps(t, d)))
        .collect();
    if both.is_empty() {
        return Ok(());
    }
    both.sort();
    Err(LandError::TargetDirty {
        target: plan.target.clone(),
        worktree: twt.clone(),
        files: both,
    })
}

/// Moves the target from `plan.old` to `new`, its worktree with it. The
/// two steps are recorded first in the intent journal: a grove killed
/// between them leaves the checkout for the next `grove gc` to bring along
/// ([`finish_interrupted`]).
pub(super) fn advance(repo: &Repo, plan: &Plan, new: &str) -> Result<()> {
    // Looked at again: the tests may have run a long while.
    check_target_worktree(repo, plan, new)?;
    let Some(twt) = &plan.target_wt else {
        return swap(repo, plan, &plan.old, new);
    };
    let step = intent::begin(Action::Land {
        repo: repo.main_root.clone(),
        checkout: twt.clone(),
        target_ref: plan.target_ref.clone(),
        old: plan.old.clone(),
        new: new.to_string(),
    })?;
    let moved = swap(repo, plan, &plan.old, new).and_then(|()| {
        bring_along(repo, twt, &plan.old, new).inspect_err(|_| {
            let _ = swap(repo, plan, new, &plan.old);
        })
    });
    match moved {
        Ok(()) => step.done(),
        Err(_) => step.undone(),
    }
    moved
}

/// Finishes a merge whose grove was killed between moving the target and
/// bringing its checkout along: when the target is at `new` and still
/// checked out in `checkout`, the files the merge changes are brought from
/// `old` to `new` there (nothing is done when they already are).
pub fn finish_interrupted(
    repo: &Path,
    checkout: &Path,
    target_ref: &str,
    old: &str,
    new: &str,
) -> crate::Result<()> {
    let repo = Repo::new(repo)?;
    if repo.resolve_commit(target_ref)?.as_deref() != Some(new) || !checkout.is_dir() {
        return Ok(());
    }
    let head = repo.git.output(checkout, &["symbolic-ref", "-q", "HEAD"])?;
    if head.stdout.trim() != target_ref {
        return Ok(());
    }
    bring_along(&repo, checkout, old, new).map_err(|e| match e {
        LandError::Grove(e) => e,
        other => Error::Other(other.to_string()),
    })
}

/// `git update-ref target to from`: only if the target is still at `from`.
fn swap(repo: &Repo, plan: &Plan, from: &str, to: &str) -> Result<()> {
    let reason = format!(
        "grove merge: {} ({}) onto {}",
        plan.branch, plan.thread_id, plan.target
    );
    let out = repo.git.output(
        &repo.main_root,
        &["update-ref", "-m", &reason, &plan.target_ref, to, from],
    )?;
    if out.success {
        return Ok(());
    }
    let now = repo.resolve_commit(&plan.target_ref)?.unwrap_or_default();
    if now != from {
        return Err(LandError::TargetMoved {
            target: plan.target.clone(),
            expected: from.to_string(),
            found: if now.is_empty() {
                "nothing (it was deleted)".into()
            } else {
                now
            },
        });
    }
    Err(Error::Git(format!(
        "`git update-ref {} {to} {from}` failed: {}",
        plan.target_ref, out.stderr
    ))
    .into())
}

/// The target's worktree `twt` brought from `old` to `new`: its index and
/// the files that differ, nothing else.
fn bring_along(repo: &Repo, twt: &Path, old: &str, new: &str) -> Result<()> {
    // Stat data a `git status` without locks did not write back would
    // make read-tree take an unchanged file for a changed one.
    let _ = repo.git.output(twt, &["update-index", "-q", "--refresh"]);
    let out = repo.git.output(twt, &["read-tree", "-m", "-u", old, new])?;
    if out.success {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "the worktree {} (where the target is checked out) could not be brought to the merged \
         commit: {}; nothing was changed",
        twt.display(),
        out.stderr
    ))
    .into())
}

/// The files that differ between commits `old` and `new`.
fn changed_files(repo: &Repo, old: &str, new: &str) -> Result<Vec<String>> {
    let out = repo.git.bytes(
        &repo.main_root,
        &[
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            old,
            new,
        ],
        None,
        true,
    )?;
    Ok(out
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The uncommitted paths of `twt`, untracked files included.
fn dirty_files(repo: &Repo, twt: &Path) -> Result<Vec<String>> {
    let out = repo
        .git
        .bytes(twt, &crate::worktree::STATUS_OF_EVERY_CHANGE, None, true)?;
    Ok(status_paths(&out)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// Whether a changed file and a dirty path are the same, or one is inside
/// the other (an untracked directory where the merge adds a file).
fn overlaps(changed: &str, dirty: &str) -> bool {
    let inside = |a: &str, b: &str| {
        a.strip_prefix(b)
            .is_some_and(|rest| rest.starts_with('/') || b.ends_with('/'))
    };
    changed == dirty || inside(changed, dirty) || inside(dirty, changed)
}
