//! dagent's `.dagent/` directory (seed 002): the current layout
//! (`features/<f>/sessions/<s>/` with `session.json`, `chat.json`,
//! `checkpoint.json`, `context.json`, `agent-description.json`) and both
//! legacy layouts (`features/<f>/chat.json` entries; `nodes/<n>/session.json`
//! with Unix-ms timestamps and `direction`), mapped as the seed's migration
//! table says. Nothing under `.dagent/` is written (dagent's own migration
//! writes backups; grove does not).
//!
//! A legacy file of a feature that already has `sessions/` was migrated
//! there by dagent: it is skipped (and counted) so the conversation is not
//! imported twice.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{ImportedThread, Summary, read_object};
use crate::atsf::{self, ContentBlock, Context, Message, Role, Tokens};
use crate::error::{Error, IoContext, Result};

/// Imports every feature of the `.dagent` directory at `path` (or of the
/// project containing it, or one feature directory).
/// dagent, as a [`super::Format`].
pub struct Dagent;

impl super::Format for Dagent {
    fn name(&self) -> &'static str {
        "dagent"
    }
    fn about(&self) -> &'static str {
        "dagent's .dagent/ directory (current and legacy layouts)"
    }
    fn layout(&self) -> &'static str {
        "a project holding .dagent/features/, that .dagent/ directory, or one feature directory"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        let recognised = path.join(".dagent/features").is_dir()
            || path.join("features").is_dir()
            || path.join("feature.json").is_file()
            || path.join("sessions").is_dir();
        Ok(if recognised {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        })
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Sink,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_dir(source, summary))
    }
}

/// Imports a project, its `.dagent/`, or one feature directory.
pub fn import_dir(path: &Path, summary: &mut Summary) -> Result<Vec<ImportedThread>> {
    let features_dir = if path.join(".dagent/features").is_dir() {
        path.join(".dagent/features")
    } else if path.join("features").is_dir() {
        path.join("features")
    } else if path.join("feature.json").is_file() || path.join("sessions").is_dir() {
        return import_feature(path, summary);
    } else {
        return Err(Error::Other(format!(
            "{} is not a .dagent directory (no features/)",
            path.display()
        )));
    };
    let mut out = Vec::new();
    for feature in sorted_dirs(&features_dir)? {
        out.extend(import_feature(&feature, summary)?);
    }
    Ok(out)
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).ctx("listing", dir)? {
        let p = entry.ctx("listing", dir)?.path();
        if p.is_dir() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn import_feature(feature: &Path, summary: &mut Summary) -> Result<Vec<ImportedThread>> {
    let feature_id = name_of(feature);
    let feature_meta = if feature.join("feature.json").is_file() {
        read_object(&feature.join("feature.json"), "feature", summary)?
    } else {
        None
    };
    let feature_name = feature_meta
        .as_ref()
        .and_then(|f| f.get("name").and_then(Value::as_str))
        .unwrap_or(&feature_id)
        .to_string();
    let mut out = Vec::new();
    let sessions = feature.join("sessions");
    let migrated = sessions.is_dir();
    if migrated {
        for s in sorted_dirs(&sessions)? {
            out.extend(import_session(&s, &feature_id, &feature_name, summary)?);
        }
    }
    let legacy_chat = feature.join("chat.json");
    if legacy_chat.is_file() {
        if migrated {
            summary.skip(
                "legacy chat.json",
                "the feature has sessions/: dagent migrated it there".into(),
            );
        } else if let Some(t) =
            import_legacy_chat(&legacy_chat, &feature_id, &feature_name, summary)?
        {
            out.push(t);
        }
    }
    let nodes = feature.join("nodes");
    if nodes.is_dir() {
        for node in sorted_dirs(&nodes)? {
            let file = node.join("session.json");
            if !file.is_file() {
                continue;
            }
            if migrated {
                summary.skip(
                    "legacy node session.json",
                    "the feature has sessions/: dagent migrated it there".into(),
                );
            } else if let Some(t) = import_legacy_node(&file, &feature_id, &feature_name, summary)?
            {
                out.push(t);
            }
        }
    }
    if let (Some(first), Some(f)) = (out.first_mut(), feature_meta) {
        first
            .meta
            .metadata_mut()
            .insert("dagentFeature".into(), Value::Object(f));
    }
    Ok(out)
}

/// The objects of a JSON array; any other element is counted as skipped,
/// naming the file and its position.
fn objects<'a>(
    array: Option<&'a Value>,
    kind: &str,
    word: &str,
    file: &Path,
    summary: &mut Summary,
) -> Vec<&'a Map<String, Value>> {
    let mut out = Vec::new();
    for (i, v) in array
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        match v.as_object() {
            Some(o) => out.push(o),
            None => summary.skip(
                kind,
                format!("{}: {word} {i} is not an object", file.display()),
            ),
        }
    }
    out
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn stable_id(prefix: &str, parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let hex: String = h
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{prefix}-{hex}")
}

fn base_meta(id: &str, title: &str, agent: &str, path: &Path, source_id: &str) -> atsf::ThreadMeta {
    let mut meta = crate::threads::new_meta(title, "dagent", Context::default());
    meta.thread_id = id.to_string();
    meta.agent.name = format!("dagent ({agent})");
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "dagent", "source": path, "sourceId": source_id}),
    );
    meta
}

fn import_session(
    dir: &Path,
    feature_id: &str,
    feature_name: &str,
    summary: &mut Summary,
) -> Result<Option<ImportedThread>> {
    let session_file = dir.join("session.json");
    let session = if session_file.is_file() {
        read_object(&session_file, "session", summary)?
    } else {
        None
    };
    let session_id = session
        .as_ref()
        .and_then(|s| s.get("id").and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| name_of(dir));
    let agent_type = session
        .as_ref()
        .and_then(|s| s.get("agentType").and_then(Value::as_str))
        .unwrap_or("agent")
        .to_string();
    let id = format!("dagent-{feature_id}-{session_id}");
    let mut meta = base_meta(
        &id,
        &format!("{feature_name}: {agent_type} session"),
        &agent_type,
        dir,
        &session_id,
    );
    let mut dagent = Map::new();
    if let Some(s) = &session {
        dagent.insert("session".into(), Value::Object(s.clone()));
        if let Some(t) = s.get("createdAt").and_then(Value::as_str)
            && let Ok(t) = atsf::normalize_timestamp(t)
        {
            meta.created_at = t.clone();
            meta.updated_at = t;
        }
    }
    for (key, file) in [
        ("context", "context.json"),
        ("agentDescription", "agent-description.json"),
    ] {
        let p = dir.join(file);
        if p.is_file()
            && let Some(o) = read_object(&p, file, summary)?
        {
            summary.count(file).raw += 1;
            dagent.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(root) = dagent
        .get("context")
        .and_then(|c| c.get("projectRoot"))
        .and_then(Value::as_str)
    {
        meta.context.working_dir = root.to_string();
    }
    let mut messages = Vec::new();
    // The checkpoint summarises what compaction removed from chat.json: it
    // comes first; a later compaction adds a new one (its id is its time).
    let checkpoint_file = dir.join("checkpoint.json");
    if checkpoint_file.is_file()
        && let Some(cp) = read_object(&checkpoint_file, "checkpoint.json", summary)?
    {
        summary.count("checkpoint.json").mapped += 1;
        messages.push(checkpoint_message(&cp, &mut meta));
        dagent.insert("checkpoint".into(), Value::Object(cp));
    }
    let chat_file = dir.join("chat.json");
    if chat_file.is_file()
        && let Some(chat) = read_object(&chat_file, "chat.json", summary)?
    {
        for e in objects(
            chat.get("messages"),
            "chat message",
            "message",
            &chat_file,
            summary,
        ) {
            messages.push(chat_message(e, summary));
        }
        let mut rest = chat.clone();
        rest.remove("messages");
        dagent.insert("chat".into(), Value::Object(rest));
    }
    meta.metadata_mut()
        .insert("dagent".into(), Value::Object(dagent));
    Ok(Some(ImportedThread { meta, messages }))
}

/// The checkpoint's summary as a `system` message (its id is its time: a
/// later compaction adds a new one); its lists become the thread's summary
/// and next steps.
fn checkpoint_message(cp: &Map<String, Value>, meta: &mut atsf::ThreadMeta) -> Message {
    let s = cp.get("summary").and_then(Value::as_object);
    let list = |k: &str| -> Vec<String> {
        s.and_then(|s| s.get(k))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut text = String::from("Checkpoint (compacted conversation)");
    for (label, key) in [
        ("Completed", "completed"),
        ("In progress", "inProgress"),
        ("Pending", "pending"),
        ("Blockers", "blockers"),
        ("Decisions", "decisions"),
    ] {
        let items = list(key);
        if !items.is_empty() {
            text.push_str(&format!("\n{label}:"));
            for i in items {
                text.push_str(&format!("\n- {i}"));
            }
        }
    }
    let when = cp
        .get("updatedAt")
        .or_else(|| cp.get("createdAt"))
        .and_then(Value::as_str)
        .and_then(|t| atsf::normalize_timestamp(t).ok())
        .unwrap_or_else(|| meta.created_at.clone());
    let mut m = Message::new(Role::System, vec![ContentBlock::text(&text)]);
    m.id = format!("checkpoint@{when}");
    m.timestamp = when;
    m.extra
        .insert("dagentCheckpoint".into(), Value::Object(cp.clone()));
    let done = list("completed");
    if !done.is_empty() {
        meta.conversation_summary = Some(done.join("; "));
    }
    let next: Vec<String> = list("inProgress")
        .into_iter()
        .chain(list("pending"))
        .collect();
    if !next.is_empty() {
        meta.next_steps = Some(crate::atsf::notes(next));
    }
    m
}

/// One `chat.json` message.
fn chat_message(e: &Map<String, Value>, summary: &mut Summary) -> Message {
    let role_name = e.get("role").and_then(Value::as_str).unwrap_or("");
    let role = match role_name {
        "user" => Role::User,
        "assistant" => Role::Agent,
        "system" => Role::System,
        _ => {
            summary.count("chat message").raw += 1;
            Role::System
        }
    };
    let content = text_of(e.get("content"));
    let ts = text_of(e.get("timestamp"));
    let mut m = Message::new(role, vec![ContentBlock::text(&content)]);
    m.id = e
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| stable_id("msg", &[role_name, &ts, &content]));
    if let Ok(t) = atsf::normalize_timestamp(&ts) {
        m.timestamp = t;
    }
    if let Some(tokens) = e.get("metadata").and_then(|md| md.get("tokens")) {
        m.tokens = Some(Tokens {
            input: tokens.get("input").and_then(Value::as_u64),
            output: tokens.get("output").and_then(Value::as_u64),
            ..Default::default()
        });
    }
    let mut rest = e.clone();
    for k in ["id", "role", "content", "timestamp"] {
        rest.remove(k);
    }
    if !rest.is_empty() {
        m.extra.insert("dagent".into(), Value::Object(rest));
    }
    if matches!(role_name, "user" | "assistant" | "system") {
        summary.count("chat message").mapped += 1;
    }
    m
}

fn import_legacy_chat(
    file: &Path,
    feature_id: &str,
    feature_name: &str,
    summary: &mut Summary,
) -> Result<Option<ImportedThread>> {
    let Some(chat) = read_object(file, "legacy chat.json", summary)? else {
        return Ok(None);
    };
    let id = format!("dagent-{feature_id}-chat");
    let mut meta = base_meta(
        &id,
        &format!("{feature_name}: PM chat"),
        "pm",
        file,
        "chat.json",
    );
    let mut messages = Vec::new();
    for e in objects(
        chat.get("entries"),
        "legacy chat entry",
        "entry",
        file,
        summary,
    ) {
        // entries[].type → role, .text → content, .timestamp kept (ISO).
        let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
        let role = match kind {
            "user" => Role::User,
            "assistant" => Role::Agent,
            _ => Role::System,
        };
        let text = text_of(e.get("text"));
        let ts = text_of(e.get("timestamp"));
        let mut m = Message::new(role.clone(), vec![ContentBlock::text(&text)]);
        m.id = stable_id("entry", &[kind, &ts, &text]);
        if let Ok(t) = atsf::normalize_timestamp(&ts) {
            m.timestamp = t;
        }
        if role == Role::System {
            m.extra.insert("dagent".into(), Value::Object(e.clone()));
            summary.count("legacy chat entry").raw += 1;
        } else {
            summary.count("legacy chat entry").mapped += 1;
        }
        messages.push(m);
    }
    if let Some(first) = messages.first() {
        meta.created_at = first.timestamp.clone();
    }
    Ok(Some(ImportedThread { meta, messages }))
}

fn import_legacy_node(
    file: &Path,
    feature_id: &str,
    feature_name: &str,
    summary: &mut Summary,
) -> Result<Option<ImportedThread>> {
    let Some(session) = read_object(file, "legacy node session.json", summary)? else {
        return Ok(None);
    };
    let node = file.parent().map(name_of).unwrap_or_default();
    let task = session
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or(&node)
        .to_string();
    let id = format!("dagent-{feature_id}-node-{node}");
    let mut meta = base_meta(
        &id,
        &format!("{feature_name}: task {task}"),
        "dev",
        file,
        &task,
    );
    let mut messages = Vec::new();
    for e in objects(
        session.get("messages"),
        "legacy node message",
        "message",
        file,
        summary,
    ) {
        // direction outgoing → assistant (agent), incoming → user; Unix ms → ISO.
        let direction = e.get("direction").and_then(Value::as_str).unwrap_or("");
        let role = match direction {
            "outgoing" => Role::Agent,
            "incoming" => Role::User,
            _ => Role::System,
        };
        let content = text_of(e.get("content"));
        let ms = e.get("timestamp").and_then(Value::as_i64);
        let mut m = Message::new(role, vec![ContentBlock::text(&content)]);
        m.id = stable_id("node", &[direction, &ms.unwrap_or(0).to_string(), &content]);
        if let Some(ms) = ms
            && let Ok(ts) = jiff::Timestamp::from_millisecond(ms)
            && let Ok(t) = atsf::normalize_timestamp(&ts.to_string())
        {
            m.timestamp = t;
        }
        let mut rest = e.clone();
        for k in ["direction", "content", "timestamp"] {
            rest.remove(k);
        }
        m.extra.insert("dagent".into(), Value::Object(rest));
        summary.count("legacy node message").mapped += 1;
        messages.push(m);
    }
    if let Some(first) = messages.first() {
        meta.created_at = first.timestamp.clone();
    }
    let mut rest = session.clone();
    rest.remove("messages");
    meta.metadata_mut()
        .insert("dagent".into(), Value::Object(rest));
    Ok(Some(ImportedThread { meta, messages }))
}
