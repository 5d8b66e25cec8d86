//! Where the last import of a source stopped, so the next one reads only
//! what is new. One small file per (format, source, destination) under
//! grove's data directory: the byte offset of the last complete line taken,
//! an xxh3 hash of every byte before it, the importer's own state, and the
//! threads it wrote.
//!
//! The file is a hint, never the truth: the source's prefix must hash the
//! same (else it was rewritten or truncated), and each thread's
//! `metadata.import.offset`, read under its lock when written, must still be
//! this offset — otherwise the source is imported again from its start,
//! which appends only what is missing.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use crate::error::{IoContext, Result};

/// How a format's sources can be resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumable {
    /// Not at all: every import reads the whole source.
    No,
    /// A file read whole: an unchanged file is not read again.
    WholeFile,
    /// An append-only file of lines: only the lines after the last import
    /// are read.
    Lines,
}

/// What an importer needs to go on from where it stopped.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Resume {
    /// Bytes of the source taken (whole lines only).
    pub offset: u64,
    /// The line number of the line at `offset` (1-based).
    pub line: u64,
    /// The importer's own state.
    #[serde(default)]
    pub state: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    source: PathBuf,
    #[serde(flatten)]
    resume: Resume,
    /// xxh3-64 of the source's first `offset` bytes, hex.
    prefix_hash: String,
    threads: Vec<PathBuf>,
}

/// A source's cursor file.
pub struct Cursor {
    path: PathBuf,
    source: PathBuf,
}

/// A cursor that checked out: the source still starts with what was taken.
pub struct Valid {
    pub resume: Resume,
    pub threads: Vec<PathBuf>,
    /// The source's length now.
    pub len: u64,
    hasher: Xxh3,
}

impl Cursor {
    /// The cursor of `source` imported as `format` into `destination` (a
    /// string naming where threads go).
    pub fn of(format: &str, source: &Path, destination: &str) -> Result<Cursor> {
        let source = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let mut h = Xxh3::new();
        for part in [
            format.as_bytes(),
            source.as_os_str().as_encoded_bytes(),
            destination.as_bytes(),
        ] {
            h.update(part);
            h.update(&[0]);
        }
        let dir = crate::home::data_dir()?.join("imports");
        Ok(Cursor {
            path: dir.join(format!("{:032x}.json", h.digest128())),
            source,
        })
    }

    /// The recorded cursor, when the source still begins with the bytes it
    /// took and every thread it wrote is still there; `None` otherwise.
    pub fn load(&self) -> Option<Valid> {
        let bytes = crate::fsutil::read(&self.path).ok()?;
        let record: Record = serde_json::from_slice(&bytes).ok()?;
        if record.source != self.source
            || record
                .threads
                .iter()
                .any(|t| std::fs::symlink_metadata(t.join(crate::atsf::THREAD_FILE)).is_err())
        {
            return None;
        }
        let mut file = std::fs::File::open(&self.source).ok()?;
        let len = file.metadata().ok()?.len();
        if len < record.resume.offset {
            return None;
        }
        let mut hasher = Xxh3::new();
        hash_range(&mut file, record.resume.offset, &mut hasher).ok()?;
        if format!("{:016x}", hasher.digest()) != record.prefix_hash {
            return None;
        }
        Some(Valid {
            resume: record.resume,
            threads: record.threads,
            len,
            hasher,
        })
    }

    /// Records `resume` for the next import. `from` is the cursor this
    /// import started from (its hash goes on over the new bytes only).
    pub fn save(&self, from: Option<Valid>, resume: Resume, threads: Vec<PathBuf>) -> Result<()> {
        let mut file = std::fs::File::open(&self.source).ctx("reading", &self.source)?;
        let (mut hasher, start) = match from {
            Some(v) if v.resume.offset <= resume.offset => (v.hasher, v.resume.offset),
            _ => (Xxh3::new(), 0),
        };
        use std::io::Seek;
        file.seek(std::io::SeekFrom::Start(start))
            .ctx("reading", &self.source)?;
        hash_range(&mut file, resume.offset - start, &mut hasher).ctx("reading", &self.source)?;
        let record = Record {
            source: self.source.clone(),
            prefix_hash: format!("{:016x}", hasher.digest()),
            resume,
            threads,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).ctx("creating", dir)?;
        }
        let bytes =
            serde_json::to_vec(&record).map_err(|e| crate::error::Error::Other(e.to_string()))?;
        crate::fsutil::write_atomic(&self.path, &bytes)
    }

    /// Forgets the cursor: the next import reads the whole source.
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Feeds the next `len` bytes of `file` to `hasher`.
fn hash_range(file: &mut std::fs::File, len: u64, hasher: &mut Xxh3) -> std::io::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut left = len;
    while left > 0 {
        let want = buf.len().min(left as usize);
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}
