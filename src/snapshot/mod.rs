//! Turn snapshots: the worktree's content recorded as a git tree at each
//! boundary of an agent's turn that capture sees — a prompt submitted, a
//! tool that may change files run, the turn's end. Changes between a
//! turn's prompt and its end are the agent's (each tool call's between the
//! snapshots around it); changes between one turn's end and the next
//! prompt are the person's.
//!
//! - [`tree`]: the tree, written through an index of grove's own (the
//!   user's index, working tree, stash and HEAD are never written);
//! - [`chain`]: the ref per thread, `refs/grove/snapshots/<threadId>`,
//!   whose commits keep every snapshot's objects alive and travel with
//!   `grove push`/`pull`;
//! - [`record`]: what the thread records of each snapshot, on its messages.

pub mod chain;
pub mod record;
pub mod tree;

use std::path::{Path, PathBuf};

pub use chain::REF_PREFIX;
pub use record::{At, Record};

use crate::error::Result;
use crate::git::Git;
use crate::store::Thread;

/// What a snapshot is taken for, beside its boundary.
#[derive(Debug, Clone, Default)]
pub struct Moment {
    pub tool_call_id: Option<String>,
    pub tool: Option<String>,
    pub session_id: Option<String>,
}

/// Snapshots the worktree at `root` for `thread` (whose files are left
/// out of it) at boundary `at`: the tree, added to the thread's chain. The
/// thread records nothing yet (see [`pend`]).
pub fn take(root: &Path, thread: &Thread, at: At, moment: &Moment) -> Result<Record> {
    let git = Git::find()?;
    let tree = tree::write_tree(&git, root, &excluded(root, thread))?;
    let head = crate::git::open(root)
        .and_then(|repo| repo.head().ok()?.target())
        .map(|oid| oid.to_string());
    let name = chain::ref_name(thread.id().as_str());
    let commit = chain::extend(&git, root, &name, &tree, &message(thread, at, moment))?;
    Ok(Record {
        tree,
        commit,
        at,
        tool_call_id: moment.tool_call_id.clone(),
        tool: moment.tool.clone(),
        session_id: moment.session_id.clone(),
        head,
        taken_at: crate::atsf::now_timestamp(),
        extra: Default::default(),
    })
}

/// Records `record` in `thread.json`, for the next message capture
/// appends to carry.
pub fn pend(thread: &Thread, record: &Record) -> Result<()> {
    thread.update_meta(|meta| record::add_pending(meta, record))?;
    Ok(())
}

/// What of the worktree at `root` is no snapshot's: the threads of the
/// `.agent/` holding `thread`, and grove's working area beside them.
fn excluded(root: &Path, thread: &Thread) -> Vec<PathBuf> {
    let dir = thread
        .dir()
        .canonicalize()
        .unwrap_or_else(|_| thread.dir().to_path_buf());
    let Some(threads) = dir.parent() else {
        return Vec::new();
    };
    let Some(agent) = threads.parent() else {
        return Vec::new();
    };
    [threads.to_path_buf(), agent.join(crate::store::PRIVATE_DIR)]
        .iter()
        .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
        .collect()
}

/// The snapshot commit's message: what it marks, for a person reading
/// `git log refs/grove/snapshots/<id>` (the thread's record is the data).
fn message(thread: &Thread, at: At, moment: &Moment) -> String {
    let mut text = format!(
        "grove snapshot: {}\n\nThread: {}\n",
        at.as_str(),
        thread.id()
    );
    let fields = [
        ("Session", &moment.session_id),
        ("Tool-Call", &moment.tool_call_id),
        ("Tool", &moment.tool),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            // An agent's words: one line each, whatever they hold.
            let clean: String = value
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            text.push_str(&format!("{key}: {clean}\n"));
        }
    }
    text
}
