//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! Records form a tree through `parentUuid`. The conversation is the chain
//! that ends at the newest leaf; another branch that holds a prompt or a
//! reply becomes a fork thread (relationships as `grove fork` writes them);
//! branches holding only tool results or progress records are not forks
//! (parallel tool calls share a parent) and stay in the conversation in
//! file order. Sidechains (`isSidechain`) and subagent files (`agent-*.jsonl`,
//! `<session>/subagents/`) become subagent threads with `mainThreadID`.
//! Tool results are joined to their calls by `tool_use_id`; records of other
//! types are kept as `system` messages carrying the raw record.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::tree::{Record, Shape, read_records, shape};
use super::{ImportedThread, Summary, defer_pending_tail, first_prompt, is_live};
use crate::atsf::{self, Agent, ContentBlock, Context, Extra, Message, Role, Tokens, ToolCall};
use crate::error::{IoContext, Result};

/// Claude Code, as a [`super::Format`].
pub struct Claude;

impl super::Format for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }
    fn about(&self) -> &'static str {
        "Claude Code session transcripts"
    }
    fn layout(&self) -> &'static str {
        "a session .jsonl, or a ~/.claude/projects/<project> directory holding them \
         (with their agent-*.jsonl and <session>/subagents/ files)"
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
        let threads = import_file(source, out.summary())?;
        for t in threads {
            out.thread(t)?;
        }
        Ok(None)
    }
}

/// The source files under `path`: itself if a file; else its `*.jsonl` and
/// those of `<dir>/*/subagents/`. Sessions first, subagent files after.
pub fn sources(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let jsonl = |dir: &Path, files: &mut Vec<PathBuf>| -> Result<()> {
        for entry in std::fs::read_dir(dir).ctx("listing", dir)? {
            let p = entry.ctx("listing", dir)?.path();
            if p.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                files.push(p);
            }
        }
        Ok(())
    };
    jsonl(path, &mut files)?;
    for entry in std::fs::read_dir(path).ctx("listing", path)? {
        let sub = entry.ctx("listing", path)?.path().join("subagents");
        if sub.is_dir() {
            jsonl(&sub, &mut files)?;
        }
    }
    files.sort_by_key(|p| (is_agent_file(p), p.clone()));
    Ok(files)
}

fn is_agent_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-"))
        || p.parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "subagents")
}

/// Imports the session file at `path` (and, for a subagent file, names its
/// main thread): the conversation, its forks and its sidechains.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Vec<ImportedThread>> {
    let records = read_records(path, summary)?;
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session")
        .to_string();
    let session = records
        .iter()
        .find_map(|r| r.str_field("sessionId"))
        .unwrap_or(&stem)
        .to_string();
    let agent_file = is_agent_file(path);
    let main_id = if agent_file {
        format!("claude-{session}-{stem}")
    } else {
        format!("claude-{session}")
    };
    let results = tool_results(&records);

    let Shape {
        main_records,
        forks,
        sidechains,
        ..
    } = shape(&records, agent_file);

    let mut mapper = Mapper {
        records: &records,
        results: &results,
        summary,
        joined: HashSet::new(),
    };
    let (mut main_messages, index_of) = mapper.map(&main_records);
    let live = is_live(path);
    defer_pending_tail(&mut main_messages, live, mapper.summary);
    let title = records
        .iter()
        .find(|r| r.kind() == "summary")
        .and_then(|r| r.str_field("summary"))
        .map(str::to_string)
        .or_else(|| first_prompt(&main_messages))
        .unwrap_or_else(|| {
            format!(
                "Claude Code session {}",
                session.chars().take(8).collect::<String>()
            )
        });
    let title = if agent_file {
        format!("Subagent: {title}")
    } else {
        title
    };
    let mut main = ImportedThread {
        meta: thread_meta(&main_id, &title, &records, &main_records, path, &session),
        messages: main_messages,
    };
    if agent_file {
        main.meta.main_thread_id = Some(format!("claude-{session}"));
    }
    let mut out = Vec::new();
    for (leaf, chain, split) in forks {
        let (messages, _) = mapper.map(&chain);
        let leaf_uuid = records[leaf].uuid().unwrap_or("leaf");
        let id = format!("{main_id}-fork-{leaf_uuid}");
        let at = index_of.get(&split).copied();
        let now = records[leaf].timestamp();
        let mut meta = thread_meta(
            &id,
            &atsf::fork_title(&title),
            &records,
            &chain,
            path,
            &session,
        );
        super::tree::link_fork(&mut main.meta, &mut meta, at, now);
        out.push(ImportedThread { meta, messages });
    }
    for (root, members) in sidechains {
        let (mut messages, _) = mapper.map(&members);
        defer_pending_tail(&mut messages, live, mapper.summary);
        let id = format!("{main_id}-side-{root}");
        let sub_title = format!(
            "Subagent: {}",
            first_prompt(&messages).unwrap_or_else(|| "sidechain".into())
        );
        let mut meta = thread_meta(&id, &sub_title, &records, &members, path, &session);
        meta.main_thread_id = Some(main_id.clone());
        out.push(ImportedThread { meta, messages });
    }
    out.insert(0, main);
    Ok(out)
}

fn thread_meta(
    id: &str,
    title: &str,
    records: &[Record],
    members: &[usize],
    path: &Path,
    session: &str,
) -> atsf::ThreadMeta {
    let first = members.first().map(|&i| &records[i]);
    let cwd = first
        .and_then(|r| r.str_field("cwd"))
        .or_else(|| records.iter().find_map(|r| r.str_field("cwd")))
        .unwrap_or("")
        .to_string();
    let branch = records
        .iter()
        .find_map(|r| r.str_field("gitBranch"))
        .map(str::to_string);
    let version = records
        .iter()
        .find_map(|r| r.str_field("version"))
        .map(str::to_string);
    let created = members
        .iter()
        .find_map(|&i| records[i].timestamp())
        .unwrap_or_else(atsf::now_timestamp);
    let mut meta = crate::threads::new_meta(
        title,
        "claude-code",
        Context {
            working_dir: cwd,
            git_branch: branch,
            ..Context::default()
        },
    );
    meta.thread_id = id.to_string();
    meta.created_at = created.clone();
    meta.updated_at = created;
    meta.agent = Agent {
        id: "claude-code".into(),
        name: "Claude Code".into(),
        version,
        protocol: None,
        protocol_version: None,
        extra: Extra::new(),
    };
    meta.metadata_mut().insert(
        "import".into(),
        json!({
            "format": "claude",
            "source": path,
            "sourceId": session,
            "importedAt": atsf::now_timestamp(),
        }),
    );
    meta
}

/// tool_use_id → (output text, is_error, toolUseResult, record index).
type Results = HashMap<String, (String, bool, Option<Value>, usize)>;

fn tool_results(records: &[Record]) -> Results {
    let mut out = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let Some(blocks) = r.content().and_then(Value::as_array) else {
            continue;
        };
        for b in blocks {
            if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                continue;
            };
            let text = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
            out.insert(
                id.to_string(),
                (text, is_error, r.raw.get("toolUseResult").cloned(), i),
            );
        }
    }
    out
}

struct Mapper<'a> {
    records: &'a [Record],
    results: &'a Results,
    summary: &'a mut Summary,
    /// Records already counted (a record can appear in the main thread and a fork).
    joined: HashSet<usize>,
}

impl Mapper<'_> {
    /// Messages of `members` (record indices, in order), and for each record
    /// the index of the message it went into.
    fn map(&mut self, members: &[usize]) -> (Vec<Message>, HashMap<usize, u64>) {
        let mut messages: Vec<Message> = Vec::new();
        let mut index_of = HashMap::new();
        let mut last_time: Option<String> =
            members.iter().find_map(|&i| self.records[i].timestamp());
        for &i in members {
            let r = &self.records[i];
            let first_time = self.joined.insert(i);
            let kind = r.kind().to_string();
            let time = r
                .timestamp()
                .or_else(|| last_time.clone())
                .unwrap_or_else(atsf::now_timestamp);
            last_time = Some(time.clone());
            let message = match kind.as_str() {
                "user" | "assistant" => {
                    if r.only_tool_results() {
                        if first_time {
                            self.summary.count(&kind).joined += 1;
                        }
                        if let Some(&prev) = messages.len().checked_sub(1).as_ref() {
                            index_of.insert(i, prev as u64);
                        }
                        continue;
                    }
                    if first_time {
                        self.summary.count(&kind).mapped += 1;
                    }
                    self.conversation_message(r, time)
                }
                "summary" => {
                    if first_time {
                        self.summary.count(&kind).mapped += 1;
                    }
                    let text = r.str_field("summary").unwrap_or("").to_string();
                    raw_message(r, time, format!("Summary: {text}"))
                }
                "system" if r.str_field("content").is_some() => {
                    if first_time {
                        self.summary.count(&kind).mapped += 1;
                    }
                    let text = r.str_field("content").unwrap_or("").to_string();
                    raw_message(r, time, text)
                }
                other => {
                    if first_time {
                        self.summary.count(other).raw += 1;
                    }
                    raw_message(r, time, format!("[Claude Code {other} record]"))
                }
            };
            index_of.insert(i, messages.len() as u64);
            messages.push(message);
        }
        (messages, index_of)
    }

    fn conversation_message(&mut self, r: &Record, time: String) -> Message {
        let role = match (r.kind(), r.raw.get("isMeta").and_then(Value::as_bool)) {
            ("assistant", _) => Role::Agent,
            (_, Some(true)) => Role::System,
            _ => Role::User,
        };
        let (content, calls) = self.blocks(r);
        let api = r.raw.get("message");
        let usage = api.and_then(|m| m.get("usage"));
        let mut m = Message::new(role, content);
        m.id = r.message_id();
        m.timestamp = time;
        m.tool_calls = (!calls.is_empty()).then_some(calls);
        m.model = api
            .and_then(|a| a.get("model"))
            .and_then(Value::as_str)
            .map(str::to_string);
        m.stop_reason = api
            .and_then(|a| a.get("stop_reason"))
            .and_then(Value::as_str)
            .map(str::to_string);
        m.tokens = usage.map(|u| Tokens {
            input: u.get("input_tokens").and_then(Value::as_u64),
            output: u.get("output_tokens").and_then(Value::as_u64),
            extra: Extra::new(),
        });
        m.extra
            .insert("claude".into(), Value::Object(without_content(&r.raw)));
        m
    }

    /// Content blocks and tool calls of a user or assistant record.
    fn blocks(&mut self, r: &Record) -> (Vec<ContentBlock>, Vec<ToolCall>) {
        let (content, calls, _) = super::anthropic_content(r.content(), |b| self.tool_call(b));
        (content, calls)
    }

    fn tool_call(&self, b: &Value) -> ToolCall {
        let id = b
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let result = self.results.get(&id);
        let mut extra = Extra::new();
        if let Some((_, _, Some(tur), _)) = result {
            extra.insert("toolUseResult".into(), tur.clone());
        }
        let name = b
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .to_string();
        let input = b.get("input").map(|i| i.to_string());
        super::tool_call(
            id,
            name,
            input,
            result.map(|(t, f, _, _)| (t.as_str(), *f)),
            extra,
        )
    }
}

/// The record without `message.content` (mapped into the ATSF message).
fn without_content(raw: &Map<String, Value>) -> Map<String, Value> {
    let mut raw = raw.clone();
    if let Some(Value::Object(m)) = raw.get_mut("message") {
        m.remove("content");
    }
    raw
}

/// A `system` message carrying the raw record.
fn raw_message(r: &Record, time: String, text: String) -> Message {
    let mut m = Message::new(Role::System, vec![ContentBlock::text(text)]);
    m.id = r.message_id();
    m.timestamp = time;
    m.extra
        .insert("claudeRecord".into(), Value::Object(r.raw.clone()));
    m
}
