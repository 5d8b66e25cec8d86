//! Hook progress: an indicatif spinner on a terminal, plain lines otherwise.

use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Duration;

use grove::hooks::{HookOutcome, HookReporter, HookStatus};
use indicatif::{ProgressBar, ProgressStyle};

/// Shows hooks as they run, on stderr.
pub struct Reporter {
    spinner: Option<ProgressBar>,
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
        let spinner = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Reporter {
            spinner,
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
        match &self.spinner {
            Some(bar) => {
                bar.reset_elapsed();
                bar.set_message(self.safe(label));
                bar.enable_steady_tick(Duration::from_millis(100));
            }
            // A CI log shows what runs, and that it still does.
            None if !self.quiet => eprintln!("grove: hook started: {}", self.safe(label)),
            None => {}
        }
    }

    fn tick(&self, label: &str, elapsed: Duration) {
        if self.spinner.is_some() || self.quiet {
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
        match &self.spinner {
            Some(bar) => {
                bar.disable_steady_tick();
                bar.println(line);
                bar.set_message("");
            }
            None => eprintln!("{line}"),
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        if let Some(bar) = &self.spinner {
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
    };
    let mut line = format!("grove: hook {status}: {}", o.label);
    if o.status != HookStatus::Skipped {
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
