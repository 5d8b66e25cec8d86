//! Small filesystem primitives shared by the store and the worktree manager:
//! atomic writes that follow the umask, opens that never follow a symbolic
//! link inside grove's data, and lock files for read-modify-write.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Prefix of the temporary files [`write_atomic`] renames into place. A file
/// with this prefix is a write that never finished; `grove gc` removes them
/// while it holds the lock that guards writes into their directory.
pub const TMP_PREFIX: &str = ".grove-tmp-";

/// The mode new files are created with: everyone may read unless the umask
/// says otherwise (0644 under umask 022), as `touch` and `git` do.
fn public_mode(builder: &mut tempfile::Builder<'_, '_>) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    #[cfg(not(unix))]
    let _ = builder;
}

fn temp_in(dir: &Path, private: bool) -> Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(TMP_PREFIX);
    if !private {
        public_mode(&mut builder);
    }
    builder.tempfile_in(dir).ctx("creating a temp file in", dir)
}

/// Replaces `path` with `bytes` atomically: a unique temp file in the same
/// directory is written, fsynced and renamed over `path`, so a reader sees
/// either the old or the new content, never a mix. The new file follows the
/// umask (0644 under umask 022).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, false, true)
}

/// [`write_atomic`] for a file only its owner may read (0600): the trust store.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true, true)
}

/// [`write_atomic`] for a file that follows from another, durable one —
/// `thread.json` after an append, whose log is synced first and recounted
/// whenever the two disagree: its bytes are synced, the rename is not, so a
/// power cut may bring back the old file (as a crash between the two writes
/// always could), never a torn or empty one. One fsync less per append.
pub fn write_atomic_derived(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_of(path);
    let mut tmp = temp_in(dir, false)?;
    tmp.write_all(bytes).ctx("writing", tmp.path())?;
    tmp.as_file().sync_all().ctx("syncing", tmp.path())?;
    tmp.persist(path)
        .map_err(|e| Error::io("replacing", path, e.error))?;
    Ok(())
}

/// [`write_atomic`] without fsync: readers see the old or the new bytes,
/// never a mix, but a power cut may bring the old ones back. Only for a
/// file whose older content is repaired anyway.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, false, false)
}

fn replace(path: &Path, bytes: &[u8], private: bool, sync: bool) -> Result<()> {
    let dir = parent_of(path);
    let mut tmp = temp_in(dir, private)?;
    tmp.write_all(bytes).ctx("writing", tmp.path())?;
    if sync {
        tmp.as_file().sync_all().ctx("syncing", tmp.path())?;
    }
    tmp.persist(path)
        .map_err(|e| Error::io("replacing", path, e.error))?;
    if sync { sync_dir(dir) } else { Ok(()) }
}

/// Creates `path` with `bytes` only if nothing is there yet. Returns whether it wrote.
/// Never overwrites: an existing file wins, even if it was created concurrently.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<bool> {
    create_once(path, true, |f| f.write_all(bytes))
}

/// Creates `to` as a copy of the file `from` only if nothing is there yet,
/// whole or not at all (copied by another name, linked into place): a
/// killed copy never leaves a partial file under the name. Returns whether
/// it wrote.
pub fn copy_new_whole(from: &Path, to: &Path) -> Result<bool> {
    let mut src = open_read(from)?;
    create_once(to, true, |f| std::io::copy(&mut src, f).map(drop))
}

/// [`write_new`] without fsync, for a file whose loss in a power cut costs
/// nothing but its recreation (the `.gitignore`s grove keeps its own
/// directories out of `git status` with): right after a fork copied a large
/// log, each fsync would wait for that log's data.
pub fn write_new_unsynced(path: &Path, bytes: &[u8]) -> Result<bool> {
    create_once(path, false, |f| f.write_all(bytes))
}

fn create_once(
    path: &Path,
    sync: bool,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> Result<bool> {
    let dir = parent_of(path);
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let mut tmp = temp_in(dir, false)?;
    fill(tmp.as_file_mut()).ctx("writing", tmp.path())?;
    if sync {
        tmp.as_file().sync_all().ctx("syncing", tmp.path())?;
    }
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            if sync {
                sync_dir(dir)?;
            }
            Ok(true)
        }
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io("creating", path, e.error)),
    }
}

/// A file written by another name and renamed into place once whole (an
/// export): follows the umask, unlike a bare `tempfile`.
pub fn temp_file_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    temp_in(parent_of(path), false)
}

/// A new file named `<prefix><random>` in `dir`, kept when persisted: the
/// side files grove writes beside a log (torn tails, diverged copies).
pub fn side_file(dir: &Path, prefix: &str) -> Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    public_mode(&mut builder);
    builder.tempfile_in(dir).ctx("creating a side file in", dir)
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Makes a rename or create in `dir` durable. A no-op where directories
/// cannot be opened (Windows).
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .ctx("syncing directory", dir)?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Syncs the file at `path` to disk (opened to read, never through a link):
/// what an earlier unsynced write left there becomes durable.
pub fn sync_file(path: &Path) -> Result<()> {
    open_read(path)?.sync_all().ctx("syncing", path)
}

#[cfg(unix)]
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Whether the open `file` is still the one at `path` (not replaced by a
/// rename since it was opened).
#[cfg(unix)]
pub(crate) fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
pub(crate) fn still_at(_file: &File, _path: &Path) -> bool {
    true
}

#[cfg(not(unix))]
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
        (Ok(x), Ok(y)) => x.len() == y.len() && x.modified().ok() == y.modified().ok(),
        _ => false,
    }
}

/// Hard-links `from` to `to` (replacing an older `to`), or copies when asked
/// and linking is impossible. Neither end may be a symbolic link.
pub(crate) fn link_or_copy(from: &Path, to: &Path, copy: bool) -> Result<()> {
    match std::fs::symlink_metadata(from) {
        Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(from)),
        Ok(_) => {}
        Err(_) => return Ok(()),
    }
    if same_file(from, to) {
        return Ok(());
    }
    let dir = parent_of(to);
    let tmp = dir.join(format!("{TMP_PREFIX}link-{}", uuid::Uuid::new_v4()));
    match std::fs::hard_link(from, &tmp) {
        Ok(()) => {}
        Err(_) if copy => {
            let mut src = open_read(from)?;
            let mut dst = create_new(&tmp)?;
            std::io::copy(&mut src, &mut dst).ctx("copying", from)?;
        }
        Err(_) => return Ok(()),
    }
    std::fs::rename(&tmp, to).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("renaming into", to, e)
    })
}

// ---------------------------------------------------------------------------
// No symbolic links inside grove's data.
//
// A thread directory, its files and a worktree's `.agent` may come from a
// cloned repository, so any of them can be a committed symbolic link to
// `~/.ssh/id_rsa` or `/etc`. grove opens them without following links and
// refuses a link where it expects a directory.

/// The error for a symbolic link found where grove's own data should be.
pub fn symlink_error(path: &Path) -> Error {
    Error::Symlink {
        path: path.to_path_buf(),
        target: std::fs::read_link(path).unwrap_or_default(),
    }
}

/// Fails when `path` is a symbolic link; a missing path is fine.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(symlink_error(path)),
        _ => Ok(()),
    }
}

/// Creates the directory `path` (and, like `mkdir -p`, its missing parents
/// below `root`) without going through a symbolic link: every component
/// from `root` (exclusive) down to `path` must be a real directory.
pub fn real_dir(root: &Path, path: &Path) -> Result<()> {
    // The root itself is trusted (a project or data directory may well be
    // reached through a link); it is made when missing, like `mkdir -p`.
    std::fs::create_dir_all(root).ctx("creating", root)?;
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut current = root.to_path_buf();
    for component in rel.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(&current)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::Other(format!(
                    "{} is a file where grove needs a directory",
                    current.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(&current) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        refuse_symlink(&current)?;
                    }
                    Err(e) => return Err(Error::io("creating", current, e)),
                }
            }
            Err(e) => return Err(Error::io("reading", current, e)),
        }
    }
    Ok(())
}

/// Checks that no component of `path` below `root` is a symbolic link
/// (missing components are fine).
pub fn check_no_links_below(root: &Path, path: &Path) -> Result<()> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut current = root.to_path_buf();
    for component in rel.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(&current)),
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

fn nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NOFOLLOW);
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        // FILE_FLAG_OPEN_REPARSE_POINT: open the link itself, checked below.
        options.custom_flags(0x0020_0000);
    }
    options
}

/// Turns the error of a no-follow open of a link into [`Error::Symlink`].
fn open_error(action: &'static str, path: &Path, e: std::io::Error) -> Error {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return symlink_error(path);
    }
    Error::io(action, path, e)
}

fn checked(file: File, path: &Path) -> Result<File> {
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(symlink_error(path));
    }
    let _ = path;
    Ok(file)
}

/// Opens `path` for reading without following a symbolic link.
pub fn open_read(path: &Path) -> Result<File> {
    let file = nofollow(OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| open_error("opening", path, e))?;
    checked(file, path)
}

/// [`open_read`], with `Ok(None)` when the file does not exist.
pub fn open_read_opt(path: &Path) -> Result<Option<File>> {
    match nofollow(OpenOptions::new().read(true)).open(path) {
        Ok(f) => checked(f, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(open_error("opening", path, e)),
    }
}

/// Reads a whole file without following a symbolic link.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_with_mtime(path).map(|(bytes, _)| bytes)
}

/// [`read`], with the file's modification time from the same `fstat` that
/// sizes the buffer: `list` learns when each `thread.json` was last written
/// without looking at it again.
pub fn read_with_mtime(path: &Path) -> Result<(Vec<u8>, Option<std::time::SystemTime>)> {
    use std::io::Read;
    /// Reads through `Read::read` only: `File`'s own `read_to_end` asks the
    /// size again (fstat and lseek), and `list` reads thousands of these.
    struct Plain(File);
    impl Read for Plain {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read(buf)
        }
    }
    let file = open_read(path)?;
    // Sized from the open file, as `std::fs::read` does: one read, not a
    // growing buffer.
    let stat = file.metadata().ok();
    let len = stat.as_ref().map_or(0, |m| m.len() as usize);
    let mtime = stat.and_then(|m| m.modified().ok());
    let mut bytes = Vec::with_capacity(len + 1);
    Plain(file).read_to_end(&mut bytes).ctx("reading", path)?;
    Ok((bytes, mtime))
}

/// [`read`], `None` when nothing is at `path`.
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    match read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens `path` for appending (and reading), creating it when `create`,
/// without following a symbolic link.
pub fn open_append(path: &Path, create: bool) -> Result<File> {
    let file = nofollow(OpenOptions::new().read(true).append(true).create(create))
        .open(path)
        .map_err(|e| open_error("opening", path, e))?;
    checked(file, path)
}

/// Creates a new file (failing if anything is there, a link included).
pub fn create_new(path: &Path) -> Result<File> {
    nofollow(OpenOptions::new().write(true).create_new(true))
        .open(path)
        .map_err(|e| open_error("creating", path, e))
}

/// Copies `from` to a new file `to` (never through a link there). Returns
/// false when `to` already exists.
pub fn copy_new(from: &Path, to: &Path) -> Result<bool> {
    let mut dst = match create_new(to) {
        Ok(f) => f,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let mut src = File::open(from).ctx("opening", from)?;
    std::io::copy(&mut src, &mut dst).ctx("copying", from)?;
    Ok(true)
}

/// Creates or truncates `path` for writing, refusing a symbolic link.
pub fn create_truncate(path: &Path) -> Result<File> {
    let file = nofollow(OpenOptions::new().write(true).create(true).truncate(true))
        .open(path)
        .map_err(|e| open_error("creating", path, e))?;
    checked(file, path)
}

// ---------------------------------------------------------------------------
// Lock files.

/// An exclusive lock held on a lock file until dropped.
///
/// Files grove rewrites by renaming a new version into place (the shared
/// `info/exclude`, the trust store, cache records) cannot be locked
/// themselves — a waiting process would hold the replaced inode — so each
/// has a lock file beside it that is never renamed or deleted.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock on `path` (created if missing), waiting for another
    /// holder to release it.
    pub fn acquire(path: &Path) -> Result<FileLock> {
        let file = open_lock_file(path)?;
        file.lock().ctx("locking", path)?;
        Ok(FileLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// Takes the lock only if nobody holds it; `None` otherwise.
    pub fn try_acquire(path: &Path) -> Result<Option<FileLock>> {
        let file = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock {
                _file: file,
                path: path.to_path_buf(),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("locking", path, e)),
        }
    }

    /// Takes the lock, waiting at most `limit` for another holder; `None`
    /// when it is still held then.
    pub fn acquire_within(path: &Path, limit: std::time::Duration) -> Result<Option<FileLock>> {
        let start = std::time::Instant::now();
        loop {
            if let Some(lock) = FileLock::try_acquire(path)? {
                return Ok(Some(lock));
            }
            if start.elapsed() >= limit {
                return Ok(None);
            }
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ctx("creating", dir)?;
    }
    nofollow(OpenOptions::new().read(true).write(true).create(true))
        .open(path)
        .map_err(|e| open_error("opening the lock file", path, e))
}

/// The lock file guarding `file`: `<file>.grove-lock` beside it.
pub fn lock_path_for(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".grove-lock");
    file.with_file_name(name)
}

/// Removes the leftover temp files ([`TMP_PREFIX`]) of `dir`. Call it only
/// while holding the lock that every writer into `dir` holds, so no write
/// in progress is taken for a leftover. Returns what was removed.
pub fn remove_stale_temps(dir: &Path) -> Result<Vec<PathBuf>> {
    remove_temps_older_than(dir, std::time::Duration::ZERO)
}

/// [`remove_stale_temps`] for `dir` and every directory below it (a
/// thread's `assets/`, `logs/` and side directories: a copy into any of them
/// goes through a temp file). Symbolic links are never followed.
pub fn remove_stale_temps_tree(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        removed.extend(remove_stale_temps(&dir)?);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        stack.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    Ok(removed)
}

/// Removes the [`TMP_PREFIX`] files of `dir` last changed longer than `age`
/// ago: for directories whose writers hold no lock but write only small
/// files, so any temp file older than a moment is a killed writer's.
pub fn remove_temps_older_than(dir: &Path, age: std::time::Duration) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(removed);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let old_enough = || {
            entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|elapsed| elapsed >= age)
        };
        if name.to_string_lossy().starts_with(TMP_PREFIX)
            && entry
                .file_type()
                .is_ok_and(|t| t.is_file() || t.is_symlink())
            && old_enough()
        {
            std::fs::remove_file(entry.path()).ctx("removing", &entry.path())?;
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// The names of the directories (links to them left out) in `dir` that
/// start with `prefix`; an unreadable `dir` has none. The other entries are
/// passed over by their raw name, without an allocation each: a store of
/// 10,000 threads is listed to find one by a short prefix.
#[cfg(unix)]
pub fn subdir_names_starting(dir: &Path, prefix: &str) -> Vec<String> {
    use nix::dir::{Dir, Type};
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;

    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let Ok(mut listing) = Dir::open(dir, flags, Mode::empty()) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in listing.iter().flatten() {
        let raw = entry.file_name().to_bytes();
        if !raw.starts_with(prefix.as_bytes()) || raw == b"." || raw == b".." {
            continue;
        }
        let Ok(name) = std::str::from_utf8(raw) else {
            continue;
        };
        let is_dir = match entry.file_type() {
            Some(kind) => kind == Type::Directory,
            // A filesystem that does not say: asked, without following.
            None => std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_dir()),
        };
        if is_dir {
            names.push(name.to_string());
        }
    }
    names
}

/// The names of the directories (links to them left out) in `dir` that
/// start with `prefix`; an unreadable `dir` has none.
#[cfg(not(unix))]
pub fn subdir_names_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .as_encoded_bytes()
                .starts_with(prefix.as_bytes())
        })
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directories only (a link to one, a file or a name that is not
    /// UTF-8 is left out), and only those starting with the prefix.
    #[test]
    #[cfg(unix)]
    fn subdir_names_are_real_directories_starting_with_the_prefix() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        for name in ["abc-1", "abc-2", "abd-3", "xyz"] {
            std::fs::create_dir(d.join(name)).expect("mkdir");
        }
        std::fs::write(d.join("abc-file"), "f").expect("file");
        std::os::unix::fs::symlink(d.join("abc-1"), d.join("abc-link")).expect("link");
        let odd = std::ffi::OsStr::from_bytes(b"abc-\xff");
        std::fs::create_dir(d.join(odd)).expect("mkdir");

        let mut names = subdir_names_starting(d, "abc");
        names.sort();
        assert_eq!(names, ["abc-1", "abc-2"]);
        let mut all = subdir_names_starting(d, "");
        all.sort();
        assert_eq!(all, ["abc-1", "abc-2", "abd-3", "xyz"]);
        assert!(subdir_names_starting(&d.join("missing"), "").is_empty());
    }
}
