//! `grove.agents` and `grove.notify`: from the user's `config.json` in
//! grove's data directory and from the project's `.agent/config.json`.
//!
//! The user's file is the user's own and is trusted. The project's comes
//! with the repository: its agent commands and its notify command run only
//! once the user has trusted them as they are now (`grove trust`, or the
//! question on a terminal), exactly like `postSetupCommands`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{AgentSpec, Native, Origin};
use crate::error::{Error, Result};

/// One `grove.agents.<id>` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Starts a session: `["my-agent", "{prompt}"]`.
    pub command: Vec<String>,
    /// Resumes session `{sessionId}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Vec<String>>,
    /// Whose hooks and transcripts it speaks: `claude` or `codex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Native>,
}

/// The part of a `grove` section this module reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Section {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    agents: BTreeMap<String, AgentConfig>,
    /// A shell command run when a task turns `waiting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notify: Option<String>,
}

impl Section {
    fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.notify.is_none()
    }
}

/// What the user and the project configure.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    user: Section,
    project: Section,
    /// The files they were read from.
    user_file: Option<PathBuf>,
    project_file: Option<PathBuf>,
    /// The project's main worktree, where its trust is recorded.
    project_root: Option<PathBuf>,
}

/// A command and where it came from.
#[derive(Debug, Clone)]
pub struct Notify {
    pub command: String,
    pub origin: Origin,
}

impl Settings {
    /// The user's settings and those of the project whose main worktree is
    /// `main_root` (its `.agent/config.json`, when there is one).
    pub fn load(main_root: Option<&Path>) -> Result<Settings> {
        let user_file = crate::home::data_dir()?.join("config.json");
        let user = read_section(&user_file)?;
        let project_file =
            main_root.map(|root| crate::store::Store::for_project(root).config_path());
        let project = match main_root {
            Some(root) => {
                let store = crate::store::Store::for_project(root);
                match store.config()? {
                    Some(config) => section_of(&config.extra, &store.config_path())?,
                    None => Section::default(),
                }
            }
            None => Section::default(),
        };
        Ok(Settings {
            user,
            project,
            user_file: Some(user_file),
            project_file,
            project_root: main_root.map(Path::to_path_buf),
        })
    }

    /// The configured agent `id` (the project's overrides the user's).
    pub fn agent(&self, id: &str) -> Option<AgentSpec> {
        let (config, origin, file) = match (self.project.agents.get(id), self.user.agents.get(id)) {
            (Some(c), _) => (c, Origin::Project, self.project_file.clone()),
            (None, Some(c)) => (c, Origin::User, self.user_file.clone()),
            (None, None) => return None,
        };
        Some(AgentSpec {
            id: id.to_string(),
            command: config.command.clone(),
            resume: config.resume.clone(),
            native: config.native.or_else(|| Native::from_name(id)),
            origin,
            file,
        })
    }

    /// Every configured agent id.
    pub fn agent_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .user
            .agents
            .keys()
            .chain(self.project.agents.keys())
            .cloned()
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The notify command (the project's overrides the user's).
    pub fn notify(&self) -> Option<Notify> {
        match (&self.project.notify, &self.user.notify) {
            (Some(c), _) => Some(Notify {
                command: c.clone(),
                origin: Origin::Project,
            }),
            (None, Some(c)) => Some(Notify {
                command: c.clone(),
                origin: Origin::User,
            }),
            (None, None) => None,
        }
    }

    /// The hash the project's commands are trusted under, when it has any.
    pub fn project_hash(&self) -> Option<String> {
        if self.project.is_empty() {
            return None;
        }
        let bytes = serde_json::to_vec(&self.project).unwrap_or_default();
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(format!("sha256:{hex}"))
    }

    /// Every command the project's trust would allow, for the trust
    /// question: each agent's start and resume templates (each word quoted
    /// as a shell would need it, so the words cannot be misread) and the
    /// notify command.
    pub fn project_commands(&self) -> Vec<String> {
        let line = crate::shellquote::command_line;
        let mut out = Vec::new();
        for (id, a) in &self.project.agents {
            out.push(format!("agent {id}: {}", line(&a.command)));
            if let Some(resume) = &a.resume {
                out.push(format!("agent {id} (resume): {}", line(resume)));
            }
        }
        out.extend(self.project.notify.iter().map(|n| format!("notify: {n}")));
        out
    }

    /// Whether the project's commands as they are now were trusted.
    pub fn project_trusted(&self) -> Result<bool> {
        let (Some(hash), Some(root)) = (self.project_hash(), &self.project_root) else {
            return Ok(true);
        };
        crate::setup::TrustStore::open()?.is_trusted(root, &hash)
    }

    /// Records the project's commands as trusted.
    pub fn trust_project(&self) -> Result<Option<PathBuf>> {
        let (Some(hash), Some(root)) = (self.project_hash(), &self.project_root) else {
            return Ok(None);
        };
        crate::setup::TrustStore::open()?.trust(root, &hash)
    }
}

fn read_section(path: &Path) -> Result<Section> {
    let Some(file) = crate::fsutil::open_read_opt(path)? else {
        return Ok(Section::default());
    };
    let value: Value = serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|e| Error::parse(path, format!("not valid JSON: {e}")))?;
    match value {
        Value::Object(map) => section_of(&map, path),
        _ => Err(Error::parse(path, "expected a JSON object")),
    }
}

/// The `grove` section of a config object, checked field by field.
fn section_of(config: &serde_json::Map<String, Value>, path: &Path) -> Result<Section> {
    let Some(grove) = crate::atsf::grove::ConfigSection::of(config).value() else {
        return Ok(Section::default());
    };
    let mut wanted = serde_json::Map::new();
    for key in ["agents", "notify"] {
        if let Some(v) = grove.get(key) {
            wanted.insert(key.into(), v.clone());
        }
    }
    serde_path_to_error::deserialize(Value::Object(wanted)).map_err(|e| {
        Error::parse(
            path,
            format!(
                "grove.{}: {} (agents: {{\"<id>\": {{\"command\": [...], \"resume\": [...], \"native\": \"claude\"|\"codex\"}}}}, notify: a shell command)",
                e.path(),
                e.inner()
            ),
        )
    })
}
