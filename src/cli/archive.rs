//! `grove archive` and `grove unarchive`

use std::path::Path;

use grove::project::Project;

use super::Output;

/// Hide a thread from `grove list` (`grove list --archived` still shows it).
/// Nothing is deleted.
#[derive(clap::Args)]
pub struct Args {
    /// Thread ids or unique prefixes.
    #[arg(required = true)]
    #[arg(add = super::complete::threads())]
    threads: Vec<String>,

    /// Print [{threadId, archived, changed}] as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, archived: bool, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    // Resolve all first: a typo in the last id changes nothing.
    let found = args
        .threads
        .iter()
        .map(|q| super::resolve(out, &project, q))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows = Vec::new();
    for f in &found {
        let changed = grove::archive::set_archived(f, archived)?;
        if !changed {
            out.status(&format!(
                "grove: {} is already {}",
                f.meta.thread_id,
                if archived { "archived" } else { "not archived" }
            ));
        }
        rows.push(serde_json::json!({
            "threadId": f.meta.thread_id,
            "archived": archived,
            "changed": changed,
        }));
        if !args.json {
            out.line(&f.meta.thread_id)?;
        }
    }
    if args.json {
        out.json(&rows)?;
    }
    Ok(super::exit::SUCCESS)
}
