//! `grove rm`: remove a task's worktree (and branch) without losing work or
//! history.
//!
//! The steps: [`unsafe_reasons`] finds what only this worktree holds
//! (uncommitted files, commits on a detached HEAD or on any branch checked
//! out there that exist nowhere else, a submodule's changes); every thread
//! of the worktree is saved to the cache; the processes at work in it are
//! refused (or ended with `--reap`); only then, every refusal decided, the
//! teardown (`preRemoveCommands`) runs; the intent is recorded; then `git
//! worktree remove`, then the branch grove created — by its recorded name,
//! never whatever is checked out now.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Repo, exclude};
use crate::cache::{self, CacheRecord, CacheState};
use crate::discovery::{Found, Status};
use crate::error::{Error, Result};
use crate::git::cmd::Running;
use crate::intent::{self, Action};
use crate::store::Store;
use crate::store::ThreadId;

/// How to remove.
#[derive(Debug, Clone, Copy, Default)]
pub struct RemoveOptions {
    /// Remove even with uncommitted or unsaved work, drop more threads than
    /// the one asked for with `purge`, and delete grove's unmerged branch.
    pub force: bool,
    /// Keep the branch.
    pub keep_branch: bool,
    /// Do not keep the threads in the cache (and drop existing cache entries).
    pub purge: bool,
    /// End the processes still at work in the worktree (SIGTERM, then
    /// SIGKILL) instead of refusing.
    pub reap: bool,
    /// Delete the worktree's files in the background (see
    /// [`crate::trash::Aside::delete`]): the removal returns once the
    /// directory is set aside and unregistered.
    pub background: bool,
}

/// What a removal did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub thread_id: String,
    pub worktree_path: PathBuf,
    /// The branch grove created for the task (its recorded name).
    pub branch: Option<String>,
    pub branch_deleted: bool,
    /// Why the branch was kept, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_kept: Option<String>,
    /// Where the thread is kept now (`null` with --purge).
    pub cached_at: Option<PathBuf>,
    /// Every thread that lived in the worktree (the one asked for included).
    pub threads: Vec<ThreadId>,
    /// The outcomes of `preRemoveCommands`.
    pub teardown: Vec<crate::setup::HookOutcome>,
    /// The processes ended (`--reap`), or left running (`--force`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<super::processes::Holder>,
    /// The background setup commands still running, killed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup_killed: Vec<crate::atsf::grove::BackgroundRun>,
}

/// What the worktree's HEAD is.
#[derive(Debug, Clone)]
struct Head {
    commit: Option<String>,
    /// Short branch name; `None` when detached.
    branch: Option<String>,
}

/// Reasons `rm` refuses without `--force`; empty when removal is safe.
pub fn unsafe_reasons(repo: &Repo, found: &Found) -> Result<Vec<String>> {
    unsafe_reasons_alongside(repo, found, || ()).0
}

/// [`unsafe_reasons`], with `alongside` run on a thread of its own while
/// git looks at the worktree's files and this thread at the commits: the
/// `git status` is the longest step, and grove's other work fits beside it.
fn unsafe_reasons_alongside<T: Send>(
    repo: &Repo,
    found: &Found,
    alongside: impl FnOnce() -> T + Send,
) -> (Result<Vec<String>>, T) {
    let Some(wt) = &found.worktree else {
        return (Ok(Vec::new()), alongside());
    };
    // git is started first: its look at the files is the longest step.
    let status = start_status(repo, wt);
    std::thread::scope(|scope| {
        let beside = scope.spawn(alongside);
        let commits = commit_reasons(repo, found, wt);
        let reasons = status
            .and_then(|status| file_reasons(repo, wt, status))
            .and_then(|mut reasons| {
                reasons.extend(commits?);
                Ok(reasons)
            });
        (reasons, joined(beside))
    })
}

/// Uncommitted files, the worktree's own or its submodules', and what the
/// submodules' git directories hold: `status` is the worktree's `git
/// status` started by [`start_status`] (`None`: the worktree is not intact,
/// and it has no files to look at).
fn file_reasons(repo: &Repo, wt: &Path, status: Option<Running>) -> Result<Vec<String>> {
    let mut reasons = Vec::new();
    if let Some(status) = status {
        let files = uncommitted(status)?;
        if !files.is_empty() {
            reasons.push(format!(
                "uncommitted changes in {}: {}",
                wt.display(),
                super::list_some(&files, 5)
            ));
        }
    }
    // A worktree deleted behind grove's back still has its submodules' git
    // directories in its own, which goes now.
    reasons.extend(super::submodules::unsaved_reasons(repo, wt)?);
    Ok(reasons)
}

/// Commits only this worktree holds: on its detached HEAD, on the branch
/// checked out there, on the branch grove recorded.
fn commit_reasons(repo: &Repo, found: &Found, wt: &Path) -> Result<Vec<String>> {
    let mut reasons = Vec::new();
    let head = head_of(repo, wt)?;
    match (&head.branch, &head.commit) {
        (None, Some(commit)) => {
            let only_here = only_here(repo, None, &[commit])?;
            let commits: Vec<&str> = only_here.lines().collect();
            if !commits.is_empty() {
                reasons.push(format!(
                    "{} commit(s) on the detached HEAD of {} are on no branch, tag or remote: {}",
                    commits.len(),
                    wt.display(),
                    super::list_some(&commits, 3)
                ));
            }
        }
        (Some(branch), _) => reasons.extend(unsaved(repo, branch)?),
        _ => {}
    }
    if let Some((_, recorded)) = recorded_branch(repo, found)
        && head.branch.as_deref() != Some(recorded.branch.as_str())
    {
        reasons.extend(unsaved(repo, &recorded.branch)?);
    }
    reasons.extend(own_refs_reason(repo, wt)?);
    Ok(reasons)
}

/// Commits only the worktree's own refs keep: `refs/worktree/*`,
/// `refs/bisect/*` and `refs/rewritten/*` live in a linked worktree's git
/// directory, which goes with it. git is asked only when that directory
/// holds a ref (a fresh worktree's `refs/` is empty).
fn own_refs_reason(repo: &Repo, wt: &Path) -> Result<Option<String>> {
    let Some(git_dir) = super::submodules::worktree_git_dir(repo, wt)? else {
        return Ok(None);
    };
    let holds_refs = std::fs::read_dir(git_dir.join("refs"))
        .is_ok_and(|mut entries| entries.next().is_some())
        || git_dir.join("reftable").exists();
    if !holds_refs {
        return Ok(None);
    }
    // Asked of git with the worktree's git directory: the worktree's own
    // directory may be gone.
    let git_dir = git_dir.to_string_lossy();
    let only_here = only_here(
        repo,
        Some(&git_dir),
        &[
            "--glob=refs/worktree",
            "--glob=refs/bisect",
            "--glob=refs/rewritten",
        ],
    )?;
    let commits: Vec<&str> = only_here.lines().collect();
    if commits.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} commit(s) are kept only by refs of {} itself (refs/worktree/, refs/bisect/, \
         refs/rewritten/), on no branch, tag or remote: {}",
        commits.len(),
        wt.display(),
        super::list_some(&commits, 3)
    )))
}

/// `git rev-list --oneline` of the commits `revs` reach that are on no
/// branch, tag or remote — asked of the git directory `git_dir` when given
/// (a worktree's own, whose directory may be gone).
fn only_here(repo: &Repo, git_dir: Option<&str>, revs: &[&str]) -> Result<String> {
    let mut args = match git_dir {
        Some(dir) => vec!["--git-dir", dir],
        None => Vec::new(),
    };
    args.extend(["rev-list", "--oneline"]);
    args.extend(revs);
    args.extend(["--not", "--branches", "--tags", "--remotes"]);
    repo.git.run(&repo.main_root, &args)
}

fn unsaved(repo: &Repo, branch: &str) -> Result<Option<String>> {
    if !repo.branch_exists(branch)? {
        return Ok(None);
    }
    let commits = repo.unsaved_commits(branch)?;
    if commits.is_empty() {
        return Ok(None);
    }
    // Squash- or rebase-merged: the commits are not in the default branch,
    // their changes are.
    if let Some(tip) = repo.resolve_commit(&format!("refs/heads/{branch}"))?
        && repo.integration(&tip)?.is_some()
    {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} commit(s) on {branch} are neither pushed to its upstream nor merged into the default branch: {}",
        commits.len(),
        super::list_some(&commits, 3)
    )))
}

/// Whether the worktree directory is there and still a git working tree.
fn intact(wt: &Path) -> bool {
    std::fs::symlink_metadata(wt.join(".git")).is_ok()
}

/// Starts the `git status` of the worktree (untracked files included) when
/// the worktree is intact.
fn start_status(repo: &Repo, wt: &Path) -> Result<Option<Running>> {
    if !intact(wt) {
        return Ok(None);
    }
    repo.git
        .start(wt, &super::STATUS_OF_EVERY_CHANGE, true)
        .map(Some)
}

/// Uncommitted paths of the worktree as its `status` lists them, leaving
/// out grove's own files: its threads are saved to the cache before
/// anything is removed.
fn uncommitted(status: Running) -> Result<Vec<String>> {
    let out = status.bytes()?;
    Ok(out
        .split(|&b| b == 0)
        .filter(|e| e.len() > 3)
        .map(|e| &e[3..])
        .filter(|p| !super::is_grove_path(p))
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

/// The HEAD of the worktree at `wt`, as git's worktree list has it (read
/// from git's files); asked of git in the worktree when the list does not
/// name it (a path spelled differently).
fn head_of(repo: &Repo, wt: &Path) -> Result<Head> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let entry = repo
        .worktrees()?
        .into_iter()
        .find(|e| e.path == wt || canonical(&e.path) == canonical(wt));
    if let Some(entry) = entry {
        return Ok(Head {
            commit: entry.head,
            branch: entry.branch,
        });
    }
    if !intact(wt) {
        return Ok(Head {
            commit: None,
            branch: None,
        });
    }
    let commit = repo
        .git
        .output(wt, &["rev-parse", "-q", "--verify", "HEAD"])?;
    let branch = repo
        .git
        .output(wt, &["symbolic-ref", "-q", "--short", "HEAD"])?;
    Ok(Head {
        commit: commit.success.then(|| commit.stdout.trim().to_string()),
        branch: branch.success.then(|| branch.stdout.trim().to_string()),
    })
}

/// The branch grove created the task on, by the name this machine recorded
/// when it made it, with the root its records are kept under — `None` when
/// grove did not make it here (it then never deletes it). Never what
/// `thread.json` says: a pull or a commit can put any branch there.
///
/// A bare repository's task made while the bare directory stood in (before
/// a worktree of the user's did) is recorded under the bare directory.
fn recorded_branch(repo: &Repo, found: &Found) -> Option<(PathBuf, super::ownership::MadeBranch)> {
    let id = found.thread.id();
    if let Some(made) = super::ownership::made_branch(&repo.main_root, id) {
        return Some((repo.main_root.clone(), made));
    }
    let bare = repo.bare_dir_behind()?;
    super::ownership::made_branch(&bare, id).map(|made| (bare, made))
}

/// Removes the worktree of `found`: checks, caches every thread of the
/// worktree, records the intent, `git worktree remove`, then deletes the
/// branch grove created when that is safe.
pub fn remove(repo: &Repo, found: &Found, options: RemoveOptions) -> Result<Removed> {
    let id = found.thread.id().clone();
    let wt = refuse_early(found, options)?;
    let threads = threads_in(&wt, &id);
    let teardown_commands = super::teardown::commands(repo);
    // With no teardown command (which writes to the thread), the save to
    // the cache runs alongside the checks.
    let early = teardown_commands.is_empty();
    let (scanned, saved) = checked_and_saved(repo, found, &wt, &threads, options, early)?;
    let (records, made) = recorded_branch(repo, found).unzip();
    let branch_plan = branch_plan(repo, found, made.clone(), options)?;
    // Every refusal is decided before the teardown runs: a refused removal
    // has stopped nothing, and the one that goes ahead runs it once.
    // A background setup still running is grove's own: not a reason to
    // refuse, and killed (without --reap) once nothing refuses.
    let setup_groups = super::background::running_groups(&found.thread);
    let processes = processes_gone(&wt, options, scanned, &setup_groups)?;
    let setup_killed = super::background::kill_running(&found.thread, "killed by grove rm");
    let mut teardown = super::teardown::run(
        repo,
        found,
        &wt,
        &teardown_commands,
        options.force,
        &crate::setup::Silent,
    )?;
    // Looked at last before anything is removed, where the repository is
    // already open.
    let branch_plan = branch_plan.unless_checked_out_elsewhere(repo, &wt)?;
    // The threads are saved before anything is removed.
    let cached = match saved {
        Some(marked) => marked,
        None if options.purge => MarkedRemoving::new(&found.repo_root, Vec::new()),
        None => MarkedRemoving::new(&found.repo_root, save_threads(found, &wt, &threads)?),
    };
    let step = intent::begin(Action::Remove {
        repo: repo.main_root.clone(),
        worktree: wt.clone(),
        cached: cached.dirs.clone(),
        branch: branch_plan.delete.clone(),
        branch_tip: branch_plan.tip.clone(),
    })?;
    record_killed_in_cache(&id, &cached.dirs, &setup_killed);
    // From here an interrupted removal is the intent journal's to finish.
    let cached = cached.go_ahead();
    let cached_at = cached
        .iter()
        .find(|d| d.file_name().is_some_and(|n| n == id.as_str()))
        .cloned();
    super::teardown::logs_moved(&mut teardown, found, cached_at.as_deref());
    let branch_deleted =
        remove_worktree_and_branch(repo, &wt, &branch_plan, options.background, || {
            // The worktree's directory is gone: the cache is its threads' home.
            forget_old_excludes(repo, &id)?;
            settle_cache(found, &id, &threads, &cached, options)
        })?;
    step.done();
    if branch_deleted {
        // Best effort: a record left names a branch that is gone, and a
        // branch of that name made later is not deleted for it (the tip
        // must be the one rm looked at).
        let records = records.as_deref().unwrap_or(&repo.main_root);
        let _ = super::ownership::forget(records, &id);
    }
    // The task's ports are free again (best effort: a port whose worktree
    // is gone is taken back at the next allocation anyway).
    let _ = crate::ports::release(&id);
    Ok(Removed {
        thread_id: id.to_string(),
        worktree_path: wt,
        branch: made.map(|r| r.branch),
        branch_deleted,
        branch_kept: branch_plan.kept.filter(|_| !branch_deleted),
        cached_at,
        threads: if threads.is_empty() {
            vec![id]
        } else {
            threads
        },
        teardown,
        processes,
        setup_killed,
    })
}

/// [`checks`], with the look into /proc alongside, and the save of the
/// threads to the cache too when `early`. Returns the processes found and
/// the threads saved (`None`: not saved).
fn checked_and_saved(
    repo: &Repo,
    found: &Found,
    wt: &Path,
    threads: &[ThreadId],
    options: RemoveOptions,
    early: bool,
) -> Result<(Vec<super::processes::Holder>, Option<MarkedRemoving>)> {
    let (checked, (scanned, saved)) = checks(repo, found, wt, threads, options, || {
        let scanned = super::processes::in_dir(wt);
        let saved = (early && !options.purge).then(|| save_threads(found, wt, threads));
        (scanned, saved)
    });
    // Saved as `removing`: marked `live` again when anything refuses.
    let saved = saved.map(|dirs| dirs.map(|d| MarkedRemoving::new(&found.repo_root, d)));
    checked?;
    Ok((scanned, saved.transpose()?))
}

/// The cached copy of the thread, saved before its background setup was
/// killed, learns that it was.
fn record_killed_in_cache(
    id: &ThreadId,
    cached: &[PathBuf],
    killed: &[crate::atsf::grove::BackgroundRun],
) {
    if killed.is_empty() {
        return;
    }
    if let Some(dir) = cached
        .iter()
        .find(|d| d.file_name().is_some_and(|n| n == id.as_str()))
    {
        let thread = crate::store::Thread::at(id.clone(), dir.clone());
        super::background::record_runs(&thread, killed);
    }
}

/// Cache entries saved with the state `removing` before the removal is
/// sure to go ahead: marked `live` again when it does not. (A killed grove
/// leaves that to discovery, which marks `live` a `removing` entry whose
/// worktree is still there.)
struct MarkedRemoving {
    main_root: PathBuf,
    dirs: Vec<PathBuf>,
    armed: bool,
}

impl MarkedRemoving {
    fn new(main_root: &Path, dirs: Vec<PathBuf>) -> Self {
        MarkedRemoving {
            main_root: main_root.to_path_buf(),
            dirs,
            armed: true,
        }
    }

    /// The removal goes ahead: the entries stay `removing`.
    fn go_ahead(mut self) -> Vec<PathBuf> {
        self.armed = false;
        std::mem::take(&mut self.dirs)
    }
}

impl Drop for MarkedRemoving {
    fn drop(&mut self) {
        if self.armed {
            let _ = cache::mark_all(&self.main_root, &self.dirs, CacheState::Live);
        }
    }
}

/// The refusals that look at the worktree: `--purge` of threads not asked
/// for, and work that exists nowhere else (unless `--force`). `alongside`
/// runs while git looks at the files.
fn checks<T: Send>(
    repo: &Repo,
    found: &Found,
    wt: &Path,
    threads: &[ThreadId],
    options: RemoveOptions,
    alongside: impl FnOnce() -> T + Send,
) -> (Result<()>, T) {
    if options.purge && threads.len() > 1 && !options.force {
        return (
            Err(Error::hinted(format!(
                "{} holds {} threads, and {{purge}} would delete every one: {}. Pass {{force}} to \
                 drop them all, or leave out {{purge}} to keep them in grove's cache",
                wt.display(),
                threads.len(),
                threads.join(", ")
            ))),
            alongside(),
        );
    }
    if options.force {
        return (Ok(()), alongside());
    }
    let (reasons, beside) = unsafe_reasons_alongside(repo, found, alongside);
    let checked = reasons.and_then(|reasons| {
        if reasons.is_empty() {
            return Ok(());
        }
        Err(Error::hinted(format!(
            "not removing {}: {}. Commit and push (or merge) the work, or pass {{force}}",
            wt.display(),
            reasons.join("; ")
        )))
    });
    (checked, beside)
}

/// Drops the `info/exclude` entry older versions wrote for the thread's
/// directory.
fn forget_old_excludes(repo: &Repo, id: &str) -> Result<()> {
    let thread_rel = Path::new(crate::atsf::AGENT_DIR)
        .join(crate::atsf::THREADS_DIR)
        .join(id);
    if let Ok(pattern) = exclude::pattern_for(&thread_rel) {
        let file = exclude::exclude_file(&repo.git, &repo.main_root)?;
        exclude::remove(&file, &[format!("{pattern}/")])?;
    }
    Ok(())
}

/// The cache after the worktree went: its threads marked removed, or (with
/// `--purge`) dropped.
fn settle_cache(
    found: &Found,
    id: &ThreadId,
    threads: &[ThreadId],
    cached: &[PathBuf],
    options: RemoveOptions,
) -> Result<()> {
    if options.purge {
        for t in threads {
            cache::purge(&found.repo_root, t)?;
        }
        return cache::purge(&found.repo_root, id);
    }
    cache::mark_all(&found.repo_root, cached, CacheState::Removed)
}

/// No process may be at work in the worktree when it goes: refused with
/// the list, unless `--reap` (they are ended) or `--force` (they are left
/// running). `holders`: the processes found in it, but for those in
/// `spared_groups` (grove's background setup). Returns the processes reaped
/// or left.
fn processes_gone(
    wt: &Path,
    options: RemoveOptions,
    holders: Vec<super::processes::Holder>,
    spared_groups: &[u32],
) -> Result<Vec<super::processes::Holder>> {
    use super::processes;
    let holders: Vec<_> = holders
        .into_iter()
        .filter(|h| !super::background::group_of(h.pid).is_some_and(|g| spared_groups.contains(&g)))
        .collect();
    if holders.is_empty() {
        return Ok(holders);
    }
    let list = holders
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if options.reap {
        let left = processes::reap(wt, &holders);
        if !left.is_empty() && !options.force {
            return Err(Error::Refused(format!(
                "not removing {}: these processes could not be ended: {}",
                wt.display(),
                left.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        return Ok(holders);
    }
    if options.force {
        return Ok(holders);
    }
    Err(Error::hinted(format!(
        "not removing {}: {} process(es) still at work in it: {list}. Stop them, pass {{reap}} to end them (SIGTERM, then SIGKILL), or {{force}} to remove it under them",
        wt.display(),
        holders.len()
    )))
}

/// The refusals that need no look at the repository: no worktree, already
/// removed, locked. Returns the worktree.
/// Why the thread `id` of worktree `wt` cannot be read, and what fixes it:
/// grove does not remove a worktree whose thread it cannot save first.
fn unreadable(wt: &Path, id: &str) -> Error {
    let thread = Store::for_project(wt).thread(id);
    let why = match thread.and_then(|t| t.meta()) {
        Err(e) => e.to_string(),
        Ok(_) => "it could not be read when grove looked".to_string(),
    };
    let file = Store::for_project(wt)
        .thread_dir(id)
        .join(crate::atsf::THREAD_FILE);
    let fix = match crate::fsutil::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("threadId")?.as_str().map(str::to_string))
    {
        Some(other) if other != id => format!(
            "set \"threadId\" in {} back to \"{id}\" (the name of its directory, the id grove knows this task by; it says {other:?})",
            file.display()
        ),
        _ => format!(
            "repair {} (`grove validate` names what is wrong)",
            file.display()
        ),
    };
    Error::Refused(format!(
        "the thread of this task cannot be read, so grove will not remove its worktree {}: {why}. To fix it, {fix}, then run `grove rm {id}` again",
        wt.display()
    ))
}

fn refuse_early(found: &Found, options: RemoveOptions) -> Result<PathBuf> {
    let id = found.thread.id();
    let Some(wt) = found.worktree.clone() else {
        return Err(Error::Refused(format!(
            "thread {id} has no worktree (it lives in {}); nothing to remove",
            found.thread.dir().display()
        )));
    };
    if found.status == Status::Removed {
        if options.purge {
            cache::purge(&found.repo_root, id)?;
        }
        return Err(Error::Refused(format!(
            "the worktree of thread {id} was already removed{}",
            if options.purge {
                "; its cache entry is purged"
            } else {
                ""
            }
        )));
    }
    if found.status == Status::Unreadable {
        return Err(unreadable(&wt, id));
    }
    if let Some(reason) = &found.locked {
        return Err(Error::Refused(format!(
            "worktree {} is locked{}; `git worktree unlock` it first",
            wt.display(),
            if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            }
        )));
    }
    Ok(wt)
}

/// The ids of every thread directory in the worktree's `.agent/threads/`
/// (readable or not), the one asked for first.
fn threads_in(wt: &Path, id: &str) -> Vec<ThreadId> {
    let mut ids: Vec<ThreadId> = Store::for_project(wt)
        .thread_dir_names()
        .into_iter()
        .filter_map(|name| ThreadId::try_from(name).ok())
        .collect();
    if let Some(pos) = ids.iter().position(|t| t == id) {
        let own = ids.remove(pos);
        ids.insert(0, own);
    }
    ids
}

/// Saves every thread of the worktree (and the one asked for, when it was
/// found in the cache) with the state `removing`; returns their cache
/// directories. A thread that cannot be saved stops the removal.
fn save_threads(found: &Found, wt: &Path, threads: &[ThreadId]) -> Result<Vec<PathBuf>> {
    let record = CacheRecord {
        repo_root: found.repo_root.to_string_lossy().into_owned(),
        worktree_path: wt.to_string_lossy().into_owned(),
        branch: found.branch.clone().unwrap_or_default(),
        state: CacheState::Removing,
        cached_at: crate::atsf::now_timestamp(),
    };
    let mut dirs = Vec::new();
    if found.from_cache {
        cache::set_state(&found.repo_root, found.thread.id(), CacheState::Removing)?;
        dirs.push(found.thread.dir().to_path_buf());
    }
    let store = Store::for_project(wt);
    for id in threads {
        let thread = store.thread(id)?;
        let dir = cache::save(&found.repo_root, &thread, &record, true).map_err(|e| {
            Error::Refused(format!(
                "not removing {}: thread {id} could not be saved to grove's cache ({e}); \
                 nothing was removed",
                wt.display()
            ))
        })?;
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok(dirs)
}

/// Sets the worktree directory aside (a rename beside it), then at once,
/// side by side: git forgets it (`git worktree remove` of a directory that
/// is gone only drops git's entry), grove's branch is deleted (two git
/// processes), and the files are deleted, then `meanwhile` runs, before
/// git's answers are waited for. grove's own checks, which look into
/// submodules too, have passed: git's, which would walk the files again,
/// are not needed, and the files hold nothing unsaved whatever git answers.
/// A directory already gone is pruned. Whether the branch was deleted.
fn remove_worktree_and_branch(
    repo: &Repo,
    wt: &Path,
    plan: &BranchPlan,
    background: bool,
    meanwhile: impl FnOnce() -> Result<()>,
) -> Result<bool> {
    let delete = plan.delete.as_ref().zip(plan.tip.as_ref());
    let aside = set_aside(wt)?;
    // The branch goes only once the worktree is out of the way: a failed
    // rename leaves both as they were. Both git processes run while this
    // thread deletes the files.
    let branch = delete.map(|(branch, tip)| (branch, start_branch_deletion(repo, branch, tip)));
    let path = wt.to_string_lossy();
    let unregistering = repo
        .git
        .start(&repo.main_root, &["worktree", "remove", &path], false);
    let files_deleted = aside.map_or(Ok(()), |aside| aside.delete(background));
    let meanwhile = meanwhile();
    let unregistered = unregistering.and_then(|git| unregistered(repo, wt, git));
    let branch_deleted = match branch {
        Some((branch, started)) => started.and_then(|git| branch_deleted(repo, branch, git)),
        None => Ok(false),
    };
    unregistered?;
    files_deleted?;
    meanwhile?;
    branch_deleted
}

/// The worktree directory renamed aside (`None`: it was already gone, or
/// half removed by an interrupted run, whose rest is deleted now — it was
/// checked then).
fn set_aside(wt: &Path) -> Result<Option<crate::trash::Aside>> {
    if !intact(wt) {
        if std::fs::symlink_metadata(wt).is_ok() {
            crate::trash::remove_now(wt)?;
        }
        return Ok(None);
    }
    crate::trash::set_aside(wt, wt.parent().unwrap_or(wt))
}

/// git forgot the worktree whose directory is gone (`git worktree remove`
/// was started as `git`), or is made to now.
fn unregistered(repo: &Repo, wt: &Path, git: Running) -> Result<()> {
    if git.output()?.success {
        return Ok(());
    }
    // A git that refuses a worktree whose directory is gone, or an entry
    // already gone: this one entry goes (it was checked), no other.
    repo.forget_worktree(wt)
}

/// What happens to grove's branch.
struct BranchPlan {
    /// The branch to delete after the worktree is gone.
    delete: Option<String>,
    /// Its tip now: it is deleted only if it still points there.
    tip: Option<String>,
    /// Why it is kept, when it is.
    kept: Option<String>,
}

impl BranchPlan {
    /// The plan, the branch kept when a worktree other than `wt` (the one
    /// being removed) has it checked out.
    fn unless_checked_out_elsewhere(self, repo: &Repo, wt: &Path) -> Result<BranchPlan> {
        match &self.delete {
            Some(branch) if checked_out_elsewhere(repo, branch, Some(wt))? => Ok(BranchPlan {
                kept: Some(format!("{branch} is checked out in another worktree")),
                delete: None,
                tip: None,
            }),
            _ => Ok(self),
        }
    }
}

fn branch_plan(
    repo: &Repo,
    found: &Found,
    made: Option<super::ownership::MadeBranch>,
    options: RemoveOptions,
) -> Result<BranchPlan> {
    let kept = |why: String| BranchPlan {
        delete: None,
        tip: None,
        kept: Some(why),
    };
    let Some(made) = made else {
        return Ok(match &found.branch {
            Some(b) => kept(format!(
                "grove did not make {b} on this machine (it existed before, or the task came from elsewhere)"
            )),
            None => kept("grove did not create a branch for this task".into()),
        });
    };
    let branch = made.branch;
    if options.keep_branch {
        return Ok(kept("--keep-branch".into()));
    }
    let Some(tip) = repo.resolve_commit(&format!("refs/heads/{branch}"))? else {
        return Ok(BranchPlan {
            delete: None,
            tip: None,
            kept: None,
        });
    };
    let integrated = made.base_commit == tip || repo.integration(&tip)?.is_some();
    if !integrated && !options.force {
        return Ok(kept(
            crate::error::Hinted::new(format!(
                "{branch} is not merged into the default branch; `{{remove-force}}` or `git branch -D {branch}` deletes it"
            ))
            .to_string(),
        ));
    }
    Ok(BranchPlan {
        delete: Some(branch),
        tip: Some(tip),
        kept: None,
    })
}

/// Deletes `branch` if it still points at `tip` (git checks it atomically)
/// and is checked out nowhere; returns whether it did.
pub(crate) fn delete_branch(repo: &Repo, branch: &str, tip: &str) -> Result<bool> {
    if checked_out_elsewhere(repo, branch, None)? {
        return Ok(false);
    }
    let git = start_branch_deletion(repo, branch, tip)?;
    branch_deleted(repo, branch, git)
}

/// Whether a worktree other than `leaving` (being unregistered, its
/// directory already set aside) has `branch` checked out.
fn checked_out_elsewhere(repo: &Repo, branch: &str, leaving: Option<&Path>) -> Result<bool> {
    Ok(repo
        .worktrees()?
        .iter()
        .filter(|w| Some(w.path.as_path()) != leaving)
        .any(|w| w.branch.as_deref() == Some(branch)))
}

/// Starts `git update-ref -d` of `branch` if it still points at `tip` (git
/// checks it atomically).
fn start_branch_deletion(repo: &Repo, branch: &str, tip: &str) -> Result<Running> {
    let r = format!("refs/heads/{branch}");
    repo.git
        .start(&repo.main_root, &["update-ref", "-d", &r, tip], false)
}

/// Whether `git update-ref -d` (started as `git`) deleted `branch`; its
/// failure is an error unless the branch is gone or was left as it moved.
fn branch_deleted(repo: &Repo, branch: &str, git: Running) -> Result<bool> {
    let out = git.output()?;
    if !out.success && !out.stderr.is_empty() && repo.branch_exists(branch)? {
        return Err(crate::Error::Git(format!(
            "`git update-ref -d refs/heads/{branch}` failed: {}",
            out.stderr
        )));
    }
    Ok(out.success)
}

/// What a scoped thread returned (its panic goes on in the caller).
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}
