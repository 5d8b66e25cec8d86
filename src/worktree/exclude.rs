//! Keeping grove's own files out of `git status`.
//!
//! grove writes, inside a worktree, the thread directory, possibly copies of
//! `.agent/config.json` and `.agent/.gitignore`, and the symlinks of
//! `worktreeHooks`. None of that is the user's work, so grove lists those
//! paths in the repository's `info/exclude` (shared by all its worktrees),
//! inside a block it manages. A user's own `.gitignore` rules still win:
//! `!threads/*/thread.json` in `.agent/.gitignore` keeps thread metadata visible.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::gitcmd::Git;

const BEGIN: &str = "# >>> grove: files grove created in worktrees (managed; see grove README)";
const END: &str = "# <<< grove";

/// The `info/exclude` file of the repository containing `worktree`.
pub fn exclude_file(git: &Git, worktree: &Path) -> Result<PathBuf> {
    if let Ok(repo) = git2::Repository::open(worktree) {
        return Ok(repo.commondir().join("info").join("exclude"));
    }
    let common = git.run(
        worktree,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    Ok(Path::new(&common).join("info").join("exclude"))
}

/// Adds root-anchored `patterns` to grove's block (once each).
pub fn add(file: &Path, patterns: &[String]) -> Result<()> {
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
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).ctx("creating", dir)?;
    }
    crate::fsutil::write_atomic(file, content.as_bytes())
}

/// The pattern for a path relative to the worktree root: anchored, `/` separated.
/// Glob characters in the name are escaped so the pattern matches only that path.
pub fn pattern_for(relative: &Path) -> String {
    let mut out = String::from("/");
    for c in relative.to_string_lossy().chars() {
        match c {
            '\\' if cfg!(windows) => out.push('/'),
            '*' | '?' | '[' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}
