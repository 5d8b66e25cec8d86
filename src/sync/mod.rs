//! Threads travel through any git remote: `grove push` stores each thread
//! as a commit under `refs/grove/threads/<id>` (its tree: `thread.json`,
//! `messages.jsonl`, `assets/`; its parent: the previous push) and pushes
//! those refs with the user's git; `grove pull` fetches them and brings
//! them into this machine's threads — merged into a thread that is here,
//! into grove's cache (status `remote`) when it is not. No branch, no
//! working tree file, nothing of the code's history changes.
//!
//! Every git step runs the git binary (the user's credentials, SSH, hooks);
//! commits are read back through libgit2.

mod apply;
pub mod logs;
pub mod merge;
mod objects;
mod refpush;
pub mod snapshots;

use std::path::Path;

use serde::Serialize;

pub use crate::store::ThreadFiles;

use crate::discovery::Found;
use crate::error::{Error, Result};
use crate::secrets::{self, Policy};
use crate::worktree::Repo;

/// The local refs pushed threads are kept under.
pub const REF_PREFIX: &str = "refs/grove/threads/";

/// How many times a push rejected because the remote moved is fetched,
/// merged and tried again.
const ATTEMPTS: usize = 3;

/// What `push` did with one thread.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pushed {
    pub thread_id: String,
    /// The commit the remote's ref now names.
    pub commit: String,
    /// Nothing new since the last push.
    pub unchanged: bool,
    /// The remote had moved: its messages were merged in first.
    pub merged: bool,
    /// Secrets replaced in what was sent (`--redact`).
    pub redacted: usize,
}

/// A thread `push` did not send (or `pull` could not bring in), and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub thread_id: String,
    pub reason: String,
    /// Kept home on purpose (`share: false`, an excluded tag), not refused.
    pub kept_home: bool,
}

/// What `push` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
    pub remote: String,
    pub pushed: Vec<Pushed>,
    pub skipped: Vec<Skipped>,
    /// The pushed threads whose turn snapshots the remote now has (those
    /// with snapshots here).
    pub snapshots: Vec<String>,
}

/// What `pull` did with one thread.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulled {
    pub thread_id: String,
    /// `new` (into the cache), `merged`, or `unchanged`.
    pub outcome: &'static str,
    /// Messages this machine did not have.
    pub new_messages: usize,
}

/// What `pull` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    pub remote: String,
    pub threads: Vec<Pulled>,
    /// Remote threads that could not be brought in (named, with why), and
    /// snapshot refs refused.
    pub failed: Vec<Skipped>,
    /// Threads whose turn snapshots here gained the remote's.
    pub snapshots: Vec<String>,
}

/// The remote to use: `name` when given, else the upstream remote of the
/// branch checked out in `dir`, else `origin`. Refuses a name git would
/// take for an option.
pub fn remote_for(repo: &Repo, dir: &Path, name: Option<&str>) -> Result<String> {
    let remote = match name {
        Some(n) => n.to_string(),
        None => {
            let branch = repo
                .git
                .output(dir, &["symbolic-ref", "--short", "-q", "HEAD"])?;
            let upstream = match branch.success {
                true => repo.git.output(
                    dir,
                    &[
                        "config",
                        "--get",
                        &format!("branch.{}.remote", branch.stdout.trim()),
                    ],
                )?,
                false => branch,
            };
            match upstream.stdout.trim() {
                r if upstream.success && !r.is_empty() && r != "." => r.to_string(),
                _ => "origin".to_string(),
            }
        }
    };
    if remote.is_empty()
        || remote.starts_with('-')
        || remote.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::Other(format!(
            "{remote:?} is not a remote name; `git remote -v` lists them"
        )));
    }
    Ok(remote)
}

/// Why the thread may not leave this machine, if it may not:
/// `metadata.grove.share` is `false`, or it carries a tag of
/// `excluded_tags` (the user's `push-exclude-tags`).
pub fn kept_home(found: &Found, excluded_tags: &[String]) -> Option<String> {
    if found.meta.grove().share() == Some(false) {
        return Some("metadata.grove.share is false".into());
    }
    let tags = found.meta.tags();
    excluded_tags
        .iter()
        .find(|t| tags.iter().any(|own| own == *t))
        .map(|t| format!("tagged {t:?}, which push-exclude-tags keeps home"))
}

/// Pushes `threads` to `remote`: each committed under its ref (after the
/// secret check `policy` settles), then all refs in one `git push`; a ref
/// the remote has moved is fetched, merged into this machine's thread and
/// pushed again.
pub fn push(
    repo: &Repo,
    threads: &[Found],
    remote: &str,
    policy: Policy,
    excluded_tags: &[String],
) -> Result<PushReport> {
    let mut report = PushReport {
        remote: remote.to_string(),
        pushed: Vec::new(),
        skipped: Vec::new(),
        snapshots: Vec::new(),
    };
    let identity = identity(repo)?;
    let mut pending: Vec<(Found, Commit)> = Vec::new();
    for found in threads {
        let id = found.thread.id().to_string();
        if let Some(reason) = kept_home(found, excluded_tags) {
            report.skipped.push(Skipped {
                thread_id: id,
                reason,
                kept_home: true,
            });
            continue;
        }
        match commit_thread(repo, &identity, found, policy, None) {
            Ok(c) => pending.push((found.clone(), c)),
            Err(e @ (Error::Refused(_) | Error::Hinted(_))) => report.skipped.push(Skipped {
                thread_id: id,
                reason: e.to_string(),
                kept_home: false,
            }),
            Err(e) => return Err(e),
        }
    }
    for attempt in 0..ATTEMPTS {
        if pending.is_empty() {
            break;
        }
        let rejected = git_push(repo, remote, &pending)?;
        let mut again = Vec::new();
        for (found, commit) in pending {
            if !rejected.contains(&commit.thread_id) {
                report.pushed.push(commit.into_pushed());
                continue;
            }
            if attempt + 1 == ATTEMPTS {
                return Err(Error::Git(format!(
                    "the remote's copy of thread {} kept moving; try `grove push` again",
                    commit.thread_id
                )));
            }
            let theirs = fetch_one(repo, remote, &commit.thread_id)?;
            apply::merge_into(&found, &theirs)?;
            let mut merged = commit_thread(repo, &identity, &found, policy, Some(&theirs.commit))?;
            merged.merged = true;
            again.push((found, merged));
        }
        pending = again;
    }
    let ids: Vec<String> = report.pushed.iter().map(|p| p.thread_id.clone()).collect();
    let sent = snapshots::push(repo, remote, &ids, policy)?;
    report.snapshots = sent.sent;
    report
        .skipped
        .extend(sent.kept.into_iter().map(|(id, reason)| Skipped {
            thread_id: id,
            reason,
            kept_home: false,
        }));
    Ok(report)
}

/// Fetches every thread of `remote` and brings each into this machine's
/// threads (see the module docs). One thread that cannot be brought in
/// never stops the others.
pub fn pull(project: &crate::project::Project, repo: &Repo, remote: &str) -> Result<PullReport> {
    let tracking = format!("refs/grove/remotes/{remote}/threads/");
    let refspec = format!("+{REF_PREFIX}*:{tracking}*");
    let snapshot_refspec = snapshots::refspec(remote);
    repo.git.run(
        &repo.main_root,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            remote,
            &refspec,
            &snapshot_refspec,
        ],
    )?;
    let mut report = PullReport {
        remote: remote.to_string(),
        threads: Vec::new(),
        failed: Vec::new(),
        snapshots: Vec::new(),
    };
    let brought = snapshots::bring_in(repo, remote)?;
    report.snapshots = brought.brought;
    report
        .failed
        .extend(brought.refused.into_iter().map(|(id, reason)| Skipped {
            thread_id: id,
            reason,
            kept_home: false,
        }));
    let remote_refs = refs_under(repo, &tracking)?;
    let here = threads_here(project, &remote_refs)?;
    for (id, commit) in remote_refs {
        let result = crate::store::ThreadId::parse(&id).and_then(|thread_id| {
            let files = read_remote(repo, &commit)?;
            let remote_thread = RemoteThread {
                id: thread_id,
                commit,
                files,
            };
            apply::bring_in(repo, here.get(&id), remote_thread)
        });
        match result {
            Ok(pulled) => report.threads.push(pulled),
            Err(e) => report.failed.push(Skipped {
                thread_id: id,
                reason: e.to_string(),
                kept_home: false,
            }),
        }
    }
    Ok(report)
}

/// This machine's threads among those the remote has, by id: one look
/// at the repository for all of them.
fn threads_here(
    project: &crate::project::Project,
    remote_refs: &[(String, String)],
) -> Result<std::collections::HashMap<String, Found>> {
    let ids: std::collections::HashSet<&str> =
        remote_refs.iter().map(|(id, _)| id.as_str()).collect();
    let options = crate::discovery::Options {
        all_repos: false,
        statuses: false,
        details: false,
    };
    Ok(
        crate::discovery::discover_matching(project, options, &|n| ids.contains(n))?
            .threads
            .into_iter()
            .map(|f| (f.thread.id().to_string(), f))
            .collect(),
    )
}

/// A thread as the remote has it.
#[derive(Debug)]
pub struct RemoteThread {
    pub id: crate::store::ThreadId,
    pub commit: String,
    pub files: ThreadFiles,
}

/// A thread committed under its local ref, ready to push.
#[derive(Debug, Clone)]
struct Commit {
    thread_id: String,
    commit: String,
    unchanged: bool,
    merged: bool,
    redacted: usize,
}

impl Commit {
    fn into_pushed(self) -> Pushed {
        Pushed {
            thread_id: self.thread_id,
            commit: self.commit,
            unchanged: self.unchanged,
            merged: self.merged,
            redacted: self.redacted,
        }
    }
}

/// Commits what of `found` may leave (redacted, refused or allowed by
/// `policy`) on top of its ref (and of `also`, the remote's commit, when
/// merging); the ref is moved there.
fn commit_thread(
    repo: &Repo,
    identity: &[&str],
    found: &Found,
    policy: Policy,
    also: Option<&str>,
) -> Result<Commit> {
    let id = found.thread.id().to_string();
    let leaving = secrets::prepare_to_leave(&found.thread, policy)?;
    let redacted = if leaving.redacted {
        leaving.findings.len()
    } else {
        0
    };
    let tree = objects::write_tree(&repo.git, &repo.main_root, &leaving.thread)?;
    let name = format!("{REF_PREFIX}{id}");
    let parent = rev_parse(repo, &name)?;
    if also.is_none()
        && let Some(parent) = &parent
        && rev_parse(repo, &format!("{parent}^{{tree}}"))?.as_deref() == Some(tree.as_str())
    {
        return Ok(Commit {
            thread_id: id,
            commit: parent.clone(),
            unchanged: true,
            merged: false,
            redacted,
        });
    }
    let message = commit_message(&id, &leaving, policy)?;
    let mut args: Vec<&str> = identity.to_vec();
    args.extend(["commit-tree", &tree, "-m", &message]);
    for p in parent.iter().map(String::as_str).chain(also) {
        args.extend(["-p", p]);
    }
    let commit = repo.git.run(&repo.main_root, &args)?;
    let old = parent.unwrap_or_else(|| "0".repeat(40));
    repo.git
        .run(&repo.main_root, &["update-ref", &name, &commit, &old])?;
    Ok(Commit {
        thread_id: id,
        commit,
        unchanged: false,
        merged: false,
        redacted,
    })
}

/// The commit's message: the id and the title of what leaves (the
/// redacted copy's title when redacted) — the message travels with the
/// commit and stays in the remote's history. Unless secrets are allowed,
/// whatever still reads as one (the id and title side by side) is
/// redacted too.
fn commit_message(id: &str, leaving: &secrets::Leaving, policy: Policy) -> Result<String> {
    let title = leaving.thread.meta()?.title;
    let message = format!("grove: thread {id}\n\n{title}\n");
    Ok(match policy {
        Policy::Allow => message,
        Policy::Refuse | Policy::Redact => secrets::redact_text(&message).0,
    })
}

/// The ids of the threads whose push git rejected.
fn git_push(repo: &Repo, remote: &str, pending: &[(Found, Commit)]) -> Result<Vec<String>> {
    let ids: Vec<&str> = pending.iter().map(|(_, c)| c.thread_id.as_str()).collect();
    refpush::push_ids(repo, remote, REF_PREFIX, &ids, "")
}

/// The remote's commit of one thread, fetched into its tracking ref.
fn fetch_one(repo: &Repo, remote: &str, id: &str) -> Result<RemoteThread> {
    let tracking = format!("refs/grove/remotes/{remote}/threads/{id}");
    let spec = format!("+{REF_PREFIX}{id}:{tracking}");
    repo.git.run(
        &repo.main_root,
        &["fetch", "--quiet", "--no-tags", remote, &spec],
    )?;
    let commit = rev_parse(repo, &tracking)?
        .ok_or_else(|| Error::Git(format!("the remote has no thread {id}")))?;
    let files = read_remote(repo, &commit)?;
    Ok(RemoteThread {
        id: crate::store::ThreadId::parse(id)?,
        commit,
        files,
    })
}

/// The thread files of a remote's `commit`, staged in this repository's
/// cache directory (so a new thread is renamed into the cache whole).
fn read_remote(repo: &Repo, commit: &str) -> Result<ThreadFiles> {
    let staging = crate::cache::repo_dir(&repo.main_root)?;
    objects::read_commit(&repo.git, &repo.main_root, commit, &staging)
}

fn rev_parse(repo: &Repo, name: &str) -> Result<Option<String>> {
    let out = repo
        .git
        .output(&repo.main_root, &["rev-parse", "-q", "--verify", name])?;
    Ok(out.success.then(|| out.stdout.trim().to_string()))
}

/// (thread id, commit) of every ref under `prefix`.
fn refs_under(repo: &Repo, prefix: &str) -> Result<Vec<(String, String)>> {
    let out = repo.git.run(
        &repo.main_root,
        &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
    )?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let (name, oid) = l.split_once(' ')?;
            Some((name.strip_prefix(prefix)?.to_string(), oid.to_string()))
        })
        .collect())
}

/// `-c user.name=… -c user.email=…` when git has no identity of the
/// user's (a fresh CI machine): commits of threads still get made.
fn identity(repo: &Repo) -> Result<Vec<&'static str>> {
    let known = repo
        .git
        .check(&repo.main_root, &["var", "GIT_COMMITTER_IDENT"])?;
    Ok(if known {
        Vec::new()
    } else {
        vec!["-c", "user.name=grove", "-c", "user.email=grove@localhost"]
    })
}

/// Whether `a` is `b` or an ancestor of it.
fn is_ancestor(repo: &Repo, a: &str, b: &str) -> Result<bool> {
    repo.git
        .check(&repo.main_root, &["merge-base", "--is-ancestor", a, b])
}
