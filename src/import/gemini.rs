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
                    || subagent_parent(&p).is_some()
                {
                    out.push(p);
                }
            }
        }
        out.sort();
        Ok(out)
    }
    fn default_paths(&self, roots: &[PathBuf]) -> Vec<PathBuf> {
        // `$GEMINI_CLI_HOME/.gemini/tmp/<project>/`, the project named by
        // the `.project_root` Gemini writes there.
        crate::agent::homes::gemini_project_dirs(roots)
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

/// Imports one saved chat.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".jsonl") {
        let Some(log) = read_lines(path, summary)? else {
            return Ok(None);
        };
        if !log.has_own_messages {
            // A resume in a later minute leaves a file of the session's id
            // holding only its context: it names no conversation, and never
            // renames or re-dates the thread the real file makes.
            summary.skip(
                "session",
                "a file holding no message of its own (Gemini leaves one when a session resumes)"
                    .into(),
            );
            return Ok(None);
        }
        let mut thread = session(path, &log.meta, &log.records, summary);
        if let Some(first) = log.earliest.filter(|e| *e < thread.meta.created_at) {
            thread.meta.created_at = first;
        }
        join_results(&mut thread.messages, &log.results, summary);
        keep_superseded(&mut thread, log.superseded);
        return Ok(Some(thread));
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

/// A JSON Lines session as Gemini CLI's recording service writes it, read
/// as Gemini reads it back: a metadata line (again at each resume), message
/// records (one written again, whole, each time its tool calls, results or
/// tokens change: the last version counts), `{"$set": {…}}` patches of the
/// metadata (`messages` replaces the conversation: at the start, at a
/// resume, after a compression) and `{"$rewindTo": id}` (that message and
/// those after it are dropped).
struct Log {
    meta: Map<String, Value>,
    /// The conversation at the end, in order.
    records: Vec<Map<String, Value>>,
    /// Tool results Gemini writes again as records of their own (and lists
    /// in a resumed conversation): by call id, to join the call they answer.
    results: HashMap<String, Value>,
    /// Messages the conversation dropped (a rewind, a compression), as they
    /// were last written.
    superseded: Vec<Map<String, Value>>,
    /// Whether any message was written as a line of its own (not only
    /// listed by a `$set`).
    has_own_messages: bool,
    /// When the first message was first written.
    earliest: Option<String>,
}

/// The conversation as the lines so far make it.
#[derive(Default)]
struct Conversation {
    /// Message ids in order.
    order: Vec<String>,
    /// Each id's last version.
    latest: HashMap<String, Map<String, Value>>,
    /// Every id ever met, in the order first met.
    seen: Vec<String>,
    results: HashMap<String, Value>,
    /// The earliest time a message was written (a resume writes the
    /// session's context again, later).
    earliest: Option<String>,
}

impl Conversation {
    /// A message record (a tool-result record goes to the results).
    fn add(&mut self, r: Map<String, Value>) {
        if tool_results(&r, &mut self.results) {
            return;
        }
        let Some(id) = s(&r, "id") else { return };
        if let Some(t) = s(&r, "timestamp").and_then(|t| atsf::normalize_timestamp(&t).ok())
            && self.earliest.as_ref().is_none_or(|e| t < *e)
        {
            self.earliest = Some(t);
        }
        if !self.latest.contains_key(&id) {
            self.seen.push(id.clone());
        }
        if !self.order.contains(&id) {
            self.order.push(id.clone());
        }
        self.latest.insert(id, r);
    }

    /// `$rewindTo`: that message and those after it go (all of them when
    /// the id is unknown, as Gemini does).
    fn rewind(&mut self, target: Option<&str>) {
        let at = target
            .and_then(|t| self.order.iter().position(|id| id == t))
            .unwrap_or(0);
        self.order.truncate(at);
    }

    /// `$set.messages`: the conversation is this list now. A message the
    /// lines already wrote keeps its own last version: the list restates the
    /// history as the model is given it (calls without their results,
    /// results as user records under the call's id).
    fn replace(&mut self, list: &[Value]) {
        self.order.clear();
        for m in list.iter().filter_map(Value::as_object) {
            match s(m, "id").filter(|id| self.latest.contains_key(id)) {
                Some(id) if !is_tool_result_record(m) => {
                    if !self.order.contains(&id) {
                        self.order.push(id);
                    }
                }
                _ => self.add(m.clone()),
            }
        }
    }
}

fn read_lines(path: &Path, summary: &mut Summary) -> Result<Option<Log>> {
    let text = std::fs::read(path).ctx("reading", path)?;
    let mut meta = Map::new();
    let mut chat = Conversation::default();
    let mut has_own_messages = false;
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
        if o.contains_key("type") && o.contains_key("id") {
            has_own_messages |= !is_tool_result_record(&o);
            if s(&o, "id").is_some_and(|id| chat.latest.contains_key(&id)) {
                summary.skip(
                    "message",
                    "written again as it changed: the last version is kept".into(),
                );
            }
            chat.add(o);
        } else if let Some(target) = o.get("$rewindTo") {
            chat.rewind(target.as_str());
            summary.count("$rewindTo").mapped += 1;
        } else if let Some(Value::Object(patch)) = o.get("$set") {
            for (k, v) in patch {
                match (k.as_str(), v) {
                    ("messages", Value::Array(list)) => chat.replace(list),
                    _ => {
                        meta.insert(k.clone(), v.clone());
                    }
                }
            }
            summary.count("$set").mapped += 1;
        } else {
            // A metadata line: the first one says when the session began.
            for (k, v) in o {
                if k == "startTime" && meta.contains_key("startTime") {
                    continue;
                }
                meta.insert(k, v);
            }
        }
    }
    if meta.is_empty() && chat.order.is_empty() {
        return Ok(None);
    }
    let Conversation {
        order,
        mut latest,
        seen,
        results,
        earliest,
    } = chat;
    let superseded = seen
        .iter()
        .filter(|id| !order.contains(id))
        .filter_map(|id| latest.get(id).cloned())
        .collect();
    let records = order
        .into_iter()
        .filter_map(|id| latest.remove(&id))
        .collect();
    Ok(Some(Log {
        meta,
        records,
        results,
        superseded,
        has_own_messages,
        earliest,
    }))
}

/// Whether `r` is a user record holding only tool results (Gemini writes
/// each result again so, after the call that holds it).
fn is_tool_result_record(r: &Map<String, Value>) -> bool {
    s(r, "type").as_deref() == Some("user")
        && r.get("content")
            .and_then(Value::as_array)
            .is_some_and(|parts| {
                !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some())
            })
}

/// Takes the results of a tool-result record into `results` (by call id);
/// whether `r` was one.
fn tool_results(r: &Map<String, Value>, results: &mut HashMap<String, Value>) -> bool {
    if !is_tool_result_record(r) {
        return false;
    }
    for part in r
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(id) = part
            .get("functionResponse")
            .and_then(|f| f.get("id"))
            .and_then(Value::as_str)
        {
            results.insert(id.to_string(), part.clone());
        }
    }
    true
}

/// Gives each call without a result the one Gemini wrote apart; the others
/// are counted as joined (their call holds them already).
fn join_results(messages: &mut [Message], results: &HashMap<String, Value>, summary: &mut Summary) {
    for m in messages.iter_mut() {
        for call in m.tool_calls.iter_mut().flatten() {
            let Some(part) = results.get(&call.tool_call_id) else {
                continue;
            };
            if call.output.is_none() {
                let response = part.get("functionResponse").and_then(|f| f.get("response"));
                let output = match response.and_then(|r| r.get("output").or_else(|| r.get("error")))
                {
                    Some(Value::String(t)) => t.clone(),
                    Some(other) => other.to_string(),
                    None => response.map(Value::to_string).unwrap_or_default(),
                };
                if response.is_some_and(|r| r.get("error").is_some()) {
                    call.status = ToolStatus::Failed;
                } else if matches!(call.status, ToolStatus::Pending | ToolStatus::Running) {
                    call.status = ToolStatus::Completed;
                }
                call.output = Some(output);
            }
        }
    }
    summary.count("tool result").joined += results.len() as u64;
}

/// Records the messages Gemini dropped from the conversation on the thread
/// (`metadata.gemini.superseded`), so that a rewind or a compression loses
/// nothing.
fn keep_superseded(thread: &mut ImportedThread, superseded: Vec<Map<String, Value>>) {
    if superseded.is_empty() {
        return;
    }
    if let Some(Value::Object(g)) = thread.meta.metadata_mut().get_mut("gemini") {
        g.insert(
            "superseded".into(),
            Value::Array(superseded.into_iter().map(Value::Object).collect()),
        );
    }
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
    // The thread began with its first record (a resume's metadata line
    // comes later); the session's start time when it has none.
    let created = records
        .first()
        .and_then(|r| s(r, "timestamp"))
        .or_else(|| s(meta, "startTime"))
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
    defer_unfinished_reply(&mut messages, live, summary);
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
    let mut thread = crate::threads::new_meta(&title, "gemini-cli", context(path, meta));
    thread.thread_id = format!("gemini-{session_id}");
    thread.main_thread_id = subagent_parent(path).map(|parent| format!("gemini-{parent}"));
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
/// `~/.gemini/tmp/` (the chat's parent's parent; for a subagent's chat, one
/// level up), else the first of the session's `directories`.
fn context(path: &Path, meta: &Map<String, Value>) -> Context {
    let root = path
        .ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join(".project_root"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim().to_string())
        .or_else(|| {
            meta.get("directories")?
                .as_array()?
                .first()?
                .as_str()
                .map(str::to_string)
        })
        .filter(|t| Path::new(t).is_absolute());
    Context {
        working_dir: root.unwrap_or_default(),
        ..Context::default()
    }
}

/// The parent session of a subagent's chat, `chats/<parent session>/<id>.jsonl`.
fn subagent_parent(path: &Path) -> Option<String> {
    if path.extension()? != "jsonl" {
        return None;
    }
    let dir = path.parent()?;
    if dir.parent()?.file_name()? != "chats" {
        return None;
    }
    let parent = dir.file_name()?.to_string_lossy().into_owned();
    uuid::Uuid::parse_str(&parent).is_ok().then_some(parent)
}

/// A running session's last reply, written before its tool calls (Gemini
/// writes it again, whole, once they are there): left for the next import,
/// since a message already in the thread is never rewritten.
fn defer_unfinished_reply(messages: &mut Vec<Message>, live: bool, summary: &mut Summary) {
    let unfinished = |m: &Message| {
        m.role == Role::Agent
            && m.tool_calls.is_none()
            && m.content
                .iter()
                .all(|b| !matches!(b, ContentBlock::Text { text, .. } if !text.trim().is_empty()))
    };
    if live && messages.last().is_some_and(unfinished) {
        messages.pop();
        summary.skip(
            "message",
            "the session's last reply, still without its text or tool calls: the next import takes it"
                .into(),
        );
    }
}

/// One message record of a session.
fn record(r: &Map<String, Value>, time: String, summary: &mut Summary) -> Message {
    let kind = s(r, "type").unwrap_or_else(|| "unknown".into());
    let role = match kind.as_str() {
        // The context Gemini CLI sets up before the first prompt is not
        // the user's words.
        "user" if is_session_context(r) => Role::System,
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

/// Whether a user record is the `<session_context>` Gemini CLI opens each
/// conversation with.
fn is_session_context(r: &Map<String, Value>) -> bool {
    let first = match r.get("content") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(parts)) => parts.first().and_then(|p| p.get("text")?.as_str()),
        _ => None,
    };
    first.is_some_and(|t| t.trim_start().starts_with("<session_context>"))
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
    // Any other part (`fileData`, `functionCall`…) is kept as it is, typed
    // by its own key so that it stays a valid block.
    let mut block = o.clone();
    let kind = o.keys().next().cloned().unwrap_or_else(|| "part".into());
    block.insert("type".into(), Value::from(format!("gemini.{kind}")));
    Some(ContentBlock::Unknown(block))
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
    let mut meta = crate::threads::new_meta(&title, "gemini-cli", context(path, &Map::new()));
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
