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
use crate::store::ThreadId;

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
fn thread_dir(repo_root: &Path, thread_id: &ThreadId) -> Result<PathBuf> {
    Ok(repo_dir(repo_root)?.join(thread_id))
}

/// A file of grove's own beside thread `thread_id`'s session entries (not
/// a `.json`, so it is never taken for one).
pub(crate) fn side_file(repo_root: &Path, thread_id: &ThreadId, name: &str) -> Result<PathBuf> {
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
pub fn record(repo_root: &Path, thread_id: &ThreadId, session: &SessionRecord) -> Result<()> {
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
pub fn sessions(repo_root: &Path, thread_id: &ThreadId) -> Vec<SessionRecord> {
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

/// The threads of the repository that have sessions in the ledger, by id:
/// one listing, so that a look over thousands of threads opens nothing for
/// the threads that have none.
pub fn threads_with_sessions(repo_root: &Path) -> std::collections::HashSet<String> {
    dirs(repo_root)
        .into_iter()
        .filter_map(|d| Some(d.file_name()?.to_str()?.to_owned()))
        .collect()
}

/// Whether this machine captured session `session_id` into thread
/// `thread_id`.
pub fn has(repo_root: &Path, thread_id: &ThreadId, session_id: &str) -> bool {
    plain_session_id(session_id)
        && thread_dir(repo_root, thread_id)
            .is_ok_and(|d| d.join(format!("{session_id}.json")).is_file())
}

/// A worktree whose new sessions of an agent go into a thread: what a hook
/// that names no thread (Codex's, one command for every task of the
/// repository) captures into, for a session this ledger does not know yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// The thread.
    pub thread: String,
    /// The worktree's root, canonical.
    pub worktree: PathBuf,
    /// The agent (`codex`).
    pub agent: String,
    /// grove made the worktree's agent directory (Codex's `.codex/`) for
    /// it: taken out with the claim when empty.
    #[serde(default)]
    pub created_dir: bool,
    /// When it was claimed.
    pub at: String,
}

/// Where the claims of the repository are: beside its threads' entries,
/// in a directory no thread id can name.
fn claims_dir(repo_root: &Path) -> Result<PathBuf> {
    Ok(repo_dir(repo_root)?.join(".worktrees"))
}

/// The claim file of `worktree` for `agent`.
fn claim_path(repo_root: &Path, worktree: &Path, agent: &str) -> Result<PathBuf> {
    let canonical = std::fs::canonicalize(worktree).unwrap_or_else(|_| worktree.to_path_buf());
    let hash = xxhash_rust::xxh3::xxh3_64(canonical.as_os_str().as_encoded_bytes());
    if !plain_session_id(agent) {
        return Err(Error::Other(format!("{agent:?} is not an agent id")));
    }
    Ok(claims_dir(repo_root)?.join(format!("{hash:016x}-{agent}.json")))
}

/// Records that new sessions of `agent` in `worktree` go into thread
/// `thread_id` (the latest claim of a worktree wins: the task launched or
/// installed last). `created_dir` carries over from an earlier claim.
pub fn claim(
    repo_root: &Path,
    worktree: &Path,
    thread_id: &str,
    agent: &str,
    created_dir: bool,
) -> Result<()> {
    crate::store::validate_thread_id(thread_id)?;
    let path = claim_path(repo_root, worktree, agent)?;
    let known = read_claim(&path);
    if known
        .as_ref()
        .is_some_and(|k| k.thread == thread_id && (k.created_dir || !created_dir))
    {
        return Ok(());
    }
    let claim = Claim {
        thread: thread_id.to_string(),
        worktree: std::fs::canonicalize(worktree).unwrap_or_else(|_| worktree.to_path_buf()),
        agent: agent.to_string(),
        created_dir: created_dir || known.is_some_and(|k| k.created_dir),
        at: crate::atsf::now_timestamp(),
    };
    let bytes = serde_json::to_vec_pretty(&claim).map_err(|e| Error::Other(e.to_string()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    crate::fsutil::write_atomic(&path, &bytes)
}

fn read_claim(path: &Path) -> Option<Claim> {
    let bytes = crate::fsutil::read_opt(path).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The claim on `worktree` for `agent`, if any.
pub fn claimant(repo_root: &Path, worktree: &Path, agent: &str) -> Option<Claim> {
    let claim = read_claim(&claim_path(repo_root, worktree, agent).ok()?)?;
    crate::store::validate_thread_id(&claim.thread).ok()?;
    Some(claim)
}

/// Takes back thread `thread_id`'s claim on `worktree` (another thread's
/// stays); returns it when there was one.
pub fn unclaim(
    repo_root: &Path,
    worktree: &Path,
    thread_id: &str,
    agent: &str,
) -> Result<Option<Claim>> {
    let path = claim_path(repo_root, worktree, agent)?;
    let Some(claim) = read_claim(&path).filter(|c| c.thread == thread_id) else {
        return Ok(None);
    };
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", &path, e)),
        _ => Ok(Some(claim)),
    }
}

/// Every claim of the repository for `agent`.
pub fn claims(repo_root: &Path, agent: &str) -> Vec<Claim> {
    let Ok(dir) = claims_dir(repo_root) else {
        return Vec::new();
    };
    let suffix = format!("-{agent}.json");
    std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(&suffix))
        .filter_map(|e| read_claim(&e.path()))
        .filter(|c| c.agent == agent && crate::store::validate_thread_id(&c.thread).is_ok())
        .collect()
}
