//! `worktreeHooks.postSetupCommands`: shell commands run in a new worktree.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{HookKind, HookOutcome, HookReporter, HookStatus};
use crate::atsf::PostSetupCommand;

/// The environment a command runs in.
#[derive(Debug, Clone)]
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
/// `sh -c` (`cmd /C` on Windows). With [`crate::gitcmd`] (git) and
/// [`crate::agent::launch`] (the agent, in the foreground), the only place
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
    let label = spec.label.clone().unwrap_or_else(|| spec.command.clone());
    let start = Instant::now();
    let log_str = Some(log.display().to_string());
    let outcome = |status, exit_code, reason: Option<String>| HookOutcome {
        kind: HookKind::Command,
        label: label.clone(),
        status,
        exit_code,
        duration_ms: start.elapsed().as_millis() as u64,
        log_file: log_str.clone(),
        reason,
    };
    if let Some(platforms) = &spec.platforms
        && !platforms.iter().any(|p| p == current_platform())
    {
        return HookOutcome::skipped(
            HookKind::Command,
            label.clone(),
            format!(
                "only for {} (this is {})",
                platforms.join(", "),
                current_platform()
            ),
        );
    }
    reporter.started(&label);
    let timeout =
        Duration::from_millis(spec.timeout.unwrap_or(PostSetupCommand::DEFAULT_TIMEOUT_MS));
    let files = crate::fsutil::create_truncate(log).and_then(|f| {
        let copy = f
            .try_clone()
            .map_err(|e| crate::Error::io("opening", log, e))?;
        Ok((copy, f))
    });
    let (out_file, err_file): (File, File) = match files {
        Ok(f) => f,
        Err(e) => {
            return outcome(
                HookStatus::Failed,
                None,
                Some(format!("cannot create its log: {e}")),
            );
        }
    };
    let expr = env
        .apply(shell(&spec.command))
        .stdin_null()
        .stdout_file(out_file)
        .stderr_file(err_file)
        .unchecked()
        .before_spawn(|cmd| {
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(cmd, 0);
            let _ = cmd;
            Ok(())
        });
    let handle = match expr.start() {
        Ok(h) => h,
        Err(e) => return outcome(HookStatus::Failed, None, Some(format!("cannot start: {e}"))),
    };
    let pid = handle.pids().first().copied();
    loop {
        match handle.try_wait() {
            Ok(Some(output)) => {
                let code = output.status.code();
                return if output.status.success() {
                    outcome(HookStatus::Ok, code, None)
                } else {
                    let reason = match code {
                        Some(c) => format!("exited with code {c}"),
                        None => "killed by a signal".to_string(),
                    };
                    outcome(HookStatus::Failed, code, Some(reason))
                };
            }
            Ok(None) => {}
            Err(e) => {
                return outcome(
                    HookStatus::Failed,
                    None,
                    Some(format!("waiting failed: {e}")),
                );
            }
        }
        if let Some(signal) = watch.and_then(|w| w.received()) {
            if let Some(pid) = pid {
                kill_tree(pid);
            }
            let _ = handle.kill();
            let _ = handle.wait();
            return outcome(
                HookStatus::Interrupted,
                None,
                Some(format!(
                    "interrupted by {}; its processes were killed",
                    super::interrupt::signal_name(signal)
                )),
            );
        }
        if start.elapsed() >= timeout {
            if let Some(pid) = pid {
                kill_tree(pid);
            }
            let _ = handle.kill();
            let _ = handle.wait();
            return outcome(
                HookStatus::TimedOut,
                None,
                Some(format!(
                    "timed out after {} ms; its processes were killed",
                    timeout.as_millis()
                )),
            );
        }
        reporter.tick(&label, start.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(unix)]
fn kill_tree(pid: u32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    // The shell was made leader of its own group: the group id is its pid.
    let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
}

#[cfg(windows)]
#[allow(clippy::disallowed_methods)]
fn kill_tree(pid: u32) {
    let _ = duct::cmd("taskkill", ["/T", "/F", "/PID", &pid.to_string()])
        .stdout_null()
        .stderr_null()
        .unchecked()
        .run();
}
