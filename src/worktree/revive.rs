//! Making a removed task's worktree again (`grove resume`): the branch
//! checked out anew — or, when the branch is gone, made again at the commit
//! the task recorded — in the worktree's old directory when it is free, with
//! the project's setup applied and the thread put back from the cache,
//! under its own id.

use std::path::{Path, PathBuf};

use super::Repo;
use super::create::{CreatedTask, MakeThread, NewTask, create_with};
use crate::atsf::{self, ThreadMeta};
use crate::discovery::Found;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::setup::HookReporter;
use crate::store::{Store, Thread};

/// How the worktree is made again.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReviveOptions {
    /// Apply `worktreeHooks` (false: `--no-hooks`).
    pub hooks: bool,
    /// Trust the project's commands without asking.
    pub trust: bool,
}

/// Makes the worktree of `found` (a thread whose worktree is gone, read
/// from the cache) again and restores the thread into it.
pub fn revive(
    project: &Project,
    found: &Found,
    options: ReviveOptions,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
) -> Result<CreatedTask> {
    let repo = Repo::new(&project.main_root)?;
    forget_old_entry(&repo, found)?;
    let task = plan(&repo, found, options)?;
    let maker = Revive {
        cached: found.thread.clone(),
    };
    create_with(project, &task, reporter, ask_trust, &maker)
}

/// A worktree deleted behind git's back still holds its branch: git's entry
/// for this task's old worktree goes — once nothing only it holds (the
/// worktree's own refs, its submodules' stashes) would go with it. No other
/// worktree's entry is touched.
fn forget_old_entry(repo: &Repo, found: &Found) -> Result<()> {
    let Some(old) = found.worktree.as_deref().filter(|w| !w.exists()) else {
        return Ok(());
    };
    let reasons = super::unsafe_reasons(repo, found)?;
    if !reasons.is_empty() {
        return Err(Error::hinted(format!(
            "git still keeps the old worktree {} of thread {}, and it holds work saved nowhere else: {}; \
             save it, or `{{remove-force}} {}` drops it, then try again",
            old.display(),
            found.meta.thread_id,
            reasons.join("; "),
            found.meta.thread_id
        )));
    }
    repo.forget_worktree(old)
}

/// The task to make: the recorded branch (or the recorded commit), the old
/// directory when nothing is there now.
fn plan(repo: &Repo, found: &Found, options: ReviveOptions) -> Result<NewTask> {
    let meta = &found.meta;
    let branch = found
        .branch
        .clone()
        .or_else(|| meta.context.worktree.as_ref().map(|w| w.branch.clone()))
        .or_else(|| meta.context.git_branch.clone())
        .filter(|b| !b.is_empty())
        .ok_or_else(|| {
            Error::Other(format!(
                "thread {} recorded no branch; there is no worktree to make again (start a new task with `grove new --in` or `grove fork`)",
                meta.thread_id
            ))
        })?;
    let base = if repo.branch_exists(&branch)? {
        None
    } else if let Some(tip) = remote_tip(repo, &branch)? {
        // Another machine pushed the branch: go on from where it is.
        Some(tip)
    } else {
        let commit = meta.context.git_commit.clone().unwrap_or_default();
        if commit.is_empty() || repo.resolve_commit(&commit)?.is_none() {
            return Err(Error::Other(format!(
                "the branch {branch} of thread {} is gone and its recorded commit {} is not in {}; \
                 make the branch again (`git branch {branch} <commit>`) and retry",
                meta.thread_id,
                if commit.is_empty() { "(none)" } else { &commit },
                repo.main_root.display()
            )));
        }
        Some(commit)
    };
    Ok(NewTask {
        title: meta.title.clone(),
        agent: meta.agent.id.clone(),
        prompt: None,
        branch: Some(branch),
        base,
        dir: found.worktree.clone().filter(|d| is_free(d)),
        hooks: options.hooks,
        trust: options.trust,
        carry_from: None,
        thread_id: Some(meta.thread_id.clone()),
        no_submodules: false,
        no_lfs: false,
    })
}

/// The commit of `branch` on a remote (`refs/remotes/<remote>/<branch>`,
/// the upstream's first), if one was fetched.
fn remote_tip(repo: &Repo, branch: &str) -> Result<Option<String>> {
    let out = repo.git.run(
        &repo.main_root,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/remotes/",
        ],
    )?;
    let suffix = format!("/{branch}");
    let mut tips: Vec<(&str, &str)> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(name, _)| {
            name.strip_prefix("refs/remotes/")
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, b)| format!("/{b}") == suffix)
        })
        .collect();
    tips.sort_by_key(|(name, _)| !name.starts_with("refs/remotes/origin/"));
    Ok(tips.first().map(|(_, oid)| oid.to_string()))
}

/// Nothing, or an empty directory, is at `dir`.
fn is_free(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(_) => std::fs::symlink_metadata(dir).is_err(),
    }
}

/// Puts the cached thread into the new worktree, with the new worktree's
/// context; everything else it recorded stays.
struct Revive {
    cached: Thread,
}

impl MakeThread for Revive {
    fn make(&self, store: &Store, fresh: ThreadMeta) -> Result<Thread> {
        let thread = crate::cache::restore_thread(&self.cached, store)?;
        thread.update_meta(|meta| {
            meta.context.working_dir = fresh.context.working_dir.clone();
            meta.context.relative_dir = fresh.context.relative_dir.clone();
            meta.context.worktree = fresh.context.worktree.clone();
            meta.context.git_branch = fresh.context.git_branch.clone();
            meta.context.git_commit = fresh.context.git_commit.clone();
            // `createdBranch` says whether this revival made the branch;
            // what `rm` may delete is this machine's own record
            // (`ownership`), never this field.
            let made = fresh.grove().fields();
            let mut grove = meta.grove_mut();
            grove.take_fields(made);
            grove.set_revived_at(&atsf::now_timestamp());
        })?;
        Ok(thread)
    }

    fn initial_prompt(&self) -> bool {
        false
    }
}

/// Whether `found` is another machine's thread (`grove pull`) that has no
/// worktree here yet: [`revive`] makes one.
pub fn needs_worktree_here(found: &Found) -> bool {
    found.status == crate::discovery::Status::Remote && found.worktree.is_none()
}

/// Where a thread's worktree was, when it has one and it is gone.
pub fn gone_worktree(found: &Found) -> Option<PathBuf> {
    let wt = found.worktree.as_ref()?;
    (found.live_worktree().is_none() && !wt.is_dir()).then(|| wt.clone())
}
