//! `grove fork`

use std::path::Path;

use grove::fork::{self, ChildSpec, Derivation, DeriveOptions, Derived};
use grove::project::Project;

use super::{Output, progress::Reporter};

/// Fork a thread to try another way: a new thread with its messages (all,
/// or up to --at), linked to it on both sides.
///
/// When the thread has a worktree, the fork gets its own worktree and branch
/// starting at that worktree's HEAD, with its uncommitted changes (staged,
/// unstaged, untracked) carried over; the original worktree is not touched.
/// Prints the new worktree path (or, without a worktree, the thread id).
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Copy messages 0..=N only (default: all).
    #[arg(long, value_name = "N")]
    at: Option<u64>,

    /// Title of the fork (default: "Forked: <title>", then "Forked(2): <title>"…).
    #[arg(long, value_name = "TITLE")]
    title: Option<String>,

    #[command(flatten)]
    child: ChildArgs,
}

/// Where a fork or handoff goes.
#[derive(clap::Args)]
pub struct ChildArgs {
    /// Create the new thread in this project's .agent/, without a worktree.
    #[arg(long)]
    no_worktree: bool,

    #[command(flatten)]
    task: super::new::TaskArgs,

    /// Print the result as a JSON object.
    #[arg(long)]
    json: bool,
}

impl ChildArgs {
    pub fn options(&self, carry: bool) -> DeriveOptions {
        DeriveOptions {
            worktree: !self.no_worktree,
            carry,
            hooks: !self.task.no_hooks,
            trust: self.task.trust,
            branch: self.task.branch.clone(),
            dir: self.task.dir.clone(),
            no_submodules: self.task.no_submodules,
            no_lfs: self.task.no_lfs,
        }
    }
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let spec = ChildSpec {
        derivation: Derivation::Fork { at: args.at },
        title: args.title.clone(),
    };
    make(args.thread(), &spec, &args.child, true, cwd, out)
}

/// Resolves THREAD, makes the child, reports it.
pub fn make(
    query: &str,
    spec: &ChildSpec,
    child: &ChildArgs,
    carry: bool,
    cwd: &Path,
    out: &Output,
) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let parent = super::resolve(out, &project, query)?;
    let reporter = Reporter::new(out.is_quiet());
    let derived = fork::derive(
        &project,
        &parent,
        spec,
        &child.options(carry),
        &reporter,
        &super::new::ask_trust,
    )?;
    drop(reporter);
    report(&derived, &parent.meta.thread_id, child, out)
}

fn report(derived: &Derived, parent: &str, child: &ChildArgs, out: &Output) -> anyhow::Result<u8> {
    if let Some(why) = &derived.no_worktree_reason {
        out.status(&format!("grove: {why}; the new thread has none either"));
    }
    for p in &derived.problems {
        out.warn(p);
    }
    if let Some(code) = derived
        .task
        .as_ref()
        .and_then(|t| super::new::interrupted_exit(t, out))
    {
        if let Some(task) = &derived.task {
            out.line(&task.worktree.display().to_string())?;
        }
        return Ok(code);
    }
    let failed = match &derived.task {
        Some(task) => super::new::report_created(task, out),
        None => {
            out.status(&format!(
                "grove: created thread \"{}\" in {}",
                derived.meta.title,
                derived.thread.dir().display()
            ));
            0
        }
    };
    if child.json {
        out.json(&serde_json::json!({
            "threadId": derived.meta.thread_id,
            "parentThreadId": parent,
            "title": derived.meta.title,
            "threadDir": derived.thread.dir(),
            "messageCount": derived.meta.stats.message_count,
            "forkPointIndex": derived.meta.fork_point_index,
            "worktreePath": derived.task.as_ref().map(|t| &t.worktree),
            "branch": derived.task.as_ref().map(|t| &t.branch),
            "carried": derived.task.as_ref().and_then(|t| t.carried),
            "hooks": derived.task.as_ref().map(|t| &t.hooks),
        }))?;
    } else {
        match &derived.task {
            Some(task) => out.line(&task.worktree.display().to_string())?,
            None => out.line(&derived.meta.thread_id)?,
        }
    }
    finish(failed, child)
}

fn finish(failed: usize, child: &ChildArgs) -> anyhow::Result<u8> {
    if child.task.strict && failed > 0 {
        return Ok(super::exit::HOOK_FAILED);
    }
    Ok(super::exit::SUCCESS)
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
