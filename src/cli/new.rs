//! `grove new`

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use grove::atsf::PostSetupCommand;
use grove::project::Project;
use grove::threads;
use grove::worktree::{self, NewTask};

use super::{Output, progress::Reporter};

/// Start a new agent task: a branch, a worktree with the project's setup
/// applied, and a thread inside it. Prints the worktree path.
///
/// `cd "$(grove new "Fix the login bug")"` enters the new worktree.
#[derive(clap::Args)]
pub struct Args {
    /// Title of the thread; defaults to the first line of --prompt.
    title: Option<String>,

    /// First user message (after the config's initialPrompt).
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,

    /// Agent id recorded in the thread (default: the project's defaults.agentId, else "unknown").
    #[arg(long, value_name = "ID")]
    agent: Option<String>,

    /// Revision the new branch starts from (default: HEAD).
    #[arg(long, value_name = "REV")]
    base: Option<String>,

    /// Create the thread in the project's own .agent/ instead of a new worktree.
    #[arg(long, conflicts_with_all = ["carry", "worktree"])]
    no_worktree: bool,

    /// Make a worktree even when .agent/config.json says
    /// defaults.useWorktree: false.
    #[arg(long)]
    worktree: bool,

    /// Start the new worktree with this worktree's uncommitted changes
    /// (staged, unstaged, untracked); the branch starts at its HEAD. This
    /// worktree is left as it is.
    #[arg(long)]
    carry: bool,

    /// Start the thread in an existing task's worktree (a thread id or prefix,
    /// or the worktree's path) instead of a new one: no new branch; the
    /// thread is a sibling of the task's. Prints the worktree path.
    #[arg(
        long = "in",
        value_name = "THREAD|PATH",
        conflicts_with_all = ["no_worktree", "carry", "base", "branch", "dir"]
    )]
    in_: Option<String>,

    /// Run CMD in the new worktree afterwards (through the shell), with GROVE_PROMPT set.
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,

    /// Then start the agent (the thread's agent, or --launch=AGENT) in the
    /// worktree, in the foreground, opening with the task's prompts, its
    /// turns captured into the thread; exits with the agent's exit code.
    #[arg(
        long,
        value_name = "AGENT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        conflicts_with = "exec"
    )]
    launch: Option<String>,

    #[command(flatten)]
    launch_args: super::launch::LaunchArgs,

    #[command(flatten)]
    task: TaskArgs,

    /// Print the result as a JSON object.
    #[arg(long)]
    json: bool,
}

/// How a new task's worktree is made (`new`, `fork`, `handoff`).
#[derive(clap::Args)]
pub struct TaskArgs {
    /// Branch to create (or an existing branch not checked out elsewhere). Default: <prefix><short id>.
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,

    /// Where to create the worktree (default: <data dir>/worktrees/<repo>/thread-<id8>).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// Do not apply worktreeHooks (symlinks, commands, initial prompt).
    #[arg(long)]
    pub no_hooks: bool,

    /// Trust this repository's postSetupCommands and preRemoveCommands as
    /// they are now, without asking.
    #[arg(long)]
    pub trust: bool,

    /// Leave submodules uninitialised (by default those the main checkout
    /// has initialised are initialised in the new worktree).
    #[arg(long)]
    pub no_submodules: bool,

    /// Check Git LFS files out as pointers, downloading nothing (`git lfs
    /// pull` in the worktree gets them later).
    #[arg(long)]
    pub no_lfs: bool,

    /// Exit with code 3 when a hook failed or timed out, or something else
    /// went wrong once the worktree existed (the worktree is kept).
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let config = project.main_store().config()?;
    for miss in project.main_store().config_near_misses() {
        out.warn(&format!(
            "{}: {miss}",
            project.main_store().config_path().display()
        ));
    }
    let configured = config
        .as_ref()
        .and_then(|c| c.defaults.as_ref()?.use_worktree)
        .unwrap_or(true);
    let use_worktree = args.worktree || (!args.no_worktree && configured);
    let title = thread_title(args.title.as_deref(), args.prompt.as_deref());
    let launch_agent = args.launch.as_deref().filter(|a| !a.is_empty());
    let chosen = grove::setting::agent(
        args.agent.as_deref().or(launch_agent),
        config.as_ref(),
        &project.main_store().config_path(),
    );
    let agent = chosen.value.clone();
    let launch = args.launch.is_some().then(|| {
        let mut l = args.launch_args.clone();
        l.trust_agent |= args.task.trust;
        Launch {
            agent: launch_agent.unwrap_or(&agent).to_string(),
            source: match launch_agent {
                Some(_) => grove::setting::Source::CommandLine,
                None => chosen.source.clone(),
            },
            args: l,
        }
    });
    if !use_worktree && args.in_.is_none() {
        refuse_worktree_flags(&args, configured)?;
    }
    if let Some(target) = &args.in_ {
        let (thread, dir) = new_in(
            &project,
            target,
            &title,
            &agent,
            args.prompt,
            args.json,
            out,
        )?;
        return then_launch(out, &project, &thread, &dir, launch);
    }
    if !use_worktree {
        let thread = new_local(&project, &title, &agent, args.prompt, args.json, out)?;
        return then_launch(out, &project, &thread, &project.root, launch);
    }
    let task = NewTask {
        title,
        agent,
        prompt: args.prompt.clone(),
        branch: args.task.branch,
        base: args.base,
        dir: args.task.dir,
        hooks: !args.task.no_hooks,
        trust: args.task.trust,
        carry_from: args.carry.then(|| project.root.clone()),
        thread_id: None,
        no_submodules: args.task.no_submodules,
        no_lfs: args.task.no_lfs,
    };
    let reporter = Reporter::new(out.is_quiet());
    let created = worktree::create(&project, &task, &reporter, &ask_trust)?;
    drop(reporter);
    let failed = report_created(&created, out);
    super::shell_init::cd_to(&created.worktree);
    if let Some(code) = interrupted_exit(&created, out) {
        if args.json {
            out.json(&created_json(&created))?;
        } else {
            out.line(&created.worktree.display().to_string())?;
        }
        return Ok(code);
    }
    if args.json {
        out.json(&created_json(&created))?;
    } else {
        out.line(&created.worktree.display().to_string())?;
    }
    if let Some(cmd) = args.exec {
        let prompt = args.prompt.unwrap_or_default();
        let ports = grove::ports::of(&created.meta);
        let status = exec_in(
            &cmd,
            &created.worktree,
            &prompt,
            &created.meta.thread_id,
            &ports,
        )?;
        if status != 0 {
            return Ok(u8::try_from(status).unwrap_or(super::exit::ERROR));
        }
    }
    if args.task.strict && failed > 0 {
        return Ok(super::exit::HOOK_FAILED);
    }
    then_launch(out, &project, &created.thread, &created.worktree, launch)
}

/// What `--launch` starts, and where its agent was named.
struct Launch {
    agent: String,
    source: grove::setting::Source,
    args: super::launch::LaunchArgs,
}

/// `--launch`: the agent, once the task is there.
fn then_launch(
    out: &Output,
    project: &Project,
    thread: &grove::store::Thread,
    dir: &Path,
    launch: Option<Launch>,
) -> anyhow::Result<u8> {
    let Some(Launch {
        agent,
        source,
        args,
    }) = launch
    else {
        return Ok(super::exit::SUCCESS);
    };
    let options = grove::launch::session::Options {
        prompt: None,
        resume: None,
        capture: !args.no_capture,
    };
    super::launch::launch_in(out, project, thread, dir, &agent, &args, options).map_err(|e| {
        let e = match source {
            grove::setting::Source::CommandLine => e,
            source => e.context(format!("the agent {agent:?} is named by {source}")),
        };
        e.context(format!(
            "the task is there ({}, thread {}); `grove launch {}` starts the agent once fixed",
            dir.display(),
            thread.id(),
            thread.id()
        ))
    })
}

fn created_json(created: &worktree::CreatedTask) -> serde_json::Value {
    serde_json::json!({
        "threadId": created.meta.thread_id,
        "title": created.meta.title,
        "branch": created.branch,
        "worktreePath": created.worktree,
        "threadDir": created.thread.dir(),
        "hooks": created.hooks,
        "carried": created.carried,
        "problems": created.problems,
        "interrupted": created.interrupted.map(grove::setup::interrupt::signal_name),
    })
}

/// When a signal interrupted the hooks: says so, and gives the exit code
/// (128 + the signal, as a shell reports it).
pub fn interrupted_exit(created: &worktree::CreatedTask, out: &Output) -> Option<u8> {
    let signal = created.interrupted?;
    out.warn(&format!(
        "interrupted by {}: the running hook was stopped with its processes, the rest skipped; \
         the worktree and its thread are kept",
        grove::setup::interrupt::signal_name(signal)
    ));
    Some(u8::try_from(128 + signal).unwrap_or(super::exit::ERROR))
}

/// Reports a created task on stderr (hooks, carried changes, problems, where
/// it is); returns the number of failed hooks and problems.
pub fn report_created(created: &worktree::CreatedTask, out: &Output) -> usize {
    let count = |status| created.hooks.iter().filter(|h| h.status == status).count();
    let failed = created.hooks.iter().filter(|h| h.is_failure()).count();
    if !created.hooks.is_empty() {
        out.status(&format!(
            "grove: {} hook(s): {} ok, {failed} failed, {} skipped",
            created.hooks.len(),
            count(grove::setup::HookStatus::Ok),
            count(grove::setup::HookStatus::Skipped),
        ));
        let background = count(grove::setup::HookStatus::Background);
        if background > 0 {
            out.status(&format!(
                "grove: {background} command(s) run on in the background (`grove show` follows them)"
            ));
        }
    }
    if let Some(c) = &created.carried {
        out.status(&format!(
            "grove: carried {} staged, {} unstaged and {} untracked file(s)",
            c.staged, c.unstaged, c.untracked
        ));
    }
    for p in &created.problems {
        out.warn(p);
    }
    out.status(&format!(
        "grove: created {} on branch {} (thread {})",
        created.worktree.display(),
        created.branch,
        created.meta.thread_id
    ));
    failed + created.problems.len()
}

fn new_local(
    project: &Project,
    title: &str,
    agent: &str,
    prompt: Option<String>,
    json: bool,
    out: &Output,
) -> anyhow::Result<grove::store::Thread> {
    let store = project.store();
    let meta = threads::new_meta(title, agent, project.context());
    let prompts: Vec<String> = prompt.into_iter().collect();
    let (thread, meta) = threads::start(&store, &meta, &prompts)?;
    if let Err(e) = grove::discovery::cache_if_in_worktree(project, &thread) {
        out.warn(&format!(
            "the thread is not in grove's cache yet (the next `grove list` retries): {e}"
        ));
    }
    if json {
        out.json(&serde_json::json!({
            "threadId": meta.thread_id,
            "title": meta.title,
            "threadDir": thread.dir(),
            "agent": meta.agent.id,
            "context": meta.context,
        }))?;
    } else {
        out.status(&format!(
            "grove: created thread \"{}\" in {}",
            meta.title,
            thread.dir().display()
        ));
        out.line(&meta.thread_id)?;
    }
    Ok(thread)
}

/// `--in`: a new thread beside a task's, in its worktree.
fn new_in(
    project: &Project,
    target: &str,
    title: &str,
    agent: &str,
    prompt: Option<String>,
    json: bool,
    out: &Output,
) -> anyhow::Result<(grove::store::Thread, PathBuf)> {
    let (root, worktree) = task_worktree(project, target)?;
    let there = Project::discover(&root)?;
    if there.git.as_ref().map(|g| &g.main_root) != project.git.as_ref().map(|g| &g.main_root) {
        anyhow::bail!(
            "{} is not a worktree of this repository ({}): give a thread or worktree of it",
            root.display(),
            project.main_root.display()
        );
    }
    let mut context = there.context();
    context.worktree = worktree.or_else(|| linked_worktree(&there));
    let meta = threads::new_meta(title, agent, context);
    let prompts: Vec<String> = prompt.into_iter().collect();
    let (thread, meta) = threads::start(&there.store(), &meta, &prompts)?;
    if let Err(e) = grove::discovery::cache_if_in_worktree(&there, &thread) {
        out.warn(&format!(
            "the thread is not in grove's cache yet (the next `grove list` retries): {e}"
        ));
    }
    if json {
        out.json(&serde_json::json!({
            "threadId": meta.thread_id,
            "title": meta.title,
            "branch": meta.context.git_branch,
            "worktreePath": root,
            "threadDir": thread.dir(),
        }))?;
    } else {
        out.status(&format!(
            "grove: created thread {} in {}",
            meta.thread_id,
            root.display()
        ));
        out.line(&root.display().to_string())?;
        super::shell_init::cd_to(&root);
    }
    Ok((thread, root))
}

/// The record of the linked worktree `project` is in (none for a main one).
fn linked_worktree(project: &Project) -> Option<grove::atsf::WorktreeInfo> {
    let branch = project.git.as_ref()?.branch.clone()?;
    (project.root != project.main_root).then(|| grove::atsf::WorktreeInfo {
        path: project.root.to_string_lossy().into_owned(),
        branch,
        extra: Default::default(),
    })
}

/// The worktree `target` names — a directory, or a thread whose task's
/// worktree it is — and the task's worktree record, when there is one.
fn task_worktree(
    project: &Project,
    target: &str,
) -> anyhow::Result<(PathBuf, Option<grove::atsf::WorktreeInfo>)> {
    let path = project.cwd.join(target);
    if path.is_dir() {
        let root = Project::discover(&path)?.root;
        return Ok((root, None));
    }
    // Where the task's worktree is comes from git and grove's own records
    // (discovery), never from the thread.json, which a pull or a commit
    // could point anywhere.
    let found = grove::discovery::resolve(project, target)?;
    let id = &found.meta.thread_id;
    if let Some(wt) = found.live_worktree() {
        let info = grove::atsf::WorktreeInfo {
            path: wt.to_string_lossy().into_owned(),
            branch: found.branch.clone().unwrap_or_default(),
            extra: Default::default(),
        };
        return Ok((wt.to_path_buf(), Some(info)));
    }
    if let Some(wt) = &found.worktree {
        anyhow::bail!(
            "the worktree of thread {id} ({}) is not there: --in needs a worktree that is (`grove switch {id}` makes it again, `grove new` makes a new task)",
            wt.display()
        );
    }
    if found.from_cache {
        anyhow::bail!(
            "thread {id} has no worktree on this machine: --in needs one (`grove switch {id}` makes it)"
        );
    }
    // A thread in a project's own .agent/: that project.
    let root = found
        .thread
        .dir()
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow::anyhow!("thread {id} is not in a project"))?;
    Ok((root, None))
}

/// Asks on a terminal whether the repository's commands may run: every
/// command the answer trusts is listed, the teardown's included.
pub(super) fn ask_trust(asked: &grove::setup::TrustAsked) -> bool {
    let mut lines = Vec::new();
    if !asked.setup.is_empty() {
        lines.push("This repository's .agent/config.json wants to run in the new worktree:".into());
        lines.extend(command_lines(asked.setup));
    }
    if !asked.teardown.is_empty() {
        lines.push(
            if asked.setup.is_empty() {
                "This repository's .agent/config.json wants to run in the new worktree \
                 before it is removed (preRemoveCommands):"
            } else {
                "and in it before it is removed (preRemoveCommands):"
            }
            .into(),
        );
        lines.extend(command_lines(asked.teardown));
    }
    super::output::confirm(&lines, "Trust these commands for this repository?")
}

/// Each command exactly as it will run, on one line: a carriage return or
/// an escape sequence cannot hide one command behind another.
fn command_lines(commands: &[PostSetupCommand]) -> impl Iterator<Item = String> + '_ {
    commands
        .iter()
        .map(|c| format!("  $ {}", super::output::escape_line(&c.command)))
}

/// Flags that only mean something for a new worktree are a usage error
/// without one, never ignored.
fn refuse_worktree_flags(args: &Args, configured: bool) -> anyhow::Result<()> {
    let given: Vec<&str> = [
        ("--carry", args.carry),
        ("--branch", args.task.branch.is_some()),
        ("--dir", args.task.dir.is_some()),
        ("--base", args.base.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, on)| on.then_some(flag))
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    let why = if configured {
        "--no-worktree makes the thread in this project's .agent/".to_string()
    } else {
        "defaults.useWorktree is false in .agent/config.json; pass --worktree to make one anyway"
            .to_string()
    };
    Err(super::UsageError(format!(
        "{} need(s) a new worktree: {why}",
        given.join(", ")
    ))
    .into())
}

/// Runs `--exec CMD` in the worktree through the shell; returns its exit code.
fn exec_in(
    cmd: &str,
    worktree: &Path,
    prompt: &str,
    id: &str,
    ports: &[u16],
) -> anyhow::Result<i32> {
    let mut expr = grove::setup::shell(cmd)
        .dir(worktree)
        .env("GROVE_PROMPT", prompt)
        .env("GROVE_THREAD_ID", id)
        .env("GROVE_WORKTREE", worktree)
        .unchecked();
    for (k, v) in grove::ports::env(ports) {
        expr = expr.env(k, v);
    }
    // Piped, grove's stdout carries the worktree path alone; the command's
    // output goes to stderr. On a terminal the agent gets the terminal.
    if !std::io::stdout().is_terminal() {
        expr = expr.stdout_to_stderr();
    }
    let status = expr
        .run()
        .map_err(|e| anyhow::anyhow!("could not run --exec {cmd:?}: {e}"))?
        .status;
    Ok(status.code().unwrap_or(1))
}

/// The explicit title, else the prompt's first line, else "Untitled".
pub fn thread_title(title: Option<&str>, prompt: Option<&str>) -> String {
    title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| {
            prompt
                .map(threads::title_from_prompt)
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| "Untitled".to_string())
}
