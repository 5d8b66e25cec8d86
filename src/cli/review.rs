//! `grove review`

use std::path::Path;

use grove::discovery;
use grove::project::Project;

use super::Output;

/// Review a task turn by turn: each turn's prompt, the agent's replies and
/// the diff the turn produced (from its turn snapshots), the person's edits
/// between turns as entries of their own, and the commits of the branch
/// that carry each change.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Print {threadId, title, branch, snapshots, entries: [{kind, index,
    /// prompt, replies, from, to, files, diff, commits}]} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let thread = discovery::find_thread(&project, args.thread.as_deref().unwrap_or("."))?;
    let repo = project.repo();
    let review = grove::review::review(&thread, repo.as_ref())?;
    if args.json {
        out.json(&review)?;
        return Ok(super::exit::SUCCESS);
    }
    let s = out.style();
    out.line(&format!(
        "{}  {}",
        s.bold(&s.text(&review.title)),
        review.thread_id
    ))?;
    if !review.snapshots {
        out.warn(
            "this thread has no turn snapshots (imported, or captured before them): \
             its turns are listed without diffs",
        );
    }
    let mut turn = 0;
    for e in &review.entries {
        let heading = match e.kind.as_str() {
            "person" => "The person's edits".to_string(),
            _ => {
                turn += 1;
                match e.index {
                    Some(i) => format!("Turn {turn} (message {i})"),
                    None => format!("Turn {turn}"),
                }
            }
        };
        out.line(&format!("\n{}", s.yellow(&format!("── {heading} ──"))))?;
        if let Some(p) = &e.prompt {
            let quoted: Vec<String> = p.lines().map(|l| format!("> {l}")).collect();
            out.line(&quoted.join("\n"))?;
        }
        for r in &e.replies {
            out.line(r)?;
        }
        if !e.files.is_empty() {
            out.line(&format!("{} {}", s.dim("files:"), e.files.join(", ")))?;
        }
        for c in &e.commits {
            out.line(&format!("{} {c}", s.dim("commit:")))?;
        }
        if let Some(diff) = &e.diff {
            out.line(diff.trim_end())?;
        } else if review.snapshots && e.kind == "turn" {
            out.line(&s.dim("(no change to the files)"))?;
        }
    }
    Ok(super::exit::SUCCESS)
}
