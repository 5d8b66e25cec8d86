//! Step 3, seed `.agent` and make the thread: the project's config and
//! `.gitignore` beside it, the task's git context recorded.

use super::*;

/// Step 3: the thread, inside the worktree, with the project's config and
/// `.gitignore` beside it. Returns the thread, its metadata and the
/// `info/exclude` entries added.
pub(super) fn make_thread(
    project: &Project,
    repo: &Repo,
    plan: &Plan,
    made: &Made<'_>,
    maker: &dyn MakeThread,
) -> Result<(Thread, ThreadMeta, Vec<String>)> {
    let dir = &made.dir;
    let head = match crate::git::discover(dir)?.and_then(|info| info.head) {
        Some(head) => head,
        None => repo.git.run(dir, &["rev-parse", "HEAD"])?,
    };
    let main_store = project.main_store();
    let wt_store = Store::for_project(dir);
    // A `.agent` committed as a symbolic link is refused here: the thread
    // would be written wherever it points.
    crate::fsutil::real_dir(dir, wt_store.agent_dir())?;
    let mut excludes = Vec::new();
    for name in [atsf::CONFIG_FILE, ".gitignore"] {
        let from = main_store.agent_dir().join(name);
        let to = wt_store.agent_dir().join(name);
        let missing = std::fs::symlink_metadata(&to).is_err();
        let copied = missing && from.is_file() && crate::fsutil::copy_new(&from, &to)?;
        // `.gitignore` is written with the spec's rules when there is none.
        if copied || (missing && name == ".gitignore") {
            excludes.push(exclude::pattern_for(
                &Path::new(atsf::AGENT_DIR).join(name),
            )?);
        }
    }
    wt_store.ensure_dir()?;
    exclude::add(&exclude::exclude_file(&repo.git, dir)?, &excludes)?;

    let mut meta = plan.meta.clone();
    meta.context = task_context(repo, plan, dir, &head)?;
    // A section of the planned thread's own is replaced, not merged into.
    meta.metadata_mut().remove(atsf::grove::KEY);
    meta.grove_mut()
        .set_task(&project.main_root, plan.create_branch, &excludes);
    let thread = maker.make(&wt_store, meta)?;
    let meta = thread.meta()?;
    Ok((thread, meta, excludes))
}

fn task_context(repo: &Repo, plan: &Plan, dir: &Path, head: &str) -> Result<Context> {
    let mut context = Context {
        working_dir: dir.to_string_lossy().into_owned(),
        relative_dir: Some(".".into()),
        git_branch: Some(plan.branch.clone()),
        git_commit: Some(head.to_string()),
        worktree: Some(WorktreeInfo {
            path: dir.to_string_lossy().into_owned(),
            branch: plan.branch.clone(),
            extra: Default::default(),
        }),
        extra: Default::default(),
    };
    if let Some(url) = repo.remote_url()? {
        context.extra.insert("remoteUrl".into(), Value::from(url));
    }
    context
        .extra
        .insert("baseRevision".into(), Value::from(plan.base_rev.clone()));
    context
        .extra
        .insert("baseCommit".into(), Value::from(plan.base_commit.clone()));
    Ok(context)
}
