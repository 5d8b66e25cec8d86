//! Continuing a thread in a real agent (`grove resume`): the thread written
//! as one of the agent's own sessions, where the agent looks for it, and
//! recorded on the thread so that capturing the resumed session goes on in
//! the same thread (the records carry the messages' ids, so nothing is
//! added twice).
//!
//! - Claude Code: a session JSONL in its project directory.
//! - Codex: a rollout in its day directory.
//! - Gemini CLI: a chat in the project's `chats/` folder, where `gemini
//!   --list-sessions` lists it (Gemini names a project's folder itself, in
//!   its `projects.json`: for a worktree it never ran in, grove has it make
//!   one first, running `gemini --list-sessions` there).
//! - OpenCode: its sessions are rows of its database, which only OpenCode
//!   writes: grove writes the session as the file `opencode export` would
//!   and has `opencode import` read it, in the worktree.
//!
//! Gemini and OpenCode go on with their own session when the thread's last
//! session is theirs and holds the thread's last message ([`own_session`]):
//! nothing is written then.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::agent::Native;
use crate::capture::{self, SessionRecord, transcripts};
use crate::error::{Error, IoContext, Result};
use crate::export::native::NativeExport;
use crate::store::Thread;

/// A session grove wrote for an agent.
#[derive(Debug, Clone)]
pub struct Written {
    /// Where the session file is.
    pub path: PathBuf,
    /// What was written (with the session id).
    pub report: NativeExport,
}

/// A new session id as `native` makes them: a random UUID for Claude Code
/// and Gemini CLI, a time-ordered one (v7) for Codex, OpenCode's `ses_`,
/// twelve hex digits and fourteen letters or digits.
pub fn new_session_id(native: Native) -> String {
    match native {
        Native::Claude | Native::Gemini => uuid::Uuid::new_v4().to_string(),
        Native::Codex => uuid::Uuid::now_v7().to_string(),
        Native::OpenCode => {
            // Newer sessions first, as OpenCode's own ids sort.
            let ms = jiff::Timestamp::now().as_millisecond().max(0) as u64;
            let time =
                (0xffff_ffff_ffff_u64.wrapping_sub(ms.wrapping_mul(0x1000))) & 0xffff_ffff_ffff;
            const ALPHABET: &[u8] =
                b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
            let random: String = uuid::Uuid::new_v4()
                .as_bytes()
                .iter()
                .take(14)
                .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
                .collect();
            format!("ses_{time:012x}{random}")
        }
    }
}

/// Where `native` keeps session `id` run in `cwd`: Claude Code's
/// `projects/<its name for cwd>/<id>.jsonl`, Codex's
/// `sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`.
pub fn session_path(native: Native, cwd: &Path, id: &str) -> Result<PathBuf> {
    let missing = |what: &str| {
        Error::Other(format!(
            "cannot find {what}: set HOME (or {})",
            match native {
                Native::Claude => "CLAUDE_CONFIG_DIR",
                Native::Codex => "CODEX_HOME",
                Native::Gemini => "GEMINI_CLI_HOME",
                Native::OpenCode => "XDG_DATA_HOME",
            }
        ))
    };
    match native {
        Native::Claude => Ok(transcripts::claude_project_dir(cwd)
            .ok_or_else(|| missing("Claude Code's directory"))?
            .join(format!("{id}.jsonl"))),
        Native::Codex => {
            let now = jiff::Zoned::now();
            let day = now.strftime("%Y/%m/%d").to_string();
            let stamp = now.strftime("%Y-%m-%dT%H-%M-%S").to_string();
            Ok(transcripts::codex_home()
                .ok_or_else(|| missing("Codex's directory"))?
                .join("sessions")
                .join(day)
                .join(format!("rollout-{stamp}-{id}.jsonl")))
        }
        // `session-<UTC time to the minute>-<the id's first 8>.jsonl`, as
        // Gemini names its chats.
        Native::Gemini => {
            let dir = transcripts::gemini_project_dirs(&[cwd.to_path_buf()])
                .into_iter()
                .next()
                .ok_or_else(|| {
                    Error::Other(format!(
                        "Gemini CLI has no folder for {} yet (it makes one the first time it runs there)",
                        cwd.display()
                    ))
                })?;
            let stamp = jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H-%M")
                .to_string();
            let short: String = id.chars().take(8).collect();
            Ok(dir
                .join("chats")
                .join(format!("session-{stamp}-{short}.jsonl")))
        }
        // The file `opencode import` reads, in grove's data directory.
        Native::OpenCode => Ok(crate::home::data_dir()?
            .join("opencode")
            .join("imports")
            .join(format!("{id}.json"))),
    }
}

/// Writes `thread` as a new session of `native` run in `cwd`, in the
/// agent's own directory, and records it on the thread. The file is built
/// aside and linked into place: it is whole or absent, and an existing
/// session file is never replaced. `program` is the agent's, which Gemini
/// CLI and OpenCode need to take the session in (see the module's
/// documentation); `None`: `gemini` or `opencode` on `PATH`.
pub fn write_session(
    thread: &Thread,
    native: Native,
    cwd: &Path,
    program: Option<&Path>,
) -> Result<Written> {
    let id = new_session_id(native);
    let program = match native {
        Native::Gemini | Native::OpenCode => Some(agent_program(native, program)?),
        _ => None,
    };
    let program = program.as_deref().unwrap_or(Path::new(""));
    if native == Native::Gemini {
        gemini_project(cwd, program)?;
    }
    let path = session_path(native, cwd, &id)?;
    let report = write_new(&path, |out| {
        crate::export::write_session(thread, native, &id, cwd, out)
    })?;
    let transcript = match native {
        Native::OpenCode => opencode_import(&path, cwd, program, &id)?,
        _ => path.clone(),
    };
    let repo_root = crate::project::Project::discover(cwd)?.main_root;
    record(thread, &repo_root, native, &id, &transcript)?;
    Ok(Written {
        path: transcript,
        report,
    })
}

/// The agent's program: `program`, else the agent's own on `PATH`.
fn agent_program(native: Native, program: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = program {
        return Ok(p.to_path_buf());
    }
    let name = native.format();
    which::which(name).map_err(|_| {
        Error::Other(format!(
            "{name} is not on PATH: grove needs it to write a session {} takes",
            native.agent_id()
        ))
    })
}

/// How long grove waits for the agent to take a session in.
const AGENT_WAIT: Duration = Duration::from_secs(60);

/// Has Gemini CLI make its folder for the project `cwd` when it has none
/// (`gemini --list-sessions` there names it in Gemini's `projects.json`,
/// as Gemini does, and lists nothing else).
fn gemini_project(cwd: &Path, program: &Path) -> Result<()> {
    if !transcripts::gemini_project_dirs(&[cwd.to_path_buf()]).is_empty() {
        return Ok(());
    }
    // Whatever it says (a missing key makes it exit 41 after naming the
    // folder), the folder is what counts.
    let _ = run_agent(program, &["--list-sessions"], cwd);
    if transcripts::gemini_project_dirs(&[cwd.to_path_buf()]).is_empty() {
        return Err(Error::Other(format!(
            "Gemini CLI made no folder for {} (`{} --list-sessions` there); grove cannot write a \
             session Gemini would list",
            cwd.display(),
            program.display()
        )));
    }
    Ok(())
}

/// Has OpenCode import the session file `file` (session `id`) in `cwd`;
/// returns OpenCode's database, which holds it now. The file goes once
/// imported.
fn opencode_import(file: &Path, cwd: &Path, program: &Path, id: &str) -> Result<PathBuf> {
    let arg = file.to_string_lossy().into_owned();
    let result = run_agent(program, &["import", &arg], cwd);
    let _ = std::fs::remove_file(file);
    let said = result?;
    let db = transcripts::opencode_db()
        .filter(|db| crate::import::opencode::session_progress(db, id).is_ok_and(|p| p.is_some()))
        .ok_or_else(|| {
            Error::Other(format!(
                "OpenCode did not take the session in (`{} import`): {}",
                program.display(),
                said.trim()
            ))
        })?;
    Ok(db)
}

/// Runs the agent's `program` with `args` in `cwd` (its own `PWD`: OpenCode
/// takes its project from it), no terminal, for at most [`AGENT_WAIT`];
/// what it printed.
// The agent's own command, run to take a session in.
#[allow(clippy::disallowed_methods)]
fn run_agent(program: &Path, args: &[&str], cwd: &Path) -> Result<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("PWD", cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("starting", program, e))?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut text);
        }
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut text);
        }
        text
    });
    let deadline = std::time::Instant::now() + AGENT_WAIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Other(format!(
                    "{} {} did not finish within {} s",
                    program.display(),
                    args.join(" "),
                    AGENT_WAIT.as_secs()
                )));
            }
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() && args.first() == Some(&"import") {
        return Err(Error::Other(format!(
            "OpenCode did not take the session in (`{} import`, {status}): {}",
            program.display(),
            text.trim()
        )));
    }
    Ok(text)
}

/// The agent's own session the thread can go on in, when `native` is
/// Gemini CLI or OpenCode: the last session captured into the thread on
/// this machine, of that agent, whose transcript holds the thread's last
/// message (so it lacks nothing of the thread). Claude Code and Codex
/// always get a session written (their sessions hold what grove adds too).
pub fn own_session(thread: &Thread, native: Native, repo_root: &Path) -> Option<String> {
    if !matches!(native, Native::Gemini | Native::OpenCode) {
        return None;
    }
    let last = crate::capture::ledger::sessions(repo_root, thread.id()).pop()?;
    if Native::from_name(&last.agent) != Some(native) {
        return None;
    }
    let transcript = PathBuf::from(last.transcript.as_ref()?);
    let last_id = last_message_id(thread)?;
    let holds = match native {
        Native::OpenCode => crate::import::opencode::session_has_message(
            &transcript,
            &last.session_id,
            &crate::export::opencode::message_id(&last_id),
        )
        .unwrap_or(false),
        _ => crate::fsutil::read(&transcript).is_ok_and(|bytes| {
            let needle = serde_json::to_string(&last_id).unwrap_or_default();
            memchr::memmem::find(&bytes, needle.as_bytes()).is_some()
        }),
    };
    holds.then_some(last.session_id)
}

/// The id of the thread's last message that is not a completion.
fn last_message_id(thread: &Thread) -> Option<String> {
    thread
        .messages()
        .ok()?
        .filter_map(|m| m.ok())
        .filter(|m| m.completes().is_none())
        .last()
        .map(|m| m.id)
}

/// Writes a new file `path` with `fill`, whole or not at all; an existing
/// `path` is an error and stays as it was.
pub fn write_new(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<NativeExport>,
) -> Result<NativeExport> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::Other(format!("{} names no file", path.display())))?;
    std::fs::create_dir_all(dir).ctx("creating", dir)?;
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(exists(path));
    }
    let mut tmp = crate::fsutil::temp_file_beside(path)?;
    let report = {
        let mut w = std::io::BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
        let report = fill(&mut w)?;
        w.flush().ctx("writing", path)?;
        report
    };
    tmp.as_file().sync_all().ctx("syncing", path)?;
    tmp.persist_noclobber(path).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            exists(path)
        } else {
            Error::io("writing", path, e.error)
        }
    })?;
    Ok(report)
}

fn exists(path: &Path) -> Error {
    Error::Refused(format!(
        "{} exists; grove never writes over a file of the agent's",
        path.display()
    ))
}

/// Records the written session on the thread, seen to its end: `list` and
/// `show` find nothing to catch up until the agent writes. The first
/// capture then reads the file whole once and adds only the records whose
/// message the thread lacks (what grove wrote carries the ids).
fn record(thread: &Thread, repo_root: &Path, native: Native, id: &str, path: &Path) -> Result<()> {
    let len = transcripts::progress(native, path, id)
        .ok_or_else(|| Error::Other(format!("{} holds no session {id}", path.display())))?;
    let session = SessionRecord {
        agent: native.agent_id().to_string(),
        session_id: id.to_string(),
        transcript: Some(path.to_string_lossy().into_owned()),
        started_at: crate::atsf::now_timestamp(),
        exported: true,
        extra: Default::default(),
    };
    capture::ledger::record(repo_root, thread.id(), &session)?;
    thread.update_meta(|meta| {
        capture::add_session(meta, &session);
        if let Some(entry) = capture::session_entry_mut(meta.metadata_mut(), id) {
            entry.insert("seen".into(), Value::from(len));
        }
    })?;
    Ok(())
}
