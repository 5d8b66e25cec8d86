//! Reading one thread's log: raw regions, their candidate lines, and the
//! messages parsed from those lines only.

use std::io::Read;
use std::path::Path;

use super::{Event, Hit, Query, fields};
use crate::error::{IoContext, Result};
use crate::store::Thread;

/// Searches one thread's log, handing each hit and each malformed
/// candidate line to `emit` in the log's order; stops early when `emit`
/// returns false.
pub fn scan_thread(
    thread: &Thread,
    query: &Query,
    emit: &mut dyn FnMut(Event) -> bool,
) -> Result<()> {
    thread.guard()?;
    let path = thread.messages_path();
    match crate::fsutil::open_read_opt(&path)? {
        Some(file) => scan_log(file, &path, query, emit),
        None => Ok(()),
    }
}

/// [`scan_thread`] over the log read from `file` (named `path` in errors).
pub(super) fn scan_log(
    mut file: impl Read,
    path: &Path,
    query: &Query,
    emit: &mut dyn FnMut(Event) -> bool,
) -> Result<()> {
    let mut scan = Scan {
        query,
        path,
        emit,
        going: true,
        index: 0,
        line_no: 0,
        candidates: Vec::new(),
    };
    // Small enough to stay in the CPU cache across the passes over it; grown
    // only for a line longer than it.
    let mut buf = vec![0u8; 256 << 10];
    let mut filled = 0;
    while scan.going {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = file.read(&mut buf[filled..]).ctx("reading", path)?;
        if n == 0 {
            // A last line without its newline is a write in progress: skipped,
            // as every reader of the log does.
            break;
        }
        let end = filled + n;
        // Only the new bytes can hold the region's last newline.
        let Some(last_nl) = memchr::memrchr(b'\n', &buf[filled..end]).map(|p| p + filled) else {
            filled = end;
            continue; // a line longer than what was read: read on
        };
        scan.region(&buf[..=last_nl]);
        buf.copy_within(last_nl + 1..end, 0);
        filled = end - last_nl - 1;
    }
    Ok(())
}

struct Scan<'a> {
    query: &'a Query,
    path: &'a Path,
    emit: &'a mut dyn FnMut(Event) -> bool,
    /// False once `emit` asked to stop.
    going: bool,
    /// Message index of the next line (blank lines do not count).
    index: u64,
    /// 1-based number of the last line counted.
    line_no: u64,
    candidates: Vec<usize>,
}

impl Scan<'_> {
    /// Processes complete lines (`region` ends with `\n`).
    fn region(&mut self, region: &[u8]) {
        if self.query.prefilter.takes_every_line() {
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', region) {
                self.line(&region[start..nl]);
                start = nl + 1;
            }
            return;
        }
        let mut candidates = std::mem::take(&mut self.candidates);
        self.query.prefilter.candidates(region, &mut candidates);
        let mut counted = 0; // region offset up to which lines are counted
        for &at in &candidates {
            if at < counted {
                continue; // same line as an earlier candidate
            }
            if !self.going {
                break;
            }
            let line_start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |p| p + 1);
            let line_end = at + memchr::memchr(b'\n', &region[at..]).unwrap_or(region.len() - at);
            self.skip_lines(&region[counted..line_start]);
            self.line(&region[line_start..line_end]);
            counted = line_end + 1;
        }
        self.skip_lines(&region[counted.min(region.len())..]);
        self.candidates = candidates;
    }

    /// Counts the complete lines of `bytes` (which starts at a line's
    /// start) without parsing them: one pass over their newlines. A line of
    /// nothing but whitespace is no message, as for every reader of the log;
    /// its first byte tells almost always.
    fn skip_lines(&mut self, bytes: &[u8]) {
        let (mut newlines, mut blanks) = (0u64, 0u64);
        let mut line_start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            newlines += 1;
            blanks += u64::from(bytes[line_start..nl].iter().all(u8::is_ascii_whitespace));
            line_start = nl + 1;
        }
        self.line_no += newlines;
        self.index += newlines - blanks;
    }

    /// Parses and searches one line (without its newline).
    fn line(&mut self, line: &[u8]) {
        self.line_no += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let index = self.index;
        self.index += 1;
        let message = match crate::atsf::parse_message_line(self.path, self.line_no, line) {
            Ok(m) => m,
            Err(e) => {
                self.going = (self.emit)(Event::Malformed(e));
                return;
            }
        };
        if self.query.role.as_ref().is_some_and(|r| *r != message.role) {
            return;
        }
        for (field, text) in fields(&message) {
            for l in text.lines() {
                let matches = self.query.find_in(l);
                if matches.is_empty() || !self.going {
                    continue;
                }
                self.going = (self.emit)(Event::Hit(Hit {
                    index,
                    role: message.role.clone(),
                    timestamp: message.timestamp.clone(),
                    field,
                    line: l.to_string(),
                    matches,
                }));
            }
        }
    }
}
