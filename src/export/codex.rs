//! A thread as a Codex rollout: the JSONL Codex reads back with `codex
//! resume`.
//!
//! `session_meta` first, then per message the response items Codex writes
//! (`message`, `reasoning`, `function_call` with its `function_call_output`)
//! and the events its interface replays (`user_message`, `agent_message`,
//! `token_count`). A message imported from Codex gets its items back from
//! what the import kept (`codex`, the records carried whole); any other is
//! written the way Codex writes one. `turn_context` records carry the model
//! of the replies after them.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::native::{self, Assets, GROVE_KEY, NativeExport};
use crate::atsf::{ContentBlock, Message, Role, ToolCall, ToolStatus};
use crate::error::{Error, Result};
use crate::store::Thread;

/// What a rollout says of the Codex that is to read it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexSetup {
    /// The model provider the user configured: a session whose provider
    /// is not configured is refused ("model provider … is no longer
    /// configured").
    pub model_provider: String,
    /// The installed Codex's version, when it could say.
    pub cli_version: Option<String>,
}

impl CodexSetup {
    /// The user's setup: `model_provider` of `$CODEX_HOME/config.toml` (its
    /// profile's, when it names one; `openai` when it names none), and the
    /// version of the `codex` on `PATH`.
    pub fn detect() -> CodexSetup {
        let program = which::which("codex").ok();
        CodexSetup {
            model_provider: configured_provider().unwrap_or_else(|| "openai".into()),
            cli_version: program.and_then(|p| crate::agent::program::version(&p)),
        }
    }
}

/// `model_provider` in Codex's config (the active profile's first).
fn configured_provider() -> Option<String> {
    let path = crate::agent::homes::codex_home()?.join("config.toml");
    let text = crate::fsutil::read_opt(&path).ok()??;
    let config: toml::Table = std::str::from_utf8(&text).ok()?.parse().ok()?;
    let provider = |t: &toml::Table| t.get("model_provider")?.as_str().map(str::to_string);
    let profile = config
        .get("profile")
        .and_then(|p| p.as_str())
        .and_then(|p| config.get("profiles")?.get(p)?.as_table());
    profile.and_then(provider).or_else(|| provider(&config))
}

/// Writes `thread` as Codex session `session` run in `cwd`, for the Codex
/// of `setup`.
pub fn write(
    thread: &Thread,
    session: &str,
    cwd: &Path,
    setup: &CodexSetup,
    out: &mut dyn Write,
) -> Result<NativeExport> {
    let (mut report, messages, meta) = native::begin(thread, session)?;
    let kept_meta = meta
        .metadata
        .as_ref()
        .and_then(|m| m.get("codex"))
        .and_then(Value::as_object);
    // The installed Codex's, else that of the rollout re-exported.
    let version = setup
        .cli_version
        .clone()
        .or_else(|| {
            kept_meta
                .and_then(|m| m.get("cli_version"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "0.0.0".into());
    let mut w = Writer {
        out,
        cwd: cwd.to_string_lossy().into_owned(),
        assets: Assets::of(thread),
        model: None,
        totals: [0; 5],
        time: meta.created_at.clone(),
        path: thread.dir().to_path_buf(),
        turns: Turns::default(),
    };
    w.record(
        "session_meta",
        json!({
            "id": session,
            "timestamp": meta.created_at,
            "cwd": w.cwd,
            "originator": "codex_cli_rs",
            "cli_version": version,
            "source": "cli",
            "model_provider": setup.model_provider,
        }),
        None,
    )?;
    for m in &messages {
        if w.message(m)? {
            report.messages += 1;
        }
    }
    w.end_turn()?;
    report.missing_assets(&w.assets);
    Ok(report)
}

/// Where the rollout is in the conversation's turns: each turn is opened
/// by a `task_started` event and closed by a `task_complete` (without it,
/// Codex takes the turn for interrupted). A rollout's own events are kept
/// where they were; the ones it lacks (another agent's thread, the last
/// turn's end that came after the last message) are written.
#[derive(Default)]
struct Turns {
    /// Turns opened so far, by a kept event or a written one.
    started: usize,
    /// Kept `task_started` events met so far.
    kept_started: usize,
    open: bool,
    /// An agent message was written since the turn opened.
    answered: bool,
    /// The text of the last agent message of the turn.
    last_text: Option<String>,
    turn_id: String,
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    cwd: String,
    assets: Assets,
    /// The model the last `turn_context` named.
    model: Option<String>,
    /// Token totals so far, in the order of [`CODEX_KEYS`].
    totals: [u64; 5],
    time: String,
    path: std::path::PathBuf,
    turns: Turns,
}

impl Writer<'_> {
    /// Opens a turn, with a `task_started` event of grove's.
    fn start_turn(&mut self) -> Result<()> {
        self.end_turn()?;
        let id = uuid::Uuid::now_v7().to_string();
        let started_at = self
            .time
            .parse::<jiff::Timestamp>()
            .map_or(0, |t| t.as_second());
        self.record(
            "event_msg",
            json!({"type": "task_started", "turn_id": id, "started_at": started_at,
                   "collaboration_mode_kind": "default"}),
            None,
        )?;
        self.turns.turn_id = id;
        self.opened();
        Ok(())
    }

    fn opened(&mut self) {
        self.turns.started += 1;
        self.turns.open = true;
        self.turns.answered = false;
        self.turns.last_text = None;
    }

    /// Closes the open turn, with a `task_complete` event of grove's.
    fn end_turn(&mut self) -> Result<()> {
        if !self.turns.open {
            return Ok(());
        }
        self.turns.open = false;
        let completed_at = self
            .time
            .parse::<jiff::Timestamp>()
            .map_or(0, |t| t.as_second());
        let payload = json!({"type": "task_complete", "turn_id": self.turns.turn_id,
            "last_agent_message": self.turns.last_text, "completed_at": completed_at});
        self.record("event_msg", payload, None)
    }

    /// A user's prompt: a new turn, unless the turn just opened (its
    /// `task_started` kept before the prompt) has no answer yet.
    fn prompt_turn(&mut self) -> Result<()> {
        if self.turns.open && !self.turns.answered {
            return Ok(());
        }
        self.start_turn()
    }

    /// Whether a kept record is written: a turn's event that repeats what
    /// was written already is not.
    fn keep_turn_event(&mut self, record: &Value) -> Result<bool> {
        if record.get("type").and_then(Value::as_str) != Some("event_msg") {
            return Ok(true);
        }
        match record.pointer("/payload/type").and_then(Value::as_str) {
            Some("task_started") => {
                self.turns.kept_started += 1;
                if self.turns.kept_started <= self.turns.started {
                    // Its turn was opened already, before its prompt.
                    return Ok(false);
                }
                self.end_turn()?;
                self.turns.turn_id = record
                    .pointer("/payload/turn_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                self.opened();
                Ok(true)
            }
            Some("task_complete") => {
                let keep = self.turns.open;
                self.turns.open = false;
                Ok(keep)
            }
            _ => Ok(true),
        }
    }

    fn emit(&mut self, record: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(record).map_err(|e| Error::Other(e.to_string()))?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .map_err(|e| Error::io("writing the rollout of", &self.path, e))
    }

    /// A record of `kind` with `payload`, naming message `id` when given.
    fn record(&mut self, kind: &str, payload: Value, id: Option<&str>) -> Result<()> {
        let mut rec = json!({"timestamp": self.time, "type": kind, "payload": payload});
        if let Some(id) = id {
            rec[GROVE_KEY] = json!({"id": id});
        }
        self.emit(&rec)
    }

    /// Records carried whole: written back as they were.
    fn carried(&mut self, records: Option<&Value>) -> Result<()> {
        for r in records.and_then(Value::as_array).into_iter().flatten() {
            if !self.keep_turn_event(r)? {
                continue;
            }
            let r = self.assets.inline(r);
            if r.get("type").and_then(Value::as_str) == Some("turn_context")
                && let Some(model) = r.pointer("/payload/model").and_then(Value::as_str)
            {
                self.model = Some(model.to_string());
            }
            self.emit(&r)?;
        }
        Ok(())
    }

    fn message(&mut self, m: &Message) -> Result<bool> {
        self.time = m.timestamp.clone();
        self.carried(m.extra.get("codexRecords"))?;
        let written = if let Some(raw) = m.extra.get("codexRecord").and_then(Value::as_object) {
            // An event or compaction kept whole: it is the message.
            let mut raw = match self.assets.inline(&Value::Object(raw.clone())) {
                Value::Object(o) => o,
                _ => Map::new(),
            };
            raw.insert(GROVE_KEY.into(), json!({"id": m.id}));
            self.emit(&Value::Object(raw))?;
            true
        } else {
            match m.role {
                Role::User => {
                    self.prompt_turn()?;
                    self.user(m)?
                }
                Role::Agent => {
                    if !self.turns.open {
                        self.start_turn()?;
                    }
                    let text = m.text();
                    if !text.is_empty() {
                        self.turns.last_text = Some(text);
                    }
                    self.turns.answered = true;
                    self.agent(m)?
                }
                _ => self.system(m)?,
            }
        };
        self.carried(m.extra.get("codexRecordsAfter"))?;
        Ok(written)
    }

    /// What the import kept of the item, when it was this kind of item.
    fn kept(m: &Message, kind: &str) -> Map<String, Value> {
        m.extra
            .get("codex")
            .and_then(Value::as_object)
            .filter(|k| {
                k.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == kind)
            })
            .cloned()
            .unwrap_or_default()
    }

    fn content(&mut self, m: &Message, text_type: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for b in &m.content {
            match b {
                ContentBlock::Text { text, extra } => {
                    let mut o = extra.clone();
                    o.insert("type".into(), Value::from(text_type));
                    o.insert("text".into(), Value::from(text.clone()));
                    out.push(Value::Object(o));
                }
                ContentBlock::Image(img) => {
                    if let Some((mime, data)) = self.assets.image(img) {
                        let mut o = img.extra.clone();
                        o.insert("type".into(), Value::from("input_image"));
                        o.insert(
                            "image_url".into(),
                            Value::from(format!("data:{mime};base64,{data}")),
                        );
                        out.push(Value::Object(o));
                    }
                }
                ContentBlock::Unknown(map) => {
                    out.push(self.assets.inline(&Value::Object(map.clone())))
                }
                ContentBlock::Thinking { .. } => {}
            }
        }
        out
    }

    fn user(&mut self, m: &Message) -> Result<bool> {
        let content = self.content(m, "input_text");
        if content.is_empty() {
            return Ok(false);
        }
        let mut item = Self::kept(m, "message");
        item.insert("type".into(), Value::from("message"));
        item.insert("role".into(), Value::from("user"));
        // Every item is the user's own: a later import must not take any
        // of it for injected context.
        let kinds: Vec<Value> = content
            .iter()
            .map(|c| {
                Value::from(if c.get("type") == Some(&Value::from("input_image")) {
                    "user.image"
                } else {
                    "user.text"
                })
            })
            .collect();
        let mut pass = item
            .remove("internal_chat_message_metadata_passthrough")
            .and_then(|p| p.as_object().cloned())
            .unwrap_or_default();
        pass.insert("content_item_kinds".into(), Value::Array(kinds));
        item.insert(
            "internal_chat_message_metadata_passthrough".into(),
            Value::Object(pass),
        );
        item.insert("content".into(), Value::Array(content));
        self.record("response_item", Value::Object(item), Some(&m.id))?;
        self.record(
            "event_msg",
            json!({"type": "user_message", "message": m.text(), "images": [], "kind": "plain"}),
            None,
        )?;
        Ok(true)
    }

    fn system(&mut self, m: &Message) -> Result<bool> {
        let content = self.content(m, "input_text");
        if content.is_empty() {
            return Ok(false);
        }
        let mut item = Self::kept(m, "message");
        item.remove("internal_chat_message_metadata_passthrough");
        item.insert("type".into(), Value::from("message"));
        // Context for the agent, not the user's words: in the role Codex
        // gave it (`<environment_context>` is a `user` item), else as the
        // developer's.
        if !matches!(
            item.get("role").and_then(Value::as_str),
            Some("user" | "developer" | "system")
        ) {
            item.insert("role".into(), Value::from("developer"));
        }
        item.insert("content".into(), Value::Array(content));
        self.record("response_item", Value::Object(item), Some(&m.id))?;
        Ok(true)
    }

    fn agent(&mut self, m: &Message) -> Result<bool> {
        // One record per item; the first part keeps the message's id, the
        // others name it with a `~part~` suffix.
        let mut part = 0;
        let id = |part: &mut usize| {
            let id = match *part {
                0 => m.id.clone(),
                n => format!("{}~part~{n}", m.id),
            };
            *part += 1;
            id
        };
        if let Some(model) = &m.model
            && self.model.as_ref() != Some(model)
        {
            self.model = Some(model.clone());
            self.record(
                "turn_context",
                json!({"cwd": self.cwd, "model": model}),
                None,
            )?;
        }
        let thinking: Vec<(&String, bool, &crate::atsf::Extra)> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Thinking { text, extra } => Some((
                    text,
                    extra.get("codexContent") == Some(&Value::Bool(true)),
                    extra,
                )),
                _ => None,
            })
            .collect();
        if !thinking.is_empty() {
            let summary: Vec<&str> = thinking
                .iter()
                .filter(|t| !t.1)
                .map(|t| t.0.as_str())
                .collect();
            let raw: Vec<Value> = thinking
                .iter()
                .filter(|t| t.1)
                .map(|t| json!({"type": "reasoning_text", "text": t.0}))
                .collect();
            let encrypted = thinking
                .iter()
                .find_map(|t| t.2.get("encryptedContent").cloned())
                .unwrap_or(Value::Null);
            let mut item = Self::kept(m, "reasoning");
            item.insert("type".into(), Value::from("reasoning"));
            item.insert(
                "summary".into(),
                Value::Array(
                    summary
                        .iter()
                        .filter(|s| !s.is_empty())
                        .map(|s| json!({"type": "summary_text", "text": s}))
                        .collect(),
                ),
            );
            item.insert(
                "content".into(),
                if raw.is_empty() {
                    Value::Null
                } else {
                    Value::Array(raw)
                },
            );
            item.insert("encrypted_content".into(), encrypted);
            let i = id(&mut part);
            self.record("response_item", Value::Object(item), Some(&i))?;
        }
        let content = self.content(m, "output_text");
        if !content.is_empty() {
            let mut item = Self::kept(m, "message");
            item.insert("type".into(), Value::from("message"));
            item.insert("role".into(), Value::from("assistant"));
            item.insert("content".into(), Value::Array(content));
            let i = id(&mut part);
            self.record("response_item", Value::Object(item), Some(&i))?;
            let mut event = json!({"type": "agent_message", "message": m.text()});
            if let Some(phase) = m.extra.get("codex").and_then(|c| c.get("phase")) {
                event["phase"] = phase.clone();
            }
            self.record("event_msg", event, None)?;
        }
        for call in m.tool_calls.iter().flatten() {
            let i = id(&mut part);
            self.call(call, &i)?;
        }
        if let Some(t) = &m.tokens {
            self.tokens(t)?;
        }
        Ok(part > 0)
    }

    fn call(&mut self, call: &ToolCall, id: &str) -> Result<()> {
        let mut item = call
            .extra
            .get("codex")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function_call")
            .to_string();
        item.insert("type".into(), Value::from(kind.clone()));
        item.insert("name".into(), Value::from(call.name.clone()));
        item.insert("call_id".into(), Value::from(call.tool_call_id.clone()));
        let input = call.input.clone().unwrap_or_default();
        match kind.as_str() {
            "custom_tool_call" => {
                item.insert("input".into(), Value::from(input));
            }
            "local_shell_call" | "web_search_call" => {
                let action = serde_json::from_str(&input).unwrap_or(Value::from(input));
                item.insert("action".into(), action);
            }
            _ => {
                // Arguments are a JSON object's text; another agent's input
                // that is not one is wrapped.
                let args = match serde_json::from_str::<Value>(&input) {
                    Ok(Value::Object(_)) => input,
                    _ => native::input_object(call).to_string(),
                };
                item.insert("arguments".into(), Value::from(args));
            }
        }
        self.record("response_item", Value::Object(item), Some(id))?;
        if kind == "web_search_call"
            || !matches!(call.status, ToolStatus::Completed | ToolStatus::Failed)
        {
            return Ok(());
        }
        let mut output = call
            .extra
            .get("codexOutput")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        output.insert(
            "type".into(),
            Value::from(if kind == "custom_tool_call" {
                "custom_tool_call_output"
            } else {
                "function_call_output"
            }),
        );
        output.insert("call_id".into(), Value::from(call.tool_call_id.clone()));
        output.insert("output".into(), self.output(call));
        self.record("response_item", Value::Object(output), None)
    }

    /// A call's output as Codex writes one, so that reading it gives back
    /// the same text, status and images.
    fn output(&mut self, call: &ToolCall) -> Value {
        let text = call.output.clone().unwrap_or_default();
        let failed = call.status == ToolStatus::Failed;
        if let Some(blocks) = call.extra.get("outputContent").and_then(Value::as_array) {
            let mut items = Vec::new();
            for b in blocks {
                match serde_json::from_value::<ContentBlock>(b.clone()) {
                    Ok(ContentBlock::Text { text, .. }) => {
                        items.push(json!({"type": "input_text", "text": text}))
                    }
                    Ok(ContentBlock::Image(img)) => {
                        if let Some((mime, data)) = self.assets.image(&img) {
                            items.push(json!({"type": "input_image", "image_url": format!("data:{mime};base64,{data}")}));
                        }
                    }
                    _ => items.push(self.assets.inline(b)),
                }
            }
            // As for text below: a Codex call's failure keeps its object.
            return if failed && call.extra.contains_key("codex") {
                json!({"content": items, "success": false})
            } else {
                Value::Array(items)
            };
        }
        if let Some(code) = call.extra.get("exitCode").and_then(Value::as_i64) {
            // Codex's own text says its exit code: as it was. Else the older
            // JSON string holding it.
            if crate::import::codex::exit_code_in(&text) == Some(code) {
                return Value::from(text);
            }
            return Value::from(
                json!({"output": text, "metadata": {"exit_code": code}}).to_string(),
            );
        }
        if failed {
            // A Codex call failed without an exit code: its output was the
            // object saying so, written back as it was. Another agent's
            // error is its text: Codex 0.169 reads an output as text or
            // content items (an object it does not know reads as "aborted").
            return if call.extra.contains_key("codex") {
                json!({"content": text, "success": false})
            } else {
                Value::from(text)
            };
        }
        // Plain text, unless reading it back would take it for more.
        let plain_ok = serde_json::from_str::<Value>(&text)
            .map(|v| !(v.is_object() && v.get("output").is_some()))
            .unwrap_or(true)
            && !text
                .lines()
                .any(|l| l.starts_with("Process exited with code") || l.starts_with("Exit code:"));
        if plain_ok {
            Value::from(text)
        } else {
            // As one content item (Codex reads no object here).
            json!([{"type": "input_text", "text": text}])
        }
    }

    /// A `token_count` event after a reply: its usage and the running
    /// totals, in Codex's keys.
    fn tokens(&mut self, t: &crate::atsf::Tokens) -> Result<()> {
        let counts = t.counts();
        let mut last = Map::new();
        for (i, key) in CODEX_KEYS.iter().enumerate() {
            let n = counts[i].unwrap_or(0);
            self.totals[i] += n;
            last.insert((*key).into(), Value::from(n));
        }
        last.insert(
            "total_tokens".into(),
            Value::from(counts[0].unwrap_or(0) + counts[1].unwrap_or(0)),
        );
        let mut total: Map<String, Value> = CODEX_KEYS
            .iter()
            .zip(self.totals)
            .map(|(k, n)| ((*k).to_string(), Value::from(n)))
            .collect();
        total.insert(
            "total_tokens".into(),
            Value::from(self.totals[0] + self.totals[1]),
        );
        self.record(
            "event_msg",
            json!({"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}}),
            None,
        )
    }
}

/// Codex's usage keys, in the order of [`crate::atsf::Tokens::COUNTS`].
const CODEX_KEYS: [&str; 5] = [
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "reasoning_output_tokens",
];
