//! Starting (or resuming) an agent session in a task's worktree, captured
//! into the task's thread: plan what to run, prepare the worktree and the
//! thread, run the agent in the foreground, then record what the hooks did
//! not bring and how the agent exited.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::agent::{AgentSpec, Native};
use crate::atsf::Role;
use crate::capture::{self, SessionRecord, state};
use crate::error::{Error, Result};
use crate::store::Thread;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The opening prompt (the thread's leading prompts when `None` and no
    /// session was captured into it yet).
    pub prompt: Option<String>,
    /// Resume this session of the agent instead of starting one.
    pub resume: Option<String>,
    /// Install the agent's hooks so each turn is captured live.
    pub capture: bool,
}

/// A session about to start.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: AgentSpec,
    pub thread: Thread,
    pub worktree: PathBuf,
    /// The main worktree of the worktree's repository, which keys this
    /// machine's record of the sessions it captures.
    pub repo_root: PathBuf,
    pub argv: Vec<String>,
    pub program: PathBuf,
    /// The session id, when grove chooses it (or resumes it).
    pub session: Option<String>,
    /// The prompt the agent opens with.
    pub opening: Option<String>,
    /// The opening prompt is the thread's leading messages: the session's
    /// copy of it is not added again.
    pub opening_in_thread: bool,
    pub capture: bool,
}

/// Works out what to run; a missing agent program is an error here, before
/// anything is changed.
pub fn plan(thread: &Thread, worktree: &Path, spec: AgentSpec, options: &Options) -> Result<Plan> {
    let meta = thread.meta()?;
    let (opening, opening_in_thread) = match &options.prompt {
        Some(p) if !p.trim().is_empty() => (Some(p.clone()), false),
        Some(_) => (None, false),
        None if options.resume.is_some() => (None, false),
        None => {
            let leading: Vec<_> = thread.messages()?.take(64).filter_map(|m| m.ok()).collect();
            (capture::leading_prompt(&meta, &leading), true)
        }
    };
    let (template, session) = match &options.resume {
        Some(id) => {
            let template = spec.resume.clone().ok_or_else(|| {
                Error::Other(format!(
                    "the agent {} has no resume command; add \"resume\": [..., \"{{sessionId}}\"] to {}",
                    spec.id,
                    spec.fix_hint()
                ))
            })?;
            (template, Some(id.clone()))
        }
        None => {
            let session = spec
                .chooses_session()
                .then(|| uuid::Uuid::new_v4().to_string());
            (spec.command.clone(), session)
        }
    };
    let argv = crate::agent::expand(&template, opening.as_deref(), session.as_deref())?;
    let program = crate::agent::program::program(&argv[0], &spec)?;
    let repo_root = crate::project::Project::discover(worktree)?.main_root;
    Ok(Plan {
        repo_root,
        capture: options.capture && spec.native.is_some(),
        spec,
        thread: thread.clone(),
        worktree: worktree.to_path_buf(),
        argv,
        program,
        session,
        opening,
        opening_in_thread,
    })
}

/// Whether `thread` holds nothing an agent has run: only prompts (a
/// handoff's summary and the prompts it carries), no session captured into
/// it. Resuming it has nothing to continue, so it starts a session that
/// opens with them (see [`plan`]).
pub fn unstarted(thread: &Thread) -> Result<bool> {
    /// More leading messages than a person writes before starting an agent.
    const MOST: usize = 64;
    let meta = thread.meta()?;
    let mut messages = Vec::new();
    for m in thread.messages()?.take(MOST + 1) {
        match m {
            Ok(m) if matches!(m.role, Role::User | Role::System) => messages.push(m),
            // An agent's message, or a line that cannot be read: the
            // written session is what resumes it.
            _ => return Ok(false),
        }
    }
    Ok(messages.len() <= MOST && capture::leading_prompt(&meta, &messages).is_some())
}

/// How a session went.
#[derive(Debug)]
pub struct Outcome {
    pub exit: super::Exit,
    /// The hooks installed (or why not).
    pub hooks: Option<capture::install::Installed>,
    /// Messages captured after the agent exited (what the hooks missed).
    pub caught_up: u64,
    /// The process the session goes on in after the agent exited (Codex's
    /// TUI leaves its sessions to its app-server daemon), if it does.
    pub goes_on_in: Option<u32>,
    /// What went wrong on the way, none of it fatal.
    pub problems: Vec<String>,
}

/// Runs the session of `plan` in the foreground. `grove` is the path of the
/// grove binary the hooks run.
pub fn run(plan: &Plan, grove: &Path) -> Result<Outcome> {
    let mut problems = Vec::new();
    let hooks = match (plan.capture, plan.spec.native) {
        (true, Some(native)) => {
            match capture::install::install(native, &plan.worktree, plan.thread.id(), grove) {
                Ok(i) => {
                    problems.extend(i.problems());
                    Some(i)
                }
                Err(e) => {
                    problems.push(format!(
                        "live capture could not be installed ({e}); the session is captured when the agent exits"
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    prepare(plan)?;
    // A little before now: a file system with coarse times must not hide
    // the session's first writes.
    let since = SystemTime::now() - Duration::from_secs(2);
    let mut env = vec![
        ("GROVE_THREAD".to_string(), plan.thread.id().to_string()),
        (
            "GROVE_WORKTREE".to_string(),
            plan.worktree.to_string_lossy().into_owned(),
        ),
    ];
    // A relative GROVE_HOME means grove's start directory: the agent's
    // hooks (run in the worktree) get it absolute.
    if let Some(home) = crate::home::home_for_children() {
        env.push(("GROVE_HOME".into(), home.to_string_lossy().into_owned()));
    }
    // The task's ports, for the dev server the agent starts.
    if let Ok(meta) = plan.thread.meta() {
        env.extend(crate::ports::env(&crate::ports::of(&meta)));
    }
    let working = plan.opening.is_some();
    let exit = super::run(&plan.argv, &plan.program, &plan.worktree, &env, |pid| {
        let r = plan.thread.update_meta(|meta| {
            state::launched(meta, &plan.spec.id, plan.session.as_deref(), pid, working);
        });
        if let Err(e) = r {
            capture::event::log(
                Some(&plan.thread),
                &format!("launch: recording the state failed: {e}"),
            );
        }
    })?;
    let mut caught_up = 0;
    if let Some(native) = plan.spec.native {
        match capture::catchup::catch_up(&plan.thread, &plan.repo_root) {
            Ok((n, errors)) => {
                caught_up += n;
                problems.extend(errors);
            }
            Err(e) => problems.push(format!("capturing the session: {e}")),
        }
        match capture::catchup::adopt_since(
            &plan.thread,
            &plan.repo_root,
            native,
            &plan.worktree,
            since,
        ) {
            Ok((n, errors)) => {
                caught_up += n;
                problems.extend(errors);
            }
            Err(e) => problems.push(format!("finding the session's transcript: {e}")),
        }
    }
    let mut goes_on_in = None;
    plan.thread
        .update_meta(|meta| goes_on_in = state::launched_exited(meta, exit.code))?;
    Ok(Outcome {
        exit,
        hooks,
        caught_up,
        goes_on_in,
        problems,
    })
}

/// Records on the thread what the session will need: its id and transcript
/// when grove chose them, and the opening prompt (already in the thread).
fn prepare(plan: &Plan) -> Result<()> {
    let Some(native) = plan.spec.native else {
        return Ok(());
    };
    let record = plan.session.as_ref().map(|id| SessionRecord {
        agent: plan.spec.id.clone(),
        session_id: id.clone(),
        transcript: match native {
            Native::Claude => capture::transcripts::claude_transcript(&plan.worktree, id)
                .map(|p| p.to_string_lossy().into_owned()),
            Native::Codex => {
                capture::transcripts::codex_rollout(id).map(|p| p.to_string_lossy().into_owned())
            }
            // Known once the agent wrote it (a hook, or the look at exit).
            Native::Gemini | Native::OpenCode => {
                capture::transcripts::transcript_of(native, &plan.worktree, id)
                    .map(|p| p.to_string_lossy().into_owned())
            }
        },
        started_at: crate::atsf::now_timestamp(),
        exported: false,
        extra: Default::default(),
    });
    if let Some(r) = &record {
        capture::ledger::record(&plan.repo_root, plan.thread.id(), r)?;
    }
    plan.thread.update_meta(|meta| {
        if let Some(r) = &record {
            capture::add_session(meta, r);
        }
        if let (true, Some(opening)) = (plan.opening_in_thread, &plan.opening) {
            capture::set_opening(meta, opening);
        }
    })?;
    Ok(())
}
