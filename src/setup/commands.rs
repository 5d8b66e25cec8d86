//! `worktreeHooks.postSetupCommands`: shell commands run in a new worktree.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{HookKind, HookOutcome, HookReporter, HookStatus};
use crate::atsf::PostSetupCommand;

/// The environment a command runs in.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CommandEnv {
    pub worktree: PathBuf,
    pub repo_root: PathBuf,
    pub thread_id: String,
    pub branch: String,
    /// The task's ports (`GROVE_PORT`, `GROVE_PORT_1`…).
    pub ports: Vec<u16>,
}

impl CommandEnv {
    /// `expr` run in the worktree with the task's environment: `GROVE_*`,
    /// its ports, an absolute `GROVE_HOME`.
    pub fn apply(&self, mut expr: duct::Expression) -> duct::Expression {
        for (k, v) in crate::ports::env(&self.ports) {
            expr = expr.env(k, v);
        }
        if let Some(home) = crate::home::home_for_children() {
            expr = expr.env("GROVE_HOME", home);
        }
        expr.dir(&self.worktree)
            .env("GROVE_THREAD_ID", &self.thread_id)
            .env("GROVE_WORKTREE", &self.worktree)
            .env("GROVE_REPO_ROOT", &self.repo_root)
            .env("GROVE_BRANCH", &self.branch)
    }
}

/// This platform as `platforms` spells it: `linux`, `darwin`, `win32`.
pub fn current_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// A shell command line, as every command grove runs for the user does:
/// `sh -c` (`cmd /C` on Windows). With [`crate::git::cmd`] (git) and
/// [`crate::launch`] (the agent, in the foreground), the only place
/// grove starts a process (clippy.toml holds the rest to it).
#[allow(clippy::disallowed_methods)]
pub fn shell(command: &str) -> duct::Expression {
    #[cfg(windows)]
    {
        duct::cmd("cmd", ["/C", command])
    }
    #[cfg(not(windows))]
    {
        duct::cmd("sh", ["-c", command])
    }
}

/// Runs one command through the platform shell with its timeout, its output
/// (stdout and stderr) going to `log`. On timeout the command's whole process
/// tree is killed: it runs in a process group of its own (a new process
/// group on Unix, `taskkill /T` on Windows), and the whole group gets SIGKILL.
///
/// While `watch` is given, a Ctrl-C (SIGINT), SIGTERM or SIGHUP that grove
/// receives kills the group the same way, and the outcome is `interrupted`.
pub fn run_command(
    spec: &PostSetupCommand,
    env: &CommandEnv,
    log: &Path,
    reporter: &dyn HookReporter,
    watch: Option<&super::interrupt::Watch>,
) -> HookOutcome {
    run_command_noting(spec, env, log, reporter, watch, &mut |_| {})
}

/// [`run_command`], telling `started` the pid of the command's shell (the
/// leader of its process group) once it runs: a background command's
/// waiter records it so `rm` can kill the group.
pub fn run_command_noting(
    spec: &PostSetupCommand,
    env: &CommandEnv,
    log: &Path,
    reporter: &dyn HookReporter,
    watch: Option<&super::interrupt::Watch>,
    started: &mut dyn FnMut(u32),
) -> HookOutcome {
    let label = spec.label.clone().unwrap_or_else(|| spec.command.clone());
    if let Some(skipped) = not_for_this_platform(spec, &label) {
        return skipped;
    }
    let start = Instant::now();
    reporter.started(&label);
    let (status, exit_code, reason) = match spawn(spec, env, log) {
        Ok(handle) => {
            if let Some(pid) = handle.pids().first() {
                started(*pid);
            }
            supervise(&handle, spec, watch, reporter, &label, start)
        }
        Err(reason) => (HookStatus::Failed, None, Some(reason)),
    };
    HookOutcome {
        kind: HookKind::Command,
        label,
        status,
        exit_code,
        duration_ms: start.elapsed().as_millis() as u64,
        log_file: Some(log.display().to_string()),
        reason,
    }
}

/// The outcome of a command limited to other platforms.
fn not_for_this_platform(spec: &PostSetupCommand, label: &str) -> Option<HookOutcome> {
    let platforms = spec.platforms.as_ref()?;
    if platforms.iter().any(|p| p == current_platform()) {
        return None;
    }
    Some(HookOutcome::skipped(
        HookKind::Command,
        label.to_string(),
        format!(
            "only for {} (this is {})",
            platforms.join(", "),
            current_platform()
        ),
    ))
}

/// Starts the command in a process group of its own, its output into
/// `log`; why not, when it cannot start.
fn spawn(spec: &PostSetupCommand, env: &CommandEnv, log: &Path) -> Result<duct::Handle, String> {
    let files = crate::fsutil::create_truncate(log).and_then(|f| {
        let copy = f
            .try_clone()
            .map_err(|e| crate::Error::io("opening", log, e))?;
        Ok((copy, f))
    });
    let (out_file, err_file): (File, File) =
        files.map_err(|e| format!("cannot create its log: {e}"))?;
    env.apply(shell(&spec.command))
        .stdin_null()
        .stdout_file(out_file)
        .stderr_file(err_file)
        .unchecked()
        .before_spawn(|cmd| {
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(cmd, 0);
            let _ = cmd;
            Ok(())
        })
        .start()
        .map_err(|e| format!("cannot start: {e}"))
}

/// Waits for the command, reporting progress; kills its process tree on
/// timeout or when grove is interrupted. (status, exit code, reason).
fn supervise(
    handle: &duct::Handle,
    spec: &PostSetupCommand,
    watch: Option<&super::interrupt::Watch>,
    reporter: &dyn HookReporter,
    label: &str,
    start: Instant,
) -> (HookStatus, Option<i32>, Option<String>) {
    let timeout =
        Duration::from_millis(spec.timeout.unwrap_or(PostSetupCommand::DEFAULT_TIMEOUT_MS));
    let pid = handle.pids().first().copied();
    let stop = || {
        if let Some(pid) = pid {
            kill_tree(pid);
        }
        let _ = handle.kill();
        let _ = handle.wait();
    };
    loop {
        match handle.try_wait() {
            Ok(Some(output)) => {
                let code = output.status.code();
                if output.status.success() {
                    return (HookStatus::Ok, code, None);
                }
                let reason = match code {
                    Some(c) => format!("exited with code {c}"),
                    None => "killed by a signal".to_string(),
                };
                return (HookStatus::Failed, code, Some(reason));
            }
            Ok(None) => {}
            Err(e) => {
                return (
                    HookStatus::Failed,
                    None,
                    Some(format!("waiting failed: {e}")),
                );
            }
        }
        if let Some(signal) = watch.and_then(|w| w.received()) {
            stop();
            let name = super::interrupt::signal_name(signal);
            let reason = format!("interrupted by {name}; its processes were killed");
            return (HookStatus::Interrupted, None, Some(reason));
        }
        if start.elapsed() >= timeout {
            stop();
            let reason = format!(
                "timed out after {} ms; its processes were killed",
                timeout.as_millis()
            );
            return (HookStatus::TimedOut, None, Some(reason));
        }
        reporter.tick(label, start.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the process group `pid` leads (the whole tree of a command
/// started by [`run_command`]), at once.
#[cfg(unix)]
pub fn kill_tree(pid: u32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    // The shell was made leader of its own group: the group id is its pid.
    let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

#[cfg(windows)]
#[allow(clippy::disallowed_methods)]
pub fn kill_tree(pid: u32) {
    let _ = duct::cmd("taskkill", ["/T", "/F", "/PID", &pid.to_string()])
        .stdout_null()
        .stderr_null()
        .unchecked()
        .run();
}
