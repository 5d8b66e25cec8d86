//! A rollout's records become messages: one function per record kind.
//!
//! - `session_meta`: the thread's id, context and `metadata.codex`.
//! - `turn_context`: the model of the replies that follow.
//! - `response_item` `message`: assistant → `agent`; developer → `system`;
//!   user → `user`, except injected context — recognised by
//!   `internal_chat_message_metadata_passthrough.content_item_kinds` when
//!   present (`user.*` is the user's), by its tags otherwise
//!   (`<environment_context>`, `<recommended_plugins>`, `# AGENTS.md …`) —
//!   which becomes a `system` message of its own.
//! - `reasoning`: thinking (summary, and the raw text when kept).
//! - `function_call`, `custom_tool_call`, `local_shell_call`,
//!   `web_search_call`: a tool call, its output joined by `call_id`; a
//!   non-zero exit makes it `failed`; images in the output become assets.
//! - `token_count` events and `token_usage_record`: token figures on the
//!   message they follow when it is not written yet, and the thread's totals.
//! - `compacted`: a `system` message with the summary and what the
//!   compaction kept (`replacement_history`, its images as assets).
//! - `event_msg` `user_message`, `agent_message`, `agent_reasoning`,
//!   `item_completed` repeat response items: skipped as duplicates — unless
//!   the rollout has no response items (then they are the conversation).
//!   `error`, `turn_aborted`: `system` messages.
//! - Anything else travels whole on the next message (`codexRecords`).

use serde_json::{Map, Value};

use super::output;
use crate::atsf::{self, ContentBlock, Extra, Message, Role, Tokens, ToolCall, ToolStatus};
use crate::error::Result;
use crate::import::stream::{CallLog, Calls, Stream};
use crate::import::{Sink, ThreadHandle, add_usage, usage_counts};

/// Where a call's output is found.
pub(super) trait Outputs {
    /// The record holding the output of call `id` (and its offset), if any.
    fn output(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>>;
    /// Whether call `id` is made anywhere in what is read.
    fn has_call(&self, id: &str) -> bool;
}

/// What the next import of the rollout needs.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Carried {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub turn_context: Option<Value>,
    /// The rollout has response items: events repeating them are duplicates.
    #[serde(default)]
    pub responses: bool,
    #[serde(flatten)]
    pub calls: Calls,
    #[serde(default)]
    pub first_prompt: Option<String>,
    #[serde(default)]
    pub last_time: Option<String>,
    #[serde(default)]
    pub meta_seen: bool,
    /// The thread's token totals, as the rollout last gave them.
    #[serde(default)]
    pub totals: Option<Value>,
    /// How much of those running totals the thread's messages carry
    /// (in the order of [`Tokens::COUNTS`]); absent in an older grove's
    /// state, whose messages carry all of `totals`.
    #[serde(default)]
    pub counted: Option<[u64; 5]>,
    /// What the session counted before its running totals started again
    /// (lower than before): the thread's totals are this plus `totals`, so
    /// they never go back.
    #[serde(default)]
    pub counted_before: Option<[u64; 5]>,
}

impl Carried {
    /// The thread's token totals: what the session counted before its
    /// running totals started again, plus those totals.
    pub fn thread_totals(&self) -> Option<[Option<u64>; 5]> {
        let totals = usage_counts(self.totals.as_ref()?, CODEX_USAGE_KEYS);
        let before = self.counted_before.unwrap_or([0; 5]);
        Some(std::array::from_fn(|i| {
            totals[i].map(|n| n.saturating_add(before[i]))
        }))
    }
}

/// Codex's usage keys, in the order of [`Tokens::COUNTS`].
pub(super) const CODEX_USAGE_KEYS: [Option<&str>; 5] = [
    Some("input_tokens"),
    Some("output_tokens"),
    Some("cached_input_tokens"),
    Some("cache_write_input_tokens"),
    Some("reasoning_output_tokens"),
];

/// Where a record was read.
pub(super) struct At {
    pub line: u64,
    pub offset: u64,
}

/// Builds a rollout's thread.
pub(super) struct Reader {
    stream: Stream,
    thread_id: String,
    pub carried: Carried,
    log: CallLog,
    /// The id the record being read names for its message (`grove.id`,
    /// written by grove's own export).
    named: Option<String>,
    /// Per message sent in this import, by index: how much of the running
    /// totals was counted before it. A live import leaves a tail of
    /// messages for the next one (a call's output, a reply's usage still
    /// to come), which reads that tail again: it must start from what was
    /// counted before the tail, or the usage the tail carried is lost
    /// (and a restart of the totals within it is added up twice).
    usage_before: Vec<([u64; 5], Option<[u64; 5]>)>,
}

fn s(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

impl Reader {
    pub fn new(thread: ThreadHandle, thread_id: &str, live: bool, mut carried: Carried) -> Self {
        if carried.counted.is_none() {
            // An older grove's state: its messages carry the totals so far.
            carried.counted = Some(carried.totals.as_ref().map_or([0; 5], |t| {
                usage_counts(t, CODEX_USAGE_KEYS).map(|n| n.unwrap_or(0))
            }));
        }
        Reader {
            stream: Stream::new(thread, "codexRecords", true, live),
            thread_id: thread_id.to_string(),
            carried,
            log: CallLog::default(),
            named: None,
            usage_before: Vec::new(),
        }
    }

    /// Maps record `raw`, read at `at`.
    pub fn record(
        &mut self,
        out: &mut Sink,
        at: &At,
        raw: Map<String, Value>,
        outputs: &mut dyn Outputs,
    ) -> Result<()> {
        if let Some(t) = raw
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| atsf::normalize_timestamp(t).ok())
        {
            self.carried.last_time = Some(t);
        }
        self.named = crate::agent::marks::grove_id(&raw).map(str::to_string);
        let payload = raw
            .get("payload")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let kind = raw.get("type").and_then(Value::as_str).unwrap_or("unknown");
        let ptype = s(&payload, "type").unwrap_or_default();
        match (kind, ptype.as_str()) {
            // The first is the thread's metadata; a forked rollout may repeat its parent's.
            ("session_meta", _) if !self.carried.meta_seen => {
                self.carried.meta_seen = true;
                out.summary().count("session_meta").mapped += 1;
            }
            ("turn_context", _) => {
                self.carried.model = s(&payload, "model").or(self.carried.model.take());
                self.carried.turn_context = Some(Value::Object(payload));
                self.wait(out, "turn_context", at, raw);
            }
            ("response_item", "message") => self.message(out, at, &payload),
            ("response_item", "reasoning") => self.reasoning(out, at, &payload),
            (
                "response_item",
                "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call",
            ) => self.call(out, at, &ptype, &payload, outputs)?,
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                self.output_record(out, at, &ptype, raw, &payload, outputs)
            }
            ("response_item", other) => {
                let label = format!("response_item {other}");
                self.wait(out, &label, at, raw);
            }
            ("event_msg", _) => self.event(out, at, &ptype, raw, &payload),
            ("compacted", _) => self.compacted(out, at, raw, &payload),
            ("token_usage_record", _) => {
                // Codex 0.16x writes one after each response's items.
                self.tokens(
                    out,
                    payload.get("usage"),
                    payload.get("thread_token_usage"),
                    "token_usage_record",
                );
            }
            (other, _) => {
                let other = other.to_string();
                self.wait(out, &other, at, raw);
            }
        }
        Ok(())
    }

    fn id(&self, at: &At) -> String {
        format!("{}-L{}", self.thread_id, at.line)
    }

    fn new_message(&mut self, at: &At, role: Role, content: Vec<ContentBlock>) -> Message {
        let mut m = Message::new(role, content);
        m.id = self.named.take().unwrap_or_else(|| self.id(at));
        m.timestamp = self
            .carried
            .last_time
            .clone()
            .unwrap_or_else(atsf::now_timestamp);
        m
    }

    fn emit(&mut self, out: &mut Sink, at: &At, m: Message) {
        // An agent's reply: Codex writes the response's usage after its
        // items (a `token_count`; from 0.16x a `token_usage_record` too),
        // after a `turn_aborted` or an error notice too. A prompt starts
        // the next response: no usage is coming for the last one.
        if m.role == Role::Agent && m.completes().is_none() {
            self.stream.awaiting_usage(true);
        } else if m.role == Role::User {
            self.stream.awaiting_usage(false);
        }
        self.usage_before.push((
            self.carried.counted.unwrap_or_default(),
            self.carried.counted_before,
        ));
        self.stream.emit(out, m, at.line, at.offset);
    }

    fn wait(&mut self, out: &mut Sink, label: &str, at: &At, raw: Map<String, Value>) {
        out.summary().count(label).joined += 1;
        self.stream.wait(at.offset, raw);
    }

    fn message(&mut self, out: &mut Sink, at: &At, p: &Map<String, Value>) {
        out.summary().count("message").mapped += 1;
        let blocks = content_blocks(p.get("content"));
        let role = match p.get("role").and_then(Value::as_str) {
            Some("assistant") => Role::Agent,
            Some("user") => Role::User,
            _ => Role::System,
        };
        let mut kept = p.clone();
        kept.remove("content");
        if role != Role::User {
            let mut m = self.new_message(at, role.clone(), blocks);
            if role == Role::Agent {
                m.model = self.carried.model.clone();
            }
            m.extra.insert("codex".into(), Value::Object(kept));
            self.emit(out, at, m);
            return;
        }
        // The user's own words apart from what Codex injected.
        let kinds = p
            .get("internal_chat_message_metadata_passthrough")
            .and_then(|m| m.get("content_item_kinds"))
            .and_then(Value::as_array);
        let (mut own, mut injected) = (Vec::new(), Vec::new());
        for (i, block) in blocks.into_iter().enumerate() {
            let is_injected = match kinds {
                Some(kinds) => kinds
                    .get(i)
                    .and_then(Value::as_str)
                    .is_some_and(|k| !k.starts_with("user.")),
                None => injected_text(&block),
            };
            if is_injected {
                injected.push(block);
            } else {
                own.push(block);
            }
        }
        if !injected.is_empty() {
            let mut m = self.new_message(at, Role::System, injected);
            if !own.is_empty() {
                m.id = format!("{}-context", m.id);
            }
            m.extra.insert("codex".into(), Value::Object(kept.clone()));
            self.emit(out, at, m);
        }
        if !own.is_empty() {
            let mut m = self.new_message(at, Role::User, own);
            if self.carried.first_prompt.is_none() {
                self.carried.first_prompt = super::super::first_prompt(std::slice::from_ref(&m));
            }
            m.extra.insert("codex".into(), Value::Object(kept));
            self.emit(out, at, m);
        }
    }

    fn reasoning(&mut self, out: &mut Sink, at: &At, p: &Map<String, Value>) {
        out.summary().count("reasoning").mapped += 1;
        let texts = |key: &str| -> Vec<String> {
            p.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|x| x.get("text").and_then(Value::as_str).map(str::to_string))
                .collect()
        };
        let mut extra = Extra::new();
        if let Some(enc) = p.get("encrypted_content") {
            extra.insert("encryptedContent".into(), enc.clone());
        }
        let mut content = vec![ContentBlock::Thinking {
            text: texts("summary").join("\n\n"),
            extra,
        }];
        let raw_text = texts("content");
        if !raw_text.is_empty() {
            content.push(ContentBlock::Thinking {
                text: raw_text.join("\n\n"),
                extra: Extra::from_iter([("codexContent".to_string(), Value::Bool(true))]),
            });
        }
        let mut m = self.new_message(at, Role::Agent, content);
        m.model = self.carried.model.clone();
        let mut kept = p.clone();
        for k in ["summary", "content", "encrypted_content"] {
            kept.remove(k);
        }
        m.extra.insert("codex".into(), Value::Object(kept));
        self.emit(out, at, m);
    }

    fn call(
        &mut self,
        out: &mut Sink,
        at: &At,
        ptype: &str,
        p: &Map<String, Value>,
        outputs: &mut dyn Outputs,
    ) -> Result<()> {
        out.summary().count(ptype).mapped += 1;
        let call_id = s(p, "call_id").or_else(|| s(p, "id")).unwrap_or_default();
        let input = match ptype {
            "function_call" => s(p, "arguments"),
            "custom_tool_call" => s(p, "input"),
            _ => p.get("action").map(Value::to_string),
        };
        let name = s(p, "name").unwrap_or_else(|| {
            match ptype {
                "web_search_call" => "web_search",
                _ => "shell",
            }
            .into()
        });
        let mut kept = p.clone();
        for k in ["call_id", "name", "arguments", "input"] {
            kept.remove(k);
        }
        let mut call = ToolCall {
            tool_call_id: call_id.clone(),
            name,
            title: None,
            status: ToolStatus::Pending,
            input,
            output: None,
            duration: None,
            diff: None,
            extra: Extra::from_iter([("codex".to_string(), Value::Object(kept))]),
        };
        if ptype == "web_search_call" {
            // Its result is not written to the rollout: done when it says so.
            call.status = match p.get("status").and_then(Value::as_str) {
                Some("completed") | None => ToolStatus::Completed,
                Some("failed") => ToolStatus::Failed,
                Some(_) => ToolStatus::Running,
            };
        } else if let Some((record, offset)) = outputs.output(&call_id)? {
            join_output(&mut call, &record);
            self.log.joined(call_id, offset, self.stream.next_index());
        }
        let mut m = self.new_message(at, Role::Agent, Vec::new());
        m.tool_calls = Some(vec![call]);
        m.model = self.carried.model.clone();
        self.emit(out, at, m);
        Ok(())
    }

    /// An output: joined to its call when the call is read in this import;
    /// the output of a call stored pending earlier comes as a completion;
    /// one answering no call travels whole.
    fn output_record(
        &mut self,
        out: &mut Sink,
        at: &At,
        ptype: &str,
        raw: Map<String, Value>,
        p: &Map<String, Value>,
        outputs: &dyn Outputs,
    ) {
        let id = s(p, "call_id").unwrap_or_default();
        if outputs.has_call(&id) || self.carried.calls.already_joined(&id) {
            out.summary().count(ptype).joined += 1;
            return;
        }
        let Some((message, name)) = self.log.completed(&mut self.carried.calls, &id, at.offset)
        else {
            let label = ptype.to_string();
            self.wait(out, &label, at, raw);
            return;
        };
        out.summary().count(ptype).joined += 1;
        let mut call = ToolCall {
            tool_call_id: id,
            name,
            title: None,
            status: ToolStatus::Pending,
            input: None,
            output: None,
            duration: None,
            diff: None,
            extra: Extra::new(),
        };
        join_output(&mut call, &raw);
        let time = self
            .carried
            .last_time
            .clone()
            .unwrap_or_else(atsf::now_timestamp);
        let m = atsf::completion(&message, vec![call], time);
        self.emit(out, at, m);
    }

    fn event(
        &mut self,
        out: &mut Sink,
        at: &At,
        ptype: &str,
        raw: Map<String, Value>,
        p: &Map<String, Value>,
    ) {
        let label = format!("event_msg {ptype}");
        if ptype == "task_complete" {
            // The turn is over: no usage is coming for its last reply. (An
            // interrupted turn's may still come after its `turn_aborted`.)
            self.stream.awaiting_usage(false);
        }
        match ptype {
            "user_message"
            | "agent_message"
            | "agent_reasoning"
            | "agent_reasoning_raw_content"
            | "item_completed"
                if self.carried.responses =>
            {
                out.summary().skip(&label, "repeats a response item".into());
            }
            "user_message" | "agent_message" => {
                let role = if ptype == "user_message" {
                    Role::User
                } else {
                    Role::Agent
                };
                let text = s(p, "message").unwrap_or_default();
                self.event_message(out, at, &label, role, vec![ContentBlock::text(text)], raw);
            }
            "item_completed" => self.item_completed(out, at, &label, raw, p),
            "token_count" => {
                let info = p.get("info").filter(|i| !i.is_null());
                match info {
                    Some(info) => self.tokens(
                        out,
                        info.get("last_token_usage"),
                        info.get("total_token_usage"),
                        &label,
                    ),
                    None => {
                        // The response's figures will not come.
                        self.stream.awaiting_usage(false);
                        out.summary()
                            .skip(&label, "rate limits only, no token figures".into())
                    }
                }
            }
            "error" | "stream_error" | "turn_aborted" => {
                let text = match ptype {
                    "turn_aborted" => format!(
                        "Turn aborted{}",
                        s(p, "reason").map(|r| format!(": {r}")).unwrap_or_default()
                    ),
                    _ => format!("Error: {}", s(p, "message").unwrap_or_default()),
                };
                self.event_message(
                    out,
                    at,
                    &label,
                    Role::System,
                    vec![ContentBlock::text(text)],
                    raw,
                );
            }
            _ => self.wait(out, &label, at, raw),
        }
    }

    /// An item of a rollout that keeps only events (paginated history).
    fn item_completed(
        &mut self,
        out: &mut Sink,
        at: &At,
        label: &str,
        raw: Map<String, Value>,
        p: &Map<String, Value>,
    ) {
        let item = p.get("item").and_then(Value::as_object);
        let kind = item.and_then(|i| s(i, "type")).unwrap_or_default();
        let role = match kind.as_str() {
            "UserMessage" | "userMessage" => Role::User,
            "AgentMessage" | "agentMessage" | "Reasoning" | "reasoning" => Role::Agent,
            _ => {
                self.wait(out, label, at, raw);
                return;
            }
        };
        let content = item.and_then(|i| i.get("content"));
        let mut blocks = match content {
            Some(Value::String(t)) => vec![ContentBlock::text(t.clone())],
            other => content_blocks(other),
        };
        if blocks.is_empty()
            && let Some(t) = item.and_then(|i| s(i, "text"))
        {
            blocks.push(ContentBlock::text(t));
        }
        if kind.eq_ignore_ascii_case("reasoning") {
            blocks = blocks
                .into_iter()
                .map(|b| match b {
                    ContentBlock::Text { text, extra } => ContentBlock::Thinking { text, extra },
                    other => other,
                })
                .collect();
        }
        self.event_message(out, at, label, role, blocks, raw);
    }

    fn event_message(
        &mut self,
        out: &mut Sink,
        at: &At,
        label: &str,
        role: Role,
        content: Vec<ContentBlock>,
        raw: Map<String, Value>,
    ) {
        out.summary().count(label).mapped += 1;
        let mut m = self.new_message(at, role.clone(), content);
        if role == Role::User && self.carried.first_prompt.is_none() {
            self.carried.first_prompt = super::super::first_prompt(std::slice::from_ref(&m));
        }
        if role == Role::Agent {
            m.model = self.carried.model.clone();
        }
        m.extra.insert("codexRecord".into(), Value::Object(raw));
        self.emit(out, at, m);
    }

    /// Token figures: the usage they add goes on the agent reply they
    /// follow while it is held back (with only notices such as
    /// `turn_aborted` after it), and the running totals are the thread's.
    /// Codex 0.169 gives each response's usage twice (a
    /// `token_usage_record`, then an `event_msg` `token_count`), both with
    /// the session's running totals: what those grew by since the last
    /// counted is the usage to add, so nothing is counted twice. Usage read
    /// when its reply was written already is given to no other reply.
    /// Running totals that are all zero count nothing: the thread's totals
    /// never go back.
    fn tokens(&mut self, out: &mut Sink, last: Option<&Value>, total: Option<&Value>, label: &str) {
        out.summary().count(label).mapped += 1;
        self.stream.awaiting_usage(false);
        let total = total.filter(|t| t.is_object() && !all_zero(t));
        let added = match (total, self.carried.counted.as_mut()) {
            (Some(total), Some(counted)) => {
                let now = usage_counts(total, CODEX_USAGE_KEYS);
                // Lower totals: they started again (a new session's).
                if now
                    .iter()
                    .zip(counted.iter())
                    .any(|(n, c)| n.is_some_and(|n| n < *c))
                {
                    let before = self.carried.counted_before.get_or_insert([0; 5]);
                    for (b, c) in before.iter_mut().zip(counted.iter()) {
                        *b = b.saturating_add(*c);
                    }
                    *counted = [0; 5];
                }
                crate::import::usage_added(counted, now)
            }
            // No running totals (older rollouts): the response's own usage,
            // once per message.
            _ => last
                .map(|l| Tokens::from_counts(usage_counts(l, CODEX_USAGE_KEYS)))
                .filter(|t| !t.is_empty()),
        };
        if let Some(total) = total {
            self.carried.totals = Some(total.clone());
        }
        let Some(m) = self.stream.held_reply_mut() else {
            return;
        };
        if total.is_none() && m.tokens.is_some() {
            return;
        }
        if let Some(added) = added {
            add_usage(&mut m.tokens, added);
        }
    }

    fn compacted(
        &mut self,
        out: &mut Sink,
        at: &At,
        raw: Map<String, Value>,
        p: &Map<String, Value>,
    ) {
        out.summary().count("compacted").mapped += 1;
        let message = s(p, "message");
        let kept = p.get("replacement_history").and_then(Value::as_array);
        let mut content = vec![ContentBlock::text(match &message {
            Some(m) => format!("Conversation compacted: {m}"),
            None => "Conversation compacted. What it kept:".to_string(),
        })];
        let mut encrypted = 0;
        for item in kept.into_iter().flatten() {
            match item.get("type").and_then(Value::as_str) {
                Some("message") | None if item.get("content").is_some() => {
                    let role = item.get("role").and_then(Value::as_str).unwrap_or("item");
                    let blocks = match item.get("content") {
                        Some(Value::String(t)) => vec![ContentBlock::text(t.clone())],
                        other => content_blocks(other),
                    };
                    for b in blocks {
                        content.push(match b {
                            ContentBlock::Text { text, extra } => ContentBlock::Text {
                                text: format!("[{role}] {text}"),
                                extra,
                            },
                            other => other,
                        });
                    }
                }
                Some("compaction") => encrypted += 1,
                _ => {}
            }
        }
        if encrypted > 0 {
            content.push(ContentBlock::text(format!(
                "[{encrypted} encrypted summary item(s), kept under codexRecord]"
            )));
        }
        let mut m = self.new_message(at, Role::System, content);
        m.extra.insert("codexRecord".into(), Value::Object(raw));
        self.emit(out, at, m);
    }

    /// Writes what is left: where the next import starts (`unconsumed`),
    /// the records waiting, and what it needs to go on.
    pub fn end(self, out: &mut Sink) -> (Option<u64>, Vec<Value>, Carried) {
        let mut ended = self.stream.end(out, "deferred");
        let mut carried = self.carried;
        // The messages left for the next import are read again there, with
        // the usage they carried.
        let left = usize::try_from(ended.written_below).ok();
        if let Some((counted, before)) = left.and_then(|i| self.usage_before.get(i)) {
            carried.counted = Some(*counted);
            carried.counted_before = *before;
        }
        self.log.settle(&mut carried.calls, &mut ended);
        (ended.unconsumed, ended.waiting, carried)
    }
}

/// Whether running totals count nothing at all.
fn all_zero(total: &Value) -> bool {
    usage_counts(total, CODEX_USAGE_KEYS)
        .iter()
        .all(|n| n.is_none_or(|n| n == 0))
}

/// Text a user message carries that Codex injected, known by its opening.
fn injected_text(block: &ContentBlock) -> bool {
    let ContentBlock::Text { text, .. } = block else {
        return false;
    };
    let t = text.trim_start();
    const TAGS: &[&str] = &[
        "<environment_context>",
        "<user_instructions>",
        "<recommended_plugins>",
        "<permissions instructions>",
        "<collaboration_mode>",
        "<multi_agent_mode>",
        "<apps_instructions>",
        "<skills_instructions>",
        "<subagent_notification>",
        "<turn_aborted>",
        "# AGENTS.md instructions",
    ];
    TAGS.iter().any(|tag| t.starts_with(tag))
}

/// Codex message content: text items, images (a `data:` URL to store as an
/// asset, or a URL), anything else kept whole.
pub(super) fn content_blocks(v: Option<&Value>) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    for b in v.and_then(Value::as_array).into_iter().flatten() {
        let Value::Object(map) = b else {
            continue;
        };
        let mut rest = map.clone();
        rest.remove("type");
        match map.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => {
                let text = match rest.remove("text") {
                    Some(Value::String(t)) => t,
                    _ => String::new(),
                };
                out.push(ContentBlock::Text { text, extra: rest });
            }
            Some("input_image") => {
                let data = match rest.remove("image_url") {
                    Some(Value::String(u)) => Some(u),
                    _ => None,
                };
                out.push(ContentBlock::Image(atsf::ImageBlock {
                    asset_ref: None,
                    mime_type: None,
                    data,
                    extra: rest,
                }));
            }
            _ => out.push(ContentBlock::Unknown(map.clone())),
        }
    }
    out
}

/// Joins the output in record `raw` to `call`.
fn join_output(call: &mut ToolCall, raw: &Map<String, Value>) {
    let p = raw.get("payload").and_then(Value::as_object);
    let o = output::parse(p.and_then(|p| p.get("output")));
    call.status = if o.failed {
        ToolStatus::Failed
    } else {
        ToolStatus::Completed
    };
    call.output = Some(o.text.clone());
    if let Some(code) = o.exit_code {
        call.extra.insert("exitCode".into(), Value::from(code));
    }
    if !o.rich.is_empty() {
        let mut blocks = vec![serde_json::json!({"type": "text", "text": o.text})];
        blocks.extend(o.rich);
        call.extra
            .insert("outputContent".into(), Value::Array(blocks));
    }
    if let Some(p) = p {
        let mut kept = p.clone();
        kept.remove("output");
        kept.remove("call_id");
        kept.remove("type");
        if !kept.is_empty() {
            call.extra.insert("codexOutput".into(), Value::Object(kept));
        }
    }
}
