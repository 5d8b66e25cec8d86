//! `grove delete`

use std::io::IsTerminal;
use std::path::Path;

use grove::delete;
use grove::project::Project;

use super::Output;

/// Delete a thread and its conversation for good; with --cascade also its
/// subagent threads. Relationship entries other threads hold for them are
/// removed. A thread's own worktree is removed under `grove rm`'s rules
/// (refused with uncommitted or unpushed work unless --force). Asks first on
/// a terminal; elsewhere --yes is required.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it.
    #[arg(add = super::complete::threads())]
    thread: String,

    /// Also delete the threads whose mainThreadID is this one (subagents).
    #[arg(long)]
    cascade: bool,

    /// Do not ask.
    #[arg(long, short = 'y')]
    yes: bool,

    /// Remove worktrees even with uncommitted or unpushed work, and delete unmerged branches.
    #[arg(long)]
    force: bool,

    /// Print what was deleted as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let target = super::resolve(out, &project, &args.thread)?;
    let plan = delete::plan(&project, &target, args.cascade)?;
    super::warn_skipped(out, &plan.skipped);
    if !args.yes && !confirm(&plan) {
        if !std::io::stdin().is_terminal() {
            return Err(super::UsageError(format!(
                "refusing to delete thread {} without confirmation: pass --yes",
                target.meta.thread_id
            ))
            .into());
        }
        out.status("grove: nothing deleted");
        return Ok(super::exit::ERROR);
    }
    let deleted = delete::execute(&plan, args.force)?;
    if deleted.links_removed > 0 {
        out.status(&format!(
            "grove: removed {} relationship entr{} from other threads",
            deleted.links_removed,
            if deleted.links_removed == 1 {
                "y"
            } else {
                "ies"
            }
        ));
    }
    for b in &deleted.branches {
        out.status(&format!("grove: deleted branch {b}"));
    }
    if args.json {
        out.json(&deleted)?;
    } else {
        for id in &deleted.threads {
            out.line(id)?;
        }
    }
    Ok(super::exit::SUCCESS)
}

/// Asks on a terminal; false (without asking) elsewhere.
fn confirm(plan: &delete::Plan) -> bool {
    let mut lines = vec!["This deletes, with their conversations:".to_string()];
    lines.extend(plan.targets.iter().map(|t| {
        format!(
            "  {}  {} ({} messages)",
            t.meta.thread_id, t.meta.title, t.meta.stats.message_count
        )
    }));
    lines.extend(
        plan.worktrees
            .iter()
            .map(|w| format!("  worktree {}", w.display())),
    );
    super::output::confirm(&lines, "Delete?")
}
