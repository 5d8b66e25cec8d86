//! `grove resume`

use std::path::{Path, PathBuf};

use grove::agent::Native;
use grove::discovery::Found;
use grove::launch::{resume, session};
use grove::project::Project;
use grove::store::Thread;
use grove::worktree::{self, ReviveOptions};

use super::{Output, launch::LaunchArgs, progress::Reporter};

/// Continue a thread in Claude Code or Codex: the thread is written as a
/// new session of the agent (in ~/.claude/projects/ or ~/.codex/sessions/;
/// no file of the agent's is ever replaced), and the agent resumes it in
/// the thread's worktree, its turns captured into the same thread.
///
/// A thread from another agent is converted. A worktree that was removed is
/// made again first: from its branch, or from the recorded commit when the
/// branch is gone, with the thread put back from the cache.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// claude-code or codex (default: the thread's agent when it is one of
    /// them).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,

    /// The first prompt of the resumed session.
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,

    #[command(flatten)]
    launch: LaunchArgs,

    /// When the worktree is made again: do not apply worktreeHooks.
    #[arg(long)]
    no_hooks: bool,

    /// When the worktree is made again: trust the repository's
    /// postSetupCommands as they are now, without asking.
    #[arg(long)]
    trust: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    let agent_id = args
        .agent
        .clone()
        .unwrap_or_else(|| found.meta.agent.id.clone());
    let mut launch_args = args.launch.clone();
    launch_args.trust_agent |= args.trust;
    let spec = super::launch::agent_spec(&project, &agent_id, &launch_args).map_err(|e| {
        match args.agent {
            Some(_) => e,
            None => e.context(format!(
                "thread {} was written by {agent_id}; pass --agent claude-code or --agent codex to continue it there",
                found.meta.thread_id
            )),
        }
    })?;
    let native = spec.native.ok_or_else(|| {
        super::UsageError(format!(
            "grove resume writes the thread as a session of Claude Code or Codex, and {} is neither; \
             pass --agent claude-code or --agent codex (or configure \"native\" for {} under grove.agents)",
            spec.id, spec.id
        ))
    })?;
    let resume_cmd = spec.resume.clone().unwrap_or_default();
    // Nothing is made or written for an agent that cannot start.
    let program =
        grove::agent::program::program(resume_cmd.first().map_or("", String::as_str), &spec)?;
    let (thread, worktree) = place(&project, &found, &args, out)?;
    catch_up(&thread, &project.main_root, out);
    let session = match resume::own_session(&thread, native, &project.main_root) {
        Some(own) => {
            out.status(&format!(
                "grove: thread {} goes on in its own {} session {own}",
                thread.id(),
                native.agent_id()
            ));
            own
        }
        None => {
            let written = resume::write_session(&thread, native, &worktree, Some(&program))?;
            report_written(out, &thread, native, &written);
            written.report.session_id
        }
    };
    let options = session::Options {
        prompt: args.prompt,
        resume: Some(session),
        capture: !args.launch.no_capture,
    };
    super::launch::start(out, &thread, &worktree, spec, &options)
}

/// The thread and the worktree it resumes in, the worktree made again when
/// it is gone.
fn place(
    project: &Project,
    found: &Found,
    args: &Args,
    out: &Output,
) -> anyhow::Result<(Thread, PathBuf)> {
    let Some(gone) = worktree::gone_worktree(found) else {
        let worktree = super::launch::worktree_of(found)?;
        return Ok((found.thread.clone(), worktree));
    };
    out.status(&format!(
        "grove: the worktree {} is gone; making it again",
        gone.display()
    ));
    let reporter = Reporter::new(out.is_quiet());
    let created = worktree::revive(
        project,
        found,
        ReviveOptions {
            hooks: !args.no_hooks,
            trust: args.trust,
        },
        &reporter,
        &super::new::ask_trust,
    )?;
    drop(reporter);
    super::new::report_created(&created, out);
    if let Some(code) = super::new::interrupted_exit(&created, out) {
        anyhow::bail!(
            "interrupted while setting the worktree up (exit {code}); `grove resume {}` goes on",
            created.meta.thread_id
        );
    }
    Ok((created.thread, created.worktree))
}

/// What the agent's earlier sessions wrote and no capture brought yet goes
/// into the thread first (a session run by hand in the worktree too), so
/// the session written is the whole thread, in order.
fn catch_up(thread: &Thread, repo_root: &Path, out: &Output) {
    match thread
        .meta()
        .and_then(|meta| grove::capture::adopt::look(thread, &meta, repo_root))
    {
        Ok(a) => {
            for e in a.problems {
                out.warn(&e);
            }
        }
        Err(e) => out.warn(&format!("finding sessions run by hand: {e}")),
    }
    match grove::capture::catchup::catch_up(thread, repo_root) {
        Ok((_, errors)) => {
            for e in errors {
                out.warn(&e);
            }
        }
        Err(e) => out.warn(&format!("capturing the earlier sessions: {e}")),
    }
}

fn report_written(out: &Output, thread: &Thread, native: Native, written: &resume::Written) {
    for s in &written.report.skipped {
        out.warn(&format!("left out of the session: {s}"));
    }
    out.status(&format!(
        "grove: wrote thread {} ({} message(s)) as {} session {} at {}",
        thread.id(),
        written.report.messages,
        native.agent_id(),
        written.report.session_id,
        written.path.display()
    ));
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
