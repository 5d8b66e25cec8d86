//! A thread as a Claude Code session: the JSONL Claude Code reads back with
//! `claude --resume`.
//!
//! One record per message, chained by `parentUuid` in the thread's order
//! (the thread is the conversation's main line), each tool call's result in
//! a `tool_result` user record after it. A message imported from Claude
//! Code gets its own record back (what the import kept under `claude`,
//! with its content restored); any other is written the way Claude Code
//! writes one. Records the import carried whole (`claudeRecords`) are
//! written back where they were. Thinking goes with its signature; thinking
//! without one (another agent's) is left out and said so, as Claude's API
//! refuses it.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::native::{self, Assets, GROVE_KEY, NativeExport, uuid_for};
use crate::atsf::{ContentBlock, Message, Role, ToolCall, ToolStatus};
use crate::error::{Error, Result};
use crate::store::Thread;

/// Writes `thread` as Claude Code session `session` run in `cwd`.
pub fn write(
    thread: &Thread,
    session: &str,
    cwd: &Path,
    out: &mut dyn Write,
) -> Result<NativeExport> {
    let (mut report, messages, meta) = native::begin(thread, session)?;
    let mut w = Writer {
        out,
        session: session.to_string(),
        cwd: cwd.to_string_lossy().into_owned(),
        branch: meta.context.git_branch.clone().unwrap_or_default(),
        prev: None,
        assets: Assets::of(thread),
        used: HashSet::new(),
        unsigned: 0,
        path: thread.dir().to_path_buf(),
    };
    for m in &messages {
        if w.message(m)? {
            report.messages += 1;
        }
    }
    if let Some(leaf) = w.prev.clone() {
        w.emit(json!({"type": "summary", "summary": meta.title, "leafUuid": leaf}))?;
    }
    if w.unsigned > 0 {
        report.skipped.push(format!(
            "{} thinking block(s) without a signature left out (Claude's API accepts only its own, signed)",
            w.unsigned
        ));
    }
    report.missing_assets(&w.assets);
    Ok(report)
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    session: String,
    cwd: String,
    branch: String,
    /// The uuid of the last record in the chain.
    prev: Option<String>,
    assets: Assets,
    /// Uuids written: a record's uuid is never written twice.
    used: HashSet<String>,
    unsigned: u64,
    path: std::path::PathBuf,
}

impl Writer<'_> {
    fn emit(&mut self, record: Value) -> Result<()> {
        let mut line = serde_json::to_vec(&record).map_err(|e| Error::Other(e.to_string()))?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .map_err(|e| Error::io("writing the session of", &self.path, e))
    }

    /// A record in the chain: its parent is the record before it.
    fn chained(&mut self, mut rec: Map<String, Value>, uuid: String) -> Result<()> {
        rec.insert(
            "parentUuid".into(),
            self.prev.clone().map_or(Value::Null, Value::from),
        );
        rec.insert("uuid".into(), Value::from(uuid.clone()));
        self.used.insert(uuid.clone());
        self.prev = Some(uuid);
        self.emit(Value::Object(rec))
    }

    fn common(&self, rec: &mut Map<String, Value>) {
        rec.insert("isSidechain".into(), Value::Bool(false));
        rec.entry("userType")
            .or_insert_with(|| Value::from("external"));
        rec.insert("cwd".into(), Value::from(self.cwd.clone()));
        rec.insert("sessionId".into(), Value::from(self.session.clone()));
        rec.entry("gitBranch")
            .or_insert_with(|| Value::from(self.branch.clone()));
    }

    /// Records carried whole: written back; those in the chain (with a
    /// uuid) chained again.
    fn carried(&mut self, records: Option<&Value>) -> Result<()> {
        for r in records.and_then(Value::as_array).into_iter().flatten() {
            let r = self.assets.inline(r);
            match r {
                Value::Object(mut map) => {
                    let uuid = map.get("uuid").and_then(Value::as_str).map(str::to_string);
                    match uuid.filter(|u| !self.used.contains(u)) {
                        Some(u) if map.contains_key("parentUuid") => {
                            map.insert("sessionId".into(), Value::from(self.session.clone()));
                            self.chained(map, u)?;
                        }
                        _ => self.emit(Value::Object(map))?,
                    }
                }
                other => self.emit(other)?,
            }
        }
        Ok(())
    }

    /// Writes message `m`; false when it had nothing Claude Code keeps.
    fn message(&mut self, m: &Message) -> Result<bool> {
        self.carried(m.extra.get("claudeRecords"))?;
        let kept = m.extra.get("claude").and_then(Value::as_object).cloned();
        let written = match m.role {
            Role::Agent => self.assistant(m, kept)?,
            Role::User => self.user(m, kept, false)?,
            Role::System
                if kept
                    .as_ref()
                    .is_some_and(|k| k.get("type") == Some(&Value::from("user"))) =>
            {
                self.user(m, kept, true)?
            }
            _ => self.system(m, kept)?,
        };
        self.carried(m.extra.get("claudeRecordsAfter"))?;
        Ok(written)
    }

    fn uuid_of(&self, m: &Message, rec: &mut Map<String, Value>) -> String {
        let mut uuid = uuid_for(&m.id);
        if self.used.contains(&uuid) {
            uuid = uuid_for(&format!("{}~{}", m.id, self.used.len()));
        }
        if uuid != m.id {
            rec.insert(GROVE_KEY.into(), json!({"id": m.id}));
        }
        uuid
    }

    fn user(&mut self, m: &Message, kept: Option<Map<String, Value>>, meta: bool) -> Result<bool> {
        let mut rec = kept.unwrap_or_default();
        let is_attachment = rec.get("type").and_then(Value::as_str) == Some("attachment");
        self.common(&mut rec);
        rec.insert("timestamp".into(), Value::from(m.timestamp.clone()));
        if is_attachment {
            // A prompt queued while the agent worked.
            if let Some(Value::Object(att)) = rec.get_mut("attachment") {
                att.insert("prompt".into(), Value::from(m.text()));
            }
        } else {
            rec.insert("type".into(), Value::from("user"));
            if meta && !rec.contains_key("isMeta") && !rec.contains_key("isCompactSummary") {
                rec.insert("isMeta".into(), Value::Bool(true));
            }
            let content = if native::has_only_text(m) && m.content.len() == 1 {
                Value::from(m.text())
            } else {
                Value::Array(self.blocks(&m.content))
            };
            let mut message = rec
                .remove("message")
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            message.insert("role".into(), Value::from("user"));
            message.insert("content".into(), content);
            rec.insert("message".into(), Value::Object(message));
        }
        let uuid = self.uuid_of(m, &mut rec);
        self.chained(rec, uuid)?;
        Ok(true)
    }

    fn system(&mut self, m: &Message, kept: Option<Map<String, Value>>) -> Result<bool> {
        let mut rec = kept
            .filter(|k| k.get("type").and_then(Value::as_str) == Some("system"))
            .unwrap_or_else(|| {
                let mut r = Map::new();
                r.insert("type".into(), Value::from("system"));
                r.insert("subtype".into(), Value::from("informational"));
                r.insert("level".into(), Value::from("info"));
                r.insert("isMeta".into(), Value::Bool(false));
                r
            });
        self.common(&mut rec);
        // A record whose text the import made from its fields keeps its own.
        if !rec.contains_key("content") {
            rec.insert("content".into(), Value::from(m.text()));
        }
        rec.insert("timestamp".into(), Value::from(m.timestamp.clone()));
        let uuid = self.uuid_of(m, &mut rec);
        self.chained(rec, uuid)?;
        Ok(true)
    }

    fn assistant(&mut self, m: &Message, kept: Option<Map<String, Value>>) -> Result<bool> {
        let mut content = self.blocks(&m.content);
        for call in m.tool_calls.iter().flatten() {
            let mut block = Map::new();
            block.insert("type".into(), Value::from("tool_use"));
            block.insert("id".into(), Value::from(call.tool_call_id.clone()));
            block.insert("name".into(), Value::from(call.name.clone()));
            block.insert("input".into(), native::input_object(call));
            // What the import kept of the block (`caller`, …).
            for (k, v) in &call.extra {
                if matches!(
                    k.as_str(),
                    "claudeResult" | "toolUseResult" | "outputContent"
                ) || k.starts_with("codex")
                    || k == "exitCode"
                {
                    continue;
                }
                block.entry(k.clone()).or_insert_with(|| v.clone());
            }
            content.push(Value::Object(block));
        }
        if content.is_empty() {
            return Ok(false);
        }
        let mut rec = kept.unwrap_or_default();
        self.common(&mut rec);
        rec.insert("type".into(), Value::from("assistant"));
        rec.insert("timestamp".into(), Value::from(m.timestamp.clone()));
        let mut message = rec
            .remove("message")
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        message.entry("model").or_insert_with(|| {
            Value::from(m.model.clone().unwrap_or_else(|| "<synthetic>".into()))
        });
        message
            .entry("id")
            .or_insert_with(|| Value::from(format!("msg_{}", uuid_for(&m.id).replace('-', ""))));
        message.insert("type".into(), Value::from("message"));
        message.insert("role".into(), Value::from("assistant"));
        message.insert("content".into(), Value::Array(content));
        message
            .entry("stop_reason")
            .or_insert_with(|| m.stop_reason.clone().map_or(Value::Null, Value::from));
        message.entry("stop_sequence").or_insert(Value::Null);
        if !message.contains_key("usage") {
            message.insert("usage".into(), usage(m.tokens.as_ref()));
        }
        rec.insert("message".into(), Value::Object(message));
        let uuid = self.uuid_of(m, &mut rec);
        self.chained(rec, uuid.clone())?;
        self.results(m, &uuid)?;
        Ok(true)
    }

    /// The results of `m`'s calls, in `tool_result` records: the calls one
    /// record answered together are answered together again.
    fn results(&mut self, m: &Message, assistant: &str) -> Result<()> {
        let done: Vec<&ToolCall> = m
            .tool_calls
            .iter()
            .flatten()
            .filter(|c| matches!(c.status, ToolStatus::Completed | ToolStatus::Failed))
            .collect();
        let mut groups: Vec<(Option<String>, Vec<&ToolCall>)> = Vec::new();
        for call in done {
            let key = call
                .extra
                .get("claudeResult")
                .and_then(|r| r.get("uuid"))
                .and_then(Value::as_str)
                .map(str::to_string);
            match groups.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
                Some((_, calls)) => calls.push(call),
                None => groups.push((key, vec![call])),
            }
        }
        for (key, calls) in groups {
            let first = calls[0];
            let mut rec = first
                .extra
                .get("claudeResult")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            self.common(&mut rec);
            rec.insert("type".into(), Value::from("user"));
            rec.entry("timestamp")
                .or_insert_with(|| Value::from(m.timestamp.clone()));
            let blocks: Vec<Value> = calls.iter().map(|c| self.result_block(c)).collect();
            let mut message = rec
                .remove("message")
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            message.insert("role".into(), Value::from("user"));
            message.insert("content".into(), Value::Array(blocks));
            rec.insert("message".into(), Value::Object(message));
            if let Some(tur) = first.extra.get("toolUseResult") {
                let tur = self.assets.inline(tur);
                rec.insert("toolUseResult".into(), tur);
            }
            rec.insert("sourceToolAssistantUUID".into(), Value::from(assistant));
            let uuid = match key.filter(|k| !self.used.contains(k)) {
                Some(k) => k,
                None => uuid_for(&format!("{}~result~{}", m.id, first.tool_call_id)),
            };
            self.chained(rec, uuid)?;
        }
        Ok(())
    }

    fn result_block(&mut self, call: &ToolCall) -> Value {
        let content = match call.extra.get("outputContent").and_then(Value::as_array) {
            Some(blocks) => Value::Array(
                blocks
                    .iter()
                    .map(
                        |b| match serde_json::from_value::<ContentBlock>(b.clone()) {
                            Ok(block) => self.block(&block).unwrap_or_else(|| b.clone()),
                            Err(_) => self.assets.inline(b),
                        },
                    )
                    .collect(),
            ),
            None => Value::from(call.output.clone().unwrap_or_default()),
        };
        json!({
            "tool_use_id": call.tool_call_id,
            "type": "tool_result",
            "content": content,
            "is_error": call.status == ToolStatus::Failed,
        })
    }

    fn blocks(&mut self, content: &[ContentBlock]) -> Vec<Value> {
        content.iter().filter_map(|b| self.block(b)).collect()
    }

    /// One ATSF block as Claude's API writes it; `None` for what Claude
    /// Code cannot take back (thinking without its signature).
    fn block(&mut self, b: &ContentBlock) -> Option<Value> {
        Some(match b {
            ContentBlock::Text { text, extra } => {
                let mut o = extra.clone();
                o.insert("type".into(), Value::from("text"));
                o.insert("text".into(), Value::from(text.clone()));
                Value::Object(o)
            }
            ContentBlock::Thinking { text, extra } => {
                if !extra.contains_key("signature") {
                    self.unsigned += 1;
                    return None;
                }
                let mut o = extra.clone();
                o.insert("type".into(), Value::from("thinking"));
                o.insert("thinking".into(), Value::from(text.clone()));
                Value::Object(o)
            }
            ContentBlock::Image(img) => {
                let (mime, data) = self.assets.image(img)?;
                let mut o = img.extra.clone();
                o.insert("type".into(), Value::from("image"));
                let mut source = o
                    .remove("source")
                    .and_then(|s| s.as_object().cloned())
                    .unwrap_or_default();
                source.insert("type".into(), Value::from("base64"));
                source.insert("media_type".into(), Value::from(mime));
                source.insert("data".into(), Value::from(data));
                o.insert("source".into(), Value::Object(source));
                Value::Object(o)
            }
            ContentBlock::Unknown(map) => self.assets.inline(&Value::Object(map.clone())),
        })
    }
}

/// A message's tokens as the `usage` of Claude Code's records: input and
/// output always, the cache's counts when the message has them.
fn usage(t: Option<&crate::atsf::Tokens>) -> Value {
    let mut u = json!({
        "input_tokens": t.and_then(|t| t.input).unwrap_or(0),
        "output_tokens": t.and_then(|t| t.output).unwrap_or(0),
    });
    if let Some(n) = t.and_then(|t| t.cache_read) {
        u["cache_read_input_tokens"] = Value::from(n);
    }
    if let Some(n) = t.and_then(|t| t.cache_creation) {
        u["cache_creation_input_tokens"] = Value::from(n);
    }
    u
}
