//! The thread store: one `.agent/` directory and the threads inside it.

mod assets;
mod id;
mod reader;
mod tail;
mod thread;

use std::path::{Path, PathBuf};

pub use assets::{asset_name, extension_for_mime, extract_inline_images, store_asset};
pub use id::{new_thread_id, validate_thread_id};
pub use reader::MessageReader;
pub use tail::TornTail;
pub(crate) use thread::set_recorded_length;
pub use thread::{
    AppendOptions, Appended, RepairReport, Snapshot, Thread, ThreadLock, validate_message,
};

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
}

/// A listing: the threads that could be read and the ones that could not.
#[derive(Debug, Default)]
pub struct Listing {
    pub threads: Vec<ListedThread>,
    /// Unreadable `thread.json` files (bad JSON, newer version), one error each.
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

    /// Creates `.agent/` (and its default `.gitignore`) if missing; never
    /// overwrites an existing `.gitignore`. Returns whether it wrote the file.
    pub fn ensure_dir(&self) -> Result<bool> {
        std::fs::create_dir_all(&self.agent_dir).ctx("creating", &self.agent_dir)?;
        write_new(
            &self.agent_dir.join(".gitignore"),
            atsf::DEFAULT_GITIGNORE.as_bytes(),
        )
    }

    /// `grove init`: `.agent/`, its `.gitignore` and a `config.json`, each
    /// only if missing. Idempotent.
    pub fn init(&self) -> Result<InitOutcome> {
        let created_gitignore = self.ensure_dir()?;
        let config_path = self.config_path();
        let created_config = if config_path.exists() {
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
        if !path.exists() {
            return Ok(None);
        }
        atsf::read_json_file(&path).map(Some)
    }

    /// Writes `config.json` atomically.
    pub fn write_config(&self, config: &Config) -> Result<()> {
        self.ensure_dir()?;
        write_atomic(&self.config_path(), &atsf::to_pretty(config)?)
    }

    /// A handle on thread `id`, after checking the id is a safe directory name.
    /// Does not check that the thread exists.
    pub fn thread(&self, id: &str) -> Result<Thread> {
        validate_thread_id(id)?;
        Ok(Thread::at(id.to_string(), self.threads_dir().join(id)))
    }

    /// Ids of the thread directories (names that are valid ids and hold a `thread.json`).
    pub fn thread_ids(&self) -> Result<Vec<String>> {
        let dir = self.threads_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("listing", dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.ctx("listing", &dir)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if validate_thread_id(&name).is_ok() && entry.path().join(atsf::THREAD_FILE).is_file() {
                ids.push(name);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Finds the thread whose id is `query` or starts with it.
    pub fn resolve(&self, query: &str) -> Result<Thread> {
        validate_thread_id(query)?;
        let ids = self.thread_ids()?;
        match resolve_prefix(query, ids.iter().map(String::as_str))? {
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

    /// Builds a thread under a hidden name in the threads directory, with
    /// `thread.json` and an empty `messages.jsonl`, to be filled and then
    /// [published](StagedThread::publish). Dropped unpublished, it is removed.
    pub fn stage_thread(&self, meta: &ThreadMeta) -> Result<StagedThread> {
        let thread = self.thread(&meta.thread_id)?;
        self.ensure_dir()?;
        let threads = self.threads_dir();
        std::fs::create_dir_all(&threads).ctx("creating", &threads)?;
        if thread.dir().exists() {
            return Err(Error::ThreadExists {
                id: meta.thread_id.clone(),
                path: thread.dir().to_path_buf(),
            });
        }
        let staging = tempfile::Builder::new()
            .prefix(".grove-new-")
            .tempdir_in(&threads)
            .ctx("creating a staging directory in", &threads)?;
        let staged = StagedThread {
            staging: Some(staging),
            thread,
        };
        staged.write_meta(meta)?;
        let messages = staged.path().join(atsf::MESSAGES_FILE);
        std::fs::File::create(&messages).ctx("creating", &messages)?;
        Ok(staged)
    }

    /// Every thread's metadata, newest `updatedAt` first. Reads only
    /// `thread.json` files, never `messages.jsonl`.
    pub fn list(&self) -> Result<Listing> {
        let ids = self.thread_ids()?;
        let threads: Vec<Thread> = ids
            .into_iter()
            .map(|id| {
                let dir = self.threads_dir().join(&id);
                Thread::at(id, dir)
            })
            .collect();
        let mut listing = Listing::default();
        for (thread, meta) in read_metas(threads) {
            match meta {
                Ok(meta) => listing.threads.push(ListedThread { thread, meta }),
                Err(e) => listing.errors.push(e),
            }
        }
        sort_newest_first(&mut listing.threads);
        Ok(listing)
    }
}

/// A thread being built aside; see [`Store::stage_thread`].
#[derive(Debug)]
pub struct StagedThread {
    staging: Option<tempfile::TempDir>,
    thread: Thread,
}

impl StagedThread {
    /// The hidden directory being filled.
    pub fn path(&self) -> &Path {
        match &self.staging {
            Some(dir) => dir.path(),
            None => self.thread.dir(),
        }
    }

    /// The thread it will become.
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// Replaces the staged `thread.json`.
    pub fn write_meta(&self, meta: &ThreadMeta) -> Result<()> {
        write_atomic(
            &self.path().join(atsf::THREAD_FILE),
            &atsf::to_pretty(meta)?,
        )
    }

    /// Renames the staged directory into place: the thread appears whole.
    pub fn publish(mut self) -> Result<Thread> {
        let Some(staging) = self.staging.take() else {
            return Ok(self.thread.clone());
        };
        let staged = staging.keep();
        if let Err(e) = std::fs::rename(&staged, self.thread.dir()) {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(Error::io(
                "moving the new thread into",
                self.thread.dir(),
                e,
            ));
        }
        if let Some(parent) = self.thread.dir().parent() {
            crate::fsutil::sync_dir(parent)?;
        }
        Ok(self.thread.clone())
    }
}

/// Reads many `thread.json` files, spread over the available cores.
fn read_metas(threads: Vec<Thread>) -> Vec<(Thread, Result<ThreadMeta>)> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads.len() < 64 || workers < 2 {
        return threads
            .into_iter()
            .map(|t| {
                let meta = t.meta();
                (t, meta)
            })
            .collect();
    }
    let chunk = threads.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = threads
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|t| (t.clone(), t.meta()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Sorts by `updatedAt`, newest first; ties by `createdAt`, then id.
pub fn sort_newest_first(threads: &mut [ListedThread]) {
    fn key(t: &ListedThread) -> (Option<jiff::Timestamp>, Option<jiff::Timestamp>) {
        (
            t.meta.updated_at.parse().ok(),
            t.meta.created_at.parse().ok(),
        )
    }
    threads.sort_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then_with(|| a.thread.id().cmp(b.thread.id()))
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
    match matches.len() {
        0 => Ok(None),
        1 => Ok(Some(matches[0])),
        _ => Err(Error::AmbiguousThread {
            query: query.to_string(),
            candidates: matches.into_iter().map(String::from).collect(),
        }),
    }
}
