//! `grove config`

use std::path::Path;

use grove::project::Project;
use serde_json::{Value, json};

use super::Output;

/// Show grove's effective settings here and where each comes from: the
/// repository's .agent/config.json, your config.toml
/// ($XDG_CONFIG_HOME/grove/config.toml, or GROVE_CONFIG), the environment,
/// or grove's default.
#[derive(clap::Args)]
pub struct Args {
    /// Print {userConfig, values: [{key, value, source}]} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let user_path = grove::userconfig::path();
    let user = grove::userconfig::get()?;
    let project = Project::discover(cwd).ok();
    let repo = project
        .as_ref()
        .and_then(|p| p.main_store().config().ok().flatten());
    let mut values: Vec<(String, Value, &str)> = Vec::new();

    let data = grove::home::data_dir()?;
    let data_source = if std::env::var_os("GROVE_HOME").is_some() {
        "environment (GROVE_HOME)"
    } else {
        "default"
    };
    values.push(("data-dir".into(), json!(data), data_source));

    let (wt, wt_source) = match &user.worktree_dir {
        Some(t) => (t.clone(), "user config"),
        None => (
            format!(
                "{}/worktrees/<repo>-<hash>/thread-{{short}}",
                data.display()
            ),
            "default",
        ),
    };
    values.push(("worktree-dir".into(), json!(wt), wt_source));

    let repo_prefix = repo.as_ref().and_then(|c| {
        c.extra
            .get("grove")?
            .get("branchPrefix")?
            .as_str()
            .map(str::to_string)
    });
    let (prefix, source) = match (&repo_prefix, &user.branch_prefix) {
        (Some(p), _) => (
            p.clone(),
            "repository (.agent/config.json grove.branchPrefix)",
        ),
        (None, Some(p)) => (p.clone(), "user config"),
        (None, None) => (
            grove::worktree::DEFAULT_BRANCH_PREFIX.to_string(),
            "default",
        ),
    };
    values.push(("branch-prefix".into(), json!(prefix), source));

    let repo_agent = repo
        .as_ref()
        .and_then(|c| c.defaults.as_ref()?.agent_id.clone());
    let (agent, source) = match (&repo_agent, &user.agent) {
        (Some(a), _) => (
            a.clone(),
            "repository (.agent/config.json defaults.agentId)",
        ),
        (None, Some(a)) => (a.clone(), "user config"),
        (None, None) => ("unknown".to_string(), "default"),
    };
    values.push(("agent".into(), json!(agent), source));
    if !user.push_exclude_tags.is_empty() {
        values.push((
            "push-exclude-tags".into(),
            json!(user.push_exclude_tags),
            "user config",
        ));
    }
    for (command, flags) in &user.flags {
        values.push((format!("flags.{command}"), json!(flags), "user config"));
    }

    if args.json {
        let rows: Vec<Value> = values
            .iter()
            .map(|(k, v, s)| json!({"key": k, "value": v, "source": s}))
            .collect();
        out.json(&json!({"userConfig": user_path, "values": rows}))?;
        return Ok(super::exit::SUCCESS);
    }
    if let Some(p) = &user_path {
        let state = if p.is_file() { "" } else { " (none)" };
        out.line(&format!("{:<14} {}{state}", "user-config", p.display()))?;
    }
    for (k, v, s) in &values {
        let shown = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.line(&format!("{k:<14} {shown}  ({s})"))?;
    }
    Ok(super::exit::SUCCESS)
}
