//! Bringing a session's new turns into the task's thread.
//!
//! Every capture of a thread runs under one lock of its own (hooks fire in
//! parallel: Codex starts the matching hooks of an event at once, and two
//! agents may share a worktree), so each reads the transcript from where
//! the last one stopped and no message is added twice or skipped. The
//! import itself is the incremental import of `grove import`: only the
//! transcript's new tail is read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::state::{self, AgentState};
use super::{SessionRecord, ledger, transcripts};
use crate::agent::Native;
use crate::error::{Error, Result};
use crate::import::{self, Capture, Destination, Summary};
use crate::store::Thread;

/// How long a capture waits for another capture of the same thread.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The lock serializing the captures of `thread`.
fn lock_path(thread: &Thread) -> Result<PathBuf> {
    let hash = xxhash_rust::xxh3::xxh3_64(thread.dir().as_os_str().as_encoded_bytes());
    Ok(crate::home::data_dir()?
        .join("locks")
        .join(format!("capture-{hash:016x}.lock")))
}

/// What one capture of a session did.
#[derive(Debug, Default)]
pub struct Captured {
    /// The import's summary; `None` when the transcript does not exist (yet).
    pub summary: Option<Summary>,
    /// The session was recorded on the thread by this capture.
    pub new_session: bool,
}

impl Captured {
    /// Messages added to the thread.
    pub fn added(&self) -> u64 {
        self.summary
            .iter()
            .flat_map(|s| &s.threads)
            .map(|t| t.messages_added)
            .sum()
    }
}

/// Records `session` on `thread` (in this machine's [`ledger`] and in
/// `thread.json`) and imports what its transcript gained since the last
/// capture. `session` must come from this machine (a hook of an agent
/// running here, a launch, a session found in the task's worktree), never
/// from a `thread.json`; `repo_root` is the main worktree of the thread's
/// repository. Waits at most [`LOCK_WAIT`] for another capture of the
/// thread; the next capture catches up when this one gives up.
pub fn session(
    thread: &Thread,
    repo_root: &Path,
    native: Native,
    session: &SessionRecord,
) -> Result<Captured> {
    let lock_path = lock_path(thread)?;
    let Some(_lock) = crate::fsutil::FileLock::acquire_within(&lock_path, LOCK_WAIT)? else {
        return Err(Error::Other(format!(
            "another capture of thread {} held its lock for {}s; the next capture takes this turn too",
            thread.id(),
            LOCK_WAIT.as_secs()
        )));
    };
    ledger::record(repo_root, thread.id(), session)?;
    let mut captured = Captured::default();
    let known = thread.meta()?;
    if super::find_session(&known, &session.session_id).is_none()
        || super::find_session(&known, &session.session_id)
            .is_some_and(|s| s.transcript.is_none() && session.transcript.is_some())
    {
        thread.update_meta(|meta| {
            captured.new_session = super::add_session(meta, session);
        })?;
    }
    let Some(transcript) = session.transcript.as_deref().map(PathBuf::from) else {
        return Ok(captured);
    };
    if !transcript.is_file() {
        return Ok(captured);
    }
    let sources = sources(native, &transcript, &session.session_id);
    let format = import::format(native.format())
        .ok_or_else(|| Error::Other(format!("no importer for {}", native.format())))?;
    let destination = Destination::Capture(Capture {
        thread: thread.clone(),
        session: session.session_id.clone(),
        source_id: native.source_thread_id(&session.session_id),
    });
    // Measured before the import: what the agent appends while it runs may
    // or may not be read, and must not count as seen.
    let before = transcripts::progress(native, &transcript, &session.session_id).unwrap_or(0);
    let summary = import::run(format, &sources, &destination)?;
    note_seen(thread, &session.session_id, before)?;
    if native == Native::Codex {
        settle_turn(thread, &session.session_id, &transcript)?;
    }
    captured.summary = Some(summary);
    Ok(captured)
}

/// A Codex turn that ends without a hook — interrupted (Esc, "Cancel
/// task"), or with grove's hooks untrusted — leaves the agent `waiting`,
/// as the rollout says: its last turn event ends a turn, written after the
/// state turned `working`.
fn settle_turn(thread: &Thread, session: &str, rollout: &Path) -> Result<()> {
    let meta = thread.meta()?;
    let Some(now) = state::recorded(&meta) else {
        return Ok(());
    };
    if now.state != AgentState::Working || now.session_id.as_deref().is_some_and(|s| s != session) {
        return Ok(());
    }
    let Some((event, at)) = transcripts::codex_last_turn_event(rollout) else {
        return Ok(());
    };
    let after =
        |a: &str, b: &str| match (a.parse::<jiff::Timestamp>(), b.parse::<jiff::Timestamp>()) {
            (Ok(a), Ok(b)) => a > b,
            _ => false,
        };
    if event == "task_started" || !after(&at, &now.since) {
        return Ok(());
    }
    thread.update_meta(|meta| {
        // Only the state read above: a hook may have set another since.
        if state::recorded(meta).is_some_and(|r| r == now) {
            state::set(meta, AgentState::Waiting, &event, None, Some(session));
        }
    })?;
    Ok(())
}

/// The files of a session: its transcript, and its subagents' beside it —
/// Claude Code's `<session>/subagents/`, Gemini's `<session>/` in its
/// `chats/`.
fn sources(native: Native, transcript: &Path, session: &str) -> Vec<PathBuf> {
    let mut out = vec![transcript.to_path_buf()];
    let sub = match (native, transcript.parent()) {
        (Native::Claude, Some(dir)) => dir.join(session).join("subagents"),
        (Native::Gemini, Some(dir)) => dir.join(session),
        _ => return out,
    };
    if std::fs::read_dir(&sub).is_ok_and(|mut d| d.next().is_some()) {
        out.push(sub);
    }
    out
}

/// Records the transcript as seen as far as `len` (its length; OpenCode's
/// progress), so `list`, `show` and the follow-up know whether there is
/// anything to catch up.
fn note_seen(thread: &Thread, session: &str, len: u64) -> Result<()> {
    let meta = thread.meta()?;
    let seen = meta
        .metadata
        .as_ref()
        .and_then(|m| super::session_entry(m, session))
        .and_then(|e| e.get("seen")?.as_u64());
    if seen == Some(len) {
        return Ok(());
    }
    thread.update_meta(|meta| {
        if let Some(entry) = super::session_entry_mut(meta.metadata_mut(), session) {
            entry.insert("seen".into(), Value::from(len));
        }
    })?;
    Ok(())
}

/// Whether a session's transcript changed since it was last captured.
pub fn behind(meta: &crate::atsf::ThreadMeta, session: &SessionRecord) -> bool {
    let Some(transcript) = &session.transcript else {
        return false;
    };
    let Some(native) = Native::from_name(&session.agent) else {
        return false;
    };
    let Some(len) = transcripts::progress(native, Path::new(transcript), &session.session_id)
    else {
        return false;
    };
    let seen = meta
        .metadata
        .as_ref()
        .and_then(|m| super::session_entry(m, &session.session_id))
        .and_then(|e| e.get("seen")?.as_u64());
    seen != Some(len)
}

/// Whether a session this machine captured into the thread of `meta` has
/// more in its transcript than was captured.
pub fn pending(repo_root: &Path, meta: &crate::atsf::ThreadMeta) -> bool {
    let Ok(id) = crate::store::ThreadId::parse(&meta.thread_id) else {
        return false;
    };
    ledger::sessions(repo_root, &id)
        .iter()
        .any(|s| behind(meta, s))
}

/// Captures every session this machine captured into `thread` whose
/// transcript changed since (what the hooks missed). Returns messages
/// added; a session that cannot be captured is named in the errors, the
/// others go on.
pub fn catch_up(thread: &Thread, repo_root: &Path) -> Result<(u64, Vec<String>)> {
    let meta = thread.meta()?;
    let mut added = 0;
    let mut errors = Vec::new();
    for s in ledger::sessions(repo_root, thread.id()) {
        if !behind(&meta, &s) {
            continue;
        }
        let Some(native) = Native::from_name(&s.agent) else {
            continue;
        };
        match session(thread, repo_root, native, &s) {
            Ok(c) => added += c.added(),
            Err(e) => errors.push(format!("session {}: {e}", s.session_id)),
        }
    }
    Ok((added, errors))
}

/// Finds the sessions of `native` run in `worktree` since `since` that
/// `thread` does not have yet, records them and captures them: what the
/// hooks of an agent grove launched did not bring.
pub fn adopt_since(
    thread: &Thread,
    repo_root: &Path,
    native: Native,
    worktree: &Path,
    since: std::time::SystemTime,
) -> Result<(u64, Vec<String>)> {
    let others = sessions_of_siblings(thread, repo_root);
    let mut added = 0;
    let mut errors = Vec::new();
    for found in transcripts::sessions_since(native, worktree, since) {
        if others.contains(&found.session_id) {
            continue;
        }
        // The transcript is where it was found here, whatever a
        // thread.json says of that session.
        let record = SessionRecord {
            agent: native.agent_id().to_string(),
            session_id: found.session_id.clone(),
            transcript: Some(found.transcript.to_string_lossy().into_owned()),
            started_at: crate::atsf::now_timestamp(),
            exported: false,
            extra: Default::default(),
        };
        match session(thread, repo_root, native, &record) {
            Ok(c) => added += c.added(),
            Err(e) => errors.push(format!("session {}: {e}", found.session_id)),
        }
    }
    Ok((added, errors))
}

/// The sessions this machine captured into the other threads of
/// `thread`'s store: a session found in the worktree that is one of theirs
/// is not adopted.
pub(crate) fn sessions_of_siblings(
    thread: &Thread,
    repo_root: &Path,
) -> std::collections::HashSet<String> {
    let Some(threads_dir) = thread.dir().parent() else {
        return Default::default();
    };
    let Some(agent_dir) = threads_dir.parent() else {
        return Default::default();
    };
    let store = crate::store::Store::at(agent_dir);
    let Ok(listing) = store.list() else {
        return Default::default();
    };
    listing
        .threads
        .iter()
        .filter(|t| t.thread.id() != thread.id())
        .flat_map(|t| ledger::sessions(repo_root, t.thread.id()))
        .map(|s| s.session_id)
        .collect()
}
