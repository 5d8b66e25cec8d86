//! The agent's state on a task, from the capture events: `working` (a
//! prompt came, a tool runs), `waiting` (the agent stopped and waits for
//! the user, or asks a permission), `idle` (a session started, nothing asked
//! yet), `exited` (the session ended, or the agent's process is gone).
//!
//! Kept in `metadata.capture.state` with the time it changed. When grove
//! launched the agent it records the agent's process id; a Codex hook
//! records the process that ran it, which runs the session (`codex exec`
//! itself; for Codex's TUI, its app-server daemon, which outlives the TUI
//! and ends the session later, with `SessionEnd`). A state other than
//! `exited` whose processes are all gone (on this machine) reads as
//! `exited`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::atsf::ThreadMeta;

/// What the agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Working,
    Waiting,
    Idle,
    Exited,
}

impl AgentState {
    /// Its name: `working`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Working => "working",
            AgentState::Waiting => "waiting",
            AgentState::Idle => "idle",
            AgentState::Exited => "exited",
        }
    }

    /// The state named `s`.
    pub fn parse(s: &str) -> Option<AgentState> {
        [
            AgentState::Working,
            AgentState::Waiting,
            AgentState::Idle,
            AgentState::Exited,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// The state a hook event leaves the agent in: Claude Code's and
    /// Codex's, Gemini CLI's (`BeforeAgent`, `AfterAgent`, …), and the
    /// OpenCode events grove's plugin passes on (`session.idle`,
    /// `session.status.busy`, …).
    pub fn after(event: &str) -> Option<AgentState> {
        Some(match event {
            "SessionStart" | "session.created" => AgentState::Idle,
            "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure"
            | "SubagentStop" | "PreCompact" | "PostCompact" => AgentState::Working,
            "BeforeAgent" | "BeforeTool" | "AfterTool" | "PreCompress" => AgentState::Working,
            "session.status.busy" | "session.status.retry" | "tool.execute.after" => {
                AgentState::Working
            }
            "Stop" | "Notification" | "PermissionRequest" | "AfterAgent" => AgentState::Waiting,
            "session.idle" | "session.status.idle" | "session.error" | "permission.asked" => {
                AgentState::Waiting
            }
            "SessionEnd" => AgentState::Exited,
            _ => return None,
        })
    }
}

/// `metadata.capture.state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateRecord {
    pub state: AgentState,
    /// When it turned this state.
    pub since: String,
    /// The event that set it (`Stop`, `launch`, `exit`).
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's process, when grove launched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The process that runs the session, as its hooks show (Codex's: the
    /// process that ran the hook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<u32>,
    /// The machine (its boot) those processes run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The exit code of the agent grove launched, once it exited (its
    /// session may go on in its runner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// The recorded state of `meta`, as recorded.
pub fn recorded(meta: &ThreadMeta) -> Option<StateRecord> {
    let v = meta.metadata.as_ref()?.get(super::KEY)?.get("state")?;
    serde_json::from_value(v.clone()).ok()
}

/// The state of `meta` now: as recorded, but `exited` when the processes of
/// its session (the one grove launched, the one running the session) are
/// gone.
pub fn current(meta: &ThreadMeta) -> Option<StateRecord> {
    let mut record = recorded(meta)?;
    let processes: Vec<u32> = record.pid.into_iter().chain(record.runner).collect();
    if record.state != AgentState::Exited
        && !processes.is_empty()
        && record.host.as_deref() == Some(host().as_str())
        && !processes.iter().any(|p| alive(*p))
    {
        record.state = AgentState::Exited;
        record.event = "process gone".into();
    }
    Some(record)
}

/// Sets `meta`'s state to `state` after `event`; returns the state it had
/// when that changed it (`Some(previous)`), `None` when nothing changed.
/// The process recorded at launch stays with its session.
pub fn set(
    meta: &mut ThreadMeta,
    state: AgentState,
    event: &str,
    agent: Option<&str>,
    session: Option<&str>,
) -> Option<Option<AgentState>> {
    let before = recorded(meta);
    if before.as_ref().is_some_and(|b| {
        b.state == state && (session.is_none() || b.session_id.as_deref() == session)
    }) {
        return None;
    }
    let keep_process = before.as_ref().is_some_and(|b| {
        b.state != AgentState::Exited
            && (session.is_none() || b.session_id.is_none() || b.session_id.as_deref() == session)
    });
    let record = StateRecord {
        state,
        since: crate::atsf::now_timestamp(),
        event: event.to_string(),
        agent: agent
            .map(str::to_string)
            .or_else(|| before.as_ref().and_then(|b| b.agent.clone())),
        session_id: session
            .map(str::to_string)
            .or_else(|| before.as_ref().and_then(|b| b.session_id.clone())),
        pid: before.as_ref().filter(|_| keep_process).and_then(|b| b.pid),
        runner: before
            .as_ref()
            .filter(|_| keep_process)
            .and_then(|b| b.runner),
        host: before
            .as_ref()
            .filter(|_| keep_process)
            .and_then(|b| b.host.clone()),
        exit_code: None,
    };
    write(meta, &record);
    Some(before.map(|b| b.state))
}

/// Records that process `runner` (on this machine) runs session `session`,
/// the one `meta`'s state is of. Returns whether that changed anything.
pub fn runs_in(meta: &mut ThreadMeta, session: &str, runner: u32) -> bool {
    let Some(mut record) = recorded(meta) else {
        return false;
    };
    let here = host();
    if record.session_id.as_deref() != Some(session)
        || record.state == AgentState::Exited
        || (record.runner == Some(runner) && record.host.as_deref() == Some(here.as_str()))
    {
        return false;
    }
    if record.host.as_deref().is_some_and(|h| h != here) {
        // A launch recorded on another machine: its process means nothing here.
        record.pid = None;
    }
    record.runner = Some(runner);
    record.host = Some(here);
    write(meta, &record);
    true
}

/// [`set`], for an event the agent says happened at `at`: hooks run in
/// parallel and may end out of order, so an event older than the one that
/// set the recorded state changes nothing; the state's `since` is the
/// event's own time.
pub fn set_at(
    meta: &mut ThreadMeta,
    state: AgentState,
    event: &str,
    agent: Option<&str>,
    session: Option<&str>,
    at: &str,
) -> Option<Option<AgentState>> {
    let Ok(when) = at.parse::<jiff::Timestamp>() else {
        return set(meta, state, event, agent, session);
    };
    let newer = recorded(meta)
        .and_then(|b| b.since.parse::<jiff::Timestamp>().ok())
        .is_some_and(|since| since > when);
    if newer {
        return None;
    }
    let changed = set(meta, state, event, agent, session)?;
    if let Some(mut record) = recorded(meta) {
        record.since = crate::atsf::normalize_timestamp(at).unwrap_or(record.since);
        write(meta, &record);
    }
    Some(changed)
}

/// Records that grove launched the agent as process `pid`.
pub fn launched(
    meta: &mut ThreadMeta,
    agent: &str,
    session: Option<&str>,
    pid: u32,
    working: bool,
) {
    let record = StateRecord {
        state: if working {
            AgentState::Working
        } else {
            AgentState::Idle
        },
        since: crate::atsf::now_timestamp(),
        event: "launch".into(),
        agent: Some(agent.to_string()),
        session_id: session.map(str::to_string),
        pid: Some(pid),
        runner: None,
        host: Some(host()),
        exit_code: None,
    };
    write(meta, &record);
}

/// Records that the agent grove launched exited with `code`. Its session
/// ended with it, unless the session runs in another process still alive
/// (Codex's TUI leaves its sessions to its app-server daemon, which ends
/// them later, with `SessionEnd`): then the session's state stays, with
/// that process to watch, and that process is returned.
pub fn launched_exited(meta: &mut ThreadMeta, code: i32) -> Option<u32> {
    let goes_on = recorded(meta).filter(|r| {
        r.state != AgentState::Exited
            && r.host.as_deref() == Some(host().as_str())
            && r.runner.is_some_and(|p| r.pid != Some(p) && alive(p))
    });
    match goes_on {
        Some(mut record) => {
            record.pid = None;
            record.exit_code = Some(code);
            write(meta, &record);
            record.runner
        }
        None => {
            exited(meta, code);
            None
        }
    }
}

/// Records that the agent grove launched exited with `code`, and its
/// session with it.
pub fn exited(meta: &mut ThreadMeta, code: i32) {
    let before = recorded(meta);
    let record = StateRecord {
        state: AgentState::Exited,
        since: match &before {
            Some(b) if b.state == AgentState::Exited => b.since.clone(),
            _ => crate::atsf::now_timestamp(),
        },
        event: "exit".into(),
        agent: before.as_ref().and_then(|b| b.agent.clone()),
        session_id: before.as_ref().and_then(|b| b.session_id.clone()),
        pid: None,
        runner: None,
        host: None,
        exit_code: Some(code),
    };
    write(meta, &record);
}

fn write(meta: &mut ThreadMeta, record: &StateRecord) {
    let Ok(value) = serde_json::to_value(record) else {
        return;
    };
    let section = meta
        .metadata_mut()
        .entry(super::KEY)
        .or_insert_with(|| Value::Object(Default::default()));
    if !section.is_object() {
        *section = Value::Object(Default::default());
    }
    if let Value::Object(map) = section {
        map.insert("state".into(), value);
    }
}

/// This machine, as of this boot: process ids mean something only here.
pub fn host() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let name = hostname();
    if boot.is_empty() {
        name
    } else {
        format!("{name}/{boot}")
    }
}

#[cfg(unix)]
fn hostname() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(not(unix))]
fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_default()
}

/// Whether process `pid` exists.
#[cfg(unix)]
pub fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// Whether process `pid` exists (not known here: assumed).
#[cfg(not(unix))]
pub fn alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ThreadMeta {
        crate::threads::new_meta("t", "codex", Default::default())
    }

    /// A process id that is no process (a child that ran and was reaped).
    #[allow(clippy::disallowed_methods)] // a test's own short-lived child
    fn gone() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// The state after a launch, a prompt and a turn's end of session `s`.
    fn after_a_turn(s: &str, pid: u32) -> ThreadMeta {
        let mut m = meta();
        launched(&mut m, "codex", None, pid, true);
        set(
            &mut m,
            AgentState::Working,
            "UserPromptSubmit",
            None,
            Some(s),
        );
        set(&mut m, AgentState::Waiting, "Stop", None, Some(s));
        m
    }

    #[test]
    fn a_launched_agent_whose_session_runs_on_elsewhere_leaves_its_state() {
        let mut m = after_a_turn("s1", gone());
        assert!(runs_in(&mut m, "s1", std::process::id()));
        assert!(!runs_in(&mut m, "s1", std::process::id()), "once");
        assert_eq!(
            launched_exited(&mut m, 0),
            Some(std::process::id()),
            "the session's runner lives on"
        );
        let r = current(&m).unwrap();
        assert_eq!(r.state, AgentState::Waiting);
        assert_eq!((r.pid, r.exit_code), (None, Some(0)));
        // The session's end comes from its runner.
        set(&mut m, AgentState::Exited, "SessionEnd", None, Some("s1"));
        assert_eq!(current(&m).unwrap().state, AgentState::Exited);
    }

    #[test]
    fn a_launched_agent_whose_session_ran_in_it_ends_with_it() {
        // No runner recorded (Claude Code), or one that is gone (`codex exec`).
        let mut m = after_a_turn("s1", gone());
        assert_eq!(launched_exited(&mut m, 3), None);
        let r = current(&m).unwrap();
        assert_eq!((r.state, r.exit_code), (AgentState::Exited, Some(3)));
        let mut m = after_a_turn("s1", gone());
        runs_in(&mut m, "s1", gone());
        assert_eq!(launched_exited(&mut m, 0), None);
        assert_eq!(current(&m).unwrap().state, AgentState::Exited);
    }

    #[test]
    fn a_session_whose_processes_are_all_gone_reads_as_exited() {
        let mut m = meta();
        set(
            &mut m,
            AgentState::Waiting,
            "Stop",
            Some("codex"),
            Some("s1"),
        );
        assert_eq!(current(&m).unwrap().state, AgentState::Waiting);
        runs_in(&mut m, "s1", std::process::id());
        assert_eq!(current(&m).unwrap().state, AgentState::Waiting);
        runs_in(&mut m, "s1", gone());
        let r = current(&m).unwrap();
        assert_eq!(
            (r.state, r.event.as_str()),
            (AgentState::Exited, "process gone")
        );
        // Another session's runner is not this one's.
        assert!(!runs_in(&mut m, "s2", std::process::id()));
    }
}
