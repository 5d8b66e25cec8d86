//! Small filesystem primitives shared by the store and the worktree manager.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, IoContext, Result};

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

#[cfg(unix)]
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.len() == y.len() && x.modified().ok() == y.modified().ok(),
        _ => false,
    }
}

/// Hard-links `from` to `to` (replacing an older `to`), or copies when asked
/// and linking is impossible.
pub(crate) fn link_or_copy(from: &Path, to: &Path, copy: bool) -> Result<()> {
    if !from.exists() || same_file(from, to) {
        return Ok(());
    }
    let dir = to.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".grove-link-{}", uuid::Uuid::new_v4()));
    match std::fs::hard_link(from, &tmp) {
        Ok(()) => {}
        Err(_) if copy => {
            std::fs::copy(from, &tmp).ctx("copying", from)?;
        }
        Err(_) => return Ok(()),
    }
    std::fs::rename(&tmp, to).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("renaming into", to, e)
    })
}
