//! The worktree list, read from git's administrative files
//! (`<common>/worktrees/<id>/{gitdir,HEAD,locked}`) the way
//! `git worktree list` reads them, without starting git: on a small
//! repository the git process is most of what `grove list` costs.
//!
//! Anything this reader does not recognise (a ref store other than files,
//! an entry git itself is half-way through writing) makes it give up, and
//! the caller asks git.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::WorktreeEntry;

/// What the reftable ref store leaves in `HEAD` files: the refs live
/// elsewhere, and only git can read them.
const REFTABLE_HEAD: &[u8] = b"ref: refs/heads/.invalid";

/// Every worktree of the repository whose common git directory libgit2 has
/// open as `repo`, the main one first, as `git worktree list --porcelain`
/// reports them. `None` when the files say something only git can answer.
pub(super) fn read(repo: &git2::Repository) -> Option<Vec<WorktreeEntry>> {
    let common = std::fs::canonicalize(repo.commondir()).ok()?;
    let mut entries = vec![main_entry(repo, &common)?];
    let dir = common.join("worktrees");
    let listing = match std::fs::read_dir(&dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(entries),
        Err(_) => return None,
    };
    for item in listing {
        let item = item.ok()?;
        if !item.file_type().ok()?.is_dir() {
            continue;
        }
        entries.push(linked_entry(repo, &item.path())?);
    }
    Some(entries)
}

fn main_entry(repo: &git2::Repository, common: &Path) -> Option<WorktreeEntry> {
    let bare = repo
        .config()
        .ok()
        .and_then(|c| c.get_bool("core.bare").ok())
        .unwrap_or(false);
    if bare {
        return Some(WorktreeEntry {
            path: common.to_path_buf(),
            head: None,
            branch: None,
            bare: true,
            locked: None,
            prunable: false,
        });
    }
    // git names the main worktree by its common dir without the `.git`.
    let path = match common.file_name() {
        Some(name) if name == ".git" => common.parent()?.to_path_buf(),
        _ => common.to_path_buf(),
    };
    let (head, branch) = head_of(repo, &std::fs::read(common.join("HEAD")).ok()?)?;
    Some(WorktreeEntry {
        path,
        head,
        branch,
        bare: false,
        locked: None,
        prunable: false,
    })
}

fn linked_entry(repo: &git2::Repository, admin: &Path) -> Option<WorktreeEntry> {
    let locked = match std::fs::read(admin.join("locked")) {
        Ok(reason) => Some(String::from_utf8_lossy(reason.trim_ascii()).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => return None,
    };
    // An entry git is making (locked "initializing", no `commondir` yet) or
    // was killed making: git's own answer, whatever it is, is the one to give.
    if locked.as_deref() == Some("initializing")
        || std::fs::read(admin.join("commondir")).map_or(true, |c| c.trim_ascii().is_empty())
    {
        return None;
    }
    let gitdir = std::fs::read(admin.join("gitdir")).ok();
    let dot_git = gitdir
        .as_deref()
        .map(<[u8]>::trim_ascii)
        .filter(|g| !g.is_empty())
        .map(|g| absolute_gitdir(admin, Path::new(OsStr::from_bytes(g))));
    let Some(dot_git) = dot_git else {
        // No gitdir yet: either git is writing the entry (it is locked
        // "initializing" then) or it is broken; git knows which.
        return None;
    };
    let path = match dot_git.file_name() {
        Some(name) if name == ".git" => dot_git.parent()?.to_path_buf(),
        _ => dot_git.clone(),
    };
    let (head, branch) = match std::fs::read(admin.join("HEAD")) {
        Ok(head) => head_of(repo, &head)?,
        Err(_) if locked.is_some() => (None, None),
        Err(_) => return None,
    };
    let prunable = locked.is_none() && std::fs::symlink_metadata(&dot_git).is_err();
    Some(WorktreeEntry {
        path,
        head,
        branch,
        bare: false,
        locked,
        prunable,
    })
}

/// git (2.48 and later, `worktree.useRelativePaths`) may record the
/// worktree's `.git` relative to the entry's directory.
fn absolute_gitdir(admin: &Path, gitdir: &Path) -> PathBuf {
    if gitdir.is_absolute() {
        return gitdir.to_path_buf();
    }
    let joined = admin.join(gitdir);
    match (joined.parent(), joined.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or(joined),
        _ => joined,
    }
}

/// The commit and branch a `HEAD` file names: `ref: refs/heads/<b>` (the
/// branch's tip, `None` while it is unborn) or a detached commit id.
fn head_of(repo: &git2::Repository, contents: &[u8]) -> Option<(Option<String>, Option<String>)> {
    let contents = contents.trim_ascii();
    if contents == REFTABLE_HEAD {
        return None;
    }
    let text = std::str::from_utf8(contents).ok()?;
    if let Some(target) = text.strip_prefix("ref:") {
        let target = target.trim();
        let head = repo.refname_to_id(target).ok().map(|id| id.to_string());
        let branch = target.strip_prefix("refs/heads/").unwrap_or(target);
        return Some((head, Some(branch.to_string())));
    }
    git2::Oid::from_str(text).ok()?;
    Some((Some(text.to_string()), None))
}
