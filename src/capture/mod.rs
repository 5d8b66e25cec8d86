//! Live capture: the agent's conversation lands in the task's thread as it
//! happens.
//!
//! grove installs the agent's own project-scoped hooks in the worktree
//! ([`install`]); at each turn the agent runs `grove capture claude|codex`,
//! which reads the hook's JSON ([`event`]), finds the task's thread, imports
//! what the transcript gained since the last capture ([`catchup`]) and records
//! the agent's state ([`state`]). Sessions the hooks missed (an untrusted
//! Codex project, an agent killed mid-turn) are found from the agent's own
//! files when grove launched the agent returns, and at `list` and `show`
//! ([`transcripts`]).
//!
//! What a thread keeps, under `metadata.capture`:
//! - `sessions`: the agent sessions captured into it, in the order they
//!   started — `agent`, `sessionId`, `transcript`, `startedAt`, and what the
//!   next capture needs (`offset`, records `waiting`, `tokens`);
//! - `state`: the agent's state (see [`state`]);
//! - `opening`: the prompt grove gave the agent at launch, already in the
//!   thread, so the session's copy is not added twice.

pub mod adopt;
pub mod catchup;
pub mod codex_trust;
pub mod event;
pub mod follow;
mod hookfile;
pub mod install;
mod jsontext;
pub mod ledger;
pub mod opencode;
pub mod report;
pub mod state;
mod textedit;
pub mod transcripts;

pub use crate::threads::sessions::{
    KEY, SessionRecord, add_session, clear_opening, find_session, is_opening, leading_prompt,
    opening_prompt, session_entry, session_entry_mut, sessions, set_opening,
};
