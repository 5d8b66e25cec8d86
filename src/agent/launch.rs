//! Running an agent in the foreground: it gets the user's terminal (stdin,
//! stdout, stderr inherited) and every signal the terminal sends; grove
//! waits, and its exit code is the agent's.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::hooks::interrupt::Watch;

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

/// How an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The exit code a shell would report: the agent's own, or 128 + the
    /// signal that killed it.
    pub code: i32,
}

/// Runs `argv` in `dir` with `env` added, in the foreground, until it ends.
/// `started` is told the agent's process id once it runs.
// The agent runs in the foreground on the user's terminal: a plain process.
#[allow(clippy::disallowed_methods)]
pub fn run(
    argv: &[String],
    program: &Path,
    dir: &Path,
    env: &[(String, String)],
    started: impl FnOnce(u32),
) -> Result<Exit> {
    let mut cmd = Command::new(program);
    // `PWD` says where it runs too: OpenCode takes its project from it.
    cmd.args(&argv[1..]).current_dir(dir).env("PWD", dir);
    // Piped, grove's stdout carries data (a path, JSON): the agent talks on
    // stderr then, as `grove new --exec` does.
    if !std::io::stdout().is_terminal() {
        cmd.stdout(std::io::stderr());
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    // The terminal's signals reach the agent (same process group); grove
    // must outlive them to record the end of the session.
    let watch = Watch::foreground();
    let mut child = cmd.spawn().map_err(|e| Error::io("starting", program, e))?;
    started(child.id());
    let mut forwarded = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error::io("waiting for", program, e)),
        }
        // A SIGTERM sent to grove alone is meant for the session: pass it on.
        if !forwarded && watch.received() == Some(SIGTERM) {
            forwarded = true;
            terminate(child.id());
        }
    };
    drop(watch);
    Ok(Exit {
        code: exit_code(&status),
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

#[cfg(unix)]
const SIGTERM: i32 = signal_hook::consts::SIGTERM;
#[cfg(not(unix))]
const SIGTERM: i32 = 15;

#[cfg(unix)]
fn terminate(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

#[cfg(not(unix))]
fn terminate(_pid: u32) {}

fn exit_code(status: &std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}
