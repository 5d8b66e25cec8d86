//! A thread as a Gemini CLI chat: the JSON Lines file Gemini 0.61 keeps in
//! `~/.gemini/tmp/<project>/chats/` and reads back with `gemini --resume`
//! — a metadata line (`sessionId`, `projectHash`, `startTime`,
//! `lastUpdated`, `kind`), then one line per message.
//!
//! - A prompt: `{"type": "user", "content": [{"text"}…]}` (images as
//!   `inlineData`).
//! - A reply: `{"type": "gemini", "content": <its text>, "thoughts":
//!   [{"subject", "description"}], "tokens", "model", "toolCalls": [{"id",
//!   "name", "args", "result": [{"functionResponse": …}], "status"}]}`:
//!   each call's result inside it, the form Gemini rebuilds the model's
//!   history from (a tool result written again as a user record of its own
//!   would be given to the model twice).
//! - A `system` message: the record Gemini gave it (its session context is
//!   a `user` record), else an `info` record, which Gemini shows and does
//!   not send to the model.
//!
//! Message ids are the thread's: capturing the resumed session adds none
//! of them again.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::native::{self, Assets, NativeExport};
use crate::atsf::{ContentBlock, Message, Role, ToolCall, ToolStatus};
use crate::error::{Error, Result};
use crate::store::Thread;

/// Writes `thread` as Gemini chat `session` of the project `cwd`.
pub fn write(
    thread: &Thread,
    session: &str,
    cwd: &Path,
    out: &mut dyn Write,
) -> Result<NativeExport> {
    let (mut report, messages, meta) = native::begin(thread, session)?;
    let mut assets = Assets::of(thread);
    let start = messages
        .first()
        .map_or(meta.created_at.clone(), |m| m.timestamp.clone());
    let last = messages
        .last()
        .map_or(meta.updated_at.clone(), |m| m.timestamp.clone());
    let mut lines = vec![json!({
        "sessionId": session,
        "projectHash": project_hash(cwd),
        "startTime": start,
        "lastUpdated": last,
        "kind": "main",
    })];
    for m in &messages {
        lines.push(record(m, &mut assets));
        report.messages += 1;
    }
    for line in lines {
        let mut bytes = serde_json::to_vec(&line).map_err(|e| Error::Other(e.to_string()))?;
        bytes.push(b'\n');
        out.write_all(&bytes)
            .map_err(|e| Error::io("writing the session of", thread.dir(), e))?;
    }
    report.missing_assets(&assets);
    Ok(report)
}

/// Gemini's hash of a project's root: the SHA-256 of its path, in hex.
fn project_hash(cwd: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(cwd.to_string_lossy().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The record of one message.
fn record(m: &Message, assets: &mut Assets) -> Value {
    let kept = m.extra.get("gemini").and_then(Value::as_object);
    let kind = kept
        .and_then(|k| k.get("type"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut rec = Map::new();
    // What Gemini wrote beside the fields grove reads (`displayName`s…).
    if let Some(k) = kept {
        rec.extend(k.clone());
    }
    rec.insert("id".into(), Value::from(m.id.clone()));
    rec.insert("timestamp".into(), Value::from(m.timestamp.clone()));
    match m.role {
        Role::User => user(&mut rec, m, assets),
        Role::Agent => reply(&mut rec, m, assets),
        _ if kind.as_deref() == Some("user") => user(&mut rec, m, assets),
        _ => {
            let kind = kind.filter(|k| matches!(k.as_str(), "info" | "warning" | "error"));
            rec.insert(
                "type".into(),
                Value::from(kind.unwrap_or_else(|| "info".into())),
            );
            rec.insert("content".into(), Value::from(m.text()));
        }
    }
    Value::Object(rec)
}

/// A prompt (or Gemini's session context): its parts.
fn user(rec: &mut Map<String, Value>, m: &Message, assets: &mut Assets) {
    rec.insert("type".into(), Value::from("user"));
    rec.insert("content".into(), Value::Array(parts(m, assets)));
}

/// The text and images of `m` as Gemini's parts.
fn parts(m: &Message, assets: &mut Assets) -> Vec<Value> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(json!({"text": text})),
            ContentBlock::Image(img) => {
                let (mime, data) = assets.image(img)?;
                Some(json!({"inlineData": {"mimeType": mime, "data": data}}))
            }
            _ => None,
        })
        .collect()
}

/// A reply: its text, thoughts, tokens, model and tool calls.
fn reply(rec: &mut Map<String, Value>, m: &Message, assets: &mut Assets) {
    rec.insert("type".into(), Value::from("gemini"));
    let content = parts(m, assets);
    let only_text = content.iter().all(|p| p.get("text").is_some());
    rec.insert(
        "content".into(),
        if only_text {
            Value::from(m.text())
        } else {
            Value::Array(content)
        },
    );
    let thoughts: Vec<Value> = m
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { text, extra } => Some(json!({
                "subject": "",
                "description": text,
                "timestamp": extra.get("timestamp").cloned().unwrap_or(Value::from(m.timestamp.clone())),
            })),
            _ => None,
        })
        .collect();
    if !thoughts.is_empty() {
        rec.insert("thoughts".into(), Value::Array(thoughts));
    }
    if let Some(t) = &m.tokens {
        let mut tokens = Map::new();
        tokens.extend(t.extra.clone());
        for (k, v) in [
            ("input", t.input),
            ("output", t.output),
            ("cached", t.cache_read),
            ("thoughts", t.reasoning),
        ] {
            if let Some(n) = v {
                tokens.insert(k.into(), Value::from(n));
            }
        }
        rec.insert("tokens".into(), Value::Object(tokens));
    }
    if let Some(model) = &m.model {
        rec.insert("model".into(), Value::from(model.clone()));
    }
    let calls: Vec<Value> = m
        .tool_calls
        .iter()
        .flatten()
        .map(|c| tool_call(c, &m.timestamp))
        .collect();
    if !calls.is_empty() {
        rec.insert("toolCalls".into(), Value::Array(calls));
    }
}

/// A tool call with its result.
fn tool_call(c: &ToolCall, timestamp: &str) -> Value {
    let failed = !matches!(c.status, ToolStatus::Completed);
    let output = c.output.clone().unwrap_or_else(|| match c.status {
        ToolStatus::Completed => String::new(),
        _ => "The tool call did not complete.".to_string(),
    });
    let response = if failed {
        json!({ "error": output })
    } else {
        json!({ "output": output })
    };
    let mut call = Map::new();
    call.extend(c.extra.clone());
    call.remove("outputContent");
    call.insert("id".into(), Value::from(c.tool_call_id.clone()));
    call.insert("name".into(), Value::from(c.name.clone()));
    call.insert("args".into(), native::input_object(c));
    call.insert(
        "result".into(),
        json!([{"functionResponse": {"id": c.tool_call_id, "name": c.name, "response": response}}]),
    );
    call.insert(
        "status".into(),
        Value::from(if failed { "error" } else { "success" }),
    );
    call.entry("timestamp")
        .or_insert_with(|| Value::from(timestamp));
    call.insert(
        "displayName".into(),
        Value::from(c.title.clone().unwrap_or_else(|| c.name.clone())),
    );
    call.entry("description").or_insert_with(|| Value::from(""));
    call.entry("renderOutputAsMarkdown")
        .or_insert(Value::Bool(false));
    Value::Object(call)
}
