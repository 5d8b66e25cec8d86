//! Archiving a thread: hidden from `list` and search, kept whole.

use crate::discovery::Found;

/// Archives (`true`) or unarchives a thread; returns whether it changed.
/// Unarchiving removes the field rather than writing `false`.
pub fn set_archived(found: &Found, archived: bool) -> crate::Result<bool> {
    if found.meta.is_archived() == archived {
        return Ok(false);
    }
    found
        .thread
        .update_meta(|m| m.archived = archived.then_some(true))?;
    Ok(true)
}
