//! `grove checkpoint`

use std::path::Path;

use grove::checkpoint::{self, Input};
use grove::project::Project;

use super::Output;

/// Record where a thread stands: refresh its git state from its worktree
/// (current commit, commits made since the thread started, dirty flag,
/// files touched, remote URL) and store a summary, next steps and tags.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// What was accomplished (replaces the previous summary).
    #[arg(long, value_name = "TEXT")]
    summary: Option<String>,

    /// A remaining step; repeat for several (replaces the previous list).
    #[arg(long = "next", value_name = "STEP")]
    next: Vec<String>,

    /// A tag to add; repeat for several. `grove list --tag T` filters by it.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,

    /// Print the checkpoint as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    if let Some(t) = args
        .tags
        .iter()
        .find(|t| t.trim().is_empty() || t.contains(','))
    {
        return Err(super::UsageError(format!(
            "tag {t:?} is empty or contains a comma; give one tag per --tag"
        ))
        .into());
    }
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    let input = Input {
        summary: args.summary,
        next_steps: args.next,
        tags: args.tags,
    };
    let (meta, skipped) = checkpoint::checkpoint(&found, &input)?;
    if let Some(why) = skipped {
        out.warn(&why);
    }
    if args.json {
        out.json(&serde_json::json!({
            "threadId": meta.thread_id,
            "git": meta.git,
            "filesTouched": meta.files_touched,
            "conversationSummary": meta.conversation_summary,
            "nextSteps": meta.next_steps,
            "tags": meta.tags(),
        }))?;
    } else {
        if let Some(g) = &meta.git {
            out.line(&format!(
                "{} at {} ({} commit(s) since start{})",
                meta.thread_id,
                g.current_commit
                    .as_deref()
                    .map(|c| super::output::head(c, 12))
                    .unwrap_or("?"),
                g.commits_made.len(),
                if g.dirty { ", uncommitted changes" } else { "" }
            ))?;
            for c in &g.commits_made {
                out.line(&format!("  {c}"))?;
            }
        } else {
            out.line(&meta.thread_id)?;
        }
    }
    Ok(super::exit::SUCCESS)
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
