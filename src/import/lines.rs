//! Reading a JSON Lines source: line by line from an offset, with each
//! line's byte offset and number, and single lines again by offset.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{IoContext, Result};

/// One line of the source.
pub(super) struct Line {
    /// Where it starts.
    pub offset: u64,
    /// Its number (1-based).
    pub number: u64,
    /// Its bytes, without the newline.
    pub bytes: Vec<u8>,
    /// Whether a newline ends it (the last line of a file being written may
    /// not be complete yet).
    pub terminated: bool,
}

impl Line {
    /// Where the next line starts.
    pub fn end(&self) -> u64 {
        self.offset + self.bytes.len() as u64 + u64::from(self.terminated)
    }

    /// Blank: nothing to read.
    pub fn is_blank(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    /// The line as a JSON object; the error says what is wrong.
    pub fn object(&self) -> std::result::Result<Map<String, Value>, String> {
        parse_object(&self.bytes)
    }
}

/// Parses one line as a JSON object.
pub(super) fn parse_object(bytes: &[u8]) -> std::result::Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(crate::atsf::strip_bom(bytes)) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The lines of a file from an offset.
pub(super) struct Lines {
    reader: BufReader<File>,
    path: PathBuf,
    offset: u64,
    number: u64,
}

impl Lines {
    /// Reads `path` from byte `offset`, whose line is number `line`.
    pub fn open(path: &Path, offset: u64, line: u64) -> Result<Lines> {
        let mut file = File::open(path).ctx("reading", path)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset)).ctx("reading", path)?;
        }
        Ok(Lines {
            reader: BufReader::with_capacity(256 * 1024, file),
            path: path.to_path_buf(),
            offset,
            number: line.max(1),
        })
    }

    /// Goes on from byte `to`, past `newlines` lines that are not read
    /// again (lines already taken, see the Claude importer's sidechains).
    pub fn skip_to(&mut self, to: u64, newlines: u64) -> Result<()> {
        let by = to.saturating_sub(self.offset);
        self.reader
            .seek_relative(i64::try_from(by).unwrap_or(i64::MAX))
            .ctx("reading", &self.path)?;
        self.offset = to;
        self.number += newlines;
        Ok(())
    }

    /// Where the next line starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<Line>> {
        let mut bytes = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut bytes)
            .ctx("reading", &self.path)?;
        if n == 0 {
            return Ok(None);
        }
        let terminated = bytes.last() == Some(&b'\n');
        if terminated {
            bytes.pop();
        }
        let line = Line {
            offset: self.offset,
            number: self.number,
            bytes,
            terminated,
        };
        self.offset += n as u64;
        self.number += 1;
        Ok(Some(line))
    }
}

/// Reads single lines again by offset (a tool result looked up from its call).
pub(super) struct Reread {
    file: File,
    path: PathBuf,
}

impl Reread {
    pub fn open(path: &Path) -> Result<Reread> {
        Ok(Reread {
            file: File::open(path).ctx("reading", path)?,
            path: path.to_path_buf(),
        })
    }

    /// The `len` bytes at `offset`, as a JSON object.
    pub fn object(&mut self, offset: u64, len: usize) -> Result<Option<Map<String, Value>>> {
        let mut bytes = vec![0; len];
        self.file
            .seek(SeekFrom::Start(offset))
            .and_then(|_| self.file.read_exact(&mut bytes))
            .ctx("reading", &self.path)?;
        Ok(parse_object(&bytes).ok())
    }
}
