//! Step 5, record: the hook outcomes, exclude entries and problems into
//! `thread.json`, and the thread into the cache.

use super::*;

impl Finish<'_> {
    /// The record of it all, then the cache (a cache that could not be
    /// written goes into the record too). Returns the thread's metadata.
    pub(super) fn record_all(&mut self, meta: ThreadMeta) -> ThreadMeta {
        let meta = self.record().unwrap_or(meta);
        match self.cache() {
            false => self.record().unwrap_or(meta),
            true => meta,
        }
    }

    /// What was created.
    pub(super) fn created(self, meta: ThreadMeta, carried: Option<Carried>) -> CreatedTask {
        CreatedTask {
            thread: self.thread,
            meta,
            worktree: self.dir,
            branch: self.plan.branch.clone(),
            hooks: self.outcomes,
            carried,
            problems: self.problems,
            interrupted: self.interrupted,
        }
    }

    /// The outcome of [`record_made_branch`]: a record that could not be
    /// written is a problem of the task (its branch will be kept).
    pub(super) fn branch_recorded(&mut self, recorded: Result<()>) {
        if let Err(e) = recorded {
            self.problems.push(format!(
                "grove could not record that it made {} ({e}); `grove rm` will keep that branch",
                self.plan.branch
            ));
        }
    }

    /// Hook outcomes, exclude entries and problems into `thread.json`.
    fn record(&mut self) -> Option<ThreadMeta> {
        let hooks_json = serde_json::to_value(&self.outcomes).unwrap_or(Value::Null);
        let excludes = self.excludes.clone();
        let problems = self.problems.clone();
        let result = self.thread.update_meta(|m| {
            let mut grove = m.grove_mut();
            grove.set_hooks(hooks_json);
            grove.set_excludes(&excludes);
            grove.set_problems(&problems);
        });
        match result {
            Ok(meta) => Some(meta),
            Err(e) => {
                self.problems
                    .push(format!("the hook outcomes were not recorded: {e}"));
                None
            }
        }
    }

    /// The cache, from the start: a later `rm -rf` cannot lose the thread.
    /// Returns whether it was written.
    fn cache(&mut self) -> bool {
        let record = CacheRecord {
            repo_root: self.project.main_root.to_string_lossy().into_owned(),
            worktree_path: self.dir.to_string_lossy().into_owned(),
            branch: self.plan.branch.clone(),
            state: CacheState::Live,
            cached_at: atsf::now_timestamp(),
        };
        match cache::save(&self.project.main_root, &self.thread, &record, false) {
            Ok(_) => true,
            Err(e) => {
                self.problems.push(format!(
                    "the thread is not in grove's cache yet (the next `grove list` retries): {e}"
                ));
                false
            }
        }
    }
}

/// This machine's record of the branch grove made, the only thing that lets
/// `rm` delete it later (see [`crate::worktree::ownership`]). Nothing to
/// record when the branch was there before.
pub(super) fn record_made_branch(project: &Project, plan: &Plan) -> Result<()> {
    if !plan.create_branch {
        return Ok(());
    }
    crate::worktree::ownership::record(
        &project.main_root,
        &plan.id,
        &plan.branch,
        &plan.base_commit,
    )
}
