//! The real Gemini CLI and OpenCode (pinned in tests/real-agents,
//! installed by `.ci/real-agents`) run offline against the fixtures' scripted
//! model servers, as users run them — a prompt with a shell call, two
//! parallel reads of which one fails and a file write, a session continued
//! twice, a subagent, a plain answer — and then imported with no path (each
//! agent's own store on this machine). What the agent wrote is counted from
//! its own files, independently of grove's importer, and must be what the
//! threads hold: every prompt, reply, reasoning, tool call (complete, with
//! its status) and token count, nothing invented, `validate` clean.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// `cmd` offline: proxies point nowhere, except for 127.0.0.1.
pub(super) fn offline(cmd: &mut Command) -> &mut Command {
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        cmd.env(var, "http://127.0.0.1:9")
            .env(var.to_lowercase(), "http://127.0.0.1:9");
    }
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
}

/// Runs `cmd`, which must succeed.
pub(super) fn succeeds(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a thread holds, per kind: prompts, replies, reasoning blocks, tool
/// calls by status, and the tokens of its messages summed by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub prompts: usize,
    pub replies: usize,
    pub reasoning: usize,
    pub calls: BTreeMap<String, usize>,
    pub tokens: BTreeMap<String, u64>,
}

/// Counts the messages of every thread of `repo`.
pub(super) fn thread_counts(repo: &Path) -> (Counts, usize) {
    let mut counts = Counts::default();
    let mut threads = 0;
    for dir in std::fs::read_dir(repo.join(".agent/threads")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        threads += 1;
        count_thread(&dir, &mut counts);
    }
    (counts, threads)
}

/// Adds the messages of the thread in `dir` to `counts`.
pub(super) fn count_thread(dir: &Path, counts: &mut Counts) {
    {
        for m in message_lines(dir) {
            match m["role"].as_str().unwrap() {
                "user" => counts.prompts += 1,
                "agent" => counts.replies += 1,
                _ => {}
            }
            counts.reasoning += m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "thinking")
                .count();
            for c in m["toolCalls"].as_array().into_iter().flatten() {
                *counts
                    .calls
                    .entry(c["status"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
            for (k, v) in m["tokens"].as_object().into_iter().flatten() {
                if let Some(n) = v.as_u64() {
                    *counts.tokens.entry(k.clone()).or_default() += n;
                }
            }
        }
    }
}

/// Every message record of the chats under `home`'s `.gemini/tmp` now, by
/// session id (from each file's first line) and message id, the last
/// version kept — added to `records`, which keeps what files since deleted
/// held.
pub(super) fn gemini_records(home: &Path, records: &mut BTreeMap<(String, String), Value>) {
    let mut stack = vec![home.join(".gemini/tmp")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let mut session = String::new();
            for line in text.lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                if session.is_empty() {
                    session = v["sessionId"].as_str().unwrap_or_default().to_string();
                }
                if let (Some(id), Some(_)) = (v["id"].as_str(), v["type"].as_str()) {
                    records.insert((session.clone(), id.to_string()), v);
                }
            }
        }
    }
}

/// Counts of what Gemini's chat `records` hold (by session and message id,
/// each message's last version), read as Gemini reads them: a tool result
/// written again as a user record is the call's, the `<session_context>` is
/// no prompt. Returns the counts and how many sessions hold a message of
/// their own.
pub(super) fn gemini_counts(records: &BTreeMap<(String, String), Value>) -> (Counts, usize) {
    let mut expected = Counts::default();
    let mut sessions = std::collections::BTreeSet::new();
    for ((session, _), r) in records {
        if r["type"] == "user"
            && r["content"]
                .as_array()
                .is_some_and(|p| p.iter().all(|p| p.get("functionResponse").is_some()))
        {
            continue;
        }
        sessions.insert(session.clone());
        match r["type"].as_str().unwrap() {
            "user" if !r.to_string().contains("<session_context>") => expected.prompts += 1,
            "gemini" => expected.replies += 1,
            _ => {}
        }
        expected.reasoning += r["thoughts"].as_array().map_or(0, Vec::len);
        for c in r["toolCalls"].as_array().into_iter().flatten() {
            let status = match c["status"].as_str().unwrap() {
                "success" => "completed",
                _ => "failed",
            };
            *expected.calls.entry(status.into()).or_default() += 1;
        }
        for (k, v) in r["tokens"].as_object().into_iter().flatten() {
            if let Some(n) = v.as_u64() {
                *expected.tokens.entry(k.clone()).or_default() += n;
            }
        }
    }
    (expected, sessions.len())
}

/// Every `.jsonl` under `dir`.
pub(super) fn jsonl_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files
}

/// What OpenCode's database `db` holds, read with SQL: every message and
/// part (of the sessions `only` names, when given). Returns the counts and
/// the number of sessions.
pub(super) fn opencode_counts(db: &Path, only: Option<&[String]>) -> (Counts, usize) {
    let db = rusqlite::Connection::open(db).unwrap();
    let wanted = |session: &str| only.is_none_or(|o| o.iter().any(|s| s == session));
    let mut expected = Counts::default();
    let mut sessions = 0;
    let mut stmt = db.prepare("SELECT id FROM session").unwrap();
    for id in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        if wanted(&id.unwrap()) {
            sessions += 1;
        }
    }
    let mut stmt = db.prepare("SELECT session_id, data FROM message").unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap();
    for row in rows {
        let (session, data) = row.unwrap();
        if !wanted(&session) {
            continue;
        }
        let m: Value = serde_json::from_str(&data).unwrap();
        match m["role"].as_str().unwrap() {
            "user" => expected.prompts += 1,
            _ => expected.replies += 1,
        }
        for (k, v) in m["tokens"].as_object().into_iter().flatten() {
            // grove keeps OpenCode's own token object as it is.
            if let Some(n) = v.as_u64() {
                *expected.tokens.entry(k.clone()).or_default() += n;
            }
        }
    }
    let mut stmt = db.prepare("SELECT session_id, data FROM part").unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap();
    for row in rows {
        let (session, data) = row.unwrap();
        if !wanted(&session) {
            continue;
        }
        let p: Value = serde_json::from_str(&data).unwrap();
        match p["type"].as_str().unwrap() {
            "reasoning" => expected.reasoning += 1,
            "tool" => {
                let status = match p["state"]["status"].as_str().unwrap() {
                    "completed" => "completed",
                    "error" => "failed",
                    other => panic!("a tool still {other} after the run ended"),
                };
                *expected.calls.entry(status.into()).or_default() += 1;
            }
            _ => {}
        }
    }
    (expected, sessions)
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn gemini_cli_as_it_really_writes_imports_whole() {
    let Some(gemini) = real_program("gemini") else {
        return;
    };
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let server = ScriptedServer::start(&fixtures().join("gemini/0.61/scripted.py"), &repo);
    let home = sb.dir("gemini-home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true},
            "telemetry": {"enabled": false}, "privacy": {"usageStatisticsEnabled": false}}"#,
    )
    .unwrap();
    let run_gemini = |args: &[&str]| {
        let mut cmd = Command::new(&gemini);
        offline(&mut cmd)
            .current_dir(&repo)
            .env("PWD", &repo)
            .env("HOME", sb.path().join("home"))
            .env("GEMINI_CLI_HOME", &home)
            .env("GEMINI_API_KEY", "test")
            .env(
                "GOOGLE_GEMINI_BASE_URL",
                format!("http://127.0.0.1:{}", server.port),
            )
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .args(["-m", "gemini-2.5-pro", "--approval-mode", "yolo"])
            .args(args);
        succeeds(&mut cmd);
    };
    // Gemini's own clean-up deletes a resumed session's files at a later
    // start: grove imports after each run (as its capture would), and the
    // records are taken from the files as they are then — each message's
    // last version, by session.
    let mut records: BTreeMap<(String, String), Value> = BTreeMap::new();
    let import = || {
        let out = run(sb
            .grove(&repo)
            .env("GEMINI_CLI_HOME", &home)
            .args(["import", "gemini", "--json"]));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for args in [
        &["-p", "Run a shell command, read two files and write notes"][..],
        &["--resume", "latest", "-p", "And a plain question"],
        &["--resume", "latest", "-p", "One more"],
        &["-p", "Ask a subagent to look around"],
        &["-p", "Just answer"],
    ] {
        run_gemini(args);
        gemini_records(&home, &mut records);
        import();
    }
    let (expected, sessions) = gemini_counts(&records);
    assert!(expected.calls["completed"] >= 4, "{expected:?}");
    assert!(expected.calls["failed"] >= 1, "{expected:?}");

    let (found, threads) = thread_counts(&repo);
    assert_eq!(threads, sessions);
    assert_eq!(
        found, expected,
        "every message kind, counted in Gemini's files and in the threads"
    );
    let out = run(sb
        .grove(&repo)
        .args(["validate", repo.join(".agent/threads").to_str().unwrap()]));
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
fn opencode_as_it_really_writes_imports_whole() {
    let Some(opencode) = real_program("opencode") else {
        return;
    };
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let server = ScriptedServer::start(&fixtures().join("opencode/1.18/scripted.py"), &repo);
    std::fs::write(
        repo.join("opencode.json"),
        serde_json::json!({
            "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", server.port), "apiKey": "test"},
                "models": {"m1": {"name": "M1"}}}},
            "model": "scripted/m1", "autoupdate": false, "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"}
        })
        .to_string(),
    )
    .unwrap();
    let data = sb.path().join("xdg/data");
    let run_opencode = |args: &[&str]| {
        let mut cmd = Command::new(&opencode);
        offline(&mut cmd)
            .current_dir(&repo)
            // OpenCode takes its project from `PWD`, not the process's
            // directory.
            .env("PWD", &repo)
            .env("HOME", sb.path().join("home"))
            .env("XDG_DATA_HOME", &data)
            .env("XDG_CONFIG_HOME", sb.path().join("xdg/config"))
            .env("XDG_CACHE_HOME", sb.path().join("xdg/cache"))
            .env("XDG_STATE_HOME", sb.path().join("xdg/state"))
            .args(["run"])
            .args(args);
        succeeds(&mut cmd);
    };
    run_opencode(&["Run a shell command, read two files and write notes"]);
    run_opencode(&["--continue", "And a plain question"]);
    run_opencode(&["--continue", "One more"]);
    run_opencode(&["Ask a subagent to look around"]);
    run_opencode(&["Just answer"]);

    // OpenCode's own database, read here with SQL.
    let (expected, sessions) = opencode_counts(&data.join("opencode/opencode.db"), None);
    assert!(expected.calls["completed"] >= 4, "{expected:?}");
    assert!(expected.calls["failed"] >= 1, "{expected:?}");

    let out = run(sb
        .grove(&repo)
        .env("XDG_DATA_HOME", &data)
        .args(["import", "opencode", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (found, threads) = thread_counts(&repo);
    assert_eq!(threads, sessions);
    assert_eq!(
        found, expected,
        "every message kind, counted in OpenCode's database and in the threads"
    );
    let out = run(sb
        .grove(&repo)
        .args(["validate", repo.join(".agent/threads").to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
