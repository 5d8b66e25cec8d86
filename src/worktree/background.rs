//! Background setup commands (`postSetupCommands[].background`): each is
//! handed to a grove process of its own (`grove __setup-wait`) that runs
//! it with its timeout, in a process group of its own, and records how it
//! stands in the thread (`metadata.grove.backgroundSetup`) — so the outcome
//! is recorded although the `grove new` that started it has exited.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::atsf::grove::{BackgroundRun, BackgroundState, ThreadSection};
use crate::atsf::{self, PostSetupCommand};
use crate::error::{Error, Result};
use crate::setup::{CommandEnv, HookKind, HookOutcome, HookStatus};
use crate::store::{Thread, ThreadId};

/// The line the waiter prints once the command runs and is recorded, so
/// that the command that started it can return.
const READY: &str = "grove-setup-running";

/// The grove binary that waits for background commands, set by the binary
/// at start; a library user that sets none runs them in the foreground.
static WAITER: OnceLock<PathBuf> = OnceLock::new();

/// Names the grove binary that runs background commands.
pub fn set_waiter(program: PathBuf) {
    let _ = WAITER.set(program);
}

/// Whether background commands can be handed over.
pub(crate) fn can_hand_over() -> bool {
    WAITER.get().is_some()
}

/// What the waiter is given: everything to run and record one command.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Job {
    thread_dir: PathBuf,
    thread_id: String,
    key: String,
    spec: PostSetupCommand,
    env: CommandEnv,
    log: PathBuf,
}

/// Starts `spec` in the background for `thread`, its output into `log`;
/// returns once the waiter has recorded it as running. The outcome says
/// it started (or why it did not).
pub(crate) fn start(
    thread: &Thread,
    key: &str,
    spec: &PostSetupCommand,
    env: &CommandEnv,
    log: &Path,
) -> HookOutcome {
    let label = spec.label.clone().unwrap_or_else(|| spec.command.clone());
    let job = Job {
        thread_dir: thread.dir().to_path_buf(),
        thread_id: thread.id().to_string(),
        key: key.to_string(),
        spec: spec.clone(),
        env: env.clone(),
        log: log.to_path_buf(),
    };
    let started = WAITER
        .get()
        .ok_or_else(|| "no grove binary to wait for it".to_string())
        .and_then(|program| hand_over(program, &job));
    match started {
        Ok(()) => HookOutcome {
            kind: HookKind::Command,
            label,
            status: HookStatus::Background,
            exit_code: None,
            duration_ms: 0,
            log_file: Some(log.display().to_string()),
            reason: None,
        },
        Err(why) => HookOutcome {
            status: HookStatus::Failed,
            reason: Some(format!("could not start in the background: {why}")),
            ..HookOutcome::skipped(HookKind::Command, label, "")
        },
    }
}

/// Starts the waiter and reads its ready line.
#[allow(clippy::disallowed_methods)] // grove's own binary, not a user command
fn hand_over(program: &Path, job: &Job) -> std::result::Result<(), String> {
    use std::os::unix::process::CommandExt;
    let text = serde_json::to_string(job).map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(program)
        .arg("__setup-wait")
        .arg(text)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        // Not wherever grove was started (another task's worktree, which
        // its `rm` would then find held): the main checkout stays.
        .current_dir(&job.env.repo_root)
        // Its own process group: a Ctrl-C at the terminal ends the command
        // the user ran, not the setup it left running.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line).is_ok())
        .unwrap_or(false);
    if read && line.trim_end() == READY {
        return Ok(());
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("the waiting grove process ended before the command ran".into())
}

/// The waiter (`grove __setup-wait JOB`): runs the command, records it as
/// running (with its process groups), says so on stdout, waits for it
/// (timeout included) and records how it ended.
pub fn wait_handed_over(job: &str) -> Result<()> {
    let job: Job = serde_json::from_str(job)
        .map_err(|e| Error::Other(format!("not a background setup job: {e}")))?;
    let thread = Thread::at(ThreadId::parse(&job.thread_id)?, job.thread_dir.clone());
    let mut run = BackgroundRun {
        key: job.key.clone(),
        label: job
            .spec
            .label
            .clone()
            .unwrap_or_else(|| job.spec.command.clone()),
        state: BackgroundState::Running,
        pid: None,
        waiter_pid: Some(std::process::id()),
        started_at: atsf::now_timestamp(),
        ended_at: None,
        exit_code: None,
        log_file: Some(job.log.display().to_string()),
        reason: None,
        extra: Default::default(),
    };
    let mut said_ready = false;
    let outcome = crate::setup::run_command_noting(
        &job.spec,
        &job.env,
        &job.log,
        &crate::setup::Silent,
        None,
        &mut |pid| {
            run.pid = Some(pid);
            let _ = record(&thread, &run);
            said_ready = ready();
        },
    );
    run.state = match outcome.status {
        HookStatus::Ok => BackgroundState::Ok,
        HookStatus::TimedOut => BackgroundState::TimedOut,
        _ => BackgroundState::Failed,
    };
    run.exit_code = outcome.exit_code;
    run.reason = outcome.reason;
    run.ended_at = Some(atsf::now_timestamp());
    // A command that could not start was never recorded as running.
    let recorded = record_unless_killed(&thread, &run);
    if !said_ready {
        ready();
    }
    recorded
}

/// Tells the starting grove the command runs. Its end of the pipe may be
/// gone; nothing more is printed either way.
fn ready() -> bool {
    use std::io::Write;
    let mut out = std::io::stdout();
    writeln!(out, "{READY}").and_then(|()| out.flush()).is_ok()
}

fn record(thread: &Thread, run: &BackgroundRun) -> Result<()> {
    thread
        .update_meta(|m| m.grove_mut().set_background_run(run))
        .map(drop)
}

/// Records the end, unless grove recorded meanwhile that it killed the
/// command (its word stands: the waiter only sees a signal).
fn record_unless_killed(thread: &Thread, run: &BackgroundRun) -> Result<()> {
    thread
        .update_meta(|m| {
            let killed = m
                .grove()
                .background_setup()
                .iter()
                .any(|r| r.key == run.key && r.state == BackgroundState::Killed);
            if !killed {
                m.grove_mut().set_background_run(run);
            }
        })
        .map(drop)
}

/// The task's background commands, a `running` one whose waiter is gone
/// (killed, or the machine restarted) shown as failed.
pub fn runs(section: ThreadSection<'_>) -> Vec<BackgroundRun> {
    section
        .background_setup()
        .into_iter()
        .map(|mut run| {
            if run.state == BackgroundState::Running && !run.waiter_pid.is_some_and(alive) {
                run.state = BackgroundState::Failed;
                run.reason = Some("grove's waiting process is gone".into());
            }
            run
        })
        .collect()
}

/// The process groups of the task's background commands still running:
/// processes in them are grove's own, not "at work" in the worktree. Only
/// those this machine shows to be grove's waiter and its child count: the
/// pids come from `thread.json`, which a pull or a commit can change.
pub(crate) fn running_groups(thread: &Thread) -> Vec<u32> {
    ours_running(thread)
        .iter()
        .flat_map(|r| [r.waiter_pid, r.pid])
        .flatten()
        .collect()
}

/// The task's background commands that run now, each checked to be
/// grove's own (see [`is_ours`]).
fn ours_running(thread: &Thread) -> Vec<BackgroundRun> {
    let Ok(meta) = thread.meta() else {
        return Vec::new();
    };
    runs(meta.grove())
        .into_iter()
        .filter(|r| r.state == BackgroundState::Running && is_ours(r, thread.id()))
        .collect()
}

/// Whether `run`'s processes are what it says: its waiter a `grove
/// __setup-wait` for this thread's command `run.key`, its command that
/// waiter's child. A recorded pid alone never gets a signal from grove.
fn is_ours(run: &BackgroundRun, thread_id: &str) -> bool {
    let (Some(waiter), Some(pid)) = (run.waiter_pid, run.pid) else {
        return false;
    };
    let Ok(cmdline) = std::fs::read(format!("/proc/{waiter}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let waits_for_it = args.get(1) == Some(&&b"__setup-wait"[..])
        && args
            .get(2)
            .and_then(|job| serde_json::from_slice::<Job>(job).ok())
            .is_some_and(|job| job.thread_id == thread_id && job.key == run.key);
    waits_for_it && parent_of(pid) == Some(waiter)
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses): the state, then the parent.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Kills the task's background commands still running (the waiter first,
/// so it records nothing after, then the command's group) and records them
/// as killed, `why`. Returns those killed.
pub fn kill_running(thread: &Thread, why: &str) -> Vec<BackgroundRun> {
    let mut killed = ours_running(thread);
    for run in &mut killed {
        for pid in [run.waiter_pid, run.pid].into_iter().flatten() {
            crate::setup::kill_tree(pid);
        }
        run.state = BackgroundState::Killed;
        run.reason = Some(why.to_string());
        run.ended_at = Some(atsf::now_timestamp());
    }
    if !killed.is_empty() {
        record_runs(thread, &killed);
        wait_gone(&killed);
    }
    killed
}

/// Records `runs` in `thread` (best effort: a thread that cannot be
/// written keeps `running`, which reads as failed once the waiter is gone).
pub(crate) fn record_runs(thread: &Thread, runs: &[BackgroundRun]) {
    let _ = thread.update_meta(|m| {
        let mut grove = m.grove_mut();
        for run in runs {
            grove.set_background_run(run);
        }
    });
}

/// Waits (a short while) until the killed groups are gone, so the worktree
/// is not removed under a process still dying.
fn wait_gone(killed: &[BackgroundRun]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let pids: Vec<u32> = killed
        .iter()
        .flat_map(|r| [r.waiter_pid, r.pid])
        .flatten()
        .collect();
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether `pid` runs. A zombie does not: where nothing reaps orphans (a
/// container's first process), a killed waiter stays one.
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    if kill(Pid::from_raw(pid as i32), None).is_err() {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses.
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    state != Some('Z')
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

/// The process group of `pid`, when it can be read.
#[cfg(unix)]
pub(crate) fn group_of(pid: u32) -> Option<u32> {
    nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid as i32)))
        .ok()
        .map(|g| g.as_raw() as u32)
}

#[cfg(not(unix))]
pub(crate) fn group_of(_pid: u32) -> Option<u32> {
    None
}
