//! `grove rm`: remove a task's worktree (and branch) without losing work or history.

use std::path::PathBuf;

use serde::Serialize;

use super::{Repo, exclude, is_dirty};
use crate::cache::{self, CacheRecord, CacheState};
use crate::discovery::{Found, Status};
use crate::error::{Error, Result};

/// How to remove.
#[derive(Debug, Clone, Copy, Default)]
pub struct RemoveOptions {
    /// Remove even with uncommitted or unsaved work, and delete an unmerged branch.
    pub force: bool,
    /// Keep the branch.
    pub keep_branch: bool,
    /// Do not keep the thread in the cache (and drop an existing cache entry).
    pub purge: bool,
}

/// What a removal did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub thread_id: String,
    pub worktree_path: PathBuf,
    pub branch: Option<String>,
    pub branch_deleted: bool,
    /// Why the branch was kept, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_kept: Option<String>,
    /// Where the thread is kept now (`null` with --purge).
    pub cached_at: Option<PathBuf>,
}

/// Reasons `rm` refuses without `--force`; empty when removal is safe.
pub fn unsafe_reasons(repo: &Repo, found: &Found) -> Result<Vec<String>> {
    let mut reasons = Vec::new();
    let Some(wt) = &found.worktree else {
        return Ok(reasons);
    };
    if wt.is_dir() && is_dirty(wt)? {
        let status = repo.git.run(wt, &["status", "--short"])?;
        let files: Vec<&str> = status.lines().take(5).collect();
        reasons.push(format!(
            "uncommitted changes in {}: {}",
            wt.display(),
            files.join(", ")
        ));
    }
    if let Some(branch) = &found.branch
        && repo.branch_exists(branch)?
    {
        let commits = repo.unsaved_commits(branch)?;
        if !commits.is_empty() {
            reasons.push(format!(
                "{} commit(s) on {branch} are neither pushed to its upstream nor merged into the default branch: {}",
                commits.len(),
                commits.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
    }
    Ok(reasons)
}

/// Removes the worktree of `found`: checks, caches the thread, `git worktree
/// remove`, then deletes the branch when that is safe.
pub fn remove(repo: &Repo, found: &Found, options: RemoveOptions) -> Result<Removed> {
    let id = found.meta.thread_id.clone();
    let Some(wt) = found.worktree.clone() else {
        return Err(Error::Refused(format!(
            "thread {id} has no worktree (it lives in {}); nothing to remove",
            found.thread.dir().display()
        )));
    };
    if found.status == Status::Removed {
        if options.purge {
            cache::purge(&found.repo_root, &id)?;
        }
        return Err(Error::Refused(format!(
            "the worktree of thread {id} was already removed{}",
            if options.purge {
                "; its cache entry is purged"
            } else {
                ""
            }
        )));
    }
    if let Some(reason) = &found.locked {
        return Err(Error::Refused(format!(
            "worktree {} is locked{}; `git worktree unlock` it first",
            wt.display(),
            if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            }
        )));
    }
    if !options.force {
        let reasons = unsafe_reasons(repo, found)?;
        if !reasons.is_empty() {
            return Err(Error::Refused(format!(
                "not removing {}: {}. Commit and push (or merge) the work, or pass --force",
                wt.display(),
                reasons.join("; ")
            )));
        }
    }

    // The thread is saved before anything is removed.
    let cached_at = if options.purge {
        None
    } else {
        let record = removing_record(found, &wt);
        if found.from_cache {
            cache::set_state(&found.repo_root, &id, CacheState::Removing)?;
            Some(found.thread.dir().to_path_buf())
        } else {
            Some(cache::save(&found.repo_root, &found.thread, &record, true)?)
        }
    };
    // Any other thread kept in this worktree's .agent/ is saved too: removing
    // the directory must not take a conversation with it.
    let mut others = Vec::new();
    if !options.purge && wt.is_dir() {
        for t in crate::store::Store::for_project(&wt).list()?.threads {
            if t.meta.thread_id != id {
                let record = removing_record(found, &wt);
                cache::save(&found.repo_root, &t.thread, &record, true)?;
                others.push(t.meta.thread_id);
            }
        }
    }
    // Only the thread's own directory: the other patterns (a copied config,
    // symlink targets) are shared by every worktree of the repository.
    let thread_rel = std::path::Path::new(crate::atsf::AGENT_DIR)
        .join(crate::atsf::THREADS_DIR)
        .join(&id);
    let excludes = vec![format!("{}/", exclude::pattern_for(&thread_rel))];
    let exclude_file = exclude::exclude_file(&repo.git, &repo.main_root)?;

    if wt.is_dir() {
        let path = wt.to_string_lossy();
        let mut args = vec!["worktree", "remove"];
        if options.force {
            args.push("--force");
        }
        args.push(&path);
        repo.git.run(&repo.main_root, &args)?;
    } else {
        repo.prune()?;
    }
    exclude::remove(&exclude_file, &excludes)?;

    let (branch_deleted, branch_kept) = match &found.branch {
        Some(branch) if !options.keep_branch && repo.branch_exists(branch)? => {
            match branch_deletion(repo, found, branch, options.force)? {
                None => {
                    repo.git.run(&repo.main_root, &["branch", "-D", branch])?;
                    (true, None)
                }
                Some(why) => (false, Some(why)),
            }
        }
        Some(_) if options.keep_branch => (false, Some("--keep-branch".to_string())),
        _ => (false, None),
    };

    if options.purge {
        cache::purge(&found.repo_root, &id)?;
    } else {
        cache::set_state(&found.repo_root, &id, CacheState::Removed)?;
    }
    for other in &others {
        cache::set_state(&found.repo_root, other, CacheState::Removed)?;
    }
    Ok(Removed {
        thread_id: id,
        worktree_path: wt,
        branch: found.branch.clone(),
        branch_deleted,
        branch_kept,
        cached_at,
    })
}

/// The cache record of a thread whose worktree is being removed.
fn removing_record(found: &Found, wt: &std::path::Path) -> CacheRecord {
    CacheRecord {
        repo_root: found.repo_root.to_string_lossy().into_owned(),
        worktree_path: wt.to_string_lossy().into_owned(),
        branch: found.branch.clone().unwrap_or_default(),
        state: CacheState::Removing,
        cached_at: crate::atsf::now_timestamp(),
    }
}

/// `None` when the branch may be deleted; otherwise why it is kept.
fn branch_deletion(
    repo: &Repo,
    found: &Found,
    branch: &str,
    force: bool,
) -> Result<Option<String>> {
    let grove = found.meta.metadata.as_ref().and_then(|m| m.get("grove"));
    let created = grove
        .and_then(|g| g.get("createdBranch")?.as_bool())
        .unwrap_or(false);
    if !created {
        return Ok(Some(format!("{branch} existed before grove used it")));
    }
    if force {
        return Ok(None);
    }
    let tip = repo
        .resolve_commit(&format!("refs/heads/{branch}"))?
        .unwrap_or_default();
    let base = found
        .meta
        .context
        .extra
        .get("baseCommit")
        .and_then(|v| v.as_str());
    if base == Some(tip.as_str()) || repo.is_integrated(&tip, &repo.default_branch_refs()?)? {
        return Ok(None);
    }
    Ok(Some(format!(
        "{branch} is not merged into the default branch; `grove rm --force` or `git branch -D {branch}` deletes it"
    )))
}
