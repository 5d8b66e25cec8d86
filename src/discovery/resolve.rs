//! Finding one thread by the name a user gives: an id or a unique prefix,
//! anywhere in the repository — a live worktree's copy before the cache's.

use std::path::PathBuf;

use crate::cache;
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::project::Project;
use crate::store::{Keep, Store, Thread, ThreadId, resolve_prefix};

use super::walk::{discover, discover_kept, linked_worktrees};
use super::{Discovered, Found, Options};

/// Finds the thread named by `query` (an id or unique prefix) anywhere in
/// the repository: main `.agent/`, worktrees, cache — and other
/// repositories' caches. A thread whose worktree still holds it is always
/// answered with the worktree's copy, never the cache's, wherever grove runs.
pub fn resolve(project: &Project, query: &str) -> Result<Found> {
    resolve_reporting(project, query).map(|(found, _)| found)
}

/// [`resolve`], with what could not be read on the way (threads, stores,
/// cache entries, each naming its file), for the caller to report.
pub fn resolve_reporting(project: &Project, query: &str) -> Result<(Found, Vec<Error>)> {
    if crate::store::validate_thread_id(query).is_ok()
        && let Some(hit) = by_id(project, query)?
    {
        return Ok(hit);
    }
    // Nothing by id: the walk of this repository, for a name a person gives
    // (a path, a branch, a title word) and to say what could not be read.
    let found = discover(project, Options::default())?;
    let ids: Vec<&str> = found
        .threads
        .iter()
        .map(|f| f.thread.id().as_str())
        .collect();
    let by_prefix = match crate::store::validate_thread_id(query) {
        Ok(()) => resolve_prefix(query, ids.iter().copied())?.map(str::to_string),
        Err(_) => None,
    };
    let index = match by_prefix {
        Some(id) => found.threads.iter().position(|f| *f.thread.id() == id),
        None => super::by_name::pick(project, query, &found.threads)?,
    };
    let Some(index) = index else {
        // Not an id, and no task's name: say why it is no id.
        crate::store::validate_thread_id(query)?;
        return Err(not_found(project, query, &found.errors));
    };
    let Discovered {
        mut threads,
        errors,
    } = found;
    Ok((live_copy(threads.swap_remove(index)), errors))
}

/// A thread found by its id or a unique prefix of one, looking at names
/// only: this repository's stores, then the cache of any repository.
fn by_id(project: &Project, query: &str) -> Result<Option<(Found, Vec<Error>)>> {
    // A whole id (the exact id wins over ids it is a prefix of) is looked
    // up directly, without listing the names.
    if uuid::Uuid::try_parse(query).is_ok()
        && let Some(hit) = load_one(project, query, false)?
    {
        return Ok(Some(hit));
    }
    // This repository first, by directory names alone (no thread.json is
    // read but the one found); other repositories' caches only when nothing
    // here matches.
    let here = Names::of(project, query);
    if let Some(id) = here.resolve(query)?
        && let Some(hit) = load_one(project, &id, false)?
    {
        return Ok(Some(hit));
    }
    let elsewhere: Vec<ThreadId> = cache::entries(None)?
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| id.starts_with(query) && !here.contains(id))
        .collect();
    if let Some(id) = resolve_prefix(query, elsewhere.iter().map(ThreadId::as_str))? {
        let id = id.to_string();
        if let Some(hit) = load_one(project, &id, true)? {
            return Ok(Some(hit));
        }
    }
    Ok(None)
}

/// The thread `id` as discovery finds it, reading that thread alone.
pub(super) fn load_one(
    project: &Project,
    id: &str,
    all_repos: bool,
) -> Result<Option<(Found, Vec<Error>)>> {
    let options = Options {
        all_repos,
        statuses: false,
        details: false,
    };
    let found = discover_kept(project, options, Keep::Id(id))?;
    let errors = found.errors;
    Ok(found
        .threads
        .into_iter()
        .find(|f| f.thread.id() == id)
        .map(|hit| (live_copy(hit), errors)))
}

/// The thread directory names of `project`'s repository that start with
/// `prefix` — its main `.agent/`, its worktrees' (found through libgit2),
/// its cache — each with the store holding it (`None`: the cache only).
/// Nothing is parsed; other names cost only their directory entry.
pub(super) struct Names {
    stores: Vec<Store>,
    names: Vec<(String, Option<usize>)>,
}

impl Names {
    fn of(project: &Project, prefix: &str) -> Names {
        let mut stores = vec![project.main_store()];
        stores.extend(
            worktree_roots(project)
                .iter()
                .map(|r| Store::for_project(r)),
        );
        let mut names = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let found = store.thread_dir_names_starting(prefix);
            names.extend(found.into_iter().map(|n| (n, Some(i))));
        }
        if let Ok(cached) = cache::entries(Some(&project.main_root)) {
            let found = cached.into_iter().filter(|(id, _)| id.starts_with(prefix));
            names.extend(found.map(|(id, _)| (id.to_string(), None)));
        }
        Names { stores, names }
    }

    /// The id `query` names here, if one.
    fn resolve(&self, query: &str) -> Result<Option<String>> {
        let ids = self.names.iter().map(|(n, _)| n.as_str());
        Ok(resolve_prefix(query, ids)?.map(str::to_string))
    }

    fn contains(&self, id: &str) -> bool {
        self.names.iter().any(|(n, _)| n == id)
    }

    /// The live thread `id` in one of the stores (not only in the cache).
    fn live(&self, id: &str) -> Option<Thread> {
        let at = self.names.iter().find(|(n, _)| n == id)?.1?;
        let thread = self.stores[at].thread(id).ok()?;
        std::fs::symlink_metadata(thread.meta_path())
            .is_ok()
            .then_some(thread)
    }
}

/// Why nothing matched: a thread that is there but unreadable says so.
pub(super) fn not_found(project: &Project, query: &str, errors: &[Error]) -> Error {
    for store in [project.store(), project.main_store()] {
        if let Ok(thread) = store.resolve(query)
            && let Err(e) = thread.meta()
        {
            return e;
        }
    }
    for e in errors {
        let path = match e {
            Error::Parse { path, .. } | Error::Symlink { path, .. } | Error::Io { path, .. } => {
                path
            }
            _ => continue,
        };
        let named = path.components().any(|c| {
            c.as_os_str()
                .to_str()
                .is_some_and(|name| name.starts_with(query))
        });
        if named {
            return Error::Other(format!("thread {query:?} cannot be read: {e}"));
        }
    }
    Error::ThreadNotFound {
        query: query.to_string(),
        dir: project.main_store().threads_dir(),
    }
}

/// A thread found in a cache (another repository's, or from outside any
/// repository) whose worktree still holds it: the worktree's thread, with
/// its worktree's real state.
pub(super) fn live_copy(hit: Found) -> Found {
    if !hit.from_cache {
        return hit;
    }
    let Some(wt) = hit.worktree.clone() else {
        return hit;
    };
    let home = Store::for_project(&wt).thread_dir(hit.thread.id());
    if std::fs::symlink_metadata(home.join(crate::atsf::THREAD_FILE)).is_err() {
        return hit;
    }
    let Ok(project) = Project::discover(&wt) else {
        return hit;
    };
    let id = hit.thread.id().to_string();
    let Ok(found) = discover_kept(&project, Options::default(), Keep::Id(&id)) else {
        return hit;
    };
    found
        .threads
        .into_iter()
        .find(|f| f.thread.id() == hit.thread.id() && !f.from_cache)
        .unwrap_or(hit)
}

/// The thread named by `query`, for commands that need only its files
/// (append, show, repair). A full id in the current or main `.agent/` is
/// found directly — an agent hook appending after every turn does not pay
/// for a walk over all worktrees and the cache; anything else is resolved
/// as [`resolve`] does.
pub fn find_thread(project: &Project, query: &str) -> Result<Thread> {
    if crate::store::validate_thread_id(query).is_err() {
        // A path, or a branch with a slash: a name only the walk knows.
        return Ok(resolve(project, query)?.thread);
    }
    for store in [project.store(), project.main_store()] {
        let thread = store.thread(query)?;
        if std::fs::symlink_metadata(thread.meta_path()).is_ok() {
            thread.guard()?;
            return Ok(thread);
        }
    }
    // By name in this repository's stores (its worktrees found through
    // libgit2: no git process): a thread living in one is its own answer.
    let here = Names::of(project, query);
    if let Some(id) = here.resolve(query)?
        && let Some(thread) = here.live(&id)
    {
        thread.guard()?;
        return Ok(thread);
    }
    Ok(resolve(project, query)?.thread)
}

/// The roots of the repository's linked worktrees that exist, read with
/// libgit2 (no git process); through git when libgit2 cannot open it.
pub(super) fn worktree_roots(project: &Project) -> Vec<PathBuf> {
    if project.git.is_none() {
        return Vec::new();
    }
    // No `.git/worktrees/`: no linked worktree, nothing to open.
    let dot_git = project.main_root.join(".git");
    if dot_git.is_dir() && !dot_git.join("worktrees").is_dir() {
        return Vec::new();
    }
    if let Some(git) = crate::git::open(&project.main_root)
        && let Ok(names) = git.worktrees()
    {
        return names
            .iter()
            .filter_map(|n| git.find_worktree(n.ok().flatten()?).ok())
            .map(|w| w.path().to_path_buf())
            .filter(|p| p.is_dir())
            .collect();
    }
    let Ok(repo) = Repo::new(&project.main_root) else {
        return Vec::new();
    };
    let mut ignored = Vec::new();
    linked_worktrees(&repo, &project.main_root, &mut ignored)
        .into_iter()
        .map(|w| w.path)
        .filter(|p| p.is_dir())
        .collect()
}

/// The cache's copy of `thread`, looked up under the repository its
/// `thread.json` records (`metadata.grove.mainRoot`), else `project`'s.
pub fn cache_copy_for(project: &Project, thread: &Thread) -> Option<PathBuf> {
    let recorded = thread.meta().ok().and_then(|m| m.grove().main_root());
    recorded
        .into_iter()
        .chain(std::iter::once(project.main_root.clone()))
        .find_map(|root| cache::cached_copy(&root, thread.id()))
        .filter(|dir| !crate::fsutil::same_file(dir, thread.dir()))
}

/// Names the cache's copy in a [`Error::LogShrunk`] about `thread`.
pub fn with_cache_hint(err: Error, project: &Project, thread: &Thread) -> Error {
    match err {
        Error::LogShrunk {
            id,
            path,
            found,
            expected,
            cache: None,
        } => Error::LogShrunk {
            cache: cache_copy_for(project, thread),
            id,
            path,
            found,
            expected,
        },
        other => other,
    }
}
