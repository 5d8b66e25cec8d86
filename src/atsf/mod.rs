//! The Agent Thread Storage Format (ATSF) v1.1: its files, their types, and
//! the rules for reading and writing them byte-for-byte deterministically.
//!
//! Every type keeps the fields it does not know in an `extra` map that is
//! written back unchanged, so a thread another tool wrote survives grove
//! touching it (the spec's round-trip rule).

pub mod anthropic;
mod checkpoint;
mod config;
mod content;
pub mod grove;
mod json;
mod keys;
mod message;
mod relationship;
mod thread;
mod time;
mod version;

pub use checkpoint::GitState;
pub use config::{Config, CreatedBy, Defaults, PostSetupCommand, SymlinkHook, WorktreeHooks};
pub use content::{ContentBlock, ImageBlock};
pub(crate) use json::strip_bom;
pub use json::{json_escaped, parse_json, parse_message_line, read_json_file, to_line, to_pretty};
pub use keys::{NearMiss, near_misses};
pub use message::{
    COMPLETES_KEY, Diff, Message, Role, Tokens, ToolCall, ToolStatus, completion, completion_id,
};
pub use relationship::{RelationKind, RelationRole, Relationship, fork_title};
pub use thread::{Agent, Context, Note, Stats, ThreadMeta, TokenTotals, WorktreeInfo, notes};
pub use time::{normalize_timestamp, now_timestamp};
pub use version::check_spec_version;

/// Fields this implementation does not know, kept for round-trip safety.
/// `serde_json::Map` is sorted by key, which keeps output deterministic.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// The version grove writes into new files.
pub const SPEC_VERSION: &str = "1.1";

/// Name of the per-project directory.
pub const AGENT_DIR: &str = ".agent";
/// Project configuration file inside [`AGENT_DIR`].
pub const CONFIG_FILE: &str = "config.json";
/// Directory of threads inside [`AGENT_DIR`].
pub const THREADS_DIR: &str = "threads";
/// Thread metadata envelope inside a thread directory.
pub const THREAD_FILE: &str = "thread.json";
/// Append-only message log inside a thread directory.
pub const MESSAGES_FILE: &str = "messages.jsonl";
/// Content-addressed binary assets inside a thread directory.
pub const ASSETS_DIR: &str = "assets";

/// The default `.agent/.gitignore`, exactly as the spec gives it.
pub const DEFAULT_GITIGNORE: &str = "\
# Agent Thread Storage Format - default .gitignore
# Conversation threads are not committed by default.
# They can be large and may contain sensitive content.

# Ignore message logs and binary assets
threads/*/messages.jsonl
threads/*/assets/

# Thread metadata is also ignored by default.
# Uncomment the next line to track thread metadata (useful for team awareness):
# !threads/*/thread.json
";
