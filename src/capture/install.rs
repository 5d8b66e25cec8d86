//! Installing the agents' own project-scoped hooks in a worktree, so each
//! turn runs `grove capture claude|codex`.
//!
//! - Claude Code: `.claude/settings.local.json` (the per-user, never
//!   committed settings file), merged into what is there: the user's own
//!   hooks and settings stay as they are; grove's entries (the commands
//!   running `grove … capture`) are replaced.
//! - Codex: `.codex/hooks.json`, the same way; when the repository tracks
//!   that file, `.codex/config.toml` if there is none (grove writes its
//!   `[hooks]` tables there), else nothing (capture then happens when the
//!   agent grove launched exits, and at `list` and `show`).
//!
//! A file the repository tracks is never changed. What grove adds is kept
//! out of `git status` by a `.gitignore` in `.claude/` or `.codex/` that
//! names only grove's file and itself (written only when there is no
//! `.gitignore` there; otherwise the path goes into the repository's
//! `info/exclude`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::agent::Native;
use crate::error::{Error, Result};

/// How long an agent lets one capture hook run (seconds). Capture itself
/// gives up waiting well before.
pub const HOOK_TIMEOUT_SECS: u64 = 15;

/// What an installation did.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Why live capture could not be installed, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The events each agent's hooks are installed for.
fn events(native: Native) -> &'static [&'static str] {
    match native {
        Native::Claude => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Notification",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ],
        Native::Codex => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
        ],
    }
}

/// Events whose hooks take a tool-name matcher.
fn takes_matcher(native: Native, event: &str) -> bool {
    native == Native::Claude && matches!(event, "PreToolUse" | "PostToolUse")
}

/// The command a hook runs: grove itself by its absolute path, quoted for
/// the shell the agent runs hooks with.
pub fn hook_command(grove: &Path, native: Native, thread: &str) -> String {
    format!(
        "{} capture {} --thread {}",
        shell_quote(&grove.to_string_lossy()),
        native.format(),
        shell_quote(thread)
    )
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether `command` is one of grove's capture hooks.
fn is_grove_hook(command: &str, native: Native) -> bool {
    command.contains(&format!(" capture {}", native.format())) && command.contains("grove")
}

/// Installs `native`'s hooks in `worktree`, capturing into `thread`.
pub fn install(native: Native, worktree: &Path, thread: &str, grove: &Path) -> Result<Installed> {
    let dir = worktree.join(native_dir(native));
    let json_file = dir.join(json_name(native));
    let mut out = Installed::default();
    if !tracked(worktree, &json_file) {
        crate::fsutil::real_dir(worktree, &dir)?;
        let command = hook_command(grove, native, thread);
        edit_json(&json_file, |root| merge_hooks(root, native, Some(&command)))?;
        out.files.push(json_file.clone());
        out.files.extend(hide(worktree, &dir, &json_file)?);
        return Ok(out);
    }
    if native == Native::Codex {
        let toml = dir.join("config.toml");
        if std::fs::symlink_metadata(&toml).is_err() {
            crate::fsutil::real_dir(worktree, &dir)?;
            let command = hook_command(grove, native, thread);
            crate::fsutil::write_new(&toml, toml_hooks(native, &command).as_bytes())?;
            out.files.push(toml.clone());
            out.files.extend(hide(worktree, &dir, &toml)?);
            return Ok(out);
        }
        out.skipped = Some(format!(
            "{} and {} are the repository's own; grove changes neither, so Codex's turns are \
             captured when the agent grove launched exits and at `grove list`/`grove show`",
            json_file.display(),
            toml.display()
        ));
        return Ok(out);
    }
    out.skipped = Some(format!(
        "{} is tracked by the repository; grove does not change it, so the turns are captured \
         when the agent grove launched exits and at `grove list`/`grove show`",
        json_file.display()
    ));
    Ok(out)
}

/// Removes grove's hooks for `native` from `worktree`; returns the files
/// changed or removed.
pub fn uninstall(native: Native, worktree: &Path) -> Result<Vec<PathBuf>> {
    let dir = worktree.join(native_dir(native));
    let mut changed = Vec::new();
    let json_file = dir.join(json_name(native));
    if std::fs::symlink_metadata(&json_file).is_ok() && !tracked(worktree, &json_file) {
        crate::fsutil::real_dir(worktree, &dir)?;
        let left = edit_json(&json_file, |root| merge_hooks(root, native, None))?;
        if left.as_object().is_some_and(Map::is_empty) {
            std::fs::remove_file(&json_file).map_err(|e| Error::io("removing", &json_file, e))?;
        }
        changed.push(json_file);
    }
    let toml = dir.join("config.toml");
    if native == Native::Codex
        && let Ok(text) = std::fs::read_to_string(&toml)
        && text.starts_with(TOML_MARK)
    {
        std::fs::remove_file(&toml).map_err(|e| Error::io("removing", &toml, e))?;
        changed.push(toml);
    }
    let ignore = dir.join(".gitignore");
    if std::fs::read_to_string(&ignore).is_ok_and(|t| t.starts_with(IGNORE_MARK))
        && !dir.join(json_name(native)).exists()
        && !dir.join("config.toml").exists()
    {
        let _ = std::fs::remove_file(&ignore);
    }
    Ok(changed)
}

/// Whether grove's hooks for `native` are in `worktree`.
pub fn installed(native: Native, worktree: &Path) -> bool {
    let dir = worktree.join(native_dir(native));
    let in_json = crate::fsutil::read(&dir.join(json_name(native)))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| {
            v.get("hooks").and_then(Value::as_object).is_some_and(|h| {
                h.values()
                    .flat_map(|g| g.as_array().into_iter().flatten())
                    .flat_map(|g| {
                        g.get("hooks")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .any(|e| {
                        e.get("command")
                            .and_then(Value::as_str)
                            .is_some_and(|c| is_grove_hook(c, native))
                    })
            })
        });
    in_json
        || std::fs::read_to_string(dir.join("config.toml")).is_ok_and(|t| t.starts_with(TOML_MARK))
}

fn native_dir(native: Native) -> &'static str {
    match native {
        Native::Claude => ".claude",
        Native::Codex => ".codex",
    }
}

fn json_name(native: Native) -> &'static str {
    match native {
        Native::Claude => "settings.local.json",
        Native::Codex => "hooks.json",
    }
}

/// Reads `file` (a JSON object, or nothing), applies `change`, writes it
/// back atomically when it changed. A file that is not a JSON object is an
/// error: it is the user's, and grove does not guess.
fn edit_json(file: &Path, change: impl FnOnce(&mut Value)) -> Result<Value> {
    // The lock lives in grove's data directory: nothing of grove's in the
    // user's `.claude/` but the file itself.
    let hash = xxhash_rust::xxh3::xxh3_64(file.as_os_str().as_encoded_bytes());
    let lock = crate::home::data_dir()?
        .join("locks")
        .join(format!("hooks-{hash:016x}.lock"));
    let _lock = crate::fsutil::FileLock::acquire(&lock)?;
    let mut root = match crate::fsutil::open_read_opt(file)? {
        None => Value::Object(Map::new()),
        Some(f) => {
            let v: Value = serde_json::from_reader(std::io::BufReader::new(f)).map_err(|e| {
                Error::parse(
                    file,
                    format!("not valid JSON ({e}); grove leaves it alone — fix it, then install the capture hooks again"),
                )
            })?;
            if !v.is_object() {
                return Err(Error::parse(
                    file,
                    "expected a JSON object; grove leaves it alone",
                ));
            }
            v
        }
    };
    let before = root.clone();
    change(&mut root);
    if root != before {
        let mut bytes = serde_json::to_vec_pretty(&root)
            .map_err(|e| Error::Other(format!("writing {}: {e}", file.display())))?;
        bytes.push(b'\n');
        crate::fsutil::write_atomic(file, &bytes)?;
    }
    Ok(root)
}

/// Drops grove's hooks from `root.hooks`, then adds `command` (when given)
/// for every event. Groups and entries of the user's are kept.
fn merge_hooks(root: &mut Value, native: Native, command: Option<&str>) {
    let Some(obj) = root.as_object_mut() else {
        return;
    };
    let hooks = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    if !hooks.is_object() {
        // Not a hooks table the agent would read either: left as it is.
        return;
    }
    let table = hooks.as_object_mut().expect("checked above");
    for groups in table.values_mut() {
        let Some(list) = groups.as_array_mut() else {
            continue;
        };
        for group in list.iter_mut() {
            if let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                entries.retain(|e| {
                    !e.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| is_grove_hook(c, native))
                });
            }
        }
        list.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|e| !e.is_empty())
        });
    }
    table.retain(|_, g| g.as_array().is_none_or(|a| !a.is_empty()));
    if let Some(command) = command {
        for event in events(native) {
            let mut group = Map::new();
            if takes_matcher(native, event) {
                group.insert("matcher".into(), Value::from("*"));
            }
            group.insert(
                "hooks".into(),
                json!([{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS}]),
            );
            let list = table
                .entry(event.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                list.push(Value::Object(group));
            }
        }
    }
    if table.is_empty() {
        obj.remove("hooks");
    }
}

const TOML_MARK: &str =
    "# Written by grove: Codex hooks that capture each turn into the task's thread";

fn toml_hooks(native: Native, command: &str) -> String {
    let mut out = format!("{TOML_MARK}\n# (`grove capture uninstall` removes this file).\n");
    let command = format!("\"{}\"", command.replace('\\', "\\\\").replace('"', "\\\""));
    for event in events(native) {
        out.push_str(&format!(
            "\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {command}\ntimeout = {HOOK_TIMEOUT_SECS}\n"
        ));
    }
    out
}

const IGNORE_MARK: &str = "# Created by grove: keeps its capture hooks out of git status.";

/// Keeps `file` (in `dir`) out of `git status`; returns a file written.
fn hide(worktree: &Path, dir: &Path, file: &Path) -> Result<Option<PathBuf>> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ignore = dir.join(".gitignore");
    match std::fs::read_to_string(&ignore) {
        Ok(text) if text.starts_with(IGNORE_MARK) => {
            if !text.lines().any(|l| l == format!("/{name}")) {
                let mut text = text;
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!("/{name}\n"));
                crate::fsutil::write_atomic(&ignore, text.as_bytes())?;
            }
            Ok(Some(ignore))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = format!("{IGNORE_MARK}\n/.gitignore\n/{name}\n");
            crate::fsutil::write_new(&ignore, text.as_bytes())?;
            Ok(Some(ignore))
        }
        // The repository's own .gitignore there: the repository's exclude
        // file takes the path instead.
        _ => {
            let git = crate::gitcmd::Git::find()?;
            let exclude = crate::worktree::exclude::exclude_file(&git, worktree)?;
            let relative = file.strip_prefix(worktree).unwrap_or(file);
            let pattern = crate::worktree::exclude::pattern_for(relative)?;
            crate::worktree::exclude::add(&exclude, &[pattern])?;
            Ok(None)
        }
    }
}

/// Whether the repository of `worktree` tracks `file`.
fn tracked(worktree: &Path, file: &Path) -> bool {
    let Ok(repo) = git2::Repository::open(worktree) else {
        return false;
    };
    let Ok(index) = repo.index() else {
        return false;
    };
    let Ok(relative) = file.strip_prefix(worktree) else {
        return false;
    };
    index.get_path(relative, 0).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_users_hooks_and_replaces_groves() {
        let mut root = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"Stop": [
                {"hooks": [{"type": "command", "command": "say done"}]},
                {"hooks": [{"type": "command", "command": "/old/grove capture claude --thread x"}]}
            ]}
        });
        merge_hooks(
            &mut root,
            Native::Claude,
            Some("/new/grove capture claude --thread y"),
        );
        let stop = root["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{root}");
        assert_eq!(stop[0]["hooks"][0]["command"], "say done");
        assert_eq!(
            stop[1]["hooks"][0]["command"],
            "/new/grove capture claude --thread y"
        );
        assert_eq!(root["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(root["permissions"]["allow"][0], "Bash(ls)");
        merge_hooks(&mut root, Native::Claude, None);
        assert_eq!(root["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert!(root["hooks"].get("PreToolUse").is_none());
    }

    #[test]
    fn hook_commands_are_quoted_for_the_shell() {
        assert_eq!(
            hook_command(Path::new("/opt/my tools/grove"), Native::Codex, "abc"),
            "'/opt/my tools/grove' capture codex --thread abc"
        );
    }
}
