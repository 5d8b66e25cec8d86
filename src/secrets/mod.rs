//! Secrets in threads: found ([`scan_thread`]) before a thread leaves the
//! machine, and replaced by `[REDACTED:<rule>]` in the copy that leaves
//! ([`redacted_copy`]); the thread itself is never changed.
//!
//! What is looked at: every string of `thread.json` and of every line of
//! `messages.jsonl` — message text, thinking, tool inputs and outputs,
//! metadata (image blocks' included), fields grove does not know — after
//! JSON decoding, so an escaped secret is found as well as a plain one.
//! Assets (images, files) are not looked into.

mod rules;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use rules::{Span, find, names as rule_names};

use crate::error::{Error, IoContext, Result};
use crate::store::{Store, Thread};

/// One secret found in a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub thread_id: String,
    /// `thread.json` or `messages.jsonl`.
    pub file: &'static str,
    /// 1-based line of that file.
    pub line: u64,
    pub rule: &'static str,
    /// The secret with all but its first characters hidden.
    pub masked: String,
}

/// The secrets in a thread's `thread.json` and log. A log line that is not
/// JSON is looked at as text.
pub fn scan_thread(thread: &Thread) -> Result<Vec<Finding>> {
    thread.guard()?;
    let id = thread.id().to_string();
    let mut findings = Vec::new();
    if let Some(bytes) = crate::fsutil::read_opt(&thread.meta_path())? {
        for (line, span, secret) in secrets_in_document(&bytes) {
            findings.push(Finding {
                thread_id: id.clone(),
                file: crate::atsf::THREAD_FILE,
                line,
                rule: span.rule,
                masked: mask(&secret),
            });
        }
    }
    let log = thread.messages_path();
    if let Some(file) = crate::fsutil::open_read_opt(&log)? {
        // Line by line: a log may be far larger than memory should hold.
        use std::io::BufRead;
        for (n, raw) in std::io::BufReader::new(file).split(b'\n').enumerate() {
            let raw = raw.ctx("reading", &log)?;
            for (span, secret) in secrets_in_line(&raw) {
                findings.push(Finding {
                    thread_id: id.clone(),
                    file: crate::atsf::MESSAGES_FILE,
                    line: n as u64 + 1,
                    rule: span.rule,
                    masked: mask(&secret),
                });
            }
        }
    }
    Ok(findings)
}

/// A copy of `thread` in `into` (a store directory, e.g. a temporary one)
/// with every secret replaced by `[REDACTED:<rule>]`; lines without one
/// keep their bytes, assets are linked (or copied). Returns the copy and
/// how many secrets were replaced.
pub fn redacted_copy(thread: &Thread, into: &Path) -> Result<(Thread, usize)> {
    thread.guard()?;
    let store = Store::for_project(into);
    let dir = store.threads_dir().join(thread.id());
    std::fs::create_dir_all(&dir).ctx("creating", &dir)?;
    let mut replaced = 0;
    if let Some(bytes) = crate::fsutil::read_opt(&thread.meta_path())? {
        let (out, n) = redact_line(&bytes);
        replaced += n;
        crate::fsutil::write_new_unsynced(&dir.join(crate::atsf::THREAD_FILE), &out)?;
    }
    if let Some(bytes) = crate::fsutil::read_opt(&thread.messages_path())? {
        let mut out = Vec::with_capacity(bytes.len());
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                out.push(b'\n');
            }
            let (line, n) = redact_line(raw);
            replaced += n;
            out.extend_from_slice(&line);
        }
        crate::fsutil::write_new_unsynced(&dir.join(crate::atsf::MESSAGES_FILE), &out)?;
    }
    link_assets(&thread.assets_dir(), &dir.join(crate::atsf::ASSETS_DIR))?;
    Ok((store.thread(thread.id())?, replaced))
}

/// The secrets of one log line: in its JSON strings, or in its text when
/// it is not JSON.
fn secrets_in_line(raw: &[u8]) -> Vec<(Span, String)> {
    match serde_json::from_slice::<Value>(raw) {
        Ok(value) => {
            let mut out = Vec::new();
            visit_strings(&value, &mut |s| {
                out.extend(find(s).into_iter().map(|span| {
                    let secret = s[span.start..span.end].to_string();
                    (span, secret)
                }));
            });
            out
        }
        Err(_) => {
            let text = String::from_utf8_lossy(raw);
            find(&text)
                .into_iter()
                .map(|span| {
                    let secret = text[span.start..span.end].to_string();
                    (span, secret)
                })
                .collect()
        }
    }
}

/// The secrets of a JSON document, each with the line of the file where
/// its (escaped) text first appears.
fn secrets_in_document(bytes: &[u8]) -> Vec<(u64, Span, String)> {
    secrets_in_line(bytes)
        .into_iter()
        .map(|(span, secret)| {
            let escaped = escaped(&secret);
            let first = escaped.lines().next().unwrap_or_default();
            let line = memchr::memmem::find(bytes, first.as_bytes()).map_or(1, |at| {
                1 + memchr::memchr_iter(b'\n', &bytes[..at]).count() as u64
            });
            (line, span, secret)
        })
        .collect()
}

fn visit_strings(value: &Value, f: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        Value::Object(map) => {
            for (k, v) in map {
                f(k);
                visit_strings(v, f);
            }
        }
        _ => {}
    }
}

/// Replaces the secrets in every string of `value`; how many.
fn redact_strings(value: &mut Value) -> usize {
    match value {
        Value::String(s) => {
            let (redacted, n) = redact_text(s);
            if n > 0 {
                *s = redacted;
            }
            n
        }
        Value::Array(items) => items.iter_mut().map(redact_strings).sum(),
        Value::Object(map) => map.values_mut().map(redact_strings).sum(),
        _ => 0,
    }
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
        out.push_str(&format!("[REDACTED:{}]", span.rule));
        pos = span.end;
    }
    out.push_str(&text[pos..]);
    (out, spans.len())
}

/// One log line (or a whole JSON document: `thread.json`) with its
/// secrets replaced; how many. The replacement is
/// made in the line's own bytes where the secret appears there as serde
/// writes it (the rest of the line keeps its bytes), else the line is
/// written anew from its redacted value.
fn redact_line(raw: &[u8]) -> (Vec<u8>, usize) {
    let Ok(mut value) = serde_json::from_slice::<Value>(raw) else {
        let (text, n) = redact_text(&String::from_utf8_lossy(raw));
        return if n == 0 {
            (raw.to_vec(), 0)
        } else {
            (text.into_bytes(), n)
        };
    };
    let secrets = secrets_in_line(raw);
    if secrets.is_empty() {
        return (raw.to_vec(), 0);
    }
    let n = redact_strings(&mut value);
    let mut in_place = raw.to_vec();
    for (span, secret) in &secrets {
        let from = escaped(secret);
        let to = format!("[REDACTED:{}]", span.rule);
        in_place = replace_all(&in_place, from.as_bytes(), to.as_bytes());
    }
    if serde_json::from_slice::<Value>(&in_place).ok().as_ref() == Some(&value) {
        return (in_place, n);
    }
    (
        serde_json::to_vec(&value).unwrap_or_else(|_| raw.to_vec()),
        n,
    )
}

/// `s` as it appears inside a JSON string written by serde.
fn escaped(s: &str) -> String {
    String::from_utf8_lossy(&crate::atsf::json_escaped(s.as_bytes())).into_owned()
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut pos = 0;
    for at in memchr::memmem::find_iter(haystack, from) {
        if at < pos {
            continue;
        }
        out.extend_from_slice(&haystack[pos..at]);
        out.extend_from_slice(to);
        pos = at + from.len();
    }
    out.extend_from_slice(&haystack[pos..]);
    out
}

/// The secret with its first four characters kept (enough to tell which
/// key it is) and its length.
pub fn mask(secret: &str) -> String {
    let kept: String = secret.chars().take(4).collect();
    format!("{kept}… ({} chars)", secret.chars().count())
}

/// Links (or copies) the asset files into the copy.
fn link_assets(from: &Path, to: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    std::fs::create_dir_all(to).ctx("creating", to)?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let dest: PathBuf = to.join(entry.file_name());
            crate::fsutil::link_or_copy(&entry.path(), &dest, true)?;
        }
    }
    Ok(())
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

/// The error `push` and `export` refuse a thread with.
fn refusal(findings: &[Finding]) -> Error {
    let first = &findings[0];
    Error::Refused(format!(
        "thread {} holds {} secret(s) (first: {}:{}: {} {}); `grove scan {}` lists them. \
         Pass --redact to send a copy with each replaced by [REDACTED:<rule>] (the thread \
         itself is not changed), or --allow-secrets to send it as it is",
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
