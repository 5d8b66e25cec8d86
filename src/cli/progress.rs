//! Hook progress: an indicatif spinner on a terminal, plain lines otherwise.

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
        if let Some(bar) = &self.spinner {
            bar.reset_elapsed();
            bar.set_message(self.safe(label));
            bar.enable_steady_tick(Duration::from_millis(100));
        }
    }

    fn tick(&self, _label: &str, _elapsed: Duration) {}

    fn finished(&self, outcome: &HookOutcome) {
        if self.quiet {
            return;
        }
        let line = self.safe(&describe(outcome));
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
