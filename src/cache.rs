//! The thread cache: `<data dir>/cache/<repo key>/<thread id>/`.
//!
//! A worktree's thread lives inside the worktree, so removing the worktree
//! would remove the conversation (ATSF: implementations SHOULD keep a cache).
//! grove keeps, per worktree thread, a copy of `thread.json`, a *hard link*
//! to `messages.jsonl` and to each asset, and a `cache.json` record. The hard
//! link shares the log's data: every append is in the cache at once, and a
//! `rm -rf` of the worktree leaves the conversation intact — without grove
//! ever copying or even opening the log while listing. Where a hard link is
//! impossible (another filesystem), the log is copied when the worktree is
//! removed through grove.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atsf::{self, ThreadMeta};
use crate::error::{Error, IoContext, Result};
use crate::store::Thread;

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

const RECORD: &str = "cache.json";

/// `<cache>/<repo key>` for the repository at `main_root`.
pub fn repo_dir(main_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::cache_root()?.join(crate::home::repo_key(main_root)))
}

/// The cache directory of one thread.
pub fn thread_dir(main_root: &Path, id: &str) -> Result<PathBuf> {
    crate::store::validate_thread_id(id)?;
    Ok(repo_dir(main_root)?.join(id))
}

/// Saves `thread` into the cache. `copy_log` copies `messages.jsonl` when it
/// cannot be hard-linked (done on removal; listing never copies the log).
pub fn save(
    main_root: &Path,
    thread: &Thread,
    record: &CacheRecord,
    copy_log: bool,
) -> Result<PathBuf> {
    let dir = thread_dir(main_root, thread.id())?;
    std::fs::create_dir_all(&dir).ctx("creating", &dir)?;
    let meta_bytes = std::fs::read(thread.meta_path()).ctx("reading", &thread.meta_path())?;
    crate::fsutil::write_atomic(&dir.join(atsf::THREAD_FILE), &meta_bytes)?;
    crate::fsutil::link_or_copy(
        &thread.messages_path(),
        &dir.join(atsf::MESSAGES_FILE),
        copy_log,
    )?;
    let assets = thread.assets_dir();
    if let Ok(entries) = std::fs::read_dir(&assets) {
        let cached_assets = dir.join(atsf::ASSETS_DIR);
        std::fs::create_dir_all(&cached_assets).ctx("creating", &cached_assets)?;
        for entry in entries {
            let entry = entry.ctx("listing", &assets)?;
            let to = cached_assets.join(entry.file_name());
            if !to.exists() {
                // Assets are content-addressed and never change: link or copy once.
                crate::fsutil::link_or_copy(&entry.path(), &to, true)?;
            }
        }
    }
    write_record(&dir, record)?;
    Ok(dir)
}

/// Brings the cache of a live thread up to date cheaply: `thread.json` is
/// copied when it changed, the log's hard link is renewed if the log was
/// replaced. Never opens `messages.jsonl`.
pub fn refresh(main_root: &Path, thread: &Thread, record: &CacheRecord) -> Result<()> {
    let dir = thread_dir(main_root, thread.id())?;
    let cached_meta = dir.join(atsf::THREAD_FILE);
    let stale = match (
        std::fs::metadata(thread.meta_path()),
        std::fs::metadata(&cached_meta),
    ) {
        (Ok(src), Ok(dst)) => src.modified().ok() > dst.modified().ok() || src.len() != dst.len(),
        (Ok(_), Err(_)) => true,
        (Err(_), _) => false,
    };
    let log_linked =
        crate::fsutil::same_file(&thread.messages_path(), &dir.join(atsf::MESSAGES_FILE));
    let moved = match read_record(&dir) {
        Ok(r) => {
            (&r.repo_root, &r.worktree_path, &r.branch, r.state)
                != (
                    &record.repo_root,
                    &record.worktree_path,
                    &record.branch,
                    record.state,
                )
        }
        Err(_) => true,
    };
    if stale || !log_linked || moved {
        save(main_root, thread, record, false)?;
    }
    Ok(())
}

fn write_record(dir: &Path, record: &CacheRecord) -> Result<()> {
    crate::fsutil::write_atomic(&dir.join(RECORD), &atsf::to_pretty(record)?)
}

fn read_record(dir: &Path) -> Result<CacheRecord> {
    let path = dir.join(RECORD);
    let bytes = std::fs::read(&path).ctx("reading", &path)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::parse(&path, e))
}

/// Changes the state in a thread's `cache.json`.
pub fn set_state(main_root: &Path, id: &str, state: CacheState) -> Result<()> {
    let dir = thread_dir(main_root, id)?;
    let mut record = read_record(&dir)?;
    record.state = state;
    write_record(&dir, &record)
}

/// Deletes a thread's cache entry (`grove rm --purge`).
pub fn purge(main_root: &Path, id: &str) -> Result<()> {
    let dir = thread_dir(main_root, id)?;
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", dir, e)),
        _ => Ok(()),
    }
}

/// The cached threads of one repository (`Some(root)`) or of all (`None`).
pub fn list(main_root: Option<&Path>) -> Result<Vec<CachedThread>> {
    let repo_dirs: Vec<PathBuf> = match main_root {
        Some(root) => vec![repo_dir(root)?],
        None => match std::fs::read_dir(crate::home::cache_root()?) {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
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
            if crate::store::validate_thread_id(&id).is_err() {
                continue;
            }
            let dir = entry.path();
            let thread = Thread::at(id, dir.clone());
            let (Ok(meta), Ok(record)) = (thread.meta(), read_record(&dir)) else {
                continue;
            };
            out.push(CachedThread {
                thread,
                meta,
                record,
            });
        }
    }
    Ok(out)
}
