//! `grove rm`

use std::path::Path;

use grove::project::Project;
use grove::worktree::{self, RemoveOptions, Repo};

use super::Output;

/// Remove a task's worktree and branch, keeping its thread in grove's cache.
///
/// Refuses, saying why, when the worktree has uncommitted changes or commits
/// that are neither pushed to its upstream nor merged into the default
/// branch. Only a merged branch (or one without commits) is deleted without
/// --force; a branch that existed before grove used it is never deleted.
#[derive(clap::Args)]
pub struct Args {
    /// The tasks: each an id or a unique prefix, a branch, a worktree's
    /// path, or a word of a title. Default: the task whose worktree holds
    /// the current directory.
    #[arg(add = super::complete::threads())]
    threads: Vec<String>,

    /// Remove even with uncommitted or unsaved work (commits only this
    /// worktree holds), and delete grove's unmerged branch.
    #[arg(long)]
    force: bool,

    /// Keep the branch.
    #[arg(long)]
    keep_branch: bool,

    /// Do not keep the threads in the cache: their conversations are deleted
    /// with the worktree (refused without --force when the worktree holds
    /// more than this one thread).
    #[arg(long)]
    purge: bool,

    /// End the processes still at work in the worktree (a dev server, an
    /// agent): SIGTERM, then SIGKILL after 2 s. Without it, rm refuses
    /// while they run (--force removes it under them).
    #[arg(long)]
    reap: bool,

    #[command(flatten)]
    deletion: super::Deletion,

    /// Print what was done as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    // Every name resolved before anything is removed: a typo removes nothing.
    let queries: Vec<&str> = match args.threads.as_slice() {
        [] => vec!["."],
        many => many.iter().map(String::as_str).collect(),
    };
    let mut tasks = Vec::new();
    for query in &queries {
        let found = super::resolve(out, &project, query)?;
        if !tasks
            .iter()
            .any(|t: &grove::discovery::Found| t.thread.id() == found.thread.id())
        {
            tasks.push(found);
        }
    }
    let mut removed_all = Vec::new();
    let mut failure = None;
    for found in &tasks {
        let leaving = super::shell_init::Leaving::worktree(cwd, found.worktree.as_deref());
        match remove_one(&args, found, out) {
            Ok(removed) => {
                leaving.done(&found.repo_root);
                removed_all.push(removed);
            }
            // One refusal does not stop the others; the first decides the
            // exit code.
            Err(e) if tasks.len() > 1 => {
                out.error(&format!("{}: {}", found.thread.id(), super::error_text(&e)));
                failure.get_or_insert(super::exit_code_of(&e));
            }
            Err(e) => return Err(e),
        }
    }
    if args.json {
        match removed_all.as_slice() {
            [one] if queries.len() == 1 => out.json(one)?,
            all => out.json(&all)?,
        }
    }
    Ok(failure.unwrap_or(super::exit::SUCCESS))
}

/// Removes one task, reporting on stderr (and its worktree's path on stdout
/// unless `--json`).
fn remove_one(
    args: &Args,
    found: &grove::discovery::Found,
    out: &Output,
) -> anyhow::Result<worktree::Removed> {
    let repo = Repo::new(&found.repo_root)?;
    let options = RemoveOptions {
        force: args.force,
        keep_branch: args.keep_branch,
        purge: args.purge,
        reap: args.reap,
        background: args.deletion.background(),
    };
    let removed = worktree::remove(&repo, found, options)?;
    report_teardown(out, &removed.teardown);
    for run in &removed.setup_killed {
        out.status(&format!(
            "grove: killed the background setup `{}` (process group {})",
            super::output::escape_line(&run.label),
            run.pid.map_or("-".into(), |p| p.to_string())
        ));
    }
    for p in &removed.processes {
        out.status(&format!(
            "grove: {} process {}",
            if args.reap { "ended" } else { "left running:" },
            super::output::escape_line(&p.to_string())
        ));
    }
    if removed.threads.len() > 1 {
        let ids: Vec<&str> = removed.threads.iter().map(|t| t.as_str()).collect();
        out.status(&format!(
            "grove: the worktree held {} threads: {}{}",
            removed.threads.len(),
            ids.join(", "),
            if args.purge {
                " (all deleted)"
            } else {
                " (all kept in the cache)"
            }
        ));
    }
    if let Some(why) = &removed.branch_kept {
        out.status(&format!("grove: kept branch: {why}"));
    }
    if let Some(dir) = &removed.cached_at {
        out.status(&format!("grove: thread kept in {}", dir.display()));
    }
    if !args.json {
        out.line(&removed.worktree_path.display().to_string())?;
    }
    Ok(removed)
}

/// The teardown commands' outcomes on stderr: failures and skips named.
pub fn report_teardown(out: &Output, outcomes: &[grove::setup::HookOutcome]) {
    for o in outcomes {
        let label = super::output::escape_line(&o.label);
        match o.status {
            grove::setup::HookStatus::Ok => {
                out.status(&format!("grove: teardown `{label}` ok"));
            }
            _ => out.warn(&format!(
                "teardown `{label}` {}: {}",
                serde_json::to_value(o.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                o.reason.as_deref().unwrap_or("")
            )),
        }
    }
}
