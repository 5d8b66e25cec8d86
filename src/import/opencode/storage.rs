//! OpenCode's older `storage/` tree: a file per session
//! (`session/<project>/<session>.json`), per message
//! (`message/<session>/<message>.json`) and per part
//! (`part/<message>/<part>.json`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Session, s};
use crate::error::{IoContext, Result};
use crate::import::Summary;

/// The session files under `path` (the data or storage directory, a
/// project's sessions, or one session file).
pub(super) fn sources(path: &Path) -> Result<Vec<PathBuf>> {
    let Some(sessions) = [path.join("storage/session"), path.join("session")]
        .into_iter()
        .find(|d| d.is_dir())
        .or_else(|| path.is_dir().then(|| path.to_path_buf()))
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut stack = vec![sessions];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ctx("listing", &dir)? {
            let p = entry.ctx("listing", &dir)?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "json") && storage_of(&p).is_some() {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The storage directory of a session file `<storage>/session/<project>/<id>.json`.
pub(super) fn storage_of(session: &Path) -> Option<PathBuf> {
    let project = session.parent()?;
    let sessions = project.parent()?;
    if sessions.file_name()? != "session" {
        return None;
    }
    let storage = sessions.parent()?;
    storage
        .join("message")
        .is_dir()
        .then(|| storage.to_path_buf())
}

/// The session of the file `path`, with its messages and their parts.
pub(super) fn session(path: &Path, summary: &mut Summary) -> Result<Option<Session>> {
    let Some(storage) = storage_of(path) else {
        return Ok(None);
    };
    let Some(info) = crate::import::read_object(path, "session", summary)? else {
        return Ok(None);
    };
    let Some(id) = s(&info, "id") else {
        summary.errors.push(format!("{}: no `id`", path.display()));
        summary.skip("session", "no id".into());
        return Ok(None);
    };
    let mut records = objects(&storage.join("message").join(&id), "message", summary)?;
    // OpenCode's ids sort in the order they were made; the time decides first.
    records.sort_by_key(|m| {
        (
            m.get("time")
                .and_then(|t| t.get("created"))
                .and_then(Value::as_i64),
            s(m, "id"),
        )
    });
    let mut messages = Vec::new();
    for r in records {
        let parts = match s(&r, "id") {
            Some(message) => {
                let mut parts = objects(&storage.join("part").join(&message), "part", summary)?;
                parts.sort_by_key(|p| {
                    (
                        p.get("time")
                            .and_then(|t| t.get("start"))
                            .and_then(Value::as_i64),
                        s(p, "id"),
                    )
                });
                parts
            }
            None => Vec::new(),
        };
        messages.push((r, parts));
    }
    Ok(Some(Session {
        info,
        messages,
        live: crate::import::is_live(path),
    }))
}

/// The JSON objects in `dir`; a malformed one is named in the summary and
/// left out.
fn objects(dir: &Path, kind: &str, summary: &mut Summary) -> Result<Vec<Map<String, Value>>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    for file in crate::import::json_files(dir)? {
        if let Some(o) = crate::import::read_object(&file, kind, summary)? {
            out.push(o);
        }
    }
    Ok(out)
}
