//! Where each task stands against git: uncommitted changes and whether
//! its commits are in the default branch (one `git status` per worktree,
//! run on every core).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::changes;
use crate::git::integrated::Checker;
use crate::git::{Integration, Repo, StatusCounts, is_dirty_among_many, status_counts_among_many};

use super::{Details, Found, Status};

/// What one worktree's job finds.
type Outcome = (Status, Option<Integration>, Option<Details>);

/// Dirty / merged / live for the worktree threads at `indices`: one status
/// per worktree (not per thread), worktrees spread over the cores; with
/// `details`, each worktree's [`Details`] too, in the same job.
pub(super) fn compute_statuses(
    repo: &Repo,
    threads: &mut [Found],
    indices: &[usize],
    details: bool,
) -> Result<()> {
    if indices.is_empty() {
        return Ok(());
    }
    let default_refs = repo.default_branch_refs()?;
    // The default branch's tip, read once for every worktree's divergence.
    let target = if details {
        default_tip(repo, &default_refs)
    } else {
        None
    };
    let checker = crate::git::integrated::Checker::open(&repo.main_root);
    let mut jobs: Vec<(PathBuf, Option<String>, Option<String>)> = Vec::new();
    for &i in indices {
        let f = &threads[i];
        let path = f.worktree.clone().unwrap_or_default();
        let base = f.meta.context.base_commit().map(str::to_string);
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
            let job = Job {
                path,
                branch: branch.as_deref(),
                base: base.as_deref(),
                default_refs: &default_refs,
                target: target.as_ref().map(|(name, tip)| (name.as_str(), *tip)),
            };
            worktree_outcome(repo, main, &job, &checker, details)
        },
        &repo.main_root,
    );
    checker.save();
    for &i in indices {
        if let Some((_, (status, integration, details))) = jobs
            .iter()
            .zip(&results)
            .find(|((p, _, _), _)| Some(p) == threads[i].worktree.as_ref())
        {
            threads[i].status = *status;
            threads[i].integration = integration.clone();
            threads[i].details = details.clone();
        }
    }
    Ok(())
}

/// `work` over every job on every core (worktrees differ in size, so each
/// worker takes the next job as it finishes one); results in the jobs'
/// order. Each worker opens the main repository once for its jobs.
pub(super) fn in_parallel<J: Sync, R: Send>(
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

/// One worktree to look at.
struct Job<'a> {
    path: &'a Path,
    branch: Option<&'a str>,
    base: Option<&'a str>,
    default_refs: &'a [String],
    /// The local default branch and its tip (with details).
    target: Option<(&'a str, git2::Oid)>,
}

/// The first of `default_refs` (the local default branch: what a merge
/// lands on) and its commit, when libgit2 can read it.
fn default_tip(repo: &Repo, default_refs: &[String]) -> Option<(String, git2::Oid)> {
    let name = default_refs.first()?;
    let git = crate::git::open(&repo.main_root)?;
    let tip = git.refname_to_id(name).ok()?;
    Some((name.clone(), tip))
}

/// Dirty, merged or live for one worktree, and with `details` its
/// [`Details`] from the same `git status` (counted instead of asked yes or
/// no). A status git could not give counts as clean.
fn worktree_outcome(
    repo: &Repo,
    main: Option<&git2::Repository>,
    job: &Job<'_>,
    checker: &Checker,
    details: bool,
) -> Outcome {
    let counts = if details {
        status_counts_among_many(job.path).ok()
    } else {
        None
    };
    let dirty = if details {
        counts.is_some_and(StatusCounts::any)
    } else {
        is_dirty_among_many(job.path).unwrap_or(false)
    };
    let (status, integration) = if dirty {
        (Status::Dirty, None)
    } else {
        clean_status(repo, main, job, checker)
    };
    let details = details.then(|| worktree_details(main, job, counts));
    (status, integration, details)
}

/// Merged or live: a worktree with nothing uncommitted.
fn clean_status(
    repo: &Repo,
    main: Option<&git2::Repository>,
    job: &Job<'_>,
    checker: &Checker,
) -> (Status, Option<Integration>) {
    let Some(branch) = job.branch else {
        return (Status::Live, None);
    };
    match integration(repo, main, branch, job.base, job.default_refs, checker) {
        Ok(Some(how)) => (Status::Merged, Some(how)),
        _ => (Status::Live, None),
    }
}

/// The uncommitted lines (from `counts`, `None` when the status failed),
/// and, when libgit2 has the repository open and the worktree is on a
/// branch, its divergence from the default branch and its commit. What
/// cannot be read is left `None`: the list still shows the task.
fn worktree_details(
    main: Option<&git2::Repository>,
    job: &Job<'_>,
    counts: Option<StatusCounts>,
) -> Details {
    let uncommitted = counts.and_then(|c| changes::uncommitted(job.path, c).ok());
    let tip = main.zip(job.branch).and_then(|(git, branch)| {
        let tip = git.refname_to_id(&format!("refs/heads/{branch}")).ok()?;
        Some((git, tip))
    });
    let Some((git, tip)) = tip else {
        return Details {
            uncommitted,
            ..Details::default()
        };
    };
    let divergence = job
        .target
        .and_then(|(name, base)| changes::divergence(git, tip, name, base).ok());
    Details {
        uncommitted,
        divergence,
        head: changes::head_commit(git, tip).ok(),
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
