//! Turn snapshots travel with their threads: `grove push` pushes each
//! pushed thread's `refs/grove/snapshots/<id>` (see [`crate::snapshot`]),
//! `grove pull` fetches the remote's into
//! `refs/grove/remotes/<remote>/snapshots/*` and brings each into this
//! machine's ref of the thread, merged as chains (no snapshot of either
//! side is lost).
//!
//! Snapshots hold the worktree's files, untracked ones included: before
//! they leave, every file they would send that the remote's branches do
//! not already hold is scanned as `grove scan` scans a thread. A secret
//! keeps the thread's snapshots home (named) unless secrets are allowed
//! (`--allow-secrets`); `--redact` cannot help, as a redacted snapshot would
//! no longer be what the worktree held.
//!
//! A pulled ref is someone else's data: it only adds objects. Its name must
//! be a thread id and it must name a commit, else it is refused (named,
//! and nothing here points at it); what it holds is never run, read into a
//! file or used to delete anything.

use crate::error::{Error, Result};
use crate::secrets::Policy;
use crate::snapshot::{REF_PREFIX, chain};
use crate::worktree::Repo;

/// The largest file of a snapshot scanned for secrets; a larger one is
/// taken as data, as `grove scan` takes assets.
const MAX_SCANNED: usize = 1 << 20;

/// The tracking refs of `remote`'s snapshots.
pub fn tracking(remote: &str) -> String {
    format!("refs/grove/remotes/{remote}/snapshots/")
}

/// The fetch refspec for `remote`'s snapshots (fetched with its threads,
/// in one `git fetch`).
pub fn refspec(remote: &str) -> String {
    format!("+{REF_PREFIX}*:{}*", tracking(remote))
}

/// What a push did with the snapshots.
#[derive(Debug, Default)]
pub struct Pushed {
    /// The threads whose snapshots the remote now has.
    pub sent: Vec<String>,
    /// Threads whose snapshots stayed home, with why.
    pub kept: Vec<(String, String)>,
}

/// Pushes the snapshot refs of `ids` that this repository has (those whose
/// new files hold no secret, unless `policy` allows them); a ref the
/// remote has moved (the thread captured on two machines) is fetched,
/// merged and pushed once more.
pub fn push(repo: &Repo, remote: &str, ids: &[String], policy: Policy) -> Result<Pushed> {
    let git = &repo.git;
    let mut pushed = Pushed::default();
    let mut here = Vec::new();
    for id in ids {
        if chain::tip(git, &repo.main_root, &chain::ref_name(id))?.is_none() {
            continue;
        }
        if policy != Policy::Allow
            && let Some(found) = secret_in(repo, remote, id)?
        {
            pushed.kept.push((
                id.clone(),
                format!(
                    "its turn snapshots hold a secret ({found}), so they stay home \
                     (a redacted snapshot would not be the worktree's content); \
                     the thread itself was sent"
                ),
            ));
            continue;
        }
        here.push(id.clone());
    }
    if here.is_empty() {
        return Ok(pushed);
    }
    let rejected = push_refs(repo, remote, &here)?;
    if !rejected.is_empty() {
        for id in &rejected {
            let theirs = format!("{}{id}", tracking(remote));
            let spec = format!("+{}:{theirs}", chain::ref_name(id));
            git.run(
                &repo.main_root,
                &["fetch", "--quiet", "--no-tags", remote, &spec],
            )?;
            let commit = git.run(&repo.main_root, &["rev-parse", "--verify", &theirs])?;
            chain::merge(git, &repo.main_root, &chain::ref_name(id), &commit)?;
        }
        let again = push_refs(repo, remote, &rejected)?;
        if let Some(id) = again.first() {
            return Err(Error::Git(format!(
                "the remote's snapshots of thread {id} kept moving; try `grove push` again"
            )));
        }
    }
    pushed.sent = here;
    Ok(pushed)
}

/// The first secret (its rule and file) in what the snapshots of `id`
/// would send to `remote`: the files of its chain that neither the
/// remote's branches (as last fetched) nor its copy of the chain hold.
fn secret_in(repo: &Repo, remote: &str, id: &str) -> Result<Option<String>> {
    let root = &repo.main_root;
    let theirs = format!("{}{id}", tracking(remote));
    let mut args = vec![
        "rev-list".to_string(),
        "--objects".to_string(),
        chain::ref_name(id),
        "--not".to_string(),
        format!("--remotes={remote}"),
    ];
    if chain::tip(&repo.git, root, &theirs)?.is_some() {
        args.push(theirs);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let listed = repo.git.run(root, &args)?;
    let Ok(git2_repo) = git2::Repository::open(root) else {
        return Err(Error::Git(format!(
            "{} could not be read to scan the snapshots of {id}",
            root.display()
        )));
    };
    for line in listed.lines() {
        // `<oid> <path>` for a tree's entries; a commit's line has no path.
        let Some((oid, path)) = line.split_once(' ') else {
            continue;
        };
        let Ok(blob) = git2::Oid::from_str(oid).and_then(|o| git2_repo.find_blob(o)) else {
            continue;
        };
        if blob.size() > MAX_SCANNED {
            continue;
        }
        let text = String::from_utf8_lossy(blob.content());
        if let Some(span) = crate::secrets::find(&text).first() {
            return Ok(Some(format!("{} in {path}", span.rule)));
        }
    }
    Ok(None)
}

/// `git push` of the snapshot refs of `ids`: the ids git rejected.
fn push_refs(repo: &Repo, remote: &str, ids: &[String]) -> Result<Vec<String>> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    super::refpush::push_ids(repo, remote, REF_PREFIX, &ids, " of the snapshots")
}

/// What a pull did with the remote's snapshots.
#[derive(Debug, Default)]
pub struct Pulled {
    /// Threads whose snapshot ref here gained the remote's.
    pub brought: Vec<String>,
    /// Refs refused, by name, with why.
    pub refused: Vec<(String, String)>,
}

/// Brings the snapshot refs fetched from `remote` (by [`refspec`]) into
/// this machine's.
pub fn bring_in(repo: &Repo, remote: &str) -> Result<Pulled> {
    let git = &repo.git;
    let prefix = tracking(remote);
    let listed = git.run(
        &repo.main_root,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname) %(objecttype)",
            &prefix,
        ],
    )?;
    let mut pulled = Pulled::default();
    for line in listed.lines() {
        let mut words = line.split(' ');
        let (Some(name), Some(oid), Some(kind)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let id = name.strip_prefix(&prefix).unwrap_or(name);
        if let Err(reason) = check(id, oid, kind) {
            pulled.refused.push((id.to_string(), reason));
            continue;
        }
        match chain::merge(git, &repo.main_root, &chain::ref_name(id), oid) {
            Ok(true) => pulled.brought.push(id.to_string()),
            Ok(false) => {}
            Err(e) => pulled.refused.push((id.to_string(), e.to_string())),
        }
    }
    Ok(pulled)
}

/// Why a fetched snapshot ref may not be brought in, if it may not.
fn check(id: &str, oid: &str, kind: &str) -> std::result::Result<(), String> {
    if crate::store::ThreadId::parse(id).is_err() {
        return Err(format!(
            "snapshots under {REF_PREFIX}{id:?}: not a thread id; not brought in"
        ));
    }
    if !crate::git::is_object_id(oid) {
        return Err(format!("snapshots of {id}: {oid:?} is no object id"));
    }
    if kind != "commit" {
        return Err(format!(
            "snapshots of {id}: the remote's ref names a {kind}, not a commit; not brought in"
        ));
    }
    Ok(())
}
