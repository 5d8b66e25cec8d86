//! A thread's files staged outside any store before they are moved into one
//! whole (a pulled thread on its way into the cache).

use std::path::PathBuf;

/// A thread's files as read from elsewhere (a commit, for `grove pull`),
/// written into a staging directory of grove's (removed when this is dropped, unless kept).
#[derive(Debug)]
pub struct ThreadFiles {
    pub staging: tempfile::TempDir,
    /// `thread.json`.
    pub meta: Vec<u8>,
    /// `messages.jsonl` in the staging directory (empty when the commit has
    /// none).
    pub log: PathBuf,
    /// Asset file names (checked: plain names) and where they were written.
    pub assets: Vec<(String, PathBuf)>,
}
