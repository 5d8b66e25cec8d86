//! One thread's records become its messages: one function per record kind.
//!
//! - `user`: a prompt; `isMeta` and `isCompactSummary` ("This session is
//!   being continued…") are `system`; a record of only tool results is
//!   joined into the calls it answers.
//! - `assistant`: a reply. One API response written as several records (the
//!   same `message.id`) counts its `usage` once, on the first.
//! - `attachment` `queued_command`: what was typed while the agent worked —
//!   a prompt (other command modes, such as task notifications, `system`).
//! - `system` with something to say (`api_error`, `compact_boundary`,
//!   `local_command`, any `content`): a `system` message.
//! - `summary`, `custom-title`, `ai-title`: the thread's title, no message.
//!   A summary whose `leafUuid` is not in this session describes another
//!   one: it is left out.
//! - Everything else (`progress`, `file-history-snapshot`, `queue-operation`,
//!   `permission-mode`, `mode`, `last-prompt`, `worktree-state`, `pr-link`,
//!   other attachments, `system` `turn_duration` / `stop_hook_summary`,
//!   kinds not known yet): kept whole, in order, under `claudeRecords` on the
//!   next message. In the conversation, the records after its last message
//!   wait for the next one (in `metadata.import.waiting` meanwhile); a fork
//!   or a subagent thread, which does not go on, takes them on its last
//!   message (`claudeRecordsAfter`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Value};

use super::index::Entry;
use crate::atsf::{
    self, ContentBlock, Extra, Message, Role, Tokens, ToolCall, ToolStatus, completion,
};
use crate::error::Result;
use crate::import::stream::{CallLog, Calls, Stream};
use crate::import::{Sink, ThreadHandle, usage_added, usage_counts};

/// Where a tool call's result is found.
pub(super) trait Results {
    /// The record holding the result of call `id` (and its offset), if any.
    fn result(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>>;
    /// Whether a call `id` is made anywhere in what is read.
    fn has_call(&self, id: &str) -> bool;
}

/// What the importer knows from earlier imports of the same source.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Carried {
    /// API message ids whose usage was counted.
    #[serde(default)]
    pub api_ids: Vec<String>,
    /// What was counted of each of those replies' usage (an id without an
    /// entry, from an older grove, counts as counted whole).
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    pub api_counts: HashMap<String, [u64; 5]>,
    #[serde(flatten)]
    pub calls: Calls,
    /// The title so far: (rank, text).
    #[serde(default)]
    pub title: Option<(u8, String)>,
    #[serde(default)]
    pub first_prompt: Option<String>,
    #[serde(default)]
    pub last_time: Option<String>,
}

/// Claude's usage keys, in the order of [`Tokens::COUNTS`] (it reports no
/// reasoning count of its own).
const CLAUDE_USAGE_KEYS: [Option<&str>; 5] = [
    Some("input_tokens"),
    Some("output_tokens"),
    Some("cache_read_input_tokens"),
    Some("cache_creation_input_tokens"),
    None,
];

/// Title ranks: a name someone gave beats a generated one, which beats a
/// summary, which beats the first prompt.
pub(super) const RANK_SUMMARY: u8 = 1;
const RANK_AI: u8 = 2;
const RANK_CUSTOM: u8 = 3;

/// Builds one thread.
pub(super) struct Builder {
    stream: Stream,
    pub carried: Carried,
    api_seen: HashMap<String, u64>,
    /// What was counted of each reply's usage, by API message id.
    api_counted: HashMap<String, [u64; 5]>,
    /// What each record of a reply left counted: (API message id, the
    /// record's offset, the counts after it). A record the cursor stays
    /// before is read again, so the next import must not find its share
    /// counted already (Claude Code 1.0 writes the output so far on each
    /// record of a reply, not the reply's total).
    api_log: Vec<(String, u64, [u64; 5])>,
    /// What the cursor this builder started from had counted.
    api_start: HashMap<String, [u64; 5]>,
    /// Known uuids of this session (a summary's leaf must be one).
    /// Shared by every thread of a source (one copy, not one per subagent).
    pub uuids: Rc<HashSet<String>>,
    log: CallLog,
    /// Entry index → index of the message it went into.
    pub index_of: HashMap<usize, u64>,
}

/// What a finished builder leaves for the cursor.
pub(super) struct Ended {
    /// The first byte not taken (records waiting, replies deferred), if any.
    pub unconsumed: Option<u64>,
    pub waiting: Vec<Value>,
    pub carried: Carried,
}

fn str_of<'a>(raw: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    raw.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

impl Builder {
    pub fn new(thread: ThreadHandle, hold_trailing: bool, live: bool, carried: Carried) -> Self {
        let api_seen = carried.api_ids.iter().map(|id| (id.clone(), 0)).collect();
        let api_start = carried_counts(&carried);
        let api_counted = api_start.clone();
        Builder {
            stream: Stream::new(thread, "claudeRecords", hold_trailing, live),
            carried,
            api_seen,
            api_counted,
            api_log: Vec::new(),
            api_start,
            uuids: Rc::default(),
            log: CallLog::default(),
            index_of: HashMap::new(),
        }
    }

    /// Maps record `raw` (entry `i`).
    pub fn record(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
        results: &mut dyn Results,
    ) -> Result<()> {
        if let Some(t) = e.time.as_deref() {
            self.carried.last_time = Some(t.to_string());
        }
        match &*e.kind {
            "user" => self.user(out, i, e, raw, results),
            "assistant" => self.assistant(out, i, e, raw, results),
            "attachment" => self.attachment(out, i, e, raw),
            "system" => self.system(out, i, e, raw),
            "summary" => {
                if self.summary(out, &raw) {
                    self.wait(out, e, raw);
                }
                Ok(())
            }
            "custom-title" | "ai-title" => {
                self.title_record(e, &raw);
                self.wait(out, e, raw);
                Ok(())
            }
            _ => {
                self.wait(out, e, raw);
                Ok(())
            }
        }
    }

    fn user(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
        results: &mut dyn Results,
    ) -> Result<()> {
        if e.only_results {
            return self.results_record(out, i, e, raw, results);
        }
        let role = if raw.get("isCompactSummary").and_then(Value::as_bool) == Some(true)
            || raw.get("isMeta").and_then(Value::as_bool) == Some(true)
        {
            Role::System
        } else {
            Role::User
        };
        let (content, calls, _) = super::super::anthropic_content(
            raw.get("message").and_then(|m| m.get("content")),
            plain_call,
        );
        let mut m = self.message(e, role.clone(), content, &raw);
        if !calls.is_empty() {
            m.tool_calls = Some(calls);
        }
        if role == Role::User && self.carried.first_prompt.is_none() {
            self.carried.first_prompt = prompt_title(&m);
        }
        out.summary().count("user").mapped += 1;
        m.extra
            .insert("claude".into(), Value::Object(without_content(raw)));
        self.emit(out, i, e, m);
        Ok(())
    }

    /// A user record of only tool results: joined to calls made in this
    /// import; the result of a call stored pending by an earlier import
    /// comes as a completion message; one answering no call is kept whole.
    fn results_record(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
        results: &dyn Results,
    ) -> Result<()> {
        let ids: Vec<String> = super::index::result_ids(&raw).map(str::to_string).collect();
        let mut done = Vec::new();
        let mut orphan = false;
        for id in &ids {
            if results.has_call(id) || self.carried.calls.already_joined(id) {
                continue;
            }
            match self.log.completed(&mut self.carried.calls, id, e.offset) {
                Some((message, name)) => {
                    let mut call = plain_call(&serde_json::json!({"id": id, "name": name}));
                    join_result(&mut call, &raw, e.time.as_deref(), None);
                    done.push((message, call));
                }
                None => orphan = true,
            }
        }
        if orphan {
            self.wait(out, e, raw);
            return Ok(());
        }
        out.summary().count("user").joined += 1;
        let time = e
            .time
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| self.time());
        let mut by_message: BTreeMap<String, Vec<ToolCall>> = BTreeMap::new();
        for (message, call) in done {
            by_message.entry(message).or_default().push(call);
        }
        for (message, calls) in by_message {
            let m = completion(&message, calls, time.clone());
            self.emit(out, i, e, m);
        }
        Ok(())
    }

    fn assistant(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
        results: &mut dyn Results,
    ) -> Result<()> {
        let api = raw.get("message").and_then(Value::as_object);
        let (content, mut calls, _) =
            super::super::anthropic_content(api.and_then(|a| a.get("content")), plain_call);
        for call in calls.iter_mut() {
            if let Some((record, offset)) = results.result(&call.tool_call_id)? {
                join_result(call, &record, e.time.as_deref(), Some(offset));
                self.log
                    .joined(call.tool_call_id.clone(), offset, self.stream.next_index());
            }
        }
        let mut m = self.message(e, Role::Agent, content, &raw);
        if !calls.is_empty() {
            m.tool_calls = Some(calls);
        }
        let s = |k: &str| {
            api.and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        m.model = s("model");
        m.stop_reason = s("stop_reason");
        m.tokens = self.reply_usage(s("id"), api.and_then(|a| a.get("usage")), e.offset);
        out.summary().count("assistant").mapped += 1;
        m.extra
            .insert("claude".into(), Value::Object(without_content(raw)));
        self.emit(out, i, e, m);
        Ok(())
    }

    /// The usage a record of reply `api_id` adds. Claude Code writes a
    /// reply as one record per content block, each with the reply's usage
    /// (older versions: the output counted so far): the first record
    /// carries it, a later one only what its figures add.
    fn reply_usage(
        &mut self,
        api_id: Option<String>,
        usage: Option<&Value>,
        at: u64,
    ) -> Option<Tokens> {
        let now = usage_counts(usage?, CLAUDE_USAGE_KEYS);
        let Some(id) = api_id else {
            return usage_added(&mut [0; 5], now);
        };
        self.api_seen.entry(id.clone()).or_insert(at);
        let counted = self.api_counted.entry(id.clone()).or_default();
        let added = usage_added(counted, now);
        self.api_log.push((id, at, *counted));
        added
    }

    fn attachment(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
    ) -> Result<()> {
        let att = raw.get("attachment").and_then(Value::as_object);
        let kind = att.and_then(|a| str_of(a, "type")).unwrap_or("");
        if kind != "queued_command" {
            self.wait(out, e, raw);
            return Ok(());
        }
        let mode = att.and_then(|a| str_of(a, "commandMode"));
        let role = match mode {
            None | Some("prompt") => Role::User,
            Some(_) => Role::System,
        };
        let prompt = att.and_then(|a| a.get("prompt"));
        let (content, _, _) = match prompt {
            Some(Value::String(s)) => (vec![ContentBlock::text(s.clone())], Vec::new(), 0),
            other => super::super::anthropic_content(other, plain_call),
        };
        let mut m = self.message(e, role.clone(), content, &raw);
        if role == Role::User && self.carried.first_prompt.is_none() {
            self.carried.first_prompt = prompt_title(&m);
        }
        let mut kept = raw;
        if let Some(Value::Object(a)) = kept.get_mut("attachment") {
            a.remove("prompt");
        }
        m.extra.insert("claude".into(), Value::Object(kept));
        out.summary().count("attachment queued_command").mapped += 1;
        self.emit(out, i, e, m);
        Ok(())
    }

    fn system(
        &mut self,
        out: &mut Sink,
        i: usize,
        e: &Entry,
        raw: Map<String, Value>,
    ) -> Result<()> {
        let subtype = str_of(&raw, "subtype").unwrap_or("").to_string();
        let text = match subtype.as_str() {
            "api_error" => Some(api_error_text(&raw)),
            "compact_boundary" => Some(compact_text(&raw)),
            _ => str_of(&raw, "content").map(str::to_string),
        };
        let Some(text) = text else {
            self.wait(out, e, raw);
            return Ok(());
        };
        let mut m = self.message(e, Role::System, vec![ContentBlock::text(text)], &raw);
        let mut kept = raw;
        // The text made from the record's fields: its own content is kept
        // (a session written back gets it, not the text made from it).
        if !matches!(subtype.as_str(), "api_error" | "compact_boundary") {
            kept.remove("content");
        }
        m.extra.insert("claude".into(), Value::Object(kept));
        let label = if subtype.is_empty() {
            "system".to_string()
        } else {
            format!("system {subtype}")
        };
        out.summary().count(&label).mapped += 1;
        self.emit(out, i, e, m);
        Ok(())
    }

    /// Whether the summary is this session's (it then names the thread).
    fn summary(&mut self, out: &mut Sink, raw: &Map<String, Value>) -> bool {
        let leaf = str_of(raw, "leafUuid");
        if leaf.is_some_and(|l| !self.uuids.contains(l)) {
            out.summary().skip(
                "summary",
                "a summary of another session (its leafUuid is not in this file)".into(),
            );
            return false;
        }
        if let Some(text) = str_of(raw, "summary") {
            self.offer_title(RANK_SUMMARY, text);
        }
        true
    }

    fn title_record(&mut self, e: &Entry, raw: &Map<String, Value>) {
        let (rank, key) = if &*e.kind == "custom-title" {
            (RANK_CUSTOM, "customTitle")
        } else {
            (RANK_AI, "aiTitle")
        };
        if let Some(text) = str_of(raw, key).or_else(|| str_of(raw, "title")) {
            self.offer_title(rank, text);
        }
    }

    fn offer_title(&mut self, rank: u8, text: &str) {
        let text = crate::threads::title_from_prompt(text);
        if text.is_empty() {
            return;
        }
        if self.carried.title.as_ref().is_none_or(|(r, _)| rank >= *r) {
            self.carried.title = Some((rank, text));
        }
    }

    /// A record kept whole on the next message.
    fn wait(&mut self, out: &mut Sink, e: &Entry, raw: Map<String, Value>) {
        let label = match (&*e.kind, attachment_kind(&raw), str_of(&raw, "subtype")) {
            ("attachment", Some(k), _) => format!("attachment {k}"),
            ("system", _, Some(s)) => format!("system {s}"),
            (k, _, _) => k.to_string(),
        };
        out.summary().count(&label).joined += 1;
        self.stream.wait(e.offset, raw);
    }

    fn time(&self) -> String {
        self.carried
            .last_time
            .clone()
            .unwrap_or_else(atsf::now_timestamp)
    }

    fn message(
        &self,
        e: &Entry,
        role: Role,
        content: Vec<ContentBlock>,
        raw: &Map<String, Value>,
    ) -> Message {
        let mut m = Message::new(role, content);
        m.id = match crate::agent::marks::grove_id(raw).or_else(|| str_of(raw, "uuid")) {
            Some(u) => u.to_string(),
            None => format!("{}-{}", e.kind, e.hash.as_deref().unwrap_or("0")),
        };
        m.timestamp = e
            .time
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| self.time());
        m
    }

    /// Sends message `m` from entry `i`, with the records waiting before it.
    fn emit(&mut self, out: &mut Sink, i: usize, e: &Entry, m: Message) {
        self.index_of.insert(i, self.stream.next_index());
        self.stream.emit(out, m, e.line, e.offset);
    }

    /// Writes what is left; what the next import needs to go on.
    pub fn end(self, out: &mut Sink) -> Ended {
        let mut ended = self.stream.end(out, "deferred");
        let cut = ended.unconsumed.unwrap_or(u64::MAX);
        let mut carried = self.carried;
        self.log.settle(&mut carried.calls, &mut ended);
        let mut seen: Vec<(u64, String)> = self
            .api_seen
            .into_iter()
            .filter(|(_, at)| *at < cut)
            .map(|(id, at)| (at, id))
            .collect();
        seen.sort();
        carried.api_ids = seen.into_iter().rev().take(64).map(|(_, id)| id).collect();
        let mut counted = self.api_start;
        for (id, at, now) in self.api_log {
            if at < cut {
                counted.insert(id, now);
            }
        }
        carried.api_counts = carried
            .api_ids
            .iter()
            .filter_map(|id| Some((id.clone(), *counted.get(id)?)))
            .collect();
        Ended {
            unconsumed: ended.unconsumed,
            waiting: ended.waiting,
            carried,
        }
    }

    /// The title of the thread: what the session named it, else its first prompt.
    pub fn title(&self) -> Option<String> {
        self.carried
            .title
            .as_ref()
            .map(|(_, t)| t.clone())
            .or_else(|| self.carried.first_prompt.clone())
    }
}

/// What a cursor had counted of each reply (an id without an entry, from
/// an older grove, counts as counted whole).
fn carried_counts(carried: &Carried) -> HashMap<String, [u64; 5]> {
    carried
        .api_ids
        .iter()
        .map(|id| {
            let counted = carried.api_counts.get(id).copied();
            (id.clone(), counted.unwrap_or([u64::MAX; 5]))
        })
        .collect()
}

fn attachment_kind(raw: &Map<String, Value>) -> Option<&str> {
    raw.get("attachment")?.get("type")?.as_str()
}

/// A tool call from a `tool_use` block, pending until its result is joined.
fn plain_call(b: &Value) -> ToolCall {
    let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut extra = Extra::new();
    if let Value::Object(map) = b {
        for (k, v) in map {
            if !matches!(k.as_str(), "type" | "id" | "name" | "input") {
                extra.insert(k.clone(), v.clone());
            }
        }
    }
    let name = s("name");
    ToolCall {
        tool_call_id: s("id"),
        name: if name.is_empty() { "tool".into() } else { name },
        title: None,
        status: ToolStatus::Pending,
        input: b.get("input").map(Value::to_string),
        output: None,
        duration: None,
        diff: None,
        extra,
    }
}

/// Joins the result for `call` found in `record` (a user record of tool
/// results): output text, status, images as `outputContent` blocks, the
/// record's `toolUseResult`, and the rest of the record.
fn join_result(
    call: &mut ToolCall,
    record: &Map<String, Value>,
    call_time: Option<&str>,
    _offset: Option<u64>,
) {
    let Some(block) = super::index::blocks(record).and_then(|blocks| {
        blocks.iter().find(|b| {
            b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("tool_use_id").and_then(Value::as_str) == Some(&call.tool_call_id)
        })
    }) else {
        return;
    };
    let mut text = Vec::new();
    let mut rich = Vec::new();
    match block.get("content") {
        Some(Value::String(s)) => text.push(s.clone()),
        Some(Value::Array(parts)) => {
            for p in parts {
                match (p.get("type").and_then(Value::as_str), p) {
                    (Some("text"), _) => {
                        text.push(p.get("text").and_then(Value::as_str).unwrap_or("").into())
                    }
                    (_, Value::Object(map)) => rich.push(super::super::anthropic_block(map)),
                    _ => {}
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => text.push(other.to_string()),
    }
    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
    call.status = if failed {
        ToolStatus::Failed
    } else {
        ToolStatus::Completed
    };
    call.output = Some(text.join("\n"));
    if !rich.is_empty() {
        let mut blocks: Vec<Value> = text
            .iter()
            .map(|t| serde_json::json!({"type": "text", "text": t}))
            .collect();
        blocks.extend(rich.iter().filter_map(|b| serde_json::to_value(b).ok()));
        call.extra
            .insert("outputContent".into(), Value::Array(blocks));
    }
    if let Some(tur) = record.get("toolUseResult") {
        call.extra.insert("toolUseResult".into(), tur.clone());
    }
    let mut rest = record.clone();
    rest.remove("toolUseResult");
    if let Some(Value::Object(m)) = rest.get_mut("message") {
        m.remove("content");
    }
    call.extra
        .insert("claudeResult".into(), Value::Object(rest));
    // How long the tool ran: from the call to its result.
    if let (Some(start), Some(end)) = (
        call_time.and_then(|t| t.parse::<jiff::Timestamp>().ok()),
        record
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok()),
    ) {
        let ms = end.as_millisecond() - start.as_millisecond();
        if ms >= 0 {
            call.duration = Some(serde_json::Number::from(ms));
        }
    }
}

/// The record without `message.content` (mapped into the ATSF message).
fn without_content(mut raw: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::Object(m)) = raw.get_mut("message") {
        m.remove("content");
    }
    raw
}

/// The title a prompt gives, unless it is a command or injected context.
fn prompt_title(m: &Message) -> Option<String> {
    m.content.iter().find_map(|b| match b {
        ContentBlock::Text { text, .. } => {
            let t = text.trim_start();
            let injected = [
                "<command-",
                "<local-command-",
                "<system-reminder>",
                "Caveat:",
            ]
            .iter()
            .any(|p| t.starts_with(p));
            (!t.is_empty() && !injected).then(|| crate::threads::title_from_prompt(t))
        }
        _ => None,
    })
}

fn api_error_text(raw: &Map<String, Value>) -> String {
    let error = raw.get("error");
    let status = error
        .and_then(|e| e.get("status"))
        .map(|s| format!(" {s}"))
        .unwrap_or_default();
    let message = error
        .and_then(|e| {
            e.get("message")
                .or_else(|| e.get("error").and_then(|i| i.get("message")))
                .or_else(|| e.get("error").and_then(|i| i.get("error")?.get("message")))
                .or_else(|| e.get("cause").and_then(|c| c.get("code")))
        })
        .and_then(Value::as_str)
        .or_else(|| raw.get("content").and_then(Value::as_str))
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    let retry = match (
        raw.get("retryAttempt").and_then(Value::as_u64),
        raw.get("maxRetries").and_then(Value::as_u64),
    ) {
        (Some(n), Some(max)) => format!(" (retry {n} of {max})"),
        (Some(n), None) => format!(" (retry {n})"),
        _ => String::new(),
    };
    format!("API error{status}{message}{retry}")
}

fn compact_text(raw: &Map<String, Value>) -> String {
    let meta = raw.get("compactMetadata");
    let mut about = Vec::new();
    if let Some(t) = meta.and_then(|m| m.get("trigger")).and_then(Value::as_str) {
        about.push(t.to_string());
    }
    if let Some(n) = meta
        .and_then(|m| m.get("preTokens"))
        .and_then(Value::as_u64)
    {
        about.push(format!("{n} tokens before"));
    }
    let text = str_of(raw, "content").unwrap_or("Conversation compacted");
    if about.is_empty() {
        text.to_string()
    } else {
        format!("{text} ({})", about.join(", "))
    }
}
