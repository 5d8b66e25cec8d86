//! `search`: find text in every thread's messages — text, thinking, tool
//! names, inputs and outputs — streaming each log, never loading it whole.
//!
//! A literal query is looked for first in the raw bytes of the log (in its
//! JSON-escaped form, with a SIMD substring search over large buffers, as
//! `grep -F` does); only the lines that contain it are parsed. Queries whose
//! characters an encoder may write as `\uXXXX` (non-ASCII, `<>&'"\`), and
//! lines holding such escapes, are parsed to be sure. `--regex` and
//! `--ignore-case` parse every line.

use std::io::Read;
use std::path::Path;

use memchr::memmem;
use serde::Serialize;

use crate::atsf::{ContentBlock, Message, Role};
use crate::error::{Error, IoContext, Result};
use crate::store::Thread;

/// What to look for.
#[derive(Debug, Clone)]
pub struct Query {
    matcher: Matcher,
    /// Only messages of this role.
    pub role: Option<Role>,
}

#[derive(Debug, Clone)]
enum Matcher {
    Literal {
        text: String,
        /// The query as it appears inside a JSON string.
        escaped: Vec<u8>,
        /// Whether the raw-bytes prefilter alone decides (see module docs).
        exact_prefilter: bool,
    },
    Regex(regex::Regex),
}

impl Query {
    /// A query for `pattern`: a literal, or a regular expression (Rust
    /// `regex` syntax) when `regex`; `ignore_case` for both.
    pub fn new(pattern: &str, regex: bool, ignore_case: bool, role: Option<Role>) -> Result<Self> {
        if pattern.is_empty() {
            return Err(Error::Other("the search query is empty".into()));
        }
        let matcher = if regex || ignore_case {
            let source = if regex {
                pattern.to_string()
            } else {
                regex::escape(pattern)
            };
            let re = regex::RegexBuilder::new(&source)
                .case_insensitive(ignore_case)
                .build()
                .map_err(|e| Error::Other(format!("invalid --regex {pattern:?}: {e}")))?;
            Matcher::Regex(re)
        } else {
            let json = serde_json::to_string(pattern).map_err(|e| Error::Other(e.to_string()))?;
            let escaped = json.as_bytes()[1..json.len() - 1].to_vec();
            let exact_prefilter = pattern
                .chars()
                .all(|c| c.is_ascii() && !c.is_ascii_control() && !"<>&'\"\\".contains(c));
            Matcher::Literal {
                text: pattern.to_string(),
                escaped,
                exact_prefilter,
            }
        };
        Ok(Query { matcher, role })
    }

    /// Byte ranges of the matches in `text` (a thread's title, say).
    pub fn find_in(&self, text: &str) -> Vec<(usize, usize)> {
        self.find(text)
    }

    /// Whether the query is limited to one role (titles then do not match).
    pub fn has_role(&self) -> bool {
        self.role.is_some()
    }

    /// Byte ranges of the matches in `line`.
    fn find(&self, line: &str) -> Vec<(usize, usize)> {
        match &self.matcher {
            Matcher::Literal { text, .. } => line
                .match_indices(text.as_str())
                .map(|(i, m)| (i, i + m.len()))
                .collect(),
            Matcher::Regex(re) => re
                .find_iter(line)
                .filter(|m| !m.is_empty())
                .map(|m| (m.start(), m.end()))
                .collect(),
        }
    }
}

/// One matching line of one message.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// 0-based index of the message in the thread.
    pub index: u64,
    pub role: Role,
    pub timestamp: String,
    /// `text`, `thinking`, `toolName`, `toolTitle`, `toolInput` or `toolOutput`.
    pub field: &'static str,
    /// The matching line of that field.
    pub line: String,
    /// Byte ranges of the matches within `line`.
    pub matches: Vec<(usize, usize)>,
}

/// What searching one thread found.
#[derive(Debug, Default)]
pub struct ThreadHits {
    pub hits: Vec<Hit>,
    /// Malformed lines that contained the query (file and line named).
    pub errors: Vec<Error>,
}

/// Searches one thread's log.
pub fn search_thread(thread: &Thread, query: &Query) -> Result<ThreadHits> {
    thread.guard()?;
    let path = thread.messages_path();
    let Some(mut file) = crate::fsutil::open_read_opt(&path)? else {
        return Ok(ThreadHits::default());
    };
    let mut scan = Scan {
        query,
        path: &path,
        out: ThreadHits::default(),
        index: 0,
        line_no: 0,
        prev_newline: true,
        finder: match &query.matcher {
            Matcher::Literal { escaped, .. } => Some(memmem::Finder::new(escaped).into_owned()),
            Matcher::Regex(_) => None,
        },
        unicode_escape: memmem::Finder::new(b"\\u").into_owned(),
        blank_pair: memmem::Finder::new(b"\n\n").into_owned(),
    };
    // Small enough to stay in the CPU cache across the passes over it; grown
    // only for a line longer than it.
    let mut buf = vec![0u8; 256 << 10];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = file.read(&mut buf[filled..]).ctx("reading", &path)?;
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
        scan.region(&buf[..=last_nl])?;
        buf.copy_within(last_nl + 1..end, 0);
        filled = end - last_nl - 1;
    }
    Ok(scan.out)
}

struct Scan<'a> {
    query: &'a Query,
    path: &'a Path,
    out: ThreadHits,
    /// Message index of the next line (blank lines do not count).
    index: u64,
    /// 1-based number of the last line counted.
    line_no: u64,
    /// Whether the byte before the region was a newline (or it is the start).
    prev_newline: bool,
    finder: Option<memmem::Finder<'static>>,
    unicode_escape: memmem::Finder<'static>,
    blank_pair: memmem::Finder<'static>,
}

impl Scan<'_> {
    /// Processes complete lines (`region` ends with `\n`).
    fn region(&mut self, region: &[u8]) -> Result<()> {
        let Some(finder) = &self.finder else {
            // Every line is parsed.
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', region) {
                self.line(&region[start..nl])?;
                start = nl + 1;
            }
            return Ok(());
        };
        let exact = matches!(
            self.query.matcher,
            Matcher::Literal {
                exact_prefilter: true,
                ..
            }
        );
        // Candidate lines: those holding the escaped query, plus (unless the
        // prefilter is exact) those holding a \u escape.
        let mut candidates: Vec<usize> = finder.find_iter(region).collect();
        if !exact {
            candidates.extend(self.unicode_escape.find_iter(region));
            candidates.sort_unstable();
        }
        let mut counted = 0; // region offset up to which lines are counted
        for at in candidates {
            if at < counted {
                continue; // same line as an earlier candidate
            }
            let line_start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |p| p + 1);
            let line_end = at + memchr::memchr(b'\n', &region[at..]).unwrap_or(region.len() - at);
            self.skip_lines(&region[counted..line_start]);
            self.line(&region[line_start..line_end])?;
            counted = line_end + 1;
        }
        self.skip_lines(&region[counted..]);
        Ok(())
    }

    /// Counts the complete lines of `bytes` without looking into them.
    fn skip_lines(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.line_no += newlines;
        let boundary_blank = u64::from(self.prev_newline && bytes[0] == b'\n');
        let blanks = if self.blank_pair.find(bytes).is_none() {
            boundary_blank
        } else {
            // Blank lines inside: rare, counted one by one.
            let mut blanks = boundary_blank;
            let mut prev = bytes[0];
            for &b in &bytes[1..] {
                if b == b'\n' && prev == b'\n' {
                    blanks += 1;
                }
                prev = b;
            }
            blanks
        };
        self.index += newlines - blanks;
        self.prev_newline = bytes[bytes.len() - 1] == b'\n';
    }

    /// Parses and searches one line (without its newline).
    fn line(&mut self, line: &[u8]) -> Result<()> {
        self.line_no += 1;
        self.prev_newline = true;
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let index = self.index;
        self.index += 1;
        let message = match crate::atsf::parse_message_line(self.path, self.line_no, line) {
            Ok(m) => m,
            Err(e) => {
                self.out.errors.push(e);
                return Ok(());
            }
        };
        if self.query.role.as_ref().is_some_and(|r| *r != message.role) {
            return Ok(());
        }
        for (field, text) in fields(&message) {
            for l in text.lines() {
                let matches = self.query.find(l);
                if !matches.is_empty() {
                    self.out.hits.push(Hit {
                        index,
                        role: message.role.clone(),
                        timestamp: message.timestamp.clone(),
                        field,
                        line: l.to_string(),
                        matches,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The searchable text of a message, with the name of its field.
fn fields(m: &Message) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    for block in &m.content {
        match block {
            ContentBlock::Text { text, .. } => out.push(("text", text.as_str())),
            ContentBlock::Thinking { text, .. } => out.push(("thinking", text.as_str())),
            _ => {}
        }
    }
    for call in m.tool_calls.iter().flatten() {
        out.push(("toolName", call.name.as_str()));
        if let Some(t) = &call.title {
            out.push(("toolTitle", t.as_str()));
        }
        if let Some(i) = &call.input {
            out.push(("toolInput", i.as_str()));
        }
        if let Some(o) = &call.output {
            out.push(("toolOutput", o.as_str()));
        }
    }
    out
}

/// Searches `threads` on every core; results in the order of `threads`.
pub fn search_all(threads: &[Thread], query: &Query) -> Vec<Result<ThreadHits>> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<ThreadHits>>> = (0..threads.len()).map(|_| None).collect();
    let done: Vec<(usize, Result<ThreadHits>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(thread) = threads.get(i) else { break };
                        mine.push((i, search_thread(thread, query)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    for (i, r) in done {
        results[i] = Some(r);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Ok(ThreadHits::default())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefilter_is_exact_only_for_plain_ascii() {
        let q = |s: &str| match Query::new(s, false, false, None).unwrap().matcher {
            Matcher::Literal {
                exact_prefilter,
                escaped,
                ..
            } => (exact_prefilter, escaped),
            Matcher::Regex(_) => unreachable!(),
        };
        assert_eq!(q("login bug"), (true, b"login bug".to_vec()));
        assert_eq!(q("say \"hi\"").1, b"say \\\"hi\\\"".to_vec());
        assert!(!q("say \"hi\"").0);
        assert!(!q("café").0);
        assert!(!q("<div>").0);
    }
}
