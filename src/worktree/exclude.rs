//! Keeping grove's own files out of `git status`.
//!
//! grove writes, inside a worktree, the symlinks and copies of
//! `worktreeHooks`. None of that is the user's work, so grove lists those
//! paths in the repository's `info/exclude` (shared by all its worktrees),
//! inside a block it manages. (Threads are kept out by a `.gitignore` in the
//! worktree's `.agent/threads/`, which covers every thread whoever wrote it,
//! and the copies of `.agent/config.json` and `.gitignore` by the worktree's
//! own `.agent/.gitignore`: an `info/exclude` entry would hide the main
//! checkout's config from `git add`.)
//!
//! The file is shared by every worktree and every grove process, so each
//! change is made under a lock file beside it, and every entry is escaped to
//! match exactly its one path: a path from a repository's config can never
//! add a rule of its own.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::git::cmd::Git;

const BEGIN: &str = "# >>> grove: files grove created in worktrees (managed; see grove README)";
const END: &str = "# <<< grove";

/// The `info/exclude` file of the repository containing `worktree`.
pub fn exclude_file(git: &Git, worktree: &Path) -> Result<PathBuf> {
    if let Some(repo) = crate::git::open(worktree) {
        return Ok(repo.commondir().join("info").join("exclude"));
    }
    let common = git.run(
        worktree,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    Ok(Path::new(&common).join("info").join("exclude"))
}

/// Adds root-anchored `patterns` (made by [`pattern_for`]) to grove's block
/// (once each).
pub fn add(file: &Path, patterns: &[String]) -> Result<()> {
    if let Some(bad) = patterns.iter().find(|p| p.chars().any(char::is_control)) {
        return Err(crate::Error::Other(format!(
            "refusing to write {bad:?} into {}: it holds a control character",
            file.display()
        )));
    }
    edit(file, |lines| {
        for p in patterns {
            if !lines.contains(p) {
                lines.push(p.clone());
            }
        }
    })
}

/// Removes `patterns` from grove's block.
pub fn remove(file: &Path, patterns: &[String]) -> Result<()> {
    edit(file, |lines| lines.retain(|l| !patterns.contains(l)))
}

fn edit(file: &Path, change: impl FnOnce(&mut Vec<String>)) -> Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).ctx("creating", dir)?;
    }
    let _lock = crate::fsutil::FileLock::acquire(&crate::fsutil::lock_path_for(file))?;
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(crate::Error::io("reading", file, e)),
    };
    let mut before = Vec::new();
    let mut block = Vec::new();
    let mut after = Vec::new();
    let mut state = 0;
    for line in text.lines() {
        match (state, line) {
            (0, BEGIN) => state = 1,
            (1, END) => state = 2,
            (0, _) => before.push(line.to_string()),
            (1, _) => block.push(line.to_string()),
            _ => after.push(line.to_string()),
        }
    }
    change(&mut block);
    let mut out = before;
    if !block.is_empty() {
        out.push(BEGIN.to_string());
        out.extend(block);
        out.push(END.to_string());
    }
    out.extend(after);
    let mut content = out.join("\n");
    if !content.is_empty() {
        content.push('\n');
    }
    if content == text {
        return Ok(());
    }
    crate::fsutil::write_atomic(file, content.as_bytes())
}

/// Removes temp files a killed writer left beside `file`, under the lock
/// every writer holds. Returns what was removed.
pub fn remove_stale_temps(file: &Path) -> Result<Vec<PathBuf>> {
    let Some(dir) = file.parent().filter(|d| d.is_dir()) else {
        return Ok(Vec::new());
    };
    let _lock = crate::fsutil::FileLock::acquire(&crate::fsutil::lock_path_for(file))?;
    crate::fsutil::remove_stale_temps(dir)
}

/// The pattern for a path relative to the worktree root: anchored, `/`
/// separated, matching exactly that one path. Every character `gitignore`
/// gives a meaning to is escaped (`\\`, `*`, `?`, `[`, a trailing space);
/// a control character (a newline would start a rule of its own) is refused.
///
/// ```
/// use std::path::Path;
/// use grove::worktree::exclude::pattern_for;
/// assert_eq!(pattern_for(Path::new("a/*.env")).unwrap(), "/a/\\*.env");
/// assert_eq!(pattern_for(Path::new("!x ")).unwrap(), "/!x\\ ");
/// assert!(pattern_for(Path::new("x\nsrc")).is_err());
/// ```
pub fn pattern_for(relative: &Path) -> Result<String> {
    let text = relative.to_string_lossy();
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(crate::Error::Other(format!(
            "{text:?} holds the control character {c:?}; it cannot be written into info/exclude"
        )));
    }
    let mut out = String::from("/");
    let chars: Vec<char> = text.chars().collect();
    let last_kept = chars.iter().rposition(|c| *c != ' ');
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' if cfg!(windows) => out.push('/'),
            '\\' | '*' | '?' | '[' => {
                out.push('\\');
                out.push(c);
            }
            ' ' if last_kept.is_none_or(|k| i > k) => out.push_str("\\ "),
            _ => out.push(c),
        }
    }
    Ok(out)
}
