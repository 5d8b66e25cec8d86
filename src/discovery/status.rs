//! Where each task stands against git: uncommitted changes and whether
//! its commits are in the default branch (one `git status` per worktree,
//! run on every core).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::integrated::Checker;
use crate::git::{Integration, Repo, is_dirty_among_many};

use super::{Found, Status};

/// Dirty / merged / live for the worktree threads at `indices`: one status
/// per worktree (not per thread), worktrees spread over the cores.
pub(super) fn compute_statuses(
    repo: &Repo,
    threads: &mut [Found],
    indices: &[usize],
) -> Result<()> {
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

pub(super) fn worktree_status(
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
