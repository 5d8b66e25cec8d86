//! One thread directory: its metadata, its message log, appends and repair.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::reader::MessageReader;
use super::tail::{self, TornTail};
use crate::atsf::{self, Message, Stats, ThreadMeta};
use crate::error::{Error, IoContext, Result};

/// Key under `metadata.grove` recording how many bytes of `messages.jsonl`
/// the cached `stats` describe. An append that finds another length (a crash
/// between the line and `thread.json`, or a writer that does not update
/// stats) recounts instead of trusting the cache.
const STATS_LENGTH_KEY: &str = "statsLength";

/// A thread directory `<.agent>/threads/<id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    id: String,
    dir: PathBuf,
}

/// How an append is made durable.
#[derive(Debug, Clone, Copy)]
pub struct AppendOptions {
    /// fsync `messages.jsonl` after the line is written (before `thread.json`
    /// is updated). On by default.
    pub fsync: bool,
}

impl Default for AppendOptions {
    fn default() -> Self {
        AppendOptions { fsync: true }
    }
}

/// What an append did.
#[derive(Debug, Clone)]
pub struct Appended {
    /// The message as written (ids, timestamp and asset refs filled in).
    pub message: Message,
    /// 0-based index of the message in the log.
    pub index: u64,
    /// A partial line left by a crashed writer, set aside before appending.
    pub torn: Option<TornTail>,
}

/// What `repair` found and did.
#[derive(Debug)]
pub struct RepairReport {
    pub torn: Option<TornTail>,
    /// Malformed lines (each an [`Error::Parse`] naming file and line); left in place.
    pub bad_lines: Vec<Error>,
    pub stats_before: Stats,
    pub stats_after: Stats,
    /// Whether `thread.json` was rewritten.
    pub rewrote_meta: bool,
}

impl Thread {
    /// A handle on `dir`, whose name is the thread id. Use [`super::Store::thread`]
    /// to get one from an id; this does not validate.
    pub(crate) fn at(id: String, dir: PathBuf) -> Self {
        Thread { id, dir }
    }

    /// The thread id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The thread directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `thread.json`.
    pub fn meta_path(&self) -> PathBuf {
        self.dir.join(atsf::THREAD_FILE)
    }

    /// `messages.jsonl`.
    pub fn messages_path(&self) -> PathBuf {
        self.dir.join(atsf::MESSAGES_FILE)
    }

    /// `assets/`.
    pub fn assets_dir(&self) -> PathBuf {
        self.dir.join(atsf::ASSETS_DIR)
    }

    /// Reads `thread.json`, refusing a newer MAJOR version.
    pub fn meta(&self) -> Result<ThreadMeta> {
        atsf::read_json_file(&self.meta_path())
    }

    /// Replaces `thread.json` atomically.
    pub fn write_meta(&self, meta: &ThreadMeta) -> Result<()> {
        crate::fsutil::write_atomic(&self.meta_path(), &atsf::to_pretty(meta)?)
    }

    /// Streams the messages (see [`MessageReader`]).
    pub fn messages(&self) -> Result<MessageReader> {
        MessageReader::open(&self.messages_path())
    }

    /// Appends one message under an exclusive lock and updates `thread.json`.
    ///
    /// The lock is an OS advisory lock (`File::lock`: `flock` on Unix,
    /// `LockFileEx` on Windows) on `messages.jsonl` itself, held while the
    /// line is written and `stats`/`updatedAt` are updated. The line goes out
    /// in one `write`. A partial last line left by a crashed writer is moved to
    /// a side file first. Inline images become assets.
    pub fn append(&self, message: Message, options: AppendOptions) -> Result<Appended> {
        let mut message = message;
        validate_message(&message)?;
        message.timestamp = atsf::normalize_timestamp(&message.timestamp)?;
        // Refuse an unsupported thread before creating or touching anything.
        self.meta()?;
        super::assets::extract_inline_images(&self.assets_dir(), &mut message)?;
        let line = atsf::to_line(&message)?;

        let path = self.messages_path();
        let file = open_locked(&path)?;
        let mut meta = self.meta()?;
        let len = file.metadata().ctx("reading metadata of", &path)?.len();
        let torn = tail::set_aside(&file, &path, len)?;
        let clean_len = match &torn {
            Some(t) => len - t.bytes,
            None => len,
        };
        if recorded_length(&meta) != Some(clean_len) {
            let extra = std::mem::take(&mut meta.stats.extra);
            meta.stats = recount(&path)?.0;
            meta.stats.extra = extra;
        }
        (&file).write_all(&line).ctx("appending to", &path)?;
        if options.fsync {
            file.sync_data().ctx("syncing", &path)?;
        }
        let index = meta.stats.message_count;
        meta.stats.add(&message);
        meta.updated_at = message.timestamp.clone();
        set_recorded_length(&mut meta, clean_len + line.len() as u64);
        self.save_meta(&mut meta)?;
        drop(file);
        Ok(Appended {
            message,
            index,
            torn,
        })
    }

    /// Changes `thread.json` under the thread's lock, so it cannot race an
    /// append, and bumps its version `v`.
    pub fn update_meta(&self, change: impl FnOnce(&mut ThreadMeta)) -> Result<ThreadMeta> {
        self.update_meta_if(None, change)
    }

    /// Like [`Thread::update_meta`], but only if the version `v` is still
    /// `expected` (when given): otherwise nothing is written and the result
    /// is [`Error::Conflict`].
    pub fn update_meta_if(
        &self,
        expected: Option<u64>,
        change: impl FnOnce(&mut ThreadMeta),
    ) -> Result<ThreadMeta> {
        let locked = self.lock()?;
        let mut meta = locked.meta()?;
        locked.check_version(&meta, expected)?;
        change(&mut meta);
        locked.save(&mut meta)?;
        Ok(meta)
    }

    /// Takes the thread's exclusive lock (the one appends take) until the
    /// guard is dropped. Refuses an unsupported thread before creating anything.
    pub fn lock(&self) -> Result<ThreadLock<'_>> {
        self.meta()?;
        let file = open_locked(&self.messages_path())?;
        Ok(ThreadLock { thread: self, file })
    }

    /// `thread.json` with its version bumped, written atomically.
    fn save_meta(&self, meta: &mut ThreadMeta) -> Result<()> {
        meta.v = Some(meta.version() + 1);
        self.write_meta(meta)
    }

    /// A consistent view for copying: `thread.json` and the length of the
    /// complete lines of `messages.jsonl`, read together under the lock.
    /// Since the log is append-only, those bytes stay as they are.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.lock()?.snapshot()
    }

    /// Sets aside a torn tail, recomputes `stats` from `messages.jsonl` and
    /// reports malformed lines (which are kept: nothing is deleted).
    pub fn repair(&self) -> Result<RepairReport> {
        let mut meta = self.meta()?;
        let path = self.messages_path();
        let file = open_locked(&path)?;
        let len = file.metadata().ctx("reading metadata of", &path)?.len();
        let torn = tail::set_aside(&file, &path, len)?;
        let (stats, bad_lines) = recount(&path)?;
        let stats_before = meta.stats.clone();
        let clean_len = file.metadata().ctx("reading metadata of", &path)?.len();
        let mut stats_after = stats;
        stats_after.extra = stats_before.extra.clone();
        let rewrote_meta =
            !stats_before.same_counts(&stats_after) || recorded_length(&meta) != Some(clean_len);
        if rewrote_meta {
            meta.stats = stats_after.clone();
            set_recorded_length(&mut meta, clean_len);
            self.save_meta(&mut meta)?;
        }
        Ok(RepairReport {
            torn,
            bad_lines,
            stats_before,
            stats_after,
            rewrote_meta,
        })
    }
}

/// A thread's exclusive lock; see [`Thread::lock`].
#[derive(Debug)]
pub struct ThreadLock<'a> {
    thread: &'a Thread,
    file: File,
}

impl ThreadLock<'_> {
    /// Reads `thread.json` (under the lock).
    pub fn meta(&self) -> Result<ThreadMeta> {
        self.thread.meta()
    }

    /// Fails with [`Error::Conflict`] when `meta`'s version is not `expected`.
    pub fn check_version(&self, meta: &ThreadMeta, expected: Option<u64>) -> Result<()> {
        match expected {
            Some(e) if e != meta.version() => Err(Error::Conflict {
                id: self.thread.id.clone(),
                expected: e,
                found: meta.version(),
            }),
            _ => Ok(()),
        }
    }

    /// Writes `meta` with its version bumped.
    pub fn save(&self, meta: &mut ThreadMeta) -> Result<()> {
        self.thread.save_meta(meta)
    }

    /// The thread this lock is on.
    pub fn thread(&self) -> &Thread {
        self.thread
    }

    /// See [`Thread::snapshot`].
    pub fn snapshot(&self) -> Result<Snapshot> {
        let path = self.thread.messages_path();
        let meta = self.meta()?;
        let len = self
            .file
            .metadata()
            .ctx("reading metadata of", &path)?
            .len();
        let complete_len = tail::complete_len(&self.file, &path, len)?;
        let stats_exact = recorded_length(&meta) == Some(complete_len);
        Ok(Snapshot {
            meta,
            messages_len: complete_len,
            stats_exact,
        })
    }
}

/// What [`Thread::snapshot`] read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub meta: ThreadMeta,
    /// Bytes of `messages.jsonl` up to the last complete line.
    pub messages_len: u64,
    /// Whether `meta.stats` count exactly those bytes.
    pub stats_exact: bool,
}

fn open_locked(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .ctx("opening", path)?;
    file.lock().ctx("locking", path)?;
    Ok(file)
}

/// Counts the valid messages of a log, collecting the malformed lines.
fn recount(path: &Path) -> Result<(Stats, Vec<Error>)> {
    let mut stats = Stats::default();
    let mut bad = Vec::new();
    for item in MessageReader::open(path)? {
        match item {
            Ok(m) => stats.add(&m),
            Err(e @ Error::Parse { .. }) => bad.push(e),
            Err(e) => return Err(e),
        }
    }
    Ok((stats, bad))
}

pub(crate) fn recorded_length(meta: &ThreadMeta) -> Option<u64> {
    meta.metadata
        .as_ref()?
        .get("grove")?
        .get(STATS_LENGTH_KEY)?
        .as_u64()
}

pub(crate) fn set_recorded_length(meta: &mut ThreadMeta, len: u64) {
    let grove = meta
        .metadata_mut()
        .entry("grove")
        .or_insert_with(|| Value::Object(Default::default()));
    if !grove.is_object() {
        // Someone else's value under our key: keep it, nested, rather than lose it.
        let previous = std::mem::take(grove);
        *grove = serde_json::json!({ "previous": previous });
    }
    if let Value::Object(map) = grove {
        map.insert(STATS_LENGTH_KEY.to_string(), Value::from(len));
    }
}

/// Checks the fields the spec requires beyond what the types enforce.
pub fn validate_message(message: &Message) -> Result<()> {
    if message.id.trim().is_empty() {
        return Err(Error::InvalidMessage("`id` must not be empty".into()));
    }
    for (i, call) in message.tool_calls.iter().flatten().enumerate() {
        if call.tool_call_id.trim().is_empty() {
            return Err(Error::InvalidMessage(format!(
                "toolCalls[{i}].toolCallId must not be empty"
            )));
        }
        if call.name.trim().is_empty() {
            return Err(Error::InvalidMessage(format!(
                "toolCalls[{i}].name must not be empty"
            )));
        }
    }
    Ok(())
}
