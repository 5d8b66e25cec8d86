//! The conversation behind one line: the prompt of the turn that wrote it,
//! the agent's words (and reasoning) around the tool call, the call itself,
//! and the task — from the thread `blame` names for the line.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::atsf::{ContentBlock, Message, Role};
use crate::project::Project;

use super::blame::{Known, blame_with_threads};
use super::{AttributionError, Author, LineAnswer};

/// How many of the agent's messages with words are shown on each side of
/// the one making the call.
const AROUND: usize = 1;

/// The conversation behind a line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Why {
    /// The file, relative to the worktree's root.
    pub path: String,
    /// The line's answer, as `blame` gives it.
    pub line: LineAnswer,
    /// The task the thread belongs to (`None`: no thread answered).
    pub task: Option<Task>,
    /// The prompt of the turn.
    pub prompt: Option<Excerpt>,
    /// The agent's messages around the call, in order (the call's own
    /// included).
    pub agent: Vec<Excerpt>,
    /// The tool call that wrote the line.
    pub tool_call: Option<Call>,
}

/// A thread's task.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The thread's id.
    pub thread_id: String,
    /// Its title.
    pub title: String,
    /// Its task's branch.
    pub branch: Option<String>,
    /// Where its agent worked.
    pub worktree: PathBuf,
}

/// One message, as far as the question needs it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Excerpt {
    /// 0-based, as `grove show` numbers them.
    pub index: usize,
    /// Its id.
    pub id: String,
    /// Who wrote it (`user`, `agent`, …).
    pub role: String,
    /// When.
    pub timestamp: String,
    /// Its text blocks.
    pub text: String,
    /// Its reasoning (thinking blocks), when it has any.
    pub reasoning: Option<String>,
}

/// A tool call, as the thread records it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    /// The call's id, as the agent gave it.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// How it ended (`completed`, `failed`, …).
    pub status: String,
    /// Its input, as recorded (JSON text for most agents).
    pub input: Option<String>,
}

/// The conversation behind line `line` (1-based) of `file`.
pub fn why(project: &Project, file: &Path, line: usize) -> Result<Why, AttributionError> {
    let (mut blame, known) = blame_with_threads(project, file, Some((line, line)))?;
    let Some(answer) = blame.lines.pop() else {
        return Err(AttributionError::OutOfRange {
            path: blame.path,
            start: line,
            end: line,
            lines: 0,
        });
    };
    let thread = answer
        .thread_id
        .as_ref()
        .and_then(|id| known.iter().find(|k| &k.meta.thread_id == id));
    let mut why = Why {
        path: blame.path,
        task: thread.map(|k| Task {
            thread_id: k.meta.thread_id.clone(),
            title: k.meta.title.clone(),
            branch: k.branch.clone(),
            worktree: k.root.clone(),
        }),
        prompt: None,
        agent: Vec::new(),
        tool_call: None,
        line: answer,
    };
    if let (Some(k), Author::Agent) = (thread, why.line.author) {
        conversation(k, &mut why)?;
    }
    Ok(why)
}

/// The prompt, the agent's words and the call, read from `k`'s messages.
fn conversation(k: &Known, why: &mut Why) -> crate::Result<()> {
    let Some(at) = why.line.message_index else {
        return Ok(());
    };
    let from = why.line.prompt_index.unwrap_or(at).min(at);
    let mut before: Vec<Excerpt> = Vec::new();
    let mut after: Vec<Excerpt> = Vec::new();
    for (index, item) in k.thread.messages()?.enumerate() {
        if index < from {
            continue;
        }
        let Ok(m) = item else { continue };
        if Some(index) == why.line.prompt_index {
            why.prompt = Some(excerpt(index, &m));
            continue;
        }
        if index > at && m.role == Role::User && !m.text().is_empty() {
            // The next turn.
            break;
        }
        if index == at {
            why.tool_call = why.line.tool_call_id.as_ref().and_then(|id| {
                m.tool_calls
                    .iter()
                    .flatten()
                    .find(|c| &c.tool_call_id == id)
                    .map(|c| Call {
                        tool_call_id: c.tool_call_id.clone(),
                        name: c.name.clone(),
                        status: c.status.as_str().to_string(),
                        input: c.input.clone(),
                    })
            });
            before.push(excerpt(index, &m));
            continue;
        }
        if m.role != Role::Agent || !has_words(&m) {
            continue;
        }
        if index < at {
            before.push(excerpt(index, &m));
        } else if after.len() < AROUND {
            after.push(excerpt(index, &m));
        } else {
            break;
        }
    }
    let keep = before.len().saturating_sub(AROUND + 1);
    why.agent = before.split_off(keep);
    why.agent.extend(after);
    Ok(())
}

fn has_words(m: &Message) -> bool {
    m.content
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { text, .. } | ContentBlock::Thinking { text, .. } if !text.trim().is_empty()))
}

fn excerpt(index: usize, m: &Message) -> Excerpt {
    let thinking: Vec<&str> = m
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Excerpt {
        index,
        id: m.id.clone(),
        role: m.role.as_str().to_string(),
        timestamp: m.timestamp.clone(),
        text: m.text(),
        reasoning: (!thinking.is_empty()).then(|| thinking.join("\n")),
    }
}
