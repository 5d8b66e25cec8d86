//! Reading git state. libgit2 where it is fast (HEAD, branch, status,
//! ancestry); the git binary where libgit2 falls short (worktree listing,
//! repositories using `extensions.relativeWorktrees`, which libgit2 cannot
//! open — libgit2 issue 7210). Every mutation runs the git binary through
//! [`cmd::Git`], so the user's config, hooks, LFS and sparse checkout apply.
//! The worktree list, branches, integration of a task's commits and
//! uncommitted changes are read here for every layer above.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

pub mod changes;
pub mod cmd;
pub mod integrated;
mod listing;
mod repo;

pub use cmd::Git;

/// Whether `s` is a full object id (SHA-1 or SHA-256, lowercase hex): what
/// an id read from a thread or a remote must be before git is given it.
pub fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
pub use integrated::{Integration, Reason};
pub use repo::StatusCounts;
pub use repo::{Repo, WorktreeEntry, is_dirty, parse_worktree_list};
pub(crate) use repo::{is_dirty_among_many, status_counts_among_many};

use crate::error::Result;

/// What a thread records about the repository it was started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// Root of the working tree containing the path (a linked worktree's own root).
    pub workdir: PathBuf,
    /// Root of the main working tree (equal to `workdir` outside linked worktrees).
    pub main_root: PathBuf,
    /// Current branch (short name); `None` when HEAD is detached.
    pub branch: Option<String>,
    /// Full HEAD commit id; `None` before the first commit.
    pub head: Option<String>,
}

/// libgit2's handle on the repository at `path`, opened once per thread
/// and operation: opening reads the configuration files anew, and one
/// `grove rm` asked for the same repository eight times. `None` when
/// libgit2 cannot open it (the caller asks git).
pub fn open(path: &Path) -> Option<Rc<git2::Repository>> {
    OPEN.with(|slot| {
        if let Some((at, opened, repo)) = &*slot.borrow()
            && at == path
            && opened.elapsed() < FRESH
        {
            return Some(Rc::clone(repo));
        }
        let repo = git2::Repository::open(path).ok()?;
        Some(remember(path, repo))
    })
}

/// Kept a short while only, so that a long-running grove (`launch`) sees
/// configuration changed meanwhile.
const FRESH: Duration = Duration::from_millis(500);

type Opened = Option<(PathBuf, Instant, Rc<git2::Repository>)>;

thread_local! {
    static OPEN: RefCell<Opened> = const { RefCell::new(None) };
}

/// Makes `repo`, opened at `path`, the handle [`open`] gives for `path`.
fn remember(path: &Path, repo: git2::Repository) -> Rc<git2::Repository> {
    let repo = Rc::new(repo);
    OPEN.with(|slot| {
        *slot.borrow_mut() = Some((path.to_path_buf(), Instant::now(), Rc::clone(&repo)));
    });
    repo
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Finds the repository containing `path`; `Ok(None)` outside any repository.
///
/// A bare repository (with worktrees: `proj.git` beside `proj-main/`, or
/// `proj/.bare` with worktrees inside `proj/`) has no main working tree;
/// its stand-in is the worktree that has the repository's HEAD branch
/// checked out, else the first of its worktrees by path — a grove task's
/// never — else the bare directory itself. Started in the bare directory,
/// grove works as if started there.
pub fn discover(path: &Path) -> Result<Option<RepoInfo>> {
    let repo = match git2::Repository::discover(path) {
        Ok(repo) => repo,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(_) => return discover_with_cli(path),
    };
    let Some(workdir) = repo.workdir() else {
        let bare = canonical(repo.path());
        let main_root = bare_main_root(&bare).unwrap_or_else(|| bare.clone());
        let (branch, head) = head_state(&repo)?;
        return Ok(Some(RepoInfo {
            workdir: main_root.clone(),
            main_root,
            branch,
            head,
        }));
    };
    let workdir = canonical(workdir);
    let common = canonical(repo.commondir());
    let main_root = main_root_of(&common)
        .or_else(|| bare_main_root(&common))
        .unwrap_or_else(|| workdir.clone());
    let (branch, head) = head_state(&repo)?;
    // Started in the main checkout (the usual case), the repository just
    // opened is the one the command goes on to read: not opened twice.
    if workdir == main_root {
        remember(&main_root, repo);
    }
    Ok(Some(RepoInfo {
        workdir,
        main_root,
        branch,
        head,
    }))
}

/// The main working tree of a common git dir `<root>/.git`.
fn main_root_of(common_dir: &Path) -> Option<PathBuf> {
    if common_dir.file_name()? == ".git" {
        common_dir.parent().map(Path::to_path_buf)
    } else {
        None
    }
}

/// The stand-in for the main working tree of the bare repository at
/// `common_dir`: of the worktrees that are not a grove task's, the one with
/// its HEAD branch, else the first by path, else the bare directory itself.
/// `None` when `common_dir` is not a bare repository.
///
/// A task's worktree is never chosen — one under grove's
/// [`crate::home::grove_worktrees_dir`], or one its cache records as
/// the bare directory's task ([`crate::cache::cached_as_task_of`]):
/// else the first task made from the bare directory would become the main
/// checkout, the repository's cache, trust and records would move under
/// its path, `init` would write into it and `rm` could not remove it.
fn bare_main_root(common_dir: &Path) -> Option<PathBuf> {
    let repo = git2::Repository::open_bare(common_dir).ok()?;
    if !repo.is_bare() {
        return None;
    }
    let head = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string));
    let mut trees = candidate_worktrees(&repo, crate::home::grove_worktrees_dir());
    // The HEAD branch's first, then by path.
    trees.sort_by(|(a, a_branch), (b, b_branch)| {
        let not_head = |branch: &Option<String>| head.is_none() || *branch != head;
        (not_head(a_branch), a).cmp(&(not_head(b_branch), b))
    });
    let stand_in = trees
        .into_iter()
        .map(|(path, _)| path)
        .find(|path| !crate::cache::cached_as_task_of(path, common_dir));
    // Its tasks' worktrees aside, the repository has none: the bare
    // directory stands in, wherever grove started (in a task's worktree
    // too, which is no more the main one from inside).
    Some(stand_in.unwrap_or_else(|| common_dir.to_path_buf()))
}

/// The existing worktrees of the bare `repo` grove did not put in its data
/// directory (those are tasks', and are not even opened), each with the
/// ref its HEAD names.
fn candidate_worktrees(
    repo: &git2::Repository,
    grove_worktrees: Option<PathBuf>,
) -> Vec<(PathBuf, Option<String>)> {
    let Ok(names) = repo.worktrees() else {
        return Vec::new();
    };
    let mut trees = Vec::new();
    for name in names.iter() {
        let Some(Ok(wt)) = name.ok().flatten().map(|name| repo.find_worktree(name)) else {
            continue;
        };
        if !wt.path().is_dir() {
            continue;
        }
        let path = canonical(wt.path());
        if grove_worktrees
            .as_ref()
            .is_some_and(|dir| path.starts_with(dir))
        {
            continue;
        }
        let branch = git2::Repository::open_from_worktree(&wt)
            .ok()
            .and_then(|r| {
                r.find_reference("HEAD")
                    .ok()?
                    .symbolic_target()
                    .ok()
                    .flatten()
                    .map(str::to_string)
            });
        trees.push((path, branch));
    }
    trees
}

/// The same answers from the git binary, for repositories libgit2 cannot open.
fn discover_with_cli(path: &Path) -> Result<Option<RepoInfo>> {
    let git = Git::find()?;
    let top = git.output(path, &["rev-parse", "--show-toplevel"])?;
    if !top.success {
        return Ok(None);
    }
    let workdir = canonical(Path::new(top.stdout.trim()));
    let common = git.run(
        path,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let main_root = main_root_of(&canonical(Path::new(&common))).unwrap_or_else(|| workdir.clone());
    let branch = git.output(path, &["symbolic-ref", "-q", "--short", "HEAD"])?;
    let head = git.output(path, &["rev-parse", "-q", "--verify", "HEAD"])?;
    Ok(Some(RepoInfo {
        workdir,
        main_root,
        branch: branch.success.then(|| branch.stdout.trim().to_string()),
        head: head.success.then(|| head.stdout.trim().to_string()),
    }))
}

/// (branch, commit) of HEAD; an unborn branch has a name and no commit.
fn head_state(repo: &git2::Repository) -> Result<(Option<String>, Option<String>)> {
    let head_ref = repo.find_reference("HEAD")?;
    if let Some(target) = head_ref.symbolic_target()? {
        let branch = target.strip_prefix("refs/heads/").map(str::to_string);
        let commit = repo.refname_to_id(target).ok().map(|oid| oid.to_string());
        return Ok((branch, commit));
    }
    Ok((None, head_ref.target().map(|oid| oid.to_string())))
}
