//! Amp thread JSON (seed 001), as Amp kept it on disk and as `amp threads
//! export <id>` prints it (the current Amp CLI keeps threads on its server;
//! `amp threads export T-… | grove import amp -` brings one in): `T-<uuid>`
//! ids kept, roles user / assistant / info, relationships, `originThreadID`,
//! `forkPointIndex`, `mainThreadID`, `archived`. The working directory is
//! the first of `env.initial.trees[].uri` (its branch from
//! `repository.ref`); an assistant message's `usage` gives its model and
//! tokens, `state.stopReason` its stop reason.
//!
//! Message content is read as Amp writes it (Anthropic-style blocks): text,
//! thinking, `tool_use`; `tool_result` blocks (Amp's `toolUseID` + `run`, or
//! `tool_use_id` + `content`) are joined to their call. Message ids are
//! `<thread>-<messageId>` (else the position), so re-importing a grown
//! thread appends only new messages. A message of tool results only stays a
//! message (its blocks kept as they are) so Amp's message indices — in
//! relationships and `forkPointIndex` — keep pointing at the same messages.
//! Unknown top-level fields are kept under `metadata.amp`, unknown blocks as
//! they are.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary};
use crate::atsf::{self, ContentBlock, Context, Extra, Message, Relationship, Role, ToolCall};
use crate::error::Result;

/// Amp, as a [`super::Format`].
pub struct Amp;

impl super::Format for Amp {
    fn name(&self) -> &'static str {
        "amp"
    }
    fn about(&self) -> &'static str {
        "Amp thread JSON files"
    }
    fn layout(&self) -> &'static str {
        "an Amp thread .json, or a directory of them"
    }
    fn sources(&self, path: &Path) -> Result<Vec<std::path::PathBuf>> {
        super::json_files(path)
    }
    fn resumable(&self) -> super::Resumable {
        super::Resumable::WholeFile
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Sink,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_file(source, summary))
    }
}

/// Imports one Amp thread file.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let Some(raw) = super::read_object(path, "thread", summary)? else {
        return Ok(None);
    };
    let Some(id) = raw.get("id").and_then(Value::as_str).map(str::to_string) else {
        summary.errors.push(format!("{}: no `id`", path.display()));
        summary.skip("thread", "no id".into());
        return Ok(None);
    };
    if let Err(e) = crate::store::validate_thread_id(&id) {
        summary.errors.push(format!("{}: {e}", path.display()));
        summary.skip("thread", "an id that is not a safe name".into());
        return Ok(None);
    }
    let created = time_of(raw.get("created")).unwrap_or_else(atsf::now_timestamp);
    let title = raw
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("Untitled")
        .to_string();
    let mut meta = crate::threads::new_meta(&title, "amp", context(&raw));
    meta.thread_id = id.clone();
    meta.created_at = created.clone();
    meta.updated_at = time_of(raw.get("updatedAt")).unwrap_or_else(|| created.clone());
    meta.agent.version = raw
        .get("env")
        .and_then(|e| e.pointer("/initial/platform/clientVersion"))
        .and_then(Value::as_str)
        .map(str::to_string);
    meta.archived = (raw.get("archived").and_then(Value::as_bool) == Some(true)).then_some(true);
    if let Some(rels) = raw.get("relationships") {
        match serde_json::from_value::<Vec<Relationship>>(rels.clone()) {
            Ok(r) if !r.is_empty() => meta.relationships = Some(r),
            Ok(_) => {}
            Err(e) => summary.errors.push(format!(
                "{}: relationships: {e} (kept under metadata.amp)",
                path.display()
            )),
        }
    }
    let text = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
    meta.origin_thread_id = text("originThreadID");
    meta.fork_point_index = raw.get("forkPointIndex").and_then(Value::as_u64);
    meta.main_thread_id = text("mainThreadID");
    let mut rest = raw.clone();
    rest.remove("messages");
    meta.metadata_mut()
        .insert("amp".into(), Value::Object(rest));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "amp", "source": path, "sourceId": id}),
    );

    let messages = raw
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let results = tool_results(&messages);
    let mut out = Vec::new();
    let mut last_time = created;
    for (i, m) in messages.iter().enumerate() {
        let Some(obj) = m.as_object() else {
            summary.skip("message", format!("message {i} is not an object"));
            continue;
        };
        let msg = message(obj, &id, i, &results, last_time.clone(), summary);
        last_time = msg.timestamp.clone();
        out.push(msg);
    }
    Ok(Some(ImportedThread {
        meta,
        messages: out,
    }))
}

/// Message `i` of thread `id`; `last_time` when it says none.
fn message(
    obj: &Map<String, Value>,
    id: &str,
    i: usize,
    results: &HashMap<String, (String, bool)>,
    last_time: String,
    summary: &mut Summary,
) -> Message {
    let role_name = obj.get("role").and_then(Value::as_str).unwrap_or("");
    let role = match role_name {
        "user" => Role::User,
        "assistant" => Role::Agent,
        "info" => Role::System,
        other => {
            summary.count(&format!("role {other:?}")).raw += 1;
            Role::System
        }
    };
    let (mut content, calls, only_results) = blocks(obj.get("content"), results);
    if only_results {
        // Joined to their calls, and kept in place as they are: Amp's
        // message indices (relationships, forkPointIndex) stay right.
        summary.count(role_name).joined += 1;
        content = obj
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|b| b.as_object().cloned().map(ContentBlock::Unknown))
            .collect();
    }
    let usage = obj.get("usage").and_then(Value::as_object);
    let mut msg = Message::new(role, content);
    msg.timestamp = time_of(obj.get("meta").and_then(|m| m.get("sentAt")))
        .or_else(|| time_of(usage.and_then(|u| u.get("timestamp"))))
        .or_else(|| first_block_time(obj.get("content")))
        .unwrap_or(last_time);
    msg.id = match obj.get("messageId") {
        Some(Value::String(n)) => format!("{id}-{n}"),
        Some(n @ Value::Number(_)) => format!("{id}-{n}"),
        _ => format!("{id}-{i}"),
    };
    msg.tool_calls = (!calls.is_empty()).then_some(calls);
    if let Some(u) = usage {
        msg.model = u.get("model").and_then(Value::as_str).map(str::to_string);
        let mut extra = u.clone();
        let input = extra.remove("inputTokens").and_then(|v| v.as_u64());
        let output = extra.remove("outputTokens").and_then(|v| v.as_u64());
        extra.remove("model");
        msg.tokens = Some(atsf::Tokens {
            input,
            output,
            extra,
            ..Default::default()
        });
    }
    msg.stop_reason = obj
        .get("state")
        .and_then(|s| s.get("stopReason"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut extra: Map<String, Value> = obj.clone();
    extra.remove("content");
    extra.remove("role");
    msg.extra.insert("amp".into(), Value::Object(extra));
    if !only_results && matches!(role_name, "user" | "assistant" | "info") {
        summary.count(role_name).mapped += 1;
    }
    msg
}

/// A time as Amp writes it: milliseconds since the epoch, or ISO 8601.
fn time_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Number(n) => {
            let ts = jiff::Timestamp::from_millisecond(n.as_i64()?).ok()?;
            atsf::normalize_timestamp(&ts.to_string()).ok()
        }
        Value::String(s) => atsf::normalize_timestamp(s).ok(),
        _ => None,
    }
}

/// The earliest `startTime` of a message's blocks.
fn first_block_time(content: Option<&Value>) -> Option<String> {
    content?
        .as_array()?
        .iter()
        .filter_map(|b| time_of(b.get("startTime")))
        .min()
}

/// The working directory: the first tree's `file://` URI; its branch and
/// remote from `repository`.
fn context(raw: &Map<String, Value>) -> Context {
    let tree = raw
        .get("env")
        .and_then(|e| e.pointer("/initial/trees/0"))
        .and_then(Value::as_object);
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let working_dir = s(tree.and_then(|t| t.get("uri")))
        .and_then(|u| u.strip_prefix("file://").map(percent_decode))
        .unwrap_or_default();
    let repository = tree.and_then(|t| t.get("repository"));
    let mut context = Context {
        working_dir,
        git_branch: s(repository.and_then(|r| r.get("ref")))
            .map(|r| r.trim_start_matches("refs/heads/").to_string()),
        git_commit: s(repository.and_then(|r| r.get("sha"))),
        ..Context::default()
    };
    if let Some(url) = s(repository.and_then(|r| r.get("url"))) {
        context.extra.insert("remoteUrl".into(), Value::from(url));
    }
    context
}

/// `%XX` escapes of a URI path decoded (bytes that do not form UTF-8 stay escaped).
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = path
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_string())
}

/// tool use id → (output, failed).
fn tool_results(messages: &[Value]) -> HashMap<String, (String, bool)> {
    let mut out = HashMap::new();
    for m in messages {
        for b in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = b
                .get("toolUseID")
                .or_else(|| b.get("tool_use_id"))
                .and_then(Value::as_str);
            let Some(id) = id else { continue };
            let (text, failed) = match b.get("run") {
                Some(run) => {
                    let status = run.get("status").and_then(Value::as_str).unwrap_or("done");
                    let result = run.get("result").or_else(|| run.get("error"));
                    (
                        match result {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => String::new(),
                        },
                        matches!(
                            status,
                            "error" | "failed" | "cancelled" | "rejected-by-user"
                        ),
                    )
                }
                None => (
                    match b.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    },
                    b.get("is_error").and_then(Value::as_bool) == Some(true),
                ),
            };
            out.insert(id.to_string(), (text, failed));
        }
    }
    out
}

/// Blocks, tool calls, and whether the content was only tool results.
fn blocks(
    content: Option<&Value>,
    results: &HashMap<String, (String, bool)>,
) -> (Vec<ContentBlock>, Vec<ToolCall>, bool) {
    let (out, calls, results_seen) = super::anthropic_content(content, |b| {
        let id = b
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let result = results.get(&id).map(|(t, f)| (t.as_str(), *f));
        let name = b
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .into();
        let input = b.get("input").map(Value::to_string);
        super::tool_call(id, name, input, result, Extra::new())
    });
    let only_results = results_seen > 0 && out.is_empty() && calls.is_empty();
    (out, calls, only_results)
}
