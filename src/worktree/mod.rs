//! The worktree manager: a branch, a worktree and a thread per agent task;
//! removal that never loses work; clean-up of stale worktrees.

pub mod carry;
mod create;
pub mod exclude;
pub mod gc;
pub mod integrated;
mod listing;
pub mod ownership;
pub mod processes;
mod remove;
mod repo;
mod revive;
mod submodules;
pub mod taskenv;
mod teardown;

pub use create::{CreatedTask, DEFAULT_BRANCH_PREFIX, MakeThread, NewTask, create, create_with};
pub use integrated::{Integration, Reason};
pub(crate) use remove::delete_branch as delete_branch_at;
pub use remove::{RemoveOptions, Removed, remove, unsafe_reasons};
pub use repo::{Repo, WorktreeEntry, is_dirty, parse_worktree_list};
pub(crate) use repo::{cached_as_task_of, grove_worktrees_dir, is_dirty_among_many};
pub use revive::{ReviveOptions, gone_worktree, needs_worktree_here, revive};

/// `git status` of every uncommitted change of a worktree, one NUL-ended
/// entry each: every untracked file (not only its directory), submodules'
/// changes whatever the user's config says, no rename detection (a rename
/// is a deletion and an addition). What `rm` checks and `fork` carries.
pub(crate) const STATUS_OF_EVERY_CHANGE: [&str; 6] = [
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=all",
    "--ignore-submodules=none",
    "--no-renames",
];

/// Whether a path of a worktree (as git prints it, relative to its root) is
/// one of grove's own: `.agent/threads/…` or `.agent/.grove/…`. Those are
/// saved to the cache before a worktree is removed, so they are never
/// "uncommitted work", and never carried into another worktree.
pub(crate) fn is_grove_path(path: &[u8]) -> bool {
    let under = |dir: &str| {
        let prefix = format!("{}/{dir}", crate::atsf::AGENT_DIR);
        path.strip_prefix(prefix.as_bytes())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    };
    under(crate::atsf::THREADS_DIR) || under(crate::store::PRIVATE_DIR)
}
