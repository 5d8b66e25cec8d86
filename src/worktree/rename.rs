//! Renaming a task: its thread's title, and — when asked, when grove made
//! the branch and no remote has it — its branch, named again after the new
//! title.

use serde::Serialize;

use crate::discovery::Found;
use crate::error::{Error, Result};
use crate::git::Repo;
use crate::store::ThreadId;

use super::naming::Naming;
use super::ownership;

/// What a rename changed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Renamed {
    pub thread_id: ThreadId,
    pub title: String,
    /// The branch before and after, when it was renamed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchRename>,
}

/// A branch's old and new names.
#[derive(Debug, Clone, Serialize)]
pub struct BranchRename {
    pub from: String,
    pub to: String,
}

/// Gives the task of `found` the title `title`; with `branch`, renames its
/// branch after it too. The branch is checked before anything changes, so
/// a refusal leaves the task as it was.
pub fn rename(repo: &Repo, found: &Found, title: &str, branch: bool) -> Result<Renamed> {
    let title = title.trim();
    if title.is_empty() {
        return Err(Error::Other(
            "the new title is empty; give the task a title".into(),
        ));
    }
    let plan = if branch {
        Some(plan_branch(repo, found, title)?)
    } else {
        None
    };
    if let Some(b) = &plan {
        move_branch(repo, found, b)?;
    }
    found.thread.update_meta(|m| {
        m.title = title.to_string();
        if let Some(b) = &plan {
            if m.context.git_branch.as_deref() == Some(b.from.as_str()) {
                m.context.git_branch = Some(b.to.clone());
            }
            if let Some(wt) = m.context.worktree.as_mut()
                && wt.branch == b.from
            {
                wt.branch = b.to.clone();
            }
        }
    })?;
    Ok(Renamed {
        thread_id: found.thread.id().clone(),
        title: title.to_string(),
        branch: plan,
    })
}

/// The branch's new name, after checking grove may rename it: grove made
/// it (this machine's record says so) and no remote has it.
fn plan_branch(repo: &Repo, found: &Found, title: &str) -> Result<BranchRename> {
    let id = found.thread.id();
    let Some(from) = found.branch.clone() else {
        return Err(Error::Refused(format!(
            "task {id} has no branch to rename; its title can be changed alone"
        )));
    };
    let made = ownership::made_branch(&repo.main_root, id).filter(|m| m.branch == from);
    if made.is_none() {
        return Err(Error::Refused(format!(
            "grove did not make the branch {from} (it existed before the task, or was \
             switched to in its worktree), so it leaves its name alone; its title can be \
             changed alone"
        )));
    }
    if let Some(upstream) = repo.upstream(&from)? {
        return Err(Error::Refused(format!(
            "the branch {from} is pushed ({upstream}); renaming it here would leave the \
             remote's under the old name, so grove leaves it; its title can be changed alone"
        )));
    }
    let store = crate::store::Store::for_project(&repo.main_root);
    let config = store.config().ok().flatten();
    let config_file = store.config_path();
    let short: String = id.chars().take(8).collect();
    let naming = Naming::of(config.as_ref(), &config_file);
    if naming.name(title, &short) == from {
        return Ok(BranchRename {
            to: from.clone(),
            from,
        });
    }
    let to = naming.free(repo, title, &short)?.ok_or_else(|| {
        Error::Refused(format!(
            "the branch names for {title:?} are taken; rename the branch with git yourself"
        ))
    })?;
    Ok(BranchRename { from, to })
}

/// `git branch -m`, and this machine's record of the branch grove made
/// follows it (so `rm` may still delete it).
fn move_branch(repo: &Repo, found: &Found, b: &BranchRename) -> Result<()> {
    if b.from == b.to {
        return Ok(());
    }
    repo.git
        .run(&repo.main_root, &["branch", "-m", "--", &b.from, &b.to])?;
    let id = found.thread.id();
    if let Some(made) = ownership::made_branch(&repo.main_root, id) {
        ownership::record(&repo.main_root, id, &b.to, &made.base_commit)?;
    }
    Ok(())
}
