//! Which conversation wrote a line: `grove blame` and `grove why`.
//!
//! A thread with turn snapshots answers **exactly**: the snapshots around
//! each tool call bound what that call changed, those between a turn's end
//! and the next prompt bound what the person changed, and a line of the
//! file is followed back through those changes to the step that introduced
//! it — by content, so a rebase (new commit ids, same lines) changes
//! nothing. A thread without snapshots (imported, or captured before they
//! existed) answers by **inference**: the text its tool calls wrote (edits'
//! new text, written files, patches' added lines) matched to the file.
//!
//! - `target`: the file asked about, refused outside the repository or
//!   through a symbolic link;
//! - `porcelain`: git's own blame, read from `git blame --porcelain`;
//! - `linediff`: which lines of one text are lines of another;
//! - `objects`: the snapshot chain, trees and blobs, ancestry;
//! - `steps`: a thread's snapshots in order and whose each change is;
//! - `origins`: each line of a file followed through the steps;
//! - `infer`: what tool calls wrote, matched to a file;
//! - `blame`: the answer for each line; `why`: the conversation behind one.

mod blame;
mod infer;
mod linediff;
mod objects;
mod origins;
mod porcelain;
mod steps;
mod target;
mod why;

use std::path::PathBuf;

use serde::Serialize;

pub use blame::{Blame, blame};
pub use why::{Call, Excerpt, Task, Why, why};

/// Whose a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Author {
    /// An agent, in a turn of a task's thread.
    Agent,
    /// A person: between turns, outside any task, or before the task.
    Person,
}

/// How an answer is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Basis {
    /// From turn snapshots: the line appeared between two of them.
    Exact,
    /// From tool calls' inputs matched to the file, or from no thread
    /// having seen the line written.
    Inferred,
}

/// Why a line is given to its author.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Reason {
    /// Between the snapshots around one tool call.
    ToolCall,
    /// In an agent's turn, between snapshots no tool call marks.
    Turn,
    /// A tool call's input wrote this text (inferred).
    ToolInput,
    /// Between the end of one turn and the next prompt.
    BetweenTurns,
    /// Not in the thread's last snapshot: written after it.
    AfterSnapshots,
    /// Already there at the thread's first snapshot.
    BeforeThread,
    /// No task's thread saw it written.
    NoTask,
}

impl Author {
    /// Its name in `--json`: `agent`, `person`.
    pub fn as_str(self) -> &'static str {
        match self {
            Author::Agent => "agent",
            Author::Person => "person",
        }
    }
}

impl Basis {
    /// Its name in `--json`: `exact`, `inferred`.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Exact => "exact",
            Basis::Inferred => "inferred",
        }
    }
}

impl Reason {
    /// Its name in `--json` (`toolCall`, `betweenTurns`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ToolCall => "toolCall",
            Reason::Turn => "turn",
            Reason::ToolInput => "toolInput",
            Reason::BetweenTurns => "betweenTurns",
            Reason::AfterSnapshots => "afterSnapshots",
            Reason::BeforeThread => "beforeThread",
            Reason::NoTask => "noTask",
        }
    }
}

/// One line's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineAnswer {
    /// 1-based line number in the file as it is now.
    pub line: usize,
    /// The line's text (its newline left out).
    pub content: String,
    /// The commit git's blame gives; `None` when not committed yet.
    pub commit: Option<String>,
    /// Who wrote it.
    pub author: Author,
    /// How that is known.
    pub basis: Basis,
    /// Why it is given to its author.
    pub reason: Reason,
    /// The thread whose snapshots or tool calls answered (`None`: none did).
    pub thread_id: Option<String>,
    /// That thread's title.
    pub title: Option<String>,
    /// Its task's branch.
    pub branch: Option<String>,
    /// The message behind the change: the tool call's, the turn's last
    /// reply, or (between turns) the prompt that followed.
    pub message_id: Option<String>,
    /// Its 0-based index in the thread (as `grove show` numbers them).
    pub message_index: Option<usize>,
    /// The index of the prompt of the turn (between turns: the next one).
    pub prompt_index: Option<usize>,
    /// The tool call that wrote it, as the agent names it.
    pub tool_call_id: Option<String>,
    /// The tool's name, as the agent gave it.
    pub tool: Option<String>,
}

/// Why a question about a file could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum AttributionError {
    /// The file is not inside the repository grove runs in.
    #[error("{} is outside the repository at {}", path.display(), root.display())]
    Outside { path: PathBuf, root: PathBuf },

    /// A symbolic link on the way to the file (the repository could point
    /// it anywhere).
    #[error(
        "{} goes through the symbolic link {}; grove answers for the repository's own files only",
        path.display(), link.display()
    )]
    Symlink { path: PathBuf, link: PathBuf },

    /// Not a regular file (missing, a directory, not UTF-8 in its name).
    #[error("{} is not a file of the repository: {reason}", path.display())]
    NotAFile { path: PathBuf, reason: String },

    /// A range of lines the file does not have.
    #[error("lines {start} to {end} were asked for, but {path} has {lines} line{}", if *lines == 1 { "" } else { "s" })]
    OutOfRange {
        path: String,
        start: usize,
        end: usize,
        lines: usize,
    },

    /// Outside any git repository.
    #[error("{} is not in a git repository", dir.display())]
    NoRepository { dir: PathBuf },

    /// Reading the file, git or the threads failed.
    #[error(transparent)]
    Grove(#[from] crate::Error),
}
