//! `grove handoff`

use std::path::Path;

use grove::fork::{ChildSpec, Derivation};

use super::Output;
use super::fork::ChildArgs;

/// Continue a thread in a fresh context: a new thread whose first message
/// (role system) is the summary, linked to the thread as a handoff. When the
/// thread has a worktree, the new thread gets its own, from that worktree's
/// HEAD (add --carry to bring its uncommitted changes).
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// What the next context needs to know: the new thread's first message.
    #[arg(long, value_name = "TEXT")]
    summary: String,

    /// Title of the new thread (default: "Handoff: <title>").
    #[arg(long, value_name = "TITLE")]
    title: Option<String>,

    /// Also carry the worktree's uncommitted changes.
    #[arg(long, conflicts_with = "no_worktree")]
    carry: bool,

    #[command(flatten)]
    child: ChildArgs,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    if args.summary.trim().is_empty() {
        return Err(super::UsageError("--summary must not be empty".into()).into());
    }
    let spec = ChildSpec {
        derivation: Derivation::Handoff {
            summary: args.summary.clone(),
        },
        title: args.title.clone(),
    };
    super::fork::make(args.thread(), &spec, &args.child, args.carry, cwd, out)
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
