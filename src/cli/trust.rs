//! `grove trust`

use std::path::Path;

use grove::project::Project;
use grove::setup::{TrustStore, commands_hash};

use super::Output;

/// Trust this repository's commands as they are now: its
/// worktreeHooks.postSetupCommands, and the agents and notify command under
/// grove in .agent/config.json.
///
/// Commands come from a file in the repository, so grove runs them only
/// once you have trusted that exact list; a changed list must be trusted again.
#[derive(clap::Args)]
pub struct Args {
    /// Print {repoRoot, hash, commands} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let config = project.main_store().config()?;
    for miss in project.main_store().config_near_misses() {
        out.warn(&format!(
            "{}: {miss}",
            project.main_store().config_path().display()
        ));
    }
    let hooks = config.and_then(|c| c.worktree_hooks).unwrap_or_default();
    let commands = hooks.post_setup_commands.unwrap_or_default();
    let teardown = hooks.pre_remove_commands.unwrap_or_default();
    let merge = hooks.pre_merge_commands.unwrap_or_default();
    let merge_hash = (!merge.is_empty())
        .then(|| {
            let hash = grove::land::merge_hash(&merge);
            trust_list(
                &project,
                &merge,
                hash,
                "merge check(s) (preMergeCommands)",
                args.json,
                out,
            )
        })
        .transpose()?;
    let teardown_hash = (!teardown.is_empty())
        .then(|| {
            let hash = grove::setup::teardown_hash(&teardown);
            let what = "teardown command(s) (preRemoveCommands)";
            trust_list(&project, &teardown, hash, what, args.json, out)
        })
        .transpose()?;
    let teardown_list: Vec<&str> = teardown.iter().map(|c| c.command.as_str()).collect();
    let settings = grove::agent::Settings::load(Some(&project.main_root))?;
    let agent_commands = settings.project_commands();
    if !agent_commands.is_empty() {
        if let Some(saved) = settings.trust_project()? {
            out.warn(&format!(
                "the trust store could not be read; it was kept as {} and a new one started",
                saved.display()
            ));
        }
        if !args.json {
            for c in &agent_commands {
                out.status(&format!("  {}", super::output::escape_line(c)));
            }
            out.status(&format!(
                "grove: trusted the agent and notify commands of {}",
                project.main_root.display()
            ));
        }
    }
    if commands.is_empty() {
        if args.json {
            out.json(&serde_json::json!({
                "repoRoot": project.main_root,
                "hash": null,
                "commands": [],
                "agentCommands": agent_commands,
                "teardownHash": teardown_hash,
                "teardownCommands": teardown_list,
                "mergeHash": merge_hash,
            }))?;
        } else if agent_commands.is_empty() && teardown.is_empty() && merge.is_empty() {
            out.status(
                "grove: this repository's .agent/config.json has no commands; nothing to trust",
            );
        }
        return Ok(super::exit::SUCCESS);
    }
    let hash = commands_hash(&commands);
    if let Some(saved) = TrustStore::open()?.trust(&project.main_root, &hash)? {
        out.warn(&format!(
            "the trust store could not be read; it was kept as {} and a new one started",
            saved.display()
        ));
    }
    if args.json {
        let list: Vec<&str> = commands.iter().map(|c| c.command.as_str()).collect();
        out.json(
            &serde_json::json!({"repoRoot": project.main_root, "hash": hash, "commands": list,
                "agentCommands": agent_commands, "teardownHash": teardown_hash,
                "teardownCommands": teardown_list, "mergeHash": merge_hash}),
        )?;
    } else {
        for c in &commands {
            out.status(&format!("  $ {}", super::output::escape_line(&c.command)));
        }
        out.status(&format!(
            "grove: trusted these {} command(s) for {}",
            commands.len(),
            project.main_root.display()
        ));
        out.line(&hash)?;
    }
    Ok(super::exit::SUCCESS)
}

/// Trusts a list of commands as it is now, by `hash` (its own kind's:
/// teardown, merge checks), telling which (`what`); returns the hash.
fn trust_list(
    project: &Project,
    commands: &[grove::atsf::PostSetupCommand],
    hash: String,
    what: &str,
    json: bool,
    out: &Output,
) -> anyhow::Result<String> {
    if let Some(saved) = TrustStore::open()?.trust(&project.main_root, &hash)? {
        out.warn(&format!(
            "the trust store could not be read; it was kept as {} and a new one started",
            saved.display()
        ));
    }
    if !json {
        for c in commands {
            out.status(&format!("  $ {}", super::output::escape_line(&c.command)));
        }
        out.status(&format!(
            "grove: trusted these {} {what} for {}",
            commands.len(),
            project.main_root.display()
        ));
    }
    Ok(hash)
}
