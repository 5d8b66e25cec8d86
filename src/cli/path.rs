//! `grove path`

use std::path::Path;

use grove::project::Project;

use super::Output;

/// Print the worktree path of a thread (`cd "$(grove path 1a2b)"`).
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Print {threadId, worktreePath, status} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    let Some(path) = &found.worktree else {
        anyhow::bail!(
            "thread {} has no worktree; its files are in {}",
            found.meta.thread_id,
            found.thread.dir().display()
        );
    };
    if !path.is_dir() {
        anyhow::bail!(
            "the worktree {} of thread {} is gone ({}); `grove switch {}` makes it again",
            path.display(),
            found.meta.thread_id,
            found.status.as_str(),
            found.meta.thread_id
        );
    }
    if args.json {
        // The status `list` shows (finding the thread does not compute it).
        let status = grove::discovery::discover(
            &project,
            grove::discovery::Options {
                all_repos: false,
                statuses: true,
                details: false,
            },
        )
        .ok()
        .and_then(|d| {
            d.threads
                .into_iter()
                .find(|f| f.meta.thread_id == found.meta.thread_id)
        })
        .map_or(found.status, |f| f.status);
        out.json(&serde_json::json!({
            "threadId": found.meta.thread_id,
            "worktreePath": path,
            "status": status,
        }))?;
    } else {
        out.line(&path.display().to_string())?;
        super::shell_init::cd_to(path);
    }
    Ok(super::exit::SUCCESS)
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
