//! Step 2, the branch and the worktree: `git worktree add` (the user's git
//! config, hooks, LFS and sparse checkout apply), under the one rollback
//! guard ([`Made`]) and an intent recorded first.

use super::*;

/// A worktree being made: undone when dropped before [`Made::keep`].
pub(super) struct Made<'a> {
    pub(super) repo: &'a Repo,
    /// The canonical worktree directory.
    pub(super) dir: PathBuf,
    pub(super) carried: Option<Carried>,
    /// Made so far, for the rollback.
    pub(super) worktree: Option<PathBuf>,
    pub(super) branch: Option<String>,
    pub(super) step: Option<Step>,
}

impl Made<'_> {
    /// The task exists: nothing is rolled back any more.
    pub(super) fn keep(&mut self) {
        self.worktree = None;
        self.branch = None;
        if let Some(step) = self.step.take() {
            step.done();
        }
    }
}

impl Drop for Made<'_> {
    /// Undoes what was made. What could not be undone (git refuses while
    /// another worktree entry is half-written by a killed git, for one)
    /// leaves the intent open, for `gc` to finish, instead of a branch or a
    /// worktree entry that nothing records.
    fn drop(&mut self) {
        let root = &self.repo.main_root;
        let mut undone = true;
        if let Some(wt) = &self.worktree {
            let path = wt.to_string_lossy();
            let _ = self
                .repo
                .git
                .output(root, &["worktree", "remove", "--force", "--force", &path]);
            if std::fs::symlink_metadata(wt).is_ok() {
                let _ = std::fs::remove_dir_all(wt);
            }
            // This worktree's entry only: a prune would forget every
            // worktree whose directory is gone, unchecked.
            let forgotten = self.repo.forget_worktree(wt).is_ok();
            undone &= forgotten && std::fs::symlink_metadata(wt).is_err();
        }
        if let Some(branch) = &self.branch {
            let deleted = self
                .repo
                .git
                .output(root, &["branch", "-D", branch])
                .is_ok_and(|out| out.success);
            undone &= deleted || !self.repo.branch_exists(branch).unwrap_or(true);
        }
        if let Some(step) = self.step.take()
            && undone
        {
            step.undone();
        }
    }
}

/// Step 2: the branch and the worktree (`git worktree add`, so the user's
/// hooks, LFS and sparse checkout apply), with the carried changes applied.
/// The intent is recorded first; anything made is undone on failure.
pub(super) fn add_worktree<'a>(repo: &'a Repo, plan: &Plan) -> Result<Made<'a>> {
    if let Some(parent) = plan.dir.parent() {
        std::fs::create_dir_all(parent).ctx("creating", parent)?;
    }
    let thread_dir = Store::for_project(&plan.dir).thread_dir(&plan.id);
    let step = intent::begin(Action::Worktree {
        repo: repo.main_root.clone(),
        path: plan.dir.clone(),
        branch: plan.branch.clone(),
        created_branch: plan.create_branch,
        base_commit: plan.base_commit.clone(),
        thread_dir,
    })?;
    let mut made = Made {
        repo,
        dir: plan.dir.clone(),
        carried: None,
        worktree: None,
        branch: None,
        step: Some(step),
    };
    let dir_str = plan.dir.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "add", "--quiet"];
    if plan.create_branch {
        args.extend([
            "-b",
            plan.branch.as_str(),
            dir_str.as_str(),
            plan.base_commit.as_str(),
        ]);
    } else {
        args.extend([dir_str.as_str(), plan.branch.as_str()]);
    }
    // git itself races with another `git worktree add` of the repository
    // (it reads the other's half-written `worktrees/<name>/commondir` and
    // fails): grove's additions to one repository take turns.
    let _turn = crate::fsutil::FileLock::acquire(&add_lock_path(repo)?)?;
    // The source's patches are read while git checks the new worktree out.
    let (added, patches) = std::thread::scope(|scope| {
        let patches = plan.carry.as_ref().map(|(src, changes)| {
            let git = repo.git.clone();
            scope.spawn(move || carry::patches(&git, changes, src))
        });
        let env: &[(&str, &str)] = if plan.no_lfs {
            &[("GIT_LFS_SKIP_SMUDGE", "1")]
        } else {
            &[]
        };
        let added = repo.git.output_with_env(&plan.source, &args, env);
        let patches = patches.map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (added, patches)
    });
    let added = added?;
    made.worktree = Some(plan.dir.clone());
    // A branch that cannot be looked at may have been made: the rollback
    // tries to delete it.
    if plan.create_branch && repo.branch_exists(&plan.branch).unwrap_or(true) {
        made.branch = Some(plan.branch.clone());
    }
    if !added.success {
        return Err(Error::Git(format!(
            "`git worktree add` failed: {}",
            added.stderr
        )));
    }
    let patches = patches.transpose()?;
    made.dir = plan.dir.canonicalize().ctx("resolving", &plan.dir)?;
    if let (Some((src, changes)), Some(patches)) = (&plan.carry, &patches) {
        made.carried = Some(carry::apply(&repo.git, changes, patches, src, &made.dir)?);
    }
    Ok(made)
}

/// The lock grove's `git worktree add`s of one repository take turns on:
/// `<data dir>/locks/<repo key>.worktree-add`.
fn add_lock_path(repo: &Repo) -> Result<PathBuf> {
    let key = crate::home::repo_key(&repo.main_root);
    Ok(crate::home::data_dir()?
        .join("locks")
        .join(format!("{key}.worktree-add")))
}
