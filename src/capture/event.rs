//! `grove capture claude|codex|gemini|opencode`: what one hook call does.
//!
//! The agent runs the hook with a JSON object on stdin; the fields grove
//! reads are the same for every agent: `session_id`, `transcript_path`
//! (Codex may give `null`; OpenCode's plugin gives none: its sessions are in
//! its database), `cwd`, `hook_event_name`. The thread is the one the
//! session was already captured into (this machine's [`super::ledger`]);
//! for a new session, with Claude Code and Gemini CLI the one grove
//! launched the agent for (`GROVE_THREAD` in the agent's environment), else
//! the one named when the hook was installed (`--thread`); with OpenCode
//! the one grove launched it for, else the task whose worktree the session
//! runs in; with Codex the task whose worktree the session runs in (the
//! worktree's claim, recorded by `grove capture install` and `grove
//! launch`). Codex's hook names no thread (one command for every task, so
//! the user trusts it once), and its environment is no guide: the TUI runs
//! sessions in an app-server daemon that outlives it and keeps the
//! environment of whichever task started it. OpenCode's plugin is one file
//! for every task too.
//!
//! Whatever happens is logged to the thread's `logs/capture.log` (or
//! grove's own `logs/capture.log` when no thread is found); the command
//! itself prints nothing and always succeeds, so a capture problem never
//! stands in the agent's way.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::SessionRecord;
use super::state::{self, AgentState};
use crate::agent::{Native, Origin, Settings};
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::{Store, Thread};

/// The most of stdin a hook call reads.
pub const MAX_INPUT: u64 = 4 << 20;

/// The fields of a hook's JSON that capture uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HookInput {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub transcript_path: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// When the event happened (Gemini CLI's hooks and grove's OpenCode
    /// plugin say): its hook may run after a later event's.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The tool a tool event is about (`Edit`, `apply_patch`, …).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The call a tool event is about, as the agent's transcript names it.
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

impl HookInput {
    /// Parses a hook's stdin.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let input: HookInput = serde_json::from_slice(bytes).map_err(|e| {
            Error::Other(format!(
                "the hook's input is not the JSON object an agent sends: {e}"
            ))
        })?;
        if let Some(id) = &input.session_id
            && (id.is_empty() || id.len() > 200 || id.chars().any(|c| c.is_control() || c == '/'))
        {
            return Err(Error::Other(format!(
                "the hook's session_id {id:?} is not a session id"
            )));
        }
        Ok(input)
    }
}

/// One hook call.
#[derive(Debug, Clone)]
pub struct Request {
    pub native: Native,
    pub input: HookInput,
    /// `--thread`, from the installed hook.
    pub thread: Option<String>,
    /// `GROVE_THREAD` from the agent's environment.
    pub env_thread: Option<String>,
    /// Where the hook runs, when the input has no `cwd`.
    pub cwd: PathBuf,
    /// The process that ran the hook (its parent). Codex runs a hook
    /// directly from the process that runs the session — `codex exec`
    /// itself, or the app-server daemon its TUI leaves sessions to — so for
    /// Codex it says where the session lives on. (Claude Code runs hooks
    /// through `sh -c`: its parent says nothing.)
    pub runner: Option<u32>,
}

/// What a hook call did.
#[derive(Debug)]
pub struct Handled {
    pub thread: Thread,
    pub event: String,
    /// The session captured (an OpenCode subagent's event: its parent's).
    pub session: Option<String>,
    pub added: u64,
    /// The state it set, when it changed.
    pub state: Option<AgentState>,
    /// The notify command was started.
    pub notified: bool,
    /// The turn snapshot this call took (see [`super::snapshots`]).
    pub snapshot: Option<crate::snapshot::Record>,
    pub problems: Vec<String>,
}

/// Captures what a hook call announces; see the module's documentation.
pub fn handle(req: &Request) -> Result<Handled> {
    let cwd = req
        .input
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .unwrap_or_else(|| req.cwd.clone());
    let project = Project::discover(&cwd)?;
    let store = project.store();
    let (session_id, own) = session_of(req);
    let thread = target(&store, &project, session_id.as_deref(), req)?;
    let event = req
        .input
        .hook_event_name
        .clone()
        .unwrap_or_else(|| "unknown".into());
    let mut problems = Vec::new();
    let mut added = 0;
    if let Some(id) = &session_id {
        let transcript = req
            .input
            .transcript_path
            .clone()
            .filter(|p| !p.is_empty())
            .or_else(|| {
                super::transcripts::transcript_of(req.native, &project.root, id)
                    .map(|p| p.to_string_lossy().into_owned())
            });
        let record = SessionRecord {
            agent: req.native.agent_id().to_string(),
            session_id: id.clone(),
            transcript,
            started_at: crate::atsf::now_timestamp(),
            exported: false,
            extra: Default::default(),
        };
        match super::catchup::session(&thread, &project.main_root, req.native, &record) {
            Ok(c) => {
                added = c.added();
                if let Some(s) = &c.summary {
                    problems.extend(s.errors.iter().cloned());
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    let mut turned = None;
    let runner = req.runner.filter(|_| req.native == Native::Codex);
    // A subagent's events say nothing of the task's agent.
    if let Some(new) = AgentState::after(&event).filter(|_| own) {
        thread.update_meta(|meta| {
            let agent = Some(req.native.agent_id());
            let session = session_id.as_deref();
            let changed = match &req.input.timestamp {
                Some(at) => state::set_at(meta, new, &event, agent, session, at),
                None => state::set(meta, new, &event, agent, session),
            };
            if let Some(before) = changed {
                turned = Some((before, new));
            }
            if let (Some(runner), Some(session)) = (runner, session_id.as_deref()) {
                state::runs_in(meta, session, runner);
            }
        })?;
    }
    // After the capture: the snapshot then waits for what the agent writes
    // next, the record this hook announced. A failed snapshot is named in
    // the log and the hook goes on.
    let hook = super::snapshots::Hook {
        event: &event,
        tool: req.input.tool_name.as_deref(),
        tool_call_id: req.input.tool_use_id.as_deref(),
        session: session_id.as_deref(),
        own,
    };
    let snapshot = super::snapshots::on_hook(&project, &thread, &hook).unwrap_or_else(|e| {
        problems.push(format!("snapshot: {e}"));
        None
    });
    let mut notified = false;
    if let Some((before, AgentState::Waiting)) = turned
        && before != Some(AgentState::Waiting)
    {
        match notify(&project, &thread) {
            Ok(n) => notified = n,
            Err(e) => problems.push(format!("notify: {e}")),
        }
    }
    Ok(Handled {
        thread,
        event,
        session: session_id,
        added,
        state: turned.map(|(_, s)| s),
        notified,
        snapshot,
        problems,
    })
}

/// The session a hook call captures, and whether it is the one its event
/// is about: an OpenCode subagent's session is captured with its parent's
/// (the top of its parents, in OpenCode's database).
fn session_of(req: &Request) -> (Option<String>, bool) {
    let id = req.input.session_id.clone();
    if req.native != Native::OpenCode {
        return (id, true);
    }
    let root = id.as_deref().and_then(|id| {
        let db = super::transcripts::opencode_db()?;
        crate::import::opencode::root_session(&db, id).ok()?
    });
    match (id, root) {
        (Some(id), Some(root)) if root != id => (Some(root), false),
        (id, _) => (id, true),
    }
}

/// The thread a hook call is for.
fn target(
    store: &Store,
    project: &Project,
    session: Option<&str>,
    req: &Request,
) -> Result<Thread> {
    if let Some(session) = session {
        let listing = store.list()?;
        // Which thread a session belongs to is this machine's record, not
        // what a thread.json claims.
        if let Some(t) = listing
            .threads
            .iter()
            .find(|t| super::ledger::has(&project.main_root, t.thread.id(), session))
        {
            return Ok(t.thread.clone());
        }
    }
    let named: Vec<&String> = match req.native {
        Native::Claude | Native::Gemini => [&req.env_thread, &req.thread]
            .into_iter()
            .flatten()
            .collect(),
        Native::OpenCode => req.env_thread.iter().collect(),
        Native::Codex => Vec::new(),
    };
    let claimed = matches!(req.native, Native::Codex | Native::OpenCode)
        .then(|| super::ledger::claimant(&project.main_root, &project.root, req.native.agent_id()))
        .flatten()
        .map(|c| c.thread);
    for id in named.into_iter().chain(claimed.as_ref()) {
        if let Ok(thread) = store.thread(id)
            && std::fs::symlink_metadata(thread.meta_path()).is_ok()
        {
            return Ok(thread);
        }
    }
    Err(Error::Other(match req.native {
        Native::Claude | Native::Gemini => format!(
            "no thread in {} to capture into: the hook names none ({}), and no thread there has session {}; \
             `grove capture install THREAD` sets it",
            store.agent_dir().display(),
            req.thread.as_deref().unwrap_or("no --thread"),
            session.unwrap_or("(none)")
        ),
        Native::Codex | Native::OpenCode => format!(
            "no thread to capture {} session {} into: {} is no task's worktree whose {} \
             sessions grove captures (`grove capture install` there, or `grove launch`, makes it one)",
            req.native.agent_id(),
            session.unwrap_or("(none)"),
            project.root.display(),
            req.native.agent_id()
        ),
    }))
}

/// Runs the notify command for `thread` turning `waiting`, in the
/// background. A project's command runs only once trusted.
fn notify(project: &Project, thread: &Thread) -> Result<bool> {
    let settings = Settings::load(Some(&project.main_root))?;
    let Some(notify) = settings.notify() else {
        return Ok(false);
    };
    if notify.origin == Origin::Project && !settings.project_trusted()? {
        return Err(Error::Other(format!(
            "grove.notify in {} is not trusted; run `grove trust` there to allow it",
            project.main_root.display()
        )));
    }
    let meta = thread.meta()?;
    let log = log_file(thread)?;
    let log2 = log
        .try_clone()
        .map_err(|e| Error::io("opening", thread.dir(), e))?;
    let expr = crate::setup::shell(&notify.command)
        .dir(&project.root)
        .env("GROVE_THREAD_ID", &meta.thread_id)
        .env("GROVE_THREAD_TITLE", &meta.title)
        .env("GROVE_AGENT_STATE", "waiting")
        .env("GROVE_AGENT", &meta.agent.id)
        .env("GROVE_WORKTREE", &project.root)
        .stdin_null()
        .stdout_file(log)
        .stderr_file(log2)
        .unchecked();
    // Not waited for: the agent goes on at once.
    expr.start()
        .map_err(|e| Error::Other(format!("cannot run {:?}: {e}", notify.command)))?;
    Ok(true)
}

/// The thread's `logs/capture.log`, opened to append. A thread that is
/// gone (its task removed while a follow-up still held it) gets none: its
/// directory, or its worktree's, is not made again.
fn log_file(thread: &Thread) -> Result<std::fs::File> {
    if !thread.meta_path().is_file() {
        return Err(Error::Other(format!(
            "thread {} is gone from {}",
            thread.id(),
            thread.dir().display()
        )));
    }
    let logs = thread.dir().join("logs");
    crate::fsutil::real_dir(thread.dir(), &logs)?;
    crate::fsutil::open_append(&logs.join("capture.log"), true)
}

/// grove's own capture log, for calls that found no thread.
fn fallback_log() -> Result<std::fs::File> {
    let dir = crate::home::data_dir()?.join("logs");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
    crate::fsutil::open_append(&dir.join("capture.log"), true)
}

/// Appends one line about a hook call to its log.
pub fn log(thread: Option<&Thread>, line: &str) {
    let file = match thread {
        Some(t) => log_file(t).or_else(|_| fallback_log()),
        None => fallback_log(),
    };
    if let Ok(mut f) = file {
        let clean: String = line
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let _ = writeln!(f, "{} {clean}", crate::atsf::now_timestamp());
    }
}

/// The line logged for a handled call.
pub fn describe(h: &Handled, session: Option<&str>) -> String {
    let mut line = format!(
        "{} session={} added={}",
        h.event,
        session.unwrap_or("-"),
        h.added
    );
    if let Some(s) = &h.snapshot {
        line.push_str(&format!(" snapshot={}:{}", s.at.as_str(), s.tree));
    }
    if let Some(s) = h.state {
        line.push_str(&format!(" state={}", s.as_str()));
    }
    if h.notified {
        line.push_str(" notified");
    }

    for p in &h.problems {
        line.push_str(&format!(" problem: {p}"));
    }
    line
}

/// The current directory of a hook call (its `cwd`), for the log.
pub fn input_cwd(input: &HookInput, fallback: &Path) -> PathBuf {
    input
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .unwrap_or_else(|| fallback.to_path_buf())
}

/// The hook's JSON, parsed leniently for the log when it is not an object.
pub fn raw_event(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    v.get("hook_event_name")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_is_gone_gets_no_log_and_its_directory_is_not_made_again() {
        // A follow-up may outlive its task: `grove rm` took the worktree
        // while the follower still held the thread.
        let tmp = tempfile::tempdir().unwrap();
        let worktree = tmp.path().join("thread-1");
        let store = Store::at(worktree.join(".agent"));
        let thread = store
            .thread("0b7a3f52-5b7e-4c1e-9a6e-2f4d3c1b0a99")
            .unwrap();
        assert!(log_file(&thread).is_err());
        assert!(!worktree.exists(), "the removed worktree came back");
    }
}
