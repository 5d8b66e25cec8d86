//! The commits that keep a thread's snapshots alive: one ref per thread,
//! `refs/grove/snapshots/<threadId>`, naming a chain of commits — each
//! snapshot's tree with the previous snapshot as parent — so one ref keeps
//! every tree of the thread from `git gc`, and pushing it sends them all.
//!
//! The ref only moves by compare-and-swap (`git update-ref NAME NEW OLD`):
//! two writers that both read the same tip cannot both win, and the loser
//! builds on the winner's commit instead of dropping it.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::git::Git;

/// Where the snapshot refs live.
pub const REF_PREFIX: &str = "refs/grove/snapshots/";

/// The identity of snapshot commits: grove's, not the user's (a machine
/// without a configured identity still snapshots, and no snapshot passes
/// for a commit the user made).
const IDENTITY: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "grove"),
    ("GIT_AUTHOR_EMAIL", "grove@localhost"),
    ("GIT_COMMITTER_NAME", "grove"),
    ("GIT_COMMITTER_EMAIL", "grove@localhost"),
];

/// How often a move of the ref that lost a race is tried again.
const ATTEMPTS: usize = 5;

/// The ref of thread `thread_id`'s snapshots.
pub fn ref_name(thread_id: &str) -> String {
    format!("{REF_PREFIX}{thread_id}")
}

/// The commit a ref names and that commit's tree; `None` when the ref does
/// not exist.
pub fn tip(git: &Git, root: &Path, name: &str) -> Result<Option<(String, String)>> {
    // libgit2 cannot open every repository (`extensions.relativeWorktrees`):
    // git answers for those.
    let Ok(repo) = git2::Repository::open(root) else {
        let out = git.output(
            root,
            &["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")],
        )?;
        if !out.success {
            return Ok(None);
        }
        let commit = out.stdout.trim().to_string();
        let tree = git.run(root, &["rev-parse", &format!("{commit}^{{tree}}")])?;
        return Ok(Some((commit, tree)));
    };
    let reference = match repo.find_reference(name) {
        Ok(r) => r,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(Error::Git(format!("reading {name}: {e}"))),
    };
    let commit = reference
        .peel_to_commit()
        .map_err(|e| Error::Git(format!("{name} names no commit: {e}")))?;
    Ok(Some((
        commit.id().to_string(),
        commit.tree_id().to_string(),
    )))
}

/// Every commit of the chain `name` names, with its tree; empty when the
/// ref does not exist. A snapshot record a thread carries counts only when
/// its commit is here with its tree: a thread pulled from elsewhere names
/// no tree of this repository that it does not own.
pub fn commits(git: &Git, root: &Path, name: &str) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    // libgit2 cannot open every repository (`extensions.relativeWorktrees`):
    // git answers for those.
    let Some(repo) = crate::git::open(root) else {
        let listed = git.output(root, &["log", "--format=%H %T", name, "--"])?;
        if listed.success {
            for line in listed.stdout.lines() {
                if let Some((c, t)) = line.split_once(' ') {
                    out.insert(c.to_string(), t.to_string());
                }
            }
        }
        return Ok(out);
    };
    let Ok(tip) = repo.refname_to_id(name) else {
        return Ok(out);
    };
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    for id in walk {
        let commit = repo.find_commit(id?)?;
        out.insert(commit.id().to_string(), commit.tree_id().to_string());
    }
    Ok(out)
}

/// Forgets thread `thread_id`'s snapshots (the thread is deleted): its ref
/// goes, and git's next gc takes the objects nothing else holds. Nothing to
/// do when it has none.
pub fn forget(git: &Git, root: &Path, thread_id: &str) -> Result<()> {
    let name = ref_name(thread_id);
    let Some((commit, _)) = tip(git, root, &name)? else {
        return Ok(());
    };
    // Only the commit looked at: one a capture added meanwhile is kept.
    git.run(root, &["update-ref", "-d", &name, &commit])?;
    Ok(())
}

/// Adds `tree` to the chain of ref `name` and returns the commit that
/// holds it: the tip itself when its tree is `tree` already (nothing
/// changed since the last snapshot), else a new commit on top of it.
pub fn extend(git: &Git, root: &Path, name: &str, tree: &str, message: &str) -> Result<String> {
    for _ in 0..ATTEMPTS {
        let tip = tip(git, root, name)?;
        if let Some((commit, tip_tree)) = &tip
            && tip_tree == tree
        {
            return Ok(commit.clone());
        }
        let mut args = vec!["commit-tree", tree, "-m", message];
        if let Some((parent, _)) = &tip {
            args.extend(["-p", parent]);
        }
        let commit = git.run_with_env(root, &args, IDENTITY)?;
        let old = tip.as_ref().map_or("", |(c, _)| c.as_str());
        if swap(git, root, name, &commit, old)? {
            return Ok(commit);
        }
    }
    Err(lost(name))
}

/// Brings `theirs` (a commit of another machine's chain, already in this
/// repository) into ref `name`: the ref is made at it when missing,
/// fast-forwarded when it is behind, left when it has it already, and
/// otherwise given a commit with both as parents (this machine's tree), so
/// both chains stay alive under the one ref. Whether the ref moved.
pub fn merge(git: &Git, root: &Path, name: &str, theirs: &str) -> Result<bool> {
    for _ in 0..ATTEMPTS {
        let tip = tip(git, root, name)?;
        let Some((ours, tree)) = tip else {
            if swap(git, root, name, theirs, "")? {
                return Ok(true);
            }
            continue;
        };
        if ours == theirs || is_ancestor(git, root, theirs, &ours)? {
            return Ok(false);
        }
        let new = if is_ancestor(git, root, &ours, theirs)? {
            theirs.to_string()
        } else {
            git.run_with_env(
                root,
                &[
                    "commit-tree",
                    &tree,
                    "-p",
                    &ours,
                    "-p",
                    theirs,
                    "-m",
                    "grove: snapshots of two machines",
                ],
                IDENTITY,
            )?
        };
        if swap(git, root, name, &new, &ours)? {
            return Ok(true);
        }
    }
    Err(lost(name))
}

/// Moves `name` to `new` if it names `old` (`""`: if it does not exist);
/// `false` when another writer moved it first.
fn swap(git: &Git, root: &Path, name: &str, new: &str, old: &str) -> Result<bool> {
    let out = git.output(root, &["update-ref", "--no-deref", name, new, old])?;
    if out.success {
        return Ok(true);
    }
    let now = tip(git, root, name)?.map(|(c, _)| c);
    if now.as_deref().unwrap_or("") != old {
        return Ok(false);
    }
    Err(Error::Git(format!(
        "`git update-ref {name}` failed: {}",
        out.stderr
    )))
}

fn is_ancestor(git: &Git, root: &Path, a: &str, b: &str) -> Result<bool> {
    git.check(root, &["merge-base", "--is-ancestor", a, b])
}

fn lost(name: &str) -> Error {
    Error::Git(format!(
        "{name} kept moving while grove added to it ({ATTEMPTS} tries)"
    ))
}
