//! OpenCode's sessions, from wherever OpenCode keeps them:
//!
//! - OpenCode 1.18 and later: one SQLite database,
//!   `~/.local/share/opencode/opencode.db` (`session`, `message` and `part`
//!   rows; [`db`]), read only and safely while OpenCode writes it;
//! - `opencode export <id>`: one JSON file, `{info, messages: [{info,
//!   parts}]}` ([`export`]);
//! - older versions: `storage/`, a file per session
//!   (`session/<project>/<session>.json`), per message
//!   (`message/<session>/<message>.json`) and per part
//!   (`part/<message>/<part>.json`) ([`storage`]).
//!
//! All three hold the same records, read into a [`Session`] and mapped
//! here:
//! - A user message's `text` parts are its prompt (`synthetic` ones — text
//!   OpenCode added, such as an attached file — are kept as such), `file`
//!   parts images (stored as assets) or kept whole.
//! - An assistant message: `text` → text, `reasoning` → thinking, `tool` →
//!   a call (`state`: status, input, output or error, title, times),
//!   `tokens` (with reasoning and cache), `modelID`, `finish`; `step-start`,
//!   `step-finish`, `patch`, `snapshot` and other parts travel whole on the
//!   message (`opencodeParts`).
//! - A session with a `parentID` is a subagent's: `mainThreadID` names its
//!   parent's thread.
//!
//! Message ids are OpenCode's, so importing again appends only new
//! messages; a tool stored while running gets its result as a completion.

mod db;
mod export;
mod storage;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary, defer_pending_tail, first_prompt};
use crate::atsf::{
    self, ContentBlock, Context, Extra, Message, Role, Tokens, ToolCall, ToolStatus,
};
use crate::error::Result;

/// OpenCode, as a [`super::Format`].
pub struct OpenCode;

impl super::Format for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn about(&self) -> &'static str {
        "OpenCode sessions (~/.local/share/opencode: opencode.db, `opencode export` files, the older storage/)"
    }
    fn layout(&self) -> &'static str {
        "OpenCode's data directory (holding opencode.db or storage/), an opencode.db, a file \
         `opencode export <id>` wrote, or (older versions) the storage directory, a \
         session/<project> directory or one session/<project>/<session>.json"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        if path.is_file() {
            return Ok(match Kind::of(path) {
                Some(_) => vec![path.to_path_buf()],
                None => Vec::new(),
            });
        }
        let mut out: Vec<PathBuf> = [path.join("opencode.db")]
            .into_iter()
            .filter(|db| Kind::of(db) == Some(Kind::Database))
            .collect();
        out.extend(storage::sources(path)?);
        Ok(out)
    }
    fn default_paths(&self, _roots: &[PathBuf]) -> Vec<PathBuf> {
        let (Some(db), Some(data)) = (database(), data_dir()) else {
            return Vec::new();
        };
        [db, data.join("storage")]
            .into_iter()
            .filter(|p| p.exists())
            .collect()
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Sink,
    ) -> Result<Option<super::Resume>> {
        // A capture takes one session of the database (and its subagents').
        let only = out.captured_session().map(str::to_string);
        super::write_all(out, |summary| {
            let sessions = match Kind::of(source) {
                Some(Kind::Database) => db::sessions(source, only.as_deref(), summary)?,
                Some(Kind::Export) => export::session(source, summary)?.into_iter().collect(),
                Some(Kind::Storage) => storage::session(source, summary)?.into_iter().collect(),
                None => Vec::new(),
            };
            Ok(sessions
                .into_iter()
                .filter_map(|s| build(s, source, summary))
                .collect::<Vec<_>>())
        })
    }
}

/// OpenCode's data directory: `$XDG_DATA_HOME/opencode`, else
/// `~/.local/share/opencode`.
fn data_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| Some(dirs::home_dir()?.join(".local/share")))
        .map(|d| d.join("opencode"))
}

/// OpenCode's database on this machine: `opencode.db` in its data
/// directory, or the one `OPENCODE_DB` names (relative to that directory).
pub fn database() -> Option<PathBuf> {
    let data = data_dir()?;
    Some(
        match std::env::var_os("OPENCODE_DB").filter(|d| !d.is_empty()) {
            Some(d) => data.join(d),
            None => data.join("opencode.db"),
        },
    )
}

/// A number that changes whenever session `id` (or a subagent session of
/// it) changes in the database `db`; `None` when it has no such session.
pub fn session_progress(db: &Path, id: &str) -> Result<Option<u64>> {
    db::progress(db, id)
}

/// The sessions run in `dir` that changed since `since` (milliseconds since
/// the epoch), oldest first: subagents' sessions are their parents'.
pub fn sessions_in(db: &Path, dir: &Path, since: i64) -> Result<Vec<String>> {
    db::sessions_in(db, dir, since)
}

/// The session a subagent's session `id` belongs to (its parent's, up to
/// the top); `id` itself when it is no subagent's, `None` when `db` has no
/// such session.
pub fn root_session(db: &Path, id: &str) -> Result<Option<String>> {
    db::root_of(db, id)
}

/// Whether session `session` of the database `db` holds message `id`.
pub fn session_has_message(db: &Path, session: &str, id: &str) -> Result<bool> {
    db::has_message(db, session, id)
}

/// What a source of OpenCode's is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Database,
    Export,
    Storage,
}

impl Kind {
    fn of(path: &Path) -> Option<Kind> {
        if db::is_database(path) {
            return Some(Kind::Database);
        }
        if export::is_export(path) {
            return Some(Kind::Export);
        }
        storage::storage_of(path).map(|_| Kind::Storage)
    }
}

/// One of OpenCode's JSON records (a session, a message, a part).
type Record = Map<String, Value>;

/// One session as OpenCode keeps it: its own record, then each message's
/// record with its parts, in the order they were made.
pub(super) struct Session {
    info: Record,
    messages: Vec<(Record, Vec<Record>)>,
    /// Whether the session may still be running (its last reply may wait
    /// for tool results).
    live: bool,
}

fn s(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// Milliseconds since the epoch, as ATSF time.
fn millis(v: Option<&Value>) -> Option<String> {
    let ts = jiff::Timestamp::from_millisecond(v?.as_i64()?).ok()?;
    atsf::normalize_timestamp(&ts.to_string()).ok()
}

/// The thread of one session read from `source`.
fn build(session: Session, source: &Path, summary: &mut Summary) -> Option<ImportedThread> {
    let Session {
        info,
        messages: records,
        live,
    } = session;
    let Some(id) = s(&info, "id") else {
        summary
            .errors
            .push(format!("{}: a session without `id`", source.display()));
        summary.skip("session", "no id".into());
        return None;
    };
    let created =
        millis(info.get("time").and_then(|t| t.get("created"))).unwrap_or_else(atsf::now_timestamp);
    let mut messages = Vec::new();
    let mut last_time = created.clone();
    let records = &records[..unfinished_from(&records, live, summary)];
    for (r, parts) in records {
        let Some(message_id) = s(r, "id") else {
            summary.skip("message", "no id".into());
            continue;
        };
        let time = millis(r.get("time").and_then(|t| t.get("created")))
            .unwrap_or_else(|| last_time.clone());
        last_time = time.clone();
        messages.push(message(message_id, r, parts, time, summary));
    }
    defer_pending_tail(&mut messages, live, summary);
    let title = s(&info, "title")
        .or_else(|| first_prompt(&messages))
        .unwrap_or_else(|| format!("OpenCode session {id}"));
    let mut meta = crate::threads::new_meta(
        &title,
        "opencode",
        Context {
            working_dir: s(&info, "directory").unwrap_or_default(),
            ..Context::default()
        },
    );
    meta.thread_id = format!("opencode-{id}");
    meta.created_at = created.clone();
    meta.updated_at = millis(info.get("time").and_then(|t| t.get("updated"))).unwrap_or(created);
    meta.agent.name = "OpenCode".into();
    meta.agent.version = s(&info, "version");
    meta.main_thread_id = s(&info, "parentID").map(|p| format!("opencode-{p}"));
    meta.metadata_mut()
        .insert("opencode".into(), Value::Object(info.clone()));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "opencode", "source": source, "sourceId": id}),
    );
    Some(ImportedThread { meta, messages })
}

/// Where the messages OpenCode is still writing begin, while the session
/// may run: a reply not completed yet (its text streams into it, its tools
/// run) or a prompt whose text is not there yet. A message in the thread is
/// never rewritten, so those wait for the next import.
fn unfinished_from(records: &[(Record, Vec<Record>)], live: bool, summary: &mut Summary) -> usize {
    if !live {
        return records.len();
    }
    let unfinished = |(r, parts): &(Record, Vec<Record>)| match s(r, "role").as_deref() {
        Some("assistant") => {
            let time = r.get("time");
            time.and_then(|t| t.get("completed"))
                .is_none_or(Value::is_null)
                && r.get("error").is_none_or(Value::is_null)
        }
        Some("user") => parts.is_empty(),
        _ => false,
    };
    let Some(first) = records.iter().position(unfinished) else {
        return records.len();
    };
    for _ in first..records.len() {
        summary.skip(
            "deferred",
            "the session is running and OpenCode is still writing this message; the next import brings it"
                .into(),
        );
    }
    first
}

/// One message and its parts.
fn message(
    id: String,
    r: &Map<String, Value>,
    parts: &[Map<String, Value>],
    time: String,
    summary: &mut Summary,
) -> Message {
    let role_name = s(r, "role").unwrap_or_default();
    let role = match role_name.as_str() {
        "user" => Role::User,
        "assistant" => Role::Agent,
        _ => Role::System,
    };
    let mut content = Vec::new();
    let mut calls = Vec::new();
    let mut kept = Vec::new();
    for p in parts {
        let kind = s(p, "type").unwrap_or_default();
        let mut rest = p.clone();
        for k in ["id", "sessionID", "messageID", "type"] {
            rest.remove(k);
        }
        match kind.as_str() {
            "text" => {
                let text = s(p, "text").unwrap_or_default();
                rest.remove("text");
                content.push(ContentBlock::Text { text, extra: rest });
            }
            "reasoning" => {
                let text = s(p, "text").unwrap_or_default();
                rest.remove("text");
                content.push(ContentBlock::Thinking { text, extra: rest });
            }
            "file"
                if s(p, "mime").is_some_and(|m| m.starts_with("image/"))
                    && s(p, "url").is_some_and(|u| u.starts_with("data:")) =>
            {
                content.push(ContentBlock::Image(atsf::ImageBlock {
                    asset_ref: None,
                    mime_type: s(p, "mime"),
                    data: s(p, "url"),
                    extra: Extra::from_iter(
                        s(p, "filename").map(|f| ("filename".to_string(), Value::from(f))),
                    ),
                }));
            }
            "tool" => calls.push(tool_call(p)),
            _ => kept.push(Value::Object(p.clone())),
        }
        summary.count(&format!("part {kind}")).mapped += 1;
    }
    let mut m = Message::new(role, content);
    // A message grove wrote into a session (`grove resume`) has the id it
    // has in the thread.
    m.id = match id.strip_prefix(crate::agent::marks::GROVE_MESSAGE_PREFIX) {
        Some(own) if !own.is_empty() => own.to_string(),
        _ => id,
    };
    m.timestamp = time;
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    m.model = s(r, "modelID").or_else(|| {
        r.get("model")
            .and_then(|m| m.get("modelID"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    m.stop_reason = s(r, "finish");
    if let Some(Value::Object(t)) = r.get("tokens") {
        let mut extra = t.clone();
        let input = extra.remove("input").and_then(|v| v.as_u64());
        let output = extra.remove("output").and_then(|v| v.as_u64());
        m.tokens = Some(Tokens {
            input,
            output,
            extra,
            ..Default::default()
        });
    }
    if !kept.is_empty() {
        m.extra.insert("opencodeParts".into(), Value::Array(kept));
    }
    let mut rest = r.clone();
    for k in ["id", "role", "modelID", "finish", "tokens"] {
        rest.remove(k);
    }
    m.extra.insert("opencode".into(), Value::Object(rest));
    summary.count(&format!("message {role_name}")).mapped += 1;
    m
}

/// A `tool` part: the call and its state.
fn tool_call(p: &Map<String, Value>) -> ToolCall {
    let state = p.get("state").and_then(Value::as_object);
    let status_name = state.and_then(|st| s(st, "status"));
    let status = match status_name.as_deref() {
        Some("completed") => ToolStatus::Completed,
        Some("error") => ToolStatus::Failed,
        Some("running") => ToolStatus::Running,
        _ => ToolStatus::Pending,
    };
    let output = state.and_then(|st| {
        st.get("output")
            .or_else(|| st.get("error"))
            .map(|o| match o {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            })
    });
    let times = state.and_then(|st| st.get("time"));
    let duration = match (
        times.and_then(|t| t.get("start")).and_then(Value::as_i64),
        times.and_then(|t| t.get("end")).and_then(Value::as_i64),
    ) {
        (Some(a), Some(b)) if b >= a => Some(serde_json::Number::from(b - a)),
        _ => None,
    };
    let mut extra = Extra::new();
    if let Some(st) = state {
        let mut rest = st.clone();
        for k in ["status", "input", "output", "error", "title"] {
            rest.remove(k);
        }
        if !rest.is_empty() {
            extra.insert("opencodeState".into(), Value::Object(rest));
        }
    }
    ToolCall {
        tool_call_id: s(p, "callID").or_else(|| s(p, "id")).unwrap_or_default(),
        name: s(p, "tool").unwrap_or_else(|| "tool".into()),
        title: state.and_then(|st| s(st, "title")),
        status,
        input: state.and_then(|st| st.get("input")).map(Value::to_string),
        output,
        duration,
        diff: None,
        extra,
    }
}
