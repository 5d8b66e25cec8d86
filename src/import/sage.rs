//! Sage Agent sessions (`.sage/sessions/<id>/`, seed 004): `messages.jsonl`
//! with `uuid` / `parentUuid` chains and sidechains, `tool_result` records,
//! `snapshots.jsonl` (file history), todos, `metadata.json`.
//!
//! The tree is read as for Claude Code (the newest leaf's chain is the
//! conversation, other branches with a prompt or reply are forks, sidechains
//! subagent threads). `tool_result` records are joined to the calls they
//! answer; file history snapshots are kept as `system` messages carrying the
//! raw record, placed after the message they belong to; each message keeps
//! its todos and thinking metadata under `sage`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::tree::{Record, Shape, read_records, shape};
use super::{ImportedThread, Summary};
use super::{defer_pending_tail, first_prompt, is_live};
use crate::atsf::{self, Agent, ContentBlock, Context, Extra, Message, Role, Tokens, ToolCall};
use crate::error::{Error, IoContext, Result};

/// Session directories under `path`: a `.sage` directory, its `sessions/`,
/// one session directory, or a `messages.jsonl` (its directory).
/// Sage Agent, as a [`super::Format`].
pub struct Sage;

impl super::Format for Sage {
    fn name(&self) -> &'static str {
        "sage"
    }
    fn about(&self) -> &'static str {
        "Sage Agent sessions (.sage/sessions/<id>/)"
    }
    fn layout(&self) -> &'static str {
        ".sage/, .sage/sessions/, a session directory or its messages.jsonl"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        sessions(path)
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Sink,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_session(source, summary))
    }
}

/// The session directories under `path`.
pub fn sessions(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.parent().unwrap_or(Path::new(".")).to_path_buf()]);
    }
    if path.join("messages.jsonl").is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = if path.join("sessions").is_dir() {
        path.join("sessions")
    } else {
        path.to_path_buf()
    };
    if !dir.is_dir() {
        return Err(Error::Other(format!(
            "{} is not a Sage session: give .sage/, .sage/sessions/, a session directory or its messages.jsonl",
            path.display()
        )));
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).ctx("listing", &dir)? {
        let p = entry.ctx("listing", &dir)?.path();
        if p.join("messages.jsonl").is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Imports one session directory.
pub fn import_session(dir: &Path, summary: &mut Summary) -> Result<Vec<ImportedThread>> {
    let log = dir.join("messages.jsonl");
    let mut records = read_records(&log, summary)?;
    // Snapshots go right after the message they belong to.
    let snapshots_path = dir.join("snapshots.jsonl");
    if snapshots_path.is_file() {
        for snap in read_records(&snapshots_path, summary)? {
            let after = snap
                .raw
                .get("messageId")
                .and_then(Value::as_str)
                .and_then(|id| records.iter().position(|r| r.uuid() == Some(id)));
            match after {
                Some(i) => records.insert(i + 1, snap),
                None => records.push(snap),
            }
        }
    }
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let session_metadata = match std::fs::read(dir.join("metadata.json")) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                summary.errors.push(format!(
                    "{}:{}: {e}",
                    dir.join("metadata.json").display(),
                    e.line()
                ));
                None
            }
        },
        Err(_) => None,
    };
    let dir_name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("session")
        .to_string();
    let session = records
        .iter()
        .find_map(|r| r.str_field("sessionId"))
        .unwrap_or(&dir_name)
        .to_string();
    let main_id = format!("sage-{session}");
    let results = tool_results(&records);
    let Shape {
        main_records,
        forks,
        sidechains,
        ..
    } = shape(&records, false);
    let live = is_live(&log);
    let mut mapper = Mapper {
        records: &records,
        results: &results,
        summary,
        seen: Default::default(),
    };
    let (mut messages, index_of) = mapper.map(&main_records);
    defer_pending_tail(&mut messages, live, mapper.summary);
    let title = session_metadata
        .as_ref()
        .and_then(|m| m.get("title").or_else(|| m.get("name")))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| first_prompt(&messages))
        .unwrap_or_else(|| format!("Sage session {session}"));
    let mut main = ImportedThread {
        meta: meta_for(&main_id, &title, &records, &main_records, &log, &session),
        messages,
    };
    if let Some(m) = &session_metadata {
        main.meta.metadata_mut().insert("sage".into(), m.clone());
    }
    let mut out = Vec::new();
    for (leaf, chain, split) in forks {
        let (messages, _) = mapper.map(&chain);
        let id = format!("{main_id}-fork-{}", records[leaf].uuid().unwrap_or("leaf"));
        let at = index_of.get(&split).copied();
        let mut meta = meta_for(
            &id,
            &atsf::fork_title(&title),
            &records,
            &chain,
            &log,
            &session,
        );
        super::tree::link_fork(&mut main.meta, &mut meta, at, records[leaf].timestamp());
        out.push(ImportedThread { meta, messages });
    }
    for (root, members) in sidechains {
        let (mut messages, _) = mapper.map(&members);
        defer_pending_tail(&mut messages, live, mapper.summary);
        let title = format!(
            "Subagent: {}",
            first_prompt(&messages).unwrap_or_else(|| "sidechain".into())
        );
        let id = format!("{main_id}-side-{root}");
        let mut meta = meta_for(&id, &title, &records, &members, &log, &session);
        meta.main_thread_id = Some(main_id.clone());
        out.push(ImportedThread { meta, messages });
    }
    out.insert(0, main);
    Ok(out)
}

fn meta_for(
    id: &str,
    title: &str,
    records: &[Record],
    members: &[usize],
    log: &Path,
    session: &str,
) -> atsf::ThreadMeta {
    let context = |key: &str| {
        members
            .iter()
            .copied()
            .chain(0..records.len())
            .find_map(|i| {
                records[i]
                    .raw
                    .get("context")?
                    .get(key)?
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            })
    };
    let mut meta = crate::threads::new_meta(
        title,
        "sage",
        Context {
            working_dir: context("cwd").unwrap_or_default(),
            git_branch: context("gitBranch"),
            ..Context::default()
        },
    );
    let created = members
        .iter()
        .find_map(|&i| records[i].timestamp())
        .unwrap_or_else(atsf::now_timestamp);
    meta.thread_id = id.to_string();
    meta.created_at = created.clone();
    meta.updated_at = created;
    meta.agent = Agent {
        id: "sage".into(),
        name: "Sage Agent".into(),
        version: records
            .iter()
            .find_map(|r| r.str_field("version"))
            .map(str::to_string),
        protocol: None,
        protocol_version: None,
        extra: Extra::new(),
    };
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "sage", "source": log, "sourceId": session}),
    );
    meta
}

/// toolCallId → (content, failed).
fn tool_results(records: &[Record]) -> HashMap<String, (String, bool)> {
    let mut out = HashMap::new();
    for r in records.iter().filter(|r| r.kind() == "tool_result") {
        for t in r
            .raw
            .get("toolResults")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = t.get("toolCallId").and_then(Value::as_str) else {
                continue;
            };
            let mut text = match t.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            if let Some(err) = t.get("error").and_then(Value::as_str) {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(err);
            }
            let failed = t.get("success").and_then(Value::as_bool) == Some(false);
            out.insert(id.to_string(), (text, failed));
        }
    }
    out
}

struct Mapper<'a> {
    records: &'a [Record],
    results: &'a HashMap<String, (String, bool)>,
    summary: &'a mut Summary,
    seen: std::collections::HashSet<usize>,
}

impl Mapper<'_> {
    fn map(&mut self, members: &[usize]) -> (Vec<Message>, HashMap<usize, u64>) {
        let mut messages = Vec::new();
        let mut index_of = HashMap::new();
        let mut last = members.iter().find_map(|&i| self.records[i].timestamp());
        for &i in members {
            let r = &self.records[i];
            let first = self.seen.insert(i);
            let kind = r.kind().to_string();
            let time = r
                .timestamp()
                .or_else(|| last.clone())
                .unwrap_or_else(atsf::now_timestamp);
            last = Some(time.clone());
            let message = match kind.as_str() {
                "user" | "assistant" => {
                    if first {
                        self.summary.count(&kind).mapped += 1;
                    }
                    self.message(r, time)
                }
                "tool_result" => {
                    if first {
                        self.summary.count(&kind).joined += 1;
                    }
                    if let Some(prev) = messages.len().checked_sub(1) {
                        index_of.insert(i, prev as u64);
                    }
                    continue;
                }
                other => {
                    if first {
                        self.summary.count(other).raw += 1;
                    }
                    let mut m = Message::new(
                        Role::System,
                        vec![ContentBlock::text(format!("[Sage {other} record]"))],
                    );
                    m.id = r.message_id();
                    m.timestamp = time;
                    m.extra
                        .insert("sageRecord".into(), Value::Object(r.raw.clone()));
                    m
                }
            };
            index_of.insert(i, messages.len() as u64);
            messages.push(message);
        }
        (messages, index_of)
    }

    fn message(&self, r: &Record, time: String) -> Message {
        let role = if r.kind() == "assistant" {
            Role::Agent
        } else {
            Role::User
        };
        let msg = r.raw.get("message");
        let mut content = Vec::new();
        match msg.and_then(|m| m.get("content")) {
            Some(Value::String(s)) => content.push(ContentBlock::text(s.clone())),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match (
                        b.get("type").and_then(Value::as_str),
                        b.get("text").and_then(Value::as_str),
                    ) {
                        (Some("text"), Some(t)) => content.push(ContentBlock::text(t)),
                        _ => {
                            if let Value::Object(map) = b {
                                content.push(ContentBlock::Unknown(map.clone()));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        let calls: Vec<ToolCall> = msg
            .and_then(|m| m.get("toolCalls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let id = c
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let result = self.results.get(&id).map(|(t, f)| (t.as_str(), *f));
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .into();
                let input = c.get("arguments").map(Value::to_string);
                super::tool_call(id, name, input, result, Extra::new())
            })
            .collect();
        let mut m = Message::new(role, content);
        m.id = r.message_id();
        m.timestamp = time;
        m.tool_calls = (!calls.is_empty()).then_some(calls);
        m.tokens = r.raw.get("usage").map(|u| Tokens {
            input: u.get("inputTokens").and_then(Value::as_u64),
            output: u.get("outputTokens").and_then(Value::as_u64),
            ..Default::default()
        });
        let mut rest: Map<String, Value> = r.raw.clone();
        if let Some(Value::Object(m)) = rest.get_mut("message") {
            m.remove("content");
            m.remove("toolCalls");
        }
        m.extra.insert("sage".into(), Value::Object(rest));
        m
    }
}
