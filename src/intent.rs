//! Intent recorded before acting, so a grove process killed at any
//! instruction leaves only what the next `grove gc` recognises and finishes
//! or undoes (git does the same with `index.lock` and `worktrees/<name>/locked`).
//!
//! Each grove process that is about to make something it could leave behind
//! (a staging directory, a worktree, a trash directory, a link between two
//! threads, a removal) opens one journal, `<data dir>/intents/<id>.jsonl`,
//! and holds an exclusive lock on it for as long as it lives. Every step is
//! written there before it is taken (`{"step": n, "op": …}`) and marked
//! done after (`{"done": n}`); the journal is deleted when the process ends
//! with every step done. A journal nobody holds the lock on belongs to a
//! process that is gone: its undone steps are the leftovers `gc` reports.
//!
//! The journal is not fsynced: it guards against a killed process, whose
//! writes the kernel keeps, and git's own checkout next to it is not synced
//! either.

use std::fs::File;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::atsf::Relationship;
use crate::error::{Error, IoContext, Result};
use crate::fsutil;

/// One step a process is about to take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Action {
    /// A thread being built in this directory, renamed into place when whole.
    Stage { dir: PathBuf },
    /// A directory renamed aside to be deleted.
    Trash { dir: PathBuf },
    /// `git worktree add`: a task's worktree, its branch, then its thread in
    /// `thread_dir`. Without the thread, the worktree and (when grove made
    /// it and it still points at `base_commit`) the branch are leftovers.
    #[serde(rename_all = "camelCase")]
    Worktree {
        repo: PathBuf,
        path: PathBuf,
        branch: String,
        created_branch: bool,
        base_commit: String,
        thread_dir: PathBuf,
    },
    /// `grove rm` past its checks, the threads saved in the cache: the
    /// worktree is being removed, then `branch` deleted if it still points
    /// at `branch_tip`.
    #[serde(rename_all = "camelCase")]
    Remove {
        repo: PathBuf,
        worktree: PathBuf,
        /// Cache directories of the worktree's threads, to mark removed.
        cached: Vec<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch_tip: Option<String>,
    },
    /// `grove merge` moving `target_ref` from `old` to `new` (a
    /// compare-and-swap), then bringing `checkout`, where the target is
    /// checked out, along: the files the merge changes go from `old` to `new`.
    #[serde(rename_all = "camelCase")]
    Land {
        repo: PathBuf,
        checkout: PathBuf,
        target_ref: String,
        old: String,
        new: String,
    },
    /// A child thread published in `child`; `parent` gets `relationship`.
    Link {
        parent: PathBuf,
        child: PathBuf,
        relationship: Relationship,
    },
    /// `grove delete` past its checks and the user's confirmation: these
    /// thread directories and cache entries go, and the relationship entries
    /// other threads hold for `ids` are removed.
    #[serde(rename_all = "camelCase")]
    Delete {
        ids: Vec<String>,
        threads: Vec<PathBuf>,
        cache: Vec<PathBuf>,
        relinked: Vec<PathBuf>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Step {
        step: u64,
        #[serde(flatten)]
        action: Action,
    },
    Done {
        done: u64,
    },
}

struct Journal {
    file: File,
    path: PathBuf,
    next: u64,
    open: u64,
}

static JOURNAL: Mutex<Option<Journal>> = Mutex::new(None);

/// `<data dir>/intents`.
pub fn dir() -> Result<PathBuf> {
    Ok(crate::home::data_dir()?.join("intents"))
}

/// A step recorded in this process's journal; [`Step::done`] marks it taken.
/// Dropped without `done` (an error on the way), it stays open and the
/// journal is kept for `gc`, unless the caller undid it and said so with
/// [`Step::undone`].
#[derive(Debug)]
#[must_use]
pub struct Step {
    id: u64,
}

impl Step {
    /// The step is complete: nothing of it is left to finish or undo.
    pub fn done(self) {
        mark_done(self.id);
    }

    /// The step was undone by its own process (a rollback): same as done.
    pub fn undone(self) {
        mark_done(self.id);
    }
}

/// Records `action` before it is taken.
pub fn begin(action: Action) -> Result<Step> {
    let mut guard = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(open_journal()?);
    }
    let Some(journal) = guard.as_mut() else {
        return Err(Error::Other(
            "the intent journal could not be opened".into(),
        ));
    };
    journal.next += 1;
    let id = journal.next;
    let line = Line::Step { step: id, action };
    write_line(journal, &line)?;
    journal.open += 1;
    Ok(Step { id })
}

fn mark_done(id: u64) {
    let mut guard = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(journal) = guard.as_mut()
        && write_line(journal, &Line::Done { done: id }).is_ok()
    {
        journal.open = journal.open.saturating_sub(1);
    }
}

fn write_line(journal: &mut Journal, line: &Line) -> Result<()> {
    let mut bytes =
        serde_json::to_vec(line).map_err(|e| Error::Other(format!("cannot record intent: {e}")))?;
    bytes.push(b'\n');
    journal
        .file
        .write_all(&bytes)
        .ctx("recording intent in", &journal.path)
}

fn open_journal() -> Result<Journal> {
    let dir = dir()?;
    std::fs::create_dir_all(&dir).ctx("creating", &dir)?;
    // Made and locked under another name, then renamed: a journal is never
    // seen unlocked while its process lives (another process would take it
    // for a dead one's).
    let id = uuid::Uuid::new_v4();
    let making = dir.join(format!("{}-{id}.new", std::process::id()));
    let path = dir.join(format!("{id}.jsonl"));
    let file = fsutil::create_new(&making)?;
    file.lock().ctx("locking", &making)?;
    std::fs::rename(&making, &path).ctx("naming", &path)?;
    Ok(Journal {
        file,
        path,
        next: 0,
        open: 0,
    })
}

/// Called when the process ends: the journal goes when every step is done,
/// and stays (unlocked, for `gc`) otherwise.
pub fn close() {
    let mut guard = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(journal) = guard.take()
        && journal.open == 0
    {
        let _ = std::fs::remove_file(&journal.path);
    }
}

/// The journal of a process that is gone, with its steps not marked done.
/// Holds the journal's lock: no other `gc` works on it meanwhile.
#[derive(Debug)]
pub struct Leftover {
    pub journal: PathBuf,
    /// Steps recorded and not done, oldest first.
    pub steps: Vec<Action>,
    /// The journal's lines that could not be read (a torn last line is not one).
    pub errors: Vec<String>,
    _lock: File,
}

impl Leftover {
    /// Deletes the journal once its steps are dealt with.
    pub fn finish(self) -> Result<()> {
        match std::fs::remove_file(&self.journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("removing", &self.journal, e))
            }
            _ => Ok(()),
        }
    }
}

/// The journals of processes that are gone (their lock is free). The
/// current process's own journal is locked by this process and is skipped.
pub fn leftovers() -> Result<Vec<Leftover>> {
    let dir = dir()?;
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let own = JOURNAL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|j| j.path.clone());
    let mut out = Vec::new();
    let entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    remove_unnamed_journals(&entries);
    let mut paths: Vec<PathBuf> = entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| Some(p) != own.as_ref())
        .collect();
    paths.sort();
    for path in paths {
        let Ok(file) = fsutil::open_append(&path, false) else {
            continue;
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(_) => continue,
        }
        let (steps, errors) = read_journal(&path)?;
        out.push(Leftover {
            journal: path,
            steps,
            errors,
            _lock: file,
        });
    }
    Ok(out)
}

/// Journals a process made and was killed before naming
/// (`<pid>-<id>.new`): nothing was recorded in them yet. One whose process
/// still lives is about to be named.
fn remove_unnamed_journals(entries: &[PathBuf]) {
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "new"))
    {
        let pid = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        if pid.is_none_or(|pid| !process_lives(pid))
            && let Ok(file) = fsutil::open_append(path, false)
            && file.try_lock().is_ok()
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(unix)]
fn process_lives(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // EPERM: it lives, under another user.
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

#[cfg(not(unix))]
fn process_lives(_pid: u32) -> bool {
    true
}

fn read_journal(path: &Path) -> Result<(Vec<Action>, Vec<String>)> {
    let file = fsutil::open_read(path)?;
    let mut steps: Vec<(u64, Action)> = Vec::new();
    let mut errors = Vec::new();
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ctx("reading", path)?;
        if n == 0 || line.last() != Some(&b'\n') {
            // A torn last line: the process died writing it, before acting.
            break;
        }
        number += 1;
        match serde_json::from_slice::<Line>(&line) {
            Ok(Line::Step { step, action }) => steps.push((step, action)),
            Ok(Line::Done { done }) => steps.retain(|(id, _)| *id != done),
            Err(e) => errors.push(format!("{}:{number}: {e}", path.display())),
        }
    }
    Ok((steps.into_iter().map(|(_, a)| a).collect(), errors))
}
