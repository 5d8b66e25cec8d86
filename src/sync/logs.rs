//! Two copies of a thread's log made one, read from files a line at a
//! time, so that a pull of a log of any size holds at most a few lines and
//! a small index in memory.
//!
//! Logs are append-only, so two copies share a beginning and then diverge.
//! The merge keeps every message exactly once (by `id`): when one log
//! extends the other, the longer one as it is; otherwise the shared
//! beginning, then every other message ordered by timestamp, then id. Every
//! line of this machine's log stays (even two under one id, which an older
//! writer may have left); only the other side's copies of messages this log
//! has are left out. A line that is not a message keeps its bytes and is
//! keyed by them.
//!
//! Bounds, each refused with its reason (nothing is written then): a line
//! longer than [`MAX_LINE`], a log of more than [`MAX_LINES`] lines, copies
//! that diverge by more than [`MAX_DIVERGED`] lines.

use std::collections::HashSet;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The longest line a merge reads.
pub const MAX_LINE: u64 = 8 << 20;
/// The most lines a log being merged may have.
pub const MAX_LINES: u64 = 1_000_000;
/// The most lines after the shared beginning, both sides together, that a
/// merge orders.
pub const MAX_DIVERGED: usize = 100_000;

/// A line's identity: its message id (hashed: ids can be long), or its
/// bytes when it is not a message.
type Key = u128;

/// What a line of a log is, as the merge needs it.
#[derive(Debug, Clone)]
struct Line {
    key: Key,
    /// The text the order goes by after the timestamp: the id, or the
    /// hash of the bytes.
    order: String,
    timestamp: String,
    start: u64,
    len: u64,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<std::borrow::Cow<'a, str>>,
}

/// Which copy a piece of the merged log comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ours,
    Theirs,
}

/// Bytes `start..start + len` of one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub side: Side,
    pub start: u64,
    pub len: u64,
}

/// What merging the other side's log into this one takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// This log already holds every message.
    Same,
    /// The other side's pieces are added at the end of this log.
    Append { pieces: Vec<Piece>, added: u64 },
    /// The merged log is written anew from these pieces of both sides.
    Rewrite { pieces: Vec<Piece>, added: u64 },
}

impl Plan {
    /// Messages the merge adds to this log.
    pub fn added(&self) -> u64 {
        match self {
            Plan::Same => 0,
            Plan::Append { added, .. } | Plan::Rewrite { added, .. } => *added,
        }
    }
}

/// Reads complete lines of one log, with their places.
struct Lines<R> {
    reader: R,
    what: &'static str,
    buf: Vec<u8>,
    at: u64,
    count: u64,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, what: &'static str) -> Self {
        Lines {
            reader,
            what,
            buf: Vec::new(),
            at: 0,
            count: 0,
        }
    }

    /// The next complete line that is not blank; `None` at the end (a last
    /// line without its newline is a write in progress, as for every
    /// reader of the log).
    fn next_line(&mut self) -> Result<Option<Line>> {
        loop {
            self.buf.clear();
            let n = (&mut self.reader)
                .take(MAX_LINE + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| Error::Other(format!("reading {}: {e}", self.what)))?;
            if n == 0 || self.buf.last() != Some(&b'\n') {
                if n as u64 > MAX_LINE {
                    return Err(self.refuse(format!(
                        "line {} is longer than {} MiB",
                        self.count + 1,
                        MAX_LINE >> 20
                    )));
                }
                return Ok(None);
            }
            let start = self.at;
            self.at += n as u64;
            self.count += 1;
            if self.count > MAX_LINES {
                return Err(self.refuse(format!("it has more than {MAX_LINES} lines")));
            }
            let body = &self.buf[..n - 1];
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(describe(body, start, n as u64)));
        }
    }

    fn refuse(&self, why: String) -> Error {
        Error::Refused(format!(
            "{} was not merged: {why} (grove merges logs line by line, within the limits the README gives)",
            self.what
        ))
    }
}

fn describe(body: &[u8], start: u64, len: u64) -> Line {
    let head: Option<Head> = serde_json::from_slice(body).ok();
    let id = head.as_ref().and_then(|h| h.id.as_deref());
    let timestamp = head
        .as_ref()
        .and_then(|h| h.timestamp.as_deref())
        .unwrap_or("")
        .chars()
        .take(64)
        .collect();
    let (key, order) = match id {
        Some(id) => (
            xxhash_rust::xxh3::xxh3_128(id.as_bytes()),
            id.chars().take(256).collect(),
        ),
        None => {
            let hash = xxhash_rust::xxh3::xxh3_128(body);
            // Never equal to an id's hash by construction of the text.
            (
                xxhash_rust::xxh3::xxh3_128(format!("line:{hash:032x}").as_bytes()),
                format!("line:{hash:032x}"),
            )
        }
    };
    Line {
        key,
        order,
        timestamp,
        start,
        len,
    }
}

/// Works out how `theirs` merges into `ours` (this machine's log).
pub fn plan<A: BufRead, B: BufRead>(ours: A, theirs: B) -> Result<Plan> {
    let mut a = Lines::new(ours, "this machine's messages.jsonl");
    let mut b = Lines::new(theirs, "the other side's messages.jsonl");
    let mut ours_keys: HashSet<Key> = HashSet::new();
    // The shared beginning, side by side.
    let (mut next_a, mut next_b);
    let mut prefix_end = 0;
    loop {
        next_a = a.next_line()?;
        next_b = b.next_line()?;
        match (&next_a, &next_b) {
            (Some(x), Some(y)) if x.key == y.key => {
                ours_keys.insert(x.key);
                prefix_end = x.start + x.len;
            }
            _ => break,
        }
    }
    // Theirs has nothing past the shared beginning: this log holds it all.
    let Some(first_theirs) = next_b else {
        return Ok(Plan::Same);
    };
    let mut rest_ours = Vec::new();
    while let Some(line) = next_a.take() {
        ours_keys.insert(line.key);
        rest_ours.push(line);
        next_a = a.next_line()?;
    }
    if rest_ours.len() > MAX_DIVERGED {
        return Err(Error::Refused(format!(
            "this machine's log has more than {MAX_DIVERGED} lines past the beginning it shares \
             with the other copy; they were not merged"
        )));
    }
    // Theirs past the shared beginning, once each, without this log's.
    let mut next = Some(first_theirs);
    if rest_ours.is_empty() {
        // Theirs extends this log: added at its end, in its order, so only
        // where its lines are is kept.
        let mut pieces: Vec<Piece> = Vec::new();
        let mut added = 0;
        while let Some(line) = next {
            if ours_keys.insert(line.key) {
                added += 1;
                push_joined(&mut pieces, piece(Side::Theirs, &line));
            }
            next = b.next_line()?;
        }
        return Ok(match added {
            0 => Plan::Same,
            _ => Plan::Append { pieces, added },
        });
    }
    let mut rest_theirs = Vec::new();
    while let Some(line) = next {
        if ours_keys.insert(line.key) {
            rest_theirs.push(line);
            if rest_ours.len() + rest_theirs.len() > MAX_DIVERGED {
                return Err(Error::Refused(format!(
                    "the two copies of the log differ by more than {MAX_DIVERGED} lines after their \
                     shared beginning; they were not merged"
                )));
            }
        }
        next = b.next_line()?;
    }
    let added = rest_theirs.len() as u64;
    if added == 0 {
        return Ok(Plan::Same);
    }
    let mut rest: Vec<(Side, Line)> = rest_ours
        .into_iter()
        .map(|l| (Side::Ours, l))
        .chain(rest_theirs.into_iter().map(|l| (Side::Theirs, l)))
        .collect();
    // Stable: lines of one time and id keep the order they had.
    rest.sort_by(|(_, x), (_, y)| (&x.timestamp, &x.order).cmp(&(&y.timestamp, &y.order)));
    let mut pieces = Vec::new();
    if prefix_end > 0 {
        pieces.push(Piece {
            side: Side::Ours,
            start: 0,
            len: prefix_end,
        });
    }
    for (side, line) in &rest {
        push_joined(&mut pieces, piece(*side, line));
    }
    Ok(Plan::Rewrite { pieces, added })
}

fn piece(side: Side, line: &Line) -> Piece {
    Piece {
        side,
        start: line.start,
        len: line.len,
    }
}

/// Adds `p` to `pieces`, as part of the last one when it follows it on the
/// same side.
fn push_joined(pieces: &mut Vec<Piece>, p: Piece) {
    match pieces.last_mut() {
        Some(last) if last.side == p.side && last.start + last.len == p.start => {
            last.len += p.len;
        }
        _ => pieces.push(p),
    }
}

/// Copies `pieces` of `ours` and `theirs` to `out`, in order.
pub fn write<A: Read + Seek, B: Read + Seek>(
    pieces: &[Piece],
    ours: &mut A,
    theirs: &mut B,
    out: &mut (impl Write + ?Sized),
) -> std::io::Result<()> {
    for p in pieces {
        let from: &mut dyn ReadSeek = match p.side {
            Side::Ours => ours,
            Side::Theirs => theirs,
        };
        from.seek(SeekFrom::Start(p.start))?;
        let copied = std::io::copy(&mut from.take(p.len), out)?;
        if copied != p.len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a log changed while it was merged",
            ));
        }
    }
    Ok(())
}

trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// The merged log of two logs in memory (see the module's documentation).
pub fn merge_logs(ours: &[u8], theirs: &[u8]) -> Result<Vec<u8>> {
    let plan = plan(ours, theirs)?;
    let complete = |log: &[u8]| match memchr::memrchr(b'\n', log) {
        Some(end) => end + 1,
        None => 0,
    };
    let mut out = Vec::new();
    let (mut a, mut b) = (std::io::Cursor::new(ours), std::io::Cursor::new(theirs));
    let result = match &plan {
        Plan::Same => {
            out.extend_from_slice(&ours[..complete(ours)]);
            Ok(())
        }
        Plan::Append { pieces, .. } => {
            out.extend_from_slice(&ours[..complete(ours)]);
            write(pieces, &mut a, &mut b, &mut out)
        }
        Plan::Rewrite { pieces, .. } => write(pieces, &mut a, &mut b, &mut out),
    };
    result.map_err(|e| Error::Other(format!("merging logs: {e}")))?;
    Ok(out)
}

/// How many messages (complete non-blank lines) a log holds, read a line at
/// a time.
pub fn count_lines(log: impl BufRead) -> Result<u64> {
    let mut lines = Lines::new(log, "messages.jsonl");
    let mut n = 0;
    while lines.next_line()?.is_some() {
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, ts: &str) -> String {
        json!({"id": id, "role": "user", "timestamp": ts, "content": [{"type": "text", "text": id}]})
            .to_string()
            + "\n"
    }

    fn log(msgs: &[(&str, &str)]) -> Vec<u8> {
        msgs.iter()
            .map(|(id, ts)| msg(id, ts))
            .collect::<String>()
            .into_bytes()
    }

    fn ids(log: &[u8]) -> Vec<String> {
        log.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice::<serde_json::Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    fn merge(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
        merge_logs(ours, theirs).unwrap()
    }

    #[test]
    fn a_log_that_extends_the_other_is_kept_as_it_is() {
        let short = log(&[("a", "2025-01-01T00:00:02Z"), ("b", "2025-01-01T00:00:01Z")]);
        let mut long = short.clone();
        long.extend(log(&[("c", "2025-01-01T00:00:00Z")]));
        assert_eq!(merge(&short, &long), long);
        assert_eq!(merge(&long, &short), long);
        assert_eq!(merge(&long, &long), long);
        assert_eq!(plan(&long[..], &short[..]).unwrap(), Plan::Same);
        assert!(matches!(
            plan(&short[..], &long[..]).unwrap(),
            Plan::Append { added: 1, .. }
        ));
    }

    #[test]
    fn diverged_logs_keep_the_common_prefix_then_every_other_message_once_by_time_and_id() {
        let base = [("a", "2025-01-01T00:00:00Z"), ("b", "2025-01-01T00:00:01Z")];
        let ours = log(&[
            base[0],
            base[1],
            ("x", "2025-01-01T00:00:05Z"),
            ("y", "2025-01-01T00:00:07Z"),
        ]);
        let theirs = log(&[
            base[0],
            base[1],
            ("p", "2025-01-01T00:00:06Z"),
            ("q", "2025-01-01T00:00:05Z"),
        ]);
        let merged = merge(&ours, &theirs);
        assert_eq!(ids(&merged), ["a", "b", "q", "x", "p", "y"]);
        assert_eq!(merge(&theirs, &ours), merged, "the same on both machines");
        // Merging again changes nothing.
        assert_eq!(merge(&merged, &theirs), merged);
        assert_eq!(merge(&ours, &merged), merged);
    }

    #[test]
    fn a_torn_last_line_is_left_out() {
        let mut ours = log(&[("a", "2025-01-01T00:00:00Z")]);
        ours.extend_from_slice(b"{\"id\":\"half");
        assert_eq!(ids(&merge(&ours, b"")), ["a"]);
    }

    #[test]
    fn no_line_of_this_machines_log_is_dropped_even_under_a_repeated_id() {
        let ours = [
            msg("a", "2025-01-01T00:00:00Z"),
            msg("x", "2025-01-01T00:00:01Z"),
            msg("x", "2025-01-01T00:00:02Z").replace("\"text\":\"x\"", "\"text\":\"x again\""),
        ]
        .concat()
        .into_bytes();
        let theirs = log(&[("a", "2025-01-01T00:00:00Z"), ("p", "2025-01-01T00:00:03Z")]);
        let merged = merge(&ours, &theirs);
        assert_eq!(ids(&merged), ["a", "x", "x", "p"]);
        assert!(String::from_utf8_lossy(&merged).contains("x again"));
        // Theirs repeated is theirs: once.
        let theirs = [
            msg("a", "2025-01-01T00:00:00Z"),
            msg("q", "2025-01-01T00:00:04Z"),
            msg("q", "2025-01-01T00:00:04Z"),
        ]
        .concat();
        assert_eq!(
            ids(&merge(
                &log(&[("a", "2025-01-01T00:00:00Z")]),
                theirs.as_bytes()
            )),
            ["a", "q"]
        );
    }

    #[test]
    fn a_line_too_long_or_too_much_divergence_is_refused() {
        let mut huge = b"{\"id\":\"big\",\"text\":\"".to_vec();
        huge.resize(huge.len() + MAX_LINE as usize, b'x');
        huge.extend_from_slice(b"\"}\n");
        let err = merge_logs(b"", &huge).unwrap_err();
        assert!(err.to_string().contains("longer than 8 MiB"), "{err}");
        let ours = log(&[("o", "2025-01-01T00:00:00Z")]);
        let mut theirs = Vec::new();
        for i in 0..=MAX_DIVERGED {
            theirs.extend(msg(&format!("t{i}"), "2025-01-01T00:00:00Z").into_bytes());
        }
        let err = merge_logs(&ours, &theirs).unwrap_err();
        assert!(err.to_string().contains("differ by more than"), "{err}");
        // A log that only extends this one is not ordered: no limit but lines.
        assert!(matches!(
            plan(&b""[..], &theirs[..]).unwrap(),
            Plan::Append { .. }
        ));
    }
}
