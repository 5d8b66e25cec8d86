//! The agents grove starts: Claude Code, Codex, Gemini CLI and OpenCode
//! built in, any other through configuration.
//!
//! An agent is a command line with two placeholders, `{prompt}` (the
//! opening prompt) and `{sessionId}` (the agent's session), one to start a
//! session and one to resume it. Agents are configured under `grove.agents`
//! in grove's own `config.json` (in its data directory; yours, trusted) or
//! in a project's `.agent/config.json` (the repository's: its commands run
//! only once trusted, like `postSetupCommands`). A configured agent may say
//! it speaks a built-in agent's files (`"native": "claude"`, `"codex"`,
//! `"gemini"`, `"opencode"`), so its conversation is captured and resumed
//! like theirs.

pub mod homes;
pub mod marks;
pub mod program;
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
    /// Gemini CLI: `.gemini/settings.json` hooks, chats under
    /// `~/.gemini/tmp/<project>/chats/`.
    Gemini,
    /// OpenCode: a plugin named in the project's `opencode.json`, sessions in
    /// its SQLite database (`~/.local/share/opencode/opencode.db`).
    #[serde(rename = "opencode")]
    OpenCode,
}

impl Native {
    /// The import format of its transcripts (`grove import claude`).
    pub fn format(self) -> &'static str {
        match self {
            Native::Claude => "claude",
            Native::Codex => "codex",
            Native::Gemini => "gemini",
            Native::OpenCode => "opencode",
        }
    }

    /// The agent id grove records for it in `thread.json`.
    pub fn agent_id(self) -> &'static str {
        match self {
            Native::Claude => CLAUDE_CODE,
            Native::Codex => CODEX,
            Native::Gemini => GEMINI,
            Native::OpenCode => OPENCODE,
        }
    }

    /// The agent named `name`: `claude`, `claude-code`, `codex`, `gemini`
    /// (or `gemini-cli`, the id of an imported Gemini chat), `opencode`.
    pub fn from_name(name: &str) -> Option<Native> {
        match name {
            "claude" | CLAUDE_CODE => Some(Native::Claude),
            CODEX => Some(Native::Codex),
            GEMINI | "gemini-cli" => Some(Native::Gemini),
            OPENCODE => Some(Native::OpenCode),
            _ => None,
        }
    }

    /// Every agent whose files grove reads, in the order `--agent all`
    /// takes them.
    pub const ALL: [Native; 4] = [
        Native::Claude,
        Native::Codex,
        Native::Gemini,
        Native::OpenCode,
    ];

    /// The id the import format gives a session's main thread.
    pub fn source_thread_id(self, session: &str) -> String {
        format!("{}-{session}", self.format())
    }
}

/// Claude Code's agent id.
pub const CLAUDE_CODE: &str = "claude-code";
/// Codex's agent id.
pub const CODEX: &str = "codex";
/// Gemini CLI's agent id.
pub const GEMINI: &str = "gemini";
/// OpenCode's agent id.
pub const OPENCODE: &str = "opencode";

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
    /// The config file that defines it (`None`: built in).
    pub file: Option<std::path::PathBuf>,
}

impl AgentSpec {
    /// Where a user fixes this agent's definition: its config file's
    /// `grove.agents.<id>`, or (built in) where to define one.
    pub fn fix_hint(&self) -> String {
        match &self.file {
            Some(file) => format!("grove.agents.{} in {}", self.id, file.display()),
            None => format!(
                "a definition of {} under grove.agents in .agent/config.json or in grove's own config.json",
                self.id
            ),
        }
    }
}

impl AgentSpec {
    /// The built-in definition of `id`, if grove has one.
    pub fn built_in(id: &str) -> Option<AgentSpec> {
        let native = Native::from_name(id)?;
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (command, resume) = match native {
            Native::Claude => (
                words(&["claude", "--session-id", "{sessionId}", "--", "{prompt}"]),
                words(&["claude", "--resume", "{sessionId}", "--", "{prompt}"]),
            ),
            Native::Codex => (
                words(&["codex", "--", "{prompt}"]),
                words(&["codex", "resume", "{sessionId}", "--", "{prompt}"]),
            ),
            // Gemini 0.61 ignores what follows `--`: the prompt is the value
            // of its option, joined to it (`=`), so it is never an option
            // itself; empty, it opens no prompt.
            Native::Gemini => (
                words(&[
                    "gemini",
                    "--session-id",
                    "{sessionId}",
                    "--prompt-interactive={prompt}",
                ]),
                words(&[
                    "gemini",
                    "--resume",
                    "{sessionId}",
                    "--prompt-interactive={prompt}",
                ]),
            ),
            // OpenCode names its sessions itself: the plugin (or the look
            // for sessions when it exits) tells grove which one it is.
            Native::OpenCode => (
                words(&["opencode", "--prompt={prompt}"]),
                words(&["opencode", "--session", "{sessionId}", "--prompt={prompt}"]),
            ),
        };
        Some(AgentSpec {
            id: native.agent_id().to_string(),
            command,
            resume: Some(resume),
            native: Some(native),
            origin: Origin::BuiltIn,
            file: None,
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
    let mut known: Vec<String> = Native::ALL
        .iter()
        .map(|n| n.agent_id().to_string())
        .collect();
    known.extend(settings.agent_ids());
    Err(Error::Other(format!(
        "no agent {id:?}: grove knows {}; others are configured under grove.agents in .agent/config.json \
         ({{\"command\": [\"my-agent\", \"{{prompt}}\"], \"resume\": [\"my-agent\", \"--resume\", \"{{sessionId}}\"]}})",
        known.join(", ")
    )))
}

const PROMPT: &str = "{prompt}";
const SESSION: &str = "{sessionId}";
/// Ends an agent's options: what follows is text, whatever it begins with.
const END_OF_OPTIONS: &str = "--";

/// `template` with its placeholders filled: an argument that is only a
/// placeholder without a value is left out; inside a longer argument a
/// missing value is empty. A command left without a program is an error.
///
/// A prompt is never an option, whoever wrote it (a repository's
/// `initialPrompt`, a pulled thread's first message): an argument that
/// begins with `-` only because of the text filled in is given as text —
/// joined to the `--option` right before it (`--message=-x`), else after
/// `--`, which ends the options. A session id that begins with `-` is
/// refused.
pub fn expand(
    template: &[String],
    prompt: Option<&str>,
    session: Option<&str>,
) -> Result<Vec<String>> {
    let prompt = prompt.filter(|p| !p.is_empty());
    if let Some(s) = session.filter(|s| s.starts_with('-') || s.chars().any(char::is_control)) {
        return Err(Error::Other(format!(
            "{s:?} is not a session id; an agent's session id never begins with '-'"
        )));
    }
    let mut argv: Vec<String> = Vec::new();
    let mut options_ended = false;
    for (i, arg) in template.iter().enumerate() {
        match arg.as_str() {
            PROMPT if prompt.is_none() => continue,
            SESSION if session.is_none() => continue,
            _ => {}
        }
        let value = arg
            .replace(PROMPT, prompt.unwrap_or(""))
            .replace(SESSION, session.unwrap_or(""));
        if i > 0 && !options_ended && value.starts_with('-') && !arg.starts_with('-') {
            // The leading dash is the prompt's: keep it from being parsed
            // as an option of the agent.
            match argv.last_mut() {
                Some(option) if i > 1 && is_long_option(option) && *option == template[i - 1] => {
                    option.push('=');
                    option.push_str(&value);
                    continue;
                }
                _ => {
                    argv.push(END_OF_OPTIONS.to_string());
                    options_ended = true;
                }
            }
        }
        options_ended |= i > 0 && value == END_OF_OPTIONS;
        argv.push(value);
    }
    // `--` with nothing after it (no prompt this time) is left out.
    if argv.len() > 1 && argv.last().is_some_and(|a| a == END_OF_OPTIONS) {
        argv.pop();
    }
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(Error::Other(format!(
            "the agent command {template:?} has no program to run"
        )));
    }
    Ok(argv)
}

/// `--name`: an option that may take its value as `--name=value`.
fn is_long_option(arg: &str) -> bool {
    arg.len() > 2 && arg.starts_with("--") && !arg.contains('=')
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

    #[test]
    fn a_prompt_that_looks_like_an_option_is_given_as_text() {
        let attack = Some("--dangerously-skip-permissions");
        // Built in: the options end before the prompt.
        let claude = AgentSpec::built_in("claude").unwrap();
        assert_eq!(
            expand(&claude.command, attack, Some("s1")).unwrap(),
            words(&[
                "claude",
                "--session-id",
                "s1",
                "--",
                "--dangerously-skip-permissions"
            ])
        );
        let codex = AgentSpec::built_in("codex").unwrap();
        assert_eq!(
            expand(codex.resume.as_ref().unwrap(), attack, Some("s1")).unwrap(),
            words(&[
                "codex",
                "resume",
                "s1",
                "--",
                "--dangerously-skip-permissions"
            ])
        );
        // No prompt: no dangling `--`.
        assert_eq!(
            expand(&claude.command, None, Some("s1")).unwrap(),
            words(&["claude", "--session-id", "s1"])
        );
        // Configured: after `--`, or joined to the option it is the value of.
        assert_eq!(
            expand(&words(&["a", "{prompt}"]), Some("-rf"), None).unwrap(),
            words(&["a", "--", "-rf"])
        );
        assert_eq!(
            expand(&words(&["a", "--message", "{prompt}"]), Some("-rf"), None).unwrap(),
            words(&["a", "--message=-rf"])
        );
        assert_eq!(
            expand(&words(&["a", "{prompt} now"]), Some("--x"), None).unwrap(),
            words(&["a", "--", "--x now"])
        );
        // A template's own options and plain prompts are as written.
        assert_eq!(
            expand(&words(&["a", "--message", "{prompt}"]), Some("fix"), None).unwrap(),
            words(&["a", "--message", "fix"])
        );
        assert_eq!(
            expand(&words(&["a", "--", "{prompt}"]), Some("-x"), None).unwrap(),
            words(&["a", "--", "-x"])
        );
        assert!(expand(&claude.command, Some("hi"), Some("--version")).is_err());
    }

    #[test]
    fn gemini_and_opencode_take_the_prompt_as_their_option_s_value() {
        let attack = Some("--yolo");
        let gemini = AgentSpec::built_in("gemini").unwrap();
        assert_eq!(gemini.id, "gemini");
        assert_eq!(
            expand(&gemini.command, attack, Some("s1")).unwrap(),
            words(&[
                "gemini",
                "--session-id",
                "s1",
                "--prompt-interactive=--yolo"
            ])
        );
        assert_eq!(
            expand(gemini.resume.as_ref().unwrap(), None, Some("s1")).unwrap(),
            words(&["gemini", "--resume", "s1", "--prompt-interactive="])
        );
        assert_eq!(AgentSpec::built_in("gemini-cli").unwrap().id, "gemini");
        let opencode = AgentSpec::built_in("opencode").unwrap();
        assert!(!opencode.chooses_session(), "OpenCode names its sessions");
        assert_eq!(
            expand(opencode.resume.as_ref().unwrap(), attack, Some("ses_1")).unwrap(),
            words(&["opencode", "--session", "ses_1", "--prompt=--yolo"])
        );
    }
}
