//! A thread as an OpenCode session: the JSON `opencode export` writes and
//! `opencode import` reads back (OpenCode 1.18 keeps sessions in its
//! database; importing such a file is how a session gets into it):
//! `{"info": session, "messages": [{"info": message, "parts": [part…]}]}`.
//!
//! - A prompt: a `user` message (`agent`, `model`) with `text` parts (and
//!   `file` parts holding its images as `data:` URLs).
//! - A reply: an `assistant` message (`parentID` its prompt, `modelID`,
//!   `providerID`, `tokens` with `cache`, `time.completed`, `finish`) with
//!   `reasoning`, `text` and `tool` parts (`state`: `completed` with its
//!   `output`, or `error`).
//! - `system` messages: OpenCode keeps none; they are left out, and said so.
//!
//! Every key OpenCode 1.18.33's import requires is there. Message ids are
//! the thread's when they are OpenCode's (`msg_…`), else `msg_grove.<the
//! thread's id>`, which grove's import reads back as the thread's: capturing
//! the resumed session adds none of them again.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::native::{self, Assets, NativeExport};
use crate::atsf::{ContentBlock, Message, Role, ToolCall, ToolStatus};
use crate::error::{Error, Result};
use crate::store::Thread;

pub use crate::agent::marks::GROVE_MESSAGE_PREFIX;

/// The OpenCode message id of thread message `id`.
pub fn message_id(id: &str) -> String {
    if id.starts_with("msg_") {
        id.to_string()
    } else {
        format!("{GROVE_MESSAGE_PREFIX}{id}")
    }
}

/// The session version written when the OpenCode that will read it is not
/// known.
const VERSION: &str = "1.18.33";

/// Writes `thread` as OpenCode session `session` run in `cwd`.
pub fn write(
    thread: &Thread,
    session: &str,
    cwd: &Path,
    version: Option<&str>,
    out: &mut dyn Write,
) -> Result<NativeExport> {
    let (mut report, messages, meta) = native::begin(thread, session)?;
    let mut w = Writer {
        session: session.to_string(),
        cwd: cwd.to_string_lossy().into_owned(),
        assets: Assets::of(thread),
        parent: String::new(),
        parts: 0,
        model: configured_model(cwd),
    };
    let mut out_messages = Vec::new();
    let mut system = 0;
    for m in &messages {
        match m.role {
            Role::User => out_messages.push(w.user(m)),
            Role::Agent => out_messages.push(w.reply(m)),
            _ => {
                system += 1;
                continue;
            }
        }
        report.messages += 1;
    }
    if system > 0 {
        report.skipped.push(format!(
            "{system} system message(s) left out: OpenCode keeps none"
        ));
    }
    let first = messages
        .first()
        .map_or(meta.created_at.clone(), |m| m.timestamp.clone());
    let last = messages
        .last()
        .map_or(meta.updated_at.clone(), |m| m.timestamp.clone());
    let version = version
        .map(str::to_string)
        .or(meta
            .agent
            .version
            .clone()
            .filter(|_| meta.agent.id == "opencode"))
        .unwrap_or_else(|| VERSION.to_string());
    let doc = json!({
        "info": {
            "id": session,
            "slug": format!("grove-{}", session.chars().rev().take(8).collect::<String>()),
            "projectID": "global",
            "directory": w.cwd,
            "title": meta.title,
            "version": version,
            "time": {"created": millis(&first), "updated": millis(&last)},
        },
        "messages": out_messages,
    });
    let bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Other(e.to_string()))?;
    out.write_all(&bytes)
        .map_err(|e| Error::io("writing the session of", thread.dir(), e))?;
    report.missing_assets(&w.assets);
    Ok(report)
}

/// An ATSF time in milliseconds since the epoch.
fn millis(t: &str) -> i64 {
    t.parse::<jiff::Timestamp>()
        .map_or(0, jiff::Timestamp::as_millisecond)
}

struct Writer {
    session: String,
    cwd: String,
    assets: Assets,
    /// The last prompt's id: a reply's `parentID`.
    parent: String,
    /// Parts written so far, for their ids (in order, as OpenCode sorts).
    parts: u64,
    /// The model OpenCode is configured with (provider, model), when found.
    model: Option<(String, String)>,
}

impl Writer {
    /// The provider and model a message names for OpenCode: its own when
    /// it is OpenCode's, else the model OpenCode is configured with —
    /// OpenCode goes on with the model of the session's last prompt, and
    /// fails on one it has no provider for.
    fn provider_model(&self, m: &Message) -> (String, String) {
        let own = m.extra.get("opencode");
        let provider = own
            .and_then(|k| {
                k.get("providerID")
                    .or_else(|| k.get("model")?.get("providerID"))
            })
            .and_then(Value::as_str);
        match (provider, &m.model, &self.model) {
            (Some(p), Some(model), _) => (p.to_string(), model.clone()),
            (_, _, Some((p, model))) => (p.clone(), model.clone()),
            _ => provider_model(m),
        }
    }

    fn part(&mut self, message: &str, mut part: Map<String, Value>) -> Value {
        self.parts += 1;
        part.insert(
            "id".into(),
            Value::from(format!("prt_grove.{:08}", self.parts)),
        );
        part.insert("sessionID".into(), Value::from(self.session.clone()));
        part.insert("messageID".into(), Value::from(message));
        Value::Object(part)
    }

    /// A prompt.
    fn user(&mut self, m: &Message) -> Value {
        let id = message_id(&m.id);
        self.parent = id.clone();
        let mut parts = Vec::new();
        for b in &m.content {
            let p = match b {
                ContentBlock::Text { text, .. } => obj(json!({"type": "text", "text": text})),
                ContentBlock::Image(img) => match self.assets.image(img) {
                    Some((mime, data)) => obj(json!({
                        "type": "file", "mime": mime, "filename": "image",
                        "url": format!("data:{mime};base64,{data}"),
                    })),
                    None => continue,
                },
                _ => continue,
            };
            parts.push(self.part(&id, p));
        }
        let (provider, model) = self.provider_model(m);
        let mut info = kept(m);
        info.insert("id".into(), Value::from(id));
        info.insert("sessionID".into(), Value::from(self.session.clone()));
        info.insert("role".into(), Value::from("user"));
        info.insert("time".into(), json!({"created": millis(&m.timestamp)}));
        info.entry("agent").or_insert_with(|| Value::from("build"));
        info.entry("model")
            .or_insert_with(|| json!({"providerID": provider, "modelID": model}));
        json!({"info": info, "parts": parts})
    }

    /// A reply.
    fn reply(&mut self, m: &Message) -> Value {
        let id = message_id(&m.id);
        let time = millis(&m.timestamp);
        let mut parts = Vec::new();
        for b in &m.content {
            // A reply's parts say when they were written.
            let span = json!({"start": time, "end": time});
            let p = match b {
                ContentBlock::Thinking { text, .. } => {
                    obj(json!({"type": "reasoning", "text": text, "time": span}))
                }
                ContentBlock::Text { text, .. } => {
                    obj(json!({"type": "text", "text": text, "time": span}))
                }
                _ => continue,
            };
            parts.push(self.part(&id, p));
        }
        for c in m.tool_calls.iter().flatten() {
            let p = tool_part(c, millis(&m.timestamp));
            parts.push(self.part(&id, p));
        }
        let (provider, model) = self.provider_model(m);
        let t = m.tokens.clone().unwrap_or_default();
        let n = |v: Option<u64>| v.unwrap_or(0);
        let mut info = kept(m);
        info.insert("id".into(), Value::from(id));
        info.insert("sessionID".into(), Value::from(self.session.clone()));
        info.insert("role".into(), Value::from("assistant"));
        info.insert("parentID".into(), Value::from(self.parent.clone()));
        info.insert("modelID".into(), Value::from(model));
        info.insert("providerID".into(), Value::from(provider));
        info.entry("mode").or_insert_with(|| Value::from("build"));
        info.entry("agent").or_insert_with(|| Value::from("build"));
        info.entry("path")
            .or_insert_with(|| json!({"cwd": self.cwd, "root": self.cwd}));
        info.entry("cost").or_insert_with(|| Value::from(0));
        info.insert(
            "tokens".into(),
            json!({
                "input": n(t.input), "output": n(t.output), "reasoning": n(t.reasoning),
                "cache": {"read": n(t.cache_read), "write": n(t.cache_creation)},
            }),
        );
        info.insert("time".into(), json!({"created": time, "completed": time}));
        info.insert(
            "finish".into(),
            Value::from(m.stop_reason.clone().unwrap_or_else(|| {
                if m.tool_calls.is_some() {
                    "tool-calls".into()
                } else {
                    "stop".into()
                }
            })),
        );
        json!({"info": info, "parts": parts})
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// What an import from OpenCode kept of the message's own record (its
/// `agent`, `mode`, `path`, `cost`…), without what is written anew.
fn kept(m: &Message) -> Map<String, Value> {
    let mut info = m
        .extra
        .get("opencode")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for k in ["sessionID", "time", "error", "summary", "parentID"] {
        info.remove(k);
    }
    info
}

/// The model OpenCode runs with in `cwd` (`"model": "provider/model"`):
/// the project's `opencode.json(c)`, else `OPENCODE_CONFIG`, else the
/// user's config (`$XDG_CONFIG_HOME/opencode/`).
fn configured_model(cwd: &Path) -> Option<(String, String)> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| Some(dirs::home_dir()?.join(".config")))
        .map(|d| d.join("opencode"));
    let mut files: Vec<std::path::PathBuf> =
        vec![cwd.join("opencode.json"), cwd.join("opencode.jsonc")];
    files.extend(std::env::var_os("OPENCODE_CONFIG").map(std::path::PathBuf::from));
    if let Some(dir) = config {
        files.extend([
            dir.join("opencode.json"),
            dir.join("opencode.jsonc"),
            dir.join("config.json"),
        ]);
    }
    files.iter().find_map(|f| {
        let text = std::fs::read_to_string(f).ok()?;
        let v: Value = serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(&without_line_comments(&text)))
            .ok()?;
        let (provider, model) = v.get("model")?.as_str()?.split_once('/')?;
        Some((provider.to_string(), model.to_string()))
    })
}

/// `text` without its `//` comment lines (JSONC's most common form).
fn without_line_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The provider and model a message names, guessed from the model's name
/// when nothing better is known.
fn provider_model(m: &Message) -> (String, String) {
    let kept = m.extra.get("opencode");
    let provider = kept
        .and_then(|k| {
            k.get("providerID")
                .or_else(|| k.get("model")?.get("providerID"))
        })
        .and_then(Value::as_str)
        .map(str::to_string);
    let model = m.model.clone().unwrap_or_else(|| "unknown".into());
    let provider = provider.unwrap_or_else(|| {
        let lower = model.to_lowercase();
        if lower.starts_with("claude") {
            "anthropic".into()
        } else if lower.starts_with("gemini") {
            "google".into()
        } else if lower.starts_with("gpt") || lower.starts_with('o') {
            "openai".into()
        } else {
            "grove".into()
        }
    });
    (provider, model)
}

/// A tool call as a `tool` part.
fn tool_part(c: &ToolCall, time: i64) -> Map<String, Value> {
    let input = native::input_object(c);
    let output = c.output.clone().unwrap_or_default();
    let state = match c.status {
        ToolStatus::Completed => json!({
            "status": "completed", "input": input, "output": output,
            "title": c.title.clone().unwrap_or_default(), "metadata": {},
            "time": {"start": time, "end": time},
        }),
        _ => json!({
            "status": "error", "input": input,
            "error": if output.is_empty() { "The tool call did not complete.".to_string() } else { output },
            "time": {"start": time, "end": time},
        }),
    };
    obj(json!({"type": "tool", "tool": c.name, "callID": c.tool_call_id, "state": state}))
}
