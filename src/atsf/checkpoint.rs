//! The git state a checkpoint records (`thread.json` `git`), after HQ's
//! thread checkpoints (seed 003), spelled in camelCase.

use serde::{Deserialize, Serialize};

use super::Extra;

/// `thread.json` `git`: the thread's worktree as of its last checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GitState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<String>,
    /// The commit the thread started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_commit: Option<String>,
    /// HEAD at the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_commit: Option<String>,
    /// Commits made since `initialCommit`, oldest first, as `<short sha>: <subject>`.
    #[serde(default)]
    pub commits_made: Vec<String>,
    /// Uncommitted changes at the checkpoint.
    #[serde(default)]
    pub dirty: bool,
    /// When the checkpoint was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointed_at: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
