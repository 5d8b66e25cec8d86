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
pub mod snapshots;
pub mod state;
mod textedit;
pub mod transcripts;

pub use crate::threads::sessions::{
    KEY, SessionRecord, add_session, clear_opening, find_session, is_opening, leading_prompt,
    opening_prompt, session_entry, session_entry_mut, sessions, set_opening,
};

/// Writes one of capture's records (what install made, the Codex trust it
/// added) in grove's data directory as pretty JSON, replacing it whole;
/// `what` names it in an error. An unchanged record is not written again.
pub(crate) fn save_record(
    path: &std::path::Path,
    what: &str,
    record: &impl serde::Serialize,
) -> crate::error::Result<()> {
    let bytes = serde_json::to_vec_pretty(record)
        .map_err(|e| crate::error::Error::Other(format!("recording {what}: {e}")))?;
    if crate::fsutil::read_opt(path)?.as_deref() == Some(bytes.as_slice()) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        crate::fsutil::real_dir(&crate::home::data_dir()?, dir)?;
    }
    crate::fsutil::write_atomic(path, &bytes)
}

/// Deletes one of capture's records; one already gone is no error.
pub(crate) fn forget_record(path: &std::path::Path) -> crate::error::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(crate::error::Error::io("removing", path, e))
        }
        _ => Ok(()),
    }
}
