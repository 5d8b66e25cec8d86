//! Detecting and setting aside a partial last line left by a crashed writer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// Bytes of an incomplete last line that were moved out of `messages.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the bytes now are, next to `messages.jsonl`.
    pub saved_to: PathBuf,
    pub bytes: u64,
}

/// Byte offset just past the last `\n` of the first `len` bytes of `file` (0 if none).
pub(crate) fn complete_len(file: &File, path: &Path, len: u64) -> Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut reader = file;
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = (end - start) as usize;
        reader
            .seek(SeekFrom::Start(start))
            .ctx("seeking in", path)?;
        reader.read_exact(&mut buf[..n]).ctx("reading", path)?;
        if let Some(pos) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + pos as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// If `messages.jsonl` (open, locked, `len` bytes long) ends without a newline,
/// copies the partial line to `messages.jsonl.torn-*` and truncates it away.
/// Nothing is deleted: the side file is written and synced before truncating.
pub(crate) fn set_aside(file: &File, path: &Path, len: u64) -> Result<Option<TornTail>> {
    let clean = complete_len(file, path, len)?;
    if clean == len {
        return Ok(None);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut side = crate::fsutil::side_file(dir, &format!("{name}.torn-"))?;
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(clean))
        .ctx("seeking in", path)?;
    let copied = std::io::copy(&mut reader.take(len - clean), &mut side)
        .ctx("copying torn bytes of", path)?;
    side.flush().ctx("writing", side.path())?;
    side.as_file().sync_all().ctx("syncing", side.path())?;
    let (_, saved_to) = side
        .keep()
        .map_err(|e| crate::Error::io("keeping", dir, e.error))?;
    crate::fsutil::sync_dir(dir)?;
    file.set_len(clean)
        .ctx("truncating the torn line of", path)?;
    file.sync_all().ctx("syncing", path)?;
    Ok(Some(TornTail {
        saved_to,
        bytes: copied,
    }))
}
