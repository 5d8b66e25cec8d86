//! Importers: other agent tools' conversations brought into ATSF threads.
//!
//! Every format is one file implementing [`Format`] — where its sources are
//! under a path, and how one source becomes threads — plus one line in
//! [`FORMATS`]. [`run`] does the rest for all of them: finding the sources,
//! importing each on its own, writing each thread where it belongs.
//!
//! Common rules, whatever the format:
//! - The source is only read.
//! - A new thread is built aside and moved into place whole.
//! - Importing again is incremental: the thread id is derived from the
//!   source's own id, message ids from the source's record ids, so only
//!   messages not yet in the thread are appended.
//! - Nothing is dropped: records an importer does not map travel with the
//!   message next to them or become `system` messages carrying the raw
//!   record; what cannot be stored as it is becomes a placeholder keeping the
//!   original. The summary counts, per kind, what was mapped, joined, kept
//!   raw or skipped (and why), and names every problem by `file:line`.
//! - One bad record never costs the rest, one bad source never costs the
//!   other sources.

pub mod amp;
pub mod claude;
pub mod codex;
mod common;
pub mod dagent;
pub mod hq;
pub mod sage;
mod tree;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use common::json_files;
pub(crate) use common::*;
pub use write::{locate, write};

use crate::atsf::{Message, ThreadMeta};
use crate::error::{Error, Result};
use crate::store::{Store, Thread};

/// A format grove imports.
pub trait Format: Sync {
    /// Its name on the command line (`claude`).
    fn name(&self) -> &'static str;

    /// One line saying what it reads, for `--help`.
    fn about(&self) -> &'static str;

    /// What a path of this format looks like: said when a path holds
    /// nothing importable.
    fn layout(&self) -> &'static str;

    /// The sources under `path` — files, or directories that hold one
    /// session each — each imported on its own. Empty when `path` holds
    /// nothing of this format.
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>>;

    /// Imports one source: its threads, with every record counted (and
    /// every problem named by `file:line`) in `summary`.
    fn import(&self, source: &Path, summary: &mut Summary) -> Result<Vec<ImportedThread>>;
}

/// Every format grove imports.
pub static FORMATS: &[&dyn Format] = &[
    &claude::Claude,
    &codex::Codex,
    &sage::Sage,
    &dagent::Dagent,
    &hq::Hq,
    &amp::Amp,
];

/// The format named `name`.
pub fn format(name: &str) -> Option<&'static dyn Format> {
    FORMATS.iter().copied().find(|f| f.name() == name)
}

/// A thread an importer produced, before it is written.
#[derive(Debug, Clone)]
pub struct ImportedThread {
    /// Id, title, times, agent, context, `metadata.import`, relationships,
    /// `mainThreadID`; stats are computed when written.
    pub meta: ThreadMeta,
    /// In order; each `id` is stable across imports of the same source.
    pub messages: Vec<Message>,
}

impl ImportedThread {
    /// A subagent thread or a fork: it goes along with its main thread.
    pub fn is_main(&self) -> bool {
        self.meta.main_thread_id.is_none() && self.meta.origin_thread_id.is_none()
    }
}

/// What an import did, for people and `--json`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub threads: Vec<ThreadOutcome>,
    /// Source records per kind: how many were mapped, joined, kept raw, skipped.
    pub records: BTreeMap<String, RecordCounts>,
    /// What could not be imported as it was, each naming its `file:line`
    /// (a malformed line, a placeholder, a session that was not imported).
    pub errors: Vec<String>,
}

/// Counts for one kind of source record.
#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordCounts {
    /// Became messages (or parts of one).
    pub mapped: u64,
    /// Joined into another message (a tool result into its call).
    pub joined: u64,
    /// Kept as a `system` message carrying the raw record.
    pub raw: u64,
    /// Not imported, with the reasons.
    pub skipped: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl Summary {
    pub(crate) fn count(&mut self, kind: &str) -> &mut RecordCounts {
        self.records.entry(kind.to_string()).or_default()
    }

    pub(crate) fn skip(&mut self, kind: &str, reason: String) {
        let c = self.count(kind);
        c.skipped += 1;
        if c.reasons.len() < 10 && !c.reasons.contains(&reason) {
            c.reasons.push(reason);
        }
    }

    /// Whether everything was imported: nothing malformed, nothing kept as
    /// a placeholder, no source or thread left out.
    pub fn complete(&self) -> bool {
        self.errors.is_empty()
    }
}

/// One thread written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadOutcome {
    pub thread_id: String,
    pub title: String,
    pub thread_dir: PathBuf,
    pub created: bool,
    pub messages_added: u64,
    pub message_count: u64,
}

/// Where imported threads go.
#[derive(Debug, Clone)]
pub enum Destination {
    /// Each thread into the `.agent/` of the worktree its session ran in
    /// (its `context.workingDir`) when that is one of `worktrees`, else into
    /// `default`.
    Route {
        default: PathBuf,
        worktrees: Vec<PathBuf>,
    },
    /// Every thread into the `.agent/` of this directory.
    Root(PathBuf),
    /// One session's messages appended to this existing thread.
    Into(Thread),
}

impl Destination {
    /// The project root a thread of `meta` goes to.
    fn root_for(&self, meta: &ThreadMeta) -> Option<PathBuf> {
        match self {
            Destination::Root(root) => Some(root.clone()),
            Destination::Route { default, worktrees } => {
                let cwd = Path::new(&meta.context.working_dir);
                Some(
                    worktrees
                        .iter()
                        .filter(|w| cwd.starts_with(w))
                        .max_by_key(|w| w.as_os_str().len())
                        .cloned()
                        .unwrap_or_else(|| default.clone()),
                )
            }
            Destination::Into(_) => None,
        }
    }
}

/// Imports every source of `format` under `paths` into `destination`. A
/// path with nothing of the format is an error naming the layout expected,
/// before anything is imported; after that, a source or a thread that cannot
/// be imported is named in [`Summary::errors`] and the others go on.
pub fn run(format: &dyn Format, paths: &[PathBuf], destination: &Destination) -> Result<Summary> {
    let mut sources = Vec::new();
    for path in paths {
        let found = if std::fs::symlink_metadata(path).is_err() {
            Vec::new()
        } else {
            format.sources(path)?
        };
        if found.is_empty() {
            return Err(Error::Other(format!(
                "{} holds nothing to import as {}: expected {}",
                path.display(),
                format.name(),
                format.layout()
            )));
        }
        sources.extend(found);
    }
    let mut summary = Summary::default();
    let mut threads = Vec::new();
    for source in &sources {
        match format.import(source, &mut summary) {
            Ok(found) => threads.extend(found),
            Err(e) => summary
                .errors
                .push(format!("{}: not imported: {e}", source.display())),
        }
    }
    if let Destination::Into(target) = destination {
        let mains: Vec<ImportedThread> = threads.into_iter().filter(|t| t.is_main()).collect();
        let [one] = <[ImportedThread; 1]>::try_from(mains).map_err(|mains| {
            Error::Other(format!(
                "--into takes one session; {} were found",
                mains.len()
            ))
        })?;
        let mut one = one;
        one.meta.thread_id = target.id().to_string();
        one.meta.relationships = None;
        let store = Store::at(
            target
                .dir()
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(".")),
        );
        let outcome = write::write(&store, one, &mut summary)?;
        summary.threads.push(outcome);
        return Ok(summary);
    }
    for thread in threads {
        let Some(root) = destination.root_for(&thread.meta) else {
            continue;
        };
        let meta = thread.meta.clone();
        match write::write(&Store::for_project(&root), thread, &mut summary) {
            Ok(outcome) => summary.threads.push(outcome),
            Err(e) => {
                let place = write::locate(&meta, &write::needle(&e, &meta))
                    .unwrap_or_else(|| format!("thread {}", meta.thread_id));
                summary.errors.push(format!("{place}: not imported: {e}"));
            }
        }
    }
    Ok(summary)
}
