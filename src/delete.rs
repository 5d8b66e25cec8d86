//! Deleting threads: a thread, with `cascade` its subagent threads
//! (`mainThreadID`), and every relationship entry other threads hold that
//! points at them. A thread's own worktree goes with it, under `grove rm`'s
//! safety rules; nothing is touched until every check has passed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::discovery::{self, Found, Status};
use crate::error::{Error, IoContext, Result};
use crate::project::Project;
use crate::worktree::{self, RemoveOptions, Repo, exclude};

/// What will be deleted.
#[derive(Debug)]
pub struct Plan {
    /// The thread asked for, then its subagent threads.
    pub targets: Vec<Found>,
    /// Worktrees removed with their threads.
    pub worktrees: Vec<PathBuf>,
    /// Threads that stay and lose relationship entries.
    pub relinked: Vec<Found>,
}

/// What was deleted.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deleted {
    pub threads: Vec<String>,
    pub worktrees: Vec<PathBuf>,
    /// Branches deleted with their worktrees.
    pub branches: Vec<String>,
    /// Relationship entries removed from other threads.
    pub links_removed: usize,
}

/// Works out what deleting `target` means. Without `cascade`, a thread
/// that has subagent threads is refused.
pub fn plan(project: &Project, target: &Found, cascade: bool) -> Result<Plan> {
    let all = discovery::discover(
        project,
        discovery::Options {
            all_repos: true,
            // rm's checks below look at the worktrees themselves.
            statuses: false,
        },
    )?
    .threads;
    let id = &target.meta.thread_id;
    let mut ids: Vec<String> = vec![id.clone()];
    // Subagents of subagents too: follow mainThreadID down.
    let mut i = 0;
    while i < ids.len() {
        let current = ids[i].clone();
        for f in &all {
            if f.meta.main_thread_id.as_deref() == Some(current.as_str())
                && !ids.contains(&f.meta.thread_id)
            {
                ids.push(f.meta.thread_id.clone());
            }
        }
        i += 1;
    }
    if ids.len() > 1 && !cascade {
        return Err(Error::Refused(format!(
            "thread {id} has {} subagent thread(s) ({}); pass --cascade to delete them too",
            ids.len() - 1,
            ids[1..].join(", ")
        )));
    }
    let mut targets = vec![target.clone()];
    targets.extend(
        ids[1..]
            .iter()
            .filter_map(|s| all.iter().find(|f| &f.meta.thread_id == s).cloned()),
    );
    let gone: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut worktrees = Vec::new();
    for t in &targets {
        if let Some(wt) = own_worktree(t)
            && !worktrees.contains(&wt)
        {
            // A worktree that also holds threads not being deleted stays.
            let shared = all.iter().any(|f| {
                !gone.contains(f.meta.thread_id.as_str())
                    && !f.from_cache
                    && f.worktree.as_deref() == Some(wt.as_path())
            });
            if !shared {
                worktrees.push(wt);
            }
        }
    }
    let relinked = all
        .into_iter()
        .filter(|f| !gone.contains(f.meta.thread_id.as_str()))
        .filter(|f| {
            f.meta
                .relationships()
                .iter()
                .any(|r| gone.contains(r.thread_id.as_str()))
        })
        .collect();
    Ok(Plan {
        targets,
        worktrees,
        relinked,
    })
}

/// The worktree a thread was created with, while git still knows it.
fn own_worktree(f: &Found) -> Option<PathBuf> {
    f.meta.context.worktree.as_ref()?;
    match f.status {
        Status::Removed | Status::Local => None,
        _ => f.worktree.clone(),
    }
}

/// Deletes what `plan` lists. `force` overrides `rm`'s checks for the
/// worktrees (uncommitted or unpushed work, unmerged branch).
pub fn execute(plan: &Plan, force: bool) -> Result<Deleted> {
    // Every check first: a cascade is not left half done by a refusal.
    for wt in &plan.worktrees {
        let Some(owner) = plan
            .targets
            .iter()
            .find(|t| t.worktree.as_ref() == Some(wt))
        else {
            continue;
        };
        let repo = Repo::new(&owner.repo_root)?;
        if let Some(reason) = &owner.locked {
            return Err(Error::Refused(format!(
                "worktree {} is locked ({reason}); `git worktree unlock` it first",
                wt.display()
            )));
        }
        if !force {
            let reasons = worktree::unsafe_reasons(&repo, owner)?;
            if !reasons.is_empty() {
                return Err(Error::Refused(format!(
                    "not deleting thread {} with its worktree {}: {}. Commit and push (or merge) the work, or pass --force",
                    owner.meta.thread_id,
                    wt.display(),
                    reasons.join("; ")
                )));
            }
        }
    }

    let mut deleted = Deleted::default();
    // Subagents first, the thread asked for last.
    for t in plan.targets.iter().rev() {
        let remove_worktree = own_worktree(t)
            .is_some_and(|w| plan.worktrees.contains(&w) && !deleted.worktrees.contains(&w));
        if remove_worktree {
            let repo = Repo::new(&t.repo_root)?;
            let removed = worktree::remove(
                &repo,
                t,
                RemoveOptions {
                    force,
                    keep_branch: false,
                    purge: true,
                },
            )?;
            if removed.branch_deleted
                && let Some(b) = removed.branch
            {
                deleted.branches.push(b);
            }
            deleted.worktrees.push(removed.worktree_path);
        }
        delete_thread_files(t)?;
        deleted.threads.push(t.meta.thread_id.clone());
    }

    let gone: HashSet<String> = deleted.threads.iter().cloned().collect();
    for f in &plan.relinked {
        deleted.links_removed += crate::graph::remove_links(&f.thread, &gone)?;
        f.refresh_cache()?;
    }
    Ok(deleted)
}

/// Removes a thread's directory (if still there), its cache entry, and its
/// entry in the repository's `info/exclude`.
fn delete_thread_files(t: &Found) -> Result<()> {
    let dir = t.thread.dir();
    if dir.exists() {
        remove_dir(dir)?;
    }
    crate::cache::purge(&t.repo_root, &t.meta.thread_id)?;
    if let Some(wt) = &t.worktree
        && wt.is_dir()
        && let Ok(git) = crate::gitcmd::Git::find()
        && let Ok(file) = exclude::exclude_file(&git, wt)
    {
        let rel = Path::new(crate::atsf::AGENT_DIR)
            .join(crate::atsf::THREADS_DIR)
            .join(&t.meta.thread_id);
        exclude::remove(&file, &[format!("{}/", exclude::pattern_for(&rel))])?;
    }
    Ok(())
}

/// Renames the directory aside first, so the thread disappears at once
/// (never half deleted under its own name), then removes it.
fn remove_dir(dir: &Path) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let aside = parent.join(format!(".grove-deleted-{}", uuid::Uuid::new_v4()));
    std::fs::rename(dir, &aside).ctx("moving aside", dir)?;
    std::fs::remove_dir_all(&aside).ctx("removing", &aside)
}
