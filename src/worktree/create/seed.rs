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
    // The new worktree has the branch checked out: its tip, read through the
    // repository already open, is the worktree's HEAD.
    let head = match repo.resolve_commit(&format!("refs/heads/{}", plan.branch))? {
        Some(head) => head,
        None => repo.git.run(dir, &["rev-parse", "HEAD"])?,
    };
    let main_store = project.main_store();
    let wt_store = Store::for_project(dir);
    // A `.agent` committed as a symbolic link is refused here: the thread
    // would be written wherever it points.
    crate::fsutil::real_dir(dir, wt_store.agent_dir())?;
    seed_agent_dir(&main_store, &wt_store)?;
    wt_store.ensure_dir()?;
    // Nothing of `.agent/` goes into the repository-wide `info/exclude`: it
    // would hide the main checkout's own `.agent/config.json` from `git add`.
    let excludes = Vec::new();
    forget_agent_excludes(repo);

    let mut meta = plan.meta.clone();
    meta.context = task_context(repo, plan, dir, &head)?;
    // A section of the planned thread's own is replaced, not merged into.
    meta.metadata_mut().remove(atsf::grove::KEY);
    let mut grove = meta.grove_mut();
    grove.set_task(&project.main_root, plan.create_branch, &excludes);
    // The setup's outcomes as they stand before it runs: when it runs
    // nothing, recording them afterwards is no second write.
    grove.set_hooks(Value::Array(Vec::new()));
    let thread = maker.make(&wt_store, meta)?;
    let meta = thread.meta()?;
    Ok((thread, meta, excludes))
}

/// The main checkout's `.agent/config.json` and `.gitignore` in the
/// worktree's `.agent/` when the checkout did not bring them (untracked in
/// the main checkout), kept out of the worktree's `git status` by that
/// `.gitignore` — grove's copy, which then names both and itself. When the
/// repository tracks `.agent/.gitignore`, grove cannot add to it, and an
/// untracked config is not copied: grove reads the main checkout's anyway.
fn seed_agent_dir(main_store: &Store, wt_store: &Store) -> Result<()> {
    let gitignore = ".gitignore";
    let from_ignore = main_store.agent_dir().join(gitignore);
    let to_ignore = wt_store.agent_dir().join(gitignore);
    let ignore_is_ours = std::fs::symlink_metadata(&to_ignore).is_err();
    if !ignore_is_ours {
        return Ok(());
    }
    let mut text = match crate::fsutil::read_opt(&from_ignore)? {
        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        None => atsf::DEFAULT_GITIGNORE.to_string(),
    };
    let mut own = vec![format!("/{gitignore}")];
    let from_config = main_store.config_path();
    let to_config = wt_store.config_path();
    if std::fs::symlink_metadata(&to_config).is_err() && from_config.is_file() {
        crate::fsutil::copy_new(&from_config, &to_config)?;
        own.push(format!("/{}", atsf::CONFIG_FILE));
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(crate::store::WORKTREE_IGNORE_MARK);
    text.push('\n');
    for line in own {
        text.push_str(&line);
        text.push('\n');
    }
    // Unsynced, like the `.gitignore`s of grove's own directories: after a
    // power cut takes it, the worktree's next store opening writes one again.
    crate::fsutil::write_new_unsynced(&to_ignore, text.as_bytes())?;
    Ok(())
}

/// Takes out of the repository's `info/exclude` the `.agent/` entries an
/// older grove put there (best effort: they only hide files).
fn forget_agent_excludes(repo: &Repo) {
    let old: Vec<String> = [atsf::CONFIG_FILE, ".gitignore"]
        .iter()
        .filter_map(|name| exclude::pattern_for(&Path::new(atsf::AGENT_DIR).join(name)).ok())
        .collect();
    // Every worktree shares the repository's `info/exclude`: found through
    // the main checkout, whose repository is open already.
    if let Ok(file) = exclude::exclude_file(&repo.git, &repo.main_root) {
        let _ = exclude::remove(&file, &old);
    }
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
