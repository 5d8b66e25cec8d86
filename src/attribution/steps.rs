//! A thread's snapshots in the order taken, and whose each change between
//! two of them is: the change up to a tool call's snapshot is that call's;
//! up to a turn's end, the agent's turn's; up to a prompt, the person's
//! (what changed between the last turn and this one).
//!
//! The records come from the thread's messages (`metadata.grove.snapshots`)
//! and, last, those still waiting in `thread.json`. A record is used only
//! when the thread's own chain (`refs/grove/snapshots/<id>`) holds its
//! commit with its tree: a thread pulled from elsewhere names no tree of
//! this repository it does not own.

use std::collections::HashMap;

use crate::atsf::{Message, Role};
use crate::error::Result;
use crate::snapshot::{At, Record, record};
use crate::store::Thread;

/// A message of the thread, by position and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    /// 0-based, as `grove show` numbers them.
    pub index: usize,
    /// Its id.
    pub id: String,
}

/// Whose a change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The agent, in a turn.
    Agent,
    /// The person, between turns.
    Person,
}

/// The change between one snapshot and the next.
#[derive(Debug, Clone)]
pub struct Step {
    /// Whose it is.
    pub owner: Owner,
    /// Set for the change a tool call made.
    pub tool_call_id: Option<String>,
    /// That call's tool.
    pub tool: Option<String>,
    /// The message behind it: the tool call's; the turn's last reply; the
    /// prompt that followed the person's change.
    pub message: Option<MessageRef>,
    /// The prompt of the turn (for the person's change: the next one).
    pub prompt: Option<MessageRef>,
}

/// A thread's snapshots: `trees[0]` is the first, and `steps[k]` the change
/// from `trees[k]` to `trees[k + 1]`.
#[derive(Debug, Clone, Default)]
pub struct Steps {
    /// Each snapshot's tree, in order.
    pub trees: Vec<String>,
    /// The changes between them.
    pub steps: Vec<Step>,
}

impl Steps {
    /// Whether the thread has a snapshot at all.
    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }
}

/// What of the messages the steps need.
#[derive(Default)]
struct Log {
    /// (record, the message carrying it; `None`: still pending).
    points: Vec<(Record, Option<MessageRef>)>,
    /// Each tool call's message.
    calls: HashMap<String, MessageRef>,
    /// The agent's messages (completions aside), in order.
    replies: Vec<MessageRef>,
}

/// The steps of `thread`, whose chain holds `chain` (commit → tree).
pub fn of_thread(thread: &Thread, chain: &HashMap<String, String>) -> Result<Steps> {
    if chain.is_empty() {
        return Ok(Steps::default());
    }
    let mut log = Log::default();
    for (index, item) in thread.messages()?.enumerate() {
        // A line that cannot be read keeps its number and answers nothing.
        let Ok(message) = item else { continue };
        read_message(&mut log, index, &message);
    }
    for value in record::pending(&thread.meta()?) {
        if let Ok(r) = serde_json::from_value::<Record>(value) {
            log.points.push((r, None));
        }
    }
    log.points
        .retain(|(r, _)| chain.get(&r.commit).is_some_and(|tree| *tree == r.tree));
    Ok(build(&log))
}

fn read_message(log: &mut Log, index: usize, message: &Message) {
    let this = || MessageRef {
        index,
        id: message.id.clone(),
    };
    for r in record::of_message(message) {
        log.points.push((r, Some(this())));
    }
    if message.completes().is_none() {
        for call in message.tool_calls.iter().flatten() {
            log.calls
                .entry(call.tool_call_id.clone())
                .or_insert_with(this);
        }
    }
    if message.role == Role::Agent && message.completes().is_none() {
        log.replies.push(this());
    }
}

fn build(log: &Log) -> Steps {
    let mut out = Steps::default();
    let mut prompt: Option<MessageRef> = None;
    for (k, (r, carried)) in log.points.iter().enumerate() {
        if k > 0 {
            let step = match r.at {
                At::ToolCall => Step {
                    owner: Owner::Agent,
                    tool_call_id: r.tool_call_id.clone(),
                    tool: r.tool.clone(),
                    message: r
                        .tool_call_id
                        .as_ref()
                        .and_then(|c| log.calls.get(c).cloned())
                        .or_else(|| carried.clone()),
                    prompt: prompt.clone(),
                },
                At::TurnEnd => Step {
                    owner: Owner::Agent,
                    tool_call_id: None,
                    tool: None,
                    message: last_reply(log, carried.as_ref().map(|m| m.index)),
                    prompt: prompt.clone(),
                },
                At::Prompt => Step {
                    owner: Owner::Person,
                    tool_call_id: None,
                    tool: None,
                    message: carried.clone(),
                    prompt: carried.clone(),
                },
            };
            out.steps.push(step);
        }
        if r.at == At::Prompt {
            prompt = carried.clone();
        }
        out.trees.push(r.tree.clone());
    }
    out
}

/// The agent's last reply at or before message `at` (the end of a turn is
/// carried by its final reply or by the next prompt); the last of all
/// for a pending end.
fn last_reply(log: &Log, at: Option<usize>) -> Option<MessageRef> {
    log.replies
        .iter()
        .rev()
        .find(|r| at.is_none_or(|at| r.index <= at))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(index: usize) -> MessageRef {
        MessageRef {
            index,
            id: format!("m{index}"),
        }
    }

    fn point(at_: At, tree: &str, call: Option<&str>) -> Record {
        serde_json::from_value(serde_json::json!({
            "tree": tree, "commit": "c", "at": at_.as_str(), "toolCallId": call,
            "takenAt": "2026-01-01T00:00:00.000Z"
        }))
        .unwrap()
    }

    #[test]
    fn a_tool_call_s_change_is_its_call_s_a_turn_s_end_the_agent_s_and_a_prompt_s_the_person_s() {
        let log = Log {
            points: vec![
                (point(At::Prompt, "t0", None), Some(at(0))),
                (point(At::ToolCall, "t1", Some("call")), Some(at(2))),
                (point(At::TurnEnd, "t2", None), Some(at(3))),
                (point(At::Prompt, "t3", None), Some(at(4))),
                (point(At::TurnEnd, "t4", None), None),
            ],
            calls: [("call".to_string(), at(1))].into_iter().collect(),
            replies: vec![at(1), at(3), at(5)],
        };
        let steps = build(&log);
        assert_eq!(steps.trees, ["t0", "t1", "t2", "t3", "t4"]);
        let s = &steps.steps;
        assert_eq!(s.len(), 4);
        assert_eq!(
            (s[0].owner, s[0].tool_call_id.as_deref()),
            (Owner::Agent, Some("call"))
        );
        assert_eq!(s[0].message, Some(at(1)), "the message making the call");
        assert_eq!(s[0].prompt, Some(at(0)));
        assert_eq!(
            (s[1].owner, s[1].message.clone()),
            (Owner::Agent, Some(at(3)))
        );
        assert_eq!(s[2].owner, Owner::Person);
        assert_eq!(
            (s[2].message.clone(), s[2].prompt.clone()),
            (Some(at(4)), Some(at(4)))
        );
        assert_eq!(s[3].message, Some(at(5)), "a pending end: the last reply");
        assert_eq!(s[3].prompt, Some(at(4)));
    }
}
