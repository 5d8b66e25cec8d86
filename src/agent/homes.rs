//! Where each built-in agent keeps its own files (its sessions, its
//! configuration), as the agent itself finds them: its environment
//! variable, else its directory in the user's home.

use std::path::{Path, PathBuf};

/// Claude Code's configuration directory.
pub fn claude_home() -> Option<PathBuf> {
    env_dir("CLAUDE_CONFIG_DIR").or_else(|| Some(dirs::home_dir()?.join(".claude")))
}

/// Codex's home directory.
pub fn codex_home() -> Option<PathBuf> {
    env_dir("CODEX_HOME").or_else(|| Some(dirs::home_dir()?.join(".codex")))
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Gemini CLI's directory: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
pub fn gemini_home() -> Option<PathBuf> {
    env_dir("GEMINI_CLI_HOME")
        .or_else(dirs::home_dir)
        .map(|h| h.join(".gemini"))
}

/// Gemini's folders of the projects `roots` (`tmp/<project>/`): those whose
/// `.project_root` names one of them.
pub fn gemini_project_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let Some(tmp) = gemini_home().map(|h| h.join("tmp")) else {
        return Vec::new();
    };
    std::fs::read_dir(&tmp)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|dir| {
            std::fs::read_to_string(dir.join(".project_root"))
                .is_ok_and(|r| roots.iter().any(|root| same_dir(Path::new(r.trim()), root)))
        })
        .collect()
}

/// Whether `a` and `b` name the same directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}
