//! `grove list`

use std::io::Write;
use std::path::Path;

use grove::discovery::{self, Options};
use grove::graph::Graph;
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

    /// Include archived threads.
    #[arg(long)]
    archived: bool,

    /// Only threads tagged TAG (by `grove checkpoint --tag`); repeat to require several.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,

    /// Show forks, handoffs, subagents and mentions as a tree (JSON: nodes and edges).
    #[arg(long)]
    tree: bool,

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
        out.warn(&format!("skipped: {e}"));
    }
    let all_threads = found.threads.clone();
    let mut threads = found.threads;
    let hidden = threads.iter().filter(|f| f.meta.is_archived()).count();
    threads.retain(|f| {
        (args.archived || !f.meta.is_archived()) && {
            let tags = f.meta.tags();
            args.tags.iter().all(|t| tags.contains(t))
        }
    });
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::new(stdout);
    if args.tree {
        // The whole graph, so a hidden thread in the middle of a family is
        // not shown as deleted; archived threads alone are left out.
        let graph = Graph::build(&all_threads);
        if args.json {
            serde_json::to_writer_pretty(&mut w, &graph)?;
            w.write_all(b"\n")?;
        } else {
            let roots: Vec<&str> = graph
                .roots()
                .into_iter()
                .filter(|n| n.exists)
                .filter(|n| {
                    args.archived || !n.archived || !graph.children_of(&n.thread_id).is_empty()
                })
                .map(|n| n.thread_id.as_str())
                .collect();
            super::tree::write(&mut w, out.style(), &graph, &roots, None, true)?;
        }
    } else if args.json {
        let rows: Vec<_> = threads
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
                    "archived": f.meta.is_archived(),
                    "tags": f.meta.tags(),
                    "originThreadID": f.meta.origin(),
                    "mainThreadID": f.meta.main_thread_id,
                    "relationships": f.meta.relationships(),
                    "conversationSummary": f.meta.conversation_summary,
                    "nextSteps": f.meta.next_steps,
                    "git": f.meta.git,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut w, &rows)?;
        w.write_all(b"\n")?;
    } else if threads.is_empty() {
        if !args.tags.is_empty() {
            out.status("grove: no thread has these tags");
        } else if hidden > 0 {
            out.status(&format!(
                "grove: only archived threads ({hidden}); `grove list --archived` shows them"
            ));
        } else {
            out.status("grove: no threads yet; `grove new \"title\"` starts one");
        }
    } else {
        let s = out.style();
        for f in &threads {
            let id = super::output::short_id(&f.meta.thread_id);
            let status = match f.status.as_str() {
                st @ ("dirty" | "missing") => s.yellow(&format!("{st:<7}")),
                st @ "merged" => s.green(&format!("{st:<7}")),
                st @ "removed" => s.dim(&format!("{st:<7}")),
                st => format!("{st:<7}"),
            };
            let tags: String = f
                .meta
                .tags()
                .iter()
                .map(|t| format!(" #{}", s.text(t)))
                .collect();
            let archived = if f.meta.is_archived() {
                " (archived)"
            } else {
                ""
            };
            writeln!(
                w,
                "{}  {}  {}  {:>5} msgs  {:<20}  {}{}{}",
                s.yellow(&format!("{:<8}", s.text(id))),
                status,
                s.dim(&s.text(&human_time(&f.meta.updated_at))),
                f.meta.stats.message_count,
                s.text(f.branch.as_deref().unwrap_or("-")),
                s.text(&f.meta.title),
                s.cyan(&tags),
                s.dim(archived)
            )?;
            if let Some(summary) = &f.meta.conversation_summary {
                let line = summary.lines().next().unwrap_or("");
                let short: String = line.chars().take(100).collect();
                writeln!(w, "{:10}{}", "", s.dim(&format!("↳ {}", s.text(&short))))?;
            }
            let next: Vec<String> = f
                .meta
                .next_steps
                .iter()
                .flatten()
                .map(grove::atsf::Note::text)
                .collect();
            if !next.is_empty() {
                writeln!(
                    w,
                    "{:10}{}",
                    "",
                    s.dim(&format!("next: {}", s.text(&next.join("; "))))
                )?;
            }
        }
    }
    w.flush()?;
    Ok(super::exit::SUCCESS)
}
