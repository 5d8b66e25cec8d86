//! A remote thread brought into this machine's threads: merged into the
//! thread that is here (under its lock), or added to grove's cache.

use serde_json::Value;

use super::objects::complete_lines;
use super::{Pulled, REF_PREFIX, RemoteThread, is_ancestor, merge, rev_parse};
use crate::atsf::{Stats, ThreadMeta};
use crate::discovery::Found;
use crate::error::{Error, IoContext, Result};
use crate::worktree::Repo;

/// Brings `remote` in: merged into `here` (the thread of that id found on
/// this machine), else into the cache; the local ref then follows the
/// remote's when it has nothing the remote lacks.
pub(super) fn bring_in(repo: &Repo, here: Option<&Found>, remote: &RemoteThread) -> Result<Pulled> {
    check(remote)?;
    let pulled = match here {
        Some(found) => {
            let new_messages = merge_into(found, remote)?;
            Pulled {
                thread_id: remote.id.clone(),
                outcome: if new_messages > 0 {
                    "merged"
                } else {
                    "unchanged"
                },
                new_messages,
            }
        }
        None => {
            crate::cache::add_remote(&repo.main_root, &remote.id, &remote.files)?;
            Pulled {
                thread_id: remote.id.clone(),
                outcome: "new",
                new_messages: merge::count_lines(&remote.files.log),
            }
        }
    };
    follow(repo, remote)?;
    Ok(pulled)
}

/// Merges the remote's copy into `found`'s thread; how many messages it
/// brought. Assets are added, the log is appended to when the merge only
/// adds at its end and replaced (atomically, under the thread's lock)
/// when the remote's messages go between this machine's.
pub(super) fn merge_into(found: &Found, remote: &RemoteThread) -> Result<usize> {
    check(remote)?;
    let thread = &found.thread;
    let _lock = thread.lock()?;
    let log_path = thread.messages_path();
    let ours_log = complete_lines(&crate::fsutil::read_opt(&log_path)?.unwrap_or_default());
    let ours_meta = crate::fsutil::read(&thread.meta_path())?;
    let merged_log = merge::merge_logs(&ours_log, &remote.files.log);
    let meta = merged_meta(&ours_meta, &remote.files.meta, &merged_log)?;
    add_assets(thread, remote)?;
    let replaced = if merged_log.starts_with(&ours_log) {
        if merged_log.len() > ours_log.len() {
            use std::io::Write;
            let mut file = crate::fsutil::open_append(&log_path, true)?;
            // A torn tail (a write in progress elsewhere) is not ours to keep
            // in the middle: the merge begins at the last complete line.
            let len = file.metadata().ctx("reading metadata of", &log_path)?.len();
            if len != ours_log.len() as u64 {
                file.set_len(ours_log.len() as u64)
                    .ctx("truncating", &log_path)?;
            }
            file.write_all(&merged_log[ours_log.len()..])
                .ctx("writing", &log_path)?;
            file.sync_all().ctx("syncing", &log_path)?;
        }
        false
    } else {
        crate::fsutil::write_atomic(&log_path, &merged_log)?;
        true
    };
    if meta != ours_meta {
        crate::fsutil::refuse_symlink(&thread.meta_path())?;
        crate::fsutil::write_atomic(&thread.meta_path(), &meta)?;
    }
    if replaced {
        crate::cache::relink_log(&found.repo_root, thread)?;
    }
    Ok(merge::count_lines(&merged_log).saturating_sub(merge::count_lines(&ours_log)))
}

/// The merged `thread.json` bytes: one side's own bytes when the merge
/// says what it says (so both machines end with the same bytes), else the
/// merged fields written out.
fn merged_meta(ours: &[u8], theirs: &[u8], merged_log: &[u8]) -> Result<Vec<u8>> {
    let parse = |bytes: &[u8], whose: &str| -> Result<Value> {
        serde_json::from_slice(crate::atsf::strip_bom(bytes))
            .map_err(|e| Error::Other(format!("{whose} thread.json is not valid JSON: {e}")))
    };
    let ours_v = parse(ours, "this machine's")?;
    let theirs_v = parse(theirs, "the remote's")?;
    let merged = merge::merge_meta(&ours_v, &theirs_v, &stats_of(merged_log)?);
    Ok(if merged == theirs_v {
        theirs.to_vec()
    } else if merged == ours_v {
        ours.to_vec()
    } else {
        crate::atsf::to_pretty(&merged)?
    })
}

/// The stats of a log, counted as grove counts them.
fn stats_of(log: &[u8]) -> Result<Value> {
    let mut stats = Stats::default();
    for (i, line) in log.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Ok(m) = crate::atsf::parse_message_line(
            std::path::Path::new("messages.jsonl"),
            i as u64 + 1,
            line,
        ) {
            stats.add(&m);
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
    for (name, bytes) in &remote.files.assets {
        crate::fsutil::write_new(&dir.join(name), bytes)?;
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
fn follow(repo: &Repo, remote: &RemoteThread) -> Result<()> {
    let name = format!("{REF_PREFIX}{}", remote.id);
    let local = rev_parse(repo, &name)?;
    match &local {
        Some(l) if !is_ancestor(repo, l, &remote.commit)? => Ok(()),
        _ => {
            let old = local.unwrap_or_else(|| "0".repeat(40));
            repo.git
                .run(
                    &repo.main_root,
                    &["update-ref", &name, &remote.commit, &old],
                )
                .map(drop)
        }
    }
}
