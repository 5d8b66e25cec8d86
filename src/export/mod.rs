//! Threads as documents for people: Markdown to paste into an issue, one
//! self-contained HTML page, or the raw ATSF message log. Every exporter
//! streams the log: a large thread is never held in memory (the Markdown
//! and HTML ones read it twice, the first time for the results of tool
//! calls that came later: see [`completions`]).

pub mod claude;
pub mod codex;
pub mod completions;
pub mod gemini;
mod html;
mod markdown;
pub mod native;
pub mod opencode;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::atsf::{Message, ThreadMeta};
use crate::error::{Error, IoContext, Result};
use crate::store::Thread;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    /// The thread's `messages.jsonl`, complete lines only, byte for byte.
    Jsonl,
}

/// What an export wrote.
#[derive(Debug, Default)]
pub struct Exported {
    pub messages: u64,
    /// Malformed lines skipped (Markdown and HTML), each naming file and
    /// line, and assets refused (a symbolic link), each naming the file.
    pub skipped: Vec<Error>,
}

/// Writes `thread` to `out` in `format`.
pub fn export(thread: &Thread, format: Format, out: &mut dyn Write) -> Result<Exported> {
    export_reviewed(thread, format, None, out)
}

/// [`export`], with the HTML page showing each turn's diff after the turn
/// and the person's edits between turns, as `review` has them (the other
/// formats leave them out).
pub fn export_reviewed(
    thread: &Thread,
    format: Format,
    review: Option<&crate::review::Review>,
    out: &mut dyn Write,
) -> Result<Exported> {
    thread.guard()?;
    let meta = thread.meta()?;
    match format {
        Format::Jsonl => export_jsonl(thread, out),
        Format::Markdown => render(thread, &meta, out, &mut markdown::Markdown),
        Format::Html => render(
            thread,
            &meta,
            out,
            &mut html::Html::new(thread.assets_dir(), review),
        ),
    }
}

/// A document built message by message.
trait Renderer {
    fn header(&mut self, out: &mut dyn Write, meta: &ThreadMeta) -> std::io::Result<()>;
    fn message(&mut self, out: &mut dyn Write, index: u64, m: &Message) -> std::io::Result<()>;
    fn footer(&mut self, out: &mut dyn Write, meta: &ThreadMeta) -> std::io::Result<()>;
    /// What the renderer refused to read (linked assets), reported as skipped.
    fn refused(&mut self) -> Vec<Error> {
        Vec::new()
    }
}

fn render(
    thread: &Thread,
    meta: &ThreadMeta,
    out: &mut dyn Write,
    renderer: &mut dyn Renderer,
) -> Result<Exported> {
    let io = |e| Error::io("writing the export of", thread.dir(), e);
    let mut done = Exported::default();
    // A call whose result came later is shown once, with its result.
    let mut completions = completions::Completions::of(thread)?;
    renderer.header(out, meta).map_err(io)?;
    for (index, item) in thread.messages()?.enumerate() {
        match item {
            Ok(m) => {
                if let Some(m) = completions.shown(m) {
                    renderer.message(out, index as u64, &m).map_err(io)?;
                }
                done.messages += 1;
            }
            Err(e @ Error::Parse { .. }) => done.skipped.push(e),
            Err(e) => return Err(e),
        }
    }
    renderer.footer(out, meta).map_err(io)?;
    done.skipped.extend(renderer.refused());
    Ok(done)
}

fn export_jsonl(thread: &Thread, out: &mut dyn Write) -> Result<Exported> {
    let snap = thread.snapshot()?;
    let path = thread.messages_path();
    let Some(file) = crate::fsutil::open_read_opt(&path)? else {
        return Ok(Exported::default());
    };
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file.take(snap.messages_len));
    let mut lines = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf).ctx("reading", &path)?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        out.write_all(&buf[..n])
            .map_err(|e| Error::io("writing the export of", thread.dir(), e))?;
    }
    Ok(Exported {
        messages: lines,
        skipped: Vec::new(),
    })
}

/// The asset file an image block names, if the name is a plain file name
/// inside `assets/` (anything else — `..`, a path — is refused, not read).
pub(crate) fn asset_path(assets: &Path, asset_ref: &str) -> Option<PathBuf> {
    let name = Path::new(asset_ref);
    let mut parts = name.components();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(file)), None) => Some(assets.join(file)),
        _ => None,
    }
}

/// Short text for one tool call's header: name, title, status.
pub(crate) fn tool_summary(call: &crate::atsf::ToolCall) -> String {
    match &call.title {
        Some(t) => format!("{} — {} ({})", call.name, t, call.status.as_str()),
        None => format!("{} ({})", call.name, call.status.as_str()),
    }
}

/// Writes `thread` as a session `session` of `native`'s run in `cwd`: the
/// file the agent itself would write, where `out` says.
pub fn write_session(
    thread: &Thread,
    native: crate::agent::Native,
    session: &str,
    cwd: &Path,
    out: &mut dyn std::io::Write,
) -> Result<native::NativeExport> {
    thread.guard()?;
    match native {
        crate::agent::Native::Claude => claude::write(thread, session, cwd, out),
        crate::agent::Native::Codex => {
            let setup = codex::CodexSetup::detect();
            codex::write(thread, session, cwd, &setup, out)
        }
        crate::agent::Native::Gemini => gemini::write(thread, session, cwd, out),
        crate::agent::Native::OpenCode => {
            // The version of the `opencode` that will import it.
            let version = which::which("opencode")
                .ok()
                .and_then(|p| crate::agent::program::version(&p));
            opencode::write(thread, session, cwd, version.as_deref(), out)
        }
    }
}
