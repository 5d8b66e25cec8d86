//! Reading git state with libgit2 (fast, no subprocess). Mutations live in
//! the worktree manager and go through the real `git` binary.

use std::path::{Path, PathBuf};

use crate::error::Result;

/// What a thread records about the repository it was started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// Root of the working tree containing the path (a linked worktree's own root).
    pub workdir: PathBuf,
    /// Current branch (short name); `None` when HEAD is detached.
    pub branch: Option<String>,
    /// Full HEAD commit id; `None` before the first commit.
    pub head: Option<String>,
}

/// Finds the repository containing `path`; `Ok(None)` outside any repository
/// or in a bare one.
pub fn discover(path: &Path) -> Result<Option<RepoInfo>> {
    let repo = match git2::Repository::discover(path) {
        Ok(repo) => repo,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let workdir = workdir
        .canonicalize()
        .unwrap_or_else(|_| workdir.to_path_buf());
    let (branch, head) = head_state(&repo)?;
    Ok(Some(RepoInfo {
        workdir,
        branch,
        head,
    }))
}

/// (branch, commit) of HEAD; an unborn branch has a name and no commit.
fn head_state(repo: &git2::Repository) -> Result<(Option<String>, Option<String>)> {
    let head_ref = repo.find_reference("HEAD")?;
    if let Some(target) = head_ref.symbolic_target()? {
        let branch = target.strip_prefix("refs/heads/").map(str::to_string);
        let commit = repo.refname_to_id(target).ok().map(|oid| oid.to_string());
        return Ok((branch, commit));
    }
    Ok((None, head_ref.target().map(|oid| oid.to_string())))
}
