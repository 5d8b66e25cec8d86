//! `grove env`

use std::path::Path;

use grove::project::Project;
use grove::worktree::taskenv::{Placeholders, quoted};

use super::Output;

/// Print a task's environment as `export` lines for a shell: GROVE_THREAD_ID,
/// GROVE_WORKTREE, GROVE_BRANCH, its ports (GROVE_PORT, GROVE_PORT_1…) and
/// the values of worktreeHooks.env with them filled in.
///
/// `eval "$(grove env 1a2b)"` sets them in the current shell.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it.
    #[arg(add = super::complete::threads())]
    thread: String,

    /// Print them as one JSON object instead.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, &args.thread)?;
    let ports = grove::ports::of(&found.meta);
    let worktree = found
        .worktree
        .as_ref()
        .map(|w| w.to_string_lossy().into_owned())
        .unwrap_or_default();
    let branch = found.branch.clone().unwrap_or_default();
    let mut vars = vec![
        ("GROVE_THREAD_ID".to_string(), found.meta.thread_id.clone()),
        ("GROVE_WORKTREE".to_string(), worktree.clone()),
        ("GROVE_BRANCH".to_string(), branch.clone()),
    ];
    vars.extend(grove::ports::env(&ports));
    let config = grove::store::Store::for_project(&found.repo_root).config()?;
    if let Some(env) = config.and_then(|c| c.worktree_hooks?.env) {
        let values = Placeholders {
            ports,
            branch,
            thread_id: found.meta.thread_id.clone(),
            worktree,
        };
        vars.extend(values.values(&env));
    }
    if args.json {
        let map: serde_json::Map<String, serde_json::Value> = vars
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::from(v)))
            .collect();
        out.json(&serde_json::Value::Object(map))?;
    } else {
        for (k, v) in vars {
            out.line(&format!("export {k}={}", shell_quoted(&v)))?;
        }
    }
    Ok(super::exit::SUCCESS)
}

/// A value a POSIX shell reads back as it is: bare when plain, else in
/// single quotes.
fn shell_quoted(v: &str) -> String {
    if quoted(v) == v {
        return v.to_string();
    }
    format!("'{}'", v.replace('\'', r"'\''"))
}
