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
mod cursor;
pub mod dagent;
pub mod gemini;
pub mod hq;
mod lines;
pub mod opencode;
pub mod sage;
mod stream;
mod tree;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use common::json_files;
pub(crate) use common::*;
pub use cursor::{Resumable, Resume};
pub use write::{Sink, ThreadHandle, import_offset, locate};

use crate::atsf::{Message, ThreadMeta};
use crate::error::{Error, Result};
use crate::store::Thread;

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

    /// Where the agent keeps the sessions run in `roots` (a project's
    /// worktrees) on this machine, its own variables for its home honoured:
    /// what `grove import FORMAT` reads when given no path. A place may hold
    /// other projects' sessions too (the import leaves those out). Empty:
    /// the format has no such place.
    fn default_paths(&self, _roots: &[PathBuf]) -> Vec<PathBuf> {
        Vec::new()
    }

    /// How far a source can be resumed by the next import.
    fn resumable(&self) -> Resumable {
        Resumable::No
    }

    /// Imports one source into `out`: its threads begun, fed and finished,
    /// every record counted (and every problem named by `file:line`) in
    /// `out.summary()`. With `from` (a [`Resumable::Lines`] format), only
    /// what follows `from.offset` is read; [`Error::Restart`] asks for the
    /// whole source instead. Returns where the next import may go on.
    fn import(
        &self,
        source: &Path,
        from: Option<&Resume>,
        out: &mut Sink,
    ) -> Result<Option<Resume>>;
}

/// For a format whose sources are read whole into threads: writes every
/// thread `read` gives. There is nothing to resume.
pub(crate) fn write_all<T: IntoIterator<Item = ImportedThread>>(
    out: &mut Sink,
    read: impl FnOnce(&mut Summary) -> Result<T>,
) -> Result<Option<Resume>> {
    for thread in read(out.summary())? {
        out.thread(thread)?;
    }
    Ok(None)
}

/// Every format grove imports.
pub static FORMATS: &[&dyn Format] = &[
    &claude::Claude,
    &codex::Codex,
    &sage::Sage,
    &dagent::Dagent,
    &hq::Hq,
    &amp::Amp,
    &gemini::Gemini,
    &opencode::OpenCode,
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
    /// How each source was read.
    pub sources: Vec<SourceOutcome>,
    /// Source records per kind: how many were mapped, joined, kept raw, skipped.
    pub records: BTreeMap<String, RecordCounts>,
    /// What could not be imported as it was, each naming its `file:line`
    /// (a malformed line, a placeholder, a session that was not imported).
    pub errors: Vec<String>,
}

/// How one source was read.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceOutcome {
    pub path: PathBuf,
    /// `whole` (from its start), `tail` (only what follows the last
    /// import), or `unchanged` (nothing new since: not read).
    pub read: &'static str,
    /// Where reading started (bytes).
    pub from: u64,
    /// Where the next import will start, when the source can be resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<u64>,
    /// Why the whole source was read although a cursor existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<String>,
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

/// What a summary held before an attempt at a source: an attempt that
/// restarts is taken back, so only the last one is reported.
struct Mark {
    threads: usize,
    errors: usize,
    records: BTreeMap<String, RecordCounts>,
}

impl Summary {
    fn mark(&self) -> Mark {
        Mark {
            threads: self.threads.len(),
            errors: self.errors.len(),
            records: self.records.clone(),
        }
    }

    fn rewind(&mut self, mark: &Mark) {
        self.threads.truncate(mark.threads);
        self.errors.truncate(mark.errors);
        self.records = mark.records.clone();
    }

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
        /// Leave out the sessions run elsewhere (their working directory in
        /// none of `worktrees`): an import of an agent's whole store, found
        /// by default, takes only this project's.
        only_these: bool,
    },
    /// Every thread into the `.agent/` of this directory.
    Root(PathBuf),
    /// One session's messages appended to this existing thread.
    Into(Thread),
    /// One agent session captured into a task's thread, incrementally: the
    /// session's main conversation goes into the thread, its subagent
    /// threads beside it (as the thread's subagents).
    Capture(Capture),
}

/// Where [`Destination::Capture`] puts a session.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The task's thread.
    pub thread: Thread,
    /// The agent's session id: the thread keeps what the next capture of
    /// this session needs under `metadata.capture.sessions[]`.
    pub session: String,
    /// The id the format gives the session's main thread (`claude-<id>`):
    /// references to it from subagent threads now name the task's thread.
    pub source_id: String,
}

impl Capture {
    /// The project root whose `.agent/` holds the task's thread.
    fn root(&self) -> Option<PathBuf> {
        Some(
            self.thread
                .dir()
                .parent()?
                .parent()?
                .parent()?
                .to_path_buf(),
        )
    }
}

impl Destination {
    /// The project root a thread of `meta` goes to.
    fn root_for(&self, meta: &ThreadMeta) -> Option<PathBuf> {
        match self {
            Destination::Root(root) => Some(root.clone()),
            Destination::Route {
                default,
                worktrees,
                only_these,
            } => {
                let cwd = Path::new(&meta.context.working_dir);
                let within = worktrees
                    .iter()
                    .chain(std::iter::once(default))
                    .filter(|w| cwd.starts_with(w))
                    .max_by_key(|w| w.as_os_str().len())
                    .cloned();
                match within {
                    Some(root) => Some(root),
                    // A thread that names no directory (a subagent's) goes
                    // with the project.
                    None if !*only_these || meta.context.working_dir.is_empty() => {
                        Some(default.clone())
                    }
                    None => None,
                }
            }
            Destination::Into(_) => None,
            Destination::Capture(c) => c.root(),
        }
    }

    /// Names where threads go, for the cursor of a source.
    fn key(&self) -> Option<String> {
        match self {
            Destination::Route {
                default, worktrees, ..
            } => Some(format!(
                "route\0{}\0{}",
                default.display(),
                worktrees
                    .iter()
                    .map(|w| w.display().to_string())
                    .collect::<Vec<_>>()
                    .join("\0")
            )),
            Destination::Root(root) => Some(format!("root\0{}", root.display())),
            // Messages from several sources may share the thread: no cursor.
            Destination::Into(_) => None,
            // One cursor per session and thread: the thread keeps each
            // session's offset apart.
            Destination::Capture(c) => Some(format!(
                "capture\0{}\0{}",
                c.thread.dir().display(),
                c.session
            )),
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
    if matches!(destination, Destination::Into(_)) && sources.len() > 1 {
        return Err(Error::Other(format!(
            "--into takes one session; {} sources were found (give one file)",
            sources.len()
        )));
    }
    let mut summary = Summary::default();
    for source in &sources {
        if let Err(e) = import_source(format, source, destination, &mut summary) {
            summary
                .errors
                .push(format!("{}: not imported: {e}", source.display()));
        }
    }
    Ok(summary)
}

/// How many times a source is read when other imports of it keep
/// publishing its threads first.
const MAX_TRIES: usize = 5;

/// Imports one source, from where the last import stopped when it can.
fn import_source(
    format: &dyn Format,
    source: &Path,
    destination: &Destination,
    summary: &mut Summary,
) -> Result<()> {
    let key = destination.key();
    let resumable = match &key {
        Some(_) if source.is_file() => format.resumable(),
        _ => Resumable::No,
    };
    let cursor = match (resumable, key) {
        (Resumable::No, _) | (_, None) => None,
        (_, Some(key)) => Some(cursor::Cursor::of(format.name(), source, &key)?),
    };
    let valid = cursor.as_ref().and_then(cursor::Cursor::load);
    if let Some(v) = &valid
        && v.len == v.resume.offset
    {
        summary.sources.push(SourceOutcome {
            path: source.to_path_buf(),
            read: "unchanged",
            from: v.len,
            next: Some(v.len),
            restarted: None,
        });
        return unchanged(&v.threads, summary);
    }
    let errors_before = summary.errors.len();
    let from = valid
        .as_ref()
        .filter(|_| resumable == Resumable::Lines)
        .map(|v| v.resume.clone());
    let mark = summary.mark();
    // Measured before it is read: what the agent writes meanwhile may not
    // have been read, and must not count as taken.
    let len_before = std::fs::metadata(source).map_or(0, |m| m.len());
    let mut attempt = attempt(format, source, destination, summary, from.as_ref());
    let mut tries = 1;
    let mut started = valid.filter(|_| from.is_some());
    let mut restarted = None;
    // Another import publishing first is progress, so tries converge; each
    // retry starts from the summary as it was, or an attempt taken back
    // would be reported beside the one that counts.
    while let Err(Error::Restart(why)) = &attempt
        && tries < MAX_TRIES
    {
        restarted = Some(why.clone());
        started = None;
        tries += 1;
        summary.rewind(&mark);
        attempt = self::attempt(format, source, destination, summary, None);
    }
    let (resume, mut written) = attempt?;
    summary.sources.push(SourceOutcome {
        path: source.to_path_buf(),
        read: if started.is_some() { "tail" } else { "whole" },
        from: started.as_ref().map_or(0, |v| v.resume.offset),
        next: resume.as_ref().map(|r| r.offset),
        restarted,
    });
    let Some(cursor) = cursor else {
        return Ok(());
    };
    let failed = summary.errors[errors_before..]
        .iter()
        .any(|e| e.contains("not imported"));
    if let Some(v) = &started {
        // A set: a source may have hundreds of threads (Claude Code 1.0's
        // sidechains), compared path by path they cost more than the import.
        let mut known: std::collections::HashSet<PathBuf> = written.iter().cloned().collect();
        for t in &v.threads {
            if known.insert(t.clone()) {
                written.push(t.clone());
            }
        }
    }
    let resume = match (resume, resumable) {
        (Some(resume), _) => Some(resume),
        (None, Resumable::WholeFile) => Some(Resume {
            offset: len_before,
            ..Resume::default()
        }),
        (None, _) => None,
    };
    match resume {
        Some(resume) if !failed => cursor.save(started, resume, written),
        _ => {
            cursor.forget();
            Ok(())
        }
    }
}

/// One pass over `source`, from `from` when given: its result and the
/// threads it wrote. On failure nothing unfinished is written.
fn attempt(
    format: &dyn Format,
    source: &Path,
    destination: &Destination,
    summary: &mut Summary,
    from: Option<&Resume>,
) -> Result<(Option<Resume>, Vec<PathBuf>)> {
    let mut out = Sink::new(destination, summary, source, from.map(|r| r.offset));
    match format.import(source, from, &mut out) {
        Ok(resume) => Ok((resume, out.written().to_vec())),
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}

/// A source unchanged since its last import: its threads, as they are.
fn unchanged(threads: &[PathBuf], summary: &mut Summary) -> Result<()> {
    for dir in threads {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let thread = Thread::at(crate::store::ThreadId::parse(&id)?, dir.clone());
        let meta = thread.meta()?;
        summary.threads.push(ThreadOutcome {
            thread_id: id,
            title: meta.title,
            thread_dir: dir.clone(),
            created: false,
            messages_added: 0,
            message_count: meta.stats.message_count,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A format whose first import of a source meets another import's
    /// thread (a restart), after naming a bad line and counting a record;
    /// the second goes through.
    struct RestartsOnce(std::sync::atomic::AtomicUsize);

    impl Format for RestartsOnce {
        fn name(&self) -> &'static str {
            "test"
        }
        fn about(&self) -> &'static str {
            ""
        }
        fn layout(&self) -> &'static str {
            ""
        }
        fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
            Ok(vec![path.to_path_buf()])
        }
        fn import(
            &self,
            source: &Path,
            _from: Option<&Resume>,
            out: &mut Sink,
        ) -> Result<Option<Resume>> {
            let summary = out.summary();
            summary
                .errors
                .push(format!("{}:1: bad line", source.display()));
            summary.count("record").mapped += 1;
            if self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                return Err(Error::Restart(
                    "published by another import meanwhile".into(),
                ));
            }
            Ok(None)
        }
    }

    /// A format read whole whose source grows while it is read (an agent
    /// writing its session meanwhile).
    struct GrowsWhileRead;

    impl Format for GrowsWhileRead {
        fn name(&self) -> &'static str {
            "grows"
        }
        fn about(&self) -> &'static str {
            ""
        }
        fn layout(&self) -> &'static str {
            ""
        }
        fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
            Ok(vec![path.to_path_buf()])
        }
        fn resumable(&self) -> Resumable {
            Resumable::WholeFile
        }
        fn import(
            &self,
            source: &Path,
            _from: Option<&Resume>,
            out: &mut Sink,
        ) -> Result<Option<Resume>> {
            let read = std::fs::read_to_string(source).unwrap();
            out.summary().count("line").mapped += read.lines().count() as u64;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(source)
                .unwrap();
            std::io::Write::write_all(&mut f, b"written meanwhile\n").unwrap();
            Ok(None)
        }
    }

    #[test]
    fn what_a_source_read_whole_gained_while_it_was_read_is_read_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("session.json");
        std::fs::write(&source, "first\n").unwrap();
        let to = Destination::Root(dir.path().to_path_buf());
        let first = run(&GrowsWhileRead, std::slice::from_ref(&source), &to).unwrap();
        assert_eq!(first.records["line"].mapped, 1);
        let second = run(&GrowsWhileRead, std::slice::from_ref(&source), &to).unwrap();
        assert_eq!(second.sources[0].read, "whole", "{:?}", second.sources);
        assert_eq!(second.records["line"].mapped, 2);
    }

    #[test]
    fn a_restarted_import_reports_only_its_last_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("session.jsonl");
        std::fs::write(&source, "x\n").unwrap();
        let format = RestartsOnce(Default::default());
        let summary = run(
            &format,
            &[source],
            &Destination::Root(dir.path().to_path_buf()),
        )
        .unwrap();
        assert_eq!(summary.errors.len(), 1, "{:?}", summary.errors);
        assert_eq!(summary.records["record"].mapped, 1);
        assert!(summary.sources[0].restarted.is_some());
    }
}
