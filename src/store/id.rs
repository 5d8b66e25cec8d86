use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A thread id known to be a safe directory name (see
/// [`validate_thread_id`]): checked once where it comes in — an argument, a
/// directory name, a record read from disk — and taken as it is by the
/// store, the cache, the ledgers and sync from there on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ThreadId(String);

impl ThreadId {
    /// `id`, checked.
    pub fn parse(id: &str) -> Result<ThreadId> {
        validate_thread_id(id)?;
        Ok(ThreadId(id.to_string()))
    }

    /// A fresh id: a UUID v4.
    pub fn generate() -> ThreadId {
        ThreadId(new_thread_id())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ThreadId {
    type Error = Error;
    fn try_from(id: String) -> Result<ThreadId> {
        validate_thread_id(&id)?;
        Ok(ThreadId(id))
    }
}

impl From<ThreadId> for String {
    fn from(id: ThreadId) -> String {
        id.0
    }
}

impl std::ops::Deref for ThreadId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ThreadId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::path::Path> for ThreadId {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

impl std::borrow::Borrow<str> for ThreadId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ThreadId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ThreadId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for ThreadId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<ThreadId> for str {
    fn eq(&self, other: &ThreadId) -> bool {
        self == other.0
    }
}

impl PartialEq<ThreadId> for String {
    fn eq(&self, other: &ThreadId) -> bool {
        *self == other.0
    }
}

/// A fresh thread id: a UUID v4.
pub fn new_thread_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Checks that `id` can be used as a single directory name without escaping
/// `threads/`. Any unique string is a valid id otherwise (`T-<uuid>`, dated ids).
///
/// ```
/// use grove::store::validate_thread_id;
/// assert!(validate_thread_id("T-5f1e2d3c-0000-4000-8000-000000000000").is_ok());
/// assert!(validate_thread_id("../x").is_err());
/// assert!(validate_thread_id("").is_err());
/// ```
pub fn validate_thread_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id == "." || id == ".." {
        Some("`.` and `..` are not names")
    } else if id.contains('/') || id.contains('\\') {
        Some("it contains a path separator")
    } else if id.starts_with('.') {
        Some("it starts with a dot")
    } else if id.chars().any(char::is_control) {
        Some("it contains a NUL or control character")
    } else if id.len() > 255 {
        Some("it is longer than 255 bytes")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidThreadId {
            id: id.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}
