//! `grove launch`

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use grove::agent::{self, AgentSpec, Origin, Settings};
use grove::launch::session;
use grove::project::Project;
use grove::store::Thread;

use super::Output;

/// Start the agent in a task's worktree, in the foreground, capturing its
/// conversation into the thread; exits with the agent's exit code.
///
/// The agent is the thread's (or --agent): claude-code and codex are built
/// in, others come from grove.agents in config.json. It opens with the
/// thread's first prompts when no session was captured yet, or --prompt.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    #[command(flatten)]
    launch: LaunchArgs,

    /// The opening prompt (default: the thread's first prompts, when no
    /// session was captured into it yet).
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,
}

/// How an agent is started (`launch`, `new --launch`, `resume`).
#[derive(clap::Args, Clone, Default)]
pub struct LaunchArgs {
    /// Do not install the agent's capture hooks (the session is still
    /// captured when the agent exits).
    #[arg(long)]
    pub no_capture: bool,

    /// Trust the project's configured agent commands without asking.
    #[arg(long = "trust-agent")]
    pub trust_agent: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    let worktree = worktree_of(&found)?;
    let agent_id = found.meta.agent.id.clone();
    launch_in(
        out,
        &project,
        &found.thread,
        &worktree,
        &agent_id,
        &args.launch,
        session::Options {
            prompt: args.prompt,
            resume: None,
            capture: !args.launch.no_capture,
        },
    )
}

/// The worktree a thread's agent runs in: its task's, or the project
/// holding it. A worktree that is gone is an error saying how to get it back.
pub fn worktree_of(found: &grove::discovery::Found) -> anyhow::Result<PathBuf> {
    let dir = match &found.worktree {
        Some(w) => w.clone(),
        None if found.from_cache => anyhow::bail!(
            "thread {} is only in grove's cache and recorded no worktree to run the agent in; \
             `grove new --in` or `grove fork` starts from it in a worktree",
            found.meta.thread_id
        ),
        None => found
            .thread
            .dir()
            .ancestors()
            .nth(3)
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow::anyhow!("thread {} is in no project", found.meta.thread_id))?,
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "the worktree of thread {} ({}) is gone; `grove resume {}` makes it again and continues there",
            found.meta.thread_id,
            dir.display(),
            found.meta.thread_id
        );
    }
    Ok(dir)
}

/// Resolves the agent `agent_id` (trusting a project's command first) and
/// runs it for `thread` in `worktree`.
pub fn launch_in(
    out: &Output,
    project: &Project,
    thread: &Thread,
    worktree: &Path,
    agent_id: &str,
    args: &LaunchArgs,
    options: session::Options,
) -> anyhow::Result<u8> {
    let spec = agent_spec(project, agent_id, args)?;
    start(out, thread, worktree, spec, &options)
}

/// The agent `agent_id`, its project command trusted (by `--trust-agent`,
/// an earlier `grove trust` or the user's answer) before it may run.
pub fn agent_spec(
    project: &Project,
    agent_id: &str,
    args: &LaunchArgs,
) -> anyhow::Result<AgentSpec> {
    let settings = Settings::load(Some(&project.main_root))?;
    let spec = agent::resolve(agent_id, &settings)?;
    if spec.origin == Origin::Project && !settings.project_trusted()? {
        let commands = settings.project_commands();
        if args.trust_agent || ask(&commands) {
            settings.trust_project()?;
        } else {
            anyhow::bail!(
                "the agent {} is configured in {}/.agent/config.json and is not trusted: review it, \
                 then run `grove trust` there or pass --trust-agent",
                spec.id,
                project.main_root.display()
            );
        }
    }
    Ok(spec)
}

/// Runs `spec` for `thread` in `worktree` in the foreground; the agent's
/// exit code is returned.
pub fn start(
    out: &Output,
    thread: &Thread,
    worktree: &Path,
    spec: AgentSpec,
    options: &session::Options,
) -> anyhow::Result<u8> {
    let plan = session::plan(thread, worktree, spec, options)?;
    out.status(&format!(
        "grove: starting {} in {} (thread {})",
        super::output::escape_line(&plan.argv.join(" ")),
        worktree.display(),
        thread.id()
    ));
    let grove_exe = std::env::current_exe()?;
    let outcome = session::run(&plan, &grove_exe)?;
    for p in &outcome.problems {
        out.warn(p);
    }
    if outcome.caught_up > 0 {
        out.status(&format!(
            "grove: {} message(s) captured after the agent exited",
            outcome.caught_up
        ));
    }
    if let Some(pid) = outcome.goes_on_in {
        out.status(&format!(
            "grove: {} exited; its session goes on in process {pid} (Codex's app-server keeps it until it ends it), \
             and its turns are still captured into thread {}",
            plan.spec.id,
            thread.id()
        ));
    }
    Ok(u8::try_from(outcome.exit.code.clamp(0, 255)).unwrap_or(super::exit::ERROR))
}

/// Asks on a terminal whether the project's agent commands may run.
fn ask(commands: &[String]) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    eprintln!("This repository's .agent/config.json configures commands grove would run:");
    for c in commands {
        eprintln!("  {}", super::output::escape_line(c));
    }
    eprint!("Trust them for this repository? [y/N] ");
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
