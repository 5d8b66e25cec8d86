//! grove: start AI agent tasks in isolated git worktrees and keep each task's
//! conversation next to its code, in the Agent Thread Storage Format v1.1.
//!
//! The library knows nothing of the command line: the `grove` binary parses
//! arguments and calls in here.
//!
//! - [`atsf`]: the file format (types, versions, deterministic JSON).
//! - [`store`]: a `.agent/` directory and its threads (create, append, read, repair).
//! - [`project`]: which project and `.agent/` a directory belongs to.
//! - [`git`]: reading git state.
//! - [`worktree`]: tasks in worktrees (create, carry changes, remove, gc).
//! - [`fork`], [`graph`], [`delete`], [`checkpoint`]: thread operations —
//!   forks and handoffs, mentions and the relationship graph, cascade
//!   deletion, git checkpoints.
//! - [`agent`], [`capture`]: starting Claude Code, Codex or a configured
//!   agent in a task's worktree, and capturing its conversation into the
//!   task's thread as it happens, through the agent's own hooks.
//! - [`land`]: `grove merge` — a task's branch landed on a target branch.
//!
//! ```
//! use grove::atsf::{ContentBlock, Message, Role};
//! use grove::store::{AppendOptions, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::for_project(dir.path());
//! let meta = grove::threads::new_meta("Fix the login bug", "claude-code", Default::default());
//! let thread = store.create_thread(&meta)?;
//! let message = Message::new(Role::User, vec![ContentBlock::text("Fix it")]);
//! thread.append(message, AppendOptions::default())?;
//! assert_eq!(thread.meta()?.stats.message_count, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod agent;
pub mod atsf;
pub mod cache;
pub mod capture;
pub mod checkpoint;
pub mod copytree;
pub mod delete;
pub mod discovery;
mod error;
pub mod export;
pub mod fork;
pub mod fsutil;
pub mod git;
pub mod gitcmd;
pub mod graph;
pub mod home;
pub mod hooks;
pub mod import;
pub mod intent;
pub mod land;
pub mod parallel;
pub mod ports;
pub mod project;
pub mod recover;
pub mod search;
pub mod secrets;
pub mod setting;
pub mod shellquote;
pub mod store;
pub mod sync;
pub mod threads;
pub mod trash;
pub mod userconfig;
pub mod validate;
pub mod worktree;

pub use error::{Error, Result};
