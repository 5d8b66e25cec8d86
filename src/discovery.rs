//! Finding every thread grove knows of: the main `.agent/`, the `.agent/` of
//! every worktree git knows, and the cache — each with a status.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::atsf::ThreadMeta;
use crate::cache::{self, CacheRecord, CacheState};
use crate::error::{Error, Result};
use crate::git::integrated::Checker;
use crate::git::{Integration, Repo, WorktreeEntry, is_dirty_among_many};
use crate::project::Project;
use crate::store::{Keep, Store, Thread, resolve_prefix};

/// Where a thread stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    /// In the main `.agent/`, without a worktree of its own.
    Local,
    /// Its worktree exists and has no uncommitted changes.
    Live,
    /// Its worktree has uncommitted changes.
    Dirty,
    /// Its branch has commits and all are integrated into the default branch.
    Merged,
    /// Git still knows its worktree, but the directory is gone.
    Missing,
    /// Its worktree was removed; the thread lives in the cache.
    Removed,
    /// Another machine's thread, brought by `grove pull` into the cache.
    Remote,
    /// Its worktree exists, but the thread there cannot be read (a
    /// `threadId` that is not its directory's name, bad JSON, a link):
    /// shown from grove's cache, and left alone until it is fixed.
    Unreadable,
}

impl Status {
    /// Every status, in the order `list` explains them.
    pub const ALL: [Status; 8] = [
        Status::Local,
        Status::Live,
        Status::Dirty,
        Status::Merged,
        Status::Missing,
        Status::Removed,
        Status::Remote,
        Status::Unreadable,
    ];

    /// The status named `s` (`dirty`).
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The status as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Local => "local",
            Status::Live => "live",
            Status::Dirty => "dirty",
            Status::Merged => "merged",
            Status::Missing => "missing",
            Status::Removed => "removed",
            Status::Remote => "remote",
            Status::Unreadable => "unreadable",
        }
    }
}

/// A thread and where it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub thread: Thread,
    pub meta: ThreadMeta,
    pub status: Status,
    /// The worktree the thread belongs to, if any.
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
    /// Git's lock reason when the worktree is locked.
    pub locked: Option<String>,
    /// Root of the repository's main working tree.
    pub repo_root: PathBuf,
    /// Whether the thread was read from the cache.
    pub from_cache: bool,
    /// Why its branch counts as integrated into the default branch (when
    /// its status is `merged`).
    pub integration: Option<Integration>,
    /// When its `thread.json` was last written, when the read that found it
    /// said so (`None`: [`last_activity`] asks).
    pub written: Option<std::time::SystemTime>,
}

impl Found {
    /// The worktree directory, when it exists and the thread lives in it.
    pub fn live_worktree(&self) -> Option<&Path> {
        match self.status {
            Status::Live | Status::Dirty | Status::Merged if !self.from_cache => {
                self.worktree.as_deref().filter(|w| w.is_dir())
            }
            _ => None,
        }
    }

    /// Brings the cached copy of a live worktree thread up to date after its
    /// `thread.json` changed, so a later `rm -rf` loses nothing.
    pub fn refresh_cache(&self) -> Result<()> {
        let Some(wt) = self.live_worktree() else {
            return Ok(());
        };
        if self.meta.context.worktree.is_none() {
            return Ok(());
        }
        let record = CacheRecord {
            repo_root: self.repo_root.to_string_lossy().into_owned(),
            worktree_path: wt.to_string_lossy().into_owned(),
            branch: self.branch.clone().unwrap_or_default(),
            state: CacheState::Live,
            cached_at: crate::atsf::now_timestamp(),
        };
        cache::refresh(&self.repo_root, &self.thread, &record)
    }
}

/// What to find.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also other repositories' cached threads.
    pub all_repos: bool,
    /// Compute `dirty`/`merged` (costs a status per worktree).
    pub statuses: bool,
}

/// Everything found, and the threads that could not be read.
#[derive(Debug, Default)]
pub struct Discovered {
    pub threads: Vec<Found>,
    pub errors: Vec<Error>,
}

/// Finds the threads of `project`'s repository. One unreadable thread,
/// store or cache entry never stops the others: each is reported in
/// [`Discovered::errors`], naming its file.
///
/// The cache is read last, and only for the threads no worktree answered
/// for: a live thread's copy is never parsed.
pub fn discover(project: &Project, options: Options) -> Result<Discovered> {
    discover_matching(project, options, &|_| true)
}

/// [`discover`] of the threads whose id `keep` accepts: the others are not
/// read (their directory names are, nothing more).
pub fn discover_matching(
    project: &Project,
    options: Options,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Discovered> {
    discover_kept(project, options, Keep::Where(keep))
}

/// [`discover_matching`] of the threads `keep` names.
fn discover_kept(project: &Project, options: Options, keep: Keep<'_>) -> Result<Discovered> {
    let mut out = Discovered::default();
    let main_root = project.main_root.clone();
    let mut seen: HashSet<String> = HashSet::new();
    add_local(project, &mut out, &mut seen, keep);
    let cached_ids: Vec<(String, PathBuf)> = match keep {
        Keep::Id(id) => cache::entry(&main_root, id)?.into_iter().collect(),
        Keep::Where(_) => cache::entries(Some(&main_root))?
            .into_iter()
            .filter(|(id, _)| keep.accepts(id))
            .collect(),
    };
    let unseen = |seen: &HashSet<String>, ids: &[(String, PathBuf)]| {
        ids.iter()
            .filter(|(id, _)| !seen.contains(id))
            .cloned()
            .collect::<Vec<_>>()
    };
    let repo = match &project.git {
        Some(_) => Some(Repo::new(&main_root)?),
        None => None,
    };
    let mut rest = Vec::new();
    if let Some(repo) = &repo {
        let worktrees = linked_worktrees(repo, &main_root, &mut out.errors);
        let mut live = Vec::new();
        for wt in worktrees.iter().filter(|w| w.path.is_dir()) {
            for f in worktree_threads(&main_root, wt, &mut out.errors, keep) {
                if seen.insert(f.thread.id().to_string()) {
                    live.push(out.threads.len());
                    out.threads.push(f);
                }
            }
        }
        let (cached, errors) = cache::load(unseen(&seen, &cached_ids));
        out.errors.extend(errors);
        if let Err(e) = finish_interrupted_removals(repo, &cached) {
            out.errors.push(e);
        }
        for c in &cached {
            let home = Path::new(&c.record.worktree_path);
            let Some(wt) = worktrees.iter().find(|w| w.path == home) else {
                rest.push(c.clone());
                continue;
            };
            if !wt.path.is_dir() && c.record.state == CacheState::Removing {
                // An interrupted `rm`, finished above: the worktree is gone.
                rest.push(c.clone());
            } else if !wt.path.is_dir() {
                seen.insert(c.thread.id().to_string());
                out.threads
                    .push(from_cache(c, Status::Missing, wt.locked.clone()));
            } else if c.record.state == CacheState::Live && thread_dir_there(wt, c) {
                // The thread is there and cannot be read (its error is
                // among the warnings): never restored over, never taken
                // for removed.
                seen.insert(c.thread.id().to_string());
                out.threads
                    .push(from_cache(c, Status::Unreadable, wt.locked.clone()));
            } else if c.record.state == CacheState::Live {
                // The worktree is there but lost the thread (`git clean -fdx`).
                match restore(&main_root, wt, c) {
                    Ok(f) => {
                        seen.insert(f.thread.id().to_string());
                        live.push(out.threads.len());
                        out.threads.push(f);
                    }
                    Err(e) => {
                        out.errors.push(e);
                        rest.push(c.clone());
                    }
                }
            } else {
                rest.push(c.clone());
            }
        }
        if options.statuses {
            compute_statuses(repo, &mut out.threads, &live)?;
        }
    } else {
        let (cached, errors) = cache::load(unseen(&seen, &cached_ids));
        out.errors.extend(errors);
        rest = cached;
    }
    for c in &rest {
        if seen.insert(c.thread.id().to_string()) {
            let status = match c.record.state {
                CacheState::Remote => Status::Remote,
                _ => Status::Removed,
            };
            out.threads.push(from_cache(c, status, None));
        }
    }
    if options.all_repos {
        let known: Vec<&Path> = cached_ids.iter().map(|(_, d)| d.as_path()).collect();
        add_other_repositories(&mut out, &mut seen, &main_root, &known, options, keep)?;
    }
    sort_newest_first(&mut out.threads);
    Ok(out)
}

/// Whether the worktree `wt` still has a directory (or anything) under the
/// name of cached thread `c`.
fn thread_dir_there(wt: &WorktreeEntry, c: &cache::CachedThread) -> bool {
    std::fs::symlink_metadata(Store::for_project(&wt.path).thread_dir(c.thread.id())).is_ok()
}

/// `--all`: the other repositories of grove's cache. Those still there
/// answer for their own tasks, with real statuses; the cache, for what is
/// gone.
fn add_other_repositories(
    out: &mut Discovered,
    seen: &mut HashSet<String>,
    main_root: &Path,
    ours: &[&Path],
    options: Options,
    keep: Keep<'_>,
) -> Result<()> {
    let others = cache::entries(None)?
        .into_iter()
        .filter(|(id, dir)| {
            keep.accepts(id) && !seen.contains(id) && !ours.contains(&dir.as_path())
        })
        .collect();
    let (all, errors) = cache::load(others);
    out.errors.extend(errors);
    let roots: std::collections::BTreeSet<PathBuf> = all
        .iter()
        .map(|c| PathBuf::from(&c.record.repo_root))
        .filter(|r| r != main_root && r.is_dir())
        .collect();
    let options = Options {
        all_repos: false,
        ..options
    };
    for root in roots {
        let Ok(other) = Project::discover(&root) else {
            continue;
        };
        if other.main_root == main_root {
            continue;
        }
        if let Ok(found) = discover_kept(&other, options, keep) {
            out.errors.extend(found.errors);
            for f in found.threads {
                if seen.insert(f.thread.id().to_string()) {
                    out.threads.push(f);
                }
            }
        }
    }
    for c in all {
        if Path::new(&c.record.repo_root) != main_root && seen.insert(c.thread.id().to_string()) {
            out.threads.push(from_cache(&c, Status::Removed, None));
        }
    }
    Ok(())
}

/// The threads of the main checkout's `.agent/`.
fn add_local(project: &Project, out: &mut Discovered, seen: &mut HashSet<String>, keep: Keep<'_>) {
    match project.main_store().list_unordered(keep) {
        Ok(listing) => {
            out.errors.extend(listing.errors);
            for t in listing.threads {
                seen.insert(t.thread.id().to_string());
                out.threads.push(Found {
                    status: Status::Local,
                    worktree: None,
                    branch: t.meta.context.git_branch.clone(),
                    locked: None,
                    repo_root: project.main_root.clone(),
                    from_cache: false,
                    integration: None,
                    written: t.written,
                    thread: t.thread,
                    meta: t.meta,
                });
            }
        }
        Err(e) => out.errors.push(e),
    }
}

/// The repository's linked worktrees (not the main one, not bare). A broken
/// worktree entry (git killed while adding it) makes git refuse to list any:
/// reported, and the rest of the answer goes on without worktrees.
fn linked_worktrees(repo: &Repo, main_root: &Path, errors: &mut Vec<Error>) -> Vec<WorktreeEntry> {
    let listed = repo.worktrees().unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    listed
        .into_iter()
        .filter(|w| !w.bare && w.path != main_root)
        .filter(|w| w.path.canonicalize().ok().as_deref() != Some(main_root))
        .collect()
}

/// Puts a cached thread back into the worktree that lost it.
fn restore(main_root: &Path, wt: &WorktreeEntry, c: &cache::CachedThread) -> Result<Found> {
    let store = Store::for_project(&wt.path);
    let thread = cache::restore(c, &store)?;
    Ok(Found {
        meta: thread.meta()?,
        thread,
        status: Status::Live,
        worktree: Some(wt.path.clone()),
        branch: wt.branch.clone(),
        locked: wt.locked.clone(),
        repo_root: main_root.to_path_buf(),
        from_cache: false,
        integration: None,
        written: None,
    })
}

/// The threads of one linked worktree that exists, every one of them kept
/// in the cache and out of `git status`.
fn worktree_threads(
    main_root: &Path,
    wt: &WorktreeEntry,
    errors: &mut Vec<Error>,
    keep: Keep<'_>,
) -> Vec<Found> {
    let store = Store::for_project(&wt.path);
    let record = CacheRecord {
        repo_root: main_root.to_string_lossy().into_owned(),
        worktree_path: wt.path.to_string_lossy().into_owned(),
        branch: wt.branch.clone().unwrap_or_default(),
        state: CacheState::Live,
        cached_at: crate::atsf::now_timestamp(),
    };
    let listing = match store.list_unordered(keep) {
        Ok(listing) => listing,
        Err(e) => {
            errors.push(e);
            return Vec::new();
        }
    };
    errors.extend(listing.errors);
    if !listing.threads.is_empty()
        && let Err(e) = store.hide_threads_from_git()
    {
        errors.push(e);
    }
    listing
        .threads
        .into_iter()
        .map(|t| {
            // Keep the cache current whenever a live thread is read.
            if let Err(e) = cache::refresh(main_root, &t.thread, &record) {
                errors.push(e);
            }
            Found {
                status: Status::Live,
                worktree: Some(wt.path.clone()),
                branch: wt.branch.clone(),
                locked: wt.locked.clone(),
                repo_root: main_root.to_path_buf(),
                from_cache: false,
                integration: None,
                written: t.written,
                thread: t.thread,
                meta: t.meta,
            }
        })
        .collect()
}

fn from_cache(c: &cache::CachedThread, status: Status, locked: Option<String>) -> Found {
    Found {
        thread: c.thread.clone(),
        meta: c.meta.clone(),
        status,
        // Another machine's thread has no worktree (nor branch) here.
        worktree: Some(PathBuf::from(&c.record.worktree_path))
            .filter(|p| !p.as_os_str().is_empty()),
        branch: Some(c.record.branch.clone()).filter(|b| !b.is_empty()),
        locked,
        repo_root: PathBuf::from(&c.record.repo_root),
        from_cache: true,
        integration: None,
        written: None,
    }
}

/// A `grove rm` that stopped after caching: if the directory is gone, let
/// git forget it and mark the thread removed; if it is still there, it is live.
fn finish_interrupted_removals(repo: &Repo, cached: &[cache::CachedThread]) -> Result<()> {
    for c in cached
        .iter()
        .filter(|c| c.record.state == CacheState::Removing)
    {
        let wt = Path::new(&c.record.worktree_path);
        if wt.exists() {
            cache::set_state(&repo.main_root, c.thread.id(), CacheState::Live)?;
        } else {
            // rm checked this worktree before it began; no other is touched.
            repo.forget_worktree(wt)?;
            cache::set_state(&repo.main_root, c.thread.id(), CacheState::Removed)?;
        }
    }
    Ok(())
}

/// Dirty / merged / live for the worktree threads at `indices`: one status
/// per worktree (not per thread), worktrees spread over the cores.
fn compute_statuses(repo: &Repo, threads: &mut [Found], indices: &[usize]) -> Result<()> {
    if indices.is_empty() {
        return Ok(());
    }
    let default_refs = repo.default_branch_refs()?;
    let checker = crate::git::integrated::Checker::open(&repo.main_root);
    let mut jobs: Vec<(PathBuf, Option<String>, Option<String>)> = Vec::new();
    for &i in indices {
        let f = &threads[i];
        let path = f.worktree.clone().unwrap_or_default();
        let base = f
            .meta
            .context
            .extra
            .get("baseCommit")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        // One job per worktree; its base comes from whichever of its threads
        // recorded one (the task's), not from the first thread listed.
        match jobs.iter_mut().find(|(p, _, _)| *p == path) {
            Some(job) => {
                if job.2.is_none() {
                    job.2 = base;
                }
            }
            None => jobs.push((path, f.branch.clone(), base)),
        }
    }
    let results = in_parallel(
        &jobs,
        |main, (path, branch, base)| {
            worktree_status(
                repo,
                main,
                path,
                branch.as_deref(),
                base.as_deref(),
                &default_refs,
                &checker,
            )
        },
        &repo.main_root,
    );
    checker.save();
    for &i in indices {
        if let Some((_, (status, integration))) = jobs
            .iter()
            .zip(&results)
            .find(|((p, _, _), _)| Some(p) == threads[i].worktree.as_ref())
        {
            threads[i].status = *status;
            threads[i].integration = integration.clone();
        }
    }
    Ok(())
}

/// `work` over every job on every core (worktrees differ in size, so each
/// worker takes the next job as it finishes one); results in the jobs'
/// order. Each worker opens the main repository once for its jobs.
fn in_parallel<J: Sync, R: Send>(
    jobs: &[J],
    work: impl Fn(Option<&git2::Repository>, &J) -> R + Sync,
    main_root: &Path,
) -> Vec<R> {
    crate::parallel::map_with(
        jobs,
        2,
        || git2::Repository::open(main_root).ok(),
        |main, job| work(main.as_ref(), job),
    )
}

fn worktree_status(
    repo: &Repo,
    main: Option<&git2::Repository>,
    path: &Path,
    branch: Option<&str>,
    base: Option<&str>,
    default_refs: &[String],
    checker: &Checker,
) -> (Status, Option<Integration>) {
    if is_dirty_among_many(path).unwrap_or(false) {
        return (Status::Dirty, None);
    }
    let Some(branch) = branch else {
        return (Status::Live, None);
    };
    match integration(repo, main, branch, base, default_refs, checker) {
        Ok(Some(how)) => (Status::Merged, Some(how)),
        _ => (Status::Live, None),
    }
}

/// How a branch is integrated into the default branch, when it has commits
/// of its own (its tip is not its base) and they are all there (see
/// [`crate::git::integrated`]). A fresh task with no commits is not
/// "merged".
pub fn integration(
    repo: &Repo,
    main: Option<&git2::Repository>,
    branch: &str,
    base: Option<&str>,
    default_refs: &[String],
    checker: &Checker,
) -> Result<Option<Integration>> {
    if let Some(git) = main {
        let tip = git.refname_to_id(&format!("refs/heads/{branch}"))?;
        if base.is_some_and(|b| b == tip.to_string()) {
            return Ok(None);
        }
        return checker.check(git, tip, default_refs);
    }
    let tip = repo
        .resolve_commit(&format!("refs/heads/{branch}"))?
        .unwrap_or_default();
    if tip.is_empty() || base == Some(tip.as_str()) {
        return Ok(None);
    }
    repo.integration(&tip)
}

fn sort_newest_first(threads: &mut [Found]) {
    threads.sort_by_cached_key(|f| {
        (
            std::cmp::Reverse(last_activity(f)),
            f.meta.thread_id.clone(),
        )
    });
}

/// When a thread last saw activity: its `updatedAt`, its last checkpoint,
/// or grove's last write of it (`thread.json`'s time) — so a fresh fork or
/// an import of an old session is not listed below older tasks. `updatedAt`
/// itself keeps the spec's meaning.
pub fn last_activity(f: &Found) -> Option<jiff::Timestamp> {
    // The time the read that found it saw; asked only when it did not say.
    let written = f
        .written
        .or_else(|| {
            std::fs::symlink_metadata(f.thread.meta_path())
                .and_then(|m| m.modified())
                .ok()
        })
        .and_then(|t| jiff::Timestamp::try_from(t).ok());
    let checkpoint = f
        .meta
        .git
        .as_ref()
        .and_then(|g| g.checkpointed_at.as_deref()?.parse().ok());
    [
        f.meta.updated_at.parse().ok(),
        f.meta.created_at.parse().ok(),
        checkpoint,
        written,
    ]
    .into_iter()
    .flatten()
    .max()
}

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
    crate::store::validate_thread_id(query)?;
    // A whole id (the exact id wins over ids it is a prefix of) is looked
    // up directly, without listing the names.
    if uuid::Uuid::try_parse(query).is_ok()
        && let Some(hit) = load_one(project, query, false)?
    {
        return Ok(hit);
    }
    // This repository first, by directory names alone (no thread.json is
    // read but the one found); other repositories' caches only when nothing
    // here matches.
    let here = Names::of(project, query);
    if let Some(id) = here.resolve(query)?
        && let Some(hit) = load_one(project, &id, false)?
    {
        return Ok(hit);
    }
    let elsewhere: Vec<String> = cache::entries(None)?
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| id.starts_with(query) && !here.contains(id))
        .collect();
    if let Some(id) = resolve_prefix(query, elsewhere.iter().map(String::as_str))? {
        let id = id.to_string();
        if let Some(hit) = load_one(project, &id, true)? {
            return Ok(hit);
        }
    }
    // Nothing by name: the whole walk, to say what could not be read.
    let found = discover(
        project,
        Options {
            all_repos: true,
            statuses: false,
        },
    )?;
    let ids: Vec<&str> = found.threads.iter().map(|f| f.thread.id()).collect();
    let Some(id) = resolve_prefix(query, ids.iter().copied())? else {
        return Err(not_found(project, query, &found.errors));
    };
    let id = id.to_string();
    let errors = found.errors;
    let hit = found
        .threads
        .into_iter()
        .find(|f| f.thread.id() == id)
        .ok_or_else(|| not_found(project, query, &[]))?;
    Ok((live_copy(hit), errors))
}

/// The thread `id` as discovery finds it, reading that thread alone.
fn load_one(project: &Project, id: &str, all_repos: bool) -> Result<Option<(Found, Vec<Error>)>> {
    let options = Options {
        all_repos,
        statuses: false,
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
struct Names {
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
            names.extend(found.map(|(id, _)| (id, None)));
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
fn not_found(project: &Project, query: &str, errors: &[Error]) -> Error {
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
fn live_copy(hit: Found) -> Found {
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
    crate::store::validate_thread_id(query)?;
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
fn worktree_roots(project: &Project) -> Vec<PathBuf> {
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
    let recorded = thread.meta().ok().and_then(|m| {
        m.metadata
            .as_ref()?
            .get("grove")?
            .get("mainRoot")?
            .as_str()
            .map(PathBuf::from)
    });
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

/// Saves a thread just made in a linked worktree's `.agent/` (an import, a
/// fork with `--no-worktree`, `new --no-worktree` run there) to the cache at
/// once, as `grove new` does for a task's own thread. A thread elsewhere
/// needs nothing.
pub fn cache_if_in_worktree(project: &Project, thread: &Thread) -> Result<()> {
    let Some(threads) = thread.dir().parent() else {
        return Ok(());
    };
    let Some(root) = threads.parent().and_then(Path::parent) else {
        return Ok(());
    };
    let store = Store::for_project(root);
    if store.threads_dir() != threads || !store.in_linked_worktree() {
        return Ok(());
    }
    let branch = crate::git::discover(root)?
        .and_then(|info| info.branch)
        .unwrap_or_default();
    let record = CacheRecord {
        repo_root: project.main_root.to_string_lossy().into_owned(),
        worktree_path: root.to_string_lossy().into_owned(),
        branch,
        state: CacheState::Live,
        cached_at: crate::atsf::now_timestamp(),
    };
    cache::save(&project.main_root, thread, &record, false).map(drop)
}
