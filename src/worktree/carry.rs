//! Carrying a worktree's uncommitted changes — staged, unstaged, and
//! untracked files that are not ignored — into another worktree of the same
//! repository, without touching the source.
//!
//! The source is only read, with `GIT_OPTIONAL_LOCKS=0` so git neither locks
//! nor refreshes its index: its `git status` stays byte-for-byte the same.
//! The staged part is applied to the target's index and files, the
//! unstaged part to its files only, so the target shows the same staged /
//! unstaged split as the source.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, IoContext, Result};
use crate::git::cmd::Git;

/// Options every patch is made with, whatever the user's diff config says
/// (`diff.noprefix`, `diff.external`, `color.ui=always`, `diff.relative`
/// would all make a patch `git apply` cannot read).
const DIFF_ARGS: &[&str] = &[
    "--binary",
    "--full-index",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--ignore-submodules=none",
];

/// The uncommitted state of a worktree, read with one `git status`. Paths
/// are kept as the bytes git gave (`-z`, never quoted or made lossy), so a
/// file whose name is not UTF-8 is carried like any other.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    /// Paths with staged changes.
    pub staged: Vec<PathBuf>,
    /// Paths with unstaged changes to tracked files.
    pub unstaged: Vec<PathBuf>,
    /// Untracked, not ignored files (threads' directories left out: a thread
    /// belongs to one worktree).
    pub untracked: Vec<PathBuf>,
    /// Paths with merge conflicts.
    pub unmerged: Vec<PathBuf>,
}

impl Changes {
    /// Nothing to carry.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty() && self.unstaged.is_empty() && self.untracked.is_empty()
    }

    /// The conflicted paths, for a message.
    pub fn unmerged_list(&self) -> String {
        self.unmerged
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What was carried, in file counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Carried {
    pub staged: usize,
    pub unstaged: usize,
    pub untracked: usize,
}

/// Reads the uncommitted changes of the worktree at `source`.
pub fn changes(git: &Git, source: &Path) -> Result<Changes> {
    let out = git.bytes(source, &super::STATUS_OF_EVERY_CHANGE, None, true)?;
    Ok(parse_status(&out))
}

/// Parses `git status --porcelain=v1 -z --no-renames`.
fn parse_status(out: &[u8]) -> Changes {
    let mut changes = Changes::default();
    for entry in out.split(|&b| b == 0) {
        if entry.len() < 4 {
            continue;
        }
        let (x, y) = (entry[0], entry[1]);
        let raw = &entry[3..];
        let path = path_from_bytes(raw);
        match (x, y) {
            (b'?', b'?') => {
                if !super::is_grove_path(raw) {
                    changes.untracked.push(path);
                }
            }
            (b'!', b'!') => {}
            (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D') => changes.unmerged.push(path),
            _ => {
                if x != b' ' {
                    changes.staged.push(path.clone());
                }
                if y != b' ' {
                    changes.unstaged.push(path);
                }
            }
        }
    }
    changes
}

/// A path as git printed it with `-z`: raw bytes on Unix (any name, UTF-8
/// or not), UTF-8 elsewhere.
pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// The patches of a worktree's staged and unstaged changes.
#[derive(Debug, Default, Clone)]
pub struct Patches {
    pub staged: Vec<u8>,
    pub unstaged: Vec<u8>,
}

/// Reads the patches `changes` calls for (none when there is nothing of a
/// kind). Reads only: it can run while the target worktree is being made.
pub fn patches(git: &Git, changes: &Changes, source: &Path) -> Result<Patches> {
    if !changes.unmerged.is_empty() {
        return Err(Error::Refused(format!(
            "{} has unresolved merge conflicts ({}); resolve them before carrying its changes",
            source.display(),
            changes.unmerged_list()
        )));
    }
    let mut patches = Patches::default();
    if !changes.staged.is_empty() {
        patches.staged = diff(git, source, true)?;
    }
    if !changes.unstaged.is_empty() {
        patches.unstaged = diff(git, source, false)?;
    }
    Ok(patches)
}

/// Reproduces `changes` of `source` (with their `patches`) in `target`, a
/// fresh worktree checked out at the same commit as `source`'s HEAD.
pub fn apply(
    git: &Git,
    changes: &Changes,
    patches: &Patches,
    source: &Path,
    target: &Path,
) -> Result<Carried> {
    apply_patch(git, target, &patches.staged, true)?;
    apply_patch(git, target, &patches.unstaged, false)?;
    for rel in &changes.untracked {
        copy_untracked(source, target, rel)?;
    }
    Ok(Carried {
        staged: changes.staged.len(),
        unstaged: changes.unstaged.len(),
        untracked: changes.untracked.len(),
    })
}

fn diff(git: &Git, source: &Path, cached: bool) -> Result<Vec<u8>> {
    let mut args = vec!["diff"];
    if cached {
        args.push("--cached");
    }
    args.extend_from_slice(DIFF_ARGS);
    git.bytes(source, &args, None, true)
}

fn apply_patch(git: &Git, target: &Path, patch: &[u8], index: bool) -> Result<()> {
    if patch.is_empty() {
        return Ok(());
    }
    let mut args = vec!["apply", "--whitespace=nowarn"];
    if index {
        args.push("--index");
    }
    git.bytes(target, &args, Some(patch), false)
        .map(|_| ())
        .map_err(|e| {
            Error::Git(format!(
                "could not carry the {} changes into {}: {e}",
                if index { "staged" } else { "unstaged" },
                target.display()
            ))
        })
}

/// Copies one untracked file (or symlink, as a symlink) from `source` to
/// `target`, refusing paths that leave the worktree.
fn copy_untracked(source: &Path, target: &Path, rel: &Path) -> Result<()> {
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(Error::Refused(format!(
            "not carrying untracked path {}: it leaves the worktree",
            rel.display()
        )));
    }
    if let Some(dir) = target.join(rel).parent() {
        crate::fsutil::check_no_links_below(target, dir)?;
    }
    let from = source.join(rel);
    let to = target.join(rel);
    let meta = std::fs::symlink_metadata(&from).ctx("reading", &from)?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).ctx("creating", parent)?;
    }
    if meta.file_type().is_symlink() {
        let link = std::fs::read_link(&from).ctx("reading the link", &from)?;
        #[cfg(unix)]
        std::os::unix::fs::symlink(&link, &to).ctx("creating the link", &to)?;
        #[cfg(windows)]
        {
            let dir = from.metadata().map(|m| m.is_dir()).unwrap_or(false);
            if dir {
                std::os::windows::fs::symlink_dir(&link, &to).ctx("creating the link", &to)?;
            } else {
                std::os::windows::fs::symlink_file(&link, &to).ctx("creating the link", &to)?;
            }
        }
    } else if meta.is_file() {
        let mut src = std::fs::File::open(&from).ctx("opening", &from)?;
        let mut dst = crate::fsutil::create_truncate(&to)?;
        std::io::copy(&mut src, &mut dst).ctx("copying", &from)?;
        dst.set_permissions(meta.permissions())
            .ctx("setting the mode of", &to)?;
    }
    // Anything else (a nested repository shows as a directory) is left alone.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_entries_are_sorted_into_their_kinds() {
        let out = b"M  staged.txt\0 M unstaged.txt\0MM both.txt\0?? new.txt\0?? .agent/threads/x/thread.json\0UU conflict.txt\0D  gone.txt\0";
        let c = parse_status(out);
        let names = |v: &[PathBuf]| -> Vec<String> {
            v.iter().map(|p| p.to_string_lossy().into_owned()).collect()
        };
        assert_eq!(names(&c.staged), ["staged.txt", "both.txt", "gone.txt"]);
        assert_eq!(names(&c.unstaged), ["unstaged.txt", "both.txt"]);
        assert_eq!(names(&c.untracked), ["new.txt"]);
        assert_eq!(names(&c.unmerged), ["conflict.txt"]);
    }
}
