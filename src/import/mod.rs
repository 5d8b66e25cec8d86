//! Importers: other agent tools' conversations brought into ATSF threads.
//!
//! Common rules, whatever the format:
//! - The source is only read.
//! - A new thread is built aside and moved into place whole.
//! - Importing again is incremental: the thread id is derived from the
//!   source's own id, message ids from the source's record ids, so only
//!   messages not yet in the thread are appended.
//! - Nothing is dropped: records an importer does not map become `system`
//!   messages carrying the raw record; the summary counts, per kind, what was
//!   mapped, joined, kept raw or skipped (and why).

pub mod amp;
pub mod claude;
pub mod codex;
pub mod dagent;
pub mod hq;
pub mod sage;
mod tree;

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use std::path::Path;

use crate::atsf::{self, ContentBlock, Message, Relationship, Role, Stats, ThreadMeta, ToolStatus};
use crate::error::{Error, IoContext, Result};
use crate::store::{AppendOptions, Store, Thread, set_recorded_length};

/// A thread an importer produced, before it is written.
#[derive(Debug, Clone)]
pub struct ImportedThread {
    /// Id, title, times, agent, context, `metadata.import`, relationships,
    /// `mainThreadID`; stats are computed when written.
    pub meta: ThreadMeta,
    /// In order; each `id` is stable across imports of the same source.
    pub messages: Vec<Message>,
}

/// What an import did, for people and `--json`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub threads: Vec<ThreadOutcome>,
    /// Source records per kind: how many were mapped, joined, kept raw, skipped.
    pub records: BTreeMap<String, RecordCounts>,
    /// Malformed input, each with file and line.
    pub errors: Vec<String>,
}

/// Counts for one kind of source record.
#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordCounts {
    /// Became messages (or parts of one).
    pub mapped: u64,
    /// Joined into another message (a tool result into its call).
    pub joined: u64,
    /// Kept as a `system` message carrying the raw record.
    pub raw: u64,
    /// Not imported, with the reasons.
    pub skipped: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl Summary {
    pub(crate) fn count(&mut self, kind: &str) -> &mut RecordCounts {
        self.records.entry(kind.to_string()).or_default()
    }

    pub(crate) fn skip(&mut self, kind: &str, reason: String) {
        let c = self.count(kind);
        c.skipped += 1;
        if c.reasons.len() < 10 && !c.reasons.contains(&reason) {
            c.reasons.push(reason);
        }
    }
}

/// One thread written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadOutcome {
    pub thread_id: String,
    pub title: String,
    pub thread_dir: std::path::PathBuf,
    pub created: bool,
    pub messages_added: u64,
    pub message_count: u64,
}

/// The `.json` files of `path` (itself if a file), sorted.
pub fn json_files(path: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(Error::Other(format!("{} does not exist", path.display())));
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).ctx("listing", path)? {
        let p = entry.ctx("listing", path)?.path();
        if p.is_file() && p.extension().is_some_and(|e| e == "json") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// Reads a JSON object file; a malformed one is reported (path, line) and
/// skipped so the other files still import.
pub(crate) fn read_object(
    path: &std::path::Path,
    kind: &str,
    summary: &mut Summary,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let bytes = std::fs::read(path).ctx("reading", path)?;
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(o)) => Ok(Some(o)),
        Ok(_) => {
            summary
                .errors
                .push(format!("{}: not a JSON object", path.display()));
            summary.skip(kind, "a file that is not a JSON object".into());
            Ok(None)
        }
        Err(e) => {
            summary
                .errors
                .push(format!("{}:{}: {e}", path.display(), e.line()));
            summary.skip(kind, "a file that is not valid JSON".into());
            Ok(None)
        }
    }
}

/// Writes `imported` into `store`: a new thread built aside, or the
/// messages an existing one lacks appended (and relationships it lacks
/// added). Concurrent first imports of one session converge: the one that
/// loses the race to publish appends what the winner lacks, under the lock.
pub fn write(store: &Store, imported: ImportedThread) -> Result<ThreadOutcome> {
    let thread = store.thread(&imported.meta.thread_id)?;
    if std::fs::symlink_metadata(thread.meta_path()).is_ok() {
        return append_new(&thread, imported);
    }
    match create(store, imported.clone()) {
        Err(Error::ThreadExists { .. }) => append_new(&thread, imported),
        other => other,
    }
}

fn create(store: &Store, imported: ImportedThread) -> Result<ThreadOutcome> {
    let mut meta = imported.meta;
    let staged = store.stage_thread(&meta)?;
    let assets = staged.path().join(atsf::ASSETS_DIR);
    let log = staged.path().join(atsf::MESSAGES_FILE);
    let mut out = std::io::BufWriter::new(crate::fsutil::open_append(&log, false)?);
    let mut stats = Stats::default();
    let mut bytes = 0u64;
    let mut last = None;
    for (i, mut m) in imported.messages.into_iter().enumerate() {
        let invalid =
            |e: Error| Error::InvalidMessage(format!("message #{i} (id {:?}): {e}", m.id));
        crate::store::validate_message(&m).map_err(invalid)?;
        let id = m.id.clone();
        crate::store::extract_inline_images(&assets, &mut m)
            .map_err(|e| Error::InvalidMessage(format!("message #{i} (id {id:?}): {e}")))?;
        let line = atsf::to_line(&m)?;
        out.write_all(&line).ctx("writing", &log)?;
        bytes += line.len() as u64;
        stats.add(&m);
        last = Some(m.timestamp);
    }
    let file = out
        .into_inner()
        .map_err(|e| Error::io("writing", &log, e.into_error()))?;
    file.sync_all().ctx("syncing", &log)?;
    meta.stats = stats;
    if let Some(t) = last {
        meta.updated_at = t;
    }
    set_recorded_length(&mut meta, bytes);
    staged.write_meta(&meta)?;
    let thread = staged.publish()?;
    Ok(ThreadOutcome {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        thread_dir: thread.dir().to_path_buf(),
        created: true,
        messages_added: meta.stats.message_count,
        message_count: meta.stats.message_count,
    })
}

/// Appends the messages the thread lacks. What is new is decided while the
/// thread's lock is held, and the lock is kept until they are written, so
/// two imports at once never write a message twice.
fn append_new(thread: &Thread, imported: ImportedThread) -> Result<ThreadOutcome> {
    let lock = thread.lock()?;
    // Only the ids: an agent hook imports after every turn, and a full parse
    // of a long thread each time would be wasted.
    let mut have = lock.message_ids()?;
    let fresh: Vec<Message> = imported
        .messages
        .into_iter()
        .filter(|m| have.insert(m.id.clone()))
        .collect();
    let added = fresh.len() as u64;
    if !fresh.is_empty() {
        // One fsync for the batch: a crash leaves a prefix, and the next
        // import appends the rest (ids tell what is there).
        lock.append_all(fresh, AppendOptions { fsync: true })?;
    }
    let mut meta = lock.meta()?;
    let src = &imported.meta;
    if refresh_from_source(&mut meta, src) {
        lock.save(&mut meta)?;
    }
    Ok(ThreadOutcome {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        thread_dir: thread.dir().to_path_buf(),
        created: false,
        messages_added: added,
        message_count: meta.stats.message_count,
    })
}

/// Adds the relationships `meta` lacks and refreshes the state a source
/// keeps current (a checkpoint's git state, summary, next steps, tags).
/// Returns whether anything changed.
fn refresh_from_source(meta: &mut ThreadMeta, src: &ThreadMeta) -> bool {
    let missing: Vec<Relationship> = src
        .relationships()
        .iter()
        .filter(|r| {
            !meta
                .relationships()
                .iter()
                .any(|h| h.thread_id == r.thread_id && h.kind == r.kind && h.role == r.role)
        })
        .cloned()
        .collect();
    let tags = src.tags();
    let refresh = (src.git.is_some() && src.git != meta.git)
        || (src.conversation_summary.is_some()
            && src.conversation_summary != meta.conversation_summary)
        || (src.files_touched.is_some() && src.files_touched != meta.files_touched)
        || (src.next_steps.is_some() && src.next_steps != meta.next_steps)
        || tags.iter().any(|t| !meta.tags().contains(t));
    if missing.is_empty() && !refresh {
        return false;
    }
    meta.relationships
        .get_or_insert_with(Vec::new)
        .extend(missing);
    if meta.relationships.as_ref().is_some_and(Vec::is_empty) {
        meta.relationships = None;
    }
    if src.git.is_some() {
        meta.git = src.git.clone();
    }
    if src.conversation_summary.is_some() {
        meta.conversation_summary = src.conversation_summary.clone();
    }
    if src.files_touched.is_some() {
        meta.files_touched = src.files_touched.clone();
    }
    if src.next_steps.is_some() {
        meta.next_steps = src.next_steps.clone();
    }
    meta.add_tags(&tags);
    true
}

/// Where an import's trouble comes from: the source file recorded in
/// `metadata.import.source`, and the first line of it holding `needle` (a
/// record's id, a session id) — so a warning can say `file:line`.
pub fn locate(meta: &ThreadMeta, needle: &str) -> Option<String> {
    let source = meta
        .metadata
        .as_ref()?
        .get("import")?
        .get("source")?
        .as_str()?;
    let path = Path::new(source);
    if needle.is_empty() {
        return Some(source.to_string());
    }
    let file = std::fs::File::open(path).ok()?;
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0u64;
    while reader.read_until(b'\n', &mut line).ok()? > 0 {
        number += 1;
        if memchr::memmem::find(&line, needle.as_bytes()).is_some() {
            return Some(format!("{source}:{number}"));
        }
        line.clear();
    }
    Some(source.to_string())
}

/// Whether the session may still be running: written to in the last hour.
pub(crate) fn is_live(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 3600)
}

/// A running session's last reply may still wait for its tool results.
/// Messages are never rewritten once imported (the log is append-only), so
/// such a tail is left for the next import instead of being stored as
/// `pending` for good. A session idle for an hour is imported as it is.
pub(crate) fn defer_pending_tail(messages: &mut Vec<Message>, live: bool, summary: &mut Summary) {
    if !live {
        return;
    }
    let pending = |m: &Message| {
        m.tool_calls
            .iter()
            .flatten()
            .any(|c| c.status == ToolStatus::Pending)
    };
    if let Some(first) = messages.iter().position(pending) {
        let later_turn = messages[first + 1..]
            .iter()
            .any(|m| m.role == Role::User && !pending(m));
        if !later_turn {
            for _ in first..messages.len() {
                summary.skip(
                    "deferred",
                    "the session is running and a tool call has no result yet; the next import brings it"
                        .into(),
                );
            }
            messages.truncate(first);
        }
    }
}

pub(crate) fn first_prompt(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                Some(crate::threads::title_from_prompt(text))
            }
            _ => None,
        })
}

/// A tool call with its result joined: `(output, failed)` when found,
/// `pending` otherwise.
pub(crate) fn tool_call(
    id: String,
    name: String,
    input: Option<String>,
    result: Option<(&str, bool)>,
    extra: crate::atsf::Extra,
) -> crate::atsf::ToolCall {
    use crate::atsf::ToolStatus;
    crate::atsf::ToolCall {
        tool_call_id: id,
        name,
        title: None,
        status: match result {
            Some((_, true)) => ToolStatus::Failed,
            Some(_) => ToolStatus::Completed,
            None => ToolStatus::Pending,
        },
        input,
        output: result.map(|(text, _)| text.to_string()),
        duration: None,
        diff: None,
        extra,
    }
}

/// Anthropic-style message content (Claude Code, Amp): a string, or blocks
/// `text`, `thinking`, `image` (base64 `source`, stored as an asset when
/// written), `tool_use` (made into a call by `tool_use`), `tool_result`
/// (joined elsewhere; counted), anything else kept whole. Returns the
/// blocks, the calls, and how many tool results there were.
pub(crate) fn anthropic_content(
    content: Option<&serde_json::Value>,
    mut tool_use: impl FnMut(&serde_json::Value) -> crate::atsf::ToolCall,
) -> (Vec<ContentBlock>, Vec<crate::atsf::ToolCall>, usize) {
    use serde_json::Value;
    let str_of = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
    let mut out = Vec::new();
    let mut calls = Vec::new();
    let mut results = 0;
    match content {
        Some(Value::String(s)) => out.push(ContentBlock::text(s.clone())),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        out.push(ContentBlock::text(str_of(b, "text").unwrap_or_default()))
                    }
                    Some("thinking") => out.push(ContentBlock::Thinking {
                        text: str_of(b, "thinking")
                            .or_else(|| str_of(b, "text"))
                            .unwrap_or_default(),
                        extra: atsf::Extra::new(),
                    }),
                    Some("image") => {
                        let src = b.get("source").cloned().unwrap_or(Value::Null);
                        out.push(ContentBlock::Image(atsf::ImageBlock {
                            asset_ref: None,
                            mime_type: str_of(&src, "media_type"),
                            data: str_of(&src, "data"),
                            extra: atsf::Extra::new(),
                        }));
                    }
                    Some("tool_use") => calls.push(tool_use(b)),
                    Some("tool_result") => results += 1,
                    _ => {
                        if let Value::Object(map) = b {
                            out.push(ContentBlock::Unknown(map.clone()));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    (out, calls, results)
}
