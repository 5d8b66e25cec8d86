//! Finding every thread grove knows of: the main `.agent/`, the `.agent/` of
//! every worktree git knows, and the cache — each with a status.
//!
//! - [`walk`]: every store of the repository, walked for its threads;
//! - [`status`]: where each task stands against git;
//! - [`resolve`]: one thread by the name a user gives;
//! - [`heal`]: the repairs reading threads makes on the way (its only
//!   writes).

mod by_name;
mod heal;
mod resolve;
mod status;
mod walk;

pub use heal::cache_if_in_worktree;
pub use resolve::{cache_copy_for, find_thread, resolve, resolve_reporting, with_cache_hint};
pub use status::integration;
pub use walk::{discover, discover_matching};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::atsf::ThreadMeta;
use crate::error::Error;
use crate::git::Integration;
use crate::git::changes::{Divergence, HeadCommit, Uncommitted};
use crate::store::Thread;

/// Where a thread stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// In the main `.agent/`, without a worktree of its own.
    Local,
    /// Its worktree exists and has no uncommitted changes.
    Live,
    /// Its worktree has uncommitted changes.
    Dirty,
    /// Its branch has commits and all are integrated into the default branch.
    Merged,
    /// Git still knows its worktree, but the directory is gone.
    Missing,
    /// Its worktree was removed; the thread lives in the cache.
    Removed,
    /// Another machine's thread, brought by `grove pull` into the cache.
    Remote,
    /// Its worktree exists, but the thread there cannot be read (a
    /// `threadId` that is not its directory's name, bad JSON, a link):
    /// shown from grove's cache, and left alone until it is fixed.
    Unreadable,
}

impl Status {
    /// Every status, in the order `list` explains them.
    pub const ALL: [Status; 8] = [
        Status::Local,
        Status::Live,
        Status::Dirty,
        Status::Merged,
        Status::Missing,
        Status::Removed,
        Status::Remote,
        Status::Unreadable,
    ];

    /// The status named `s` (`dirty`).
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The status as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Local => "local",
            Status::Live => "live",
            Status::Dirty => "dirty",
            Status::Merged => "merged",
            Status::Missing => "missing",
            Status::Removed => "removed",
            Status::Remote => "remote",
            Status::Unreadable => "unreadable",
        }
    }
}

/// A thread and where it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub thread: Thread,
    pub meta: ThreadMeta,
    pub status: Status,
    /// The worktree the thread belongs to, if any.
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
    /// Git's lock reason when the worktree is locked.
    pub locked: Option<String>,
    /// Root of the repository's main working tree.
    pub repo_root: PathBuf,
    /// Whether the thread was read from the cache.
    pub from_cache: bool,
    /// Why its branch counts as integrated into the default branch (when
    /// its status is `merged`).
    pub integration: Option<Integration>,
    /// When its `thread.json` was last written, when the read that found it
    /// said so (`None`: [`last_activity`] asks).
    pub written: Option<std::time::SystemTime>,
    /// Where its worktree stands against git, when [`Options::details`]
    /// asked and it has a worktree.
    pub details: Option<Details>,
}

/// What `grove list` shows of a task's worktree beside its status; each
/// part `None` when it could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// What is not committed.
    pub uncommitted: Option<Uncommitted>,
    /// Its branch against the default branch.
    pub divergence: Option<Divergence>,
    /// The commit its branch is on.
    pub head: Option<HeadCommit>,
}

impl Found {
    /// A thread of the main checkout's `.agent/` (no worktree of its own).
    pub(super) fn local(listed: crate::store::ListedThread, main_root: &Path) -> Found {
        Found {
            status: Status::Local,
            worktree: None,
            branch: listed.meta.context.git_branch.clone(),
            locked: None,
            repo_root: main_root.to_path_buf(),
            from_cache: false,
            integration: None,
            written: listed.written,
            details: None,
            thread: listed.thread,
            meta: listed.meta,
        }
    }

    /// A thread living in the linked worktree `wt` (status `live` until
    /// statuses are computed).
    pub(super) fn in_worktree(
        thread: Thread,
        meta: ThreadMeta,
        written: Option<std::time::SystemTime>,
        wt: &crate::git::WorktreeEntry,
        main_root: &Path,
    ) -> Found {
        Found {
            status: Status::Live,
            worktree: Some(wt.path.clone()),
            branch: wt.branch.clone(),
            locked: wt.locked.clone(),
            repo_root: main_root.to_path_buf(),
            from_cache: false,
            integration: None,
            written,
            details: None,
            thread,
            meta,
        }
    }

    /// The worktree directory, when it exists and the thread lives in it.
    pub fn live_worktree(&self) -> Option<&Path> {
        match self.status {
            Status::Live | Status::Dirty | Status::Merged if !self.from_cache => {
                self.worktree.as_deref().filter(|w| w.is_dir())
            }
            _ => None,
        }
    }
}

/// What to find.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also other repositories' cached threads.
    pub all_repos: bool,
    /// Compute `dirty`/`merged` (costs a status per worktree).
    pub statuses: bool,
    /// With `statuses`, also each worktree's [`Details`] (a `git diff` per
    /// worktree with changed tracked files; the rest read in process).
    pub details: bool,
}

/// Everything found, and the threads that could not be read.
#[derive(Debug, Default)]
pub struct Discovered {
    pub threads: Vec<Found>,
    pub errors: Vec<Error>,
}

pub(super) fn sort_newest_first(threads: &mut [Found]) {
    threads.sort_by_cached_key(|f| {
        (
            std::cmp::Reverse(last_activity(f)),
            f.meta.thread_id.clone(),
        )
    });
}

/// When a thread last saw activity: its `updatedAt`, its last checkpoint,
/// or grove's last write of it (`thread.json`'s time) — so a fresh fork or
/// an import of an old session is not listed below older tasks. `updatedAt`
/// itself keeps the spec's meaning.
pub fn last_activity(f: &Found) -> Option<jiff::Timestamp> {
    // The time the read that found it saw; asked only when it did not say.
    let written = f
        .written
        .or_else(|| {
            std::fs::symlink_metadata(f.thread.meta_path())
                .and_then(|m| m.modified())
                .ok()
        })
        .and_then(|t| jiff::Timestamp::try_from(t).ok());
    let checkpoint = f
        .meta
        .git
        .as_ref()
        .and_then(|g| g.checkpointed_at.as_deref()?.parse().ok());
    [
        f.meta.updated_at.parse().ok(),
        f.meta.created_at.parse().ok(),
        checkpoint,
        written,
    ]
    .into_iter()
    .flatten()
    .max()
}
