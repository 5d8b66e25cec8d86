//! Deleting a directory of grove's without ever leaving it half deleted
//! under its own name: it is renamed into a trash name first (recorded in
//! the intent journal), then removed. A process killed in between leaves a
//! trash directory that `grove gc` recognises and removes.

use std::path::Path;

use crate::error::{Error, Result};
use crate::intent::{self, Action};

/// Prefix of trash directories.
pub const TRASH_PREFIX: &str = ".grove-trash-";

/// Removes `dir` (a symbolic link is removed as a link, never followed) by
/// renaming it into `area` (on the same filesystem) and deleting it there.
/// A missing `dir` is fine.
pub fn remove_dir(dir: &Path, area: &Path) -> Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    let aside = area.join(format!("{TRASH_PREFIX}{}", uuid::Uuid::new_v4()));
    let step = intent::begin(Action::Trash { dir: aside.clone() })?;
    if let Err(e) = std::fs::rename(dir, &aside) {
        step.undone();
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(());
        }
        return Err(Error::io("moving aside", dir, e));
    }
    remove_now(&aside)?;
    step.done();
    Ok(())
}

/// Deletes a trash directory (or file) for good.
pub(crate) fn remove_now(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    let result = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", path, e)),
        _ => Ok(()),
    }
}
