//! Walking every store of the repository — the main `.agent/`, each
//! worktree's, the cache, other repositories' caches — for the threads
//! they hold. Reading only, but for the repairs of [`super::heal`] it runs
//! on the way.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cache::{self, CacheRecord, CacheState};
use crate::error::{Error, Result};
use crate::git::{Repo, WorktreeEntry};
use crate::project::Project;
use crate::store::{Keep, Store, ThreadId};

use super::heal::{finish_interrupted_removals, restore};
use super::status::compute_statuses;
use super::{Discovered, Found, Options, Status, sort_newest_first};

/// Finds the threads of `project`'s repository. One unreadable thread,
/// store or cache entry never stops the others: each is reported in
/// [`Discovered::errors`], naming its file.
///
/// The cache is read last, and only for the threads no worktree answered
/// for: a live thread's copy is never parsed.
pub fn discover(project: &Project, options: Options) -> Result<Discovered> {
    discover_matching(project, options, &|_| true)
}

/// [`discover`] of the threads whose id `keep` accepts: the others are not
/// read (their directory names are, nothing more).
pub fn discover_matching(
    project: &Project,
    options: Options,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Discovered> {
    discover_kept(project, options, Keep::Where(keep))
}

/// [`discover_matching`] of the threads `keep` names.
pub(super) fn discover_kept(
    project: &Project,
    options: Options,
    keep: Keep<'_>,
) -> Result<Discovered> {
    let mut out = Discovered::default();
    let main_root = project.main_root.clone();
    let mut seen: HashSet<String> = HashSet::new();
    add_local(project, &mut out, &mut seen, keep);
    let cached_ids: Vec<(ThreadId, PathBuf)> = match keep {
        Keep::Id(id) => cache::entry(&main_root, id)?.into_iter().collect(),
        Keep::Where(_) => cache::entries(Some(&main_root))?
            .into_iter()
            .filter(|(id, _)| keep.accepts(id))
            .collect(),
    };
    let unseen = |seen: &HashSet<String>, ids: &[(ThreadId, PathBuf)]| {
        ids.iter()
            .filter(|(id, _)| !seen.contains(id.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    let repo = match &project.git {
        Some(_) => Some(Repo::new(&main_root)?),
        None => None,
    };
    let mut rest = Vec::new();
    if let Some(repo) = &repo {
        let worktrees = linked_worktrees(repo, &main_root, &mut out.errors);
        let mut live = Vec::new();
        for wt in worktrees.iter().filter(|w| w.path.is_dir()) {
            for f in worktree_threads(&main_root, wt, &mut out.errors, keep) {
                if seen.insert(f.thread.id().to_string()) {
                    live.push(out.threads.len());
                    out.threads.push(f);
                }
            }
        }
        let (cached, errors) = cache::load(unseen(&seen, &cached_ids));
        out.errors.extend(errors);
        if let Err(e) = finish_interrupted_removals(repo, &cached) {
            out.errors.push(e);
        }
        for c in &cached {
            let home = Path::new(&c.record.worktree_path);
            let Some(wt) = worktrees.iter().find(|w| w.path == home) else {
                rest.push(c.clone());
                continue;
            };
            if !wt.path.is_dir() && c.record.state == CacheState::Removing {
                // An interrupted `rm`, finished above: the worktree is gone.
                rest.push(c.clone());
            } else if !wt.path.is_dir() {
                seen.insert(c.thread.id().to_string());
                out.threads
                    .push(from_cache(c, Status::Missing, wt.locked.clone()));
            } else if c.record.state == CacheState::Live && thread_dir_there(wt, c) {
                // The thread is there and cannot be read (its error is
                // among the warnings): never restored over, never taken
                // for removed.
                seen.insert(c.thread.id().to_string());
                out.threads
                    .push(from_cache(c, Status::Unreadable, wt.locked.clone()));
            } else if c.record.state == CacheState::Live {
                // The worktree is there but lost the thread (`git clean -fdx`).
                match restore(&main_root, wt, c) {
                    Ok(f) => {
                        seen.insert(f.thread.id().to_string());
                        live.push(out.threads.len());
                        out.threads.push(f);
                    }
                    Err(e) => {
                        out.errors.push(e);
                        rest.push(c.clone());
                    }
                }
            } else {
                rest.push(c.clone());
            }
        }
        if options.statuses {
            compute_statuses(repo, &mut out.threads, &live)?;
        }
    } else {
        let (cached, errors) = cache::load(unseen(&seen, &cached_ids));
        out.errors.extend(errors);
        rest = cached;
    }
    for c in &rest {
        if seen.insert(c.thread.id().to_string()) {
            let status = match c.record.state {
                CacheState::Remote => Status::Remote,
                _ => Status::Removed,
            };
            out.threads.push(from_cache(c, status, None));
        }
    }
    if options.all_repos {
        let known: Vec<&Path> = cached_ids.iter().map(|(_, d)| d.as_path()).collect();
        add_other_repositories(&mut out, &mut seen, &main_root, &known, options, keep)?;
    }
    sort_newest_first(&mut out.threads);
    Ok(out)
}

/// Whether the worktree `wt` still has a directory (or anything) under the
/// name of cached thread `c`.
pub(super) fn thread_dir_there(wt: &WorktreeEntry, c: &cache::CachedThread) -> bool {
    std::fs::symlink_metadata(Store::for_project(&wt.path).thread_dir(c.thread.id())).is_ok()
}

/// `--all`: the other repositories of grove's cache. Those still there
/// answer for their own tasks, with real statuses; the cache, for what is
/// gone.
pub(super) fn add_other_repositories(
    out: &mut Discovered,
    seen: &mut HashSet<String>,
    main_root: &Path,
    ours: &[&Path],
    options: Options,
    keep: Keep<'_>,
) -> Result<()> {
    let others = cache::entries(None)?
        .into_iter()
        .filter(|(id, dir)| {
            keep.accepts(id) && !seen.contains(id.as_str()) && !ours.contains(&dir.as_path())
        })
        .collect();
    let (all, errors) = cache::load(others);
    out.errors.extend(errors);
    let roots: std::collections::BTreeSet<PathBuf> = all
        .iter()
        .map(|c| PathBuf::from(&c.record.repo_root))
        .filter(|r| r != main_root && r.is_dir())
        .collect();
    let options = Options {
        all_repos: false,
        ..options
    };
    for root in roots {
        let Ok(other) = Project::discover(&root) else {
            continue;
        };
        if other.main_root == main_root {
            continue;
        }
        if let Ok(found) = discover_kept(&other, options, keep) {
            out.errors.extend(found.errors);
            for f in found.threads {
                if seen.insert(f.thread.id().to_string()) {
                    out.threads.push(f);
                }
            }
        }
    }
    for c in all {
        if Path::new(&c.record.repo_root) != main_root && seen.insert(c.thread.id().to_string()) {
            out.threads.push(from_cache(&c, Status::Removed, None));
        }
    }
    Ok(())
}

/// The threads of the main checkout's `.agent/`.
pub(super) fn add_local(
    project: &Project,
    out: &mut Discovered,
    seen: &mut HashSet<String>,
    keep: Keep<'_>,
) {
    match project.main_store().list_unordered(keep) {
        Ok(listing) => {
            out.errors.extend(listing.errors);
            for t in listing.threads {
                seen.insert(t.thread.id().to_string());
                out.threads.push(Found::local(t, &project.main_root));
            }
        }
        Err(e) => out.errors.push(e),
    }
}

/// The repository's linked worktrees (not the main one, not bare). A broken
/// worktree entry (git killed while adding it) makes git refuse to list any:
/// reported, and the rest of the answer goes on without worktrees.
pub(super) fn linked_worktrees(
    repo: &Repo,
    main_root: &Path,
    errors: &mut Vec<Error>,
) -> Vec<WorktreeEntry> {
    let listed = repo.worktrees().unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    listed
        .into_iter()
        .filter(|w| !w.bare && w.path != main_root)
        .filter(|w| w.path.canonicalize().ok().as_deref() != Some(main_root))
        .collect()
}

/// The threads of one linked worktree that exists, every one of them kept
/// in the cache and out of `git status`.
pub(super) fn worktree_threads(
    main_root: &Path,
    wt: &WorktreeEntry,
    errors: &mut Vec<Error>,
    keep: Keep<'_>,
) -> Vec<Found> {
    let store = Store::for_project(&wt.path);
    let record = CacheRecord {
        repo_root: main_root.to_string_lossy().into_owned(),
        worktree_path: wt.path.to_string_lossy().into_owned(),
        branch: wt.branch.clone().unwrap_or_default(),
        state: CacheState::Live,
        cached_at: crate::atsf::now_timestamp(),
    };
    let listing = match store.list_unordered(keep) {
        Ok(listing) => listing,
        Err(e) => {
            errors.push(e);
            return Vec::new();
        }
    };
    errors.extend(listing.errors);
    if !listing.threads.is_empty()
        && let Err(e) = store.hide_threads_from_git()
    {
        errors.push(e);
    }
    listing
        .threads
        .into_iter()
        .map(|t| {
            // Keep the cache current whenever a live thread is read.
            if let Err(e) = cache::refresh(main_root, &t.thread, &record) {
                errors.push(e);
            }
            Found::in_worktree(t.thread, t.meta, t.written, wt, main_root)
        })
        .collect()
}

pub(super) fn from_cache(c: &cache::CachedThread, status: Status, locked: Option<String>) -> Found {
    Found {
        thread: c.thread.clone(),
        meta: c.meta.clone(),
        status,
        // Another machine's thread has no worktree (nor branch) here.
        worktree: Some(PathBuf::from(&c.record.worktree_path))
            .filter(|p| !p.as_os_str().is_empty()),
        branch: Some(c.record.branch.clone()).filter(|b| !b.is_empty()),
        locked,
        repo_root: PathBuf::from(&c.record.repo_root),
        from_cache: true,
        integration: None,
        written: None,
    }
}
