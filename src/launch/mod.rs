//! Starting an agent in a task: the session planned (a new one, or the
//! thread written as the agent's own session to resume), the agent run in
//! the foreground — it gets the user's terminal (stdin, stdout, stderr
//! inherited) and every signal the terminal sends; grove waits, and its
//! exit code is the agent's — and its conversation captured meanwhile.
//!
//! Above capture, import and export, which it drives; below the command
//! line only.

pub mod resume;
pub mod session;

use std::io::IsTerminal;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::setup::interrupt::Watch;

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
