//! A session as `opencode export <id>` writes it: `{"info": session,
//! "messages": [{"info": message, "parts": [part…]}]}`.

use std::path::Path;

use serde_json::{Map, Value};

use super::Session;
use crate::error::Result;
use crate::import::Summary;

/// Whether `path` is a JSON file that looks like an export (its first
/// bytes name `info`, and it is not a storage record).
pub(super) fn is_export(path: &Path) -> bool {
    if path.extension().is_none_or(|e| e != "json") || !path.is_file() {
        return false;
    }
    let mut head = [0u8; 512];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.trim_start().starts_with('{') && head.contains("\"info\"")
}

/// The session of the export `path`.
pub(super) fn session(path: &Path, summary: &mut Summary) -> Result<Option<Session>> {
    let Some(mut whole) = crate::import::read_object(path, "export", summary)? else {
        return Ok(None);
    };
    let info = match whole.remove("info") {
        Some(Value::Object(info)) => info,
        _ => {
            summary
                .errors
                .push(format!("{}: no `info` object", path.display()));
            summary.skip("export", "no info".into());
            return Ok(None);
        }
    };
    let mut messages = Vec::new();
    let list = match whole.remove("messages") {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    for (i, m) in list.into_iter().enumerate() {
        let Value::Object(mut m) = m else {
            summary.errors.push(format!(
                "{}: messages[{i}] is not an object",
                path.display()
            ));
            summary.skip("message", "not an object".into());
            continue;
        };
        let Some(Value::Object(record)) = m.remove("info") else {
            summary
                .errors
                .push(format!("{}: messages[{i}] has no `info`", path.display()));
            summary.skip("message", "no info".into());
            continue;
        };
        let parts: Vec<Map<String, Value>> = match m.remove("parts") {
            Some(Value::Array(parts)) => parts
                .into_iter()
                .filter_map(|p| match p {
                    Value::Object(p) => Some(p),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        messages.push((record, parts));
    }
    Ok(Some(Session {
        info,
        messages,
        // An export is a copy: nothing more comes to it.
        live: false,
    }))
}
