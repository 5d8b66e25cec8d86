//! Continuing a thread in a real agent (`grove resume`): the thread written
//! as one of the agent's own sessions, where the agent looks for it, and
//! recorded on the thread so that capturing the resumed session goes on in
//! the same thread (the records carry the messages' ids, so nothing is
//! added twice).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Native;
use crate::capture::{self, SessionRecord, transcripts};
use crate::error::{Error, IoContext, Result};
use crate::export::native::{self, NativeExport};
use crate::store::Thread;

/// A session grove wrote for an agent.
#[derive(Debug, Clone)]
pub struct Written {
    /// Where the session file is.
    pub path: PathBuf,
    /// What was written (with the session id).
    pub report: NativeExport,
}

/// A new session id as `native` makes them: a random UUID for Claude Code,
/// a time-ordered one (v7) for Codex.
pub fn new_session_id(native: Native) -> String {
    match native {
        Native::Claude => uuid::Uuid::new_v4().to_string(),
        Native::Codex => uuid::Uuid::now_v7().to_string(),
    }
}

/// Where `native` keeps session `id` run in `cwd`: Claude Code's
/// `projects/<its name for cwd>/<id>.jsonl`, Codex's
/// `sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`.
pub fn session_path(native: Native, cwd: &Path, id: &str) -> Result<PathBuf> {
    let missing = |what: &str| {
        Error::Other(format!(
            "cannot find {what}: set HOME (or {})",
            match native {
                Native::Claude => "CLAUDE_CONFIG_DIR",
                Native::Codex => "CODEX_HOME",
            }
        ))
    };
    match native {
        Native::Claude => Ok(transcripts::claude_project_dir(cwd)
            .ok_or_else(|| missing("Claude Code's directory"))?
            .join(format!("{id}.jsonl"))),
        Native::Codex => {
            let now = jiff::Zoned::now();
            let day = now.strftime("%Y/%m/%d").to_string();
            let stamp = now.strftime("%Y-%m-%dT%H-%M-%S").to_string();
            Ok(transcripts::codex_home()
                .ok_or_else(|| missing("Codex's directory"))?
                .join("sessions")
                .join(day)
                .join(format!("rollout-{stamp}-{id}.jsonl")))
        }
    }
}

/// Writes `thread` as a new session of `native` run in `cwd`, in the
/// agent's own directory, and records it on the thread. The file is built
/// aside and linked into place: it is whole or absent, and an existing
/// session file is never replaced.
pub fn write_session(thread: &Thread, native: Native, cwd: &Path) -> Result<Written> {
    let id = new_session_id(native);
    let path = session_path(native, cwd, &id)?;
    let report = write_new(&path, |out| native::write(thread, native, &id, cwd, out))?;
    let repo_root = crate::project::Project::discover(cwd)?.main_root;
    record(thread, &repo_root, native, &id, &path)?;
    Ok(Written { path, report })
}

/// Writes a new file `path` with `fill`, whole or not at all; an existing
/// `path` is an error and stays as it was.
pub fn write_new(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<NativeExport>,
) -> Result<NativeExport> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::Other(format!("{} names no file", path.display())))?;
    std::fs::create_dir_all(dir).ctx("creating", dir)?;
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(exists(path));
    }
    let mut tmp = crate::fsutil::temp_file_beside(path)?;
    let report = {
        let mut w = std::io::BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
        let report = fill(&mut w)?;
        w.flush().ctx("writing", path)?;
        report
    };
    tmp.as_file().sync_all().ctx("syncing", path)?;
    tmp.persist_noclobber(path).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            exists(path)
        } else {
            Error::io("writing", path, e.error)
        }
    })?;
    Ok(report)
}

fn exists(path: &Path) -> Error {
    Error::Refused(format!(
        "{} exists; grove never writes over a file of the agent's",
        path.display()
    ))
}

/// Records the written session on the thread, seen to its end: `list` and
/// `show` find nothing to catch up until the agent writes. The first
/// capture then reads the file whole once and adds only the records whose
/// message the thread lacks (what grove wrote carries the ids).
fn record(thread: &Thread, repo_root: &Path, native: Native, id: &str, path: &Path) -> Result<()> {
    let len = std::fs::metadata(path).ctx("reading", path)?.len();
    let session = SessionRecord {
        agent: native.agent_id().to_string(),
        session_id: id.to_string(),
        transcript: Some(path.to_string_lossy().into_owned()),
        started_at: crate::atsf::now_timestamp(),
        exported: true,
        extra: Default::default(),
    };
    capture::ledger::record(repo_root, thread.id(), &session)?;
    thread.update_meta(|meta| {
        capture::add_session(meta, &session);
        if let Some(entry) = capture::session_entry_mut(meta.metadata_mut(), id) {
            entry.insert("seen".into(), Value::from(len));
        }
    })?;
    Ok(())
}
