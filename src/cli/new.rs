//! `grove new`

use std::path::Path;

use grove::project::Project;
use grove::threads;

use super::{Output, UsageError};

/// Start a new agent task: a thread (and, by default, its own branch and worktree).
#[derive(clap::Args)]
pub struct Args {
    /// Title of the thread; defaults to the first line of --prompt.
    title: Option<String>,

    /// Agent id recorded in the thread (default: the project's defaults.agentId, else "unknown").
    #[arg(long, value_name = "ID")]
    agent: Option<String>,

    /// First user message of the thread.
    #[arg(long, value_name = "TEXT")]
    prompt: Option<String>,

    /// Create the thread in the project's own .agent/ instead of a new worktree.
    #[arg(long)]
    no_worktree: bool,

    /// Print the result as a JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let store = project.store();
    let config = store.config()?;
    let use_worktree = !args.no_worktree
        && config
            .as_ref()
            .and_then(|c| c.defaults.as_ref()?.use_worktree)
            .unwrap_or(true);
    if use_worktree {
        return Err(UsageError(
            "creating a worktree for the thread is not available yet; pass --no-worktree".into(),
        )
        .into());
    }
    let title = thread_title(args.title.as_deref(), args.prompt.as_deref());
    let agent = threads::choose_agent(args.agent.as_deref(), config.as_ref());
    let meta = threads::new_meta(&title, &agent, project.context());
    let prompts: Vec<String> = args.prompt.into_iter().collect();
    let (thread, meta) = threads::start(&store, &meta, &prompts)?;
    if args.json {
        out.json(&serde_json::json!({
            "threadId": meta.thread_id,
            "title": meta.title,
            "threadDir": thread.dir(),
            "agent": meta.agent.id,
            "context": meta.context,
        }))?;
    } else {
        out.status(&format!(
            "grove: created thread \"{}\" in {}",
            meta.title,
            thread.dir().display()
        ));
        out.line(&meta.thread_id)?;
    }
    Ok(super::exit::SUCCESS)
}

/// The explicit title, else the prompt's first line, else "Untitled".
pub fn thread_title(title: Option<&str>, prompt: Option<&str>) -> String {
    title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .or_else(|| {
            prompt
                .map(threads::title_from_prompt)
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| "Untitled".to_string())
}
