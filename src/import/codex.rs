//! OpenAI Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
//!
//! Each line is `{timestamp, type, payload}`:
//! - `session_meta` (id, cwd, cli_version, git, `forked_from_id`) → the
//!   thread's id (`codex-<id>`), context and `metadata.codex`;
//! - `response_item`: `message` (user / assistant; developer, and user
//!   text that is injected context such as `<environment_context>`, →
//!   system), `reasoning` (summary → thinking), `function_call`,
//!   `custom_tool_call` and `local_shell_call` (→ tool calls, each its own
//!   agent message, joined with their `*_output` by `call_id`), other item
//!   types kept raw;
//! - `turn_context` → the model of the following replies (kept under
//!   `metadata.codex.turnContext`);
//! - `compacted` → a `system` message with the summary;
//! - `event_msg`: `user_message`, `agent_message`, `agent_reasoning` repeat
//!   response items for the UI and are skipped as duplicates; `token_count`
//!   totals are skipped (usage, not a message); any other event is kept raw.
//!
//! Message ids are `<thread>-L<line>`: rollout files are append-only, so a
//! grown file imports only its new lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary};
use super::{defer_pending_tail, first_prompt, is_live};
use crate::atsf::{self, ContentBlock, Context, Extra, ImageBlock, Message, Role};
use crate::error::{IoContext, Result};

/// Codex, as a [`super::Format`].
pub struct Codex;

impl super::Format for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn about(&self) -> &'static str {
        "OpenAI Codex CLI and Desktop rollout files"
    }
    fn layout(&self) -> &'static str {
        "a rollout-*.jsonl, or a directory searched for them (~/.codex/sessions)"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        sources(path)
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Output,
    ) -> Result<Option<super::Resume>> {
        let threads = import_file(source, out.summary())?
            .into_iter()
            .collect::<Vec<_>>();
        for t in threads {
            out.thread(t)?;
        }
        Ok(None)
    }
}

/// Rollout files under `path` (itself if a file), recursively, sorted:
/// in a directory, only `rollout-*.jsonl` files count.
pub fn sources(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ctx("listing", &dir)? {
            let p = entry.ctx("listing", &dir)?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "jsonl")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Imports one rollout file.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let text = std::fs::read(path).ctx("reading", path)?;
    let mut lines: Vec<(u64, Map<String, Value>)> = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(o)) => lines.push((i as u64 + 1, o)),
            Ok(_) | Err(_) => {
                summary
                    .errors
                    .push(format!("{}:{}: not a JSON object", path.display(), i + 1));
                summary.skip("malformed", "a line that is not a JSON object".into());
            }
        }
    }
    let meta_payload = lines
        .iter()
        .find(|(_, o)| o.get("type").and_then(Value::as_str) == Some("session_meta"))
        .and_then(|(_, o)| o.get("payload"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("rollout")
        .to_string();
    let session = meta_payload
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or(stem);
    let id = format!("codex-{session}");
    let s = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let git = meta_payload.get("git").and_then(Value::as_object);
    let mut meta = crate::threads::new_meta(
        "",
        "codex",
        Context {
            working_dir: s(&meta_payload, "cwd").unwrap_or_default(),
            git_branch: git.and_then(|g| s(g, "branch")),
            git_commit: git.and_then(|g| s(g, "commit_hash")),
            ..Context::default()
        },
    );
    meta.thread_id = id.clone();
    meta.agent.version = s(&meta_payload, "cli_version");
    if let Some(url) = git.and_then(|g| s(g, "repository_url")) {
        meta.context
            .extra
            .insert("remoteUrl".into(), Value::from(url));
    }
    meta.origin_thread_id = s(&meta_payload, "forked_from_id").map(|p| format!("codex-{p}"));
    let created = lines
        .first()
        .and_then(|(_, o)| o.get("timestamp").and_then(Value::as_str))
        .and_then(|t| atsf::normalize_timestamp(t).ok())
        .unwrap_or_else(atsf::now_timestamp);
    meta.created_at = created.clone();
    meta.updated_at = created.clone();

    // call_id → (output, failed)
    let mut outputs: HashMap<String, (String, bool)> = HashMap::new();
    for (_, o) in &lines {
        let Some(p) = payload(o, "response_item") else {
            continue;
        };
        if matches!(
            p.get("type").and_then(Value::as_str),
            Some("function_call_output" | "custom_tool_call_output")
        ) && let Some(call) = p.get("call_id").and_then(Value::as_str)
        {
            outputs.insert(call.to_string(), tool_output(p.get("output")));
        }
    }

    let mut messages = Vec::new();
    let mut model: Option<String> = None;
    let mut turn_context = None;
    let mut last_time = created;
    for (line, o) in &lines {
        let kind = o.get("type").and_then(Value::as_str).unwrap_or("unknown");
        let time = o
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| atsf::normalize_timestamp(t).ok())
            .unwrap_or_else(|| last_time.clone());
        last_time = time.clone();
        let empty = Map::new();
        let p = o
            .get("payload")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let ptype = p.get("type").and_then(Value::as_str).unwrap_or("");
        let msg_id = format!("{id}-L{line}");
        let new = |role, content| {
            let mut m = Message::new(role, content);
            m.id = msg_id.clone();
            m.timestamp = time.clone();
            m
        };
        match kind {
            "session_meta" => summary.count("session_meta").mapped += 1,
            "turn_context" => {
                summary.count("turn_context").mapped += 1;
                model = s(p, "model").or(model);
                turn_context = Some(Value::Object(p.clone()));
            }
            "compacted" => {
                summary.count("compacted").mapped += 1;
                let text = s(p, "message").unwrap_or_default();
                let mut m = new(
                    Role::System,
                    vec![ContentBlock::text(format!("Compacted: {text}"))],
                );
                m.extra
                    .insert("codexRecord".into(), Value::Object(o.clone()));
                messages.push(m);
            }
            "response_item" => match ptype {
                "message" => {
                    let role = match p.get("role").and_then(Value::as_str) {
                        Some("assistant") => Role::Agent,
                        Some("user") => Role::User,
                        _ => Role::System,
                    };
                    let content = content_blocks(p.get("content"));
                    let injected = role == Role::User
                        && content.iter().all(|b| match b {
                            ContentBlock::Text { text, .. } => {
                                let t = text.trim_start();
                                t.starts_with("<environment_context>")
                                    || t.starts_with("<user_instructions>")
                                    || t.starts_with("# AGENTS.md")
                            }
                            _ => false,
                        });
                    let mut m = new(if injected { Role::System } else { role.clone() }, content);
                    if role == Role::Agent {
                        m.model = model.clone();
                    }
                    summary.count("message").mapped += 1;
                    messages.push(m);
                }
                "reasoning" => {
                    let text: Vec<&str> = p
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|x| x.get("text").and_then(Value::as_str))
                        .collect();
                    let mut extra = Extra::new();
                    if let Some(enc) = p.get("encrypted_content") {
                        extra.insert("encryptedContent".into(), enc.clone());
                    }
                    let mut m = new(
                        Role::Agent,
                        vec![ContentBlock::Thinking {
                            text: text.join("\n\n"),
                            extra,
                        }],
                    );
                    m.model = model.clone();
                    summary.count("reasoning").mapped += 1;
                    messages.push(m);
                }
                "function_call" | "custom_tool_call" | "local_shell_call" => {
                    let call_id = s(p, "call_id").or_else(|| s(p, "id")).unwrap_or_default();
                    let input = match ptype {
                        "function_call" => s(p, "arguments"),
                        "custom_tool_call" => s(p, "input"),
                        _ => p.get("action").map(Value::to_string),
                    };
                    let result = outputs.get(&call_id).map(|(t, f)| (t.as_str(), *f));
                    let name = s(p, "name").unwrap_or_else(|| "shell".into());
                    let call = super::tool_call(call_id, name, input, result, Extra::new());
                    let mut m = new(Role::Agent, Vec::new());
                    m.tool_calls = Some(vec![call]);
                    m.model = model.clone();
                    summary.count(ptype).mapped += 1;
                    messages.push(m);
                }
                "function_call_output" | "custom_tool_call_output" => {
                    summary.count(ptype).joined += 1;
                }
                other => {
                    summary.count(&format!("response_item {other}")).raw += 1;
                    messages.push(raw(new, other, o));
                }
            },
            "event_msg" => match ptype {
                "user_message"
                | "agent_message"
                | "agent_reasoning"
                | "agent_reasoning_raw_content" => {
                    summary.skip(
                        &format!("event_msg {ptype}"),
                        "repeats a response_item for the UI".into(),
                    );
                }
                "token_count" => summary.skip(
                    "event_msg token_count",
                    "running token totals, not a message".into(),
                ),
                other => {
                    summary.count(&format!("event_msg {other}")).raw += 1;
                    messages.push(raw(new, other, o));
                }
            },
            other => {
                summary.count(other).raw += 1;
                messages.push(raw(new, other, o));
            }
        }
    }
    defer_pending_tail(&mut messages, is_live(path), summary);
    meta.title = first_prompt(&messages).unwrap_or_else(|| {
        format!(
            "Codex session {}",
            session.chars().take(8).collect::<String>()
        )
    });
    let mut codex = meta_payload.clone();
    if let Some(tc) = turn_context {
        codex.insert("turnContext".into(), tc);
    }
    meta.metadata_mut()
        .insert("codex".into(), Value::Object(codex));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "codex", "source": path, "sourceId": session}),
    );
    Ok(Some(ImportedThread { meta, messages }))
}

fn payload<'a>(o: &'a Map<String, Value>, kind: &str) -> Option<&'a Map<String, Value>> {
    if o.get("type").and_then(Value::as_str) != Some(kind) {
        return None;
    }
    o.get("payload").and_then(Value::as_object)
}

/// A `system` message carrying a record grove does not map.
fn raw(
    new: impl Fn(Role, Vec<ContentBlock>) -> Message,
    kind: &str,
    o: &Map<String, Value>,
) -> Message {
    let mut m = new(
        Role::System,
        vec![ContentBlock::text(format!("[Codex {kind} record]"))],
    );
    m.extra
        .insert("codexRecord".into(), Value::Object(o.clone()));
    m
}

/// The text of a tool output, and whether it failed. Older rollouts store
/// a JSON string `{"output", "metadata": {"exit_code"}}`.
fn tool_output(v: Option<&Value>) -> (String, bool) {
    let text = match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => {
            let failed = o.get("success").and_then(Value::as_bool) == Some(false);
            let content = o.get("content").and_then(Value::as_str).unwrap_or_default();
            return (content.to_string(), failed);
        }
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text)
        && let Some(out) = o.get("output").and_then(Value::as_str)
    {
        let code = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        return (out.to_string(), code.is_some_and(|c| c != 0));
    }
    (text, false)
}

fn content_blocks(v: Option<&Value>) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    for b in v.and_then(Value::as_array).into_iter().flatten() {
        match b.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => out.push(ContentBlock::text(
                b.get("text").and_then(Value::as_str).unwrap_or(""),
            )),
            Some("input_image") => out.push(ContentBlock::Image(ImageBlock {
                asset_ref: None,
                mime_type: None,
                data: b
                    .get("image_url")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                extra: Extra::new(),
            })),
            _ => {
                if let Value::Object(map) = b {
                    out.push(ContentBlock::Unknown(map.clone()));
                }
            }
        }
    }
    out
}
