//! Hook progress: an indicatif spinner on a terminal, plain lines otherwise.

use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Duration;

use grove::setup::{HookOutcome, HookReporter, HookStatus};
use indicatif::{ProgressBar, ProgressStyle};

/// Shows hooks as they run, on stderr.
pub struct Reporter {
    /// The spinner of the hook running now (a terminal only); gone between
    /// hooks, so nothing is left drawn above a question (the trust prompt).
    spinner: std::cell::RefCell<Option<ProgressBar>>,
    terminal: bool,
    quiet: bool,
    /// Labels come from the repository's config: escaped on a terminal.
    escape: bool,
    /// Off a terminal: the last half-minute a "still running" line was
    /// printed for.
    reported: Cell<u64>,
    /// `--no-hooks` was said once.
    said_no_hooks: Cell<bool>,
}

/// How often a running hook says so off a terminal (a CI log): 30 s, or
/// `GROVE_HEARTBEAT_SECS`.
fn heartbeat() -> u64 {
    std::env::var("GROVE_HEARTBEAT_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(30)
}

impl Reporter {
    /// A spinner only when stderr is a terminal; nothing at all when `quiet`.
    pub fn new(quiet: bool) -> Self {
        Reporter {
            spinner: std::cell::RefCell::new(None),
            terminal: !quiet && std::io::stderr().is_terminal(),
            quiet,
            escape: std::io::stderr().is_terminal(),
            reported: Cell::new(0),
            said_no_hooks: Cell::new(false),
        }
    }

    fn safe(&self, text: &str) -> String {
        if self.escape {
            super::output::escape(text, false).into_owned()
        } else {
            text.to_string()
        }
    }
}

impl HookReporter for Reporter {
    fn started(&self, label: &str) {
        self.reported.set(0);
        if self.terminal {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(self.safe(label));
            bar.enable_steady_tick(Duration::from_millis(100));
            if let Some(old) = self.spinner.replace(Some(bar)) {
                old.finish_and_clear();
            }
        } else if !self.quiet {
            // A CI log shows what runs, and that it still does.
            eprintln!("grove: hook started: {}", self.safe(label));
        }
    }

    fn tick(&self, label: &str, elapsed: Duration) {
        if self.terminal || self.quiet {
            return;
        }
        let every = heartbeat();
        let beats = elapsed.as_secs() / every;
        if beats > self.reported.get() {
            self.reported.set(beats);
            eprintln!(
                "grove: hook still running: {} ({} s)",
                self.safe(label),
                beats * every
            );
        }
    }

    fn finished(&self, outcome: &HookOutcome) {
        if self.quiet {
            return;
        }
        // One line for all the hooks `--no-hooks` left out.
        if outcome.status == HookStatus::Skipped && outcome.reason.as_deref() == Some("--no-hooks")
        {
            if !self.said_no_hooks.replace(true) {
                self.print("grove: hooks skipped (--no-hooks)".to_string());
            }
            return;
        }
        self.print(self.safe(&describe(outcome)));
    }
}

impl Reporter {
    fn print(&self, line: String) {
        if let Some(bar) = self.spinner.take() {
            bar.finish_and_clear();
        }
        eprintln!("{line}");
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        if let Some(bar) = self.spinner.take() {
            bar.finish_and_clear();
        }
    }
}

/// One line per hook: `grove: hook ok: npm ci (1234 ms)`.
pub fn describe(o: &HookOutcome) -> String {
    let status = match o.status {
        HookStatus::Ok => "ok",
        HookStatus::Failed => "FAILED",
        HookStatus::TimedOut => "TIMED OUT",
        HookStatus::Interrupted => "INTERRUPTED",
        HookStatus::Skipped => "skipped",
        HookStatus::Background => "started in the background",
    };
    let mut line = format!("grove: hook {status}: {}", o.label);
    if !matches!(o.status, HookStatus::Skipped | HookStatus::Background) {
        line.push_str(&format!(" ({} ms)", o.duration_ms));
    }
    if let Some(reason) = &o.reason {
        line.push_str(&format!(" — {reason}"));
    }
    if o.is_failure()
        && let Some(log) = &o.log_file
    {
        line.push_str(&format!(" [log: {log}]"));
    }
    line
}
