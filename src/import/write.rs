//! Writing what importers read. An importer begins a thread, pushes its
//! messages one at a time, and finishes it: a new thread streams into a
//! directory built aside and moved into place whole; an existing one gets
//! the messages it lacks appended, under its lock — a tail in one write, a
//! source read whole in batches of a few MiB. Either way an import holds
//! a few records at a time, not its whole source.
//!
//! A message grove cannot store as it is (an image whose data is not base64,
//! a URL where data should be) keeps what it says as a placeholder, named by
//! `file:line`, and the import goes on. A thread that fails is named in the
//! summary; the importer's other threads go on.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Destination, Summary, ThreadOutcome};
use crate::atsf::{self, ContentBlock, Message, Relationship, Stats, ThreadMeta, ToolStatus};
use crate::error::{Error, IoContext, Result};
use crate::store::{
    AppendOptions, PendingAsset, StagedThread, Store, Thread, set_recorded_length,
    take_inline_in_json,
};

/// `metadata.import` key: the bytes of the source a thread has taken.
pub const OFFSET_KEY: &str = "offset";
/// `metadata.import` key: the title the source gave, to tell a title the
/// source changed from one a person set.
const SOURCE_TITLE_KEY: &str = "sourceTitle";
/// `metadata.import` key: source records after the last message, kept until
/// a message follows them.
pub const WAITING_KEY: &str = "waiting";
/// `metadata.capture.sessions[]` key: the id of the session's copy of the
/// opening prompt, which the thread holds already (grove's copy).
const OPENING_ID_KEY: &str = "openingId";

/// A thread begun in an [`Sink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadHandle(usize);

/// Where an importer puts the threads it reads, for one source.
pub struct Sink<'a> {
    destination: &'a Destination,
    summary: &'a mut Summary,
    source: PathBuf,
    /// Incremental import: existing threads must be at this offset.
    resume_at: Option<u64>,
    /// Bytes of the source taken, recorded on every thread finished.
    offset: Option<u64>,
    into_used: bool,
    threads: Vec<Slot>,
    written: Vec<PathBuf>,
}

enum Slot {
    New(Box<NewThread>),
    Existing(Box<ExistingThread>),
    /// Not wanted here (with `--into`, a subagent thread or a fork).
    Skipped,
    /// Failed (named in the summary) or finished: further calls do nothing.
    Closed,
}

struct NewThread {
    staged: StagedThread,
    meta: ThreadMeta,
    log: BufWriter<File>,
    log_path: PathBuf,
    bytes: u64,
    stats: Stats,
    last_time: Option<String>,
    pushed: u64,
}

struct ExistingThread {
    thread: Thread,
    /// What the source says of the thread, merged in when finished.
    meta: ThreadMeta,
    known: LogIndex,
    fresh: Vec<Message>,
    assets: Vec<PendingAsset>,
    /// The bytes `fresh` takes as lines (counted when the source is read
    /// whole, see [`BATCH_BYTES`]).
    fresh_bytes: usize,
    /// Messages appended by earlier batches of this import.
    added: u64,
    /// Incremental import: the offset the thread was at when begun.
    expected: Option<u64>,
    pushed: u64,
    /// The source does not name the thread (`--into`).
    keep_title: bool,
    /// Where the thread keeps this source's import state.
    ledger: Ledger,
    /// A capture: the opening prompt grove gave the agent, already in the
    /// thread; the session's copy of it is not added again.
    opening: Option<String>,
    opening_taken: bool,
    /// The id of the session's copy of the opening prompt, once met: a
    /// format read whole at each capture (Gemini's chats, OpenCode's
    /// sessions) gives it again, and it is never added.
    opening_id: Option<String>,
}

/// Where a thread keeps what the next import of one source needs: its
/// offset, the records waiting, token totals.
#[derive(Debug, Clone, PartialEq)]
enum Ledger {
    /// `metadata.import`: the thread is the source's own.
    Import,
    /// `metadata.capture.sessions[]`, the entry of this session: a task's
    /// thread takes several sessions.
    Session(String),
}

impl Ledger {
    fn get(&self, meta: &ThreadMeta, key: &str) -> Option<Value> {
        let metadata = meta.metadata.as_ref()?;
        match self {
            Ledger::Import => metadata.get("import")?.get(key).cloned(),
            Ledger::Session(id) => crate::threads::sessions::session_entry(metadata, id)?
                .get(key)
                .cloned(),
        }
    }

    fn set(&self, meta: &mut ThreadMeta, key: &str, value: Option<Value>) {
        let map = match self {
            Ledger::Import => {
                let import = meta
                    .metadata_mut()
                    .entry("import")
                    .or_insert_with(|| Value::Object(Default::default()));
                match import {
                    Value::Object(map) => map,
                    _ => return,
                }
            }
            Ledger::Session(id) => {
                match crate::threads::sessions::session_entry_mut(meta.metadata_mut(), id) {
                    Some(map) => map,
                    None => return,
                }
            }
        };
        match value {
            Some(v) => {
                map.insert(key.to_string(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

/// What a thread's log already holds: message ids and calls still pending.
#[derive(Default)]
struct LogIndex {
    /// Empty in incremental mode: what comes is new by construction.
    ids: HashSet<String>,
    /// Message id → (call id → call) for calls stored as pending/running.
    pending: HashMap<String, HashMap<String, atsf::ToolCall>>,
    len: u64,
}

impl<'a> Sink<'a> {
    /// An output for `source`'s threads, written where `destination` says.
    pub(super) fn new(
        destination: &'a Destination,
        summary: &'a mut Summary,
        source: &Path,
        resume_at: Option<u64>,
    ) -> Self {
        Sink {
            destination,
            summary,
            source: source.to_path_buf(),
            resume_at,
            offset: None,
            into_used: false,
            threads: Vec::new(),
            written: Vec::new(),
        }
    }

    /// The import's summary: counts per record kind, problems by `file:line`.
    pub fn summary(&mut self) -> &mut Summary {
        self.summary
    }

    /// The agent session a capture takes, when this import is one: a
    /// source holding many sessions (OpenCode's database) gives only that
    /// one and its subagents'.
    pub fn captured_session(&self) -> Option<&str> {
        match self.destination {
            Destination::Capture(c) => Some(&c.session),
            _ => None,
        }
    }

    /// The source being imported.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// `file:line` of the source, for a warning.
    pub fn at(&self, line: u64) -> String {
        format!("{}:{line}", self.source.display())
    }

    /// Names a problem at `line` of the source in the summary.
    pub fn problem(&mut self, line: Option<u64>, what: impl std::fmt::Display) {
        let place = match line {
            Some(l) => self.at(l),
            None => self.source.display().to_string(),
        };
        self.summary.errors.push(format!("{place}: {what}"));
    }

    /// Records that the source's first `offset` bytes are taken: written on
    /// every thread finished after this call.
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = Some(offset);
    }

    /// The thread directories written (or found up to date) so far.
    pub(super) fn written(&self) -> &[PathBuf] {
        &self.written
    }

    /// Begins thread `meta`. In an incremental import an existing thread
    /// that is missing, or that another import took further, is
    /// [`Error::Restart`]; any other failure is named in the summary and the
    /// thread's messages are then dropped, so the importer goes on.
    pub fn begin(&mut self, meta: ThreadMeta) -> Result<ThreadHandle> {
        let handle = ThreadHandle(self.threads.len());
        let slot = match self.open(meta) {
            Ok(slot) => slot,
            Err(e @ Error::Restart(_)) => return Err(e),
            Err(e) => {
                self.problem(None, format_args!("a thread was not imported: {e}"));
                Slot::Closed
            }
        };
        self.threads.push(slot);
        Ok(handle)
    }

    /// [`Sink::begin`] for a thread an incremental import last left at
    /// `at` rather than where this import starts: a source whose threads
    /// stop at different places (Claude Code's sidechains written inline)
    /// writes only the ones its new records go on.
    pub fn begin_expecting(&mut self, meta: ThreadMeta, at: u64) -> Result<ThreadHandle> {
        let resume_at = self.resume_at.map(|_| at);
        let resume_at = std::mem::replace(&mut self.resume_at, resume_at);
        let handle = self.begin(meta);
        self.resume_at = resume_at;
        handle
    }

    fn open(&mut self, mut meta: ThreadMeta) -> Result<Slot> {
        let store = match self.destination {
            Destination::Into(target) => {
                if !is_main(&meta) || self.into_used {
                    return Ok(Slot::Skipped);
                }
                self.into_used = true;
                meta.thread_id = target.id().to_string();
                meta.relationships = None;
                let slot = self.open_existing(target.clone(), meta, Ledger::Import)?;
                return Ok(match slot {
                    Slot::Existing(mut t) => {
                        // The thread keeps its own title.
                        t.keep_title = true;
                        Slot::Existing(t)
                    }
                    other => other,
                });
            }
            Destination::Capture(capture) => {
                if is_main(&meta) {
                    if self.into_used {
                        return Ok(Slot::Skipped);
                    }
                    self.into_used = true;
                    meta.thread_id = capture.thread.id().to_string();
                    let ledger = Ledger::Session(capture.session.clone());
                    let slot = self.open_existing(capture.thread.clone(), meta, ledger)?;
                    return Ok(match slot {
                        Slot::Existing(mut t) => {
                            t.keep_title = true;
                            Slot::Existing(t)
                        }
                        other => other,
                    });
                }
                // A subagent or fork of the session: one of the task's.
                rename_thread_refs(&mut meta, &capture.source_id, capture.thread.id());
                Store::for_project(&capture.root().unwrap_or_default())
            }
            other => match other.root_for(&meta) {
                Some(root) => Store::for_project(&root),
                None => {
                    self.summary
                        .skip("session", "run in another project".into());
                    return Ok(Slot::Skipped);
                }
            },
        };
        safe_thread_id(&mut meta, &self.source, self.summary);
        place_working_dir(&mut meta, &store);
        let thread = store.thread(&meta.thread_id)?;
        if std::fs::symlink_metadata(thread.meta_path()).is_ok() {
            return self.open_existing(thread, meta, Ledger::Import);
        }
        if self.resume_at.is_some() && !self.incremental_may_create(&meta) {
            return Err(Error::Restart(format!(
                "thread {} is gone; importing the whole source again",
                meta.thread_id
            )));
        }
        let staged = match store.stage_thread(&meta) {
            Err(Error::ThreadExists { .. }) => {
                return self.open_existing(thread, meta, Ledger::Import);
            }
            other => other?,
        };
        let log_path = staged.log_path();
        let log = BufWriter::with_capacity(256 * 1024, staged.open_log()?);
        Ok(Slot::New(Box::new(NewThread {
            staged,
            meta,
            log,
            log_path,
            bytes: 0,
            stats: Stats::default(),
            last_time: None,
            pushed: 0,
        })))
    }

    /// In an incremental import only the threads an importer starts in the
    /// new records may be created: a main thread must already exist.
    fn incremental_may_create(&self, meta: &ThreadMeta) -> bool {
        !is_main(meta)
    }

    fn open_existing(&mut self, thread: Thread, meta: ThreadMeta, ledger: Ledger) -> Result<Slot> {
        let stored = thread.meta()?;
        let opening = match &ledger {
            Ledger::Session(_) => crate::threads::sessions::opening_prompt(&stored),
            Ledger::Import => None,
        };
        let met = ledger
            .get(&stored, OPENING_ID_KEY)
            .and_then(|v| v.as_str().map(str::to_string));
        let mut known = match self.resume_at {
            Some(at) => {
                if ledger_offset(&ledger, &stored) != Some(at) {
                    return Err(Error::Restart(format!(
                        "thread {} is not where the last import left it",
                        thread.id()
                    )));
                }
                let len = log_len(&thread);
                if crate::store::recorded_length(&stored) == Some(len) {
                    LogIndex {
                        len,
                        ..LogIndex::default()
                    }
                } else {
                    // Lines thread.json does not describe (an import killed
                    // between its append and thread.json, another writer):
                    // what is new is decided by id.
                    LogIndex::read(&thread.messages_path())?
                }
            }
            None => LogIndex::read(&thread.messages_path())?,
        };
        known.ids.extend(met);
        Ok(Slot::Existing(Box::new(ExistingThread {
            thread,
            meta,
            known,
            fresh: Vec::new(),
            assets: Vec::new(),
            fresh_bytes: 0,
            added: 0,
            expected: self.resume_at,
            pushed: 0,
            keep_title: false,
            ledger,
            opening,
            opening_taken: false,
            opening_id: None,
        })))
    }

    /// The thread's metadata as the importer describes it, to change before
    /// it is finished (a title, relationships).
    pub fn meta_mut(&mut self, handle: ThreadHandle) -> Option<&mut ThreadMeta> {
        match self.threads.get_mut(handle.0)? {
            Slot::New(t) => Some(&mut t.meta),
            Slot::Existing(t) => Some(&mut t.meta),
            Slot::Skipped | Slot::Closed => None,
        }
    }

    /// Adds message `m`, read at `line` of the source (for warnings).
    pub fn push(&mut self, handle: ThreadHandle, m: Message, line: Option<u64>) {
        let Some(slot) = self.threads.get_mut(handle.0) else {
            return;
        };
        let (thread_id, index) = match slot {
            Slot::New(t) => {
                t.pushed += 1;
                (t.meta.thread_id.clone(), t.pushed - 1)
            }
            Slot::Existing(t) => {
                t.pushed += 1;
                (t.meta.thread_id.clone(), t.pushed - 1)
            }
            Slot::Skipped | Slot::Closed => return,
        };
        let (m, assets, problems) = storable_message(m, index, &thread_id);
        for p in problems {
            let place = match line {
                Some(l) => self.at(l),
                None => locate(&self.source, &m.id),
            };
            self.summary.errors.push(format!("{place}: {p}"));
        }
        let result = match &mut self.threads[handle.0] {
            Slot::New(t) => t.write(m, &assets),
            Slot::Existing(t) => t.add(m, assets),
            Slot::Skipped | Slot::Closed => Ok(()),
        };
        if let Err(e) = result {
            self.fail(handle, e);
        }
    }

    /// Ends thread `handle`: a new one is published, an existing one gets
    /// what it lacks. The outcome goes into the summary; the only error is
    /// [`Error::Restart`], when another import published the same thread
    /// first (importing the source again appends what it lacks).
    pub fn finish(&mut self, handle: ThreadHandle) -> Result<()> {
        let Some(slot) = self.threads.get_mut(handle.0) else {
            return Ok(());
        };
        let slot = std::mem::replace(slot, Slot::Closed);
        let offset = self.offset;
        let outcome = match slot {
            Slot::New(t) => t.publish(offset),
            Slot::Existing(t) => t.append(offset),
            Slot::Skipped | Slot::Closed => return Ok(()),
        };
        match outcome {
            Ok(outcome) => {
                self.written.push(outcome.thread_dir.clone());
                self.summary.threads.push(outcome);
            }
            Err(e @ Error::Restart(_)) => return Err(e),
            Err(e) => self.problem(None, format_args!("a thread was not imported: {e}")),
        }
        Ok(())
    }

    fn fail(&mut self, handle: ThreadHandle, e: Error) {
        let id = match &self.threads[handle.0] {
            Slot::New(t) => t.meta.thread_id.clone(),
            Slot::Existing(t) => t.meta.thread_id.clone(),
            _ => String::new(),
        };
        self.threads[handle.0] = Slot::Closed;
        self.problem(None, format_args!("thread {id} was not imported: {e}"));
    }

    /// Convenience for importers that build a whole thread in memory.
    pub fn thread(&mut self, imported: super::ImportedThread) -> Result<ThreadHandle> {
        let handle = self.begin(imported.meta)?;
        for m in imported.messages {
            self.push(handle, m, None);
        }
        self.finish(handle)?;
        Ok(handle)
    }

    /// Drops every unfinished thread: nothing of them is written.
    pub(super) fn abandon(&mut self) {
        self.threads.clear();
    }
}

/// A subagent thread or a fork goes along with its main thread.
fn is_main(meta: &ThreadMeta) -> bool {
    meta.main_thread_id.is_none() && meta.origin_thread_id.is_none()
}

/// The offset recorded in `metadata.import`.
pub fn import_offset(meta: &ThreadMeta) -> Option<u64> {
    ledger_offset(&Ledger::Import, meta)
}

fn ledger_offset(ledger: &Ledger, meta: &ThreadMeta) -> Option<u64> {
    ledger.get(meta, OFFSET_KEY)?.as_u64()
}

/// A subagent or fork of a captured session names the session's main
/// thread as `from`; it is the task's thread `to` now.
fn rename_thread_refs(meta: &mut ThreadMeta, from: &str, to: &str) {
    for id in [&mut meta.main_thread_id, &mut meta.origin_thread_id]
        .into_iter()
        .flatten()
    {
        if id == from {
            *id = to.to_string();
        }
    }
    for r in meta.relationships.iter_mut().flatten() {
        if r.thread_id == from {
            r.thread_id = to.to_string();
        }
    }
}

/// A thread's `context.workingDir` must be absolute (ATSF): when the source
/// recorded none, or a relative one, it says where the thread lives — the
/// project of `store` (joined with the relative one) — and
/// `metadata.import.sourceWorkingDir` keeps what the source said (`null`:
/// nothing).
fn place_working_dir(meta: &mut ThreadMeta, store: &Store) {
    let given = meta.context.working_dir.clone();
    if !given.is_empty() && (Path::new(&given).is_absolute() || given.starts_with('/')) {
        return;
    }
    let Some(root) = store.agent_dir().parent() else {
        return;
    };
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let (dir, source) = match given.as_str() {
        "" => (root, Value::Null),
        rel => {
            if meta.context.relative_dir.is_none() {
                meta.context.relative_dir = Some(rel.to_string());
            }
            (root.join(rel), Value::from(rel))
        }
    };
    meta.context.working_dir = dir.to_string_lossy().into_owned();
    set_import(meta, SOURCE_WORKING_DIR_KEY, source);
}

/// `metadata.import.sourceWorkingDir`: what the source said of the working
/// directory when it was not an absolute path.
const SOURCE_WORKING_DIR_KEY: &str = "sourceWorkingDir";

fn set_import(meta: &mut ThreadMeta, key: &str, value: Value) {
    let import = meta
        .metadata_mut()
        .entry("import")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(map) = import {
        map.insert(key.to_string(), value);
    }
}

fn log_len(thread: &Thread) -> u64 {
    std::fs::metadata(thread.messages_path()).map_or(0, |m| m.len())
}

impl NewThread {
    fn write(&mut self, m: Message, assets: &[PendingAsset]) -> Result<()> {
        let assets_dir = self.staged.path().join(atsf::ASSETS_DIR);
        for asset in assets {
            asset.store(&assets_dir)?;
        }
        crate::store::validate_message(&m)?;
        let line = atsf::to_line(&m)?;
        self.log.write_all(&line).ctx("writing", &self.log_path)?;
        self.bytes += line.len() as u64;
        self.stats.add(&m);
        self.last_time = Some(m.timestamp);
        Ok(())
    }

    fn publish(self: Box<Self>, offset: Option<u64>) -> Result<ThreadOutcome> {
        let NewThread {
            staged,
            mut meta,
            log,
            log_path,
            bytes,
            stats,
            last_time,
            ..
        } = *self;
        let file = log
            .into_inner()
            .map_err(|e| Error::io("writing", &log_path, e.into_error()))?;
        file.sync_all().ctx("syncing", &log_path)?;
        meta.stats = stats;
        if let Some(t) = last_time {
            meta.updated_at = t;
        }
        set_recorded_length(&mut meta, bytes);
        if let Some(offset) = offset {
            set_import(&mut meta, OFFSET_KEY, Value::from(offset));
        }
        let title = Value::from(meta.title.clone());
        set_import(&mut meta, SOURCE_TITLE_KEY, title);
        staged.write_meta(&meta)?;
        match staged.publish() {
            Ok(thread) => Ok(ThreadOutcome {
                thread_id: meta.thread_id.clone(),
                title: meta.title.clone(),
                thread_dir: thread.dir().to_path_buf(),
                created: true,
                messages_added: meta.stats.message_count,
                message_count: meta.stats.message_count,
            }),
            Err(Error::ThreadExists { id, .. }) => Err(Error::Restart(format!(
                "thread {id} was published by another import meanwhile"
            ))),
            Err(e) => Err(e),
        }
    }
}

impl ExistingThread {
    fn add(&mut self, m: Message, assets: Vec<PendingAsset>) -> Result<()> {
        if !self.opening_taken
            && m.role == atsf::Role::User
            && let Some(opening) = &self.opening
        {
            // Only the session's first prompt can be the opening one.
            self.opening_taken = true;
            if crate::threads::sessions::is_opening(&m, opening) {
                self.known.ids.insert(m.id.clone());
                self.opening_id = Some(m.id.clone());
                return Ok(());
            }
        }
        // A part of a message the thread has (grove wrote one message as
        // several records of the agent's, `<id>~part~<n>`) is not new.
        let part_of_known =
            m.id.split_once("~part~")
                .is_some_and(|(base, _)| self.known.ids.contains(base));
        if !self.known.ids.contains(&m.id) && !part_of_known {
            self.known.ids.insert(m.id.clone());
            return self.keep(m, assets);
        }
        // Stored before its tool results existed: the results come as a
        // completion message (the stored line is never rewritten).
        let Some(pending) = self.known.pending.remove(&m.id) else {
            return Ok(());
        };
        let done: Vec<atsf::ToolCall> = m
            .tool_calls
            .iter()
            .flatten()
            .filter(|c| pending.contains_key(&c.tool_call_id) && !is_open(&c.status))
            .cloned()
            .collect();
        if done.is_empty() {
            self.known.pending.insert(m.id, pending);
            return Ok(());
        }
        let completion = atsf::completion(&m.id, done, m.timestamp.clone());
        if self.known.ids.insert(completion.id.clone()) {
            return self.keep(completion, assets);
        }
        Ok(())
    }

    /// Keeps `m` for the append. A source read whole (a first capture of a
    /// long session into the task's thread) is appended in batches of
    /// [`BATCH_BYTES`], so the import holds one batch, not the session: a
    /// whole import decides what is new by id, so batches an interrupted
    /// import left are not added twice. A tail is appended in one write
    /// with its offset, as the next import relies on.
    fn keep(&mut self, m: Message, assets: Vec<PendingAsset>) -> Result<()> {
        if self.expected.is_none() {
            self.fresh_bytes += line_len(&m);
        }
        self.fresh.push(m);
        self.assets.extend(assets);
        if self.fresh_bytes >= BATCH_BYTES {
            self.append_batch()?;
        }
        Ok(())
    }

    /// Appends what is kept so far, under the thread's lock; `thread.json`
    /// gets the import's state only with the last batch.
    fn append_batch(&mut self) -> Result<()> {
        let mut fresh = std::mem::take(&mut self.fresh);
        let assets = std::mem::take(&mut self.assets);
        self.fresh_bytes = 0;
        let lock = self.thread.lock()?;
        if log_len(&self.thread) != self.known.len {
            let now = LogIndex::read(&self.thread.messages_path())?;
            fresh.retain(|m| !now.ids.contains(&m.id));
        }
        let assets_dir = self.thread.assets_dir();
        for asset in &assets {
            asset.store(&assets_dir)?;
        }
        let carried = carry_snapshots(&self.ledger, &lock.meta()?, &mut fresh);
        self.added += fresh.len() as u64;
        let done = lock.append_all_then(fresh, AppendOptions { fsync: true }, |meta| {
            if !carried.is_empty() {
                crate::snapshot::record::forget_pending(meta, &carried);
            }
        })?;
        if let Some(e) = done.last().and_then(|d| d.meta_error.as_ref()) {
            return Err(Error::Other(format!(
                "the messages were appended but thread.json was not updated: {e}"
            )));
        }
        self.known.len = log_len(&self.thread);
        Ok(())
    }

    fn append(self: Box<Self>, offset: Option<u64>) -> Result<ThreadOutcome> {
        let ExistingThread {
            thread,
            meta: mut source,
            known,
            mut fresh,
            assets,
            expected,
            keep_title,
            ledger,
            opening_taken,
            opening_id,
            added,
            ..
        } = *self;
        if keep_title {
            source.title.clear();
        }
        let lock = thread.lock()?;
        let stored = lock.meta()?;
        // Someone appended since the log was read, or another import moved
        // the thread on: decide again, under the lock.
        let moved = log_len(&thread) != known.len
            || (expected.is_some() && ledger_offset(&ledger, &stored) != expected);
        if moved && !fresh.is_empty() {
            let now = LogIndex::read(&thread.messages_path())?;
            fresh.retain(|m| !now.ids.contains(&m.id));
        }
        let carried = carry_snapshots(&ledger, &stored, &mut fresh);
        let added = added + fresh.len() as u64;
        let assets_dir = thread.assets_dir();
        for asset in &assets {
            asset.store(&assets_dir)?;
        }
        let change = |meta: &mut ThreadMeta| {
            refresh_from_source(meta, &source, &ledger);
            if let Some(offset) = offset
                && ledger_offset(&ledger, meta).is_none_or(|at| at < offset)
            {
                ledger.set(meta, OFFSET_KEY, Some(Value::from(offset)));
            }
            if opening_taken {
                crate::threads::sessions::clear_opening(meta);
            }
            if let Some(id) = &opening_id {
                ledger.set(meta, OPENING_ID_KEY, Some(Value::from(id.clone())));
            }
            if !carried.is_empty() {
                crate::snapshot::record::forget_pending(meta, &carried);
            }
        };
        let meta = if fresh.is_empty() {
            let mut meta = stored.clone();
            change(&mut meta);
            if meta != stored {
                lock.save(&mut meta)?;
            }
            meta
        } else {
            let done = lock.append_all_then(fresh, AppendOptions { fsync: true }, change)?;
            if let Some(e) = done.last().and_then(|d| d.meta_error.as_ref()) {
                return Err(Error::Other(format!(
                    "the messages were appended but thread.json was not updated: {e}"
                )));
            }
            lock.meta()?
        };
        Ok(ThreadOutcome {
            thread_id: meta.thread_id.clone(),
            title: meta.title.clone(),
            thread_dir: thread.dir().to_path_buf(),
            created: false,
            messages_added: added,
            message_count: meta.stats.message_count,
        })
    }
}

/// Puts the turn snapshots waiting in `stored` (read under the thread's
/// lock) on the first of `fresh`, when this import is a capture: the
/// message the agent wrote after them (see `crate::snapshot::record`).
/// Returns them, for the same append to take them out of `thread.json`.
fn carry_snapshots(ledger: &Ledger, stored: &ThreadMeta, fresh: &mut [Message]) -> Vec<Value> {
    let (Ledger::Session(_), Some(first)) = (ledger, fresh.first_mut()) else {
        return Vec::new();
    };
    let pending = crate::snapshot::record::pending(stored);
    crate::snapshot::record::attach(first, &pending);
    pending
}

/// How many bytes of new messages a source read whole holds before they
/// are appended (see `ExistingThread::keep`).
const BATCH_BYTES: usize = 1 << 20;

/// The length of `m` as a line of the log (0 if it cannot be one: the
/// append says why).
fn line_len(m: &Message) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, m) {
        Ok(()) => count.0 + 1,
        Err(_) => 0,
    }
}

fn is_open(status: &ToolStatus) -> bool {
    matches!(status, ToolStatus::Pending | ToolStatus::Running)
}

impl LogIndex {
    /// Reads the ids in `path` (complete lines), and the calls stored open.
    fn read(path: &Path) -> Result<LogIndex> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        let mut out = LogIndex::default();
        let Some(file) = crate::fsutil::open_read_opt(path)? else {
            return Ok(out);
        };
        let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).ctx("reading", path)?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            out.len += n as u64;
            let bytes = atsf::strip_bom(&line);
            let open = memchr::memmem::find(bytes, b"\"pending\"").is_some()
                || memchr::memmem::find(bytes, b"\"running\"").is_some();
            if open && let Ok(m) = serde_json::from_slice::<Message>(bytes) {
                let calls: HashMap<String, atsf::ToolCall> = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter(|c| is_open(&c.status))
                    .map(|c| (c.tool_call_id.clone(), c.clone()))
                    .collect();
                if !calls.is_empty() {
                    out.pending.insert(m.id.clone(), calls);
                }
                out.ids.insert(m.id);
            } else if let Ok(m) = serde_json::from_slice::<Id>(bytes) {
                out.ids.insert(m.id);
            }
        }
        // A completion already stored closes its calls.
        let completions: Vec<String> = out
            .ids
            .iter()
            .filter(|id| id.contains("~done~"))
            .cloned()
            .collect();
        for c in completions {
            if let Some((of, _)) = c.split_once("~done~") {
                out.pending.remove(of);
            }
        }
        Ok(out)
    }
}

/// A thread id from a source that is not a safe directory name (a session
/// id holding `/`, say) is made one: unsafe characters become `-`, and a
/// short hash of the original keeps two such ids apart. The original stays
/// in `metadata.import.sourceId`.
fn safe_thread_id(meta: &mut ThreadMeta, source: &Path, summary: &mut Summary) {
    let Err(e) = crate::store::validate_thread_id(&meta.thread_id) else {
        return;
    };
    use sha2::Digest;
    let original = meta.thread_id.clone();
    let mut safe: String = original
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    safe = safe.trim_start_matches('.').chars().take(180).collect();
    let digest = sha2::Sha256::digest(original.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    meta.thread_id = format!("{}-{hex}", if safe.is_empty() { "thread" } else { &safe });
    let source_id = meta
        .metadata
        .as_ref()
        .and_then(|m| m.get("import")?.get("sourceId")?.as_str())
        .unwrap_or(&original)
        .to_string();
    let place = locate(source, &source_id);
    summary.errors.push(format!(
        "{place}: the thread id {original:?} is not a safe name ({e}); imported as {}",
        meta.thread_id
    ));
}

/// Makes message `m` (the `index`th of thread `thread_id`) storable: a
/// missing id or tool-call id is derived; every inline image — in the
/// content, in a tool call's output content, in raw records kept beside —
/// becomes an asset (returned, to be written with the message). An image
/// grove cannot store (data that is not base64, a URL, nothing at all)
/// becomes a text placeholder keeping the original block under
/// `unimported`; each such problem is returned.
fn storable_message(
    mut m: Message,
    index: u64,
    thread_id: &str,
) -> (Message, Vec<PendingAsset>, Vec<String>) {
    if m.id.trim().is_empty() {
        m.id = format!("{thread_id}-{index}");
    }
    let mut assets = Vec::new();
    for (j, call) in m.tool_calls.iter_mut().flatten().enumerate() {
        if call.tool_call_id.trim().is_empty() {
            call.tool_call_id = format!("{}-call-{j}", m.id);
        }
        if call.name.trim().is_empty() {
            call.name = "tool".into();
        }
        for v in call.extra.values_mut() {
            assets.extend(take_inline_in_json(v));
        }
    }
    for v in m.extra.values_mut() {
        assets.extend(take_inline_in_json(v));
    }
    let mut problems = Vec::new();
    for block in m.content.iter_mut() {
        let img = match block {
            ContentBlock::Image(img) => img,
            ContentBlock::Unknown(map) | ContentBlock::Text { extra: map, .. } => {
                for v in map.values_mut() {
                    assets.extend(take_inline_in_json(v));
                }
                continue;
            }
            ContentBlock::Thinking { .. } => continue,
        };
        let original = img.clone();
        match crate::store::take_inline_image(img) {
            Ok(Some(asset)) => assets.push(asset),
            Ok(None) if img.asset_ref.is_some() => {}
            outcome => {
                let why = match outcome {
                    Err(e) => e.to_string(),
                    _ => "the image has no data".to_string(),
                };
                let what = match original.data.as_deref() {
                    Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                        format!("[image: {url}]")
                    }
                    _ => "[image not imported: its data could not be read]".to_string(),
                };
                let mut extra = atsf::Extra::new();
                if let Ok(v) = serde_json::to_value(ContentBlock::Image(original)) {
                    extra.insert("unimported".into(), v);
                }
                *block = ContentBlock::Text { text: what, extra };
                problems.push(format!(
                    "an image of message {} was kept as a placeholder: {why}",
                    m.id
                ));
            }
        }
    }
    (m, assets, problems)
}

/// Adds the relationships `meta` lacks and refreshes the state a source
/// keeps current (a checkpoint's git state, summary, next steps, tags, a
/// title the source changed). Changes nothing the source does not say.
fn refresh_from_source(meta: &mut ThreadMeta, src: &ThreadMeta, ledger: &Ledger) {
    let missing: Vec<Relationship> = src
        .relationships()
        .iter()
        .filter(|r| {
            !meta
                .relationships()
                .iter()
                .any(|h| h.thread_id == r.thread_id && h.kind == r.kind && h.role == r.role)
        })
        .cloned()
        .collect();
    if !missing.is_empty() {
        meta.relationships
            .get_or_insert_with(Vec::new)
            .extend(missing);
    }
    if src.git.is_some() && src.git != meta.git {
        meta.git = src.git.clone();
    }
    if src.conversation_summary.is_some() && src.conversation_summary != meta.conversation_summary {
        meta.conversation_summary = src.conversation_summary.clone();
    }
    if src.files_touched.is_some() && src.files_touched != meta.files_touched {
        meta.files_touched = src.files_touched.clone();
    }
    if src.next_steps.is_some() && src.next_steps != meta.next_steps {
        meta.next_steps = src.next_steps.clone();
    }
    let tags = src.tags();
    if tags.iter().any(|t| !meta.tags().contains(t)) {
        meta.add_tags(&tags);
    }
    // What the source keeps current: the records waiting for the next
    // message, token totals, the latest turn's settings.
    for (top, key) in SYNCED {
        match *top {
            // The source's own import state: where this source's is kept.
            "import" => {
                let now = Ledger::Import.get(src, key);
                if ledger.get(meta, key) != now {
                    ledger.set(meta, key, now);
                }
            }
            _ => sync_key(meta, src, top, key),
        }
    }
    // A title the source changed (a rename, a generated title) replaces the
    // one it gave before; a title someone set in grove stays.
    let recorded = meta
        .metadata
        .as_ref()
        .and_then(|m| m.get("import")?.get(SOURCE_TITLE_KEY)?.as_str())
        .map(str::to_string);
    if recorded.as_deref() != Some(src.title.as_str()) && !src.title.is_empty() {
        if recorded.is_none() || recorded.as_deref() == Some(meta.title.as_str()) {
            meta.title = src.title.clone();
        }
        set_import(meta, SOURCE_TITLE_KEY, Value::from(src.title.clone()));
    }
}

/// `metadata.<top>.<key>` values a source keeps current: each import sets
/// them to what the source says now (or removes them).
const SYNCED: &[(&str, &str)] = &[
    ("import", WAITING_KEY),
    ("import", "tokens"),
    ("codex", "turnContext"),
];

fn sync_key(meta: &mut ThreadMeta, src: &ThreadMeta, top: &str, key: &str) {
    let get =
        |m: &ThreadMeta| -> Option<Value> { m.metadata.as_ref()?.get(top)?.get(key).cloned() };
    let now = get(src);
    if now == get(meta) {
        return;
    }
    let entry = meta
        .metadata_mut()
        .entry(top)
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(map) = entry {
        match now {
            Some(v) => {
                map.insert(key.to_string(), v);
            }
            None => {
                map.remove(key);
            }
        }
    }
}

/// `file:line` of the first line of `source` holding `needle` (a record's
/// id, a session id), or the file alone.
pub fn locate(source: &Path, needle: &str) -> String {
    let name = source.display().to_string();
    if needle.is_empty() {
        return name;
    }
    let Ok(file) = std::fs::File::open(source) else {
        return name;
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0u64;
    while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        number += 1;
        if memchr::memmem::find(&line, needle.as_bytes()).is_some() {
            return format!("{name}:{number}");
        }
        line.clear();
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atsf::{Context, Role};

    fn meta(id: &str) -> ThreadMeta {
        let context = Context {
            working_dir: "/".into(),
            ..Context::default()
        };
        let mut m = crate::threads::new_meta("t", "claude-code", context);
        m.thread_id = id.into();
        m
    }

    fn ids(thread: &Thread) -> Vec<String> {
        std::fs::read_to_string(thread.messages_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Message>(l).unwrap().id)
            .collect()
    }

    /// A first capture of a long session goes into the task's existing
    /// thread: it is appended while it is read, not held until the end.
    #[test]
    fn a_source_read_whole_into_an_existing_thread_is_appended_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let thread = Store::for_project(dir.path())
            .create_thread(&meta("task"))
            .unwrap();
        let destination = Destination::Into(thread.clone());
        let mut summary = Summary::default();
        let source = dir.path().join("session.jsonl");
        let mut out = Sink::new(&destination, &mut summary, &source, None);
        let handle = out.begin(meta("session")).unwrap();
        let text = "x".repeat(64 * 1024);
        let n = 3 * BATCH_BYTES / text.len();
        for i in 0..n {
            let mut m = Message::new(Role::User, vec![ContentBlock::text(text.clone())]);
            m.id = format!("m{i}");
            out.push(handle, m, None);
        }
        let written = ids(&thread).len();
        assert!(written >= 2 * BATCH_BYTES / text.len(), "{written} of {n}");
        out.finish(handle).unwrap();
        let want: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
        assert_eq!(ids(&thread), want);
        assert_eq!(thread.meta().unwrap().stats.message_count, n as u64);
        assert_eq!(summary.threads[0].messages_added, n as u64);
    }
}
