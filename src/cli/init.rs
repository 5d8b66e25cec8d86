//! `grove init`

use std::path::Path;

use super::Output;

/// Create `.agent/config.json` and `.agent/.gitignore` at the project root.
///
/// The project root is the root of the git working tree containing the
/// current directory, or the current directory outside a repository.
/// Existing files are never overwritten; running it twice is harmless.
#[derive(clap::Args)]
pub struct Args {
    /// Print what was created as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = grove::project::Project::discover(cwd)?;
    let store = project.store();
    let outcome = store.init()?;
    let agent_dir = store.agent_dir().display().to_string();
    if args.json {
        out.json(&serde_json::json!({
            "agentDir": agent_dir,
            "createdConfig": outcome.created_config,
            "createdGitignore": outcome.created_gitignore,
        }))?;
    } else {
        let what = match (outcome.created_config, outcome.created_gitignore) {
            (true, true) => "created config.json and .gitignore in",
            (true, false) => "created config.json in",
            (false, true) => "created .gitignore in",
            (false, false) => "already initialized:",
        };
        out.status(&format!("grove: {what} {agent_dir}"));
        out.line(&agent_dir)?;
    }
    Ok(super::exit::SUCCESS)
}
