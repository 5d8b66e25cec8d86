//! Settings that come from one of several files — the repository's
//! `.agent/config.json`, the user's `config.toml` — or from grove's
//! defaults, each with where it came from, so that an error about a value
//! names the file and the key to fix, and `grove config` shows the same.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::atsf::Config;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The repository's `.agent/config.json` (at this path), under `key`.
    Repository { file: PathBuf, key: &'static str },
    /// The user's `config.toml` (at this path), under `key`.
    User { file: PathBuf, key: &'static str },
    /// The command line.
    CommandLine,
    /// grove's own default.
    Default,
}

impl Source {
    /// `repository`, `user config` or `default`: the kind of source.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Repository { .. } => "repository",
            Source::User { .. } => "user config",
            Source::CommandLine => "command line",
            Source::Default => "default",
        }
    }
}

impl fmt::Display for Source {
    /// `grove.branchPrefix in /repo/.agent/config.json`, `branch-prefix in
    /// ~/.config/grove/config.toml`, `grove's default`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Repository { file, key } | Source::User { file, key } => {
                write!(f, "{key} in {}", file.display())
            }
            Source::CommandLine => f.write_str("the command line"),
            Source::Default => f.write_str("grove's default"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// The first of the repository's value, the user's and the default.
fn first<T>(
    repository: Option<(T, &Path, &'static str)>,
    user: Option<(T, &'static str)>,
    default: T,
) -> Setting<T> {
    if let Some((value, file, key)) = repository {
        return Setting {
            value,
            source: Source::Repository {
                file: file.to_path_buf(),
                key,
            },
        };
    }
    if let (Some((value, key)), Some(file)) = (user, crate::userconfig::path()) {
        return Setting {
            value,
            source: Source::User { file, key },
        };
    }
    Setting {
        value: default,
        source: Source::Default,
    }
}

/// Default prefix of generated branch names; `grove.branchPrefix` in
/// `config.json` or `branch-prefix` in the personal config changes it.
pub const DEFAULT_BRANCH_PREFIX: &str = "grove/";

/// The prefix of generated branch names: the repository's
/// `grove.branchPrefix` (its config at `config_file`), else the user's
/// `branch-prefix`, else `grove/`.
pub fn branch_prefix(config: Option<&Config>, config_file: &Path) -> Setting<String> {
    let repository = config
        .and_then(|c| crate::atsf::grove::ConfigSection::of(&c.extra).branch_prefix())
        .map(|p| (p.to_string(), config_file, "grove.branchPrefix"));
    let user = crate::userconfig::get()
        .ok()
        .and_then(|u| u.branch_prefix.clone())
        .map(|p| (p, "branch-prefix"));
    first(repository, user, DEFAULT_BRANCH_PREFIX.to_string())
}

/// Default template of generated branch names: the prefix, then the
/// title's slug.
pub const DEFAULT_BRANCH_TEMPLATE: &str = "{prefix}{slug}";

/// The template of generated branch names — `{prefix}` (the branch prefix),
/// `{slug}` (the title in lower case, words joined by `-`), `{id}` (the
/// first 8 of the thread id): the repository's `grove.branchTemplate`, else
/// the user's `branch-template`, else `{prefix}{slug}`.
pub fn branch_template(config: Option<&Config>, config_file: &Path) -> Setting<String> {
    let repository = config
        .and_then(|c| crate::atsf::grove::ConfigSection::of(&c.extra).branch_template())
        .map(|p| (p.to_string(), config_file, "grove.branchTemplate"));
    let user = crate::userconfig::get()
        .ok()
        .and_then(|u| u.branch_template.clone())
        .map(|p| (p, "branch-template"));
    first(repository, user, DEFAULT_BRANCH_TEMPLATE.to_string())
}

/// The agent of a new thread: `explicit` (from the command line), else the
/// repository's `defaults.agentId`, else the user's `agent`, else
/// `unknown`.
pub fn agent(
    explicit: Option<&str>,
    config: Option<&Config>,
    config_file: &Path,
) -> Setting<String> {
    if let Some(a) = explicit {
        return Setting {
            value: a.to_string(),
            source: Source::CommandLine,
        };
    }
    let repository = config
        .and_then(|c| c.defaults.as_ref()?.agent_id.clone())
        .map(|a| (a, config_file, "defaults.agentId"));
    let user = crate::userconfig::get()
        .ok()
        .and_then(|u| u.agent.clone())
        .map(|a| (a, "agent"));
    first(repository, user, crate::threads::UNKNOWN_AGENT.to_string())
}
