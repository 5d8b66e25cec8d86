//! grove: start AI agent tasks in isolated git worktrees and keep each task's
//! conversation next to its code, in the Agent Thread Storage Format v1.1.
//!
//! The library knows nothing of the command line: the `grove` binary parses
//! arguments and calls in here.
//!
//! Words used throughout:
//! - **task**: a branch, a worktree for it and a thread inside, made by
//!   `grove new` for one piece of agent work;
//! - **thread**: one conversation, an ATSF directory `.agent/threads/<id>/`
//!   (`thread.json`, `messages.jsonl`, `assets/`), in the worktree it is
//!   about;
//! - **intent**: a step grove records before a destructive one, so a grove
//!   killed in between leaves what the next run finishes or undoes;
//! - **cache copy**: grove's copy of a task's thread in its data directory,
//!   which keeps the thread when the worktree goes;
//! - **set-aside**: a directory renamed into grove's trash before it is
//!   deleted, so it is never half-deleted under its own name.
//!
//! The modules, in layers: each imports only from those above it in this
//! list (a test, `tests/integration/layers.rs`, fails on any circle), but
//! for one import, explained where it is: the store tells the cache of
//! every change of a task's `thread.json` (`cache::follow`), from the one
//! place such a change passes through.
//!
//! Foundations:
//! - [`fsutil`]: atomic writes, no-follow opens, locks.
//! - [`home`]: grove's data directory and where things go in it.
//! - [`atsf`]: the file format (types, versions, deterministic JSON).
//! - [`intent`]: the journal of steps recorded before they are taken.
//! - [`parallel`]: how many threads the parallel walks use.
//! - [`trash`]: deleting grove's directories by setting them aside first.
//! - [`shellquote`], [`ports`], [`copytree`], [`userconfig`], [`validate`]:
//!   shell words, per-task ports, copy-on-write copies, personal defaults,
//!   the ATSF validator.
//!
//! Threads:
//! - [`store`]: a `.agent/` directory and its threads (create, append, read,
//!   repair) — every write to a thread's files.
//! - [`cache`]: the cache copies, kept in step with the store.
//! - [`git`]: reading git state, and the one wrapper every git mutation
//!   runs through.
//! - [`project`]: which project and `.agent/` a directory belongs to.
//! - [`threads`]: new threads' metadata, and the records grove keeps in it.
//! - [`snapshot`]: the worktree's content recorded as a git tree at each
//!   boundary of an agent's turn, kept alive by a ref under `refs/grove/`.
//! - [`setting`]: settings read from the repository's or the user's config.
//! - [`secrets`]: finding and redacting secrets before a thread leaves.
//! - [`search`]: searching every thread's messages.
//! - [`discovery`]: every thread the repository has, with its status; one
//!   thread by name; the repairs reading makes on the way.
//!
//! Tasks and what is done to threads:
//! - [`setup`]: a fresh worktree's setup (`worktreeHooks`) and its trust.
//! - [`worktree`]: tasks in worktrees (create, carry changes, revive,
//!   remove, gc).
//! - [`land`]: `grove merge` — a task's branch landed on a target branch,
//!   tested, recorded in its thread, the task removed.
//! - [`archive`], [`graph`], [`fork`], [`delete`], [`checkpoint`]: thread
//!   operations — archiving, mentions and the relationship graph, forks and
//!   handoffs, cascade deletion, git checkpoints.
//! - [`pr`]: a pull request's description written from a task's thread.
//! - [`review`]: a task as a reviewer reads it, turn by turn with its diffs.
//! - [`sync`]: threads pushed to and pulled from a git remote.
//! - [`recover`]: finishing or undoing what a killed grove left.
//!
//! Agents:
//! - [`agent`]: which agents there are, their programs and files.
//! - [`import`]: other tools' conversations brought into threads.
//! - [`export`]: threads as documents, or as an agent's own session.
//! - [`capture`]: an agent's conversation captured into its task's thread
//!   as it happens, through the agent's own hooks.
//! - [`launch`]: starting an agent in a task, and resuming a thread in one.
//!
//! Questions about the code:
//! - [`attribution`]: which conversation wrote a line (`grove blame`,
//!   `grove why`) — exact from turn snapshots, inferred from tool calls.
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
pub mod archive;
pub mod atsf;
pub mod attribution;
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
pub mod graph;
pub mod home;
pub mod import;
pub mod intent;
pub mod land;
pub mod launch;
pub mod parallel;
pub mod ports;
pub mod pr;
pub mod project;
pub mod recover;
pub mod review;
pub mod search;
pub mod secrets;
pub mod setting;
pub mod setup;
pub mod shellquote;
pub mod snapshot;
pub mod store;
pub mod sync;
pub mod threads;
pub mod trash;
pub mod userconfig;
pub mod validate;
pub mod worktree;

pub use error::{Error, Hint, Hinted, Result, set_hint_words};
