//! The worktree manager: a branch, a worktree and a thread per agent task;
//! removal that never loses work; clean-up of stale worktrees.

pub mod background;
pub mod carry;
mod create;
pub mod exclude;
pub mod gc;
pub mod naming;
pub mod ownership;
pub mod processes;
mod remove;
pub mod rename;
mod revive;
mod setup_run;
pub use setup_run::{Rerun, rerun as rerun_setup};
mod submodules;
pub mod taskenv;
mod teardown;

pub use crate::git::{Integration, Reason};
pub use crate::git::{Repo, WorktreeEntry, is_dirty, parse_worktree_list};
pub use create::{CreatedTask, DEFAULT_BRANCH_PREFIX, MakeThread, NewTask, create, create_with};
pub(crate) use remove::delete_branch as delete_branch_at;
pub use remove::{RemoveOptions, Removed, remove, unsafe_reasons};
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

pub(crate) use crate::store::is_grove_path;

/// The first `n` of `items`, joined, with `…` when there are more.
pub(crate) fn list_some<S: AsRef<str>>(items: &[S], n: usize) -> String {
    let mut shown: Vec<&str> = items.iter().take(n).map(AsRef::as_ref).collect();
    if items.len() > n {
        shown.push("…");
    }
    shown.join(", ")
}
