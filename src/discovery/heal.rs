//! Repairs that reading threads makes on the way, so a grove killed at
//! any instruction leaves nothing half-done for long: a thread whose
//! worktree was made again gets its files back from the cache, removals
//! an interrupted `rm` recorded are finished, a thread written in a linked
//! worktree gets its cache copy. The only writes of discovery.

use std::path::Path;

use crate::cache::{self, CacheRecord, CacheState};
use crate::error::Result;
use crate::git::{Repo, WorktreeEntry};
use crate::project::Project;
use crate::store::{Store, Thread};

use super::Found;

/// Puts a cached thread back into the worktree that lost it.
pub(super) fn restore(
    main_root: &Path,
    wt: &WorktreeEntry,
    c: &cache::CachedThread,
) -> Result<Found> {
    let store = Store::for_project(&wt.path);
    let thread = cache::restore(c, &store)?;
    let meta = thread.meta()?;
    Ok(Found::in_worktree(thread, meta, None, wt, main_root))
}

/// A `grove rm` that stopped after caching: if the directory is gone, let
/// git forget it and mark the thread removed; if it is still there, it is live.
pub(super) fn finish_interrupted_removals(
    repo: &Repo,
    cached: &[cache::CachedThread],
) -> Result<()> {
    for c in cached
        .iter()
        .filter(|c| c.record.state == CacheState::Removing)
    {
        let wt = Path::new(&c.record.worktree_path);
        if wt.exists() {
            cache::set_state(&repo.main_root, c.thread.id(), CacheState::Live)?;
        } else {
            // rm checked this worktree before it began; no other is touched.
            repo.forget_worktree(wt)?;
            cache::set_state(&repo.main_root, c.thread.id(), CacheState::Removed)?;
        }
    }
    Ok(())
}

/// Saves a thread just made in a linked worktree's `.agent/` (an import, a
/// fork with `--no-worktree`, `new --no-worktree` run there) to the cache at
/// once, as `grove new` does for a task's own thread. A thread elsewhere
/// needs nothing.
pub fn cache_if_in_worktree(project: &Project, thread: &Thread) -> Result<()> {
    let Some(threads) = thread.dir().parent() else {
        return Ok(());
    };
    let Some(root) = threads.parent().and_then(Path::parent) else {
        return Ok(());
    };
    let store = Store::for_project(root);
    if store.threads_dir() != threads || !store.in_linked_worktree() {
        return Ok(());
    }
    let branch = crate::git::discover(root)?
        .and_then(|info| info.branch)
        .unwrap_or_default();
    let record = CacheRecord {
        repo_root: project.main_root.to_string_lossy().into_owned(),
        worktree_path: root.to_string_lossy().into_owned(),
        branch,
        state: CacheState::Live,
        cached_at: crate::atsf::now_timestamp(),
    };
    cache::save(&project.main_root, thread, &record, false).map(drop)
}
