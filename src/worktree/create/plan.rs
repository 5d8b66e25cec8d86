//! Step 1, plan: the thread id, the branch and its base, the directory and
//! the worktree `git worktree add` runs in — all checked before anything is
//! made.

use super::*;
use crate::worktree::naming::Naming;

/// Everything decided before anything is made.
pub(super) struct Plan {
    pub(super) id: crate::store::ThreadId,
    pub(super) meta: ThreadMeta,
    pub(super) branch: String,
    pub(super) create_branch: bool,
    pub(super) base_rev: String,
    pub(super) base_commit: String,
    pub(super) dir: PathBuf,
    pub(super) carry: Option<(PathBuf, Changes)>,
    /// The worktree `git worktree add` runs in: its sparse-checkout
    /// patterns are the new worktree's.
    pub(super) source: PathBuf,
    pub(super) no_submodules: bool,
    pub(super) no_lfs: bool,
}

/// Step 1: the thread id, the branch and its base, the directory — all
/// checked before anything is made.
pub(super) fn plan(
    project: &Project,
    repo: &Repo,
    task: &NewTask,
    config: Option<&Config>,
) -> Result<Plan> {
    if task.base.is_none() && task.carry_from.is_none() && repo.resolve_commit("HEAD")?.is_none() {
        return Err(Error::Other(format!(
            "the repository at {} has no commits yet, and a task's branch starts from one: \
             make the first commit (`git commit --allow-empty -m \"Initial commit\"`), then run grove new again",
            repo.main_root.display()
        )));
    }
    let mut meta = crate::threads::new_meta(&task.title, &task.agent, Context::default());
    if let Some(id) = &task.thread_id {
        meta.thread_id = id.clone();
    }
    let id = crate::store::ThreadId::parse(&meta.thread_id)?;
    let short: String = id.chars().take(8).collect();
    let config_file = project.main_store().config_path();
    let naming = Naming::of(config, &config_file);
    let (branch, create_branch) = choose_branch(repo, task, &naming, &short)?;
    let (base_rev, carry) = match (&task.carry_from, &task.base) {
        // Carried changes are relative to the source worktree's HEAD.
        (Some(src), base) => {
            let changes = carry::changes(&repo.git, src)?;
            if !changes.unmerged.is_empty() {
                return Err(Error::Refused(format!(
                    "{} has unresolved merge conflicts ({}); resolve them first",
                    src.display(),
                    changes.unmerged_list()
                )));
            }
            let rev = match base {
                Some(b) => b.clone(),
                None => crate::git::discover(src)?
                    .and_then(|info| info.head)
                    .ok_or_else(|| {
                        Error::Other(format!("{} has no commit to start from", src.display()))
                    })?,
            };
            (rev, Some((src.clone(), changes)))
        }
        (None, base) => (base.clone().unwrap_or_else(|| "HEAD".to_string()), None),
    };
    let base_commit = if create_branch {
        repo.resolve_commit(&base_rev)?.ok_or_else(|| {
            Error::Other(format!(
                "--base {base_rev:?} does not name a commit in {}",
                repo.main_root.display()
            ))
        })?
    } else {
        repo.resolve_commit(&format!("refs/heads/{branch}"))?
            .unwrap_or_default()
    };
    let dir = match &task.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => project.cwd.join(d),
        None => match crate::userconfig::get()?.worktree_dir.as_deref() {
            Some(template) => {
                crate::userconfig::worktree_dir(template, &project.main_root, &id, &branch)
            }
            None => crate::home::worktrees_dir(&project.main_root)?.join(format!("thread-{short}")),
        },
    };
    if std::fs::symlink_metadata(&dir).is_ok()
        && std::fs::read_dir(&dir)
            .ctx("reading", &dir)?
            .next()
            .is_some()
    {
        let from_config =
            task.dir.is_none() && crate::userconfig::get().is_ok_and(|u| u.worktree_dir.is_some());
        let fix = match (from_config, crate::userconfig::path()) {
            (true, Some(file)) => format!(
                "it comes from worktree-dir in {}: change the template there, or pass --dir",
                file.display()
            ),
            _ => "choose another --dir".to_string(),
        };
        return Err(Error::Refused(format!(
            "{} exists and is not empty; {fix}",
            dir.display()
        )));
    }
    let source = match &task.carry_from {
        Some(src) => src.clone(),
        None if project.root.join(".git").exists() => project.root.clone(),
        None => repo.main_root.clone(),
    };
    let setting = |key: &str| {
        config
            .and_then(|c| crate::atsf::grove::ConfigSection::of(&c.extra).switch(key))
            .unwrap_or(true)
    };
    Ok(Plan {
        id,
        meta,
        branch,
        create_branch,
        base_rev,
        base_commit,
        dir,
        carry,
        source,
        no_submodules: task.no_submodules || !setting("submodules"),
        no_lfs: task.no_lfs || !setting("lfs"),
    })
}

/// The task's branch and whether grove makes it: `--branch`'s (made when
/// missing, else used as it is), or one named from the title after the
/// settings — with the first 4, then 8 characters of the thread id added
/// only when a branch of that name exists.
fn choose_branch(
    repo: &Repo,
    task: &NewTask,
    naming: &Naming,
    short: &str,
) -> Result<(String, bool)> {
    let Some(name) = &task.branch else {
        let base = naming.name(&task.title, short);
        if !repo.valid_branch_name(&base)? {
            return Err(Error::Other(format!(
                "the generated branch name {base:?} is not valid (see `git check-ref-format --branch`); \
                 fix the prefix {:?} ({}) or the template {:?} ({})",
                naming.prefix.value,
                naming.prefix.source,
                naming.template.value,
                naming.template.source
            )));
        }
        if let Some(name) = naming.free(repo, &task.title, short)? {
            return Ok((name, true));
        }
        return Err(Error::Refused(format!(
            "branch {base} already exists, with the thread's id added too; pass --branch to choose a name"
        )));
    };
    if !repo.valid_branch_name(name)? {
        return Err(Error::Other(format!(
            "{name:?} is not a valid branch name (see `git check-ref-format --branch`)"
        )));
    }
    if !repo.branch_exists(name)? {
        return Ok((name.clone(), true));
    }
    if task.base.is_some() {
        return Err(Error::Other(format!(
            "branch {name} exists; --base only applies to a new branch"
        )));
    }
    if let Some(wt) = repo
        .worktrees()?
        .into_iter()
        .find(|w| w.branch.as_deref() == Some(name))
    {
        return Err(Error::Refused(format!(
            "branch {name} is already checked out in {}; choose another --branch",
            wt.path.display()
        )));
    }
    Ok((name.clone(), false))
}
