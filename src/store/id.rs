use crate::error::{Error, Result};

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
