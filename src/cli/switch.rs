//! `grove switch`

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use grove::discovery::{Found, Options, Status};
use grove::project::Project;
use grove::worktree::{self, ReviveOptions};

use super::{Output, progress::Reporter};

/// Go to a task's worktree: prints its path (with `grove shell-init`, the
/// shell lands there). A removed task's worktree is made again first, from
/// its branch (or its recorded commit), its thread restored from the cache.
/// Without THREAD, on a terminal, pick the task from a fuzzy list.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it (default: pick on a terminal).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// When the worktree is made again: do not apply worktreeHooks.
    #[arg(long)]
    no_hooks: bool,

    /// When the worktree is made again: trust the repository's
    /// postSetupCommands as they are now, without asking.
    #[arg(long)]
    trust: bool,

    /// Print {threadId, worktreePath, revived} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = match &args.thread {
        Some(t) => super::resolve(out, &project, t)?,
        None => pick(&project, out)?,
    };
    let gone = worktree::gone_worktree(&found);
    let (path, revived) = match gone {
        None if !worktree::needs_worktree_here(&found) => (worktree_path(&found)?, false),
        _ => {
            out.status(&match gone {
                Some(gone) => format!(
                    "grove: the worktree {} is gone; making it again",
                    gone.display()
                ),
                None => format!(
                    "grove: thread {} comes from another machine; making a worktree for it",
                    found.meta.thread_id
                ),
            });
            let reporter = Reporter::new(out.is_quiet());
            let created = worktree::revive(
                &project,
                &found,
                ReviveOptions {
                    hooks: !args.no_hooks,
                    trust: args.trust,
                },
                &reporter,
                &super::new::ask_trust,
            )?;
            drop(reporter);
            super::new::report_created(&created, out);
            (created.worktree, true)
        }
    };
    super::shell_init::cd_to(&path);
    if args.json {
        out.json(&serde_json::json!({
            "threadId": found.meta.thread_id,
            "worktreePath": path,
            "revived": revived,
        }))?;
    } else {
        out.line(&path.display().to_string())?;
    }
    Ok(super::exit::SUCCESS)
}

fn worktree_path(found: &Found) -> anyhow::Result<PathBuf> {
    found.worktree.clone().ok_or_else(|| {
        anyhow::anyhow!(
            "thread {} has no worktree; its files are in {}",
            found.meta.thread_id,
            found.thread.dir().display()
        )
    })
}

/// The fuzzy picker over the repository's tasks: status, title, branch, age.
fn pick(project: &Project, out: &Output) -> anyhow::Result<Found> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(super::UsageError(
            "grove switch needs a THREAD when not on a terminal (the picker needs one)".into(),
        )
        .into());
    }
    let found = grove::discovery::discover(
        project,
        Options {
            all_repos: false,
            statuses: true,
            details: false,
        },
    )?;
    super::warn_skipped(out, &found.errors);
    let tasks = pickable(found.threads);
    if tasks.is_empty() {
        anyhow::bail!("no task to switch to; `grove new \"title\"` starts one");
    }
    let items: Vec<String> = tasks
        .iter()
        .map(|f| {
            let age = super::list::age(&f.meta.updated_at);
            super::output::escape_line(&format!(
                "{:<8} {:<40} {:<24} {age}",
                f.status.as_str(),
                truncate(&f.meta.title, 40),
                truncate(f.branch.as_deref().unwrap_or(""), 24),
            ))
            .to_string()
        })
        .collect();
    let chosen = dialoguer::FuzzySelect::new()
        .with_prompt("Switch to")
        .items(&items)
        .default(0)
        .interact_opt()?;
    match chosen {
        Some(i) => Ok(tasks.into_iter().nth(i).expect("an item of the list")),
        None => anyhow::bail!("nothing picked"),
    }
}

/// The tasks the picker offers: those with a worktree, removed ones left
/// out (as `grove list` leaves them out) — a removed task is never the
/// first, preselected, item; `grove switch THREAD` still revives one.
fn pickable(threads: Vec<Found>) -> Vec<Found> {
    threads
        .into_iter()
        .filter(|f| f.worktree.is_some() && f.status != Status::Removed)
        .collect()
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}
