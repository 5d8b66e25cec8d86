//! Where each built-in agent keeps its own files (its sessions, its
//! configuration), as the agent itself finds them: its environment
//! variable, else its directory in the user's home.

use std::path::PathBuf;

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
