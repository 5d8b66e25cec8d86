//! Gemini CLI's saved chats: the sessions it records on its own
//! (`~/.gemini/tmp/<project hash>/chats/session-*.json`, and the JSON Lines
//! `session-*.jsonl` newer versions write: a metadata line, then one line
//! per message, a message written again when it changes) and the chats
//! saved with `/chat save <tag>` (`checkpoint-<tag>.json`: the model's
//! `{role, parts}` history).
//!
//! - `user` → a prompt (text parts; inline images become assets);
//!   `gemini` → a reply: its `thoughts` as thinking, `toolCalls` with their
//!   results (`functionResponse` output or error, `status`), `tokens`,
//!   `model`; `info`, `warning`, `error` → `system` messages; any other type
//!   a `system` message keeping the record.
//! - The working directory is the project's, from `.project_root` beside
//!   `chats/` when Gemini wrote one.
//! - Message ids are Gemini's, so importing again appends only new messages;
//!   a tool call stored while still running gets its result as a completion.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary, defer_pending_tail, first_prompt, is_live};
use crate::atsf::{
    self, ContentBlock, Context, Extra, Message, Role, Tokens, ToolCall, ToolStatus,
};
use crate::error::{IoContext, Result};

/// Gemini CLI, as a [`super::Format`].
pub struct Gemini;

impl super::Format for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }
    fn about(&self) -> &'static str {
        "Gemini CLI saved chats (~/.gemini/tmp/<hash>/chats/, /chat save checkpoints)"
    }
    fn layout(&self) -> &'static str {
        "a session-*.json(l) or checkpoint-*.json, or a directory searched for them (~/.gemini/tmp)"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        if path.is_file() {
            return Ok(vec![path.to_path_buf()]);
        }
        let mut out = Vec::new();
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).ctx("listing", &dir)? {
                let p = entry.ctx("listing", &dir)?.path();
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if p.is_dir() {
                    stack.push(p);
                } else if (name.starts_with("session-")
                    && (name.ends_with(".json") || name.ends_with(".jsonl")))
                    || (name.starts_with("checkpoint-") && name.ends_with(".json"))
                {
                    out.push(p);
                }
            }
        }
        out.sort();
        Ok(out)
    }
    fn resumable(&self) -> super::Resumable {
        super::Resumable::WholeFile
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Output,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_file(source, summary))
    }
}

/// Imports one saved chat.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".jsonl") {
        let Some((meta, records)) = read_lines(path, summary)? else {
            return Ok(None);
        };
        return Ok(Some(session(path, &meta, &records, summary)));
    }
    let Some(doc) = read_json(path, summary)? else {
        return Ok(None);
    };
    match doc {
        Value::Object(meta) => {
            let records: Vec<Map<String, Value>> = meta
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_object().cloned())
                .collect();
            Ok(Some(session(path, &meta, &records, summary)))
        }
        Value::Array(history) => Ok(Some(checkpoint(path, &name, &history, summary))),
        _ => {
            summary.errors.push(format!(
                "{}: neither a chat session (an object) nor a saved chat (an array)",
                path.display()
            ));
            summary.skip("chat", "not a Gemini chat".into());
            Ok(None)
        }
    }
}

fn read_json(path: &Path, summary: &mut Summary) -> Result<Option<Value>> {
    let bytes = std::fs::read(path).ctx("reading", path)?;
    match serde_json::from_slice::<Value>(atsf::strip_bom(&bytes)) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            summary
                .errors
                .push(format!("{}:{}: {e}", path.display(), e.line()));
            summary.skip("chat", "a file that is not valid JSON".into());
            Ok(None)
        }
    }
}

/// A JSON Lines session: its metadata (the first line, updated by later
/// metadata lines) and its messages, the last version of each, in the order
/// they first appeared.
#[allow(clippy::type_complexity)]
fn read_lines(
    path: &Path,
    summary: &mut Summary,
) -> Result<Option<(Map<String, Value>, Vec<Map<String, Value>>)>> {
    let text = std::fs::read(path).ctx("reading", path)?;
    let mut meta = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut latest: HashMap<String, Map<String, Value>> = HashMap::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(line) else {
            summary
                .errors
                .push(format!("{}:{}: not a JSON object", path.display(), i + 1));
            summary.skip("malformed", "a line that is not a JSON object".into());
            continue;
        };
        match (o.get("type"), o.get("id").and_then(Value::as_str)) {
            (Some(_), Some(id)) => {
                if !latest.contains_key(id) {
                    order.push(id.to_string());
                } else {
                    summary.skip(
                        "message",
                        "written again as it changed: the last version is kept".into(),
                    );
                }
                latest.insert(id.to_string(), o);
            }
            _ => meta.extend(o),
        }
    }
    if meta.is_empty() && order.is_empty() {
        return Ok(None);
    }
    let records = order
        .into_iter()
        .filter_map(|id| latest.remove(&id))
        .collect();
    Ok(Some((meta, records)))
}

fn s(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// A recorded session.
fn session(
    path: &Path,
    meta: &Map<String, Value>,
    records: &[Map<String, Value>],
    summary: &mut Summary,
) -> ImportedThread {
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session_id = s(meta, "sessionId").unwrap_or(stem);
    let created = s(meta, "startTime")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(atsf::now_timestamp);
    let mut messages = Vec::new();
    let mut last_time = created.clone();
    for r in records {
        let time = s(r, "timestamp")
            .and_then(|t| atsf::normalize_timestamp(&t).ok())
            .unwrap_or_else(|| last_time.clone());
        last_time = time.clone();
        let m = record(r, time, summary);
        messages.push(m);
    }
    let live = is_live(path);
    defer_pending_tail(&mut messages, live, summary);
    let title = s(meta, "summary")
        .map(|t| crate::threads::title_from_prompt(&t))
        .or_else(|| first_prompt(&messages))
        .unwrap_or_else(|| {
            format!(
                "Gemini session {}",
                session_id.chars().take(8).collect::<String>()
            )
        });
    let mut thread = crate::threads::new_meta(&title, "gemini-cli", context(path));
    thread.thread_id = format!("gemini-{session_id}");
    thread.created_at = created.clone();
    thread.updated_at = s(meta, "lastUpdated")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or(created);
    thread.agent.name = "Gemini CLI".into();
    let mut kept = meta.clone();
    kept.remove("messages");
    thread
        .metadata_mut()
        .insert("gemini".into(), Value::Object(kept));
    thread.metadata_mut().insert(
        "import".into(),
        json!({"format": "gemini", "source": path, "sourceId": session_id}),
    );
    ImportedThread {
        meta: thread,
        messages,
    }
}

/// The project's directory: `.project_root` in the project's folder of
/// `~/.gemini/tmp/` (the chat's parent's parent).
fn context(path: &Path) -> Context {
    let root = path
        .parent()
        .and_then(|chats| {
            [
                chats.join(".project_root"),
                chats.parent()?.join(".project_root"),
            ]
            .into_iter()
            .find(|p| p.is_file())
        })
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim().to_string())
        .filter(|t| Path::new(t).is_absolute());
    Context {
        working_dir: root.unwrap_or_default(),
        ..Context::default()
    }
}

/// One message record of a session.
fn record(r: &Map<String, Value>, time: String, summary: &mut Summary) -> Message {
    let kind = s(r, "type").unwrap_or_else(|| "unknown".into());
    let role = match kind.as_str() {
        "user" => Role::User,
        "gemini" | "model" => Role::Agent,
        _ => Role::System,
    };
    let mut content = Vec::new();
    for t in r
        .get("thoughts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let subject = t.get("subject").and_then(Value::as_str).unwrap_or("");
        let description = t.get("description").and_then(Value::as_str).unwrap_or("");
        let mut extra = Extra::new();
        if let Some(ts) = t.get("timestamp") {
            extra.insert("timestamp".into(), ts.clone());
        }
        content.push(ContentBlock::Thinking {
            text: if subject.is_empty() {
                description.to_string()
            } else {
                format!("**{subject}** {description}")
            },
            extra,
        });
    }
    content.extend(parts(r.get("content")));
    let mut m = Message::new(role, content);
    m.id = s(r, "id").unwrap_or_default();
    m.timestamp = time;
    let calls: Vec<ToolCall> = r
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(tool_call)
        .collect();
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    m.model = s(r, "model");
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
    let mut kept = r.clone();
    for k in [
        "id",
        "timestamp",
        "type",
        "content",
        "thoughts",
        "toolCalls",
        "model",
        "tokens",
    ] {
        kept.remove(k);
    }
    kept.insert("type".into(), Value::from(kind.clone()));
    m.extra.insert("gemini".into(), Value::Object(kept));
    match kind.as_str() {
        "user" | "gemini" | "info" | "warning" | "error" => summary.count(&kind).mapped += 1,
        other => summary.count(other).raw += 1,
    }
    m
}

/// Content: a string, or Gemini parts (`text`, `inlineData`, `fileData`, …).
fn parts(v: Option<&Value>) -> Vec<ContentBlock> {
    match v {
        Some(Value::String(t)) if !t.is_empty() => vec![ContentBlock::text(t.clone())],
        Some(Value::Array(items)) => items.iter().filter_map(part).collect(),
        Some(Value::Object(_)) => v.and_then(part).into_iter().collect(),
        _ => Vec::new(),
    }
}

fn part(p: &Value) -> Option<ContentBlock> {
    let o = p.as_object()?;
    if let Some(t) = o.get("text").and_then(Value::as_str) {
        let mut extra = o.clone();
        extra.remove("text");
        return Some(ContentBlock::Text {
            text: t.to_string(),
            extra,
        });
    }
    if let Some(Value::Object(d)) = o.get("inlineData") {
        return Some(ContentBlock::Image(atsf::ImageBlock {
            asset_ref: None,
            mime_type: s(d, "mimeType"),
            data: s(d, "data"),
            extra: Extra::new(),
        }));
    }
    Some(ContentBlock::Unknown(o.clone()))
}

/// A recorded tool call with its result.
fn tool_call(c: &Map<String, Value>) -> ToolCall {
    let status = match c.get("status").and_then(Value::as_str) {
        Some("success") => ToolStatus::Completed,
        Some("error" | "cancelled") => ToolStatus::Failed,
        Some("executing") => ToolStatus::Running,
        Some(_) | None if c.get("result").is_some() => ToolStatus::Completed,
        _ => ToolStatus::Pending,
    };
    let mut output = Vec::new();
    let mut rich = Vec::new();
    for r in c
        .get("result")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match r {
            Value::String(t) => output.push(t.clone()),
            Value::Object(o) => {
                if let Some(fr) = o.get("functionResponse") {
                    let response = fr.get("response");
                    match response.and_then(|r| r.get("output").or_else(|| r.get("error"))) {
                        Some(Value::String(t)) => output.push(t.clone()),
                        Some(other) => output.push(other.to_string()),
                        None => output.extend(response.map(Value::to_string)),
                    }
                } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                    output.push(t.to_string());
                } else if let Some(block) = part(r) {
                    rich.extend(serde_json::to_value(block).ok());
                }
            }
            other => output.push(other.to_string()),
        }
    }
    let mut extra = c.clone();
    for k in ["id", "name", "args", "result", "status", "displayName"] {
        extra.remove(k);
    }
    if !rich.is_empty() {
        let mut blocks = vec![json!({"type": "text", "text": output.join("\n")})];
        blocks.extend(rich);
        extra.insert("outputContent".into(), Value::Array(blocks));
    }
    ToolCall {
        tool_call_id: s(c, "id").unwrap_or_default(),
        name: s(c, "name").unwrap_or_else(|| "tool".into()),
        title: s(c, "displayName"),
        status,
        input: c.get("args").map(Value::to_string),
        output: (!output.is_empty() || c.get("result").is_some()).then(|| output.join("\n")),
        duration: None,
        diff: None,
        extra,
    }
}

/// A chat saved with `/chat save <tag>`: the model's history, `{role,
/// parts}` per turn; function calls and their responses joined.
fn checkpoint(path: &Path, name: &str, history: &[Value], summary: &mut Summary) -> ImportedThread {
    let tag = name
        .trim_start_matches("checkpoint-")
        .trim_end_matches(".json")
        .to_string();
    let project = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().chars().take(8).collect::<String>())
        .unwrap_or_default();
    let id = format!("gemini-{project}-checkpoint-{tag}");
    let created = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(|t| {
            jiff::Timestamp::try_from(t)
                .map(|t| t.to_string())
                .unwrap_or_default()
        })
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(atsf::now_timestamp);
    let mut responses = responses_by_call(history);
    let mut messages = Vec::new();
    for (i, turn) in history.iter().enumerate() {
        let items = turn
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !items.is_empty() && items.iter().all(|p| p.get("functionResponse").is_some()) {
            summary.count("functionResponse").joined += items.len() as u64;
            continue;
        }
        let role_name = turn.get("role").and_then(Value::as_str).unwrap_or("");
        let mut m = saved_turn(&format!("{id}-{i}"), role_name, &items, &mut responses);
        m.timestamp = created.clone();
        summary.count(&format!("{role_name} turn")).mapped += 1;
        messages.push(m);
    }
    let title = format!("Gemini chat {tag}");
    let mut meta = crate::threads::new_meta(&title, "gemini-cli", context(path));
    meta.thread_id = id.clone();
    meta.created_at = created.clone();
    meta.updated_at = created;
    meta.agent.name = "Gemini CLI".into();
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "gemini", "source": path, "sourceId": tag}),
    );
    ImportedThread { meta, messages }
}

/// Function responses of a saved chat, by the call they answer (its id, or
/// its name), in order.
fn responses_by_call(history: &[Value]) -> HashMap<String, Vec<Value>> {
    let mut responses: HashMap<String, Vec<Value>> = HashMap::new();
    for turn in history {
        for p in turn
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(fr) = p.get("functionResponse") {
                let key = fr
                    .get("id")
                    .or_else(|| fr.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                responses.entry(key).or_default().push(fr.clone());
            }
        }
    }
    responses
}

/// One turn of a saved chat: its text, thoughts and function calls (each
/// with the next response to it).
fn saved_turn(
    id: &str,
    role_name: &str,
    items: &[Value],
    responses: &mut HashMap<String, Vec<Value>>,
) -> Message {
    let mut calls = Vec::new();
    let mut content = Vec::new();
    for p in items {
        if let Some(fc) = p.get("functionCall") {
            let name = fc.get("name").and_then(Value::as_str).unwrap_or("tool");
            let key = fc.get("id").and_then(Value::as_str).unwrap_or(name);
            let response = responses
                .get_mut(key)
                .and_then(|r| (!r.is_empty()).then(|| r.remove(0)));
            let out =
                response
                    .as_ref()
                    .and_then(|r| r.get("response"))
                    .map(|r| match r.get("output") {
                        Some(Value::String(t)) => t.clone(),
                        _ => r.to_string(),
                    });
            calls.push(ToolCall {
                tool_call_id: format!("{id}-{}", calls.len()),
                name: name.to_string(),
                title: None,
                status: if out.is_some() {
                    ToolStatus::Completed
                } else {
                    ToolStatus::Pending
                },
                input: fc.get("args").map(Value::to_string),
                output: out,
                duration: None,
                diff: None,
                extra: Extra::new(),
            });
        } else if p.get("thought").and_then(Value::as_bool) == Some(true) {
            content.push(ContentBlock::Thinking {
                text: p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                extra: Extra::new(),
            });
        } else if let Some(block) = part(p) {
            content.push(block);
        }
    }
    let mut m = Message::new(
        if role_name == "user" {
            Role::User
        } else {
            Role::Agent
        },
        content,
    );
    m.id = id.to_string();
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    m
}
