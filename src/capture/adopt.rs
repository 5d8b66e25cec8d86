//! Sessions of a task's agent run by hand in its worktree (no hooks, or
//! hooks the agent did not run), adopted into the task's thread at `grove
//! list`, `grove show` and before `grove resume` writes its session.
//!
//! This runs on every `list`, so it must cost next to nothing when nothing
//! changed: it looks only at the agent's own directory of sessions for the
//! worktree (Claude Code's project directory; Codex's day directories),
//! lists a directory only when its time says a file appeared in it since
//! the last look, and reads only the files changed since. When it last
//! looked is this machine's record (beside the thread's ledger entries),
//! and which files are read is decided by the agent's directories and the
//! worktree's path, never by `thread.json`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{SessionRecord, catchup, ledger, transcripts};
use crate::agent::Native;
use crate::atsf::ThreadMeta;
use crate::error::Result;
use crate::store::Thread;

/// The file beside the ledger's entries saying when grove last looked.
const LOOKED: &str = "looked";

/// How far before a look the next one starts again: a file system with
/// coarse times must not hide a file made while grove looked.
const SLACK: Duration = Duration::from_secs(2);

/// How old the last look may grow before it is recorded again even though
/// nothing changed (so a long quiet stretch is not walked at every look).
const REFRESH: Duration = Duration::from_secs(3600);

/// What a look adopted.
#[derive(Debug, Default)]
pub struct Adopted {
    /// Sessions found and recorded on the thread.
    pub sessions: u64,
    /// Messages added to the thread.
    pub added: u64,
    /// Sessions that could not be captured, each saying why.
    pub problems: Vec<String>,
}

/// The agent and worktree of a task whose sessions are looked for: the
/// thread is a task's own (not a subagent's), of Claude Code or Codex, and
/// lives in a linked worktree (not the repository's main checkout, whose
/// sessions belong to no one task).
pub fn task_agent(
    thread: &Thread,
    meta: &ThreadMeta,
    repo_root: &Path,
) -> Option<(Native, PathBuf)> {
    if meta.main_thread_id.is_some() {
        return None;
    }
    let native = Native::from_name(&meta.agent.id)?;
    // <worktree>/.agent/threads/<id>; a copy elsewhere (grove's cache) has
    // no worktree.
    let threads = thread.dir().parent()?;
    let agent = threads.parent()?;
    if threads.file_name()? != crate::atsf::THREADS_DIR
        || agent.file_name()? != crate::atsf::AGENT_DIR
    {
        return None;
    }
    let worktree = agent.parent()?.to_path_buf();
    // The main checkout's threads are found under the very path of its
    // root: compared as text first, so a list of its threads stats nothing.
    let main = worktree == repo_root || crate::fsutil::same_file(&worktree, repo_root);
    (!main && worktree.is_dir()).then_some((native, worktree))
}

/// Adopts into `thread` the sessions of its agent that appeared in its
/// worktree since the last look (see the module's comment).
pub fn look(thread: &Thread, meta: &ThreadMeta, repo_root: &Path) -> Result<Adopted> {
    let Some((native, worktree)) = task_agent(thread, meta, repo_root) else {
        return Ok(Adopted::default());
    };
    let record = ledger::side_file(repo_root, thread.id(), LOOKED)?;
    let started = SystemTime::now();
    let since = last_look(&record).unwrap_or_else(|| created(meta));
    let created = transcripts::created_since(native, &worktree, since);
    let mut adopted = Adopted::default();
    let new: Vec<_> = created
        .found
        .into_iter()
        .filter(|f| !ledger::has(repo_root, thread.id(), &f.session_id))
        .collect();
    if !new.is_empty() {
        let others = catchup::sessions_of_siblings(thread, repo_root);
        for f in new.into_iter().filter(|f| !others.contains(&f.session_id)) {
            adopt(thread, repo_root, native, f, &mut adopted);
        }
    }
    let stale = started.duration_since(since).is_ok_and(|d| d > REFRESH);
    // A rollout not readable yet, or a session that could not be taken
    // (another capture held the thread), is looked at again next time.
    if (created.listed || stale) && !created.unsure && adopted.problems.is_empty() {
        record_look(&record, started - SLACK)?;
    }
    Ok(adopted)
}

/// Records session `found` (found here, in the agent's files) and captures it.
fn adopt(
    thread: &Thread,
    repo_root: &Path,
    native: Native,
    found: transcripts::Found,
    adopted: &mut Adopted,
) {
    let record = SessionRecord {
        agent: native.agent_id().to_string(),
        session_id: found.session_id.clone(),
        transcript: Some(found.transcript.to_string_lossy().into_owned()),
        started_at: crate::atsf::now_timestamp(),
        exported: false,
        extra: Default::default(),
    };
    adopted.sessions += 1;
    match catchup::session(thread, repo_root, native, &record) {
        Ok(c) => adopted.added += c.added(),
        Err(e) => adopted
            .problems
            .push(format!("session {}: {e}", found.session_id)),
    }
}

/// When the thread began: sessions before it are no one's to adopt here.
fn created(meta: &ThreadMeta) -> SystemTime {
    meta.created_at
        .parse::<jiff::Timestamp>()
        .map(SystemTime::from)
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The time the last look recorded (milliseconds since the epoch).
fn last_look(path: &Path) -> Option<SystemTime> {
    let bytes = crate::fsutil::read_opt(path).ok()??;
    let ms: u64 = std::str::from_utf8(&bytes).ok()?.trim().parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

fn record_look(path: &Path, at: SystemTime) -> Result<()> {
    let ms = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io("creating", dir, e))?;
    }
    // Losing it to a crash only means the next look walks a little more.
    crate::fsutil::write_atomic_unsynced(path, ms.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_task_s_own_thread_in_a_linked_worktree_looks_for_sessions() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let wt = tmp.path().join("wt");
        let cache = tmp.path().join("cache/repo-key");
        let make = |dir: &Path, agent: &str| {
            let store = crate::store::Store::at(dir);
            let meta = crate::threads::new_meta("t", agent, Default::default());
            let thread = store.create_thread(&meta).unwrap();
            (thread.clone(), thread.meta().unwrap())
        };
        let (t, m) = make(&wt.join(".agent"), "codex");
        assert_eq!(task_agent(&t, &m, &repo), Some((Native::Codex, wt.clone())));
        let (t, m) = make(&wt.join(".agent"), "aider");
        assert_eq!(task_agent(&t, &m, &repo), None, "not an agent grove reads");
        let (t, mut m) = make(&wt.join(".agent"), "claude-code");
        m.main_thread_id = Some("other".into());
        assert_eq!(task_agent(&t, &m, &repo), None, "a subagent's thread");
        let (t, m) = make(&repo.join(".agent"), "claude-code");
        assert_eq!(task_agent(&t, &m, &repo), None, "the main checkout's");
        std::fs::create_dir_all(&cache).unwrap();
        let (t, m) = make(&cache, "codex");
        assert_eq!(task_agent(&t, &m, &repo), None, "a copy in grove's cache");
    }
}
