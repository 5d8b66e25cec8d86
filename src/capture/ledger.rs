//! This machine's own record of the agent sessions captured into each
//! thread, and of where their transcripts are:
//! `<data dir>/capture/<repository key>/<thread id>/<session id>.json`.
//!
//! `thread.json` lists a thread's sessions too (`metadata.capture.sessions`),
//! but that file travels: a `grove pull`, or a thread committed to a
//! repository, can put any path there, and reading it would import whatever
//! agent session sits at that path on this machine (and the next push would
//! send it). So which transcript grove reads for a thread is decided from
//! this ledger only, which only this machine's capture writes: a hook of an
//! agent running here, a launch, a resume, a session found in the task's
//! own worktree. The repository's key keeps a thread of another repository
//! that claims the same id from reading this one's sessions.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SessionRecord;
use crate::error::{Error, Result};

/// One session as this machine recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    agent: String,
    session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transcript: Option<PathBuf>,
    started_at: String,
}

/// The ledger of the repository whose main worktree is `repo_root`.
fn repo_dir(repo_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::data_dir()?
        .join("capture")
        .join(crate::home::repo_key(repo_root)))
}

/// The ledger directory of thread `thread_id` of the repository whose main
/// worktree is `repo_root`.
fn thread_dir(repo_root: &Path, thread_id: &str) -> Result<PathBuf> {
    crate::store::validate_thread_id(thread_id)?;
    Ok(repo_dir(repo_root)?.join(thread_id))
}

/// A file of grove's own beside thread `thread_id`'s session entries (not
/// a `.json`, so it is never taken for one).
pub(crate) fn side_file(repo_root: &Path, thread_id: &str, name: &str) -> Result<PathBuf> {
    Ok(thread_dir(repo_root, thread_id)?.join(name))
}

/// Every directory of the repository's ledger (for `gc`'s look for files a
/// killed writer left).
pub fn dirs(repo_root: &Path) -> Vec<PathBuf> {
    let Ok(root) = repo_dir(repo_root) else {
        return Vec::new();
    };
    std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Whether `id` can name a session file: what agents use (UUIDs, Codex's
/// v7 ids) and nothing that could leave the directory.
fn plain_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// Records that this machine captures `session` into thread `thread_id`
/// (a transcript learned later completes an entry; one recorded stays).
pub fn record(repo_root: &Path, thread_id: &str, session: &SessionRecord) -> Result<()> {
    if !plain_session_id(&session.session_id) {
        return Err(Error::Other(format!(
            "{:?} is not a session id grove records",
            session.session_id
        )));
    }
    let dir = thread_dir(repo_root, thread_id)?;
    let path = dir.join(format!("{}.json", session.session_id));
    let known = read_entry(&path);
    if known
        .as_ref()
        .is_some_and(|k| k.transcript.is_some() || session.transcript.is_none())
    {
        return Ok(());
    }
    let entry = Entry {
        agent: session.agent.clone(),
        session_id: session.session_id.clone(),
        transcript: session.transcript.as_ref().map(PathBuf::from),
        started_at: known.map_or_else(|| session.started_at.clone(), |k| k.started_at),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
    let bytes = serde_json::to_vec_pretty(&entry).map_err(|e| Error::Other(e.to_string()))?;
    // One file per session: two captures recording it at once write the
    // same thing, and no read-modify-write of a shared file is needed.
    crate::fsutil::write_atomic(&path, &bytes)
}

fn read_entry(path: &Path) -> Option<Entry> {
    let bytes = crate::fsutil::read_opt(path).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The sessions this machine captured into thread `thread_id`, in the order
/// they started. An entry that cannot be read is left out.
pub fn sessions(repo_root: &Path, thread_id: &str) -> Vec<SessionRecord> {
    let Ok(dir) = thread_dir(repo_root, thread_id) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<Entry> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| read_entry(&e.path()))
        .filter(|e| plain_session_id(&e.session_id))
        .collect();
    out.sort_by(|a, b| (&a.started_at, &a.session_id).cmp(&(&b.started_at, &b.session_id)));
    out.into_iter()
        .map(|e| SessionRecord {
            agent: e.agent,
            session_id: e.session_id,
            transcript: e.transcript.map(|p| p.to_string_lossy().into_owned()),
            started_at: e.started_at,
            exported: false,
            extra: Default::default(),
        })
        .collect()
}

/// Whether this machine captured session `session_id` into thread
/// `thread_id`.
pub fn has(repo_root: &Path, thread_id: &str, session_id: &str) -> bool {
    plain_session_id(session_id)
        && thread_dir(repo_root, thread_id)
            .is_ok_and(|d| d.join(format!("{session_id}.json")).is_file())
}
