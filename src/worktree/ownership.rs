//! What grove made for a task on this machine: the branch, and the commit
//! it started at — `<data dir>/tasks/<repository key>/<thread id>.json`,
//! written when grove creates the branch.
//!
//! `thread.json` says the same (`context.worktree.branch`,
//! `metadata.grove.createdBranch`, `context.baseCommit`), but that file
//! travels: a `grove pull` takes plain fields from the newer side, and a
//! repository can commit a thread. Which branch `rm` may delete, and from
//! which commit it counts the task's own work, is decided from this record
//! only: a thread that names the user's `release` branch cannot get it
//! deleted. A task this machine has no record of keeps its branch.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::ThreadId;

/// The branch grove made for a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MadeBranch {
    /// Its full name without `refs/heads/`.
    pub branch: String,
    /// The commit it was made at.
    pub base_commit: String,
    /// When it was made.
    pub created_at: String,
}

/// The directory of the records of the repository at `main_root`.
pub fn dir(main_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::data_dir()?
        .join("tasks")
        .join(crate::home::repo_key(main_root)))
}

fn record_path(main_root: &Path, thread_id: &ThreadId) -> Result<PathBuf> {
    Ok(dir(main_root)?.join(format!("{thread_id}.json")))
}

/// Records that grove made `branch` at `base_commit` for task `thread_id`
/// of the repository at `main_root`.
pub fn record(
    main_root: &Path,
    thread_id: &ThreadId,
    branch: &str,
    base_commit: &str,
) -> Result<()> {
    let path = record_path(main_root, thread_id)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    let made = MadeBranch {
        branch: branch.to_string(),
        base_commit: base_commit.to_string(),
        created_at: crate::atsf::now_timestamp(),
    };
    let bytes = serde_json::to_vec_pretty(&made).map_err(|e| Error::Other(e.to_string()))?;
    // Its bytes synced, its name not: a power cut may lose the record (the
    // branch is then kept, as for any branch grove did not make), never
    // leave a torn one.
    crate::fsutil::write_atomic_derived(&path, &bytes)
}

/// The branch grove made for task `thread_id` on this machine, if it made
/// one (a record that cannot be read counts as none: the branch is kept).
pub fn made_branch(main_root: &Path, thread_id: &ThreadId) -> Option<MadeBranch> {
    let bytes = crate::fsutil::read_opt(&record_path(main_root, thread_id).ok()?).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Forgets the branch of task `thread_id` (it was deleted).
pub fn forget(main_root: &Path, thread_id: &ThreadId) -> Result<()> {
    let path = record_path(main_root, thread_id)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("removing", &path, e)),
    }
}
