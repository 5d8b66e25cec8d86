//! `grove capture`

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use grove::agent::Native;
use grove::capture::{self, hook};
use grove::project::Project;

use super::Output;

/// Capture an agent's conversation into a task's thread as it happens.
///
/// `grove launch` and `grove new --launch` install the hooks themselves;
/// `install` does it for an agent you start yourself in a task's worktree.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// Run by Claude Code's hooks: reads the hook's JSON on stdin and
    /// captures the new turns. Prints nothing, always exits 0.
    Claude(HookArgs),
    /// Run by Codex's hooks: reads the hook's JSON on stdin and captures the
    /// new turns. Prints nothing, always exits 0.
    Codex(HookArgs),
    /// Install the agents' project hooks in a task's worktree
    /// (.claude/settings.local.json, .codex/hooks.json). Says which events
    /// got grove's hook and which did not, and why; exits 1 when none did,
    /// 4 when some did not.
    Install(InstallArgs),
    /// Remove grove's hooks from a task's worktree (the user's stay; the
    /// file is as it was before the install). Exits 1 when a file could not
    /// be read.
    Uninstall(InstallArgs),
    /// Capture now what the hooks missed: sessions of the thread's agent run
    /// in its worktree since the thread began, and what their transcripts
    /// gained.
    Sync(SyncArgs),
}

#[derive(clap::Args)]
struct HookArgs {
    /// The thread a new session goes into (set by `grove capture install`).
    #[arg(long, value_name = "THREAD")]
    #[arg(add = super::complete::threads())]
    thread: Option<String>,
}

#[derive(clap::Args)]
struct InstallArgs {
    /// The task's thread (default: the task of the worktree grove runs in).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Which agent's hooks: claude-code, codex, or all (default: the
    /// thread's agent, or all when it is neither).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,

    /// Print {threadId, worktreePath, agents: [{agent, file, installed |
    /// removed, skipped | problem, files}], files} as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct SyncArgs {
    /// The task's thread (default: the task of the worktree grove runs in).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Print {threadId, added, problems} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    match args.what {
        What::Claude(a) => Ok(run_hook(Native::Claude, a, cwd, out)),
        What::Codex(a) => Ok(run_hook(Native::Codex, a, cwd, out)),
        What::Install(a) => install(a, cwd, out),
        What::Uninstall(a) => uninstall(a, cwd, out),
        What::Sync(a) => sync(a, cwd, out),
    }
}

/// A hook call: whatever happens goes to the log, nothing to the agent.
fn run_hook(native: Native, args: HookArgs, cwd: &Path, out: &Output) -> u8 {
    if std::io::stdin().is_terminal() {
        out.error(&format!(
            "`grove capture {}` is run by the agent's hooks with the hook's JSON on stdin; \
             `grove capture install` installs them",
            native.format()
        ));
        return super::exit::USAGE;
    }
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(hook::MAX_INPUT)
        .read_to_end(&mut bytes)
    {
        hook::log(
            None,
            &format!("capture {}: reading stdin: {e}", native.format()),
        );
        return super::exit::SUCCESS;
    }
    let input = match hook::HookInput::parse(&bytes) {
        Ok(i) => i,
        Err(e) => {
            hook::log(None, &format!("capture {}: {e}", native.format()));
            return super::exit::SUCCESS;
        }
    };
    let request = hook::Request {
        native,
        input: input.clone(),
        thread: args.thread,
        env_thread: std::env::var("GROVE_THREAD").ok().filter(|t| !t.is_empty()),
        cwd: cwd.to_path_buf(),
    };
    match hook::handle(&request) {
        Ok(h) => hook::log(
            Some(&h.thread),
            &hook::describe(&h, input.session_id.as_deref()),
        ),
        Err(e) => hook::log(
            None,
            &format!(
                "capture {} {}: {e}",
                native.format(),
                input.hook_event_name.as_deref().unwrap_or("?")
            ),
        ),
    }
    super::exit::SUCCESS
}

/// The thread named, or the task of the worktree grove runs in.
fn task_thread(
    project: &Project,
    query: Option<&str>,
    out: &Output,
) -> anyhow::Result<(grove::store::Thread, PathBuf)> {
    if let Some(q) = query {
        let found = super::resolve(out, project, q)?;
        let Some(wt) = found.worktree.clone().or_else(|| {
            // A thread in a project's own .agent/: that project.
            found.thread.dir().ancestors().nth(3).map(Path::to_path_buf)
        }) else {
            anyhow::bail!("thread {} has no worktree", found.meta.thread_id);
        };
        if !wt.is_dir() {
            anyhow::bail!(
                "the worktree of thread {} ({}) is gone; `grove resume {}` makes it again",
                found.meta.thread_id,
                wt.display(),
                found.meta.thread_id
            );
        }
        return Ok((found.thread, wt));
    }
    let listing = project.store().list()?;
    let mut tasks: Vec<_> = listing
        .threads
        .into_iter()
        .filter(|t| t.meta.main_thread_id.is_none())
        .collect();
    tasks.sort_by(|a, b| a.meta.created_at.cmp(&b.meta.created_at));
    let Some(first) = tasks.into_iter().next() else {
        anyhow::bail!(
            "no thread in {}: give the task's THREAD, or start one with `grove new`",
            project.root.display()
        );
    };
    Ok((first.thread, project.root.clone()))
}

/// The thread, its worktree and the agents `capture install|uninstall`
/// works on.
fn install_target(
    args: &InstallArgs,
    cwd: &Path,
    out: &Output,
) -> anyhow::Result<(grove::store::Thread, PathBuf, Vec<Native>)> {
    let project = Project::discover(cwd)?;
    let (thread, worktree) = task_thread(&project, args.thread.as_deref(), out)?;
    let agents: Vec<Native> = match args.agent.as_deref() {
        Some("all") => vec![Native::Claude, Native::Codex],
        Some(name) => vec![Native::from_name(name).ok_or_else(|| {
            super::UsageError(format!(
                "--agent {name:?}: grove installs hooks for claude-code and codex (or all)"
            ))
        })?],
        None => match Native::from_name(&thread.meta()?.agent.id) {
            Some(n) => vec![n],
            None => vec![Native::Claude, Native::Codex],
        },
    };
    Ok((thread, worktree, agents))
}

/// `grove capture install`: exits 0 when every event of every agent got
/// grove's hook, 4 when some did not, 1 when none did.
fn install(args: InstallArgs, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let (thread, worktree, agents) = install_target(&args, cwd, out)?;
    let grove_exe = std::env::current_exe()?;
    let mut reports = Vec::new();
    for native in agents {
        reports.push(capture::install::install(
            native,
            &worktree,
            thread.id(),
            &grove_exe,
        )?);
    }
    let any = reports.iter().any(|r| !r.installed.is_empty());
    let all = reports.iter().all(|r| r.skipped.is_empty());
    let code = match (any, all) {
        (false, _) => super::exit::ERROR,
        (true, false) => super::exit::PARTIAL,
        (true, true) => super::exit::SUCCESS,
    };
    let files: Vec<&PathBuf> = reports.iter().flat_map(|r| &r.files).collect();
    let problems: Vec<String> = reports.iter().flat_map(|r| r.problems()).collect();
    if args.json {
        out.json(&serde_json::json!({
            "threadId": thread.id(),
            "worktreePath": worktree,
            "agents": reports,
            "files": files,
            "skipped": problems,
        }))?;
        return Ok(code);
    }
    for r in reports.iter().filter(|r| !r.installed.is_empty()) {
        let state = if r.files.is_empty() {
            "already installed"
        } else {
            "installed"
        };
        out.status(&format!(
            "grove: {} capture hooks {state} for thread {} in {}: {}",
            r.agent,
            thread.id(),
            r.file.display(),
            r.installed.join(", ")
        ));
    }
    for p in &problems {
        out.warn(p);
    }
    if !any {
        out.error(&format!(
            "no capture hook installed in {}",
            worktree.display()
        ));
    }
    for f in &files {
        out.line(&f.display().to_string())?;
    }
    if reports
        .iter()
        .any(|r| r.agent == Native::Codex.agent_id() && !r.installed.is_empty())
    {
        out.status(
            "grove: Codex runs a project's hooks only once you trust the project in Codex; until then, \
             `grove capture sync` (and `grove list`/`show`) bring its turns",
        );
    }
    Ok(code)
}

/// `grove capture uninstall`: exits 1 when a file could not be looked
/// into (grove's hooks may still be there).
fn uninstall(args: InstallArgs, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let (thread, worktree, agents) = install_target(&args, cwd, out)?;
    let mut reports = Vec::new();
    for native in agents {
        reports.push(capture::install::uninstall(native, &worktree)?);
    }
    let code = if reports.iter().any(|r| r.problem.is_some()) {
        super::exit::ERROR
    } else {
        super::exit::SUCCESS
    };
    let files: Vec<&PathBuf> = reports.iter().flat_map(|r| &r.files).collect();
    if args.json {
        out.json(&serde_json::json!({
            "threadId": thread.id(),
            "worktreePath": worktree,
            "agents": reports,
            "files": files,
        }))?;
        return Ok(code);
    }
    for r in &reports {
        if let Some(p) = &r.problem {
            out.error(&format!("{}: {p}", r.agent));
        } else if r.removed.is_empty() {
            out.status(&format!(
                "grove: no {} capture hook of grove's in {}",
                r.agent,
                r.file.display()
            ));
        } else {
            out.status(&format!(
                "grove: {} capture hooks removed from {}: {}",
                r.agent,
                r.file.display(),
                r.removed.join(", ")
            ));
        }
    }
    for f in &files {
        out.line(&f.display().to_string())?;
    }
    Ok(code)
}

fn sync(args: SyncArgs, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let (thread, worktree) = task_thread(&project, args.thread.as_deref(), out)?;
    let meta = thread.meta()?;
    let since = meta
        .created_at
        .parse::<jiff::Timestamp>()
        .map(std::time::SystemTime::from)
        .unwrap_or(std::time::UNIX_EPOCH);
    let (mut added, mut problems) = capture::sync::catch_up(&thread, &project.main_root)?;
    let natives: Vec<Native> = match Native::from_name(&meta.agent.id) {
        Some(n) => vec![n],
        None => vec![Native::Claude, Native::Codex],
    };
    for native in natives {
        let (n, p) =
            capture::sync::adopt_since(&thread, &project.main_root, native, &worktree, since)?;
        added += n;
        problems.extend(p);
    }
    if args.json {
        out.json(&serde_json::json!({
            "threadId": thread.id(),
            "added": added,
            "problems": problems,
        }))?;
    } else {
        for p in &problems {
            out.warn(p);
        }
        out.status(&format!(
            "grove: {added} message(s) captured into thread {}",
            thread.id()
        ));
    }
    Ok(if problems.is_empty() {
        super::exit::SUCCESS
    } else {
        super::exit::PARTIAL
    })
}
