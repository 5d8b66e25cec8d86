//! Where grove is working: the project root, its store and its git state.

use std::path::{Path, PathBuf};

use crate::atsf::Context;
use crate::error::{IoContext, Result};
use crate::git::{self, RepoInfo};
use crate::store::Store;

/// The project containing a directory: the root of its git working tree, or
/// the directory itself outside a repository.
#[derive(Debug, Clone)]
pub struct Project {
    /// Absolute, canonical project root (the current worktree's root).
    pub root: PathBuf,
    /// Root of the main working tree: where `config.json` and its
    /// `worktreeHooks` are read from. Equal to `root` outside linked worktrees.
    pub main_root: PathBuf,
    /// Absolute, canonical directory grove was started from.
    pub cwd: PathBuf,
    /// Git state, when inside a repository.
    pub git: Option<RepoInfo>,
}

impl Project {
    /// The repository the project is in; `None` outside one (or when git
    /// cannot be found to run its commands).
    pub fn repo(&self) -> Option<crate::git::Repo> {
        self.git.as_ref()?;
        crate::git::Repo::new(&self.main_root).ok()
    }

    /// Finds the project containing `cwd`.
    pub fn discover(cwd: &Path) -> Result<Self> {
        let cwd = cwd.canonicalize().ctx("resolving", cwd)?;
        let git = git::discover(&cwd)?;
        let root = git
            .as_ref()
            .map(|g| g.workdir.clone())
            .unwrap_or_else(|| cwd.clone());
        let main_root = git
            .as_ref()
            .map(|g| g.main_root.clone())
            .unwrap_or_else(|| root.clone());
        Ok(Project {
            root,
            main_root,
            cwd,
            git,
        })
    }

    /// The `.agent/` store of the worktree grove runs in.
    pub fn store(&self) -> Store {
        Store::for_project(&self.root)
    }

    /// The main working tree's `.agent/` store (its config holds the hooks).
    pub fn main_store(&self) -> Store {
        Store::for_project(&self.main_root)
    }

    /// The `context` a thread started here records.
    pub fn context(&self) -> Context {
        let relative = self.cwd.strip_prefix(&self.root).ok().map(|p| {
            let s = p.to_string_lossy().replace('\\', "/");
            if s.is_empty() { ".".to_string() } else { s }
        });
        Context {
            working_dir: self.cwd.to_string_lossy().into_owned(),
            relative_dir: relative,
            git_branch: self.git.as_ref().and_then(|g| g.branch.clone()),
            git_commit: self.git.as_ref().and_then(|g| g.head.clone()),
            ..Context::default()
        }
    }
}
