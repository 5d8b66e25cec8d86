//! Deleting threads: a thread, with `cascade` its subagent threads
//! (`mainThreadID`), and every relationship entry other threads hold that
//! points at them. A thread's own worktree goes with it, under `grove rm`'s
//! safety rules; nothing is touched until every check has passed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::discovery::{self, Found, Status};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::worktree::{self, RemoveOptions, Repo, exclude};

/// What will be deleted.
#[derive(Debug)]
pub struct Plan {
    /// The thread asked for, then its subagent threads.
    pub targets: Vec<Found>,
    /// Worktrees removed with their threads.
    pub worktrees: Vec<PathBuf>,
    /// Other threads living in those worktrees, deleted with them (only
    /// with `force`; named in the refusal otherwise).
    pub dropped: Vec<String>,
    /// Threads that stay and lose relationship entries.
    pub relinked: Vec<Found>,
    /// What could not be read while looking (each naming its file).
    pub skipped: Vec<Error>,
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
    let discovered = discovery::discover(
        project,
        discovery::Options {
            all_repos: true,
            // rm's checks below look at the worktrees themselves.
            statuses: false,
            details: false,
        },
    )?;
    let skipped = discovered.errors;
    let all = discovered.threads;
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
    let mut dropped = Vec::new();
    for t in &targets {
        if let Some(wt) = own_worktree(t)
            && !worktrees.contains(&wt)
        {
            // Every thread directory there, readable or not, goes with it.
            for other in crate::store::Store::for_project(&wt).thread_dir_names() {
                if !gone.contains(other.as_str()) && !dropped.contains(&other) {
                    dropped.push(other);
                }
            }
            worktrees.push(wt);
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
        dropped,
        relinked,
        skipped,
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
/// worktrees (uncommitted or unpushed work, unmerged branch) and allows
/// dropping the other threads of those worktrees.
pub fn execute(plan: &Plan, force: bool) -> Result<Deleted> {
    check(plan, force)?;
    let ids: Vec<String> = plan
        .targets
        .iter()
        .map(|t| t.thread.id().to_string())
        .chain(plan.dropped.iter().cloned())
        .collect();
    let step = crate::intent::begin(crate::intent::Action::Delete {
        ids: ids.clone(),
        threads: plan
            .targets
            .iter()
            .filter(|t| !t.from_cache)
            .map(|t| t.thread.dir().to_path_buf())
            .collect(),
        cache: plan
            .targets
            .iter()
            .filter_map(|t| crate::cache::thread_dir(&t.repo_root, t.thread.id()).ok())
            .collect(),
        relinked: plan
            .relinked
            .iter()
            .map(|f| f.thread.dir().to_path_buf())
            .collect(),
    })?;

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
                    force: true,
                    keep_branch: false,
                    purge: true,
                    reap: false,
                    background: false,
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
        deleted.threads.push(t.thread.id().to_string());
    }
    for id in &plan.dropped {
        if let Some(t) = plan.targets.first() {
            crate::cache::purge(&t.repo_root, &crate::store::ThreadId::parse(id)?)?;
            forget_snapshots(&t.repo_root, id);
        }
        deleted.threads.push(id.clone());
    }

    let gone: HashSet<String> = ids.into_iter().collect();
    for f in &plan.relinked {
        deleted.links_removed += crate::graph::remove_links(&f.thread, &gone)?;
    }
    step.done();
    Ok(deleted)
}

/// Every check before anything is deleted: a cascade is not left half done
/// by a refusal.
fn check(plan: &Plan, force: bool) -> Result<()> {
    if !plan.dropped.is_empty() && !force {
        return Err(Error::hinted(format!(
            "deleting {} removes {}, which also holds thread(s) {} — they would be deleted too. \
             Pass {{force}} to delete them as well, or delete the thread without its worktree \
             after `{{remove}}`",
            plan.targets
                .first()
                .map(|t| t.thread.id().to_string())
                .unwrap_or_default(),
            plan.worktrees
                .iter()
                .map(|w| w.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            plan.dropped.join(", ")
        )));
    }
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
                return Err(Error::hinted(format!(
                    "not deleting thread {} with its worktree {}: {}. Commit and push (or merge) the work, or pass {{force}}",
                    owner.thread.id(),
                    wt.display(),
                    reasons.join("; ")
                )));
            }
        }
    }
    Ok(())
}

/// The deleted thread's turn snapshots go with it (best effort: a ref left
/// behind holds only objects, and a later delete takes it).
fn forget_snapshots(repo_root: &Path, id: &str) {
    if let Ok(git) = crate::git::cmd::Git::find() {
        let _ = crate::snapshot::chain::forget(&git, repo_root, id);
    }
}

/// Removes a thread's cache entry first (so nothing can restore it from
/// there), then its directory (if still there), each renamed aside before
/// it is deleted, and its entry in the repository's `info/exclude`.
fn delete_thread_files(t: &Found) -> Result<()> {
    crate::cache::purge(&t.repo_root, t.thread.id())?;
    forget_snapshots(&t.repo_root, t.thread.id());
    let dir = t.thread.dir();
    if std::fs::symlink_metadata(dir).is_ok() {
        let store = crate::store::Store::at(
            dir.parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(".")),
        );
        crate::trash::remove_dir(dir, &store.private_dir()?)?;
    }
    if let Some(wt) = &t.worktree
        && wt.is_dir()
        && let Ok(git) = crate::git::cmd::Git::find()
        && let Ok(file) = exclude::exclude_file(&git, wt)
    {
        let rel = Path::new(crate::atsf::AGENT_DIR)
            .join(crate::atsf::THREADS_DIR)
            .join(t.thread.id());
        if let Ok(pattern) = exclude::pattern_for(&rel) {
            exclude::remove(&file, &[format!("{pattern}/")])?;
        }
    }
    Ok(())
}
