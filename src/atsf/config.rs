use serde::{Deserialize, Serialize};

use super::Extra;

/// `.agent/config.json`: project-level defaults and worktree hooks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub spec_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<CreatedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Defaults>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_settings: Option<Extra>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_hooks: Option<WorktreeHooks>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `createdBy`: the application that created the `.agent/` directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedBy {
    pub name: String,
    pub version: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `defaults`: defaults for new threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Defaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_worktree: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `worktreeHooks` (v1.1): setup applied to a freshly created worktree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeHooks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlinks: Option<Vec<SymlinkHook>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_setup_commands: Option<Vec<PostSetupCommand>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_prompt: Option<String>,
    /// grove extension: files and directories copied (cloned where the
    /// file system can) into the worktree, `{source, target?}` as symlinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copies: Option<Vec<SymlinkHook>>,
    /// grove extension: how many TCP ports each task gets (`GROVE_PORT`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<u32>,
    /// grove extension: values written to `envFile` in each worktree, with
    /// `{port}`, `{port1}`…, `{branch}`, `{threadId}`, `{worktree}` filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// grove extension: the file `env` is written to (default `.env.local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_file: Option<String>,
    /// grove extension: commands run in the worktree before `rm`, `gc` or
    /// `delete` removes it (the same shape and rules as
    /// `postSetupCommands`, trusted on their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_remove_commands: Option<Vec<PostSetupCommand>>,
    /// grove extension: commands run in the task's worktree by `grove
    /// merge`, on what is about to land, before the target moves (the same
    /// shape and rules as `postSetupCommands`, trusted on their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_merge_commands: Option<Vec<PostSetupCommand>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `worktreeHooks.symlinks[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymlinkHook {
    /// Relative to the main repository root.
    pub source: String,
    /// Relative to the worktree root; defaults to `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `worktreeHooks.postSetupCommands[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostSetupCommand {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Milliseconds; the spec's default is 120000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_on_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platforms: Option<Vec<String>>,
    /// grove extension: run after the foreground commands, detached from
    /// grove, so a long `cargo fetch` does not hold up `grove new` (only in
    /// `postSetupCommands`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl PostSetupCommand {
    /// A command line of the user's own (`config.toml` `[hooks]`).
    pub fn plain(command: &str, background: bool) -> Self {
        PostSetupCommand {
            command: command.to_string(),
            label: None,
            timeout: None,
            continue_on_error: None,
            platforms: None,
            background: background.then_some(true),
            extra: Extra::new(),
        }
    }

    /// Whether it runs in the background.
    pub fn is_background(&self) -> bool {
        self.background.unwrap_or(false)
    }

    /// The spec's default timeout, in milliseconds.
    pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
}

impl Config {
    /// A new config as `grove init` writes it.
    pub fn new_for_grove() -> Self {
        Config {
            spec_version: super::SPEC_VERSION.to_string(),
            created_by: Some(CreatedBy {
                name: "grove".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                extra: Extra::new(),
            }),
            defaults: None,
            agent_settings: None,
            worktree_hooks: None,
            extra: Extra::new(),
        }
    }
}
