//! Reading git state. libgit2 where it is fast (HEAD, branch, status,
//! ancestry); the git binary where libgit2 falls short (worktree listing,
//! repositories using `extensions.relativeWorktrees`, which libgit2 cannot
//! open — libgit2 issue 7210). Mutations live in the worktree manager.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::gitcmd::Git;

/// What a thread records about the repository it was started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// Root of the working tree containing the path (a linked worktree's own root).
    pub workdir: PathBuf,
    /// Root of the main working tree (equal to `workdir` outside linked worktrees).
    pub main_root: PathBuf,
    /// Current branch (short name); `None` when HEAD is detached.
    pub branch: Option<String>,
    /// Full HEAD commit id; `None` before the first commit.
    pub head: Option<String>,
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Finds the repository containing `path`; `Ok(None)` outside any repository
/// or in a bare one.
pub fn discover(path: &Path) -> Result<Option<RepoInfo>> {
    let repo = match git2::Repository::discover(path) {
        Ok(repo) => repo,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(_) => return discover_with_cli(path),
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let workdir = canonical(workdir);
    let common = canonical(repo.commondir());
    let main_root = main_root_of(&common).unwrap_or_else(|| workdir.clone());
    let (branch, head) = head_state(&repo)?;
    Ok(Some(RepoInfo {
        workdir,
        main_root,
        branch,
        head,
    }))
}

/// The main working tree of a common git dir `<root>/.git`.
fn main_root_of(common_dir: &Path) -> Option<PathBuf> {
    if common_dir.file_name()? == ".git" {
        common_dir.parent().map(Path::to_path_buf)
    } else {
        None
    }
}

/// The same answers from the git binary, for repositories libgit2 cannot open.
fn discover_with_cli(path: &Path) -> Result<Option<RepoInfo>> {
    let git = Git::find()?;
    let top = git.output(path, &["rev-parse", "--show-toplevel"])?;
    if !top.success {
        return Ok(None);
    }
    let workdir = canonical(Path::new(top.stdout.trim()));
    let common = git.run(
        path,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let main_root = main_root_of(&canonical(Path::new(&common))).unwrap_or_else(|| workdir.clone());
    let branch = git.output(path, &["symbolic-ref", "-q", "--short", "HEAD"])?;
    let head = git.output(path, &["rev-parse", "-q", "--verify", "HEAD"])?;
    Ok(Some(RepoInfo {
        workdir,
        main_root,
        branch: branch.success.then(|| branch.stdout.trim().to_string()),
        head: head.success.then(|| head.stdout.trim().to_string()),
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
