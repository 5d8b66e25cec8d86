//! Editing a file of the user's as text (an agent's settings, Codex's
//! config, OpenCode's config): never through a symbolic link, never over a
//! change made since grove read it, keeping the file's permissions.

use std::path::Path;

use crate::error::{Error, Result};

/// Why grove will not touch `file`: it, or a directory on its way from the
/// worktree, is a symbolic link (grove would write wherever it points).
pub fn link_refusal(worktree: &Path, file: &Path) -> Option<String> {
    let link = crate::fsutil::check_no_links_below(worktree, file).err()?;
    Some(match link {
        Error::Symlink { path, .. } => format!(
            "{} is a symbolic link; grove does not write through links, so it leaves it alone \
             (replace it with a file to have grove edit it)",
            path.display()
        ),
        other => other.to_string(),
    })
}

/// Writes `text` into `file` unless it changed since grove read `before`
/// (`None`: it was missing); returns whether it wrote. The new file keeps the old one's permissions.
pub fn write_text(file: &Path, before: Option<&str>, text: &str) -> Result<bool> {
    use std::io::Write;
    let Some(old) = before else {
        return crate::fsutil::write_new(file, text.as_bytes());
    };
    let Some(mode) = unchanged_permissions(file, old)? else {
        return Ok(false);
    };
    let mut tmp = crate::fsutil::temp_file_beside(file)?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().set_permissions(mode))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io("writing", tmp.path(), e))?;
    // Checked again at the last moment: an agent saving the file meanwhile
    // (Claude Code records an allowed command there) is not overwritten.
    if unchanged_permissions(file, old)?.is_none() {
        return Ok(false);
    }
    tmp.persist(file)
        .map_err(|e| Error::io("replacing", file, e.error))?;
    crate::fsutil::sync_dir(parent(file))?;
    Ok(true)
}

/// Deletes `file` unless it changed since grove read `old`.
pub fn remove_text(file: &Path, old: &str) -> Result<bool> {
    if unchanged_permissions(file, old)?.is_none() {
        return Ok(false);
    }
    std::fs::remove_file(file).map_err(|e| Error::io("removing", file, e))?;
    Ok(true)
}

/// The permissions of `file` when it still holds `old`.
fn unchanged_permissions(file: &Path, old: &str) -> Result<Option<std::fs::Permissions>> {
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return Ok(None);
    };
    Ok(
        (crate::fsutil::read_opt(file)?.as_deref() == Some(old.as_bytes()))
            .then(|| meta.permissions()),
    )
}

fn parent(file: &Path) -> &Path {
    file.parent().unwrap_or(Path::new("."))
}

/// Whether the repository of `worktree` tracks `file`.
pub fn tracked(worktree: &Path, file: &Path) -> bool {
    let Ok(repo) = git2::Repository::open(worktree) else {
        return false;
    };
    let Ok(index) = repo.index() else {
        return false;
    };
    let Ok(relative) = file.strip_prefix(worktree) else {
        return false;
    };
    index.get_path(relative, 0).is_some()
}
