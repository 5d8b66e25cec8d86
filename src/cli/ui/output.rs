//! Where output goes and how it looks: data on stdout, messages on stderr,
//! colour decided once.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

use serde::Serialize;

/// `--color`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The process's output channels.
pub struct Output {
    color_stdout: bool,
    color_stderr: bool,
    /// Untrusted text written to stdout is escaped (a terminal, or colour forced).
    escape_stdout: bool,
    /// Messages on stderr are escaped (a terminal).
    escape_stderr: bool,
    /// `-q`: errors only on stderr.
    quiet: bool,
}

fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

impl Output {
    pub fn new(choice: ColorChoice) -> Self {
        let (stdout, stderr) = match choice {
            ColorChoice::Always => (true, true),
            ColorChoice::Never => (false, false),
            ColorChoice::Auto => {
                let allowed = !no_color_env();
                (
                    allowed && std::io::stdout().is_terminal(),
                    allowed && std::io::stderr().is_terminal(),
                )
            }
        };
        let forced = matches!(choice, ColorChoice::Always);
        Output {
            color_stdout: stdout,
            color_stderr: stderr,
            escape_stdout: forced || std::io::stdout().is_terminal(),
            escape_stderr: forced || std::io::stderr().is_terminal(),
            quiet: false,
        }
    }

    /// `-q`: status lines and warnings are not printed, errors are.
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Whether `-q` was given.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Styles for text written to stdout.
    pub fn style(&self) -> Style {
        Style {
            color: self.color_stdout,
            escape: self.escape_stdout,
        }
    }

    fn on_stderr<'a>(&self, message: &'a str) -> Cow<'a, str> {
        if self.escape_stderr {
            escape(message, true)
        } else {
            Cow::Borrowed(message)
        }
    }

    /// A status line on stderr.
    pub fn status(&self, message: &str) {
        if self.quiet {
            return;
        }
        eprintln!("{}", self.on_stderr(message));
    }

    /// A warning on stderr.
    pub fn warn(&self, message: &str) {
        if self.quiet {
            return;
        }
        let label = self.stderr_style().paint("33;1", "warning:");
        eprintln!("{label} {}", self.on_stderr(message));
    }

    /// An error on stderr.
    pub fn error(&self, message: &str) {
        let label = self.stderr_style().paint("31;1", "error:");
        eprintln!("{label} {}", self.on_stderr(message));
    }

    fn stderr_style(&self) -> Style {
        Style {
            color: self.color_stderr,
            escape: self.escape_stderr,
        }
    }

    /// Prints `value` as pretty JSON on stdout.
    pub fn json<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        // stdout writes each line as it ends: a buffer makes a long answer
        // (`blame --json` of a large file) a few writes, not one per line.
        let mut stdout = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut stdout, value)?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
        Ok(())
    }

    /// Writes grove's own bytes (a script, a manual page) to stdout as they are.
    pub fn raw(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes)?;
        stdout.flush()?;
        Ok(())
    }

    /// Prints a line of data on stdout (escaped on a terminal: it may hold
    /// a title or a path from a repository).
    pub fn line(&self, text: &str) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", self.style().block(text))?;
        Ok(())
    }
}

/// ANSI styling, or none; and whether untrusted text is escaped.
#[derive(Clone, Copy)]
pub struct Style {
    color: bool,
    escape: bool,
}

impl Style {
    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// One line of untrusted text (a title, a branch, a label): on a
    /// terminal, every control character is shown escaped, newlines too.
    pub fn text<'a>(self, text: &'a str) -> Cow<'a, str> {
        if self.escape {
            escape(text, false)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// Untrusted text of several lines (a message): like [`Style::text`],
    /// but newlines and tabs stay.
    pub fn block<'a>(self, text: &'a str) -> Cow<'a, str> {
        if self.escape {
            escape(text, true)
        } else {
            Cow::Borrowed(text)
        }
    }
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
    pub fn magenta(self, text: &str) -> String {
        self.paint("35", text)
    }
}

/// Whether `c` may drive a terminal: C0 and C1 control characters, DEL, and
/// the bidirectional overrides and isolates (which reorder what is shown).
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that could drive a terminal shown escaped:
/// `\x1b`, `\r`, `\u{202e}`. With `keep_lines`, `\n`, `\t` and the `\r` of
/// a `\r\n` stay as they are.
///
/// ```ignore
/// assert_eq!(escape("evil #\r  $ npm ci", false), "evil #\\r  $ npm ci");
/// ```
pub fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' if keep_lines => out.push(c),
            '\r' if keep_lines && chars.peek() == Some(&'\n') => {}
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && is_unsafe(c) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// One line for a terminal, whatever `text` holds (the commands of the
/// trust question: each shown exactly as it runs, on one line).
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A timestamp for people: `2025-02-14 10:30:15Z`; the raw string if unparsable.
pub fn human_time(ts: &str) -> String {
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%SZ").to_string(),
        Err(_) => ts.to_string(),
    }
}

/// The first `n` characters of `text` (never cut inside a character).
pub fn head(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// How a thread id is shown in tables: the first 8 characters of a UUID
/// (enough to type as a prefix), any other id whole — `claude-5c03…` cut to
/// 8 characters would name nothing.
pub fn short_id(id: &str) -> &str {
    if uuid::Uuid::parse_str(id).is_ok() {
        &id[..8]
    } else {
        id
    }
}

/// Asks a yes/no question on the terminal: `lines` first, then `question
/// [y/N]`. False without asking when stdin or stderr is not a terminal, and
/// on anything but y/yes.
pub fn confirm(lines: &[String], question: &str) -> bool {
    use std::io::BufRead;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    let mut err = std::io::stderr().lock();
    for l in lines {
        let _ = writeln!(err, "{}", escape(l, false));
    }
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn control_and_bidi_characters_are_shown_escaped() {
        assert_eq!(escape("evil #\r  $ npm ci", false), "evil #\\r  $ npm ci");
        assert_eq!(escape("a\x1b[2Jb\x07", false), "a\\x1b[2Jb\\x07");
        assert_eq!(escape("x\u{202e}y\u{9b}", false), "x\\u{202e}y\\u{9b}");
        assert_eq!(escape("one\ntwo", false), "one\\ntwo");
        assert_eq!(escape("one\r\ntwo\tx", true), "one\ntwo\tx");
        assert_eq!(
            escape("plain text — ünïcode", false),
            "plain text — ünïcode"
        );
    }
}
