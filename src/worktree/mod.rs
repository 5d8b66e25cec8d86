//! The worktree manager: a branch, a worktree and a thread per agent task;
//! removal that never loses work; clean-up of stale worktrees.

pub mod carry;
mod create;
pub mod exclude;
pub mod gc;
mod remove;
mod repo;

pub use create::{
    CreatedTask, DEFAULT_BRANCH_PREFIX, MakeThread, NewTask, branch_prefix, create, create_with,
};
pub use remove::{RemoveOptions, Removed, remove, unsafe_reasons};
pub use repo::{Repo, WorktreeEntry, is_dirty, parse_worktree_list};
