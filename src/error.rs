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

    /// An incremental import cannot go on from where the last one stopped
    /// (the source was rewritten, a thread is gone or moved on): the source
    /// is imported again from its start. Never reaches the user.
    #[error("importing again from the start: {0}")]
    Restart(String),

    /// Anything else, with a message that says what and how to fix it.
    #[error("{0}")]
    Other(String),
}

impl Error {
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
