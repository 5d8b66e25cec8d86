//! The thread cache: `<data dir>/cache/<repo key>/<thread id>/`.
//!
//! A worktree's thread lives inside the worktree, so removing the worktree
//! would remove the conversation (ATSF: implementations SHOULD keep a cache).
//! grove keeps, for every thread of a linked worktree, a copy of
//! `thread.json`, a *hard link* to `messages.jsonl` and to every other file
//! of the thread (assets, torn-tail side files, hook logs), and a
//! `cache.json` record. The hard link shares the log's data: every append is
//! in the cache at once, and a `rm -rf` of the worktree leaves the
//! conversation intact — without grove ever copying or even opening the log
//! while listing. Where a hard link is impossible (another filesystem), the
//! log is copied when the worktree is removed through grove.
//!
//! The cache's log only grows: it is replaced only by a file that extends it
//! byte for byte. Every change to a repository's cache is made under that
//! repository's cache lock.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atsf::{self, ThreadMeta};
use crate::error::{Error, IoContext, Result};
use crate::fsutil::{self, FileLock};
use crate::store::{Thread, ThreadId};

/// Where the cached worktree stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CacheState {
    /// The worktree exists (as far as grove last saw).
    Live,
    /// `grove rm` started removing it; the next list/gc finishes the job.
    Removing,
    /// The worktree was removed; the cache is the thread's only home.
    Removed,
    /// Brought from a git remote by `grove pull`: another machine's thread.
    Remote,
}

/// `cache.json`: what the cache knows of where the thread lived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRecord {
    pub repo_root: String,
    pub worktree_path: String,
    pub branch: String,
    pub state: CacheState,
    pub cached_at: String,
}

/// A cached thread.
#[derive(Debug, Clone)]
pub struct CachedThread {
    pub thread: Thread,
    pub meta: ThreadMeta,
    pub record: CacheRecord,
}

/// The cache's own record in each entry. A thread's own file of that name
/// is not cached (it would take the record's place).
pub(crate) use crate::store::CACHE_RECORD as RECORD;

/// `<cache>/<repo key>` for the repository at `main_root`.
pub fn repo_dir(main_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::cache_root()?.join(crate::home::repo_key(main_root)))
}

/// The cache directory of one thread.
pub fn thread_dir(main_root: &Path, id: &ThreadId) -> Result<PathBuf> {
    Ok(repo_dir(main_root)?.join(id))
}

/// The cached copy of thread `id` of the repository at `main_root`, when the
/// cache holds one.
pub fn cached_copy(main_root: &Path, id: &ThreadId) -> Option<PathBuf> {
    let dir = thread_dir(main_root, id).ok()?;
    std::fs::symlink_metadata(dir.join(atsf::THREAD_FILE))
        .is_ok()
        .then_some(dir)
}

/// Takes the repository's cache lock: every read-modify-write of its cache
/// (records, logs, thread.json copies) holds it.
pub fn lock(main_root: &Path) -> Result<FileLock> {
    FileLock::acquire(&fsutil::lock_path_for(&repo_dir(main_root)?))
}

/// Saves `thread` into the cache. `copy_log` copies `messages.jsonl` when it
/// cannot be hard-linked (done on removal; listing never copies the log).
pub fn save(
    main_root: &Path,
    thread: &Thread,
    record: &CacheRecord,
    copy_log: bool,
) -> Result<PathBuf> {
    let _lock = lock(main_root)?;
    save_locked(main_root, thread, record, copy_log)
}

fn save_locked(
    main_root: &Path,
    thread: &Thread,
    record: &CacheRecord,
    copy_log: bool,
) -> Result<PathBuf> {
    thread.guard()?;
    let dir = thread_dir(main_root, thread.id())?;
    let repo = repo_dir(main_root)?;
    std::fs::create_dir_all(&repo).ctx("creating", &repo)?;
    fsutil::real_dir(&repo, &dir)?;
    save_log(thread, &dir, copy_log)?;
    // A live entry follows its worktree's files, which are the durable
    // ones: written without waiting for the disk (a power cut that takes
    // some of it is repaired by the next read, from the worktree). Any
    // other is about to be the thread's only home: all it holds is synced,
    // names included, whatever an earlier live save left unsynced.
    let durable = record.state != CacheState::Live;
    let meta_bytes = fsutil::read(&thread.meta_path())?;
    let cached_meta = dir.join(atsf::THREAD_FILE);
    // Unchanged since the last save: no second write.
    if fsutil::read(&cached_meta).ok().as_deref() != Some(meta_bytes.as_slice()) {
        if durable {
            fsutil::write_atomic_derived(&cached_meta, &meta_bytes)?;
        } else {
            fsutil::write_atomic_unsynced(&cached_meta, &meta_bytes)?;
        }
    } else if durable {
        fsutil::sync_file(&cached_meta)?;
    }
    link_files(thread.dir(), &dir)?;
    if durable {
        // A log copied rather than linked (another filesystem) is new data.
        let log = dir.join(atsf::MESSAGES_FILE);
        if std::fs::symlink_metadata(&log).is_ok() {
            fsutil::sync_file(&log)?;
        }
    }
    match read_record(&dir) {
        // Only `cachedAt` would change: not worth a write on the first read
        // after each write. The record's time still moves on, so that the
        // next read does not look again.
        Ok(old) if same_place(&old, record) && old.state == record.state => {
            touch(&dir.join(RECORD))
        }
        // Only the state changes: a marker against a killed process, whose
        // writes the kernel keeps (as the intent journal is); after a power
        // cut the older state is finished like an interrupted removal.
        Ok(old) if same_place(&old, record) => write_record_unsynced(&dir, record)?,
        _ if durable => write_record(&dir, record)?,
        _ => write_record_unsynced(&dir, record)?,
    }
    if durable {
        fsutil::sync_dir(&dir)?;
    }
    Ok(dir)
}

/// Links the thread's log into the cache entry `dir` — only when it extends
/// what the cache holds, byte for byte.
fn save_log(thread: &Thread, dir: &Path, copy: bool) -> Result<()> {
    let from = thread.messages_path();
    let to = dir.join(atsf::MESSAGES_FILE);
    if fsutil::same_file(&from, &to) || std::fs::symlink_metadata(&from).is_err() {
        return Ok(());
    }
    if std::fs::symlink_metadata(&to).is_ok() && !extends(&from, &to)? {
        return Err(Error::Refused(format!(
            "{} does not continue grove's cached copy {} byte for byte, so the cache keeps its \
             copy; `grove repair {}` restores the thread's log from it",
            from.display(),
            to.display(),
            thread.id()
        )));
    }
    fsutil::link_or_copy(&from, &to, copy)
}

/// Whether `longer` starts with every byte of `shorter`.
fn extends(longer: &Path, shorter: &Path) -> Result<bool> {
    use std::io::Read;
    let mut a = fsutil::open_read(longer)?;
    let mut b = fsutil::open_read(shorter)?;
    let len_a = a.metadata().ctx("reading metadata of", longer)?.len();
    let len_b = b.metadata().ctx("reading metadata of", shorter)?.len();
    if len_a < len_b {
        return Ok(false);
    }
    let mut buf_a = vec![0u8; 64 * 1024];
    let mut buf_b = vec![0u8; 64 * 1024];
    let mut left = len_b;
    while left > 0 {
        let n = left.min(buf_b.len() as u64) as usize;
        a.read_exact(&mut buf_a[..n]).ctx("reading", longer)?;
        b.read_exact(&mut buf_b[..n]).ctx("reading", shorter)?;
        if buf_a[..n] != buf_b[..n] {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}

/// Links every other file of the thread directory (assets, side files,
/// hook logs) into the cache entry once: they are content-addressed or
/// written once, so a link made earlier stays right.
fn link_files(from: &Path, to: &Path) -> Result<()> {
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let src = from.join(&rel);
        let Ok(entries) = std::fs::read_dir(&src) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let top = rel.as_os_str().is_empty();
            if top
                && [atsf::THREAD_FILE, atsf::MESSAGES_FILE, RECORD]
                    .iter()
                    .any(|n| name == *n)
            {
                continue;
            }
            if name.to_string_lossy().starts_with(fsutil::TMP_PREFIX) {
                continue;
            }
            let sub = rel.join(&name);
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    fsutil::real_dir(to, &to.join(&sub))?;
                    stack.push(sub);
                }
                Ok(t) if t.is_file() => {
                    let dest = to.join(&sub);
                    if !fsutil::same_file(&entry.path(), &dest) {
                        fsutil::link_or_copy(&entry.path(), &dest, true)?;
                    }
                }
                // A symbolic link inside a thread is never followed or kept.
                _ => {}
            }
        }
    }
    Ok(())
}

/// Puts a cached thread back into the worktree `store` it belongs to, after
/// its directory went (`git clean -fdx`): built aside and renamed into
/// place, the log hard-linked again (copied across filesystems).
pub fn restore(cached: &CachedThread, store: &crate::store::Store) -> Result<Thread> {
    restore_thread(&cached.thread, store)
}

/// [`restore`] from the cache entry's thread itself.
pub fn restore_thread(cached: &Thread, store: &crate::store::Store) -> Result<Thread> {
    let staged = store.stage_empty(cached.id())?;
    let bytes = fsutil::read(&cached.meta_path())?;
    fsutil::write_atomic(&staged.path().join(atsf::THREAD_FILE), &bytes)?;
    fsutil::link_or_copy(
        &cached.messages_path(),
        &staged.path().join(atsf::MESSAGES_FILE),
        true,
    )?;
    link_files(cached.dir(), staged.path())?;
    staged.publish()
}

/// Brings the cache of a live thread up to date cheaply: `thread.json` is
/// copied when it changed, the log's hard link is renewed if the log was
/// replaced by one that extends it, new side files are linked. Never opens
/// `messages.jsonl` while the link holds.
pub fn refresh(main_root: &Path, thread: &Thread, record: &CacheRecord) -> Result<()> {
    let dir = thread_dir(main_root, thread.id())?;
    if !needs_refresh(thread, &dir, record) {
        return Ok(());
    }
    let _lock = lock(main_root)?;
    save_locked(main_root, thread, record, false).map(drop)
}

fn needs_refresh(thread: &Thread, dir: &Path, record: &CacheRecord) -> bool {
    let cached_meta = dir.join(atsf::THREAD_FILE);
    let stale = match (
        std::fs::symlink_metadata(thread.meta_path()),
        std::fs::symlink_metadata(&cached_meta),
    ) {
        (Ok(src), Ok(dst)) => src.modified().ok() > dst.modified().ok() || src.len() != dst.len(),
        (Ok(_), Err(_)) => true,
        (Err(_), _) => false,
    };
    let log_linked = fsutil::same_file(&thread.messages_path(), &dir.join(atsf::MESSAGES_FILE));
    let moved =
        read_record(dir).map_or(true, |r| !same_place(&r, record) || r.state != record.state);
    // A new file in the thread directory (a torn tail set aside, a file
    // another tool wrote) changes the directory's time: the save links it.
    let added = match (
        std::fs::symlink_metadata(thread.dir()),
        std::fs::symlink_metadata(dir.join(RECORD)),
    ) {
        // `>=`: both may fall in one tick of the filesystem's clock.
        (Ok(src), Ok(rec)) => src.modified().ok() >= rec.modified().ok(),
        _ => true,
    };
    stale || added || !log_linked || moved
}

fn write_record(dir: &Path, record: &CacheRecord) -> Result<()> {
    fsutil::write_atomic(&dir.join(RECORD), &atsf::to_pretty(record)?)
}

/// Sets `path`'s modification time to now as the filesystem tells time
/// (its clock is coarser than the system's: a precise "now" could lie
/// after a change the directory records a moment later). Best effort: a
/// missed touch only costs another look.
fn touch(path: &Path) {
    // Read-only, never through a link: the owner may set the times.
    let Ok(file) = fsutil::open_read(path) else {
        return;
    };
    #[cfg(unix)]
    {
        use nix::sys::time::TimeSpec;
        let _ = nix::sys::stat::futimens(&file, &TimeSpec::UTIME_OMIT, &TimeSpec::UTIME_NOW);
    }
    #[cfg(not(unix))]
    let _ = file.set_modified(std::time::SystemTime::now());
}

/// Whether two records name the same repository, worktree and branch.
fn same_place(a: &CacheRecord, b: &CacheRecord) -> bool {
    (&a.repo_root, &a.worktree_path, &a.branch) == (&b.repo_root, &b.worktree_path, &b.branch)
}

fn write_record_unsynced(dir: &Path, record: &CacheRecord) -> Result<()> {
    fsutil::write_atomic_unsynced(&dir.join(RECORD), &atsf::to_pretty(record)?)
}

fn read_record(dir: &Path) -> Result<CacheRecord> {
    let path = dir.join(RECORD);
    let bytes = fsutil::read(&path)?;
    serde_json::from_slice(atsf::strip_bom(&bytes)).map_err(|e| Error::parse(&path, e))
}

/// Changes the state in a thread's `cache.json`.
pub fn set_state(main_root: &Path, id: &ThreadId, state: CacheState) -> Result<()> {
    let _lock = lock(main_root)?;
    set_state_at(&thread_dir(main_root, id)?, state)
}

/// Changes the state in the `cache.json` of the cache entry `dir` (the
/// caller holds the cache lock or is alone).
pub(crate) fn set_state_at(dir: &Path, state: CacheState) -> Result<()> {
    let mut record = read_record(dir)?;
    record.state = state;
    write_record(dir, &record)
}

/// Moves the cache entries `dirs` of the repository at `main_root` between
/// `removing` and `removed` or `live`, under the cache lock, without
/// waiting for the disk: should a power cut bring back the older state,
/// discovery settles it from what it finds (a worktree gone: removed; still
/// there: live). Every entry is tried; the first error is returned.
pub(crate) fn mark_all(main_root: &Path, dirs: &[PathBuf], state: CacheState) -> Result<()> {
    if dirs.is_empty() {
        return Ok(());
    }
    let _lock = lock(main_root)?;
    let mut first = Ok(());
    for dir in dirs {
        let marked = read_record(dir).and_then(|mut record| {
            record.state = state;
            write_record_unsynced(dir, &record)
        });
        if first.is_ok() {
            first = marked;
        }
    }
    first
}

/// Adds another machine's thread (`grove pull`) to the cache, with the
/// state `remote`: its files, already written by the pull into a staging
/// directory inside this repository's cache directory, get the cache's
/// record and are renamed into place whole.
pub fn add_remote(
    main_root: &Path,
    id: &ThreadId,
    files: crate::store::ThreadFiles,
) -> Result<PathBuf> {
    let dir = thread_dir(main_root, id)?;
    let repo = repo_dir(main_root)?;
    let _lock = lock(main_root)?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        return Err(Error::Refused(format!(
            "grove's cache already holds a thread {id} ({}) it cannot read; `grove repair {id}` first",
            dir.display()
        )));
    }
    let at = files.staging.path();
    if files.staging.path().parent() != Some(repo.as_path()) {
        return Err(Error::Other(format!(
            "the pulled thread {id} was staged in {}, not in {}",
            at.display(),
            repo.display()
        )));
    }
    fsutil::write_new(&at.join(atsf::THREAD_FILE), &files.meta)?;
    std::fs::File::open(&files.log)
        .and_then(|f| f.sync_all())
        .ctx("syncing", &files.log)?;
    let record = CacheRecord {
        repo_root: main_root.to_string_lossy().into_owned(),
        worktree_path: String::new(),
        branch: String::new(),
        state: CacheState::Remote,
        cached_at: atsf::now_timestamp(),
    };
    write_record(at, &record)?;
    let staged = files.staging.keep();
    std::fs::rename(&staged, &dir).ctx("moving into place", &dir)?;
    fsutil::sync_dir(&repo)?;
    Ok(dir)
}

/// Links the cache's copy of `thread`'s log anew after the log was
/// replaced (a `pull` that put another machine's messages between this
/// one's): the cache otherwise keeps the old file, which the new one does
/// not continue.
pub fn relink_log(main_root: &Path, thread: &Thread) -> Result<()> {
    let dir = thread_dir(main_root, thread.id())?;
    if fsutil::same_file(&dir, thread.dir()) || std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
    }
    let _lock = lock(main_root)?;
    let to = dir.join(atsf::MESSAGES_FILE);
    match std::fs::remove_file(&to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io("removing", &to, e));
        }
        _ => {}
    }
    fsutil::link_or_copy(&thread.messages_path(), &to, true)
}

/// Deletes a thread's cache entry (`grove rm --purge`, `grove delete`): it
/// is renamed aside first (recorded in the intent journal), so it is gone at
/// once and a killed process leaves a trash directory `gc` removes.
pub fn purge(main_root: &Path, id: &ThreadId) -> Result<()> {
    let dir = thread_dir(main_root, id)?;
    let _lock = lock(main_root)?;
    crate::trash::remove_dir(&dir, &repo_dir(main_root)?)
}

/// The cache entries of one repository (`Some(root)`) or of all (`None`):
/// each thread id with its directory, read from the directory names alone.
pub fn entries(main_root: Option<&Path>) -> Result<Vec<(ThreadId, PathBuf)>> {
    let repo_dirs: Vec<PathBuf> = match main_root {
        Some(root) => vec![repo_dir(root)?],
        None => match std::fs::read_dir(crate::home::cache_root()?) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    let mut out = Vec::new();
    for repo in repo_dirs {
        let Ok(entries) = std::fs::read_dir(&repo) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(id) = entry.file_name().into_string() else {
                continue;
            };
            if let Ok(id) = ThreadId::try_from(id)
                && entry.file_type().is_ok_and(|t| t.is_dir())
            {
                out.push((id, entry.path()));
            }
        }
    }
    Ok(out)
}

/// The cache entry of thread `id` of the repository at `main_root`, looked
/// up directly. A link there is returned too, for reading it to refuse it
/// by name (grove never follows links inside its data).
pub fn entry(main_root: &Path, id: &str) -> Result<Option<(ThreadId, PathBuf)>> {
    let Ok(id) = ThreadId::parse(id) else {
        return Ok(None);
    };
    let dir = repo_dir(main_root)?.join(&id);
    Ok(std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir() || m.file_type().is_symlink())
        .then_some((id, dir)))
}

/// Reads the cache entries given (see [`entries`]), and names what could
/// not be read.
pub fn load(entries: Vec<(ThreadId, PathBuf)>) -> (Vec<CachedThread>, Vec<Error>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (id, dir) in entries {
        let thread = Thread::at(id, dir.clone());
        match (thread.meta(), read_record(&dir)) {
            (Ok(meta), Ok(record)) => out.push(CachedThread {
                thread,
                meta,
                record,
            }),
            (Err(e), _) | (_, Err(e)) => errors.push(e),
        }
    }
    (out, errors)
}

/// The cached threads of one repository (`Some(root)`) or of all (`None`),
/// and what could not be read (named by file).
pub fn list(main_root: Option<&Path>) -> Result<(Vec<CachedThread>, Vec<Error>)> {
    Ok(load(entries(main_root)?))
}

/// Removes the temp files a killed writer left in the cache of the
/// repository at `main_root` (under the cache lock, so no write in progress
/// is taken for one). Returns what was removed.
pub fn remove_stale_temps(main_root: &Path) -> Result<Vec<PathBuf>> {
    let repo = repo_dir(main_root)?;
    if !repo.is_dir() {
        return Ok(Vec::new());
    }
    let _lock = lock(main_root)?;
    let mut removed = fsutil::remove_stale_temps(&repo)?;
    if let Ok(entries) = std::fs::read_dir(&repo) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                removed.extend(fsutil::remove_stale_temps_tree(&entry.path())?);
            }
        }
    }
    Ok(removed)
}

/// Whether the worktree at `path` (canonical) of the bare repository at
/// `bare_dir` is a task's made elsewhere than [`crate::home::grove_worktrees_dir`] (a
/// `--dir` task): grove's cache, keyed by the bare directory, records one
/// of the threads in `path`'s `.agent/threads/` as living in `path`.
///
/// The ids found there are only names to look up; the record, this
/// machine's own, decides. A file in the worktree alone (a committed or
/// pulled `thread.json`) never makes it a task's: that would let outside
/// data turn a checkout of the user's into one `grove rm` removes.
pub(crate) fn cached_as_task_of(path: &Path, bare_dir: &Path) -> bool {
    // The common case, a bare repository whose tasks were all made while a
    // worktree of the user's stood in: nothing cached under the bare
    // directory, and no thread of the worktree to look up.
    let Ok(cache) = repo_dir(bare_dir) else {
        return false;
    };
    if !cache.is_dir() {
        return false;
    }
    let threads = path
        .join(crate::atsf::AGENT_DIR)
        .join(crate::atsf::THREADS_DIR);
    let Ok(listing) = std::fs::read_dir(&threads) else {
        return false;
    };
    listing
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|id| crate::store::validate_thread_id(id).is_ok())
        .any(|id| cached_worktree(&cache.join(id)).as_deref() == Some(path))
}

/// The worktree a cache entry's record places its thread in.
fn cached_worktree(entry: &Path) -> Option<PathBuf> {
    let bytes = crate::fsutil::read(&entry.join(RECORD)).ok()?;
    let record: CacheRecord = serde_json::from_slice(crate::atsf::strip_bom(&bytes)).ok()?;
    Some(PathBuf::from(record.worktree_path)).filter(|p| !p.as_os_str().is_empty())
}

/// The main checkout of the repository whose task had its worktree at
/// `path` or above it, as this machine's cache records it: where a grove
/// run from a removed worktree (a shell left in it) finds its repository.
pub fn repo_of_removed_worktree(path: &Path) -> Option<PathBuf> {
    let entries = entries(None).ok()?;
    entries
        .iter()
        .filter_map(|(_, dir)| read_record(dir).ok())
        .filter(|r| !r.worktree_path.is_empty() && path.starts_with(&r.worktree_path))
        .max_by_key(|r| r.worktree_path.len())
        .map(|r| PathBuf::from(r.repo_root))
        .filter(|root| root.is_dir())
}

/// Brings the cache's copy of `thread` up to its new `meta` (`bytes`, as
/// just written)
/// (called by the store, the one place a thread.json change passes
/// through). Only a copy that is there is written, never made, and without
/// the cache's lock — the store holds the thread's, and the copy is
/// replaced whole: a save racing with it writes the same thread's newest
/// bytes, a purge racing with it moves the directory away first. A thread
/// whose repository cannot be told (no `mainRoot`, not in a linked
/// worktree) is left to the next read's refresh.
pub(crate) fn follow(thread: &Thread, meta: &ThreadMeta, bytes: &[u8]) {
    let Some(main_root) = meta
        .grove()
        .main_root()
        .or_else(|| main_root_of(thread.dir()))
    else {
        return;
    };
    let Ok(dir) = thread_dir(&main_root, thread.id()) else {
        return;
    };
    if fsutil::same_file(&dir, thread.dir()) || !dir.is_dir() {
        return;
    }
    let cached = dir.join(atsf::THREAD_FILE);
    // Unsynced: the copy of a live thread follows the worktree's durable
    // file (see `save_locked`).
    if fsutil::refuse_symlink(&cached).is_ok() {
        let _ = fsutil::write_atomic_unsynced(&cached, bytes);
    }
}

/// The main checkout of the linked worktree holding the thread directory
/// `thread_dir` (`<worktree>/.agent/threads/<id>`), read from git's own
/// files (`.git` names the worktree's git directory, whose `commondir`
/// names the repository's).
fn main_root_of(thread_dir: &Path) -> Option<PathBuf> {
    let worktree = thread_dir.parent()?.parent()?.parent()?;
    let dot_git = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let git_dir = PathBuf::from(dot_git.strip_prefix("gitdir:")?.trim());
    let git_dir = if git_dir.is_absolute() {
        git_dir
    } else {
        worktree.join(git_dir)
    };
    let common = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
    let common = git_dir.join(common.trim()).canonicalize().ok()?;
    (common.file_name()? == ".git").then(|| common.parent().map(Path::to_path_buf))?
}
