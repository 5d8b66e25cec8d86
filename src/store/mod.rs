//! The thread store: one `.agent/` directory and the threads inside it.

mod assets;
mod id;
mod reader;
mod staged;
mod tail;
mod thread;
mod unique;

use std::path::{Path, PathBuf};

pub use assets::{
    PendingAsset, asset_name, extension_for_mime, extract_inline_images, store_asset,
    take_inline_image, take_inline_images, take_inline_in_json,
};
pub use id::{ThreadId, new_thread_id, validate_thread_id};
pub use reader::MessageReader;
pub use staged::ThreadFiles;
pub use tail::TornTail;
pub(crate) use tail::complete_len;
pub use thread::{
    AppendOptions, Appended, RepairReport, Restored, Snapshot, Thread, ThreadLock, validate_message,
};
pub(crate) use thread::{recorded_length, set_recorded_length};

use crate::atsf::{self, Config, ThreadMeta};
use crate::error::{Error, IoContext, Result};

use crate::fsutil::{write_atomic, write_new};

/// A `.agent/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    agent_dir: PathBuf,
}

/// What `init` created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitOutcome {
    pub created_config: bool,
    pub created_gitignore: bool,
}

/// A thread found by [`Store::list`], with its metadata.
#[derive(Debug, Clone)]
pub struct ListedThread {
    pub thread: Thread,
    pub meta: ThreadMeta,
    /// When its `thread.json` was last written, as the read found it.
    pub written: Option<std::time::SystemTime>,
}

/// A listing: the threads that could be read and the ones that could not.
#[derive(Debug, Default)]
pub struct Listing {
    pub threads: Vec<ListedThread>,
    /// Unreadable `thread.json` files (bad JSON, newer version, a `threadId`
    /// that is not its directory's name) and linked thread directories, one
    /// error each.
    pub errors: Vec<Error>,
}

impl Store {
    /// The store in `project_root/.agent`.
    pub fn for_project(project_root: &Path) -> Self {
        Store {
            agent_dir: project_root.join(atsf::AGENT_DIR),
        }
    }

    /// The store at an explicit `.agent` directory.
    pub fn at(agent_dir: impl Into<PathBuf>) -> Self {
        Store {
            agent_dir: agent_dir.into(),
        }
    }

    /// The `.agent` directory.
    pub fn agent_dir(&self) -> &Path {
        &self.agent_dir
    }

    /// `.agent/threads`.
    pub fn threads_dir(&self) -> PathBuf {
        self.agent_dir.join(atsf::THREADS_DIR)
    }

    /// `.agent/config.json`.
    pub fn config_path(&self) -> PathBuf {
        self.agent_dir.join(atsf::CONFIG_FILE)
    }

    /// The project directory holding `.agent/`.
    fn root(&self) -> &Path {
        self.agent_dir.parent().unwrap_or(Path::new("."))
    }

    /// Fails when `.agent/` or `.agent/threads/` is a symbolic link: a cloned
    /// repository could point it anywhere, so grove neither reads nor writes
    /// through it.
    pub fn guard(&self) -> Result<()> {
        crate::fsutil::check_no_links_below(self.root(), &self.threads_dir())
    }

    /// Creates `.agent/` (and its default `.gitignore`) if missing; never
    /// overwrites an existing `.gitignore`. Returns whether it wrote the file.
    /// Refuses a `.agent` that is a symbolic link.
    pub fn ensure_dir(&self) -> Result<bool> {
        refuse_git_dir(self.root())?;
        crate::fsutil::real_dir(self.root(), &self.agent_dir)?;
        let path = self.agent_dir.join(".gitignore");
        if self.in_linked_worktree() {
            // A task's worktree: the file grove writes there is grove's, and
            // keeps itself out of the worktree's `git status`. Unsynced: a
            // power cut that takes it costs its rewriting here, next time.
            let text = format!(
                "{}{WORKTREE_IGNORE_MARK}\n/.gitignore\n",
                atsf::DEFAULT_GITIGNORE
            );
            crate::fsutil::write_new_unsynced(&path, text.as_bytes())
        } else {
            write_new(&path, atsf::DEFAULT_GITIGNORE.as_bytes())
        }
    }

    /// `grove init`: `.agent/`, its `.gitignore` and a `config.json`, each
    /// only if missing. Idempotent.
    pub fn init(&self) -> Result<InitOutcome> {
        let created_gitignore = self.ensure_dir()?;
        let config_path = self.config_path();
        let created_config = if std::fs::symlink_metadata(&config_path).is_ok() {
            // Still validate it, so a newer-version config is reported now.
            self.config()?;
            false
        } else {
            write_new(&config_path, &atsf::to_pretty(&Config::new_for_grove())?)?
        };
        Ok(InitOutcome {
            created_config,
            created_gitignore,
        })
    }

    /// Reads `config.json`; `None` when the project has none.
    pub fn config(&self) -> Result<Option<Config>> {
        let path = self.config_path();
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        self.guard()?;
        atsf::read_json_file(&path).map(Some)
    }

    /// The keys of `config.json` that look like a known key misspelt (none
    /// when it is missing or unreadable: reading it says why).
    pub fn config_near_misses(&self) -> Vec<atsf::NearMiss> {
        let path = self.config_path();
        if self.guard().is_err() {
            return Vec::new();
        }
        crate::fsutil::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .map(|v| atsf::near_misses(&v))
            .unwrap_or_default()
    }

    /// Writes `config.json` atomically.
    pub fn write_config(&self, config: &Config) -> Result<()> {
        self.ensure_dir()?;
        write_atomic(&self.config_path(), &atsf::to_pretty(config)?)
    }

    /// A handle on thread `id`, after checking the id is a safe directory name.
    /// Does not check that the thread exists.
    pub fn thread(&self, id: &str) -> Result<Thread> {
        Ok(self.thread_of(&ThreadId::parse(id)?))
    }

    /// A handle on thread `id`. Does not check that the thread exists.
    pub fn thread_of(&self, id: &ThreadId) -> Thread {
        Thread::at(id.clone(), self.threads_dir().join(id))
    }

    /// Ids of the thread directories (names that are valid ids and hold a `thread.json`).
    pub fn thread_ids(&self) -> Result<Vec<ThreadId>> {
        Ok(self.scan()?.0)
    }

    /// The thread directories, and what is wrong with entries that look like
    /// threads but cannot be used (a symbolic link where a directory should be).
    fn scan(&self) -> Result<(Vec<ThreadId>, Vec<Error>)> {
        self.scan_matching(Keep::Where(&|_| true))
    }

    /// [`Store::scan`] of the names `keep` accepts (the others cost nothing
    /// but their directory entry).
    fn scan_matching(&self, keep: Keep<'_>) -> Result<(Vec<ThreadId>, Vec<Error>)> {
        self.scan_dirs(keep, true)
    }

    /// The thread directories `keep` accepts; with `with_file`, only those
    /// holding a `thread.json` (a listing that reads each one anyway finds
    /// out by reading it, and asks nothing more of the file system).
    fn scan_dirs(&self, keep: Keep<'_>, with_file: bool) -> Result<(Vec<ThreadId>, Vec<Error>)> {
        self.guard()?;
        let dir = self.threads_dir();
        if let Keep::Id(id) = keep {
            return Ok(self.scan_one(id));
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Vec::new(), Vec::new()));
            }
            Err(e) => return Err(Error::io("listing", dir, e)),
        };
        let mut ids = Vec::new();
        let mut errors = Vec::new();
        for entry in entries {
            let entry = entry.ctx("listing", &dir)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !keep.accepts(&name) {
                continue;
            }
            let Ok(id) = ThreadId::try_from(name) else {
                continue;
            };
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_symlink() => {
                    errors.push(crate::fsutil::symlink_error(&path));
                    continue;
                }
                Ok(t) if t.is_dir() => {}
                _ => continue,
            }
            if !with_file || std::fs::symlink_metadata(path.join(atsf::THREAD_FILE)).is_ok() {
                ids.push(id);
            }
        }
        ids.sort();
        Ok((ids, errors))
    }

    /// [`Store::scan_matching`] of one id, without listing the directory:
    /// the same checks on its one entry.
    fn scan_one(&self, id: &str) -> (Vec<ThreadId>, Vec<Error>) {
        let Ok(id) = ThreadId::parse(id) else {
            return (Vec::new(), Vec::new());
        };
        let path = self.threads_dir().join(&id);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                (Vec::new(), vec![crate::fsutil::symlink_error(&path)])
            }
            Ok(m)
                if m.is_dir()
                    && std::fs::symlink_metadata(path.join(atsf::THREAD_FILE)).is_ok() =>
            {
                (vec![id], Vec::new())
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// Finds the thread whose id is `query` or starts with it.
    pub fn resolve(&self, query: &str) -> Result<Thread> {
        validate_thread_id(query)?;
        let ids = self.thread_ids()?;
        match resolve_prefix(query, ids.iter().map(ThreadId::as_str))? {
            Some(id) => self.thread(id),
            None => Err(Error::ThreadNotFound {
                query: query.to_string(),
                dir: self.threads_dir(),
            }),
        }
    }

    /// Creates a thread directory with `thread.json` and an empty
    /// `messages.jsonl`. It is built under a hidden name and renamed into
    /// place, so a thread appears complete or not at all.
    pub fn create_thread(&self, meta: &ThreadMeta) -> Result<Thread> {
        self.stage_thread(meta)?.publish()
    }

    /// Builds a thread in grove's staging area `.agent/.grove/` (outside
    /// `threads/`, so no reader sees a half-made thread), with `thread.json`
    /// and an empty `messages.jsonl`, to be filled and then
    /// [published](StagedThread::publish). Dropped unpublished, it is
    /// removed; the intent journal names it until then, so a killed process
    /// leaves nothing `grove gc` does not recognise.
    pub fn stage_thread(&self, meta: &ThreadMeta) -> Result<StagedThread> {
        let staged = self.stage_empty(&meta.thread_id)?;
        staged.write_meta(meta)?;
        crate::fsutil::create_new(&staged.path().join(atsf::MESSAGES_FILE))?;
        Ok(staged)
    }

    /// [`Store::stage_thread`] with nothing in the staging directory yet, for
    /// a thread whose files come from elsewhere (the cache).
    pub fn stage_empty(&self, id: &str) -> Result<StagedThread> {
        let thread = self.thread(id)?;
        self.ensure_dir()?;
        let threads = self.threads_dir();
        crate::fsutil::real_dir(self.root(), &threads)?;
        if std::fs::symlink_metadata(thread.dir()).is_ok() {
            return Err(Error::ThreadExists {
                id: id.to_string(),
                path: thread.dir().to_path_buf(),
            });
        }
        let area = self.private_dir()?;
        let dir = area.join(format!("staging-{}", uuid::Uuid::new_v4()));
        let step = crate::intent::begin(crate::intent::Action::Stage { dir: dir.clone() })?;
        let staged = StagedThread {
            staging: Some((dir.clone(), step)),
            thread,
        };
        std::fs::create_dir(&dir).ctx("creating a staging directory", &dir)?;
        Ok(staged)
    }

    /// The names of every thread directory (valid ids), whether their
    /// `thread.json` can be read or not.
    pub fn thread_dir_names(&self) -> Vec<String> {
        self.thread_dir_names_starting("")
    }

    /// [`Store::thread_dir_names`] that start with `prefix`: the others are
    /// passed over by their raw name, nothing more.
    pub fn thread_dir_names_starting(&self, prefix: &str) -> Vec<String> {
        let mut ids: Vec<String> =
            crate::fsutil::subdir_names_starting(&self.threads_dir(), prefix)
                .into_iter()
                .filter(|n| validate_thread_id(n).is_ok())
                .collect();
        ids.sort();
        ids
    }

    /// `threads/<id>` (the id is not checked).
    pub fn thread_dir(&self, id: &str) -> PathBuf {
        self.threads_dir().join(id)
    }

    /// `.agent/.grove/`: grove's own working area (staging and trash
    /// directories), on the same filesystem as `threads/` so a rename moves
    /// a thread in or out at once; its `.gitignore` keeps it out of `git status`.
    pub fn private_dir(&self) -> Result<PathBuf> {
        let dir = self.agent_dir.join(PRIVATE_DIR);
        crate::fsutil::real_dir(self.root(), &dir)?;
        crate::fsutil::write_new_unsynced(&dir.join(".gitignore"), IGNORE_ALL.as_bytes())?;
        Ok(dir)
    }

    /// Writes `threads/.gitignore` ignoring everything below it, so threads
    /// in a task's worktree — grove's, imported ones, other tools' — stay out
    /// of its `git status` (pytest and ruff keep their caches out the same
    /// way). Used in linked worktrees only: in the main checkout, the
    /// project decides what of `.agent/` it commits.
    pub fn hide_threads_from_git(&self) -> Result<()> {
        let threads = self.threads_dir();
        crate::fsutil::real_dir(self.root(), &threads)?;
        crate::fsutil::write_new_unsynced(&threads.join(".gitignore"), IGNORE_ALL.as_bytes())?;
        Ok(())
    }

    /// Whether this store is in a linked worktree (its root's `.git` is a
    /// file pointing into the main repository, not a directory).
    pub fn in_linked_worktree(&self) -> bool {
        std::fs::symlink_metadata(self.root().join(".git")).is_ok_and(|m| m.is_file())
    }

    /// Every thread's metadata, newest `updatedAt` first. Reads only
    /// `thread.json` files, never `messages.jsonl`.
    pub fn list(&self) -> Result<Listing> {
        self.list_matching(&|_| true)
    }

    /// [`Store::list`] of the threads whose directory name `keep` accepts:
    /// the others' `thread.json` are not read.
    pub fn list_matching(&self, keep: &dyn Fn(&str) -> bool) -> Result<Listing> {
        self.list_kept(Keep::Where(keep))
    }

    /// [`Store::list_matching`] of the threads `keep` names.
    pub fn list_kept(&self, keep: Keep<'_>) -> Result<Listing> {
        let mut listing = self.list_unordered(keep)?;
        sort_newest_first(&mut listing.threads);
        Ok(listing)
    }

    /// [`Store::list_kept`] in no particular order, for a caller that
    /// orders the threads by its own key (sorting 10,000 threads' metadata
    /// twice is a tenth of a list's time).
    pub fn list_unordered(&self, keep: Keep<'_>) -> Result<Listing> {
        let (ids, errors) = self.scan_dirs(keep, false)?;
        let threads: Vec<Thread> = ids
            .into_iter()
            .map(|id| {
                let dir = self.threads_dir().join(&id);
                Thread::at(id, dir)
            })
            .collect();
        let mut listing = Listing {
            errors,
            ..Listing::default()
        };
        for (thread, meta) in read_metas(threads) {
            match meta {
                Ok((meta, written)) => listing.threads.push(ListedThread {
                    thread,
                    meta,
                    written,
                }),
                // A directory without its `thread.json` (one being made, or
                // left by something else) is no thread.
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => listing.errors.push(e),
            }
        }
        Ok(listing)
    }
}

/// Which threads a listing reads.
#[derive(Clone, Copy)]
pub enum Keep<'a> {
    /// Those whose id the function accepts: every name is listed.
    Where(&'a dyn Fn(&str) -> bool),
    /// The one with this id, looked up directly: in a store of 10,000
    /// threads, listing the directory is most of what finding one costs.
    Id(&'a str),
}

impl Keep<'_> {
    /// Whether the thread `id` is kept.
    pub fn accepts(&self, id: &str) -> bool {
        match self {
            Keep::Where(keep) => keep(id),
            Keep::Id(only) => *only == id,
        }
    }
}

/// Name of grove's private area inside `.agent/`.
pub const PRIVATE_DIR: &str = ".grove";

/// The cache's record of a copy of a thread, in the copy's directory
/// beside the thread's files: never one of the thread's own files (a
/// thread restored from its copy does not take it along).
pub(crate) const CACHE_RECORD: &str = "cache.json";

/// The line before what grove adds to a worktree's `.agent/.gitignore`: the
/// files it wrote there, kept out of that worktree's `git status` (and only
/// that worktree's: the repository-wide `info/exclude` would hide the main
/// checkout's `.agent/config.json` from `git add`).
pub(crate) const WORKTREE_IGNORE_MARK: &str = "# Added by grove: copies of the main checkout's files, kept out of this worktree's git status.";

/// A `.gitignore` that ignores its whole directory, itself included.
const IGNORE_ALL: &str = "# Created by grove: keeps this directory out of git status.\n*\n";

/// A thread being built aside; see [`Store::stage_thread`].
#[derive(Debug)]
pub struct StagedThread {
    staging: Option<(PathBuf, crate::intent::Step)>,
    thread: Thread,
}

impl StagedThread {
    /// The hidden directory being filled.
    pub fn path(&self) -> &Path {
        match &self.staging {
            Some((dir, _)) => dir,
            None => self.thread.dir(),
        }
    }

    /// The thread it will become.
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// The staged `messages.jsonl`.
    pub fn log_path(&self) -> PathBuf {
        self.path().join(atsf::MESSAGES_FILE)
    }

    /// The staged `messages.jsonl`, opened to append (never through a
    /// link): the one way a staged thread's log is written.
    pub fn open_log(&self) -> Result<std::fs::File> {
        crate::fsutil::open_append(&self.log_path(), false)
    }

    /// Replaces the staged `thread.json`.
    pub fn write_meta(&self, meta: &ThreadMeta) -> Result<()> {
        write_atomic(
            &self.path().join(atsf::THREAD_FILE),
            &atsf::to_pretty(meta)?,
        )
    }

    /// Renames the staged directory into place: the thread appears whole.
    /// [`Error::ThreadExists`] when another process published the same
    /// thread first (the staged copy is then removed).
    pub fn publish(mut self) -> Result<Thread> {
        let Some((staged, step)) = self.staging.take() else {
            return Ok(self.thread.clone());
        };
        let target = self.thread.dir().to_path_buf();
        let taken = std::fs::symlink_metadata(&target).is_ok();
        let renamed = if taken {
            Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
        } else {
            std::fs::rename(&staged, &target)
        };
        if let Err(e) = renamed {
            let _ = std::fs::remove_dir_all(&staged);
            step.undone();
            let exists = std::fs::symlink_metadata(&target).is_ok();
            return Err(if exists {
                Error::ThreadExists {
                    id: self.thread.id().to_string(),
                    path: target,
                }
            } else {
                Error::io("moving the new thread into", target, e)
            });
        }
        step.done();
        let store = Store::at(
            target
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(".")),
        );
        if let Some(parent) = target.parent() {
            crate::fsutil::sync_dir(parent)?;
        }
        if store.in_linked_worktree() {
            store.hide_threads_from_git()?;
        }
        Ok(self.thread.clone())
    }
}

impl Drop for StagedThread {
    fn drop(&mut self) {
        if let Some((dir, step)) = self.staging.take()
            && (std::fs::remove_dir_all(&dir).is_ok() || std::fs::symlink_metadata(&dir).is_err())
        {
            step.undone();
        }
    }
}

/// Reads many `thread.json` files, spread over the available cores.
/// A thread's `thread.json` and when it was last written.
type MetaRead = Result<(ThreadMeta, Option<std::time::SystemTime>)>;

fn read_metas(threads: Vec<Thread>) -> Vec<(Thread, MetaRead)> {
    let metas = crate::parallel::map(&threads, 64, Thread::meta_and_mtime);
    threads.into_iter().zip(metas).collect()
}

/// Sorts by `updatedAt`, newest first; ties by `createdAt`, then id.
pub fn sort_newest_first(threads: &mut [ListedThread]) {
    // Each time parsed once, not at every comparison.
    threads.sort_by_cached_key(|t| {
        (
            std::cmp::Reverse((
                t.meta.updated_at.parse::<jiff::Timestamp>().ok(),
                t.meta.created_at.parse::<jiff::Timestamp>().ok(),
            )),
            t.thread.id().to_owned(),
        )
    });
}

/// Picks the one id equal to `query`, or the only one starting with it.
///
/// ```
/// use grove::store::resolve_prefix;
/// let ids = ["abc1", "abc2", "def"];
/// assert_eq!(resolve_prefix("d", ids).unwrap(), Some("def"));
/// assert!(resolve_prefix("abc", ids).is_err());
/// assert_eq!(resolve_prefix("x", ids).unwrap(), None);
/// ```
pub fn resolve_prefix<'a>(
    query: &str,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<Option<&'a str>> {
    if query.is_empty() {
        return Err(Error::InvalidThreadId {
            id: String::new(),
            reason: "it is empty",
        });
    }
    let mut matches: Vec<&str> = Vec::new();
    for id in ids {
        if id == query {
            return Ok(Some(id));
        }
        if id.starts_with(query) {
            matches.push(id);
        }
    }
    // A prefix of a thread and of the threads whose ids extend its own
    // (a session's subagents: `claude-<session>-agent-…`) names the thread.
    if let Some(root) = matches
        .iter()
        .find(|m| matches.iter().all(|o| o.starts_with(**m)))
    {
        return Ok(Some(root));
    }
    match matches.len() {
        0 => Ok(None),
        1 => Ok(Some(matches[0])),
        _ => Err(Error::AmbiguousThread {
            query: query.to_string(),
            candidates: matches.into_iter().map(String::from).collect(),
        }),
    }
}

/// grove never writes inside a git directory (a bare repository, `.git`):
/// git owns every file there.
fn refuse_git_dir(root: &Path) -> Result<()> {
    let in_git_dir = root.components().any(|c| c.as_os_str() == ".git")
        || (root.join("HEAD").is_file()
            && root.join("objects").is_dir()
            && root.join("refs").is_dir());
    if in_git_dir {
        return Err(Error::Refused(format!(
            "{} is a git directory (a bare repository?), and grove never writes there; \
             run grove in one of its worktrees (`git worktree add ../main main`)",
            root.display()
        )));
    }
    Ok(())
}

/// Whether a path of a worktree (as git prints it, relative to its root) is
/// one of grove's own: `.agent/threads/…` or `.agent/.grove/…`. Those are
/// saved to the cache before a worktree is removed, so they are never
/// "uncommitted work", and never carried into another worktree.
pub(crate) fn is_grove_path(path: &[u8]) -> bool {
    let under = |dir: &str| {
        let prefix = format!("{}/{dir}", crate::atsf::AGENT_DIR);
        path.strip_prefix(prefix.as_bytes())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    };
    under(crate::atsf::THREADS_DIR) || under(PRIVATE_DIR)
}
