//! Streaming reader for `messages.jsonl`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::atsf::Message;
use crate::error::{IoContext, Result};

/// Reads `messages.jsonl` line by line, whatever the line length, holding one
/// line in memory at a time.
///
/// Yields `Ok(message)` for every valid line and `Err(Error::Parse { line, .. })`
/// for a malformed one, then goes on with the next line. An I/O error ends the
/// iteration. A last line without its newline is a write in progress (or a
/// crashed writer's) and is not yielded; [`MessageReader::torn_tail`] tells
/// its length afterwards.
pub struct MessageReader {
    reader: Option<BufReader<File>>,
    path: PathBuf,
    line: u64,
    buf: Vec<u8>,
    torn_tail: u64,
}

impl MessageReader {
    /// Opens `path` (never through a symbolic link). A missing file reads as
    /// an empty log.
    pub fn open(path: &Path) -> Result<Self> {
        let reader =
            crate::fsutil::open_read_opt(path)?.map(|f| BufReader::with_capacity(256 * 1024, f));
        Ok(MessageReader {
            reader,
            path: path.to_path_buf(),
            line: 0,
            buf: Vec::new(),
            torn_tail: 0,
        })
    }

    /// Bytes of an incomplete last line seen at the end (0 when the log ends cleanly).
    pub fn torn_tail(&self) -> u64 {
        self.torn_tail
    }

    /// 1-based number of the last line read.
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// Reads the next complete non-blank line into `self.buf`; false at the end.
    fn next_line(&mut self) -> Result<bool> {
        loop {
            let Some(reader) = self.reader.as_mut() else {
                return Ok(false);
            };
            self.buf.clear();
            let n = reader
                .read_until(b'\n', &mut self.buf)
                .ctx("reading", &self.path)?;
            if n == 0 {
                return Ok(false);
            }
            if self.buf.last() != Some(&b'\n') {
                self.torn_tail = n as u64;
                return Ok(false);
            }
            self.line += 1;
            if !self.buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(true);
            }
        }
    }
}

impl Iterator for MessageReader {
    type Item = Result<Message>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_line() {
            Ok(true) => Some(crate::atsf::parse_message_line(
                &self.path, self.line, &self.buf,
            )),
            Ok(false) => None,
            Err(e) => {
                self.reader = None;
                Some(Err(e))
            }
        }
    }
}
