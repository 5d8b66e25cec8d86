//! Copying files and directory trees into a worktree (`worktreeHooks.copies`,
//! `.worktreeinclude`): each file a copy-on-write clone where the file
//! system makes one (std's copy uses `copy_file_range` on Linux, which
//! clones on btrfs and XFS, and `fclonefileat` on macOS), an ordinary copy
//! otherwise; modes and modification times kept; the symbolic links inside
//! copied as links, never followed. Files are copied on several threads.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// What a copy made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Copied {
    pub files: u64,
    pub dirs: u64,
    pub links: u64,
    pub bytes: u64,
    /// Entries that are neither file, directory nor link (a socket, a fifo).
    pub skipped: u64,
}

/// Copies `from` (a file, a directory or a link) to `to`, which must not
/// exist.
pub fn copy(from: &Path, to: &Path) -> Result<Copied> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(Error::Refused(format!("{} exists", to.display())));
    }
    let mut plan = Plan::default();
    plan.walk(from, to)?;
    let mut done = plan.copied;
    done.bytes = copy_files(&plan.files)?;
    done.files = plan.files.len() as u64;
    // Read-only directories get their mode once their contents are in.
    for (dir, mode) in plan.dir_modes.iter().rev() {
        std::fs::set_permissions(dir, mode.clone()).ctx("setting the mode of", dir)?;
    }
    Ok(done)
}

#[derive(Default)]
struct Plan {
    files: Vec<(PathBuf, PathBuf, std::fs::Metadata)>,
    dir_modes: Vec<(PathBuf, std::fs::Permissions)>,
    copied: Copied,
}

impl Plan {
    /// Makes the directories and links, and lists the files to copy.
    fn walk(&mut self, from: &Path, to: &Path) -> Result<()> {
        let mut stack = vec![(from.to_path_buf(), to.to_path_buf())];
        while let Some((src, dst)) = stack.pop() {
            let meta = std::fs::symlink_metadata(&src).ctx("reading", &src)?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&src).ctx("reading the link", &src)?;
                make_link(&target, &dst)?;
                self.copied.links += 1;
            } else if kind.is_dir() {
                std::fs::create_dir(&dst).ctx("creating", &dst)?;
                self.dir_modes.push((dst.clone(), meta.permissions()));
                self.copied.dirs += 1;
                for entry in std::fs::read_dir(&src).ctx("reading", &src)? {
                    let entry = entry.ctx("reading", &src)?;
                    stack.push((entry.path(), dst.join(entry.file_name())));
                }
            } else if kind.is_file() {
                self.files.push((src, dst, meta));
            } else {
                self.copied.skipped += 1;
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn make_link(target: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).ctx("creating the link", at)
}

#[cfg(windows)]
fn make_link(target: &Path, at: &Path) -> Result<()> {
    std::os::windows::fs::symlink_file(target, at).ctx("creating the link", at)
}

/// Copies the files on every core; returns the bytes copied.
fn copy_files(files: &[(PathBuf, PathBuf, std::fs::Metadata)]) -> Result<u64> {
    crate::parallel::map(files, 2, |(src, dst, meta)| copy_file(src, dst, meta))
        .into_iter()
        .sum()
}

fn copy_file(src: &Path, dst: &Path, meta: &std::fs::Metadata) -> Result<u64> {
    let bytes = std::fs::copy(src, dst).map_err(|e| Error::io("copying", src, e))?;
    if let Ok(modified) = meta.modified() {
        // Read-only is enough to set the time of one's own file (and the
        // copy may be read-only, like its source).
        let file = std::fs::File::open(dst).ctx("opening", dst)?;
        file.set_modified(modified)
            .ctx("setting the time of", dst)?;
    }
    Ok(bytes)
}
