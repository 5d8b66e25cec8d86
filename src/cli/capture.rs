//! `grove capture`

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use grove::agent::Native;
use grove::capture::{self, event};
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
    /// Run by Gemini CLI's hooks: reads the hook's JSON on stdin and
    /// captures the new turns. Prints nothing (Gemini reads a hook's output
    /// as JSON), always exits 0.
    Gemini(HookArgs),
    /// Run by grove's OpenCode plugin: reads the event's JSON on stdin and
    /// captures the session's new turns from OpenCode's database. Prints
    /// nothing, always exits 0.
    Opencode(HookArgs),
    /// Install the agents' project hooks for a task: Claude Code's in its
    /// worktree (.claude/settings.local.json), Codex's in the repository's
    /// main worktree (.codex/hooks.json, one command for every task), Gemini
    /// CLI's in its worktree (.gemini/settings.json), and OpenCode's plugin,
    /// named in its worktree's opencode.json. Says which events got grove's
    /// hook and which did not, and why; exits 1 when none did, 4 when some
    /// did not.
    Install(InstallArgs),
    /// Remove grove's hooks for a task (the user's stay; the file is as it
    /// was before the install). Codex's stay while another task's worktree
    /// uses them. Exits 1 when a file could not be read.
    Uninstall(UninstallArgs),
    /// Capture now what the hooks missed: sessions of the thread's agent run
    /// in its worktree since the thread began, and what their transcripts
    /// gained.
    Sync(SyncArgs),
    /// Started by a hook, detached: captures what the session's transcript
    /// gains for a few seconds after its last hook (the agents write a
    /// hook's record after running it). Prints nothing, always exits 0.
    #[command(hide = true)]
    Follow(FollowArgs),
}

#[derive(clap::Args)]
struct FollowArgs {
    /// claude or codex.
    agent: String,
    /// The agent's session id.
    #[arg(long)]
    session: String,
    /// Where the hook ran (the session's directory).
    #[arg(long)]
    cwd: PathBuf,
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
    #[command(flatten)]
    target: UninstallArgs,

    /// Codex: also record in your Codex config (~/.codex/config.toml,
    /// `[hooks.state]`) that you trust grove's hooks, and only those, so
    /// Codex runs them without asking ("Hooks need review").
    #[arg(long = "trust-agent")]
    trust_agent: bool,
}

#[derive(clap::Args)]
struct UninstallArgs {
    /// The task's thread (default: the task of the worktree grove runs in).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Which agent's hooks: claude-code, codex, gemini, opencode, or all
    /// (default: the thread's agent; Claude Code's and Codex's when it is
    /// none of them).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,

    /// Print {threadId, worktreePath, agents: [{agent, file, installed |
    /// removed, skipped | problem, files, trust, keptFor}], files} as JSON.
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
        What::Gemini(a) => Ok(run_hook(Native::Gemini, a, cwd, out)),
        What::Opencode(a) => Ok(run_hook(Native::OpenCode, a, cwd, out)),
        What::Install(a) => install(a, cwd, out),
        What::Uninstall(a) => uninstall(a, cwd, out),
        What::Sync(a) => sync(a, cwd, out),
        What::Follow(a) => Ok(follow(&a)),
    }
}

/// A hook's follow-up: whatever happens goes to the log.
fn follow(args: &FollowArgs) -> u8 {
    let Some(native) = Native::from_name(&args.agent) else {
        event::log(None, &format!("capture follow: no agent {:?}", args.agent));
        return super::exit::SUCCESS;
    };
    match capture::follow::run(native, &args.cwd, &args.session) {
        Ok(f) => {
            if let Some(thread) = &f.thread
                && (f.added > 0 || !f.problems.is_empty())
            {
                let mut line = format!(
                    "follow-up {} session {}: {} message(s)",
                    native.format(),
                    args.session,
                    f.added
                );
                for p in &f.problems {
                    line.push_str(&format!(" problem: {p}"));
                }
                event::log(Some(thread), &line);
            }
        }
        Err(e) => event::log(
            None,
            &format!("capture follow {} {}: {e}", native.format(), args.session),
        ),
    }
    super::exit::SUCCESS
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
        .take(event::MAX_INPUT)
        .read_to_end(&mut bytes)
    {
        event::log(
            None,
            &format!("capture {}: reading stdin: {e}", native.format()),
        );
        return super::exit::SUCCESS;
    }
    let input = match event::HookInput::parse(&bytes) {
        Ok(i) => i,
        Err(e) => {
            event::log(None, &format!("capture {}: {e}", native.format()));
            return super::exit::SUCCESS;
        }
    };
    let request = event::Request {
        native,
        input: input.clone(),
        thread: args.thread,
        env_thread: std::env::var("GROVE_THREAD").ok().filter(|t| !t.is_empty()),
        cwd: cwd.to_path_buf(),
        runner: parent_process(),
    };
    match event::handle(&request) {
        Ok(h) => {
            event::log(
                Some(&h.thread),
                &event::describe(&h, input.session_id.as_deref()),
            );
            if let Some(session) = h.session.as_deref()
                && capture::follow::expects_more(&h.event)
            {
                let started = std::env::current_exe()
                    .map_err(|e| grove::Error::Other(e.to_string()))
                    .and_then(|grove| {
                        capture::follow::request(
                            &grove,
                            native,
                            &event::input_cwd(&input, cwd),
                            session,
                        )
                    });
                if let Err(e) = started {
                    event::log(Some(&h.thread), &format!("follow-up not started: {e}"));
                }
            }
        }
        Err(e) => event::log(
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

/// The process that started this one (the agent that ran the hook).
#[cfg(unix)]
fn parent_process() -> Option<u32> {
    Some(std::os::unix::process::parent_id())
}

/// The process that started this one: not known here.
#[cfg(not(unix))]
fn parent_process() -> Option<u32> {
    None
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
    args: &UninstallArgs,
    cwd: &Path,
    out: &Output,
) -> anyhow::Result<(grove::store::Thread, PathBuf, Vec<Native>)> {
    let project = Project::discover(cwd)?;
    let (thread, worktree) = task_thread(&project, args.thread.as_deref(), out)?;
    let agents: Vec<Native> = match args.agent.as_deref() {
        Some("all") => Native::ALL.to_vec(),
        Some(name) => vec![Native::from_name(name).ok_or_else(|| {
            super::UsageError(format!(
                "--agent {name:?}: grove installs hooks for claude-code, codex, gemini and opencode (or all)"
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
    let (thread, worktree, agents) = install_target(&args.target, cwd, out)?;
    let args_json = args.target.json;
    let grove_exe = std::env::current_exe()?;
    let mut reports = Vec::new();
    for native in agents {
        let mut report = capture::install::install(native, &worktree, thread.id(), &grove_exe)?;
        if args.trust_agent && native == Native::Codex && !report.installed.is_empty() {
            report.trust = Some(capture::install::trust_codex(&report, &grove_exe)?);
        }
        reports.push(report);
    }
    let untrusted = reports
        .iter()
        .filter_map(|r| r.trust.as_ref())
        .any(|t| !t.refused.is_empty());
    let any = reports.iter().any(|r| !r.installed.is_empty());
    let all = reports.iter().all(|r| r.skipped.is_empty()) && !untrusted;
    let code = match (any, all) {
        (false, _) => super::exit::ERROR,
        (true, false) => super::exit::PARTIAL,
        (true, true) => super::exit::SUCCESS,
    };
    let mut files: Vec<&PathBuf> = reports.iter().flat_map(|r| &r.files).collect();
    files.extend(
        reports
            .iter()
            .filter_map(|r| r.trust.as_ref())
            .filter(|t| t.written)
            .map(|t| &t.file),
    );
    let mut problems: Vec<String> = reports.iter().flat_map(|r| r.problems()).collect();
    problems.extend(
        reports
            .iter()
            .filter_map(|r| r.trust.as_ref())
            .flat_map(|t| &t.refused)
            .map(|r| format!("codex: grove's hook {} not trusted: {}", r.key, r.reason)),
    );
    if args_json {
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
    for r in reports.iter().filter(|r| !r.installed.is_empty()) {
        match Native::from_name(r.agent) {
            Some(Native::Codex) => out.status(&codex_advice(r)),
            Some(Native::Gemini) => out.status(GEMINI_ADVICE),
            Some(Native::OpenCode) => out.status(OPENCODE_ADVICE),
            _ => {}
        }
    }
    Ok(code)
}

/// What the user sees in Gemini CLI the first time its hooks run there.
const GEMINI_ADVICE: &str = "grove: Gemini CLI runs a project's hooks in a folder you trust; the \
     first time, it warns that the project's hooks (grove-capture) will be executed, and does not \
     warn again for them";

/// What the user sees in OpenCode the first time it loads grove's plugin.
const OPENCODE_ADVICE: &str = "grove: OpenCode loads grove's plugin at its next start; with a \
     plugin it first installs its plugin package (@opencode-ai/plugin) into its config directory \
     once, from npm";

/// What the user does in Codex, after grove installed its hooks, before
/// they run.
fn codex_advice(report: &capture::install::Installed) -> String {
    let trusted = report
        .trust
        .as_ref()
        .is_some_and(|t| t.refused.is_empty() && !t.trusted.is_empty());
    let hooks = if trusted {
        format!(
            "grove's hooks are trusted in {}",
            report
                .trust
                .as_ref()
                .map(|t| t.file.display().to_string())
                .unwrap_or_default()
        )
    } else {
        "then \"Hooks need review\": choose \"Trust all and continue\" (or trust them in /hooks; \
         `grove capture install --trust-agent` records that for you)"
            .to_string()
    };
    format!(
        "grove: Codex runs them once you trust the repository (\"Trust this folder?\" the first time \
         Codex starts there) and {hooks}; until then, `grove capture sync` (and `grove list`/`show`) \
         bring its turns"
    )
}

/// `grove capture uninstall`: exits 1 when a file could not be looked
/// into (grove's hooks may still be there).
fn uninstall(args: UninstallArgs, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let (thread, worktree, agents) = install_target(&args, cwd, out)?;
    let mut reports = Vec::new();
    for native in agents {
        reports.push(capture::install::uninstall(native, &worktree, thread.id())?);
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
        } else if !r.removed.is_empty() {
            out.status(&format!(
                "grove: {} capture hooks removed from {}: {}",
                r.agent,
                r.file.display(),
                r.removed.join(", ")
            ));
        } else if r.kept_for.is_empty() {
            out.status(&format!(
                "grove: no {} capture hook of grove's in {}",
                r.agent,
                r.file.display()
            ));
        }
        if !r.kept_for.is_empty() {
            out.status(&format!(
                "grove: {} capture hooks stay in {} for the other tasks using them: {}",
                r.agent,
                r.file.display(),
                r.kept_for.join(", ")
            ));
        }
        if let Some(t) = &r.trust {
            if !t.removed.is_empty() {
                out.status(&format!(
                    "grove: the trust it had recorded for its hooks taken out of {}",
                    t.file.display()
                ));
            }
            if let Some(p) = &t.problem {
                out.warn(p);
            }
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
    let (mut added, mut problems) = capture::catchup::catch_up(&thread, &project.main_root)?;
    let natives: Vec<Native> = match Native::from_name(&meta.agent.id) {
        Some(n) => vec![n],
        None => vec![Native::Claude, Native::Codex],
    };
    for native in natives {
        let (n, p) =
            capture::catchup::adopt_since(&thread, &project.main_root, native, &worktree, since)?;
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
