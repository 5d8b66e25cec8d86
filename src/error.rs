//! The library's error type.
//!
//! Every variant that concerns a file names it, so the binary can print
//! "what, where, how to fix" without guessing.

use std::path::PathBuf;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors raised by grove's library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error while touching `path`.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A JSON file (or line) that is not valid for its schema.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        path: PathBuf,
        /// 1-based line number for JSON Lines files.
        line: Option<u64>,
        message: String,
    },

    /// `specVersion` names a MAJOR version grove cannot read.
    #[error(
        "{path}: specVersion \"{version}\" is not supported (grove reads ATSF 1.x); \
         upgrade grove to read this file — it was left untouched"
    )]
    UnsupportedVersion { path: PathBuf, version: String },

    /// A thread id that is not a single safe path component.
    #[error("invalid thread id {id:?}: {reason}")]
    InvalidThreadId { id: String, reason: &'static str },

    /// No thread matched the given id or prefix.
    #[error("no thread matches {query:?} in {dir}; `grove list` shows the threads there")]
    ThreadNotFound { query: String, dir: PathBuf },

    /// A prefix matched more than one thread.
    #[error("{query:?} is ambiguous; it matches: {}", candidates.join(", "))]
    AmbiguousThread {
        query: String,
        candidates: Vec<String>,
    },

    /// A thread directory that already exists.
    #[error("thread {id} already exists at {path}")]
    ThreadExists { id: String, path: PathBuf },

    /// A message or block that breaks a rule of the format.
    #[error("invalid message: {0}")]
    InvalidMessage(String),

    /// `thread.json` changed (its version `v` moved) between grove reading
    /// it and writing it back.
    #[error(
        "thread {id} was changed by someone else while grove worked on it \
         (version {expected} read, {found} found); nothing was written — run the command again"
    )]
    Conflict {
        id: String,
        expected: u64,
        found: u64,
    },

    /// A symbolic link where grove reads or writes its own data (a thread
    /// directory or file, a worktree's `.agent`). A cloned repository could
    /// point it anywhere, so grove never follows it.
    #[error(
        "{path} is a symbolic link{}; grove does not follow links inside its data \
         (a cloned repository could point it anywhere). Replace it with a real file or \
         directory, or remove it",
        if target.as_os_str().is_empty() { String::new() } else { format!(" (to {})", target.display()) }
    )]
    Symlink { path: PathBuf, target: PathBuf },

    /// `messages.jsonl` is missing or shorter than `thread.json` says: a log
    /// only grows, so grove refuses to write rather than start a new one.
    #[error(
        "{path} is {found}, but thread.json records {expected}; the log only grows, so \
         nothing was written. {}",
        match cache { Some(c) => format!("grove's cache holds a copy in {}; `grove repair {id}` restores it", c.display()), None => format!("`grove repair {id}` restores it from grove's cache when the cache holds it, or recounts the log as it is") }
    )]
    LogShrunk {
        id: String,
        path: PathBuf,
        /// What the log is (`missing`, `1204 bytes long`).
        found: String,
        /// What thread.json describes (`3071 bytes`, `20 messages`).
        expected: String,
        /// The cache's copy, when known.
        cache: Option<PathBuf>,
    },

    /// A git operation failed.
    #[error("git: {0}")]
    Git(String),

    /// grove will not do this because it could lose work; the message says why
    /// and how to override.
    #[error("{0}")]
    Refused(String),

    /// grove will not do this because it could lose work, and an option of
    /// the operation or another command would get past it: the message
    /// names those as [`Hint`]s, which each front end words in its own terms
    /// (the command line: `--force`), so the library names no flags.
    #[error("{0}")]
    Hinted(Hinted),

    /// An incremental import cannot go on from where the last one stopped
    /// (the source was rewritten, a thread is gone or moved on): the source
    /// is imported again from its start. Never reaches the user.
    #[error("importing again from the start: {0}")]
    Restart(String),

    /// Anything else, with a message that says what and how to fix it.
    #[error("{0}")]
    Other(String),
}

/// What would get past a refusal: an option of the operation, or a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// Do it anyway, work or no work (`rm`, `delete`).
    Force,
    /// End the processes at work in the worktree first (`rm`).
    Reap,
    /// Delete the threads with the worktree instead of keeping them (`rm`).
    Purge,
    /// Send a copy with each secret replaced (`push`, `export`).
    Redact,
    /// Send a thread as it is, secrets and all (`push`, `export`).
    AllowSecrets,
    /// Remove the task by force (`grove rm --force`).
    RemoveForce,
    /// Remove the task (`grove rm`).
    Remove,
    /// List a thread's secrets (`grove scan`).
    Scan,
    /// Run the project's setup commands without asking (`--trust`).
    Trust,
    /// Leave the project's setup out (`--no-hooks`).
    NoHooks,
    /// Leave the submodules out (`--no-submodules`).
    NoSubmodules,
}

impl Hint {
    const ALL: [Hint; 11] = [
        Hint::Force,
        Hint::Reap,
        Hint::Purge,
        Hint::Redact,
        Hint::AllowSecrets,
        Hint::RemoveForce,
        Hint::Remove,
        Hint::Scan,
        Hint::Trust,
        Hint::NoHooks,
        Hint::NoSubmodules,
    ];

    /// The marker standing for the hint in a [`Hinted`] message.
    pub fn marker(self) -> &'static str {
        match self {
            Hint::Force => "{force}",
            Hint::Reap => "{reap}",
            Hint::Purge => "{purge}",
            Hint::Redact => "{redact}",
            Hint::AllowSecrets => "{allow-secrets}",
            Hint::RemoveForce => "{remove-force}",
            Hint::Remove => "{remove}",
            Hint::Scan => "{scan}",
            Hint::Trust => "{trust}",
            Hint::NoHooks => "{no-hooks}",
            Hint::NoSubmodules => "{no-submodules}",
        }
    }

    /// The hint in words of no particular front end.
    pub fn generic(self) -> String {
        match self {
            Hint::Force => "the force option",
            Hint::Reap => "the reap option",
            Hint::Purge => "the purge option",
            Hint::Redact => "the redact option",
            Hint::AllowSecrets => "the allow-secrets option",
            Hint::RemoveForce => "removing the task with the force option",
            Hint::Remove => "removing the task",
            Hint::Scan => "a secret scan",
            Hint::Trust => "the trust option",
            Hint::NoHooks => "the no-hooks option",
            Hint::NoSubmodules => "the no-submodules option",
        }
        .to_string()
    }
}

/// How the front end words hints, once it has said so
/// ([`set_hint_words`]); [`Hint::generic`] until then.
static HINT_WORDS: std::sync::OnceLock<fn(Hint) -> String> = std::sync::OnceLock::new();

/// Has every [`Hinted`] message, wherever it is displayed, word its hints
/// with `words` — the command line's flags and commands, say. Set once, at
/// start-up; later calls change nothing.
pub fn set_hint_words(words: fn(Hint) -> String) {
    let _ = HINT_WORDS.set(words);
}

fn hint_words() -> fn(Hint) -> String {
    HINT_WORDS.get().copied().unwrap_or(Hint::generic)
}

/// A refusal whose message names what would get past it as [`Hint`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hinted {
    text: String,
}

impl Hinted {
    /// `text`, with a [`Hint::marker`] where each hint goes.
    pub fn new(text: impl Into<String>) -> Self {
        Hinted { text: text.into() }
    }

    /// The hints the message gives, in the order of [`Hint`].
    pub fn hints(&self) -> Vec<Hint> {
        Hint::ALL
            .into_iter()
            .filter(|h| self.text.contains(h.marker()))
            .collect()
    }

    /// The message, each hint worded by `word`.
    pub fn render(&self, word: impl Fn(Hint) -> String) -> String {
        let mut out = self.text.clone();
        for hint in self.hints() {
            out = out.replace(hint.marker(), &word(hint));
        }
        out
    }
}

impl std::fmt::Display for Hinted {
    /// The message, its hints worded as the front end said
    /// ([`set_hint_words`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(hint_words()))
    }
}

impl Error {
    /// A refusal that names what would get past it (see [`Hinted`]).
    pub fn hinted(text: impl Into<String>) -> Self {
        Error::Hinted(Hinted::new(text))
    }

    /// Wraps an `io::Error` with the action and the path it concerned.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// A parse error for a whole file.
    pub fn parse(path: impl Into<PathBuf>, message: impl ToString) -> Self {
        Error::Parse {
            path: path.into(),
            line: None,
            message: message.to_string(),
        }
    }
}

impl From<git2::Error> for Error {
    fn from(e: git2::Error) -> Self {
        Error::Git(e.message().to_string())
    }
}

/// Extension to attach a path and an action to `io::Result`s.
pub(crate) trait IoContext<T> {
    fn ctx(self, action: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, action: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::io(action, path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_its_hints_and_each_front_end_words_them() {
        let refusal =
            Hinted::new("not removing x: work. Pass {force}, or {reap}; `{remove-force}` too");
        assert_eq!(
            refusal.hints(),
            [Hint::Force, Hint::Reap, Hint::RemoveForce]
        );
        let cli = refusal.render(|h| match h {
            Hint::Force => "--force".into(),
            Hint::Reap => "--reap".into(),
            _ => "grove rm --force".into(),
        });
        assert_eq!(
            cli,
            "not removing x: work. Pass --force, or --reap; `grove rm --force` too"
        );
        let generic = refusal.render(Hint::generic);
        assert!(
            !generic.contains("--") && !generic.contains('{'),
            "{generic}"
        );
    }
}
