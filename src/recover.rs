//! What a killed grove process left behind, found in its intent journal
//! ([`crate::intent`]), and how `grove gc` finishes or undoes each step:
//!
//! - a staging or trash directory: removed;
//! - a worktree whose thread was never made: removed, and its branch
//!   deleted when grove made it and it still points where it started;
//! - a removal past its checks: finished (unless the worktree has changed
//!   since, which is then reported and left alone);
//! - a fork whose parent lacks its side of the link: the link is written;
//! - a deletion the user confirmed: finished.
//!
//! A step whose work is already complete needs nothing; every action checks
//! the state it finds, so running it twice does no harm.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::atsf;
use crate::cache::{self, CacheState};
use crate::error::{Error, Result};
use crate::intent::{self, Action};
use crate::store::{Store, Thread};
use crate::worktree::Repo;

/// One thing left behind, and what `gc --yes` does about it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The journal it was read from.
    pub journal: PathBuf,
    /// What the interrupted process was doing (`stage`, `worktree`, …).
    pub op: &'static str,
    /// The path concerned.
    pub path: PathBuf,
    /// What gc does (or would do).
    pub action: String,
}

/// Every journal of a process that is gone, with what it left.
pub struct Leftovers {
    journals: Vec<intent::Leftover>,
}

impl Leftovers {
    /// Reads the journals nobody holds (their processes are gone).
    pub fn scan() -> Result<Leftovers> {
        Ok(Leftovers {
            journals: intent::leftovers()?,
        })
    }

    /// What was left, for the plan. A journal with no open step is listed
    /// as such (it is simply deleted).
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for j in &self.journals {
            for step in &j.steps {
                out.push(describe(&j.journal, step));
            }
            for e in &j.errors {
                out.push(Finding {
                    journal: j.journal.clone(),
                    op: "unreadable",
                    path: j.journal.clone(),
                    action: format!("an unreadable line is ignored: {e}"),
                });
            }
        }
        out
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.journals.is_empty()
    }

    /// Finishes or undoes every step. A journal is deleted once all its
    /// steps are dealt with; one that failed is kept, and the errors returned.
    pub fn apply(self) -> Vec<Error> {
        let mut errors = Vec::new();
        // First every half-made worktree: git, killed while adding one, may
        // leave an entry that makes every `git worktree list` fail — and
        // undoing another journal's branch lists worktrees.
        for journal in &self.journals {
            for step in &journal.steps {
                if let Action::Worktree {
                    repo,
                    path,
                    thread_dir,
                    ..
                } = step
                    && !exists(&thread_dir.join(atsf::THREAD_FILE))
                    && let Ok(repo) = Repo::new(repo)
                {
                    let _ = drop_worktree(&repo, path);
                }
            }
        }
        for journal in self.journals {
            let mut ok = true;
            // Newest first: a worktree's thread is staged after the worktree.
            for step in journal.steps.iter().rev() {
                if let Err(e) = apply(step) {
                    ok = false;
                    errors.push(e);
                }
            }
            if ok && let Err(e) = journal.finish() {
                errors.push(e);
            }
        }
        errors
    }
}

fn describe(journal: &Path, step: &Action) -> Finding {
    let (op, path, action) = match step {
        Action::Stage { dir } => (
            "stage",
            dir.clone(),
            "remove the staging directory of a thread that was never published".to_string(),
        ),
        Action::Trash { dir } => ("trash", dir.clone(), "remove the trash directory".into()),
        Action::Worktree {
            path,
            branch,
            created_branch,
            thread_dir,
            ..
        } => {
            let action = if exists(&thread_dir.join(atsf::THREAD_FILE)) {
                "nothing: the task was made (its thread exists)".to_string()
            } else if *created_branch {
                format!(
                    "remove the worktree made without a thread, and branch {branch} if it has no commits"
                )
            } else {
                "remove the worktree made without a thread".to_string()
            };
            ("worktree", path.clone(), action)
        }
        Action::Remove {
            worktree, branch, ..
        } => (
            "remove",
            worktree.clone(),
            format!(
                "finish removing the worktree (its threads are in the cache){}",
                branch
                    .as_ref()
                    .map(|b| format!(" and delete branch {b}"))
                    .unwrap_or_default()
            ),
        ),
        Action::Land {
            checkout,
            target_ref,
            new,
            ..
        } => (
            "land",
            checkout.clone(),
            format!(
                "bring the checkout along to {} at {new}, if {0} is there",
                target_ref.trim_start_matches("refs/heads/")
            ),
        ),
        Action::Link { parent, child, .. } => (
            "link",
            child.clone(),
            format!(
                "write the parent's side of the link in {}",
                parent.display()
            ),
        ),
        Action::Delete { ids, .. } => (
            "delete",
            PathBuf::from(ids.join(", ")),
            "finish deleting the threads the user confirmed".to_string(),
        ),
    };
    Finding {
        journal: journal.to_path_buf(),
        op,
        path,
        action,
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn apply(step: &Action) -> Result<()> {
    match step {
        Action::Stage { dir } | Action::Trash { dir } => crate::trash::remove_now(dir),
        Action::Worktree {
            repo,
            path,
            branch,
            created_branch,
            base_commit,
            thread_dir,
        } => {
            if exists(&thread_dir.join(atsf::THREAD_FILE)) {
                return Ok(());
            }
            let repo = Repo::new(repo)?;
            drop_worktree(&repo, path)?;
            if *created_branch {
                // git, killed while making the branch, may have left its lock.
                repo.clear_stale_ref_locks(branch)?;
                if repo.branch_exists(branch)? {
                    delete_branch(&repo, branch, base_commit)?;
                }
            }
            Ok(())
        }
        Action::Remove {
            repo,
            worktree,
            cached,
            branch,
            branch_tip,
        } => finish_removal(repo, worktree, cached, branch, branch_tip),
        Action::Land {
            repo,
            checkout,
            target_ref,
            old,
            new,
        } => crate::land::finish_interrupted(repo, checkout, target_ref, old, new),
        Action::Link {
            parent,
            child,
            relationship,
        } => finish_link(parent, child, relationship),
        Action::Delete {
            ids,
            threads,
            cache,
            relinked,
        } => {
            for dir in cache {
                let area = dir.parent().unwrap_or(Path::new("."));
                crate::trash::remove_dir(dir, area)?;
            }
            for dir in threads {
                let store = Store::at(
                    dir.parent()
                        .and_then(Path::parent)
                        .unwrap_or(Path::new(".")),
                );
                if exists(dir) {
                    crate::trash::remove_dir(dir, &store.private_dir()?)?;
                }
            }
            let gone = ids.iter().cloned().collect();
            for dir in relinked {
                if let Some(thread) = thread_at(dir)
                    && exists(&thread.meta_path())
                {
                    crate::graph::remove_links(&thread, &gone)?;
                }
            }
            Ok(())
        }
    }
}

/// Removes a worktree git may or may not have finished making.
fn drop_worktree(repo: &Repo, path: &Path) -> Result<()> {
    let p = path.to_string_lossy();
    // Twice --force: git leaves a worktree it was killed while making locked.
    let _ = repo.git.output(
        &repo.main_root,
        &["worktree", "remove", "--force", "--force", &p],
    );
    if exists(path) {
        crate::trash::remove_now(path)?;
    }
    repo.forget_worktree(path)
}

fn finish_removal(
    repo: &Path,
    worktree: &Path,
    cached: &[PathBuf],
    branch: &Option<String>,
    branch_tip: &Option<String>,
) -> Result<()> {
    let repo = Repo::new(repo)?;
    if exists(&worktree.join(".git")) && crate::worktree::is_dirty(worktree)? {
        return Err(Error::hinted(format!(
            "an interrupted `{{remove}}` of {} was not finished: the worktree has uncommitted changes \
             now; `{{remove-force}}` removes it anyway",
            worktree.display()
        )));
    }
    drop_worktree(&repo, worktree)?;
    if let (Some(branch), Some(tip)) = (branch, branch_tip) {
        repo.clear_stale_ref_locks(branch)?;
        if repo.branch_exists(branch)? {
            delete_branch(&repo, branch, tip)?;
        }
    }
    let _lock = cache::lock(&repo.main_root)?;
    for dir in cached {
        if exists(dir) {
            cache::set_state_at(dir, CacheState::Removed)?;
        }
    }
    Ok(())
}

/// Deletes grove's `branch` if it still points at `tip`; when it moved
/// (someone committed on it since), it is kept, and that is said.
fn delete_branch(repo: &Repo, branch: &str, tip: &str) -> Result<()> {
    if crate::worktree::delete_branch_at(repo, branch, tip)? {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "branch {branch}, made by an interrupted grove run, was kept: it no longer points at {} \
         or is checked out; `git branch -D {branch}` deletes it",
        tip.get(..12).unwrap_or(tip)
    )))
}

fn thread_at(dir: &Path) -> Option<Thread> {
    let id = crate::store::ThreadId::parse(dir.file_name()?.to_str()?).ok()?;
    Some(Thread::at(id, dir.to_path_buf()))
}

fn finish_link(parent: &Path, child: &Path, relationship: &atsf::Relationship) -> Result<()> {
    if !exists(&child.join(atsf::THREAD_FILE)) {
        return Ok(());
    }
    let Some(parent) = thread_at(parent) else {
        return Ok(());
    };
    if !exists(&parent.meta_path()) {
        return Ok(());
    }
    let meta = parent.meta()?;
    let present = meta.relationships().iter().any(|r| {
        r.thread_id == relationship.thread_id
            && r.kind == relationship.kind
            && r.role == relationship.role
    });
    if present {
        return Ok(());
    }
    let r = relationship.clone();
    parent
        .update_meta(|m| m.relationships.get_or_insert_with(Vec::new).push(r))
        .map(drop)
}
