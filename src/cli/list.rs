//! `grove list`

use std::io::Write;
use std::path::Path;

use grove::discovery::{self, Options};
use grove::project::Project;
use serde_json::json;

use super::Output;
use super::output::human_time;

/// List threads, newest first: the project's own, those of every worktree of
/// the repository, and cached ones whose worktree was removed.
///
/// Status: local (no worktree), live, dirty (uncommitted changes), merged
/// (branch integrated into the default branch), missing (worktree directory
/// gone), removed (kept in grove's cache). Reads only thread.json files,
/// never messages.jsonl.
#[derive(clap::Args)]
pub struct Args {
    /// Also list other repositories' cached threads.
    #[arg(long)]
    all: bool,

    /// Print a JSON array of threads.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = discovery::discover(
        &project,
        Options {
            all_repos: args.all,
            statuses: true,
        },
    )?;
    for e in &found.errors {
        out.warn(&format!("skipped a thread: {e}"));
    }
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(stdout);
    if args.json {
        let rows: Vec<_> = found
            .threads
            .iter()
            .map(|f| {
                json!({
                    "threadId": f.meta.thread_id,
                    "title": f.meta.title,
                    "status": f.status,
                    "createdAt": f.meta.created_at,
                    "updatedAt": f.meta.updated_at,
                    "agent": f.meta.agent.id,
                    "stats": f.meta.stats,
                    "branch": f.branch,
                    "worktreePath": f.worktree,
                    "locked": f.locked.is_some(),
                    "threadDir": f.thread.dir(),
                    "repoRoot": f.repo_root,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut w, &rows)?;
        w.write_all(b"\n")?;
    } else if found.threads.is_empty() {
        out.status("grove: no threads yet; `grove new \"title\"` starts one");
    } else {
        let s = out.style();
        for f in &found.threads {
            let id: String = f.meta.thread_id.chars().take(8).collect();
            let status = match f.status.as_str() {
                st @ ("dirty" | "missing") => s.yellow(&format!("{st:<7}")),
                st @ "merged" => s.green(&format!("{st:<7}")),
                st @ "removed" => s.dim(&format!("{st:<7}")),
                st => format!("{st:<7}"),
            };
            writeln!(
                w,
                "{}  {}  {}  {:>5} msgs  {:<20}  {}",
                s.yellow(&format!("{id:<8}")),
                status,
                s.dim(&human_time(&f.meta.updated_at)),
                f.meta.stats.message_count,
                f.branch.as_deref().unwrap_or("-"),
                f.meta.title
            )?;
        }
    }
    w.flush()?;
    Ok(super::exit::SUCCESS)
}
