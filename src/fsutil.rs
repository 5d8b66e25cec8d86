//! Small filesystem primitives shared by the store and the worktree manager.

use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result};

/// Replaces `path` with `bytes` atomically: a unique temp file in the same
/// directory is written, fsynced and renamed over `path`, so a reader sees
/// either the old or the new content, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".grove-tmp-")
        .tempfile_in(dir)
        .ctx("creating a temp file in", dir)?;
    tmp.write_all(bytes).ctx("writing", tmp.path())?;
    tmp.as_file().sync_all().ctx("syncing", tmp.path())?;
    tmp.persist(path)
        .map_err(|e| crate::Error::io("replacing", path, e.error))?;
    sync_dir(dir)
}

/// Creates `path` with `bytes` only if nothing is there yet. Returns whether it wrote.
/// Never overwrites: an existing file wins, even if it was created concurrently.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if path.exists() {
        return Ok(false);
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".grove-tmp-")
        .tempfile_in(dir)
        .ctx("creating a temp file in", dir)?;
    tmp.write_all(bytes).ctx("writing", tmp.path())?;
    tmp.as_file().sync_all().ctx("syncing", tmp.path())?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            sync_dir(dir)?;
            Ok(true)
        }
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(crate::Error::io("creating", path, e.error)),
    }
}

/// Makes a rename or create in `dir` durable. A no-op where directories
/// cannot be opened (Windows).
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .ctx("syncing directory", dir)?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
