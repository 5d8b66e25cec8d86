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
    let mut values: Vec<(String, Value, String)> = Vec::new();

    let data = grove::home::data_dir()?;
    let data_source = if std::env::var_os("GROVE_HOME").is_some() {
        "environment (GROVE_HOME)"
    } else {
        "default"
    };
    values.push(("data-dir".into(), json!(data), data_source.into()));

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
    values.push(("worktree-dir".into(), json!(wt), wt_source.into()));

    let config_file = project
        .as_ref()
        .map(|p| p.main_store().config_path())
        .unwrap_or_default();
    let prefix = grove::setting::branch_prefix(repo.as_ref(), &config_file);
    values.push((
        "branch-prefix".into(),
        json!(prefix.value),
        described(&prefix.source),
    ));
    let template = grove::setting::branch_template(repo.as_ref(), &config_file);
    values.push((
        "branch-template".into(),
        json!(template.value),
        described(&template.source),
    ));
    let agent = grove::setting::agent(None, repo.as_ref(), &config_file);
    values.push(("agent".into(), json!(agent.value), described(&agent.source)));
    if !user.push_exclude_tags.is_empty() {
        values.push((
            "push-exclude-tags".into(),
            json!(user.push_exclude_tags),
            "user config".into(),
        ));
    }
    for (command, flags) in &user.flags {
        values.push((
            format!("flags.{command}"),
            json!(flags),
            "user config".into(),
        ));
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

/// A source as `grove config` shows it: the kind, and for the repository
/// the key and the file.
fn described(source: &grove::setting::Source) -> String {
    match source {
        grove::setting::Source::Repository { .. } => format!("repository ({source})"),
        other => other.kind().to_string(),
    }
}
