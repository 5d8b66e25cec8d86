//! `worktreeHooks`: the setup applied to a fresh worktree, and the record of
//! what each step did.

mod commands;
pub mod interrupt;
mod symlinks;
mod trust;

use serde::{Deserialize, Serialize};

pub use commands::{
    CommandEnv, current_platform, kill_tree, run_command, run_command_noting, shell,
};
pub use symlinks::{apply_copy, apply_symlink, checked_hook_path, checked_relative};
pub use trust::{TrustAsked, TrustStore, commands_hash, teardown_hash};

/// What kind of step a hook was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookKind {
    Symlink,
    /// A `copies` entry or a `.worktreeinclude` copy (grove extension).
    Copy,
    /// The task's ports (grove extension).
    Ports,
    /// The `env` file (grove extension).
    Env,
    Command,
    InitialPrompt,
}

/// How a hook ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookStatus {
    Ok,
    Failed,
    TimedOut,
    /// Stopped by Ctrl-C (SIGINT), SIGTERM or SIGHUP; its processes were killed.
    Interrupted,
    Skipped,
    /// Started in the background (grove extension `background`); how it
    /// ends is recorded in `metadata.grove.backgroundSetup`.
    Background,
}

/// One hook's outcome, as recorded in `thread.json` `metadata.grove.hooks`
/// and printed by `grove new --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutcome {
    pub kind: HookKind,
    pub label: String,
    pub status: HookStatus,
    /// The command's exit code; `null` for other kinds, timeouts and skips.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The command's output, inside the thread directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl HookOutcome {
    /// A step that was not run.
    pub fn skipped(kind: HookKind, label: impl Into<String>, reason: impl Into<String>) -> Self {
        HookOutcome {
            kind,
            label: label.into(),
            status: HookStatus::Skipped,
            exit_code: None,
            duration_ms: 0,
            log_file: None,
            reason: Some(reason.into()),
        }
    }

    /// Whether the step failed or timed out.
    pub fn is_failure(&self) -> bool {
        matches!(
            self.status,
            HookStatus::Failed | HookStatus::TimedOut | HookStatus::Interrupted
        )
    }
}

/// Receives progress while commands run (the CLI draws a spinner or prints lines).
pub trait HookReporter {
    /// A command is about to start.
    fn started(&self, label: &str);
    /// Called about every 100 ms while a command runs.
    fn tick(&self, label: &str, elapsed: std::time::Duration);
    /// A step ended.
    fn finished(&self, outcome: &HookOutcome);
}

/// A reporter that shows nothing.
pub struct Silent;

impl HookReporter for Silent {
    fn started(&self, _: &str) {}
    fn tick(&self, _: &str, _: std::time::Duration) {}
    fn finished(&self, _: &HookOutcome) {}
}
