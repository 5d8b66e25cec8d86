//! Where the agents keep their sessions, to find a session the hooks did
//! not announce (an untrusted Codex project, a hook that could not run) and
//! to write a native session for `grove resume`.
//!
//! - Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, then
//!   `projects/<the cwd with every character but ASCII letters and digits
//!   made '-'>/<session id>.jsonl`.
//! - Codex: `$CODEX_HOME` or `~/.codex`, then
//!   `sessions/YYYY/MM/DD/rollout-<local time>-<session id>.jsonl`, whose
//!   first line (`session_meta`) names the session's `cwd`.
//! - Gemini CLI: `$GEMINI_CLI_HOME/.gemini` or `~/.gemini`, then
//!   `tmp/<project>/chats/session-<local time>-<first 8 of the id>.jsonl`,
//!   the project's folder named by the `.project_root` Gemini writes in it;
//!   a subagent's chat in `chats/<parent session>/`.
//! - OpenCode: one SQLite database for every session,
//!   `$XDG_DATA_HOME/opencode/opencode.db` (or `~/.local/share/…`,
//!   `OPENCODE_DB`), whose `session` rows name their `directory`.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::agent::Native;

pub use crate::agent::homes::{claude_home, codex_home, gemini_home, gemini_project_dirs};

/// The session id a Gemini chat's first line names.
pub fn gemini_session_of(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_line(&mut line)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    Some(v.get("sessionId")?.as_str()?.to_string())
}

/// Gemini's chats of the project `cwd` (not its subagents'), changed since
/// `since` when given, one per session: the longest of a session's files (a
/// resume in a later minute leaves a second one holding its context only).
fn gemini_chats(cwd: &Path, since: Option<SystemTime>) -> Vec<(SystemTime, Found)> {
    let mut best: std::collections::HashMap<String, (u64, SystemTime, PathBuf)> =
        Default::default();
    for dir in gemini_project_dirs(&[cwd.to_path_buf()]) {
        for entry in std::fs::read_dir(dir.join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            let named = path.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with("session-") && n.ends_with(".jsonl")
            });
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let time = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if !named || !meta.is_file() || since.is_some_and(|s| time < s) {
                continue;
            }
            let Some(id) = gemini_session_of(&path) else {
                continue;
            };
            if best.get(&id).is_none_or(|(len, _, _)| meta.len() > *len) {
                best.insert(id, (meta.len(), time, path));
            }
        }
    }
    best.into_iter()
        .map(|(id, (_, time, path))| {
            (
                time,
                Found {
                    session_id: id,
                    transcript: path,
                },
            )
        })
        .collect()
}

/// The chat of Gemini session `session` run in `cwd`.
pub fn gemini_transcript(cwd: &Path, session: &str) -> Option<PathBuf> {
    gemini_chats(cwd, None)
        .into_iter()
        .find(|(_, f)| f.session_id == session)
        .map(|(_, f)| f.transcript)
}

/// OpenCode's database on this machine.
pub fn opencode_db() -> Option<PathBuf> {
    crate::import::opencode::database()
}

/// Where the transcript of session `session` of `native` run in `cwd` is,
/// once the agent wrote one (a hook may come first).
pub fn transcript_of(native: Native, cwd: &Path, session: &str) -> Option<PathBuf> {
    let found = match native {
        Native::Claude => claude_transcript(cwd, session),
        Native::Codex => codex_rollout(session),
        Native::Gemini => gemini_transcript(cwd, session),
        Native::OpenCode => opencode_db(),
    };
    found.filter(|p| p.is_file())
}

/// How far the transcript of session `session` goes: its length, and for
/// OpenCode (one database for every session) a number that changes
/// whenever that session does. `None` when there is nothing to read (yet).
pub fn progress(native: Native, transcript: &Path, session: &str) -> Option<u64> {
    match native {
        Native::OpenCode => crate::import::opencode::session_progress(transcript, session).ok()?,
        _ => std::fs::metadata(transcript).ok().map(|m| m.len()),
    }
}

/// The OpenCode sessions run in `cwd` and changed since `since`.
fn opencode_sessions(cwd: &Path, since: SystemTime) -> Vec<(SystemTime, Found)> {
    let Some(db) = opencode_db().filter(|d| d.is_file()) else {
        return Vec::new();
    };
    let ms = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let time = modified(&db);
    crate::import::opencode::sessions_in(&db, cwd, ms)
        .unwrap_or_default()
        .into_iter()
        .map(|id| {
            (
                time,
                Found {
                    session_id: id,
                    transcript: db.clone(),
                },
            )
        })
        .collect()
}

/// Claude Code's name for the project directory of sessions run in `cwd`.
pub fn claude_project_name(cwd: &Path) -> String {
    // Per UTF-16 unit, as Claude Code (JavaScript) does.
    let s = cwd.to_string_lossy();
    s.encode_utf16()
        .map(|u| match char::from_u32(u32::from(u)) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect()
}

/// The directory Claude Code keeps the sessions run in `cwd` in. A name
/// over 200 characters is cut there and given a suffix of Claude Code's
/// own: the directory that begins so is taken, when there is one.
pub fn claude_project_dir(cwd: &Path) -> Option<PathBuf> {
    let projects = claude_home()?.join("projects");
    let name = claude_project_name(cwd);
    if name.len() <= 200 {
        return Some(projects.join(name));
    }
    let prefix = &name[..200];
    std::fs::read_dir(&projects)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
}

/// Claude Code's transcript of `session` run in `cwd`.
pub fn claude_transcript(cwd: &Path, session: &str) -> Option<PathBuf> {
    Some(claude_project_dir(cwd)?.join(format!("{session}.jsonl")))
}

/// The Codex rollout of `session`, newest day first.
pub fn codex_rollout(session: &str) -> Option<PathBuf> {
    let suffix = format!("-{session}.jsonl");
    rollouts(None)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(&suffix))
}

/// Codex rollouts, newest day first; only days from `since` on when given.
fn rollouts(since: Option<SystemTime>) -> Vec<PathBuf> {
    let Some(root) = codex_home().map(|h| h.join("sessions")) else {
        return Vec::new();
    };
    // Day directories are in local time; a day before `since` in UTC
    // may still hold it.
    let first_day = since.map(|t| {
        let t =
            jiff::Timestamp::try_from(t).unwrap_or_default() - jiff::SignedDuration::from_hours(24);
        t.strftime("%Y/%m/%d").to_string()
    });
    let mut out = Vec::new();
    for year in sorted_dirs(&root) {
        for month in sorted_dirs(&year) {
            for day in sorted_dirs(&month) {
                let key = day
                    .strip_prefix(&root)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                if first_day
                    .as_ref()
                    .is_some_and(|f| key.as_str() < f.as_str())
                {
                    continue;
                }
                let mut files: Vec<PathBuf> = std::fs::read_dir(&day)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.extension().is_some_and(|e| e == "jsonl")
                            && p.file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
                    })
                    .collect();
                files.sort();
                files.reverse();
                out.push((key, files));
            }
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0));
    out.into_iter().flat_map(|(_, f)| f).collect()
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// A session found in the agent's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub session_id: String,
    pub transcript: PathBuf,
}

/// The sessions of `native` run in `cwd` and written to since `since`.
pub fn sessions_since(native: Native, cwd: &Path, since: SystemTime) -> Vec<Found> {
    let recent = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since)
    };
    let mut found: Vec<(SystemTime, Found)> = Vec::new();
    match native {
        Native::Claude => {
            let Some(dir) = claude_project_dir(cwd) else {
                return Vec::new();
            };
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let Some(stem) = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .and_then(|n| n.strip_suffix(".jsonl").map(str::to_string))
                else {
                    continue;
                };
                if stem.starts_with("agent-") || !recent(&path) {
                    continue;
                }
                let first = modified(&path);
                found.push((
                    first,
                    Found {
                        session_id: stem,
                        transcript: path,
                    },
                ));
            }
        }
        Native::Codex => {
            for path in rollouts(Some(since)) {
                if !recent(&path) {
                    continue;
                }
                let Some((id, session_cwd)) = codex_meta(&path) else {
                    continue;
                };
                if same_dir(Path::new(&session_cwd), cwd) {
                    found.push((
                        modified(&path),
                        Found {
                            session_id: id,
                            transcript: path,
                        },
                    ));
                }
            }
        }
        Native::Gemini => found = gemini_chats(cwd, Some(since)),
        Native::OpenCode => found = opencode_sessions(cwd, since),
    }
    found.sort_by_key(|(t, _)| *t);
    found.into_iter().map(|(_, f)| f).collect()
}

/// What [`created_since`] found.
#[derive(Debug, Default)]
pub struct Created {
    /// The sessions, oldest first.
    pub found: Vec<Found>,
    /// A directory was listed (something appeared since).
    pub listed: bool,
    /// A rollout's first line could not be read yet (Codex still writing
    /// it): the next look must look again.
    pub unsure: bool,
}

/// The sessions of `native` run in `cwd` whose files appeared since
/// `since`, found cheaply: a directory not changed since then (a new file
/// changes its directory's time) is not listed, and only files changed
/// since are looked at.
pub fn created_since(native: Native, cwd: &Path, since: SystemTime) -> Created {
    let changed = |p: &Path| modified(p) >= since;
    let files = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && changed(p))
            .collect()
    };
    let mut found: Vec<(SystemTime, Found)> = Vec::new();
    let mut created = Created::default();
    match native {
        Native::Claude => {
            let Some(dir) = claude_project_dir(cwd).filter(|d| changed(d)) else {
                return created;
            };
            created.listed = true;
            for path in files(&dir) {
                let Some(stem) = path.file_stem().map(|n| n.to_string_lossy().into_owned()) else {
                    continue;
                };
                if !stem.starts_with("agent-") {
                    found.push((
                        modified(&path),
                        Found {
                            session_id: stem,
                            transcript: path,
                        },
                    ));
                }
            }
        }
        Native::Codex => {
            for day in rollout_days(since).into_iter().filter(|d| changed(d)) {
                created.listed = true;
                for path in files(&day) {
                    let named = path
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"));
                    if !named {
                        continue;
                    }
                    let Some((id, session_cwd)) = codex_meta_once(&path) else {
                        created.unsure = true;
                        continue;
                    };
                    if same_dir(Path::new(&session_cwd), cwd) {
                        found.push((
                            modified(&path),
                            Found {
                                session_id: id,
                                transcript: path,
                            },
                        ));
                    }
                }
            }
        }
        Native::Gemini => {
            let chats: Vec<PathBuf> = gemini_project_dirs(&[cwd.to_path_buf()])
                .into_iter()
                .map(|d| d.join("chats"))
                .filter(|d| changed(d))
                .collect();
            if !chats.is_empty() {
                created.listed = true;
                found = gemini_chats(cwd, Some(since));
            }
        }
        Native::OpenCode => {
            // Its writes go to the write-ahead log first.
            let touched = opencode_db().is_some_and(|db| {
                let wal = PathBuf::from(format!("{}-wal", db.display()));
                changed(&db) || changed(&wal)
            });
            if touched {
                created.listed = true;
                found = opencode_sessions(cwd, since);
            }
        }
    }
    found.sort_by_key(|(t, _)| *t);
    created.found = found.into_iter().map(|(_, f)| f).collect();
    created
}

/// Codex's day directories that may hold a rollout started since `since`
/// (named in local time: from the UTC day before on).
fn rollout_days(since: SystemTime) -> Vec<PathBuf> {
    let Some(root) = codex_home().map(|h| h.join("sessions")) else {
        return Vec::new();
    };
    let t =
        jiff::Timestamp::try_from(since).unwrap_or_default() - jiff::SignedDuration::from_hours(24);
    let first = t.strftime("%Y/%m/%d").to_string();
    let (year, month) = (&first[..4], &first[..7]);
    let name = |p: &Path| {
        p.strip_prefix(&root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for y in sorted_dirs(&root)
        .into_iter()
        .filter(|y| name(y).as_str() >= year)
    {
        for m in sorted_dirs(&y)
            .into_iter()
            .filter(|m| name(m).as_str() >= month)
        {
            out.extend(
                sorted_dirs(&m)
                    .into_iter()
                    .filter(|d| name(d).as_str() >= first.as_str()),
            );
        }
    }
    out
}

fn modified(p: &Path) -> SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// [`codex_meta`], read once per process: `grove list` looks for the
/// sessions of every Codex task in the same day directories.
fn codex_meta_once(path: &Path) -> Option<(String, String)> {
    type Seen = std::collections::HashMap<PathBuf, Option<(String, String)>>;
    static SEEN: std::sync::OnceLock<std::sync::Mutex<Seen>> = std::sync::OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(known) = seen.lock().ok()?.get(path) {
        return known.clone();
    }
    let meta = codex_meta(path);
    // A first line not read whole yet may be later: only answers are kept.
    if meta.is_some() {
        seen.lock().ok()?.insert(path.to_path_buf(), meta.clone());
    }
    meta
}

/// The session id and cwd from a rollout's `session_meta` line.
pub fn codex_meta(path: &Path) -> Option<(String, String)> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file)
        .take(1 << 20)
        .read_line(&mut line)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).ok()?;
    if v.get("type")?.as_str()? != "session_meta" {
        return None;
    }
    let p = v.get("payload")?;
    Some((
        p.get("id")?.as_str()?.to_string(),
        p.get("cwd")?.as_str()?.to_string(),
    ))
}

/// How much of a rollout's end [`codex_last_turn_event`] reads.
const TURN_TAIL: u64 = 64 << 10;

/// The last event of a Codex rollout that starts or ends a turn
/// (`task_started`, `task_complete`, `turn_aborted`) and its timestamp, when
/// the rollout's last [`TURN_TAIL`] bytes hold one.
pub fn codex_last_turn_event(path: &Path) -> Option<(String, String)> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let from = len.saturating_sub(TURN_TAIL);
    file.seek(std::io::SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    file.take(TURN_TAIL).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        // Begun before the tail: not whole.
        lines.remove(0);
    }
    lines.iter().rev().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        if v.get("type")?.as_str()? != "event_msg" {
            return None;
        }
        let kind = v.get("payload")?.get("type")?.as_str()?;
        matches!(kind, "task_started" | "task_complete" | "turn_aborted").then(|| {
            let at = v.get("timestamp").and_then(|t| t.as_str()).unwrap_or("");
            (kind.to_string(), at.to_string())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_s_last_turn_event_is_read_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        let event = |kind: &str, at: &str| {
            format!(
                "{{\"timestamp\":\"{at}\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"{kind}\"}}}}\n"
            )
        };
        let mut text = event("task_started", "2026-01-01T00:00:00.000Z");
        // More than the tail reads, between the turn's start and its end.
        let filler = format!(
            "{{\"type\":\"response_item\",\"payload\":{{\"x\":\"{}\"}}}}\n",
            "y".repeat(1000)
        );
        text.push_str(&filler.repeat(80));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(codex_last_turn_event(&path), None, "not in the tail");
        text.push_str(&event("turn_aborted", "2026-01-01T00:00:05.000Z"));
        text.push_str("{\"type\":\"response_item\",\"payload\":{}}\n{\"torn");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            codex_last_turn_event(&path),
            Some(("turn_aborted".into(), "2026-01-01T00:00:05.000Z".into()))
        );
    }

    #[test]
    fn claude_names_projects_by_their_path() {
        assert_eq!(
            claude_project_name(Path::new("/home/me/my.app_x")),
            "-home-me-my-app-x"
        );
        assert_eq!(claude_project_name(Path::new("/tmp/é")), "-tmp--");
    }
}
