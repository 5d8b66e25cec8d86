//! TCP ports per task (`worktreeHooks.ports`): a registry in grove's data
//! directory (`ports.json`, changed under its lock) hands each task its own
//! ports, each checked free by binding it, never one another existing task
//! holds; `rm`, `gc` and `delete` give them back. A port whose task's
//! worktree is gone (removed behind grove's back) is taken back too.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil::{self, FileLock};

/// The ports grove hands out: above the usual services, below the range
/// systems give out for outgoing connections (Linux: 32768–60999).
pub const RANGE: std::ops::Range<u16> = 20_000..32_000;

/// Most ports one task may ask for.
pub const MAX_PER_TASK: usize = 32;

/// Who holds a port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub thread_id: String,
    pub worktree: PathBuf,
    pub since: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Registry {
    /// Port → its holder.
    #[serde(default)]
    ports: BTreeMap<u16, Holder>,
}

fn path() -> Result<PathBuf> {
    Ok(crate::home::data_dir()?.join("ports.json"))
}

/// Runs `change` on the registry under its lock and saves it.
fn with_registry<T>(change: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let path = path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    let _lock = FileLock::acquire(&fsutil::lock_path_for(&path))?;
    let mut registry: Registry = match fsutil::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::Other(format!(
                "{} is not a port registry ({e}); move it aside and grove starts a new one",
                path.display()
            ))
        })?,
        Err(_) => Registry::default(),
    };
    let before = serde_json::to_vec_pretty(&registry).map_err(|e| Error::Other(e.to_string()))?;
    let out = change(&mut registry)?;
    let bytes = serde_json::to_vec_pretty(&registry).map_err(|e| Error::Other(e.to_string()))?;
    if bytes != before {
        fsutil::write_atomic(&path, &bytes)?;
    }
    Ok(out)
}

/// Hands `n` ports to thread `thread_id` (worktree `worktree`); the ports it
/// holds already count. Each is free now (bound and let go) and held by no
/// other task.
pub fn allocate(thread_id: &str, worktree: &Path, n: usize) -> Result<Vec<u16>> {
    if n > MAX_PER_TASK {
        return Err(Error::Other(format!(
            "worktreeHooks.ports asks for {n} ports; at most {MAX_PER_TASK} per task"
        )));
    }
    with_registry(|r| {
        // Ports of tasks whose worktree is gone come back.
        r.ports
            .retain(|_, h| h.thread_id == thread_id || h.worktree.exists());
        let mut mine: Vec<u16> = r
            .ports
            .iter()
            .filter(|(_, h)| h.thread_id == thread_id)
            .map(|(p, _)| *p)
            .collect();
        // Start where the thread's id points, so tasks spread over the range.
        let span = u32::from(RANGE.end - RANGE.start);
        let start = (xxhash_rust::xxh3::xxh3_64(thread_id.as_bytes()) % u64::from(span)) as u32;
        let mut tried = 0;
        while mine.len() < n && tried < span {
            let port = RANGE.start + ((start + tried) % span) as u16;
            tried += 1;
            if r.ports.contains_key(&port) || !is_free(port) {
                continue;
            }
            r.ports.insert(
                port,
                Holder {
                    thread_id: thread_id.to_string(),
                    worktree: worktree.to_path_buf(),
                    since: crate::atsf::now_timestamp(),
                },
            );
            mine.push(port);
        }
        if mine.len() < n {
            return Err(Error::Other(format!(
                "no {n} free ports in {}–{}",
                RANGE.start,
                RANGE.end - 1
            )));
        }
        mine.truncate(n);
        Ok(mine)
    })
}

/// Gives back the ports of thread `thread_id`.
pub fn release(thread_id: &str) -> Result<Vec<u16>> {
    // No registry, no ports: nothing to take a lock for.
    if std::fs::symlink_metadata(path()?).is_err() {
        return Ok(Vec::new());
    }
    with_registry(|r| {
        let gone: Vec<u16> = r
            .ports
            .iter()
            .filter(|(_, h)| h.thread_id == thread_id)
            .map(|(p, _)| *p)
            .collect();
        for p in &gone {
            r.ports.remove(p);
        }
        Ok(gone)
    })
}

/// Whether nothing listens on `port` (on any address of this machine).
fn is_free(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)).is_ok()
        && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// The ports recorded on a thread (`metadata.grove.ports`).
pub fn of(meta: &crate::atsf::ThreadMeta) -> Vec<u16> {
    meta.grove().ports()
}

/// `GROVE_PORT`, `GROVE_PORT_1`…: the environment naming `ports`.
pub fn env(ports: &[u16]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(first) = ports.first() {
        out.push(("GROVE_PORT".to_string(), first.to_string()));
    }
    for (i, p) in ports.iter().enumerate() {
        out.push((format!("GROVE_PORT_{}", i + 1), p.to_string()));
    }
    out
}
