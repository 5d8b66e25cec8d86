//! Personal defaults: `$XDG_CONFIG_HOME/grove/config.toml` (else
//! `~/.config/grove/config.toml`; `GROVE_CONFIG` names another file).
//!
//! ```toml
//! worktree-dir = "~/worktrees/{repo}/{short}"   # where `grove new` puts worktrees
//! branch-prefix = "me/"                        # when the repository sets none
//! agent = "claude-code"                        # when the repository sets none
//! push-exclude-tags = ["private"]              # threads `grove push` never sends
//! turn-snapshots = false                       # no worktree snapshot at each turn
//!
//! [flags]                                      # default flags per command
//! new = ["--no-lfs"]
//!
//! [hooks]                                      # setup of your own, every repository
//! post-setup = ["direnv allow"]
//! post-setup-background = ["cargo fetch"]
//! ```
//!
//! The repository's `.agent/config.json` wins for the repository's matters
//! (its branch prefix, its default agent); flags given on the command line
//! come after the defaults, so they win too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The user's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct UserConfig {
    /// Where `grove new` puts a task's worktree: a path template with
    /// `{repo}`, `{short}` (the first 8 of the thread id), `{id}`,
    /// `{branch}` (with `/` as `-`); `~` is the home directory; a relative
    /// path is relative to the repository's root.
    pub worktree_dir: Option<String>,
    /// The prefix of generated branch names.
    pub branch_prefix: Option<String>,
    /// The template of generated branch names (`{prefix}`, `{slug}`, `{id}`).
    pub branch_template: Option<String>,
    /// The agent of new threads.
    pub agent: Option<String>,
    /// Threads carrying any of these tags never leave the machine
    /// (`grove push` skips them, as it skips `metadata.grove.share: false`).
    #[serde(default)]
    pub push_exclude_tags: Vec<String>,
    /// Default flags, per command (`new = ["--no-lfs"]`).
    #[serde(default)]
    pub flags: BTreeMap<String, Vec<String>>,
    /// The user's own setup commands, run in every repository.
    #[serde(default)]
    pub hooks: UserHooks,
    /// Whether capture records the worktree at each turn boundary (on
    /// unless `false`: in a very large repository each costs about a
    /// `git status`).
    pub turn_snapshots: Option<bool>,
}

/// `[hooks]`: setup commands of the user's own, run in every task's
/// worktree after the repository's `postSetupCommands` (trusted: the user
/// wrote them), with the same environment, timeout and logs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct UserHooks {
    /// Run one after another before `grove new` returns.
    #[serde(default)]
    pub post_setup: Vec<String>,
    /// Run in the background once the worktree is ready.
    #[serde(default)]
    pub post_setup_background: Vec<String>,
}

/// Where the user's config file is.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GROVE_CONFIG").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))?;
    Some(base.join("grove").join("config.toml"))
}

/// The user's config, read once; a missing file is the empty config. A file
/// that cannot be read or parsed is an error naming it (and the line).
pub fn get() -> Result<&'static UserConfig> {
    static LOADED: OnceLock<std::result::Result<UserConfig, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| load().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::Other(e.clone()))
}

fn load() -> Result<UserConfig> {
    let Some(path) = path() else {
        return Ok(UserConfig::default());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(UserConfig::default()),
        Err(e) => return Err(Error::io("reading", &path, e)),
    };
    toml::from_str(&text)
        .map_err(|e| Error::Other(format!("{}: {}", path.display(), e.to_string().trim_end())))
}

/// The worktree directory the template names for a task.
pub fn worktree_dir(template: &str, main_root: &Path, id: &str, branch: &str) -> PathBuf {
    let repo = main_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into());
    let short: String = id.chars().take(8).collect();
    let filled = template
        .replace("{repo}", &repo)
        .replace("{short}", &short)
        .replace("{id}", id)
        .replace("{branch}", &branch.replace('/', "-"));
    let expanded = match filled.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(&filled), |h| h.join(rest)),
        None => PathBuf::from(&filled),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        main_root.join(expanded)
    }
}
