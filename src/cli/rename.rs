//! `grove rename`

use std::path::Path;

use grove::git::Repo;
use grove::project::Project;

use super::Output;

/// Give a task a new title, and with --branch its branch a new name after it.
///
/// The branch is renamed only when grove made it and it is not pushed
/// (renaming a pushed branch here would leave the remote's under the old
/// name); otherwise grove refuses and changes nothing.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path (`.` for the one the shell is in), or a word of its
    /// title.
    #[arg(add = super::complete::threads())]
    thread: String,

    /// The new title.
    title: String,

    /// Rename the task's branch after the new title too.
    #[arg(long)]
    branch: bool,

    /// Print {threadId, title, branch: {from, to}} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, &args.thread)?;
    let repo = Repo::new(&found.repo_root)?;
    let renamed = grove::worktree::rename::rename(&repo, &found, &args.title, args.branch)?;
    if let Some(b) = &renamed.branch {
        out.status(&format!(
            "grove: renamed branch {} to {}",
            super::output::escape_line(&b.from),
            super::output::escape_line(&b.to)
        ));
    }
    if args.json {
        out.json(&renamed)?;
    } else {
        out.line(&renamed.title)?;
    }
    Ok(super::exit::SUCCESS)
}
