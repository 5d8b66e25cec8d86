//! OpenCode's sessions (`~/.local/share/opencode/storage/`): one file per
//! session (`session/<project>/<session>.json`), per message
//! (`message/<session>/<message>.json`) and per part of a message
//! (`part/<message>/<part>.json`).
//!
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

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary, defer_pending_tail, first_prompt, is_live};
use crate::atsf::{
    self, ContentBlock, Context, Extra, Message, Role, Tokens, ToolCall, ToolStatus,
};
use crate::error::{IoContext, Result};

/// OpenCode, as a [`super::Format`].
pub struct OpenCode;

impl super::Format for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn about(&self) -> &'static str {
        "OpenCode sessions (~/.local/share/opencode/storage: session, message and part files)"
    }
    fn layout(&self) -> &'static str {
        "OpenCode's storage directory (holding session/, message/ and part/), its data directory, \
         a session/<project> directory, or one session/<project>/<session>.json"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        let sessions = [path.join("storage/session"), path.join("session")]
            .into_iter()
            .find(|d| d.is_dir())
            .unwrap_or_else(|| path.to_path_buf());
        let mut out = Vec::new();
        if sessions.is_file() {
            if storage_of(&sessions).is_some() {
                out.push(sessions);
            }
            return Ok(out);
        }
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
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Output,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_session(source, summary))
    }
}

/// The storage directory of a session file `<storage>/session/<project>/<id>.json`.
fn storage_of(session: &Path) -> Option<PathBuf> {
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

/// The JSON objects in `dir`, each with its path; a malformed one is named
/// in the summary and left out.
fn objects(dir: &Path, kind: &str, summary: &mut Summary) -> Result<Vec<Map<String, Value>>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    for file in super::json_files(dir)? {
        if let Some(o) = super::read_object(&file, kind, summary)? {
            out.push(o);
        }
    }
    Ok(out)
}

/// Imports one session with its messages and their parts.
pub fn import_session(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let Some(storage) = storage_of(path) else {
        return Ok(None);
    };
    let Some(info) = super::read_object(path, "session", summary)? else {
        return Ok(None);
    };
    let Some(session) = s(&info, "id") else {
        summary.errors.push(format!("{}: no `id`", path.display()));
        summary.skip("session", "no id".into());
        return Ok(None);
    };
    let mut records = objects(&storage.join("message").join(&session), "message", summary)?;
    // OpenCode's ids sort in the order they were made; the time decides first.
    records.sort_by_key(|m| {
        (
            m.get("time")
                .and_then(|t| t.get("created"))
                .and_then(Value::as_i64),
            s(m, "id"),
        )
    });
    let created =
        millis(info.get("time").and_then(|t| t.get("created"))).unwrap_or_else(atsf::now_timestamp);
    let mut messages = Vec::new();
    let mut last_time = created.clone();
    for r in &records {
        let Some(id) = s(r, "id") else {
            summary.skip("message", "no id".into());
            continue;
        };
        let mut parts = objects(&storage.join("part").join(&id), "part", summary)?;
        parts.sort_by_key(|p| {
            (
                p.get("time")
                    .and_then(|t| t.get("start"))
                    .and_then(Value::as_i64),
                s(p, "id"),
            )
        });
        let time = millis(r.get("time").and_then(|t| t.get("created")))
            .unwrap_or_else(|| last_time.clone());
        last_time = time.clone();
        messages.push(message(id, r, &parts, time, summary));
    }
    let live = std::fs::metadata(path).is_ok() && is_live(path);
    defer_pending_tail(&mut messages, live, summary);
    let title = s(&info, "title")
        .or_else(|| first_prompt(&messages))
        .unwrap_or_else(|| format!("OpenCode session {session}"));
    let mut meta = crate::threads::new_meta(
        &title,
        "opencode",
        Context {
            working_dir: s(&info, "directory").unwrap_or_default(),
            ..Context::default()
        },
    );
    meta.thread_id = format!("opencode-{session}");
    meta.created_at = created.clone();
    meta.updated_at = millis(info.get("time").and_then(|t| t.get("updated"))).unwrap_or(created);
    meta.agent.name = "OpenCode".into();
    meta.agent.version = s(&info, "version");
    meta.main_thread_id = s(&info, "parentID").map(|p| format!("opencode-{p}"));
    meta.metadata_mut()
        .insert("opencode".into(), Value::Object(info.clone()));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "opencode", "source": path, "sourceId": session}),
    );
    Ok(Some(ImportedThread { meta, messages }))
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
    m.id = id;
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
