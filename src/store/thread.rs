//! One thread directory: its metadata, its message log, appends and repair.
//!
//! Two rules hold whatever happens around grove:
//! - **The log only grows.** `messages.jsonl` missing, or shorter than what
//!   `thread.json` describes, is refused before anything is written (not
//!   replaced by a new log); `repair` restores it from the cache.
//! - **An append succeeds or writes nothing.** Every check is made before
//!   the first byte; a failed fsync takes the bytes back; once the lines are
//!   durable, a failure to update `thread.json` is reported, not an error
//!   (the next append recounts).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::reader::MessageReader;
use super::tail::{self, TornTail};
use crate::atsf::{self, Message, Stats, ThreadMeta};
use crate::error::{Error, IoContext, Result};
use crate::fsutil;

use super::ThreadId;

/// A thread directory `<.agent>/threads/<id>/`. The directory's name is the
/// thread's identity; `threadId` inside `thread.json` is checked against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    id: ThreadId,
    dir: PathBuf,
    /// No component below this directory may be a symbolic link: the
    /// project root for `<root>/.agent/threads/<id>`, the parent otherwise
    /// (a cache entry).
    root: PathBuf,
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
#[derive(Debug)]
pub struct Appended {
    /// The message as written (ids, timestamp and asset refs filled in).
    pub message: Message,
    /// 0-based index of the message in the log.
    pub index: u64,
    /// A partial line left by a crashed writer, set aside before appending.
    pub torn: Option<TornTail>,
    /// The message is in the log, but `thread.json` could not be updated
    /// (its stats are recounted by the next append or `grove repair`).
    pub meta_error: Option<Error>,
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
    /// What was brought back from grove's cache.
    pub restored: Option<Restored>,
}

/// A log restored from the cache's copy.
#[derive(Debug, Clone)]
pub struct Restored {
    /// The cache's `messages.jsonl`.
    pub from: PathBuf,
    /// Bytes written back into the thread's log.
    pub bytes: u64,
    /// Where a log that was not a prefix of the cache's was saved first.
    pub diverged_saved_to: Option<PathBuf>,
    /// Other files (assets, side files, hook logs) linked back.
    pub files: usize,
}

impl Thread {
    /// A handle on `dir`, whose name is the thread id. Use [`super::Store::thread`]
    /// to get one from an id; this does not validate.
    pub(crate) fn at(id: ThreadId, dir: PathBuf) -> Self {
        let root = store_root(&dir)
            .or_else(|| dir.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        Thread { id, dir, root }
    }

    /// The thread id (its directory's name).
    pub fn id(&self) -> &ThreadId {
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

    /// Fails when the thread directory, or `.agent/` or `threads/` above it,
    /// is a symbolic link (or `assets/` inside it): a cloned repository could
    /// point any of them anywhere.
    pub fn guard(&self) -> Result<()> {
        fsutil::check_no_links_below(&self.root, &self.dir)?;
        fsutil::refuse_symlink(&self.assets_dir())
    }

    /// Reads `thread.json` (never through a link), refusing a newer MAJOR
    /// version and a `threadId` that is not the directory's name.
    pub fn meta(&self) -> Result<ThreadMeta> {
        self.meta_and_mtime().map(|(meta, _)| meta)
    }

    /// [`Thread::meta`], with when `thread.json` was last written (from the
    /// same read).
    pub fn meta_and_mtime(&self) -> Result<(ThreadMeta, Option<std::time::SystemTime>)> {
        let path = self.meta_path();
        let (bytes, mtime) = fsutil::read_with_mtime(&path)?;
        let meta: ThreadMeta = atsf::parse_json(&path, &bytes)?;
        if meta.thread_id != self.id {
            return Err(Error::Parse {
                path,
                line: None,
                message: format!(
                    "threadId {:?} is not the name of its directory {:?}; the directory name is \
                     the thread's identity — rename one of them so they match",
                    meta.thread_id, self.id
                ),
            });
        }
        Ok((meta, mtime))
    }

    /// Replaces `thread.json` atomically.
    pub fn write_meta(&self, meta: &ThreadMeta) -> Result<()> {
        self.write_meta_bytes(&atsf::to_pretty(meta)?)
    }

    fn write_meta_bytes(&self, bytes: &[u8]) -> Result<()> {
        self.guard()?;
        fsutil::refuse_symlink(&self.meta_path())?;
        fsutil::write_atomic(&self.meta_path(), bytes)
    }

    /// Streams the messages (see [`MessageReader`]).
    pub fn messages(&self) -> Result<MessageReader> {
        self.guard()?;
        MessageReader::open(&self.messages_path())
    }

    /// Appends one message under the thread's exclusive lock and updates
    /// `thread.json` (see [`ThreadLock::append`]).
    pub fn append(&self, message: Message, options: AppendOptions) -> Result<Appended> {
        validate_message(&message)?;
        let mut done = self.lock()?.append_all(vec![message], options)?;
        Ok(done.remove(0))
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
        let before = meta.clone();
        change(&mut meta);
        // A change that changes nothing writes nothing: no new version, no
        // fsyncs (`grove new` records its setup's outcomes this way, and
        // with nothing set up they are what the thread already says).
        if meta != before {
            locked.save(&mut meta)?;
        }
        Ok(meta)
    }

    /// Takes the thread's exclusive lock (an OS advisory lock on
    /// `messages.jsonl` itself, the one appends take) until the guard is
    /// dropped; the log the lock is taken on is the one at its path (a
    /// log replaced meanwhile is locked anew). Refuses an unsupported thread, a linked path, and a log that
    /// is missing although `thread.json` describes messages, before creating
    /// anything.
    pub fn lock(&self) -> Result<ThreadLock<'_>> {
        self.guard()?;
        let meta = self.meta()?;
        let path = self.messages_path();
        let file = match fsutil::open_append(&path, false) {
            Ok(f) => f,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                if let Some(expected) = described(&meta) {
                    return Err(self.shrunk("missing", expected));
                }
                fsutil::open_append(&path, true)?
            }
            Err(e) => return Err(e),
        };
        file.lock().ctx("locking", &path)?;
        // A `pull` may have replaced the log while this waited for the lock:
        // writing to the old file would lose what is written. Take the new one.
        if !fsutil::still_at(&file, &path) {
            drop(file);
            return self.lock();
        }
        Ok(ThreadLock { thread: self, file })
    }

    /// `thread.json` with its version bumped, written atomically.
    fn save_meta(&self, meta: &mut ThreadMeta) -> Result<()> {
        meta.v = Some(meta.version() + 1);
        let bytes = atsf::to_pretty(meta)?;
        self.write_meta_bytes(&bytes)?;
        // The one import that runs up a layer: the store is below the cache,
        // yet every change of a task's thread.json must reach the cache's
        // copy, and this is the one place every such change passes through
        // (an append's stats excepted: the copy shares the log they come
        // from). Best effort: the next read of the thread refreshes it too.
        crate::cache::follow(self, meta, &bytes);
        Ok(())
    }

    /// [`Thread::save_meta`] after an append: the log, synced already, is
    /// what the new `thread.json` follows from (see
    /// [`fsutil::write_atomic_derived`]).
    fn save_meta_after_append(&self, meta: &mut ThreadMeta) -> Result<()> {
        meta.v = Some(meta.version() + 1);
        self.guard()?;
        fsutil::refuse_symlink(&self.meta_path())?;
        fsutil::write_atomic_derived(&self.meta_path(), &atsf::to_pretty(meta)?)
    }

    /// A consistent view for copying: `thread.json` and the length of the
    /// complete lines of `messages.jsonl`, read together under the lock.
    /// Since the log is append-only, those bytes stay as they are.
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.lock()?.snapshot()
    }

    /// [`Thread::repair_from`] without a cache copy.
    pub fn repair(&self) -> Result<RepairReport> {
        self.repair_from(None)
    }

    /// Restores what the cache directory `cache` holds and the thread lacks
    /// (a log the cache's copy extends, assets, side files), sets aside a
    /// torn tail, recomputes `stats` from `messages.jsonl` and reports
    /// malformed lines (which are kept: nothing is deleted).
    pub fn repair_from(&self, cache: Option<&Path>) -> Result<RepairReport> {
        self.guard()?;
        let mut meta = self.meta()?;
        let path = self.messages_path();
        let file = fsutil::open_append(&path, true)?;
        file.lock().ctx("locking", &path)?;
        let cache = cache.filter(|c| !fsutil::same_file(c, &self.dir));
        let mut restored = match cache {
            Some(c) => restore_log(&file, &path, &c.join(atsf::MESSAGES_FILE))?,
            None => None,
        };
        if let Some(c) = cache {
            let files = restore_files(c, &self.dir)?;
            if files > 0 {
                let r = restored.get_or_insert_with(|| Restored {
                    from: c.to_path_buf(),
                    bytes: 0,
                    diverged_saved_to: None,
                    files: 0,
                });
                r.files = files;
            }
        }
        let len = file.metadata().ctx("reading metadata of", &path)?.len();
        let torn = tail::set_aside(&file, &path, len)?;
        let counted = recount(&path)?;
        let stats_before = meta.stats.clone();
        let clean_len = file.metadata().ctx("reading metadata of", &path)?.len();
        let mut stats_after = counted.stats;
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
            bad_lines: counted.bad,
            stats_before,
            stats_after,
            rewrote_meta,
            restored,
        })
    }

    fn shrunk(&self, found: impl Into<String>, expected: String) -> Error {
        Error::LogShrunk {
            id: self.id.to_string(),
            path: self.messages_path(),
            found: found.into(),
            expected,
            cache: None,
        }
    }
}

/// `<root>` of `<root>/.agent/threads/<id>`.
fn store_root(dir: &Path) -> Option<PathBuf> {
    let threads = dir.parent()?;
    let agent = threads.parent()?;
    (threads.file_name()? == atsf::THREADS_DIR && agent.file_name()? == atsf::AGENT_DIR)
        .then(|| agent.parent().map(Path::to_path_buf))
        .flatten()
}

/// What `thread.json` says the log holds, when it holds anything:
/// `statsLength` bytes, else `stats.messageCount` messages.
fn described(meta: &ThreadMeta) -> Option<String> {
    match recorded_length(meta) {
        Some(0) => None,
        Some(len) => Some(format!("{len} bytes")),
        None if meta.stats.message_count > 0 => {
            Some(format!("{} messages", meta.stats.message_count))
        }
        None => None,
    }
}

/// A thread's exclusive lock; see [`Thread::lock`].
#[derive(Debug)]
pub struct ThreadLock<'a> {
    thread: &'a Thread,
    file: File,
}

impl ThreadLock<'_> {
    /// Adds to the end of the log what `write` writes, after cutting it
    /// back to `complete` bytes (a torn tail is not kept in the middle),
    /// then syncs it: a merge that only adds at the end.
    pub fn extend_log(
        &self,
        complete: u64,
        write: impl FnOnce(&mut File) -> std::io::Result<()>,
    ) -> Result<()> {
        let path = self.thread.messages_path();
        let mut file = fsutil::open_append(&path, true)?;
        if file.metadata().ctx("reading metadata of", &path)?.len() != complete {
            file.set_len(complete).ctx("truncating", &path)?;
        }
        write(&mut file).map_err(|e| Error::io("writing", &path, e))?;
        file.sync_all().ctx("syncing", &path)
    }

    /// Replaces the log whole with what `write` writes, synced before it
    /// takes the log's place: a merge that puts lines between the log's.
    pub fn replace_log(
        &self,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let path = self.thread.messages_path();
        fsutil::refuse_symlink(&path)?;
        let mut tmp = fsutil::temp_file_beside(&path)?;
        {
            let mut out = std::io::BufWriter::new(tmp.as_file_mut());
            write(&mut out)
                .and_then(|()| std::io::Write::flush(&mut out))
                .map_err(|e| Error::io("writing", &path, e))?;
        }
        tmp.as_file().sync_all().ctx("syncing", &path)?;
        tmp.persist(&path)
            .map_err(|e| Error::io("replacing", &path, e.error))?;
        Ok(())
    }

    /// Replaces `thread.json` with `bytes` as they are (a merge keeps one
    /// side's own bytes when it can); the cache's copy follows.
    pub fn replace_meta_bytes(&self, bytes: &[u8]) -> Result<()> {
        let path = self.thread.meta_path();
        let meta: ThreadMeta = atsf::parse_json(&path, bytes)?;
        fsutil::refuse_symlink(&path)?;
        fsutil::write_atomic(&path, bytes)?;
        crate::cache::follow(self.thread, &meta, bytes);
        Ok(())
    }

    /// Reads `thread.json` (under the lock).
    pub fn meta(&self) -> Result<ThreadMeta> {
        self.thread.meta()
    }

    /// Fails with [`Error::Conflict`] when `meta`'s version is not `expected`.
    pub fn check_version(&self, meta: &ThreadMeta, expected: Option<u64>) -> Result<()> {
        match expected {
            Some(e) if e != meta.version() => Err(Error::Conflict {
                id: self.thread.id.to_string(),
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

    /// The ids of the messages in the log (complete lines; malformed lines
    /// skipped). Read under the lock, so what is new can be decided before
    /// anyone else appends.
    pub fn message_ids(&self) -> Result<std::collections::HashSet<String>> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        let path = self.thread.messages_path();
        let mut ids = std::collections::HashSet::new();
        let mut reader = std::io::BufReader::with_capacity(256 * 1024, fsutil::open_read(&path)?);
        let mut line = Vec::new();
        loop {
            use std::io::BufRead;
            line.clear();
            let n = reader.read_until(b'\n', &mut line).ctx("reading", &path)?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            if let Ok(m) = serde_json::from_slice::<Id>(atsf::strip_bom(&line)) {
                ids.insert(m.id);
            }
        }
        Ok(ids)
    }

    /// Appends `messages`, in order, and updates `thread.json` once.
    ///
    /// Every check comes first (the messages, the thread, the log's length
    /// against what `thread.json` describes); inline images become assets;
    /// a partial last line left by a crashed writer is moved to a side file;
    /// the lines go out in one `write`, then fsync. If the fsync fails the
    /// lines are taken back. Once they are durable the append has happened:
    /// a failure to rewrite `thread.json` is returned in
    /// [`Appended::meta_error`].
    pub fn append_all(
        &self,
        messages: Vec<Message>,
        options: AppendOptions,
    ) -> Result<Vec<Appended>> {
        self.append_all_then(messages, options, |_| {})
    }

    /// [`ThreadLock::append_all`], with `change` applied to `thread.json` in
    /// the same write (an importer records how far into its source it got).
    pub fn append_all_then(
        &self,
        messages: Vec<Message>,
        options: AppendOptions,
        change: impl FnOnce(&mut ThreadMeta),
    ) -> Result<Vec<Appended>> {
        let thread = self.thread;
        let path = thread.messages_path();
        let mut meta = self.meta()?;
        let len = self.len()?;
        let clean_len = tail::complete_len(&self.file, &path, len)?;
        let stats = self.check_log(&meta, clean_len)?;

        let mut prepared = Vec::with_capacity(messages.len());
        let mut assets = Vec::new();
        let mut bytes = Vec::new();
        for mut message in messages {
            validate_message(&message)?;
            message.timestamp = atsf::normalize_timestamp(&message.timestamp)?;
            assets.extend(super::assets::take_inline_images(&mut message)?);
            bytes.extend_from_slice(&atsf::to_line(&message)?);
            prepared.push(message);
        }
        if prepared.is_empty() {
            return Ok(Vec::new());
        }
        super::unique::check(&path, clean_len, &prepared)?;
        for asset in &assets {
            asset.store(&thread.assets_dir())?;
        }

        let torn = tail::set_aside(&self.file, &path, len)?;
        (&self.file)
            .write_all(&bytes)
            .and_then(|()| {
                if options.fsync {
                    self.file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| {
                // Not durable: take the lines back, so a failed append wrote nothing.
                let _ = self.file.set_len(clean_len);
                Error::io("appending to", &path, e)
            })?;

        meta.stats = stats.unwrap_or(meta.stats);
        let first = meta.stats.message_count;
        for m in &prepared {
            meta.stats.add(m);
        }
        if let Some(last) = prepared.last() {
            meta.updated_at = last.timestamp.clone();
        }
        set_recorded_length(&mut meta, clean_len + bytes.len() as u64);
        change(&mut meta);
        let meta_error = if options.fsync {
            self.thread.save_meta_after_append(&mut meta).err()
        } else {
            self.save(&mut meta).err()
        };
        let count = prepared.len();
        let mut out = Vec::with_capacity(count);
        let mut meta_error = meta_error;
        let mut torn = torn;
        for (i, message) in prepared.into_iter().enumerate() {
            out.push(Appended {
                message,
                index: first + i as u64,
                torn: torn.take(),
                meta_error: if i + 1 == count {
                    meta_error.take()
                } else {
                    None
                },
            });
        }
        Ok(out)
    }

    /// Refuses a log shorter than `thread.json` describes; returns recounted
    /// stats when the recorded ones do not describe these bytes.
    fn check_log(&self, meta: &ThreadMeta, clean_len: u64) -> Result<Option<Stats>> {
        let recorded = recorded_length(meta);
        if recorded == Some(clean_len) && !meta.stats.lacks_tokens() {
            return Ok(None);
        }
        if let Some(r) = recorded
            && clean_len < r
        {
            return Err(self
                .thread
                .shrunk(format!("{clean_len} bytes long"), format!("{r} bytes")));
        }
        let counted = recount(&self.thread.messages_path())?;
        if recorded.is_none() && counted.lines < meta.stats.message_count {
            return Err(self.thread.shrunk(
                format!("{} lines long", counted.lines),
                format!("{} messages", meta.stats.message_count),
            ));
        }
        let mut stats = counted.stats;
        stats.extra = meta.stats.extra.clone();
        Ok(Some(stats))
    }

    fn len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .ctx("reading metadata of", &self.thread.messages_path())?
            .len())
    }

    /// See [`Thread::snapshot`].
    pub fn snapshot(&self) -> Result<Snapshot> {
        let path = self.thread.messages_path();
        let meta = self.meta()?;
        let len = self.len()?;
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

/// What [`recount`] found.
struct Counted {
    stats: Stats,
    bad: Vec<Error>,
    /// Complete non-blank lines, malformed ones included.
    lines: u64,
}

/// Counts the valid messages of a log, collecting the malformed lines.
fn recount(path: &Path) -> Result<Counted> {
    let mut counted = Counted {
        stats: Stats::default(),
        bad: Vec::new(),
        lines: 0,
    };
    for item in MessageReader::open(path)? {
        match item {
            Ok(m) => {
                counted.lines += 1;
                counted.stats.add(&m);
            }
            Err(e @ Error::Parse { .. }) => {
                counted.lines += 1;
                counted.bad.push(e);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(counted)
}

/// Brings the log (open, locked) up to the cache's copy `cache_log` when
/// that copy holds more. The log only grows: the missing bytes are appended;
/// a log that is not a prefix of the cache's is first saved to a side file.
fn restore_log(file: &File, path: &Path, cache_log: &Path) -> Result<Option<Restored>> {
    if fsutil::same_file(path, cache_log) {
        return Ok(None);
    }
    let Some(mut cached) = fsutil::open_read_opt(cache_log)? else {
        return Ok(None);
    };
    let cache_len = cached
        .metadata()
        .ctx("reading metadata of", cache_log)?
        .len();
    let len = file.metadata().ctx("reading metadata of", path)?.len();
    if cache_len <= len {
        return Ok(None);
    }
    let mut diverged_saved_to = None;
    let mut start = len;
    if !is_prefix(file, path, &mut cached, cache_log, len)? {
        diverged_saved_to = Some(save_aside(file, path, "diverged")?);
        file.set_len(0).ctx("truncating", path)?;
        start = 0;
    }
    cached
        .seek(SeekFrom::Start(start))
        .ctx("seeking in", cache_log)?;
    let mut writer = file;
    let bytes =
        std::io::copy(&mut cached.take(cache_len - start), &mut writer).ctx("restoring", path)?;
    file.sync_all().ctx("syncing", path)?;
    Ok(Some(Restored {
        from: cache_log.to_path_buf(),
        bytes,
        diverged_saved_to,
        files: 0,
    }))
}

/// Whether the first `len` bytes of `file` equal the first `len` of `other`.
fn is_prefix(
    file: &File,
    path: &Path,
    other: &mut File,
    other_path: &Path,
    len: u64,
) -> Result<bool> {
    let mut a = file;
    a.seek(SeekFrom::Start(0)).ctx("seeking in", path)?;
    other
        .seek(SeekFrom::Start(0))
        .ctx("seeking in", other_path)?;
    let mut left = len;
    let mut buf_a = vec![0u8; 64 * 1024];
    let mut buf_b = vec![0u8; 64 * 1024];
    while left > 0 {
        let n = left.min(buf_a.len() as u64) as usize;
        a.read_exact(&mut buf_a[..n]).ctx("reading", path)?;
        other
            .read_exact(&mut buf_b[..n])
            .ctx("reading", other_path)?;
        if buf_a[..n] != buf_b[..n] {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}

/// Copies the whole of `file` to `<name>.<what>-<random>` beside it, synced.
fn save_aside(file: &File, path: &Path, what: &str) -> Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut side = fsutil::side_file(dir, &format!("{name}.{what}-"))?;
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).ctx("seeking in", path)?;
    std::io::copy(&mut reader, &mut side).ctx("copying", path)?;
    side.as_file().sync_all().ctx("syncing", side.path())?;
    let (_, saved) = side
        .keep()
        .map_err(|e| Error::io("keeping", dir, e.error))?;
    fsutil::sync_dir(dir)?;
    Ok(saved)
}

/// Links back every file of the cache directory `from` that `to` lacks
/// (assets, side files, hook logs), except the cache's own record and the
/// files handled apart. Returns how many.
fn restore_files(from: &Path, to: &Path) -> Result<usize> {
    let mut count = 0;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(from.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let sub = rel.join(&name);
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if rel.as_os_str().is_empty()
                && [atsf::THREAD_FILE, atsf::MESSAGES_FILE, super::CACHE_RECORD]
                    .iter()
                    .any(|n| name == *n)
            {
                continue;
            }
            if name.to_string_lossy().starts_with(fsutil::TMP_PREFIX) {
                continue;
            }
            if kind.is_dir() {
                fsutil::real_dir(to, &to.join(&sub))?;
                stack.push(sub);
            } else if kind.is_file() && std::fs::symlink_metadata(to.join(&sub)).is_err() {
                fsutil::link_or_copy(&entry.path(), &to.join(&sub), true)?;
                count += 1;
            }
        }
    }
    Ok(count)
}

pub(crate) fn recorded_length(meta: &ThreadMeta) -> Option<u64> {
    meta.grove().stats_length()
}

pub(crate) fn set_recorded_length(meta: &mut ThreadMeta, len: u64) {
    meta.grove_mut().set_stats_length(len);
}

/// Checks what grove writes against the spec, beyond what the types
/// enforce. The reader keeps a role or status the spec does not name (another
/// tool wrote it); grove itself writes only the spec's values.
pub fn validate_message(message: &Message) -> Result<()> {
    if message.id.trim().is_empty() {
        return Err(Error::InvalidMessage("`id` must not be empty".into()));
    }
    if let crate::atsf::Role::Other(role) = &message.role {
        return Err(Error::InvalidMessage(format!(
            "field `role`: {role:?} is not one of user, agent, system"
        )));
    }
    for (i, call) in message.tool_calls.iter().flatten().enumerate() {
        if let crate::atsf::ToolStatus::Other(status) = &call.status {
            return Err(Error::InvalidMessage(format!(
                "toolCalls[{i}].status: {status:?} is not one of pending, running, completed, failed"
            )));
        }
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
