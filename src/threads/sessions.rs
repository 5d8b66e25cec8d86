//! The agent sessions a thread holds, as capture and import record them
//! under the thread's `metadata.capture`: each session captured into it, in
//! the order they started — `agent`, `sessionId`, `transcript`,
//! `startedAt`, and what the next import of it needs (`offset`, records
//! `waiting`, `tokens`) — and `opening`, the prompt grove gave the agent at
//! launch, already in the thread, so the session's copy is not added twice.
//! (The agent's state, `state`, is capture's: see `capture::state`.)

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::atsf::{Extra, Message, Role, ThreadMeta};

/// The `metadata` key of everything capture records.
pub const KEY: &str = "capture";

/// One agent session captured into a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The agent id (`claude-code`, `codex`).
    pub agent: String,
    /// The agent's own session id.
    pub session_id: String,
    /// The agent's transcript of it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    pub started_at: String,
    /// Written by grove (`grove resume`) rather than by the agent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exported: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

fn section(metadata: &Extra) -> Option<&Map<String, Value>> {
    metadata.get(KEY)?.as_object()
}

fn section_mut(metadata: &mut Extra) -> Option<&mut Map<String, Value>> {
    let entry = metadata
        .entry(KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        // Not grove's shape: replaced rather than mixed with.
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// The sessions captured into `meta`, in order.
pub fn sessions(meta: &ThreadMeta) -> Vec<SessionRecord> {
    meta.metadata
        .as_ref()
        .and_then(section)
        .and_then(|s| s.get("sessions")?.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

/// The entry of session `id` in `metadata`.
pub fn session_entry<'m>(metadata: &'m Extra, id: &str) -> Option<&'m Map<String, Value>> {
    section(metadata)?
        .get("sessions")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|s| s.get("sessionId").and_then(Value::as_str) == Some(id))
}

/// The entry of session `id`, made (at the end of the list) when missing.
pub fn session_entry_mut<'m>(
    metadata: &'m mut Extra,
    id: &str,
) -> Option<&'m mut Map<String, Value>> {
    let section = section_mut(metadata)?;
    let list = section
        .entry("sessions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let list = list.as_array_mut()?;
    let at = match list
        .iter()
        .position(|s| s.get("sessionId").and_then(Value::as_str) == Some(id))
    {
        Some(at) => at,
        None => {
            let mut entry = Map::new();
            entry.insert("sessionId".into(), Value::from(id));
            list.push(Value::Object(entry));
            list.len() - 1
        }
    };
    list[at].as_object_mut()
}

/// Records `session` on `meta` (once; what is known of it is completed).
/// Returns whether `meta` changed.
pub fn add_session(meta: &mut ThreadMeta, session: &SessionRecord) -> bool {
    let Some(entry) = session_entry_mut(meta.metadata_mut(), &session.session_id) else {
        return false;
    };
    let mut changed = false;
    let Ok(Value::Object(fields)) = serde_json::to_value(session) else {
        return false;
    };
    for (k, v) in fields {
        // What an earlier capture recorded stays (startedAt, the transcript
        // the agent named), but a transcript learned later is added.
        if !entry.contains_key(&k) {
            entry.insert(k, v);
            changed = true;
        }
    }
    changed
}

/// The session of `meta` with id `id`.
pub fn find_session(meta: &ThreadMeta, id: &str) -> Option<SessionRecord> {
    sessions(meta).into_iter().find(|s| s.session_id == id)
}

/// The opening prompt recorded at launch and not yet met in a transcript.
pub fn opening_prompt(meta: &ThreadMeta) -> Option<String> {
    meta.metadata
        .as_ref()
        .and_then(section)?
        .get("opening")?
        .as_str()
        .map(str::to_string)
}

/// Records the opening prompt grove gives the agent.
pub fn set_opening(meta: &mut ThreadMeta, text: &str) {
    if let Some(section) = section_mut(meta.metadata_mut()) {
        section.insert("opening".into(), Value::from(text));
    }
}

/// Forgets the opening prompt (the session's copy was met).
pub fn clear_opening(meta: &mut ThreadMeta) {
    if let Some(section) = meta
        .metadata
        .as_mut()
        .and_then(|m| m.get_mut(KEY)?.as_object_mut())
    {
        section.remove("opening");
    }
}

/// Whether `m` is the agent's copy of the opening prompt `text`
/// (`opencode run` 1.18 stores the prompt it was given in double quotes).
pub fn is_opening(m: &Message, text: &str) -> bool {
    let copy = normalize(&m.text());
    let unquoted = copy
        .strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .unwrap_or(&copy);
    m.role == Role::User && (copy == normalize(text) || unquoted == normalize(text))
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The prompt to open a session of `meta` with: its leading user and system
/// messages (a handoff's summary; the config's `initialPrompt`, then
/// `--prompt`, or what was appended before any agent ran), when no session was
/// captured into it yet. A session recorded at launch whose agent wrote
/// nothing (it failed before) does not count: its agent never got the
/// prompt.
pub fn leading_prompt(meta: &ThreadMeta, messages: &[Message]) -> Option<String> {
    if sessions(meta).iter().any(|s| was_captured(meta, s)) {
        return None;
    }
    let texts: Vec<String> = messages
        .iter()
        // A handoff's summary (role system) leads, the prompts it carries
        // follow: no agent has seen either.
        .take_while(|m| matches!(m.role, Role::User | Role::System))
        .map(Message::text)
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// Whether anything of `session` reached the thread: grove wrote it (a
/// resume), or a capture read some of its transcript (`seen`, `offset`).
fn was_captured(meta: &ThreadMeta, session: &SessionRecord) -> bool {
    let read = |key: &str| {
        meta.metadata
            .as_ref()
            .and_then(|m| session_entry(m, &session.session_id))
            .and_then(|e| e.get(key)?.as_u64())
            .is_some_and(|n| n > 0)
    };
    session.exported || read("seen") || read("offset")
}
