//! What a thread records of a snapshot, and where.
//!
//! A message's `metadata.grove.snapshots` lists the snapshots taken just
//! before capture appended it. The hooks that mark a turn's boundaries run
//! before the agent writes the record they announce (the prompt, the tool's
//! result, the final reply), and `messages.jsonl` only grows, so a snapshot
//! cannot go on the message it is about: it waits in `thread.json`
//! (`metadata.grove.pendingSnapshots`) and the next message capture
//! appends carries it — a prompt's snapshot the prompt, a tool call's the
//! message completing that call, a turn's end usually the next prompt.
//! Each record says what it marks (`at`, `toolCallId`), so a reader never
//! depends on which message carries it; their order is the order they were
//! taken.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::atsf::{Message, ThreadMeta};

/// The boundary a snapshot marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum At {
    /// A prompt was submitted: what the worktree held before the agent's
    /// turn (changes since the last turn's end are the person's).
    Prompt,
    /// A tool that may change files ran: the changes since the previous
    /// snapshot are that call's.
    ToolCall,
    /// The agent's turn ended.
    TurnEnd,
}

impl At {
    /// Its name in the record: `prompt`, `toolCall`, `turnEnd`.
    pub fn as_str(self) -> &'static str {
        match self {
            At::Prompt => "prompt",
            At::ToolCall => "toolCall",
            At::TurnEnd => "turnEnd",
        }
    }
}

/// One snapshot, as a message (or `thread.json`, while pending) records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The worktree's content.
    pub tree: String,
    /// The commit of the thread's snapshot chain holding `tree` (the
    /// previous snapshot's when nothing changed).
    pub commit: String,
    pub at: At,
    /// The tool call that ran, for [`At::ToolCall`] (as the agent names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool's name, as the agent gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The agent session whose hook took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The commit checked out then (absent before the first commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    pub taken_at: String,
    /// Fields a newer grove added, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The key of a message's snapshots, in its `metadata.grove`.
const KEY: &str = "snapshots";

/// Records `record` in `meta` to wait for the next captured message. The
/// same boundary twice in a row (one hook run twice at once, as an agent
/// may) is recorded once.
pub fn add_pending(meta: &mut ThreadMeta, record: &Record) {
    let mut pending = meta.grove().pending_snapshots();
    let same = |v: &Value| {
        serde_json::from_value::<Record>(v.clone()).is_ok_and(|last| {
            (&last.tree, last.at, &last.tool_call_id, &last.session_id)
                == (
                    &record.tree,
                    record.at,
                    &record.tool_call_id,
                    &record.session_id,
                )
        })
    };
    if pending.last().is_some_and(same) {
        return;
    }
    if let Ok(value) = serde_json::to_value(record) {
        pending.push(value);
    }
    // A thread whose capture never appends again (an agent that stopped
    // writing its transcript) would grow thread.json at every boundary: the
    // oldest go, still in the thread's chain of snapshots.
    let excess = pending.len().saturating_sub(MAX_PENDING);
    pending.drain(..excess);
    meta.grove_mut().set_pending_snapshots(pending);
}

/// The most snapshots that wait in `thread.json`.
pub const MAX_PENDING: usize = 256;

/// The snapshots waiting in `meta`, as recorded (unknown shapes included:
/// they are carried on as they are).
pub fn pending(meta: &ThreadMeta) -> Vec<Value> {
    meta.grove().pending_snapshots()
}

/// Takes `carried` (read from `meta` earlier, under the same lock) out of
/// the pending snapshots: a snapshot recorded meanwhile stays.
pub fn forget_pending(meta: &mut ThreadMeta, carried: &[Value]) {
    let left: Vec<Value> = pending(meta)
        .into_iter()
        .filter(|v| !carried.contains(v))
        .collect();
    meta.grove_mut().set_pending_snapshots(left);
}

/// Adds `records` to `message`'s `metadata.grove.snapshots`. A `metadata`
/// or `grove` of another shape (someone else's) is kept, under `previous`.
pub fn attach(message: &mut Message, records: &[Value]) {
    if records.is_empty() {
        return;
    }
    let grove = object_at(object_at(&mut message.extra, "metadata"), "grove");
    let list = grove.entry(KEY).or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(vec![std::mem::take(list)]);
    }
    if let Value::Array(items) = list {
        items.extend(records.iter().cloned());
    }
}

/// The snapshots `message` carries (entries of another shape skipped).
pub fn of_message(message: &Message) -> Vec<Record> {
    message
        .extra
        .get("metadata")
        .and_then(|m| m.get("grove"))
        .and_then(|g| g.get(KEY))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| serde_json::from_value(v.clone()).ok())
        .collect()
}

/// The object under `key` of `map`, made when missing.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        let previous = std::mem::take(entry);
        *entry = serde_json::json!({ "previous": previous });
    }
    match entry {
        Value::Object(inner) => inner,
        // Made an object just above.
        _ => unreachable!("an object was just put here"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atsf::{ContentBlock, Role};

    fn record(at: At, tree: &str) -> Record {
        Record {
            tree: tree.into(),
            commit: "c".repeat(40),
            at,
            tool_call_id: None,
            tool: None,
            session_id: None,
            head: None,
            taken_at: "2026-01-01T00:00:00.000Z".into(),
            extra: Map::new(),
        }
    }

    #[test]
    fn pending_snapshots_keep_the_newest_when_nothing_carries_them() {
        let mut meta = crate::threads::new_meta("t", "claude-code", Default::default());
        for i in 0..MAX_PENDING + 10 {
            add_pending(&mut meta, &record(At::ToolCall, &format!("t{i}")));
        }
        let trees: Vec<String> = pending(&meta)
            .iter()
            .map(|v| v["tree"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(trees.len(), MAX_PENDING);
        assert_eq!(trees[0], "t10");
        assert_eq!(trees.last().unwrap(), &format!("t{}", MAX_PENDING + 9));
    }

    #[test]
    fn pending_snapshots_go_on_a_message_and_one_recorded_meanwhile_stays() {
        let mut meta = crate::threads::new_meta("t", "claude-code", Default::default());
        add_pending(&mut meta, &record(At::Prompt, "a"));
        add_pending(&mut meta, &record(At::ToolCall, "b"));
        add_pending(&mut meta, &record(At::ToolCall, "b"));
        let carried = pending(&meta);
        add_pending(&mut meta, &record(At::TurnEnd, "c"));
        let mut message = Message::new(Role::User, vec![ContentBlock::text("hi")]);
        message
            .extra
            .insert("metadata".into(), serde_json::json!("someone else's"));
        attach(&mut message, &carried);
        forget_pending(&mut meta, &carried);
        let on: Vec<String> = of_message(&message).into_iter().map(|r| r.tree).collect();
        assert_eq!(on, ["a", "b"]);
        assert_eq!(
            message.extra["metadata"]["previous"], "someone else's",
            "another writer's metadata is kept"
        );
        let left: Vec<Value> = pending(&meta);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0]["at"], "turnEnd");
        forget_pending(&mut meta, &left);
        assert!(meta.grove().fields().get("pendingSnapshots").is_none());
    }
}
