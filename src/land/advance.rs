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
    let changes = changed_files(repo, &plan.old, new)?;
    let dirty = dirty_files(repo, twt)?;
    let mut both: Vec<String> = dirty
        .into_iter()
        .filter(|d| changes.iter().any(|(_, t)| overlaps(t, d)))
        .collect();
    // git takes ignored files for expendable and would overwrite one where
    // the merge adds a file; grove does not (a `.env`, a local log).
    let in_the_way: Vec<String> = changes
        .into_iter()
        .filter(|(added, path)| *added && in_the_way(twt, path))
        .map(|(_, path)| path)
        .filter(|p| !both.contains(p))
        .collect();
    both.extend(in_the_way);
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
    if let Err(e) = swap(repo, plan, &plan.old, new) {
        step.undone();
        return Err(e);
    }
    let Err(e) = bring_along(repo, twt, &plan.old, new) else {
        step.done();
        return Ok(());
    };
    // The ref goes back; if it cannot, the step stays open for `gc`.
    if swap(repo, plan, new, &plan.old).is_ok() {
        step.undone();
    }
    Err(e)
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

/// The files that differ between commits `old` and `new`, each with
/// whether `new` adds it.
fn changed_files(repo: &Repo, old: &str, new: &str) -> Result<Vec<(bool, String)>> {
    let out = repo.git.bytes(
        &repo.main_root,
        &[
            "diff-tree",
            "-r",
            "-z",
            "--name-status",
            "--no-renames",
            old,
            new,
        ],
        None,
        true,
    )?;
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).filter(|f| !f.is_empty()).collect();
    Ok(fields
        .chunks_exact(2)
        .map(|pair| {
            (
                pair[0].starts_with(b"A"),
                String::from_utf8_lossy(pair[1]).into_owned(),
            )
        })
        .collect())
}

/// Whether something the merge would replace is on disk where it adds
/// `path`: a file there, or a file where one of its directories goes.
fn in_the_way(twt: &Path, path: &str) -> bool {
    let at = twt.join(path);
    if std::fs::symlink_metadata(&at).is_ok() {
        return true;
    }
    at.ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(twt) && *a != twt)
        .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| !m.is_dir()))
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

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn a_dirty_path_overlaps_the_same_file_and_what_contains_or_is_inside_it() {
        assert!(overlaps("src/a.rs", "src/a.rs"));
        assert!(overlaps("docs/new.md", "docs/"));
        assert!(overlaps("docs/new.md", "docs"));
        assert!(overlaps("docs", "docs/old.md"));
        assert!(!overlaps("src/a.rs", "src/a.rs.orig"));
        assert!(!overlaps("src/ab.rs", "src/a"));
        assert!(!overlaps("README.md", "local.txt"));
    }
}
