//! The order messages leave an importer in, shared by the line-based
//! formats (Claude Code, Codex):
//!
//! - A record the format does not map to a message waits, and travels whole
//!   on the next message (under `<format>Records`).
//! - The last message is held back until the next one comes, so the records
//!   after it can still join it when the thread does not go on.
//! - While the session may still be running, a reply whose tool calls have
//!   no result yet (and what follows it) is left for the next import.
//!
//! What is left — records waiting after the last message, a deferred tail —
//! is not taken: the cursor stays before it, and the next import reads it
//! again. So importing a growing file line by line gives the same thread as
//! importing it once.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Sink, ThreadHandle};
use crate::atsf::{Message, Role, ToolStatus};

struct Held {
    message: Message,
    line: u64,
    /// The first byte of the source this message took (its own record or
    /// the first record it carries).
    first_offset: u64,
}

/// A call written while still open: (message id, tool name).
pub(super) type OpenCall = (String, String);

/// One thread's messages on their way out.
pub(super) struct Stream {
    thread: ThreadHandle,
    /// Where waiting records go on a message: `claudeRecords`.
    key: &'static str,
    /// The thread goes on (the conversation): records after its last
    /// message wait for the next import.
    hold_trailing: bool,
    live: bool,
    /// The last message is an agent's whose usage is still to come (see
    /// [`Stream::awaiting_usage`]).
    awaiting_usage: bool,
    waiting: Vec<(u64, Map<String, Value>)>,
    queue: Vec<Held>,
    emitted: u64,
    /// Calls written open: call id → (message id, name, message index).
    open: BTreeMap<String, (String, String, u64)>,
}

/// What is left when a stream ends.
pub(super) struct Ended {
    /// The first byte not taken (records waiting, replies deferred), if any.
    pub unconsumed: Option<u64>,
    /// The records waiting after the last message (the conversation only).
    pub waiting: Vec<Value>,
    /// Calls written open.
    pub open: BTreeMap<String, OpenCall>,
    /// Messages from this index on were not written.
    pub written_below: u64,
}

impl Stream {
    pub fn new(thread: ThreadHandle, key: &'static str, hold_trailing: bool, live: bool) -> Self {
        Stream {
            thread,
            key,
            hold_trailing,
            live,
            awaiting_usage: false,
            waiting: Vec::new(),
            queue: Vec::new(),
            emitted: 0,
            open: BTreeMap::new(),
        }
    }

    /// The last agent message sent, while it is still held back and only
    /// `system` notices followed it (Codex writes an interrupted reply's
    /// usage after its `turn_aborted`).
    pub fn held_reply_mut(&mut self) -> Option<&mut Message> {
        let at = self.reply_behind_notices()?;
        Some(&mut self.queue[at].message)
    }

    /// Where in the queue the last agent message is, when only `system`
    /// messages follow it.
    fn reply_behind_notices(&self) -> Option<usize> {
        let at = self
            .queue
            .iter()
            .rposition(|h| h.message.role != Role::System)?;
        (self.queue[at].message.role == Role::Agent).then_some(at)
    }

    /// Says whether the last message sent waits for its usage (Codex
    /// writes a response's token figures after its items): while the
    /// session may be running, such a message is left for the next import,
    /// so its usage joins it rather than being lost.
    pub fn awaiting_usage(&mut self, yes: bool) {
        self.awaiting_usage = yes;
    }

    /// The index the next message gets.
    pub fn next_index(&self) -> u64 {
        self.emitted
    }

    /// Record `raw`, read at `offset`, waits for the next message.
    pub fn wait(&mut self, offset: u64, raw: Map<String, Value>) {
        self.waiting.push((offset, raw));
    }

    /// Sends message `m`, read at `line` from `offset`, with the records
    /// waiting before it.
    pub fn emit(&mut self, out: &mut Sink, mut m: Message, line: u64, offset: u64) {
        let mut first_offset = offset;
        if !self.waiting.is_empty() {
            first_offset = first_offset.min(self.waiting[0].0);
            let records: Vec<Value> = self
                .waiting
                .drain(..)
                .map(|(_, r)| Value::Object(r))
                .collect();
            m.extra.insert(self.key.into(), Value::Array(records));
        }
        self.emitted += 1;
        self.queue.push(Held {
            message: m,
            line,
            first_offset,
        });
        self.flush(out, false);
    }

    /// Where the deferred part of the queue starts: the first reply whose
    /// calls are still open, unless a prompt came after it.
    fn deferred_from(&self) -> usize {
        if !self.live {
            return self.queue.len();
        }
        let from = self.open_calls_from();
        match self.awaiting_usage.then(|| self.reply_behind_notices()) {
            Some(Some(reply)) => from.min(reply),
            _ => from,
        }
    }

    /// Where the queue's first reply with calls still open starts, unless
    /// a prompt came after it.
    fn open_calls_from(&self) -> usize {
        let Some(first) = self.queue.iter().position(|h| has_open_calls(&h.message)) else {
            return self.queue.len();
        };
        let answered = self.queue[first + 1..]
            .iter()
            .any(|h| h.message.role == Role::User && !has_open_calls(&h.message));
        if answered { self.queue.len() } else { first }
    }

    /// Writes the queue but its last message (records after it may still
    /// join it) and what may yet be deferred.
    fn flush(&mut self, out: &mut Sink, all: bool) {
        // A reply whose usage is due stays held behind the notices after
        // it, so the usage still reaches it.
        let keep = match (
            all,
            self.awaiting_usage.then(|| self.reply_behind_notices()),
        ) {
            (true, _) => 0,
            (false, Some(Some(reply))) => self.queue.len() - reply,
            (false, _) => 1,
        };
        let upto = self
            .deferred_from()
            .min(self.queue.len().saturating_sub(keep));
        let start = self.emitted - self.queue.len() as u64;
        for (n, held) in self.queue.drain(..upto).enumerate() {
            let index = start + n as u64;
            if held.message.completes().is_none() {
                for call in held.message.tool_calls.iter().flatten() {
                    if is_open(&call.status) {
                        self.open.insert(
                            call.tool_call_id.clone(),
                            (held.message.id.clone(), call.name.clone(), index),
                        );
                    }
                }
            }
            out.push(self.thread, held.message, Some(held.line));
        }
    }

    /// Writes what is left: trailing records wait (the conversation) or join
    /// the last message; a deferred tail is left for the next import.
    pub fn end(mut self, out: &mut Sink, summary_kind: &str) -> Ended {
        let mut waiting = Vec::new();
        let mut unconsumed = None;
        if !self.waiting.is_empty() {
            if self.hold_trailing || self.queue.is_empty() {
                unconsumed = Some(self.waiting[0].0);
                waiting = self
                    .waiting
                    .drain(..)
                    .map(|(_, r)| Value::Object(r))
                    .collect();
            } else if let Some(last) = self.queue.last_mut() {
                let records: Vec<Value> = self
                    .waiting
                    .drain(..)
                    .map(|(_, r)| Value::Object(r))
                    .collect();
                last.message
                    .extra
                    .insert(format!("{}After", self.key), Value::Array(records));
            }
        }
        let deferred = self.deferred_from();
        let written_below = self.emitted - (self.queue.len() - deferred) as u64;
        if deferred < self.queue.len() {
            let from = self.queue[deferred].first_offset;
            unconsumed = Some(unconsumed.map_or(from, |u: u64| u.min(from)));
            for _ in deferred..self.queue.len() {
                out.summary().skip(
                    summary_kind,
                    "the session is running and its last reply is not complete yet (a tool call's result, its usage); the next import brings it"
                        .into(),
                );
            }
            self.queue.truncate(deferred);
            // They wait with the deferred messages.
            waiting.clear();
        }
        self.flush(out, true);
        let open = std::mem::take(&mut self.open)
            .into_iter()
            .filter(|(_, (_, _, index))| *index < written_below)
            .map(|(id, (message, name, _))| (id, (message, name)))
            .collect();
        Ended {
            unconsumed,
            waiting,
            open,
            written_below,
        }
    }
}

pub(super) fn is_open(status: &ToolStatus) -> bool {
    matches!(status, ToolStatus::Pending | ToolStatus::Running)
}

fn has_open_calls(m: &Message) -> bool {
    m.completes().is_none() && m.tool_calls.iter().flatten().any(|c| is_open(&c.status))
}

/// Records after the last message, kept on the thread until a message
/// follows them (`metadata.import.waiting`).
pub(super) fn set_waiting(meta: &mut crate::atsf::ThreadMeta, waiting: Vec<Value>) {
    let import = meta
        .metadata_mut()
        .entry("import")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(map) = import {
        if waiting.is_empty() {
            map.remove(super::write::WAITING_KEY);
        } else {
            map.insert(super::write::WAITING_KEY.into(), Value::Array(waiting));
        }
    }
}

/// Tool calls across imports of one source.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Calls {
    /// Calls written open: call id → (message id, tool name). Their result,
    /// when a later import reads it, comes as a completion message.
    #[serde(default)]
    pub pending: BTreeMap<String, OpenCall>,
    /// Results read again after the cursor that were already joined to
    /// their call: (call id, offset of the result).
    #[serde(default)]
    pub joined: Vec<(String, u64)>,
}

impl Calls {
    /// Whether the result of call `id` was joined by an earlier import.
    pub fn already_joined(&self, id: &str) -> bool {
        self.joined.iter().any(|(j, _)| j == id)
    }
}

/// What one import did with calls, settled into [`Calls`] when it ends.
#[derive(Default)]
pub(super) struct CallLog {
    /// Pending calls of earlier imports completed: (call id, the call, offset).
    completed: Vec<(String, OpenCall, u64)>,
    /// Results joined: (call id, offset of the result, index of the message).
    joined: Vec<(String, u64, u64)>,
}

impl CallLog {
    /// The result of `id`, read at `offset`, joined to the message `index`.
    pub fn joined(&mut self, id: String, offset: u64, index: u64) {
        self.joined.push((id, offset, index));
    }

    /// Pending call `id` (from `calls`) completed by a record at `offset`.
    pub fn completed(&mut self, calls: &mut Calls, id: &str, offset: u64) -> Option<OpenCall> {
        let call = calls.pending.remove(id)?;
        self.completed.push((id.to_string(), call.clone(), offset));
        Some(call)
    }

    /// What the next import must know, from where this one stopped: calls
    /// written open, completions not written after all, results after the
    /// cursor already joined.
    pub fn settle(self, calls: &mut Calls, ended: &mut Ended) {
        let cut = ended.unconsumed.unwrap_or(u64::MAX);
        calls.pending.extend(std::mem::take(&mut ended.open));
        for (id, call, at) in self.completed {
            if at >= cut {
                calls.pending.insert(id, call);
            }
        }
        calls.joined.retain(|(_, at)| *at >= cut);
        calls.joined.extend(
            self.joined
                .into_iter()
                .filter(|(_, at, index)| *at >= cut && *index < ended.written_below)
                .map(|(id, at, _)| (id, at)),
        );
    }
}
