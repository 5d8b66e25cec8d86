//! A port and an environment per task: `worktreeHooks.ports` (ports from
//! [`crate::ports`], recorded under `metadata.grove.ports`) and
//! `worktreeHooks.env` (values with placeholders, written to `envFile` in
//! the worktree, never over an existing file).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use crate::atsf::WorktreeHooks;
use crate::setup::{HookKind, HookOutcome, HookStatus};
use crate::store::Thread;

/// The default `envFile`.
pub const DEFAULT_ENV_FILE: &str = ".env.local";

/// What the placeholders of `env` stand for in one task.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    pub ports: Vec<u16>,
    pub branch: String,
    pub thread_id: String,
    pub worktree: String,
}

impl Placeholders {
    /// `template` with `{port}`, `{port1}`…, `{branch}`, `{threadId}` and
    /// `{worktree}` filled; any other `{…}` is left as it is.
    pub fn render(&self, template: &str) -> String {
        let mut out = template
            .replace("{branch}", &self.branch)
            .replace("{threadId}", &self.thread_id)
            .replace("{worktree}", &self.worktree);
        // Longest numbers first: `{port12}` before `{port1}`.
        for (i, p) in self.ports.iter().enumerate().rev() {
            out = out.replace(&format!("{{port{}}}", i + 1), &p.to_string());
        }
        if let Some(first) = self.ports.first() {
            out = out.replace("{port}", &first.to_string());
        }
        out
    }

    /// The values of `env`, rendered.
    pub fn values(&self, env: &BTreeMap<String, String>) -> Vec<(String, String)> {
        env.iter()
            .map(|(k, v)| (k.clone(), self.render(v)))
            .collect()
    }
}

fn outcome(kind: HookKind, label: &str, start: Instant, result: Result<(), String>) -> HookOutcome {
    match result {
        Ok(()) => HookOutcome {
            kind,
            label: label.to_string(),
            status: HookStatus::Ok,
            exit_code: None,
            duration_ms: start.elapsed().as_millis() as u64,
            log_file: None,
            reason: None,
        },
        Err(reason) => HookOutcome {
            status: HookStatus::Failed,
            reason: Some(reason),
            ..outcome(kind, label, start, Ok(()))
        },
    }
}

/// Gives the task its `ports` and records them on its thread.
pub fn ports(
    cfg: &WorktreeHooks,
    thread: &Thread,
    worktree: &Path,
) -> Option<(HookOutcome, Vec<u16>)> {
    let n = cfg.ports.filter(|n| *n > 0)? as usize;
    let start = Instant::now();
    let label = format!("{n} port(s)");
    let result = crate::ports::allocate(thread.id(), worktree, n)
        .map_err(|e| e.to_string())
        .and_then(|ports| {
            thread
                .update_meta(|m| m.grove_mut().set_ports(&ports))
                .map(|_| ports)
                .map_err(|e| format!("the ports were not recorded: {e}"))
        });
    Some(match result {
        Ok(ports) => {
            let label = format!(
                "ports {}",
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (outcome(HookKind::Ports, &label, start, Ok(())), ports)
        }
        Err(e) => (outcome(HookKind::Ports, &label, start, Err(e)), Vec::new()),
    })
}

/// Writes `env` to `envFile` in `worktree`; the outcome and, when written,
/// the file's path relative to the worktree.
pub fn env_file(
    cfg: &WorktreeHooks,
    values: &Placeholders,
    worktree: &Path,
) -> Option<(HookOutcome, Option<std::path::PathBuf>)> {
    let env = cfg.env.as_ref().filter(|e| !e.is_empty())?;
    let name = cfg.env_file.as_deref().unwrap_or(DEFAULT_ENV_FILE);
    let start = Instant::now();
    let label = format!("env {name}");
    let rel = match crate::setup::checked_hook_path(name) {
        Ok(rel) => rel,
        Err(e) => {
            return Some((
                outcome(
                    HookKind::Env,
                    &label,
                    start,
                    Err(format!("envFile refused: {e}")),
                ),
                None,
            ));
        }
    };
    if let Some(bad) = env.keys().find(|k| !is_env_name(k)) {
        let why =
            format!("{bad:?} is not a variable name (letters, digits and _, not first a digit)");
        return Some((outcome(HookKind::Env, &label, start, Err(why)), None));
    }
    let text: String = values
        .values(env)
        .iter()
        .map(|(k, v)| format!("{k}={}\n", quoted(v)))
        .collect();
    let path = worktree.join(&rel);
    if std::fs::symlink_metadata(&path).is_ok() {
        return Some((
            HookOutcome {
                duration_ms: start.elapsed().as_millis() as u64,
                ..HookOutcome::skipped(
                    HookKind::Env,
                    label,
                    format!("{} already exists; left untouched", rel.display()),
                )
            },
            None,
        ));
    }
    let written = crate::fsutil::real_dir(worktree, path.parent().unwrap_or(worktree))
        .map_err(|e| e.to_string())
        .and_then(|()| crate::fsutil::write_new(&path, text.as_bytes()).map_err(|e| e.to_string()))
        .and_then(|made| {
            made.then_some(())
                .ok_or_else(|| format!("{} appeared meanwhile; left untouched", rel.display()))
        });
    let ok = written.is_ok();
    Some((
        outcome(HookKind::Env, &label, start, written),
        ok.then_some(rel),
    ))
}

/// Whether `k` is a variable name a shell and a dotenv file accept.
pub fn is_env_name(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Variables that make a shell, the dynamic loader or a common runtime run
/// something other than what was typed (at the next prompt, at the next
/// program started): a repository's `env` may not set them in the user's
/// shell through `grove env`.
const RUNS_CODE: &[&str] = &[
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "CDPATH",
    "HOME",
    "SHELL",
    "SHELLOPTS",
    "BASHOPTS",
    "GLOBIGNORE",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT",
    "RPROMPT",
    "RPS1",
    "ZDOTDIR",
    "FPATH",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "TERMINFO",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "GCONV_PATH",
];

/// Prefixes of such variables: the loader's, git's (`GIT_SSH_COMMAND`,
/// `GIT_EXEC_PATH`), exported shell functions, fish's own, and grove's
/// (`GROVE_HOME` would move grove's data).
const RUNS_CODE_PREFIXES: &[&str] = &["LD_", "DYLD_", "GIT_", "BASH_FUNC_", "fish_", "GROVE_"];

/// Why `k` may not be set in the user's shell from a repository's `env`,
/// if it may not: not a variable name, or a variable that changes what the
/// shell or the programs it starts run.
pub fn refused_for_shell(k: &str) -> Option<String> {
    if !is_env_name(k) {
        return Some(format!(
            "{k:?} is not a variable name (letters, digits and _, not first a digit)"
        ));
    }
    let upper = k.to_ascii_uppercase();
    let runs_code = RUNS_CODE.contains(&k)
        || RUNS_CODE_PREFIXES
            .iter()
            .any(|p| upper.starts_with(&p.to_ascii_uppercase()));
    runs_code.then(|| {
        format!(
            "{k} changes what the shell or the programs it starts run, so a repository may not set it \
             in your shell"
        )
    })
}

/// A value as dotenv files and shells read it: bare when plain, else in
/// double quotes with `\`, `"`, `$`, `` ` `` and newlines escaped.
pub fn quoted(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+,=".contains(c))
    {
        return v.to_string();
    }
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' | '"' | '$' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_and_values_quote() {
        let p = Placeholders {
            ports: (1..=12).map(|i| 30000 + i).collect(),
            branch: "grove/ab".into(),
            thread_id: "ab".into(),
            worktree: "/w".into(),
        };
        assert_eq!(
            p.render(
                "http://localhost:{port}/{port1}/{port12}/{branch}/{threadId}{worktree}/{other}"
            ),
            "http://localhost:30001/30001/30012/grove/ab/ab/w/{other}"
        );
        assert_eq!(quoted("3000"), "3000");
        assert_eq!(quoted("a b$c\"\n"), "\"a b\\$c\\\"\\n\"");
    }
}
