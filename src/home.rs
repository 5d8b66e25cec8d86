//! grove's own data directory: worktrees, the thread cache, trust records.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// `$GROVE_HOME`, else the platform data directory + `grove`
/// (`~/.local/share/grove` on Linux, `~/Library/Application Support/grove`
/// on macOS, `%APPDATA%\grove` on Windows).
pub fn data_dir() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("GROVE_HOME").filter(|v| !v.is_empty()) {
        // A relative GROVE_HOME is made absolute once, against the directory
        // grove started in: not against each directory it works in.
        static ABSOLUTE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let home = PathBuf::from(home);
        if home.is_absolute() {
            return Ok(home);
        }
        return Ok(ABSOLUTE
            .get_or_init(|| {
                std::env::current_dir()
                    .map(|cwd| cwd.join(&home))
                    .unwrap_or(home)
            })
            .clone());
    }
    dirs::data_dir()
        .map(|d| d.join("grove"))
        .ok_or_else(|| Error::Other("no data directory on this platform; set GROVE_HOME".into()))
}

/// The `GROVE_HOME` to pass on to the processes grove starts (hooks, the
/// agent and its hooks), when it is set: made absolute, as a relative one
/// means grove's start directory, not the worktree they run in.
pub fn home_for_children() -> Option<PathBuf> {
    std::env::var_os("GROVE_HOME").filter(|v| !v.is_empty())?;
    data_dir().ok()
}

/// A directory name for a repository that is readable and unique:
/// `<name>-<8 hex of the root's path hash>`, so two repositories with the
/// same name never share a folder.
pub fn repo_key(main_root: &Path) -> String {
    let name = main_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "repo".to_string());
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = Sha256::digest(main_root.to_string_lossy().as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}", safe.trim_start_matches('.'))
}

/// `<data>/worktrees/<repo key>`.
pub fn worktrees_dir(main_root: &Path) -> Result<PathBuf> {
    Ok(data_dir()?.join("worktrees").join(repo_key(main_root)))
}

/// `<data>/cache`.
pub fn cache_root() -> Result<PathBuf> {
    Ok(data_dir()?.join("cache"))
}

/// `<data dir>/worktrees/`, resolved: where grove puts every task's
/// worktree unless told otherwise, so a worktree under it is a task's
/// (grove's own choice of place, not anything the worktree holds).
pub(crate) fn grove_worktrees_dir() -> Option<PathBuf> {
    let dir = data_dir().ok()?.join("worktrees");
    Some(dir.canonicalize().unwrap_or(dir))
}
