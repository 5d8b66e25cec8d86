//! The marks grove leaves in the agents' session files it writes (`grove
//! resume`, `grove export --format claude|codex|opencode`), so that an
//! import of such a session finds the thread's own messages again instead
//! of adding them twice.

use serde_json::{Map, Value};

/// The top-level key of a record naming the message it came from.
pub const GROVE_KEY: &str = "grove";

/// The message id a record carries under [`GROVE_KEY`], if any.
pub fn grove_id(record: &Map<String, Value>) -> Option<&str> {
    record.get(GROVE_KEY)?.get("id")?.as_str()
}

/// The prefix of the message ids grove gives messages that are not
/// OpenCode's own.
pub const GROVE_MESSAGE_PREFIX: &str = "msg_grove.";
