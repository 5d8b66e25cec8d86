//! The worktree's content as a git tree, written through an index of
//! grove's own.
//!
//! `git add -A` into a private index, then `git write-tree`: untracked files
//! are taken and ignored ones left out exactly as git itself decides, and
//! nothing of the user's — index, working tree, stash, HEAD — is written.
//! The private index is kept between snapshots (in the worktree's own git
//! directory, so it goes when the worktree goes): an unchanged worktree
//! then costs git's stat check of each file against what the index cached,
//! not a hash of every file, and what changed is hashed alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fsutil::{self, FileLock};
use crate::git::Git;

/// The private index, in the worktree's git directory.
const INDEX: &str = "grove/snapshot.index";

/// How long a snapshot waits for another of the same worktree (two
/// agents' hooks at once): the next boundary snapshots what this one
/// would have.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Writes what the worktree at `root` holds as a git tree and returns its
/// id. `exclude` (paths relative to `root`) are left out whatever git
/// would say of them: the threads' own files are the conversation, not
/// the code.
pub fn write_tree(git: &Git, root: &Path, exclude: &[PathBuf]) -> Result<String> {
    let git_dir = git_dir(git, root)?;
    let index = git_dir.join(INDEX);
    if let Some(dir) = index.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    let Some(_lock) = FileLock::acquire_within(&fsutil::lock_path_for(&index), LOCK_WAIT)? else {
        return Err(Error::Other(format!(
            "another snapshot of {} held its lock for {}s",
            root.display(),
            LOCK_WAIT.as_secs()
        )));
    };
    let kept = index.is_file();
    if !kept {
        seed(&git_dir, &index)?;
    }
    match add_and_write(git, root, &index, exclude) {
        Ok(tree) => Ok(tree),
        // A private index git no longer reads (written by another git
        // version, cut short by a full disk) is made again, once.
        Err(first) if kept => {
            remove(&index)?;
            seed(&git_dir, &index)?;
            add_and_write(git, root, &index, exclude).map_err(|_| first)
        }
        Err(e) => Err(e),
    }
}

/// `git add -A` then `git write-tree`, both on the private `index`.
fn add_and_write(git: &Git, root: &Path, index: &Path, exclude: &[PathBuf]) -> Result<String> {
    let index = index.to_string_lossy();
    let env = [("GIT_INDEX_FILE", index.as_ref())];
    // `literal`: a directory named `*` excludes itself, not everything.
    let excluded: Vec<String> = exclude
        .iter()
        .map(|p| format!(":(top,exclude,literal){}", p.to_string_lossy()))
        .collect();
    let mut args = vec!["add", "-A", "--", ":(top)"];
    args.extend(excluded.iter().map(String::as_str));
    git.run_with_env(root, &args, &env)?;
    git.run_with_env(root, &["write-tree"], &env)
}

/// Starts the private index as a copy of the user's, so its cached stat
/// data spares the first snapshot a hash of every tracked file (the copy
/// is only read from: git replaces an index by renaming a whole new one
/// into place). A split index (its entries in a `sharedindex.*` file
/// beside it) is not copied: the private index then starts empty and the
/// first snapshot hashes everything.
fn seed(git_dir: &Path, index: &Path) -> Result<()> {
    if split_index(git_dir) {
        return Ok(());
    }
    match fsutil::read_opt(&git_dir.join("index"))? {
        Some(bytes) => fsutil::write_atomic_unsynced(index, &bytes),
        None => Ok(()),
    }
}

fn split_index(git_dir: &Path) -> bool {
    [git_dir.to_path_buf(), common_dir(git_dir)]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
}

/// The common git directory of a linked worktree's `git_dir` (itself
/// otherwise).
fn common_dir(git_dir: &Path) -> PathBuf {
    std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|| git_dir.to_path_buf())
}

fn remove(index: &Path) -> Result<()> {
    match std::fs::remove_file(index) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", index, e)),
        _ => Ok(()),
    }
}

/// The worktree's own git directory (a linked worktree's is under the
/// main repository's `worktrees/`): libgit2's answer, else git's.
fn git_dir(git: &Git, root: &Path) -> Result<PathBuf> {
    if let Some(repo) = crate::git::open(root) {
        return Ok(repo.path().to_path_buf());
    }
    Ok(PathBuf::from(
        git.run(root, &["rev-parse", "--absolute-git-dir"])?,
    ))
}
