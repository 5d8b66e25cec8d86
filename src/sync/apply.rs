//! A remote thread brought into this machine's threads: merged into the
//! thread that is here (under its lock), or added to grove's cache. The
//! remote's log and assets are files in a staging directory; logs are
//! merged a line at a time ([`super::logs`]).

use std::io::{BufReader, Read, Seek};

use serde_json::Value;

use super::logs::{self, Plan};
use super::{Pulled, REF_PREFIX, RemoteThread, is_ancestor, merge, rev_parse};
use crate::atsf::{Stats, ThreadMeta};
use crate::discovery::Found;
use crate::error::{Error, IoContext, Result};
use crate::worktree::Repo;

/// Brings `remote` in: merged into `here` (the thread of that id found on
/// this machine), else into the cache; the local ref then follows the
/// remote's when it has nothing the remote lacks.
pub(super) fn bring_in(repo: &Repo, here: Option<&Found>, remote: RemoteThread) -> Result<Pulled> {
    check(&remote)?;
    let (id, commit) = (remote.id.clone(), remote.commit.clone());
    let (outcome, new_messages) = match here {
        Some(found) => match merge_into(found, &remote)? {
            0 => ("unchanged", 0),
            n => ("merged", n),
        },
        None => {
            let log = crate::fsutil::open_read(&remote.files.log)?;
            let n = logs::count_lines(BufReader::new(log))?;
            crate::cache::add_remote(&repo.main_root, &remote.id, remote.files)?;
            ("new", n)
        }
    };
    follow(repo, &id, &commit)?;
    Ok(Pulled {
        thread_id: id.to_string(),
        outcome,
        new_messages: new_messages as usize,
    })
}

/// Merges the remote's copy into `found`'s thread; how many messages it
/// brought. Assets are added, the log is appended to when the merge only
/// adds at its end and replaced (atomically, under the thread's lock)
/// when the remote's messages go between this machine's.
pub(super) fn merge_into(found: &Found, remote: &RemoteThread) -> Result<u64> {
    check(remote)?;
    let thread = &found.thread;
    let lock = thread.lock()?;
    let log_path = thread.messages_path();
    let mut ours = match crate::fsutil::open_read_opt(&log_path)? {
        Some(f) => f,
        None => tempfile::tempfile().ctx("creating a temporary file for", &log_path)?,
    };
    let len = ours.metadata().ctx("reading metadata of", &log_path)?.len();
    let complete = crate::store::complete_len(&ours, &log_path, len)?;
    let mut theirs = crate::fsutil::open_read(&remote.files.log)?;
    ours.rewind().ctx("reading", &log_path)?;
    let plan = logs::plan(
        BufReader::new((&ours).take(complete)),
        BufReader::new(&theirs),
    )?;
    add_assets(thread, remote)?;
    let replaced = match &plan {
        Plan::Same => false,
        Plan::Append { pieces, .. } => {
            // A torn tail (a write in progress elsewhere) is not ours to keep
            // in the middle: the merge begins at the last complete line.
            lock.extend_log(complete, |file| {
                logs::write(pieces, &mut ours, &mut theirs, file)
            })?;
            false
        }
        Plan::Rewrite { pieces, .. } => {
            lock.replace_log(|out| logs::write(pieces, &mut ours, &mut theirs, out))?;
            true
        }
    };
    let ours_meta = crate::fsutil::read(&thread.meta_path())?;
    let meta = merged_meta(&ours_meta, &remote.files.meta, &stats_of(&log_path)?)?;
    if meta != ours_meta {
        lock.replace_meta_bytes(&meta)?;
    }
    if replaced {
        crate::cache::relink_log(&found.repo_root, thread)?;
    }
    Ok(plan.added())
}

/// The merged `thread.json` bytes: one side's own bytes when the merge
/// says what it says (so both machines end with the same bytes), else the
/// merged fields written out.
fn merged_meta(ours: &[u8], theirs: &[u8], stats: &Value) -> Result<Vec<u8>> {
    let parse = |bytes: &[u8], whose: &str| -> Result<Value> {
        serde_json::from_slice(crate::atsf::strip_bom(bytes))
            .map_err(|e| Error::Other(format!("{whose} thread.json is not valid JSON: {e}")))
    };
    let ours_v = parse(ours, "this machine's")?;
    let theirs_v = parse(theirs, "the remote's")?;
    let merged = merge::merge_meta(&ours_v, &theirs_v, stats);
    Ok(if merged == theirs_v {
        theirs.to_vec()
    } else if merged == ours_v {
        ours.to_vec()
    } else {
        crate::atsf::to_pretty(&merged)?
    })
}

/// The stats of the log at `path`, counted as grove counts them, a line at
/// a time.
fn stats_of(path: &std::path::Path) -> Result<Value> {
    let mut stats = Stats::default();
    for m in crate::store::MessageReader::open(path)? {
        match m {
            Ok(m) => stats.add(&m),
            Err(Error::Parse { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    serde_json::to_value(stats).map_err(|e| Error::Other(e.to_string()))
}

/// Adds the remote's assets this thread lacks (content-addressed: a name
/// already here holds the same bytes).
fn add_assets(thread: &crate::store::Thread, remote: &RemoteThread) -> Result<()> {
    if remote.files.assets.is_empty() {
        return Ok(());
    }
    let dir = thread.assets_dir();
    std::fs::create_dir_all(&dir).ctx("creating", &dir)?;
    for (name, path) in &remote.files.assets {
        crate::fsutil::copy_new_whole(path, &dir.join(name))?;
    }
    Ok(())
}

/// The remote's `thread.json` must be a thread, and this one.
fn check(remote: &RemoteThread) -> Result<()> {
    let meta: ThreadMeta = serde_json::from_slice(crate::atsf::strip_bom(&remote.files.meta))
        .map_err(|e| {
            Error::Other(format!(
                "the remote's thread.json of {} is not a valid thread: {e}",
                remote.id
            ))
        })?;
    if meta.thread_id != remote.id {
        return Err(Error::Other(format!(
            "the remote's ref for thread {} holds thread {}; not brought in",
            remote.id, meta.thread_id
        )));
    }
    Ok(())
}

/// Moves the local ref to the remote's commit when the local one is
/// missing or behind it (else the next push merges them).
fn follow(repo: &Repo, id: &str, commit: &str) -> Result<()> {
    let name = format!("{REF_PREFIX}{id}");
    let local = rev_parse(repo, &name)?;
    match &local {
        Some(l) if !is_ancestor(repo, l, commit)? => Ok(()),
        _ => {
            let old = local.unwrap_or_else(|| "0".repeat(40));
            repo.git
                .run(&repo.main_root, &["update-ref", &name, commit, &old])
                .map(drop)
        }
    }
}
