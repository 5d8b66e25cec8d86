//! Where output goes and how it looks: data on stdout, messages on stderr,
//! colour decided once.

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
        Output {
            color_stdout: stdout,
            color_stderr: stderr,
        }
    }

    /// Styles for text written to stdout.
    pub fn style(&self) -> Style {
        Style(self.color_stdout)
    }

    /// A status line on stderr.
    pub fn status(&self, message: &str) {
        eprintln!("{message}");
    }

    /// A warning on stderr.
    pub fn warn(&self, message: &str) {
        let label = Style(self.color_stderr).paint("33;1", "warning:");
        eprintln!("{label} {message}");
    }

    /// An error on stderr.
    pub fn error(&self, message: &str) {
        let label = Style(self.color_stderr).paint("31;1", "error:");
        eprintln!("{label} {message}");
    }

    /// Prints `value` as pretty JSON on stdout.
    pub fn json<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, value)?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
        Ok(())
    }

    /// Prints a line of data on stdout.
    pub fn line(&self, text: &str) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")?;
        Ok(())
    }
}

/// ANSI styling, or none.
#[derive(Clone, Copy)]
pub struct Style(bool);

impl Style {
    fn paint(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
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

/// A timestamp for people: `2025-02-14 10:30:15Z`; the raw string if unparsable.
pub fn human_time(ts: &str) -> String {
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%SZ").to_string(),
        Err(_) => ts.to_string(),
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
        let _ = writeln!(err, "{l}");
    }
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
