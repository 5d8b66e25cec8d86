//! An agent's program: where it is, and which version it is.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};

/// The program `argv0` as found on `PATH` (or as given, when it is a path).
/// A missing one is an error saying how to get it.
pub fn program(argv0: &str, spec: &super::AgentSpec) -> Result<PathBuf> {
    let agent = spec.id.as_str();
    let hint = match (&spec.file, agent) {
        (Some(_), _) => format!("fix the command of {}", spec.fix_hint()),
        (None, super::CLAUDE_CODE) => {
            "install Claude Code (https://docs.anthropic.com/en/docs/claude-code) so `claude` is on PATH".into()
        }
        (None, super::CODEX) => {
            "install Codex (`npm install -g @openai/codex`) so `codex` is on PATH".into()
        }
        (None, super::GEMINI) => {
            "install Gemini CLI (`npm install -g @google/gemini-cli`) so `gemini` is on PATH".into()
        }
        (None, super::OPENCODE) => {
            "install OpenCode (`npm install -g opencode-ai`) so `opencode` is on PATH".into()
        }
        (None, _) => format!("add {}", spec.fix_hint()),
    };
    which::which(argv0).map_err(|_| {
        Error::Other(format!(
            "the agent {agent} cannot be started: {argv0:?} was not found on PATH; {hint}, \
             or start the agent yourself in the worktree (`grove capture install` records its turns)"
        ))
    })
}

/// The version `program --version` prints (its last word that begins with
/// a digit, `0.169.0` of `codex-cli 0.169.0`), when it says one within
/// [`VERSION_WAIT`]. A session file grove writes names the version of the
/// agent that will read it.
// Asking the agent its version: a plain process, with no terminal.
#[allow(clippy::disallowed_methods)]
pub fn version(program: &Path) -> Option<String> {
    use std::io::Read;
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + VERSION_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    child.stdout.take()?.read_to_string(&mut text).ok()?;
    text.split_whitespace()
        .rev()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
}

/// How long [`version`] waits for the agent's answer.
const VERSION_WAIT: Duration = Duration::from_secs(5);
