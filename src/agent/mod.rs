//! The agents grove starts: Claude Code and Codex built in, any other
//! through configuration.
//!
//! An agent is a command line with two placeholders, `{prompt}` (the
//! opening prompt) and `{sessionId}` (the agent's session), one to start a
//! session and one to resume it. Agents are configured under `grove.agents`
//! in grove's own `config.json` (in its data directory; yours, trusted) or
//! in a project's `.agent/config.json` (the repository's: its commands run
//! only once trusted, like `postSetupCommands`). A configured agent may say
//! it speaks Claude Code's or Codex's files (`"native": "claude"`), so its
//! conversation is captured and resumed like theirs.

pub mod launch;
pub mod resume;
pub mod session;
pub mod settings;

use serde::{Deserialize, Serialize};

pub use settings::{AgentConfig, Settings};

use crate::error::{Error, Result};

/// The agents whose own files grove reads and writes: their hooks, their
/// transcripts, their native sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Native {
    /// Claude Code: `.claude/settings.local.json` hooks, session JSONL under
    /// `~/.claude/projects/`.
    Claude,
    /// Codex: `.codex/hooks.json` hooks, rollouts under `~/.codex/sessions/`.
    Codex,
}

impl Native {
    /// The import format of its transcripts (`grove import claude`).
    pub fn format(self) -> &'static str {
        match self {
            Native::Claude => "claude",
            Native::Codex => "codex",
        }
    }

    /// The agent id grove records for it in `thread.json`.
    pub fn agent_id(self) -> &'static str {
        match self {
            Native::Claude => CLAUDE_CODE,
            Native::Codex => CODEX,
        }
    }

    /// The agent named `name`: `claude`, `claude-code`, `codex`.
    pub fn from_name(name: &str) -> Option<Native> {
        match name {
            "claude" | CLAUDE_CODE => Some(Native::Claude),
            CODEX => Some(Native::Codex),
            _ => None,
        }
    }

    /// The id the import format gives a session's main thread.
    pub fn source_thread_id(self, session: &str) -> String {
        format!("{}-{session}", self.format())
    }
}

/// Claude Code's agent id.
pub const CLAUDE_CODE: &str = "claude-code";
/// Codex's agent id.
pub const CODEX: &str = "codex";

/// Where an agent's definition comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// grove's own.
    BuiltIn,
    /// The user's `config.json` in grove's data directory.
    User,
    /// The project's `.agent/config.json`: its commands need trust.
    Project,
}

/// An agent grove can start.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// Its id, as recorded in `thread.json` (`claude-code`).
    pub id: String,
    /// The command starting a session.
    pub command: Vec<String>,
    /// The command resuming session `{sessionId}`.
    pub resume: Option<Vec<String>>,
    /// Whose files it speaks, for capture and resume.
    pub native: Option<Native>,
    pub origin: Origin,
}

impl AgentSpec {
    /// The built-in definition of `id`, if grove has one.
    pub fn built_in(id: &str) -> Option<AgentSpec> {
        let native = Native::from_name(id)?;
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (command, resume) = match native {
            Native::Claude => (
                words(&["claude", "--session-id", "{sessionId}", "{prompt}"]),
                words(&["claude", "--resume", "{sessionId}", "{prompt}"]),
            ),
            Native::Codex => (
                words(&["codex", "{prompt}"]),
                words(&["codex", "resume", "{sessionId}", "{prompt}"]),
            ),
        };
        Some(AgentSpec {
            id: native.agent_id().to_string(),
            command,
            resume: Some(resume),
            native: Some(native),
            origin: Origin::BuiltIn,
        })
    }

    /// Whether the command starting a session names its session id (so
    /// grove chooses it, and knows the transcript before the agent starts).
    pub fn chooses_session(&self) -> bool {
        self.command.iter().any(|a| a.contains(SESSION))
    }
}

/// The agent `id`: configured (the user's, then the project's), else built
/// in. Unknown ids are an error listing what there is.
pub fn resolve(id: &str, settings: &Settings) -> Result<AgentSpec> {
    if let Some(spec) = settings.agent(id) {
        return Ok(spec);
    }
    if let Some(spec) = AgentSpec::built_in(id) {
        return Ok(spec);
    }
    let mut known: Vec<String> = vec![CLAUDE_CODE.into(), CODEX.into()];
    known.extend(settings.agent_ids());
    Err(Error::Other(format!(
        "no agent {id:?}: grove knows {}; others are configured under grove.agents in .agent/config.json \
         ({{\"command\": [\"my-agent\", \"{{prompt}}\"], \"resume\": [\"my-agent\", \"--resume\", \"{{sessionId}}\"]}})",
        known.join(", ")
    )))
}

const PROMPT: &str = "{prompt}";
const SESSION: &str = "{sessionId}";

/// `template` with its placeholders filled: an argument that is only a
/// placeholder without a value is left out; inside a longer argument a
/// missing value is empty. A command left without a program is an error.
pub fn expand(
    template: &[String],
    prompt: Option<&str>,
    session: Option<&str>,
) -> Result<Vec<String>> {
    let prompt = prompt.filter(|p| !p.is_empty());
    let mut argv = Vec::new();
    for arg in template {
        match arg.as_str() {
            PROMPT if prompt.is_none() => continue,
            SESSION if session.is_none() => continue,
            _ => argv.push(
                arg.replace(PROMPT, prompt.unwrap_or(""))
                    .replace(SESSION, session.unwrap_or("")),
            ),
        }
    }
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(Error::Other(format!(
            "the agent command {template:?} has no program to run"
        )));
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn placeholders_fill_or_leave_out_their_argument() {
        let t = words(&[
            "a",
            "--session-id",
            "{sessionId}",
            "{prompt}",
            "--x={prompt}",
        ]);
        assert_eq!(
            expand(&t, Some("fix it"), Some("s1")).unwrap(),
            words(&["a", "--session-id", "s1", "fix it", "--x=fix it"])
        );
        assert_eq!(
            expand(&t, None, None).unwrap(),
            words(&["a", "--session-id", "--x="])
        );
        assert!(expand(&words(&["{prompt}"]), None, None).is_err());
    }
}
