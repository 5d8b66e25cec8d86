//! `grove mention`

use std::path::Path;

use grove::project::Project;

use super::Output;

/// Record that THREAD mentions OTHER: a `mention` relationship stored on
/// both threads (OTHER holds the parent side, THREAD the child side).
#[derive(clap::Args)]
pub struct Args {
    /// The thread that refers to the other (id or unique prefix).
    #[arg(add = super::complete::threads())]
    thread: String,

    /// The thread referred to (id or unique prefix).
    #[arg(add = super::complete::threads())]
    other: String,

    /// A note stored with the relationship.
    #[arg(long, value_name = "TEXT")]
    comment: Option<String>,

    /// Print {threadId, otherThreadId, created} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let from = super::resolve(out, &project, &args.thread)?;
    let to = super::resolve(out, &project, &args.other)?;
    let created = grove::graph::mention(&from, &to, args.comment)?;
    if !created {
        out.status(&format!(
            "grove: {} already mentions {}",
            from.meta.thread_id, to.meta.thread_id
        ));
    }
    if args.json {
        out.json(&serde_json::json!({
            "threadId": from.meta.thread_id,
            "otherThreadId": to.meta.thread_id,
            "created": created,
        }))?;
    } else if created {
        out.status(&format!(
            "grove: {} \"{}\" now mentions {} \"{}\"",
            from.meta.thread_id, from.meta.title, to.meta.thread_id, to.meta.title
        ));
    }
    Ok(super::exit::SUCCESS)
}
