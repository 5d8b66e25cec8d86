//! A short, bounded follow-up after a hook: the records an agent writes
//! just after it ran the hook reach the thread without waiting for the next
//! hook.
//!
//! Both agents run hooks before the record they announce is in the
//! transcript: Claude Code 2.1.331 runs `UserPromptSubmit` before it writes
//! the prompt, `PreToolUse` before the `tool_use`, `PostToolUse` before the
//! `tool_result`, and after a `--resume` sometimes `Stop` before the final
//! reply; Codex 0.169 runs `UserPromptSubmit` before the user's message,
//! `PostToolUse` before the tool's output, `Stop` before `task_complete`.
//! So after every hook but `SessionEnd` the hook asks for a follow-up
//! ([`request`]): one detached `grove capture follow` per session
//! ([`run`]) that watches the transcript's length every [`POLL`] and
//! captures what it gains, until [`WINDOW`] after the session's last hook.
//! A later hook of the session extends the running follower instead of
//! starting another. The hook itself returns at once: the follower has its
//! own process group, no standard streams, and nothing waits for it.
//!
//! The follower captures with [`super::catchup::session`], under the thread's
//! capture lock like a hook, so nothing is added twice or skipped. It
//! reads only what this machine recorded of the session ([`super::ledger`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::agent::Native;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::Thread;

/// How long after a session's last hook its follower watches.
pub const WINDOW: Duration = Duration::from_secs(3);
/// How often the follower looks at the transcript's length.
pub const POLL: Duration = Duration::from_millis(40);

/// Whether the agent may still write a record after running the hook of
/// `event` (everything but the session's end).
pub fn expects_more(event: &str) -> bool {
    event != "SessionEnd"
}

/// The poke file and lock of `session`'s follower.
struct Keys {
    poke: PathBuf,
    lock: PathBuf,
}

impl Keys {
    fn of(native: Native, session: &str) -> Result<Keys> {
        let id = format!("{}:{session}", native.format());
        let hash = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
        let data = crate::home::data_dir()?;
        Ok(Keys {
            poke: data.join("follow").join(format!("{hash:016x}.poke")),
            lock: data.join("locks").join(format!("follow-{hash:016x}.lock")),
        })
    }

    /// Records that a hook of the session ran now.
    fn poke(&self) -> Result<()> {
        if let Some(dir) = self.poke.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        }
        let now = millis(SystemTime::now());
        crate::fsutil::write_atomic_unsynced(&self.poke, now.to_string().as_bytes())
    }

    /// When a hook of the session last ran (milliseconds since the epoch).
    fn poked(&self) -> u128 {
        std::fs::read_to_string(&self.poke)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
}

fn millis(t: SystemTime) -> u128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// Asks for a follow-up of `session` (run in `cwd`) after one of its hooks:
/// a running follower watches longer, else `grove` starts one, detached.
/// Returns whether it started one.
pub fn request(grove: &Path, native: Native, cwd: &Path, session: &str) -> Result<bool> {
    let keys = Keys::of(native, session)?;
    // The poke first: a follower about to end reads it after it let go of
    // its lock, so it either sees this hook or its lock is free here.
    keys.poke()?;
    match crate::fsutil::FileLock::try_acquire(&keys.lock)? {
        None => Ok(false),
        Some(free) => {
            drop(free);
            spawn(grove, native, cwd, session)?;
            Ok(true)
        }
    }
}

/// Starts `grove capture follow` for `session`, not waited for: no standard
/// streams (an agent waits for its hook's output to close), a process group
/// of its own (a signal to the hook's group leaves it alone), and grove's
/// data directory as its current directory (one in the worktree would hold
/// `grove rm` back while it runs).
#[allow(clippy::disallowed_methods)] // grove's own binary, not a user command
fn spawn(grove: &Path, native: Native, cwd: &Path, session: &str) -> Result<()> {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(grove);
    cmd.args(["capture", "follow", native.format(), "--session", session])
        .arg("--cwd")
        .arg(cwd)
        .current_dir(crate::home::data_dir()?)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // A relative GROVE_HOME means the hook's directory, not this one.
    if let Some(home) = crate::home::home_for_children() {
        cmd.env("GROVE_HOME", home);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        // DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP
        cmd.creation_flags(0x0000_0008 | 0x0000_0200);
    }
    // Not waited for: once the hook exits, init reaps it.
    cmd.spawn()
        .map_err(|e| Error::Other(format!("cannot start {}: {e}", grove.display())))?;
    Ok(())
}

/// What a follower did.
#[derive(Debug, Default)]
pub struct Followed {
    /// The thread it captured into (none when another follower runs, or
    /// the session is no thread's).
    pub thread: Option<Thread>,
    /// Messages added.
    pub added: u64,
    /// Captures that failed (the next one, or the next hook, catches up).
    pub problems: Vec<String>,
}

/// The follower of `session` (run in `cwd`): captures what the transcript
/// gains until [`WINDOW`] after the session's last hook. Returns at once
/// when another follower of the session runs.
pub fn run(native: Native, cwd: &Path, session: &str) -> Result<Followed> {
    let keys = Keys::of(native, session)?;
    let mut followed = Followed::default();
    let Some(mut lock) = crate::fsutil::FileLock::try_acquire(&keys.lock)? else {
        return Ok(followed);
    };
    let project = Project::discover(cwd)?;
    let Some((thread, mut record)) = session_of(&project, session) else {
        return Ok(followed);
    };
    followed.thread = Some(thread.clone());
    let mut seen: Option<u64> = None;
    loop {
        let poked = keys.poked();
        if millis(SystemTime::now()) > poked + WINDOW.as_millis() {
            drop(lock);
            // A hook that found the lock held poked before it looked: seen
            // here, now that the lock is free.
            if keys.poked() == poked {
                break;
            }
            match crate::fsutil::FileLock::try_acquire(&keys.lock)? {
                Some(again) => lock = again,
                None => break,
            }
            continue;
        }
        if !thread.meta_path().is_file() {
            break;
        }
        if record.transcript.is_none() {
            record.transcript = find_transcript(native, &project, session);
        }
        let len = record
            .transcript
            .as_deref()
            .and_then(|t| super::transcripts::progress(native, Path::new(t), session));
        if len.is_some() && len != seen {
            if !behind(&thread, &record) {
                // Captured already (by the hook that started this follower,
                // or another capture).
                seen = len;
                std::thread::sleep(POLL);
                continue;
            }
            match super::catchup::session(&thread, &project.main_root, native, &record) {
                Ok(c) => {
                    followed.added += c.added();
                    seen = len;
                }
                // Tried again at the next look.
                Err(e) => followed.problems.push(e.to_string()),
            }
        }
        std::thread::sleep(POLL);
    }
    Ok(followed)
}

/// Whether the session's transcript has more than the thread captured.
fn behind(thread: &Thread, record: &super::SessionRecord) -> bool {
    thread
        .meta()
        .map_or(true, |meta| super::catchup::behind(&meta, record))
}

/// The thread this machine captures `session` into, and the session as
/// recorded.
fn session_of(project: &Project, session: &str) -> Option<(Thread, super::SessionRecord)> {
    let listing = project.store().list().ok()?;
    listing.threads.iter().find_map(|t| {
        let record = super::ledger::sessions(&project.main_root, t.thread.id())
            .into_iter()
            .find(|s| s.session_id == session)?;
        Some((t.thread.clone(), record))
    })
}

/// The session's transcript where the agent keeps it, once it exists (a
/// hook may come before the agent wrote anything).
fn find_transcript(native: Native, project: &Project, session: &str) -> Option<String> {
    super::transcripts::transcript_of(native, &project.cwd, session)
        .map(|p| p.to_string_lossy().into_owned())
}
