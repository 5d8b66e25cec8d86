//! The git objects attribution reads: the commits of a thread's snapshot
//! chain, a file's blob in a snapshot's tree, blobs' bytes, and whether a
//! branch holds a commit. libgit2 reads them in process; for a repository
//! it cannot open (`extensions.relativeWorktrees`) the git binary does.
//!
//! Ids come from threads, which may have been pulled from anywhere: only
//! well-formed object ids are passed on, and only trees the thread's own
//! chain holds are read (see the steps of a thread).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::git::Git;

pub use crate::git::is_object_id;

/// A repository's objects.
pub struct Objects {
    repo: Option<Rc<git2::Repository>>,
    git: Git,
    root: PathBuf,
}

impl Objects {
    /// The objects of the repository whose worktree is `root`.
    pub fn open(root: &Path) -> Result<Objects> {
        Ok(Objects {
            repo: crate::git::open(root),
            git: Git::find()?,
            root: root.to_path_buf(),
        })
    }

    /// Every commit of the chain `name` names, with its tree; empty when
    /// the ref does not exist.
    pub fn chain(&self, name: &str) -> Result<HashMap<String, String>> {
        crate::snapshot::chain::commits(&self.git, &self.root, name)
    }

    /// The blob at `path` in `tree`; `None` when there is none.
    pub fn blob_in(&self, tree: &str, path: &str) -> Result<Option<String>> {
        if !is_object_id(tree) {
            return Ok(None);
        }
        let Some(repo) = &self.repo else {
            let listed = self
                .git
                .output(&self.root, &["ls-tree", tree, "--", path])?;
            let blob = listed.stdout.lines().find_map(|l| {
                let (info, name) = l.split_once('\t')?;
                let mut words = info.split(' ');
                let (_mode, kind, id) = (words.next()?, words.next()?, words.next()?);
                (kind == "blob" && name == path).then(|| id.to_string())
            });
            return Ok(blob);
        };
        let Ok(tree) = repo.find_tree(git2::Oid::from_str(tree)?) else {
            return Ok(None);
        };
        Ok(tree
            .get_path(Path::new(path))
            .ok()
            .filter(|e| e.kind() == Some(git2::ObjectType::Blob))
            .map(|e| e.id().to_string()))
    }

    /// A blob's bytes.
    pub fn blob(&self, id: &str) -> Result<Vec<u8>> {
        if !is_object_id(id) {
            return Err(Error::Git(format!("{id:?} is no object id")));
        }
        let Some(repo) = &self.repo else {
            return self
                .git
                .bytes(&self.root, &["cat-file", "blob", id], None, true);
        };
        Ok(repo.find_blob(git2::Oid::from_str(id)?)?.content().to_vec())
    }

    /// The commit branch `name` is on, when it exists.
    pub fn branch(&self, name: &str) -> Option<String> {
        let full = format!("refs/heads/{name}");
        match &self.repo {
            Some(repo) => repo.refname_to_id(&full).ok().map(|o| o.to_string()),
            None => {
                let out = self
                    .git
                    .output(
                        &self.root,
                        &["rev-parse", "-q", "--verify", &format!("{full}^{{commit}}")],
                    )
                    .ok()?;
                out.success.then(|| out.stdout.trim().to_string())
            }
        }
    }

    /// Whether `commit` is `tip` or one of its ancestors.
    pub fn holds(&self, tip: &str, commit: &str) -> bool {
        if tip == commit {
            return true;
        }
        if !(is_object_id(tip) && is_object_id(commit)) {
            return false;
        }
        match &self.repo {
            Some(repo) => match (git2::Oid::from_str(tip), git2::Oid::from_str(commit)) {
                (Ok(t), Ok(c)) => repo.graph_descendant_of(t, c).unwrap_or(false),
                _ => false,
            },
            None => self
                .git
                .check(&self.root, &["merge-base", "--is-ancestor", commit, tip])
                .unwrap_or(false),
        }
    }
}
