//! Secrets in threads: found ([`scan_thread`]) before a thread leaves the
//! machine, and replaced by `[REDACTED:<rule>]` in the copy that leaves
//! ([`redacted_copy`]); the thread itself is never changed.
//!
//! What is looked at: the bytes of `thread.json` and of every line of
//! `messages.jsonl` as any JSON reader could decode them — every string
//! token, keys as well as values, every copy of a duplicate key, at any
//! depth, escapes decoded — not serde's tree of them (it keeps one copy of
//! a duplicate key and stops at a depth, and other readers do not). A
//! line that is not JSON is looked at as text as well. The names of the
//! asset files are looked at; their contents (images, files) are not.
//!
//! The copy replaces each secret in the bytes it is written in, escapes
//! included, so that no reading of what leaves gives it back.

mod json;
mod rules;

use std::borrow::Cow;
use std::io::{BufRead, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use rules::{Span, find, names as rule_names};

use crate::error::{Error, IoContext, Result};
use crate::store::{Store, Thread};

/// [`Finding::file`] of a secret in the name of an asset file.
pub const ASSET_NAMES: &str = crate::atsf::ASSETS_DIR;

/// How many times a line is redacted again at most: a replacement can
/// uncover a secret that overlapped the one replaced (only the first of
/// overlapping matches is taken at a time).
const REDACTION_PASSES: usize = 8;

/// One secret found in a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub thread_id: String,
    /// `thread.json`, `messages.jsonl`, or `assets` (the name of an asset
    /// file).
    pub file: &'static str,
    /// 1-based line of that file; 0 for an asset file's name.
    pub line: u64,
    pub rule: &'static str,
    /// The secret with all but its first characters hidden.
    pub masked: String,
}

/// A secret as the scan meets it.
struct Hit {
    rule: &'static str,
    secret: String,
    /// How many lines of what was scanned come before it.
    lines_before: u64,
}

/// The secrets in a thread's `thread.json`, log and asset file names.
pub fn scan_thread(thread: &Thread) -> Result<Vec<Finding>> {
    thread.guard()?;
    let id = thread.id();
    let finding = |file, line, hit: Hit| Finding {
        thread_id: id.to_string(),
        file,
        line,
        rule: hit.rule,
        masked: mask(&hit.secret),
    };
    let mut findings = Vec::new();
    if let Some(bytes) = crate::fsutil::read_opt(&thread.meta_path())? {
        for hit in secrets_in_line(&bytes) {
            let line = hit.lines_before + 1;
            findings.push(finding(crate::atsf::THREAD_FILE, line, hit));
        }
    }
    let log = thread.messages_path();
    if let Some(file) = crate::fsutil::open_read_opt(&log)? {
        // Line by line: a log may be far larger than memory should hold.
        for (n, raw) in std::io::BufReader::new(file).split(b'\n').enumerate() {
            let raw = raw.ctx("reading", &log)?;
            for hit in secrets_in_line(&raw) {
                findings.push(finding(crate::atsf::MESSAGES_FILE, n as u64 + 1, hit));
            }
        }
    }
    for (name, _) in asset_files(&thread.assets_dir()) {
        for hit in secrets_in_text(&name.to_string_lossy()) {
            findings.push(finding(ASSET_NAMES, 0, hit));
        }
    }
    Ok(findings)
}

/// A copy of `thread` in `into` (a store directory, e.g. a temporary one)
/// with every secret replaced by `[REDACTED:<rule>]` where it is written;
/// lines without one keep their bytes, assets are linked (or copied), an
/// asset whose name holds a secret under its name redacted (as the
/// references to it are). Returns the copy and how many secrets were
/// replaced.
pub fn redacted_copy(thread: &Thread, into: &Path) -> Result<(Thread, usize)> {
    thread.guard()?;
    let store = Store::for_project(into);
    let dir = store.threads_dir().join(thread.id());
    std::fs::create_dir_all(&dir).ctx("creating", &dir)?;
    let mut replaced = 0;
    let meta = thread.meta_path();
    if let Some(bytes) = crate::fsutil::read_opt(&meta)? {
        let (out, n) = redact_line(&bytes, &meta)?;
        replaced += n;
        crate::fsutil::write_new_unsynced(&dir.join(crate::atsf::THREAD_FILE), &out)?;
    }
    replaced += redact_log(
        &thread.messages_path(),
        &dir.join(crate::atsf::MESSAGES_FILE),
    )?;
    replaced += link_assets(&thread.assets_dir(), &dir.join(crate::atsf::ASSETS_DIR))?;
    Ok((store.thread(thread.id())?, replaced))
}

/// The secrets of one log line (or of a whole JSON document:
/// `thread.json`): in every string token as decoded, and in its text as
/// well when it is not JSON.
fn secrets_in_line(raw: &[u8]) -> Vec<Hit> {
    let mut hits: Vec<Hit> = secrets_in_strings(raw)
        .into_iter()
        .map(|w| Hit {
            lines_before: newlines(&raw[..w.bytes.start]),
            rule: w.rule,
            secret: w.secret,
        })
        .collect();
    if !json::is_json(raw) {
        for hit in secrets_in_text(&String::from_utf8_lossy(raw)) {
            // The same secret read both ways is one secret.
            if !hits
                .iter()
                .any(|h| h.rule == hit.rule && h.secret == hit.secret)
            {
                hits.push(hit);
            }
        }
        hits.sort_by_key(|h| h.lines_before);
    }
    hits
}

fn secrets_in_text(text: &str) -> Vec<Hit> {
    find(text)
        .into_iter()
        .map(|span| Hit {
            lines_before: newlines(&text.as_bytes()[..span.start]),
            rule: span.rule,
            secret: text[span.start..span.end].to_string(),
        })
        .collect()
}

fn newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// A secret in a string token, and the bytes it is written in there.
struct Written {
    bytes: Range<usize>,
    rule: &'static str,
    secret: String,
}

/// The secrets of every string token of `raw`, decoded, in order.
fn secrets_in_strings(raw: &[u8]) -> Vec<Written> {
    let mut out = Vec::new();
    for contents in json::strings(raw) {
        let written = &raw[contents.clone()];
        let text = json::decode(written);
        let spans = find(&text);
        if spans.is_empty() {
            continue;
        }
        let decoded: Vec<Range<usize>> = spans.iter().map(|s| s.start..s.end).collect();
        let within = json::raw_ranges(written, &decoded);
        for (span, bytes) in spans.iter().zip(within) {
            out.push(Written {
                bytes: contents.start + bytes.start..contents.start + bytes.end,
                rule: span.rule,
                secret: text[span.start..span.end].to_string(),
            });
        }
    }
    out
}

/// `text` with each secret replaced; how many.
pub fn redact_text(text: &str) -> (String, usize) {
    let spans = find(text);
    if spans.is_empty() {
        return (text.to_string(), 0);
    }
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for span in &spans {
        out.push_str(&text[pos..span.start]);
        out.push_str(&placeholder(span.rule));
        pos = span.end;
    }
    out.push_str(&text[pos..]);
    (out, spans.len())
}

fn placeholder(rule: &str) -> String {
    format!("[REDACTED:{rule}]")
}

/// One log line (or a whole JSON document: `thread.json`, read from
/// `path`) with its secrets replaced; how many. Redacted again until no
/// secret is left, or refused.
fn redact_line(raw: &[u8], path: &Path) -> Result<(Vec<u8>, usize)> {
    let mut line = Cow::Borrowed(raw);
    let mut replaced = 0;
    for _ in 0..REDACTION_PASSES {
        let (next, n) = redact_once(&line);
        if n == 0 {
            return Ok((line.into_owned(), replaced));
        }
        replaced += n;
        line = Cow::Owned(next);
    }
    Err(Error::Refused(format!(
        "{} holds a secret that redacting does not take out; not sending it",
        path.display()
    )))
}

/// `raw` with each secret found in a string token replaced in the bytes
/// it is written in (its escapes with it: the string stays valid, the
/// rest of the line keeps its bytes), then, when `raw` is not JSON, each
/// secret found in its text; how many.
fn redact_once(raw: &[u8]) -> (Vec<u8>, usize) {
    let written = secrets_in_strings(raw);
    let mut out = Vec::with_capacity(raw.len());
    let mut pos = 0;
    for w in &written {
        out.extend_from_slice(&raw[pos..w.bytes.start]);
        out.extend_from_slice(placeholder(w.rule).as_bytes());
        pos = w.bytes.end;
    }
    out.extend_from_slice(&raw[pos..]);
    let mut replaced = written.len();
    if !json::is_json(raw) {
        let (text, n) = redact_text(&String::from_utf8_lossy(&out));
        if n > 0 {
            out = text.into_bytes();
            replaced += n;
        }
    }
    (out, replaced)
}

/// Writes the log at `from` redacted to `to`, line by line (a log may be
/// far larger than memory should hold); how many secrets were replaced.
fn redact_log(from: &Path, to: &Path) -> Result<usize> {
    let Some(file) = crate::fsutil::open_read_opt(from)? else {
        return Ok(0);
    };
    let mut reader = std::io::BufReader::new(file);
    let mut writer = std::io::BufWriter::new(crate::fsutil::create_new(to)?);
    let mut line = Vec::new();
    let mut replaced = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ctx("reading", from)? == 0 {
            break;
        }
        let ended = line.last() == Some(&b'\n');
        let body = &line[..line.len() - usize::from(ended)];
        let (redacted, n) = redact_line(body, from)?;
        replaced += n;
        writer.write_all(&redacted).ctx("writing", to)?;
        if ended {
            writer.write_all(b"\n").ctx("writing", to)?;
        }
    }
    writer.flush().ctx("writing", to)?;
    Ok(replaced)
}

/// The secret with its first four characters kept (enough to tell which
/// key it is) and its length.
pub fn mask(secret: &str) -> String {
    let kept: String = secret.chars().take(4).collect();
    format!("{kept}… ({} chars)", secret.chars().count())
}

/// Links (or copies) the asset files into the copy, each whose name holds
/// a secret under its name redacted; how many secrets that replaced.
fn link_assets(from: &Path, to: &Path) -> Result<usize> {
    let files = asset_files(from);
    if files.is_empty() {
        return Ok(0);
    }
    std::fs::create_dir_all(to).ctx("creating", to)?;
    let mut replaced = 0;
    for (name, path) in files {
        let (redacted, n) = redact_text(&name.to_string_lossy());
        let dest = match n {
            0 => to.join(&name),
            _ => to.join(redacted),
        };
        replaced += n;
        crate::fsutil::link_or_copy(&path, &dest, true)?;
    }
    Ok(replaced)
}

/// The regular files of a thread's `assets/` (none when it cannot be
/// read): name and path.
fn asset_files(dir: &Path) -> Vec<(std::ffi::OsString, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.file_name(), e.path()))
        .collect()
}

/// What to do with a thread that holds secrets when it is about to leave
/// the machine (`push`, `export`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Refuse it (the default).
    #[default]
    Refuse,
    /// Send a redacted copy.
    Redact,
    /// Send it as it is (`--allow-secrets`).
    Allow,
}

/// The thread that leaves: the thread itself when it holds no secret (or
/// they are allowed), else a redacted copy in a temporary directory that
/// lives as long as this does.
#[derive(Debug)]
pub struct Leaving {
    pub thread: Thread,
    /// What the scan found (redacted in `thread` when `redacted`).
    pub findings: Vec<Finding>,
    pub redacted: bool,
    _copy: Option<tempfile::TempDir>,
}

/// Scans `thread` and applies `policy`.
pub fn prepare_to_leave(thread: &Thread, policy: Policy) -> Result<Leaving> {
    if policy != Policy::Allow {
        refuse_a_secret_id(thread)?;
    }
    let findings = scan_thread(thread)?;
    if findings.is_empty() || policy == Policy::Allow {
        return Ok(Leaving {
            thread: thread.clone(),
            findings,
            redacted: false,
            _copy: None,
        });
    }
    if policy == Policy::Refuse {
        return Err(refusal(&findings));
    }
    let tmp = tempfile::Builder::new()
        .prefix("grove-redacted-")
        .tempdir()
        .map_err(|e| Error::io("creating a temporary directory in", std::env::temp_dir(), e))?;
    let (copy, _) = redacted_copy(thread, tmp.path())?;
    Ok(Leaving {
        thread: copy,
        findings,
        redacted: true,
        _copy: Some(tmp),
    })
}

/// A thread whose id is a secret cannot be redacted: the id names it
/// wherever it goes (the ref a push makes, the copy an export reads).
fn refuse_a_secret_id(thread: &Thread) -> Result<()> {
    let Some(span) = find(thread.id()).into_iter().next() else {
        return Ok(());
    };
    Err(Error::hinted(format!(
        "the id of thread {} is a secret ({}): it names the thread wherever it goes (the ref \
         `grove push` makes, an export) and cannot be redacted; {{allow-secrets}} sends it as it is",
        mask(thread.id()),
        span.rule
    )))
}

/// The error `push` and `export` refuse a thread with.
fn refusal(findings: &[Finding]) -> Error {
    let first = &findings[0];
    Error::hinted(format!(
        "thread {} holds {} secret(s) (first: {}:{}: {} {}); `{{scan}} {}` lists them. \
         Pass {{redact}} to send a copy with each replaced by [REDACTED:<rule>] (the thread \
         itself is not changed), or {{allow-secrets}} to send it as it is",
        first.thread_id,
        findings.len(),
        first.file,
        first.line,
        first.rule,
        first.masked,
        first.thread_id
    ))
}

#[cfg(test)]
mod tests;
