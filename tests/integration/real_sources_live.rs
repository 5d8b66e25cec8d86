//! The real Gemini CLI and OpenCode (pinned in tests/real-agents) with
//! grove, offline against the fixtures' scripted model servers: run by hand
//! in a task's worktree after `grove capture install` — Gemini's hooks and
//! OpenCode's plugin bring each record into the task's thread while the
//! agent runs — and launched and resumed through grove, in the same agent
//! (its own resume option) and in the other one (a session written where
//! the agent reads it).
//!
//! The live tests hold each model answer (the servers' gate) until the
//! thread holds what the agent wrote before asking — the prompt, each tool's
//! result — and note how long after the agent's own record of it that was:
//! the agent waits for the model meanwhile, and runs no hook.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::real_sources::{
    Counts, count_thread, gemini_counts, gemini_records, jsonl_files, offline, opencode_counts,
};
use crate::support::*;

const SHELL_PROMPT: &str = "Run a shell command, read two files and write notes";

/// The real agents in the sandbox's `bin/`, and their homes set up as a
/// user's: Gemini with an API key (`security.auth.selectedType`), OpenCode's
/// config directory holding its plugin package as OpenCode installs it
/// there once (offline, OpenCode would try npm at each start before it
/// loads a plugin).
struct Agents {
    gemini: PathBuf,
    opencode: PathBuf,
}

fn agents(sb: &Sandbox) -> Option<Agents> {
    let gemini = real_program("gemini")?;
    let opencode = real_program("opencode")?;
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, real) in [("gemini", &gemini), ("opencode", &opencode)] {
        #[cfg(unix)]
        std::os::unix::fs::symlink(real, bin.join(name)).unwrap();
    }
    let home = sb.path().join("gemini-home/.gemini");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.json"),
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true},
            "telemetry": {"enabled": false}, "privacy": {"usageStatisticsEnabled": false}}"#,
    )
    .unwrap();
    let config = sb.path().join("xdg/config/opencode");
    std::fs::create_dir_all(config.join("node_modules/@opencode-ai/plugin")).unwrap();
    std::fs::write(
        config.join("package-lock.json"),
        r#"{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "1.18.33"}}}}"#,
    )
    .unwrap();
    Some(Agents { gemini, opencode })
}

/// The environment both agents run in: the sandbox's (grove's home, the
/// agents' homes), offline, Gemini pointed at `gemini_port`.
fn agent_env<'c>(sb: &Sandbox, cmd: &'c mut Command, gemini_port: u16) -> &'c mut Command {
    sb.env(cmd);
    offline(cmd)
        .env("PATH", sb.agent_path())
        .env("GEMINI_CLI_HOME", sb.path().join("gemini-home"))
        .env("GEMINI_API_KEY", "test")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{gemini_port}"),
        )
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("XDG_DATA_HOME", sb.path().join("xdg/data"))
        .env("XDG_CONFIG_HOME", sb.path().join("xdg/config"))
        .env("XDG_CACHE_HOME", sb.path().join("xdg/cache"))
        .env("XDG_STATE_HOME", sb.path().join("xdg/state"))
}

/// OpenCode's config for a project: the scripted server as its model, every
/// tool allowed (its `$schema` given, which OpenCode adds to a config that
/// has none).
fn opencode_config(port: u16) -> String {
    serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "test"},
            "models": {"m1": {"name": "M1"}}}},
        "model": "scripted/m1", "autoupdate": false, "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"}
    })
    .to_string()
}

/// OpenCode's database in the sandbox.
fn opencode_db(sb: &Sandbox) -> PathBuf {
    sb.path().join("xdg/data/opencode/opencode.db")
}

/// Gemini's chats in the sandbox (every project's).
fn gemini_chats(sb: &Sandbox) -> Vec<PathBuf> {
    let tmp = sb.path().join("gemini-home/.gemini/tmp");
    if !tmp.is_dir() {
        return Vec::new();
    }
    jsonl_files(&tmp)
}

/// The sessions of Gemini's chats in the sandbox (a resume in a later
/// minute leaves a second file of a session).
fn gemini_sessions(sb: &Sandbox) -> std::collections::BTreeSet<String> {
    gemini_chats(sb)
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let first: Value = serde_json::from_str(text.lines().next()?).ok()?;
            Some(first["sessionId"].as_str()?.to_string())
        })
        .collect()
}

/// Which agent a gate reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Agent {
    Gemini,
    OpenCode,
}

/// A record the agent wrote, which the thread must hold before the model
/// answers the request that follows it.
#[derive(Debug, Clone, PartialEq)]
enum Awaited {
    Prompt(String),
    Result(String),
}

/// What a model request follows: the results it carries last, or the
/// prompt that opens it.
fn awaited(agent: Agent, body: &Value, prompt: &str) -> Vec<Awaited> {
    match agent {
        Agent::Gemini => {
            let Some(last) = body["contents"].as_array().and_then(|c| c.last()) else {
                return Vec::new();
            };
            let results: Vec<Awaited> = last["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["functionResponse"]["id"].as_str())
                .map(|id| Awaited::Result(id.to_string()))
                .collect();
            if !results.is_empty() {
                return results;
            }
            if last.to_string().contains(prompt) {
                return vec![Awaited::Prompt(prompt.to_string())];
            }
            Vec::new()
        }
        Agent::OpenCode => {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let results: Vec<Awaited> = messages
                .iter()
                .rev()
                .take_while(|m| m["role"] == "tool")
                .filter_map(|m| m["tool_call_id"].as_str())
                .map(|id| Awaited::Result(id.to_string()))
                .collect();
            if !results.is_empty() {
                return results;
            }
            match messages.last() {
                Some(m) if m["role"] == "user" && m.to_string().contains(prompt) => {
                    vec![Awaited::Prompt(prompt.to_string())]
                }
                _ => Vec::new(),
            }
        }
    }
}

/// What the thread in `dir` holds now: its prompts' texts and the ids of
/// its calls that have their result.
fn thread_records(dir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut prompts, mut results) = (Vec::new(), Vec::new());
    let Ok(text) = std::fs::read_to_string(dir.join("messages.jsonl")) else {
        return (prompts, results);
    };
    for m in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if m["role"] == "user" {
            prompts.push(m["content"].to_string());
        }
        for c in m["toolCalls"].as_array().into_iter().flatten() {
            if matches!(c["status"].as_str(), Some("completed" | "failed"))
                && let Some(id) = c["toolCallId"].as_str()
            {
                results.push(id.to_string());
            }
        }
    }
    (prompts, results)
}

/// What the gate saw in the thread at one look.
type Look = (Vec<String>, Vec<String>, jiff::Timestamp);

/// When the gate first saw `what` in the thread, if it did.
fn first_seen(looks: &[Look], what: &Awaited) -> Option<jiff::Timestamp> {
    looks.iter().find_map(|(prompts, results, at)| {
        let hit = match what {
            Awaited::Prompt(p) => prompts.iter().any(|t| t.contains(p.as_str())),
            Awaited::Result(id) => results.iter().any(|c| same_call(c, id)),
        };
        hit.then_some(*at)
    })
}

/// Whether a call id of the agent's files names the call `id` the model
/// made: Gemini records a call as `<tool>__<the model's id>`.
fn same_call(recorded: &str, id: &str) -> bool {
    recorded == id || recorded.ends_with(&format!("__{id}"))
}

/// When the agent wrote `what`, by its own record: Gemini's record's
/// `timestamp` (a tool's result: the user record Gemini writes with it);
/// for OpenCode the time its database row was last written (a prompt's
/// text part comes a while after its message).
fn written_at(sb: &Sandbox, agent: Agent, what: &Awaited) -> Option<jiff::Timestamp> {
    match agent {
        Agent::Gemini => {
            for file in gemini_chats(sb) {
                for line in std::fs::read_to_string(&file).ok()?.lines() {
                    let Ok(v) = serde_json::from_str::<Value>(line) else {
                        continue;
                    };
                    if v["type"] != "user" {
                        continue;
                    }
                    let parts = v["content"].as_array().cloned().unwrap_or_default();
                    let hit = match what {
                        Awaited::Prompt(p) => parts
                            .iter()
                            .any(|x| x["text"].as_str().is_some_and(|t| t.contains(p.as_str()))),
                        Awaited::Result(id) => parts.iter().any(|x| {
                            x["functionResponse"]["id"]
                                .as_str()
                                .is_some_and(|r| same_call(r, id))
                        }),
                    };
                    if hit {
                        return v["timestamp"].as_str()?.parse().ok();
                    }
                }
            }
            None
        }
        Agent::OpenCode => {
            let db = rusqlite::Connection::open_with_flags(
                opencode_db(sb),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .ok()?;
            let ms: i64 = match what {
                Awaited::Prompt(p) => db
                    .query_row(
                        "SELECT max(m.time_updated, p.time_updated) FROM message m \
                         JOIN part p ON p.message_id = m.id \
                         WHERE json_extract(m.data, '$.role') = 'user' AND p.data LIKE ?1 \
                         ORDER BY m.time_created LIMIT 1",
                        [format!("%{p}%")],
                        |r| r.get(0),
                    )
                    .ok()?,
                Awaited::Result(id) => db
                    .query_row(
                        "SELECT time_updated FROM part WHERE json_extract(data, '$.callID') = ?1",
                        [id],
                        |r| r.get(0),
                    )
                    .ok()?,
            };
            jiff::Timestamp::from_millisecond(ms).ok()
        }
    }
}

/// What the gate saw before one model answer.
#[derive(Debug)]
struct Seen {
    what: Vec<Awaited>,
    /// From each record's write to the thread holding it, the longest;
    /// `None`: not within 10 s.
    latency: Option<Duration>,
    /// The agent's state `grove list` showed meanwhile.
    state: String,
}

/// Holds each model answer until the thread holds what the request
/// follows (see the module's documentation).
struct Gate {
    dir: PathBuf,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Gate {
    fn start(
        sb: Arc<Sandbox>,
        agent: Agent,
        repo: PathBuf,
        thread_dir: PathBuf,
        prompt: &str,
    ) -> Gate {
        let dir = sb.path().join(format!("gate-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s, st, prompt) = (dir.clone(), seen.clone(), stop.clone(), prompt.to_string());
        let id = thread_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let handle = std::thread::spawn(move || {
            let mut next = 0;
            // What the thread held, and when the gate first saw it: it
            // looks every 5 ms, whether a request waits or not.
            let mut looks: Vec<Look> = Vec::new();
            let look = |looks: &mut Vec<Look>| {
                let (p, r) = thread_records(&thread_dir);
                looks.push((p, r, jiff::Timestamp::now()));
            };
            while !st.load(Ordering::SeqCst) {
                look(&mut looks);
                let request = d.join(format!("{next:03}.json"));
                let Ok(text) = std::fs::read_to_string(&request) else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                let what = awaited(agent, &body, &prompt);
                if !what.is_empty() {
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_secs(10)
                        && !what.iter().all(|w| first_seen(&looks, w).is_some())
                    {
                        std::thread::sleep(Duration::from_millis(5));
                        look(&mut looks);
                    }
                    let latency = what
                        .iter()
                        .map(|w| {
                            let held = first_seen(&looks, w)?;
                            let written = written_at(&sb, agent, w)?;
                            Some(held.duration_since(written))
                        })
                        .collect::<Option<Vec<_>>>()
                        .and_then(|d| d.into_iter().max())
                        .map(|d| {
                            Duration::from_millis(d.as_millis().max(0).try_into().unwrap_or(0))
                        });
                    let state = row_of(&sb, &repo, &id)["agentState"]["state"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    s.lock().unwrap().push(Seen {
                        what,
                        latency,
                        state,
                    });
                }
                std::fs::write(d.join(format!("{next:03}.go")), "").unwrap();
                next += 1;
            }
        });
        Gate {
            dir,
            seen,
            stop,
            handle: Some(handle),
        }
    }

    /// What it saw, once the agent is done.
    fn finish(mut self) -> Vec<Seen> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Asserts that each of the `n` records reached the thread within a second
/// of its write, the agent `working` meanwhile.
#[track_caller]
fn assert_within_a_second(seen: &[Seen], n: usize) {
    assert_eq!(seen.len(), n, "{seen:#?}");
    assert!(
        matches!(seen[0].what[..], [Awaited::Prompt(_)]),
        "the prompt first: {seen:#?}"
    );
    for s in seen {
        assert!(
            s.latency.is_some_and(|l| l < Duration::from_secs(1)),
            "{:?} reached the thread within 1 s of its write: {seen:#?}",
            s.what
        );
        assert_eq!(s.state, "working", "{seen:#?}");
    }
}

/// A task of `agent`: its worktree, id and thread directory.
fn task(sb: &Sandbox, repo: &Path, agent: &str) -> (PathBuf, String, PathBuf) {
    let task = new_task(sb, repo, &["By hand", "--agent", agent]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap().to_string();
    let dir = wt.join(".agent/threads").join(&id);
    (wt, id, dir)
}

/// The counts of the one thread in `dir`.
fn counts_of(dir: &Path) -> Counts {
    let mut c = Counts::default();
    count_thread(dir, &mut c);
    c
}

/// `grove show ID --follow --json` started in `dir`: what it printed, once
/// stopped.
struct Follow(std::process::Child);

impl Follow {
    fn start(sb: &Sandbox, dir: &Path, id: &str) -> Follow {
        let child = sb
            .grove(dir)
            .args(["show", id, "--follow", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Follow(child)
    }

    fn stop(mut self) -> Vec<Value> {
        let _ = self.0.kill();
        let out = self.0.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("role").is_some())
            .collect()
    }
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn gemini_run_by_hand_is_captured_by_grove_s_hooks_each_record_within_a_second() {
    let sb = Arc::new(Sandbox::new());
    let Some(ag) = agents(&sb) else {
        return;
    };
    let repo = sb.repo("app");
    let (wt, id, thread_dir) = task(&sb, &repo, "gemini");
    let before = snapshot(&wt);
    ok(sb.grove(&wt).args(["capture", "install"]));
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "",
        "grove's hooks are kept out of git status"
    );
    let gate = Gate::start(
        sb.clone(),
        Agent::Gemini,
        repo.clone(),
        thread_dir.clone(),
        SHELL_PROMPT,
    );
    let server = ScriptedServer::start_with(
        &fixtures().join("gemini/0.61/scripted.py"),
        &wt,
        Some(&gate.dir),
    );
    let follow = Follow::start(&sb, &wt, &id);
    let mut cmd = Command::new(&ag.gemini);
    agent_env(&sb, &mut cmd, server.port)
        .current_dir(&wt)
        .env("PWD", &wt)
        .stdin(Stdio::null())
        .args(["-m", "gemini-2.5-pro", "--approval-mode", "yolo"])
        .args(["-p", SHELL_PROMPT]);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the user sees the first time: Gemini's warning, naming grove's hook.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("project-level hooks") && stderr.contains("grove-capture"),
        "{stderr}"
    );
    // The prompt, the shell command's result, the two reads' (one failed),
    // the write's.
    assert_within_a_second(&gate.finish(), 4);
    let mut records = std::collections::BTreeMap::new();
    gemini_records(&sb.path().join("gemini-home"), &mut records);
    let (expected, sessions) = gemini_counts(&records);
    assert_eq!(sessions, 1);
    assert_eq!(
        counts_of(&thread_dir),
        expected,
        "every message kind, counted in Gemini's chat and in the thread"
    );
    assert_eq!(expected.calls["failed"], 1, "{expected:?}");
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agentState"]["state"], "exited", "SessionEnd: {row}");
    std::thread::sleep(Duration::from_millis(200));
    let followed = follow.stop();
    let in_thread = message_lines(&thread_dir);
    assert_eq!(
        followed.len(),
        in_thread.len(),
        "show --follow printed each message as it came"
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "?? notes.txt");
    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    std::fs::remove_file(wt.join("notes.txt")).unwrap();
    // The thread grew; the rest of the worktree is what it was.
    let outside = |snap: Vec<(PathBuf, Vec<u8>)>| -> Vec<(PathBuf, Vec<u8>)> {
        snap.into_iter()
            .filter(|(p, _)| !p.starts_with(wt.join(".agent")))
            .collect()
    };
    assert_eq!(outside(snapshot(&wt)), outside(before));
    let out = run(sb
        .grove(&wt)
        .args(["validate", thread_dir.to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn opencode_run_by_hand_is_captured_by_grove_s_plugin_each_record_within_a_second() {
    let sb = Arc::new(Sandbox::new());
    let Some(ag) = agents(&sb) else {
        return;
    };
    let repo = sb.repo("app");
    // The repository's own opencode.json (the model) is tracked: grove names
    // its plugin in an opencode.jsonc of its own beside it.
    let (wt, id, thread_dir) = task(&sb, &repo, "opencode");
    let gate = Gate::start(
        sb.clone(),
        Agent::OpenCode,
        repo.clone(),
        thread_dir.clone(),
        SHELL_PROMPT,
    );
    let server = ScriptedServer::start_with(
        &fixtures().join("opencode/1.18/scripted.py"),
        &wt,
        Some(&gate.dir),
    );
    std::fs::write(wt.join("opencode.json"), opencode_config(server.port)).unwrap();
    sb.git(&wt, &["add", "opencode.json"]);
    sb.git(&wt, &["commit", "-qm", "OpenCode's model"]);
    let before = snapshot(&wt);
    ok(sb.grove(&wt).args(["capture", "install"]));
    assert!(
        wt.join("opencode.jsonc").is_file(),
        "the tracked opencode.json is left alone"
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    let follow = Follow::start(&sb, &wt, &id);
    let mut cmd = Command::new(&ag.opencode);
    agent_env(&sb, &mut cmd, 9)
        .current_dir(&wt)
        // OpenCode takes its project from `PWD`.
        .env("PWD", &wt)
        .stdin(Stdio::null())
        .args(["run", SHELL_PROMPT]);
    let started = Instant::now();
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "OpenCode did not wait for npm: {:?}",
        started.elapsed()
    );
    let seen = gate.finish();
    assert_within_a_second(&seen, 4);
    // Its last events' captures run on after OpenCode exits: they end
    // within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    let session: String = rusqlite::Connection::open(opencode_db(&sb))
        .unwrap()
        .query_row("SELECT id FROM session", [], |r| r.get(0))
        .unwrap();
    let (expected, _) = opencode_counts(&opencode_db(&sb), Some(&[session]));
    while counts_of(&thread_dir) != expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        counts_of(&thread_dir),
        expected,
        "every message kind, counted in OpenCode's database and in the thread"
    );
    assert_eq!(expected.calls["failed"], 1, "{expected:?}");
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agentState"]["state"], "waiting", "session.idle: {row}");
    std::thread::sleep(Duration::from_millis(200));
    let followed = follow.stop();
    assert_eq!(followed.len(), message_lines(&thread_dir).len());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "?? notes.txt");
    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    std::fs::remove_file(wt.join("notes.txt")).unwrap();
    let outside = |snap: Vec<(PathBuf, Vec<u8>)>| -> Vec<(PathBuf, Vec<u8>)> {
        snap.into_iter()
            .filter(|(p, _)| !p.starts_with(wt.join(".agent")))
            .collect()
    };
    // The worktree is what it was: grove's opencode.jsonc gone (with the
    // `$schema` OpenCode added to it), the repository's opencode.json as
    // committed.
    assert_eq!(outside(snapshot(&wt)), outside(before));
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
}

/// grove's own config (trusted) making the built-in `gemini` and
/// `opencode` headless: `gemini --prompt` and `opencode run`, with their
/// own resume options.
fn headless(sb: &Sandbox) {
    let gemini = ["gemini", "-m", "gemini-2.5-pro", "--approval-mode", "yolo"];
    let with = |rest: &[&str]| -> Vec<String> {
        gemini.iter().chain(rest).map(|s| s.to_string()).collect()
    };
    std::fs::create_dir_all(sb.grove_home()).unwrap();
    std::fs::write(
        sb.grove_home().join("config.json"),
        serde_json::json!({"grove": {"agents": {
            "gemini": {
                "command": with(&["--session-id", "{sessionId}", "--prompt", "{prompt}"]),
                "resume": with(&["--resume", "{sessionId}", "--prompt", "{prompt}"]),
                "native": "gemini"
            },
            "opencode": {
                "command": ["opencode", "run", "{prompt}"],
                "resume": ["opencode", "run", "--session", "{sessionId}", "{prompt}"],
                "native": "opencode"
            }
        }}})
        .to_string(),
    )
    .unwrap();
}

/// Answers every model turn at once, keeping what each asked.
struct Recorder {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Recorder {
    fn start(sb: &Sandbox, name: &str) -> Recorder {
        let dir = sb.path().join(format!("record-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (d, st, b) = (dir.clone(), stop.clone(), bodies.clone());
        std::thread::spawn(move || {
            let mut next = 0;
            while !st.load(Ordering::SeqCst) {
                match std::fs::read_to_string(d.join(format!("{next:03}.json"))) {
                    Ok(text) => {
                        b.lock()
                            .unwrap()
                            .push(serde_json::from_str(&text).unwrap_or(Value::Null));
                        std::fs::write(d.join(format!("{next:03}.go")), "").unwrap();
                        next += 1;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Recorder { dir, stop, bodies }
    }

    /// The last model turn's request, as text.
    fn last(&self) -> String {
        self.bodies
            .lock()
            .unwrap()
            .last()
            .map(Value::to_string)
            .unwrap_or_default()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// `grove ARGS` in `dir` with the agents' environment; must succeed.
/// Returns stdout and stderr.
#[track_caller]
fn grove_ok(sb: &Sandbox, dir: &Path, gemini_port: u16, args: &[&str]) -> (String, String) {
    let mut cmd = sb.grove(dir);
    agent_env(sb, &mut cmd, gemini_port).args(args);
    let out = run(&mut cmd);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "grove {args:?}: {stderr}");
    (stdout, stderr)
}

/// The thread's prompts and replies, in order (`user: …`, `agent`): the
/// scripted servers' answers name the prompt (Gemini's, the first part of
/// the model's turn, its session context when that comes with it).
fn turns(thread_dir: &Path) -> Vec<String> {
    let lines = message_lines(thread_dir);
    let mut ids = std::collections::HashSet::new();
    for m in &lines {
        assert!(ids.insert(m["id"].to_string()), "{m} twice");
    }
    lines
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "agent")
        .map(|m| {
            let text: String = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            match m["role"].as_str().unwrap() {
                "user" => format!("user: {}", text.trim_matches('"')),
                _ => {
                    assert!(text.starts_with("Plain answer to: "), "{text}");
                    "agent".to_string()
                }
            }
        })
        .collect()
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn gemini_and_opencode_launched_and_resumed_through_grove_in_their_own_sessions_and_each_other_s() {
    let sb = Arc::new(Sandbox::new());
    if agents(&sb).is_none() {
        return;
    }
    headless(&sb);
    let repo = sb.repo("app");
    let gemini_rec = Recorder::start(&sb, "gemini");
    let opencode_rec = Recorder::start(&sb, "opencode");
    let gemini = ScriptedServer::start_with(
        &fixtures().join("gemini/0.61/scripted.py"),
        &repo,
        Some(&gemini_rec.dir),
    );
    let opencode = ScriptedServer::start_with(
        &fixtures().join("opencode/1.18/scripted.py"),
        &repo,
        Some(&opencode_rec.dir),
    );
    // The project's OpenCode model, committed: every task's worktree has it.
    std::fs::write(repo.join("opencode.json"), opencode_config(opencode.port)).unwrap();
    sb.git(&repo, &["add", "opencode.json"]);
    sb.git(&repo, &["commit", "-qm", "OpenCode's model"]);
    let port = gemini.port;

    // Launched in Gemini, then resumed in its own session.
    let (out, _) = grove_ok(
        &sb,
        &repo,
        port,
        &["new", "G", "--prompt", "Just answer", "--launch=gemini"],
    );
    let wt = PathBuf::from(out.trim_end());
    let id = list_rows(&sb, &repo)
        .into_iter()
        .find(|r| r["worktreePath"] == wt.to_str().unwrap())
        .unwrap()["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = wt.join(".agent/threads").join(&id);
    assert_eq!(turns(&dir), ["user: Just answer", "agent"]);
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agentState"]["state"], "exited", "{row}");
    let sessions_before = gemini_sessions(&sb);
    let (_, err) = grove_ok(
        &sb,
        &repo,
        port,
        &["resume", &id, "--prompt", "And a plain question"],
    );
    assert!(err.contains("goes on in its own gemini session"), "{err}");
    assert_eq!(gemini_sessions(&sb), sessions_before, "no session written");
    assert!(
        gemini_rec.last().contains("Just answer"),
        "Gemini went on with the conversation"
    );

    // Resumed in OpenCode: the thread imported into OpenCode's database.
    let (_, err) = grove_ok(
        &sb,
        &repo,
        port,
        &["resume", &id, "--agent", "opencode", "--prompt", "One more"],
    );
    assert!(err.contains("as opencode session ses_"), "{err}");
    let asked = opencode_rec.last();
    assert!(
        asked.contains("Just answer") && asked.contains("And a plain question"),
        "OpenCode got the conversation: {}",
        &asked[..asked.len().min(2000)]
    );

    // And back in Gemini: a chat of the thread written where Gemini lists it.
    let (_, err) = grove_ok(
        &sb,
        &repo,
        port,
        &["resume", &id, "--agent", "gemini", "--prompt", "Last one"],
    );
    assert!(err.contains("as gemini session"), "{err}");
    // OpenCode's turn as OpenCode ran it (`opencode run` quotes its prompt).
    let asked = gemini_rec.last();
    assert!(
        asked.contains(r#"Plain answer to: \"One more\""#),
        "Gemini got OpenCode's turn: {}",
        &asked[..asked.len().min(2000)]
    );
    assert_eq!(
        turns(&dir),
        [
            "user: Just answer",
            "agent",
            "user: And a plain question",
            "agent",
            "user: One more",
            "agent",
            "user: Last one",
            "agent",
        ],
        "each turn once, in order"
    );
    let out = run(sb.grove(&wt).args(["validate", dir.to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Launched in OpenCode, then resumed in its own session.
    let (out, _) = grove_ok(
        &sb,
        &repo,
        port,
        &["new", "O", "--prompt", "Just answer", "--launch=opencode"],
    );
    let wt = PathBuf::from(out.trim_end());
    let id = list_rows(&sb, &repo)
        .into_iter()
        .find(|r| r["worktreePath"] == wt.to_str().unwrap())
        .unwrap()["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = wt.join(".agent/threads").join(&id);
    let (_, err) = grove_ok(
        &sb,
        &repo,
        port,
        &["resume", &id, "--prompt", "And a plain question"],
    );
    assert!(err.contains("goes on in its own opencode session"), "{err}");
    assert!(opencode_rec.last().contains("Just answer"));
    assert_eq!(
        turns(&dir),
        [
            "user: Just answer",
            "agent",
            "user: And a plain question",
            "agent",
        ]
    );
    assert_eq!(row_of(&sb, &repo, &id)["agentState"]["state"], "exited");
}
