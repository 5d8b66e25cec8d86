//! Deleting a directory of grove's without ever leaving it half deleted
//! under its own name: it is renamed into a trash name first (recorded in
//! the intent journal), then removed — by several threads, or by a grove
//! process of its own in the background so the command returns at once. A
//! process killed in between leaves a trash directory that the next grove
//! command (any of them, [`finish_abandoned`]) or `grove gc` removes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::intent::{self, Action};

/// Prefix of trash directories.
pub const TRASH_PREFIX: &str = ".grove-trash-";

/// The line a background deleter prints once its own journal holds the
/// trash directory, so its parent can let go of it.
const READY: &str = "grove-trash-ready";

/// The grove binary that deletes in the background (`__delete-trash`), set
/// by the binary at start; a library user that sets none deletes in the
/// foreground.
static DELETER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Names the grove binary [`Aside::delete`] starts to delete in the background.
pub fn set_background_deleter(program: PathBuf) {
    let _ = DELETER.set(program);
}

/// A directory renamed into a trash name, its intent recorded; gone for
/// good once [`Aside::delete`] returns.
#[derive(Debug)]
pub struct Aside {
    path: PathBuf,
    step: intent::Step,
}

/// Renames `dir` (a symbolic link is moved as a link, never followed) into
/// `area`, which must be on the same filesystem (a rename, not a copy).
/// `Ok(None)` when `dir` is missing.
pub fn set_aside(dir: &Path, area: &Path) -> Result<Option<Aside>> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(None);
    }
    let path = area.join(format!("{TRASH_PREFIX}{}", uuid::Uuid::new_v4()));
    let step = intent::begin(Action::Trash { dir: path.clone() })?;
    if let Err(e) = std::fs::rename(dir, &path) {
        step.undone();
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(None);
        }
        return Err(Error::io("moving aside", dir, e));
    }
    Ok(Some(Aside { path, step }))
}

impl Aside {
    /// Where the directory is now.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the directory set aside: now, with several threads, or —
    /// `background`, and a deleter named — by a grove process of its own,
    /// left running (the call returns once it has taken the directory over;
    /// it falls back to now when that process cannot start).
    pub fn delete(self, background: bool) -> Result<()> {
        if background
            && let Some(program) = DELETER.get()
            && hand_over(program, &self.path)
        {
            self.step.done();
            return Ok(());
        }
        remove_now(&self.path)?;
        self.step.done();
        Ok(())
    }
}

/// Removes `dir` by renaming it into `area` (on the same filesystem) and
/// deleting it there. A missing `dir` is fine.
pub fn remove_dir(dir: &Path, area: &Path) -> Result<()> {
    match set_aside(dir, area)? {
        Some(aside) => aside.delete(false),
        None => Ok(()),
    }
}

/// Starts the background deleter and waits for it to say it holds the
/// directory in its own journal. `false`: it did not (not started, died);
/// the caller deletes in the foreground.
#[allow(clippy::disallowed_methods)] // grove's own binary, not a user command
fn hand_over(program: &Path, dir: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(program)
        .arg("__delete-trash")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        // Its own process group: a Ctrl-C at the terminal ends the command
        // the user ran, not the deletion it left running.
        .process_group(0)
        .spawn();
    let Ok(mut child) = child else { return false };
    let mut line = String::new();
    let ready = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line).is_ok())
        .unwrap_or(false)
        && line.trim_end() == READY;
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
    }
    ready
}

/// The background deleter (`grove __delete-trash DIR`): records the
/// directory in its own journal, says so on stdout, then deletes it.
/// Refuses anything but a trash directory of grove's.
pub fn delete_handed_over(dir: &Path) -> Result<()> {
    let is_trash = dir.is_absolute()
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(TRASH_PREFIX));
    if !is_trash {
        return Err(Error::Refused(format!(
            "{} is not a trash directory of grove's",
            dir.display()
        )));
    }
    let step = intent::begin(Action::Trash {
        dir: dir.to_path_buf(),
    })?;
    println!("{READY}");
    remove_now(dir)?;
    step.done();
    Ok(())
}

/// Finishes the deletions of grove processes that are gone (killed, or a
/// background deleter that did not finish): every journal nobody holds
/// whose open steps are all trash directories. Other leftovers are `gc`'s,
/// which reports them first. Errors are left for `gc` to report.
pub fn finish_abandoned() {
    let Ok(leftovers) = intent::leftovers() else {
        return;
    };
    for journal in leftovers {
        let trash: Option<Vec<&PathBuf>> = journal
            .steps
            .iter()
            .map(|s| match s {
                Action::Trash { dir } => Some(dir),
                _ => None,
            })
            .collect();
        let Some(trash) = trash else { continue };
        if journal.errors.is_empty() && trash.iter().all(|d| remove_now(d).is_ok()) {
            let _ = journal.finish();
        }
    }
}

/// Deletes a trash directory (or file) for good; a link is removed, never
/// followed. Subdirectories are spread over several threads; another
/// deleter working on the same tree at the same time is harmless.
pub(crate) fn remove_now(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    if !meta.is_dir() {
        return gone(std::fs::remove_file(path), path);
    }
    remove_tree(path)
}

/// A removal that found nothing to remove succeeded.
fn gone(result: std::io::Result<()>, path: &Path) -> Result<()> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", path, e)),
        _ => Ok(()),
    }
}

/// The fewest directories in a level for its files to be unlinked by
/// several threads.
const PARALLEL_LEVEL: usize = 8;

/// Level by level: the files of every directory of a level are unlinked by
/// the threads in parallel, and the subdirectories they find make the next
/// level; then the directories, deepest first.
fn remove_tree(root: &Path) -> Result<()> {
    let mut levels: Vec<Vec<PathBuf>> = Vec::new();
    let mut level = vec![root.to_path_buf()];
    while !level.is_empty() {
        // A level of a few directories (all of a small worktree's, the top
        // of a large one) is emptied here: a thread costs more than their
        // few files.
        let next: Result<Vec<Vec<PathBuf>>> =
            crate::parallel::map_io(&level, PARALLEL_LEVEL, |dir| {
                empty_files(std::slice::from_ref(dir))
            })
            .into_iter()
            .collect();
        levels.push(std::mem::take(&mut level));
        level = next?.into_iter().flatten().collect();
    }
    for dir in levels.iter().rev().flatten() {
        gone(std::fs::remove_dir(dir), dir)?;
    }
    Ok(())
}

/// Unlinks every non-directory entry of `dirs`; returns their subdirectories.
fn empty_files(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut subdirs = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("reading", dir, e)),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("reading", dir, e)),
            };
            let path = entry.path();
            // The entry's own type: a link to a directory is a link.
            match entry.file_type() {
                Ok(t) if t.is_dir() => subdirs.push(path),
                Ok(_) => gone(std::fs::remove_file(&path), &path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("reading", &path, e)),
            }
        }
    }
    Ok(subdirs)
}
