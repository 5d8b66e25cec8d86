//! `grove list`

use std::io::Write;
use std::path::Path;

use grove::project::Project;
use serde_json::json;

use super::Output;
use super::output::human_time;

/// List the project's threads, newest first.
///
/// Reads only each thread's thread.json, never its messages.jsonl.
#[derive(clap::Args)]
pub struct Args {
    /// Print a JSON array of threads.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let listing = project.store().list()?;
    for e in &listing.errors {
        out.warn(&format!("skipped a thread: {e}"));
    }
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(stdout);
    if args.json {
        let rows: Vec<_> = listing
            .threads
            .iter()
            .map(|t| {
                json!({
                    "threadId": t.meta.thread_id,
                    "title": t.meta.title,
                    "createdAt": t.meta.created_at,
                    "updatedAt": t.meta.updated_at,
                    "agent": t.meta.agent.id,
                    "stats": t.meta.stats,
                    "gitBranch": t.meta.context.git_branch,
                    "threadDir": t.thread.dir(),
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut w, &rows)?;
        w.write_all(b"\n")?;
    } else if listing.threads.is_empty() {
        out.status("grove: no threads yet; `grove new --no-worktree \"title\"` starts one");
    } else {
        let s = out.style();
        for t in &listing.threads {
            let id: String = t.meta.thread_id.chars().take(8).collect();
            writeln!(
                w,
                "{}  {}  {:>5} msgs  {:<12}  {}",
                s.yellow(&format!("{id:<8}")),
                s.dim(&human_time(&t.meta.updated_at)),
                t.meta.stats.message_count,
                t.meta.agent.id,
                t.meta.title
            )?;
        }
    }
    w.flush()?;
    Ok(super::exit::SUCCESS)
}
