//! The agent's state on a task, from the capture events: `working` (a
//! prompt came, a tool runs), `waiting` (the agent stopped and waits for
//! the user, or asks a permission), `idle` (a session started, nothing asked
//! yet), `exited` (the session ended, or the agent's process is gone).
//!
//! Kept in `metadata.capture.state` with the time it changed. When grove
//! launched the agent it records the agent's process id; a state other than
//! `exited` whose process is gone (on this machine) reads as `exited`.

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
    /// The machine (its boot) that process runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The agent's exit code, once it exited under grove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// The recorded state of `meta`, as recorded.
pub fn recorded(meta: &ThreadMeta) -> Option<StateRecord> {
    let v = meta.metadata.as_ref()?.get(super::KEY)?.get("state")?;
    serde_json::from_value(v.clone()).ok()
}

/// The state of `meta` now: as recorded, but `exited` when the process grove
/// launched is gone.
pub fn current(meta: &ThreadMeta) -> Option<StateRecord> {
    let mut record = recorded(meta)?;
    if record.state != AgentState::Exited
        && let Some(pid) = record.pid
        && record.host.as_deref() == Some(host().as_str())
        && !alive(pid)
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
        host: before
            .as_ref()
            .filter(|_| keep_process)
            .and_then(|b| b.host.clone()),
        exit_code: None,
    };
    write(meta, &record);
    Some(before.map(|b| b.state))
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
        host: Some(host()),
        exit_code: None,
    };
    write(meta, &record);
}

/// Records that the agent grove launched exited with `code`.
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
