//! What installing or uninstalling grove's capture hooks did, for the
//! command to report.

use std::path::PathBuf;

use serde::Serialize;

use super::hookfile;
use crate::agent::Native;

/// An event whose hook grove did not install, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The agent's event (`Stop`).
    pub event: String,
    /// Why, for a person: what grove found and left alone.
    pub reason: String,
}

/// What an installation did for one agent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The agent (`claude-code`, `codex`).
    pub agent: &'static str,
    /// The file the hooks are in, or would have gone into.
    pub file: PathBuf,
    /// The events that have grove's hook now (put in now, or already
    /// there).
    pub installed: Vec<String>,
    /// The events that have not, each with why.
    pub skipped: Vec<Skipped>,
    /// Files written (none when everything was in place already).
    pub files: Vec<PathBuf>,
    /// Codex: what `--trust-agent` recorded in the user's Codex config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::codex_trust::Trusted>,
}

impl Installed {
    pub(super) fn new(native: Native, file: PathBuf) -> Installed {
        Installed {
            agent: native.agent_id(),
            file,
            installed: Vec::new(),
            skipped: Vec::new(),
            files: Vec::new(),
            trust: None,
        }
    }

    /// Every event skipped, for `reason`.
    pub(super) fn refused(mut self, native: Native, reason: &str) -> Installed {
        self.installed.clear();
        self.skipped = hookfile::events(native)
            .iter()
            .map(|e| Skipped {
                event: e.to_string(),
                reason: reason.to_string(),
            })
            .collect();
        self
    }

    /// What was not installed, for a person: one line per reason, naming
    /// its events unless it concerns them all.
    pub fn problems(&self) -> Vec<String> {
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for s in &self.skipped {
            match reasons.iter_mut().find(|(r, _)| *r == s.reason) {
                Some((_, events)) => events.push(&s.event),
                None => reasons.push((&s.reason, vec![&s.event])),
            }
        }
        let whole = self.installed.is_empty() && reasons.len() == 1;
        reasons
            .into_iter()
            .map(|(reason, events)| {
                if whole {
                    format!("{} capture hooks not installed: {reason}", self.agent)
                } else {
                    format!(
                        "{} capture hook not installed for {}: {reason}",
                        self.agent,
                        events.join(", ")
                    )
                }
            })
            .collect()
    }
}

/// What an uninstallation did for one agent.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    /// The agent (`claude-code`, `codex`).
    pub agent: &'static str,
    /// The file grove's hooks were looked for in.
    pub file: PathBuf,
    /// The events whose grove hook was taken out.
    pub removed: Vec<String>,
    /// Files changed or deleted.
    pub files: Vec<PathBuf>,
    /// Why grove could not look, when it could not (grove's hooks may
    /// still be there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Codex: the other tasks whose sessions grove's hooks still capture
    /// (the repository's hooks stay for them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept_for: Vec<String>,
    /// Codex: the trust grove had recorded in the user's Codex config, taken
    /// out with the hooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::codex_trust::Untrusted>,
}

impl Removed {
    pub(super) fn new(native: Native, file: PathBuf) -> Removed {
        Removed {
            agent: native.agent_id(),
            file,
            removed: Vec::new(),
            files: Vec::new(),
            problem: None,
            kept_for: Vec::new(),
            trust: None,
        }
    }

    /// Adds what `other` removed (an older grove's hooks elsewhere).
    pub(super) fn merge(&mut self, other: Removed) {
        for e in other.removed {
            if !self.removed.contains(&e) {
                self.removed.push(e);
            }
        }
        self.files.extend(other.files);
        if self.problem.is_none() {
            self.problem = other.problem;
        }
    }
}
