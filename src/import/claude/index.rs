//! A transcript's records as the tree needs them, without their content:
//! where each line is, its uuid and parent, its kind, and which tool calls
//! its results answer. A first pass builds this for the whole file, holding
//! one record at a time; the records are read again one by one when their
//! thread is written.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::super::lines::Line;
use crate::atsf;

/// One record of the transcript.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub offset: u64,
    pub len: usize,
    pub line: u64,
    pub kind: Box<str>,
    pub uuid: Option<Box<str>>,
    pub parent: Option<Box<str>>,
    pub sidechain: bool,
    pub time: Option<Box<str>>,
    /// A user record that only carries tool results (joined to their calls).
    pub only_results: bool,
    /// A prompt or a reply.
    pub substantive: bool,
    /// For a record without a uuid, a hash of its bytes: its message id.
    pub hash: Option<Box<str>>,
}

impl super::super::tree::Node for Entry {
    fn uuid(&self) -> Option<&str> {
        self.uuid.as_deref()
    }
    fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }
    fn sidechain(&self) -> bool {
        self.sidechain
    }
    fn substantive(&self) -> bool {
        self.substantive
    }
    fn line(&self) -> u64 {
        self.line
    }
    fn time(&self) -> Option<String> {
        self.time.as_deref().map(str::to_string)
    }
}

/// What the whole transcript says of itself.
#[derive(Debug, Default)]
pub(super) struct Facts {
    pub session: Option<String>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub version: Option<String>,
    /// tool_use_id → the entry holding its result.
    pub results: HashMap<String, usize>,
    /// The ids of the tool calls made.
    pub calls: std::collections::HashSet<String>,
}

fn str_of<'a>(raw: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    raw.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The content blocks of a user or assistant record.
pub(super) fn blocks(raw: &Map<String, Value>) -> Option<&Vec<Value>> {
    raw.get("message")?.get("content")?.as_array()
}

/// A user record whose content is only tool results.
pub(super) fn only_results(raw: &Map<String, Value>) -> bool {
    str_of(raw, "type") == Some("user")
        && blocks(raw).is_some_and(|b| {
            !b.is_empty()
                && b.iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
}

/// The tool_use_ids a record's results answer.
pub(super) fn result_ids(raw: &Map<String, Value>) -> impl Iterator<Item = &str> {
    blocks(raw)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
}

/// The entry of `raw`, read from `line`.
pub(super) fn entry(line: &Line, raw: &Map<String, Value>) -> Entry {
    let kind = str_of(raw, "type").unwrap_or("unknown");
    let only = only_results(raw);
    Entry {
        offset: line.offset,
        len: line.bytes.len(),
        line: line.number,
        kind: kind.into(),
        uuid: str_of(raw, "uuid").map(Into::into),
        parent: str_of(raw, "parentUuid").map(Into::into),
        sidechain: raw.get("isSidechain").and_then(Value::as_bool) == Some(true),
        time: str_of(raw, "timestamp")
            .and_then(|t| atsf::normalize_timestamp(t).ok())
            .map(Into::into),
        only_results: only,
        substantive: matches!(kind, "user" | "assistant") && !only,
        hash: str_of(raw, "uuid")
            .is_none()
            .then(|| hex16(&line.bytes).into()),
    }
}

impl Facts {
    /// Takes what record `raw` (entry `index`) says of the session.
    pub fn take(&mut self, index: usize, raw: &Map<String, Value>) {
        let first = |slot: &mut Option<String>, key: &str| {
            if slot.is_none() {
                *slot = str_of(raw, key).map(str::to_string);
            }
        };
        first(&mut self.session, "sessionId");
        first(&mut self.cwd, "cwd");
        first(&mut self.branch, "gitBranch");
        first(&mut self.version, "version");
        for id in result_ids(raw) {
            self.results.entry(id.to_string()).or_insert(index);
        }
        for b in blocks(raw).into_iter().flatten() {
            if b.get("type").and_then(Value::as_str) == Some("tool_use")
                && let Some(id) = b.get("id").and_then(Value::as_str)
            {
                self.calls.insert(id.to_string());
            }
        }
    }
}

/// The first 16 hex digits of the SHA-256 of `bytes`.
fn hex16(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}
