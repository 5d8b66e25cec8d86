//! Launching agents and capturing their conversation live: `grove new
//! --launch`, `grove launch`, `grove capture`, with the stub `claude` and
//! `codex` of tests/stubs first on PATH.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// The messages of the only thread of `worktree`.
fn thread_of(worktree: &Path, id: &str) -> (Value, Vec<Value>) {
    let dir = worktree.join(".agent/threads").join(id);
    (read_json(&dir.join("thread.json")), message_lines(&dir))
}

fn texts(messages: &[Value], role: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| b["text"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|t| !t.is_empty())
        .collect()
}

fn capture_section(meta: &Value) -> &Value {
    &meta["metadata"]["capture"]
}

#[test]
fn new_launch_starts_claude_in_the_worktree_and_its_turns_land_in_the_thread() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"initialPrompt": "Read AGENTS.md first."}}),
    );
    let out = run(sb
        .grove_with_agents(&repo)
        .args([
            "new",
            "Fix the login bug",
            "--prompt",
            "Fix the login bug",
            "--agent",
            "claude-code",
            "--launch",
        ])
        .env("STUB_PROMPTS", r#"["And add a test"]"#)
        .env("STUB_EXIT", "3"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the agent's exit code: {stderr}"
    );
    let wt = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    assert!(wt.is_dir(), "stdout is the worktree path");

    let runs = sb.stub_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let argv: Vec<&str> = runs[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "--session-id");
    let session = argv[1].to_string();
    assert_eq!(argv[2], "--", "the options end before the prompt");
    assert_eq!(
        argv[3], "Read AGENTS.md first.\n\nFix the login bug",
        "the opening prompt: initialPrompt then --prompt"
    );
    assert_eq!(PathBuf::from(runs[0]["cwd"].as_str().unwrap()), wt);
    let id = runs[0]["env"]["GROVE_THREAD"].as_str().unwrap().to_string();

    let (meta, messages) = thread_of(&wt, &id);
    let users = texts(&messages, "user");
    assert_eq!(
        users,
        vec![
            "Read AGENTS.md first.",
            "Fix the login bug",
            "And add a test"
        ],
        "the opening prompt once (grove's), then the agent's next prompt"
    );
    let agents = texts(&messages, "agent");
    for want in [
        "Working on turn 1: Read AGENTS.md first.\n\nFix the login bug",
        "Done with turn 1.",
        "Working on turn 2: And add a test",
        "Done with turn 2.",
    ] {
        assert_eq!(
            agents.iter().filter(|t| t.as_str() == want).count(),
            1,
            "{want:?} once in {agents:?}"
        );
    }
    let calls: Vec<&Value> = messages
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| c["name"] == "Bash" && c["status"] == "completed")
    );
    assert_eq!(calls[0]["output"], "turn 1");

    let cap = capture_section(&meta);
    assert_eq!(cap["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(cap["sessions"][0]["agent"], "claude-code");
    assert_eq!(cap["state"]["state"], "exited");
    assert_eq!(cap["state"]["exitCode"], 3);
    assert!(cap.get("opening").is_none(), "the opening prompt was met");

    // The hooks did the capturing while the agent ran.
    let log = std::fs::read_to_string(wt.join(".agent/threads").join(&id).join("logs/capture.log"))
        .unwrap();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert!(log.contains(event), "{event} in {log}");
    }
    assert!(!log.contains("problem"), "{log}");
    let settings = read_json(&wt.join(".claude/settings.local.json"));
    let command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(command.contains("capture claude --thread"), "{command}");
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "",
        "the hooks grove added are not changes"
    );
}

/// Runs `grove capture <agent>` as a hook would, with `input` on stdin.
fn hook(sb: &Sandbox, dir: &Path, agent: &str, thread: Option<&str>, input: Value) -> String {
    let mut cmd = sb.grove(dir);
    cmd.args(["capture", agent]);
    if let Some(t) = thread {
        cmd.args(["--thread", t]);
    }
    let out = run_with_stdin(&mut cmd, input.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "a hook always succeeds");
    assert!(
        out.stdout.is_empty(),
        "a hook prints nothing: {:?}",
        out.stdout
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn capture_install_captures_an_agent_started_by_hand_and_parallel_hooks_add_each_message_once() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    // The user's own settings and hook, which must survive and still run.
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    std::fs::write(
        wt.join(".claude/settings.local.json"),
        serde_json::json!({
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "touch user-hook-ran"}]}]}
        })
        .to_string(),
    )
    .unwrap();
    let installed = json(&ok(sb.grove(&wt).args(["capture", "install", "--json"])));
    assert_eq!(installed["threadId"], id);
    let settings = read_json(&wt.join(".claude/settings.local.json"));
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls:*)");
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        "touch user-hook-ran"
    );
    // Installing twice changes nothing.
    let before = std::fs::read(wt.join(".claude/settings.local.json")).unwrap();
    ok(sb.grove(&wt).args(["capture", "install", id]));
    assert_eq!(
        std::fs::read(wt.join(".claude/settings.local.json")).unwrap(),
        before
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");

    let run = run(sb
        .agent("claude", &wt)
        .arg("Do it")
        .env("STUB_PROMPTS", r#"["Then this", "And that"]"#)
        .env("STUB_HOOK_COPIES", "4"));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(wt.join("user-hook-ran").exists(), "the user's hook ran too");

    let (meta, messages) = thread_of(&wt, id);
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no message twice: {ids:?}");
    assert_eq!(
        texts(&messages, "user"),
        vec!["Do it", "Then this", "And that"]
    );
    let agents = texts(&messages, "agent");
    for n in 1..=3 {
        assert!(
            agents.contains(&format!("Done with turn {n}.")),
            "{agents:?}"
        );
    }
    // Per turn: the prompt, the reply's text and its tool call (one record
    // each in the transcript), the closing reply.
    assert_eq!(messages.len(), 12, "three turns of four messages");
    assert_eq!(meta["stats"]["messageCount"], 12);
    assert_eq!(meta["metadata"]["capture"]["state"]["state"], "exited");
    assert_eq!(meta["metadata"]["capture"]["state"]["event"], "SessionEnd");

    // Uninstalled, grove's hooks go and the user's stay.
    ok(sb.grove(&wt).args(["capture", "uninstall", id]));
    let settings = read_json(&wt.join(".claude/settings.local.json"));
    assert_eq!(settings["hooks"]["Stop"].as_array().unwrap().len(), 1);
    assert!(settings["hooks"].get("PreToolUse").is_none(), "{settings}");
}

#[test]
fn codex_untrusted_is_captured_when_it_exits_and_trusted_as_it_goes() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    // Untrusted: Codex runs no project hook; grove brings the rollout in
    // when the agent it launched exits.
    let out = run(sb.grove_with_agents(&repo).args([
        "new",
        "Round half up",
        "--prompt",
        "Fix rounding",
        "--launch=codex",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wt = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    let runs = sb.stub_runs();
    assert_eq!(runs[0]["argv"], serde_json::json!(["--", "Fix rounding"]));
    let id = runs[0]["env"]["GROVE_THREAD"].as_str().unwrap().to_string();
    let (meta, messages) = thread_of(&wt, &id);
    assert_eq!(
        meta["agent"]["id"], "codex",
        "--launch=codex is the thread's agent"
    );
    assert_eq!(
        texts(&messages, "user"),
        vec!["Fix rounding"],
        "the opening prompt once"
    );
    assert!(texts(&messages, "agent").contains(&"Done with turn 1.".to_string()));
    assert!(
        !wt.join(format!(".agent/threads/{id}/logs/capture.log"))
            .exists(),
        "no hook ran"
    );
    let sessions = meta["metadata"]["capture"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert!(
        sessions[0]["transcript"]
            .as_str()
            .unwrap()
            .contains("rollout-")
    );
    // Codex reads hooks from the main worktree only, and looks for them
    // from a linked worktree that has a .codex/ of its own.
    assert!(repo.join(".codex/hooks.json").is_file());
    assert!(wt.join(".codex").is_dir());
    assert!(!wt.join(".codex/hooks.json").exists());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");

    // Trusted (the repository in Codex's config, grove's hooks by
    // --trust-agent), by hand: the hooks capture each turn.
    std::fs::create_dir_all(sb.path().join("codex")).unwrap();
    std::fs::write(
        sb.path().join("codex/config.toml"),
        format!(
            "model = \"gpt-5.5\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            repo.display()
        ),
    )
    .unwrap();
    ok(sb.grove(&wt).args(["capture", "install", "--trust-agent"]));
    let by_hand = run(sb
        .agent("codex", &wt)
        .arg("Now the docs")
        .env("STUB_HOOK_COPIES", "3"));
    assert!(by_hand.status.success());
    let (meta, messages) = thread_of(&wt, &id);
    assert_eq!(
        texts(&messages, "user"),
        vec!["Fix rounding", "Now the docs"]
    );
    assert_eq!(
        meta["metadata"]["capture"]["sessions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        meta["metadata"]["capture"]["state"]["state"], "exited",
        "SessionEnd: exited"
    );
    let log =
        std::fs::read_to_string(wt.join(format!(".agent/threads/{id}/logs/capture.log"))).unwrap();
    assert!(
        log.contains("UserPromptSubmit") && log.contains("Stop") && log.contains("state=waiting"),
        "{log}"
    );
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no message twice");
}

#[test]
fn agent_state_in_list_with_its_filter_and_notify_when_waiting() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let a = new_task(&sb, &repo, &["First", "--agent", "claude-code"]);
    let b = new_task(&sb, &repo, &["Second", "--agent", "claude-code"]);
    let wt = PathBuf::from(a["worktreePath"].as_str().unwrap());
    let id = a["threadId"].as_str().unwrap();
    let notified = sb.path().join("notified");
    std::fs::create_dir_all(sb.grove_home()).unwrap();
    std::fs::write(
        sb.grove_home().join("config.json"),
        serde_json::json!({"grove": {"notify": format!(
            "printf '%s %s' \"$GROVE_THREAD_ID\" \"$GROVE_AGENT_STATE\" > '{}'",
            notified.display()
        )}})
        .to_string(),
    )
    .unwrap();
    let transcript = sb.path().join("s1.jsonl");
    std::fs::copy(
        fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl"),
        &transcript,
    )
    .unwrap();
    let input = |event: &str| {
        serde_json::json!({
            "session_id": "cb88ae13-898d-4076-aeb5-bc37191c5d2e",
            "transcript_path": transcript,
            "cwd": wt,
            "hook_event_name": event,
        })
    };
    hook(&sb, &wt, "claude", Some(id), input("UserPromptSubmit"));
    let list = json(&ok(sb.grove(&repo).args(["list", "--json"])));
    let row = |list: &Value, id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["threadId"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(row(&list, id)["agentState"]["state"], "working");
    assert!(row(&list, b["threadId"].as_str().unwrap())["agentState"].is_null());
    assert!(!notified.exists());
    hook(&sb, &wt, "claude", Some(id), input("Stop"));
    let waiting = json(&ok(sb
        .grove(&repo)
        .args(["list", "--json", "--state", "waiting"])));
    assert_eq!(waiting.as_array().unwrap().len(), 1, "{waiting}");
    assert_eq!(waiting[0]["threadId"], id);
    let human = ok(sb.grove(&repo).args(["list", "--state", "waiting"]));
    assert!(human.contains("waiting"), "{human}");
    for _ in 0..200 {
        if std::fs::read_to_string(&notified).is_ok_and(|t| !t.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert_eq!(
        std::fs::read_to_string(&notified).unwrap(),
        format!("{id} waiting")
    );
    // The transcript's messages are in the task's thread.
    let (_, messages) = thread_of(&wt, id);
    assert!(messages.len() > 5, "{}", messages.len());
    fails_with(sb.grove(&repo).args(["list", "--state", "sleeping"]), 2);
}

#[test]
fn a_missing_agent_is_a_clear_error_and_the_task_stays() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let mut cmd = sb.grove(&repo);
    cmd.args(["new", "Task", "--launch=codex"])
        .env("PATH", "/usr/bin:/bin");
    let err = fails_with(&mut cmd, 1);
    assert!(err.contains("\"codex\" was not found on PATH"), "{err}");
    assert!(err.contains("npm install -g @openai/codex"), "{err}");
    let list = json(&ok(sb.grove(&repo).args(["list", "--json"])));
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "the worktree and thread stay"
    );
    let id = list[0]["threadId"].as_str().unwrap();
    assert!(err.contains(&format!("grove launch {id}")), "{err}");
}

#[test]
fn a_configured_agent_runs_once_trusted_with_its_placeholders_filled() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("my-agent");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" > '{}'\npwd >> '{}'\nexit 7\n",
            sb.path().join("argv").display(),
            sb.path().join("argv").display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "grove": {"agents": {"mine": {
            "command": ["my-agent", "--task", "{prompt}"],
            "resume": ["my-agent", "--resume", "{sessionId}"]
        }}}}),
    );
    // Not trusted, no terminal to ask on: refused, the task kept.
    let err = fails_with(
        sb.grove_with_agents(&repo)
            .args(["new", "T", "--prompt", "go", "--launch=mine"]),
        1,
    );
    assert!(err.contains("not trusted"), "{err}");
    assert!(!sb.path().join("argv").exists());
    let out = run(sb.grove_with_agents(&repo).args([
        "new",
        "T2",
        "--prompt",
        "go far",
        "--launch=mine",
        "--trust",
    ]));
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wt = String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string();
    let argv = std::fs::read_to_string(sb.path().join("argv")).unwrap();
    assert_eq!(argv, format!("--task|go far|{wt}\n"));
    // Trusted now: `grove launch` runs it without asking.
    let id = json(&ok(sb.grove(&repo).args(["list", "--json"])))
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == "T")
        .unwrap()["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let out = run(sb
        .grove_with_agents(&repo)
        .args(["launch", &id, "--prompt", "again"]));
    assert_eq!(out.status.code(), Some(7));
    assert!(
        std::fs::read_to_string(sb.path().join("argv"))
            .unwrap()
            .starts_with("--task|again|")
    );
}

#[test]
fn a_hook_call_never_fails_the_agent() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    for input in [&b"not json"[..], b"{\"session_id\": \"../../etc\"}", b""] {
        let out = run_with_stdin(sb.grove(&repo).args(["capture", "claude"]), input);
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty());
    }
    // No thread to capture into: logged, not fatal.
    hook(
        &sb,
        &repo,
        "codex",
        None,
        serde_json::json!({"session_id": "s", "cwd": repo, "hook_event_name": "Stop"}),
    );
    let log = std::fs::read_to_string(sb.grove_home().join("logs/capture.log")).unwrap();
    assert!(log.contains("not the JSON object"), "{log}");
    assert!(log.contains("not a session id"), "{log}");
    assert!(log.contains("no thread"), "{log}");
}

#[test]
fn a_codex_hook_goes_by_the_worktree_s_claim_never_by_its_environment_or_thread_flag() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task", "--agent", "codex"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    let rollout = sb.path().join("rollout.jsonl");
    std::fs::copy(
        fixtures().join(
            "codex/real/2025/12/28/rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl",
        ),
        &rollout,
    )
    .unwrap();
    let input = serde_json::json!({
        "session_id": "019b64e5-57fa-7463-b644-fba7e456f905",
        "transcript_path": rollout,
        "cwd": wt,
        "hook_event_name": "Stop",
    });
    // The task's own id in the environment and on the command line: an
    // app-server daemon's GROVE_THREAD can name any task, so neither counts.
    let mut cmd = sb.grove(&wt);
    cmd.args(["capture", "codex", "--thread", id])
        .env("GROVE_THREAD", id);
    assert!(
        run_with_stdin(&mut cmd, input.to_string().as_bytes())
            .status
            .success()
    );
    assert!(message_lines(&wt.join(".agent/threads").join(id)).is_empty());
    let log = std::fs::read_to_string(sb.grove_home().join("logs/capture.log")).unwrap();
    assert!(log.contains("no task's worktree"), "{log}");

    // Claimed (by `grove capture install`), the worktree's sessions are the
    // task's.
    ok(sb.grove(&wt).args(["capture", "install"]));
    hook(&sb, &wt, "codex", None, input);
    assert!(!message_lines(&wt.join(".agent/threads").join(id)).is_empty());
}

/// The timestamp of the last record of `transcript` holding `text`.
fn last_written(transcript: &Path, text: &str) -> Option<jiff::Timestamp> {
    std::fs::read_to_string(transcript)
        .ok()?
        .lines()
        .rev()
        .filter(|l| l.contains(text))
        .find_map(|l| serde_json::from_str::<Value>(l).ok())?["timestamp"]
        .as_str()?
        .parse()
        .ok()
}

#[test]
fn after_a_resume_the_final_reply_written_after_stop_reaches_the_thread_within_a_second() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    ok(sb.grove(&wt).args(["capture", "install"]));
    let session = "5f0c2a57-3a3e-4c1c-9d59-0b6f1d2e7a11";
    let first = run(sb
        .agent("claude", &wt)
        .args(["--session-id", session, "First, and fail"]));
    assert!(first.status.success());
    // The failing tool's PostToolUseFailure hook ran, and its result is in.
    let log =
        std::fs::read_to_string(wt.join(format!(".agent/threads/{id}/logs/capture.log"))).unwrap();
    assert!(log.contains("PostToolUseFailure"), "{log}");
    let (_, messages) = thread_of(&wt, id);
    assert!(
        messages
            .iter()
            .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
            .any(|c| c["status"] == "failed"),
        "{messages:?}"
    );

    // Resumed, Claude Code may run Stop before it writes the final reply;
    // the session then stays open: no later hook brings the reply in.
    let mut resumed = sb.agent("claude", &wt);
    resumed
        .args(["--resume", session, "Second"])
        .env("STUB_LINGER", "5");
    let mut child = resumed.spawn().unwrap();
    let transcript = sb
        .path()
        .join("claude/projects")
        .join(
            wt.to_string_lossy()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
        )
        .join(format!("{session}.jsonl"));
    let start = std::time::Instant::now();
    let replies = |messages: &[Value]| {
        texts(messages, "agent")
            .iter()
            .filter(|t| *t == "Done with turn 1.")
            .count()
    };
    let mut held = None;
    while start.elapsed() < std::time::Duration::from_secs(5) {
        if replies(&thread_of(&wt, id).1) == 2 {
            held = Some(jiff::Timestamp::now());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the session is still open: no SessionEnd brought it"
    );
    let held = held.expect("the resumed turn's final reply reached the thread");
    let written = last_written(&transcript, "Done with turn 1.").unwrap();
    let latency = held.duration_since(written);
    assert!(
        latency < jiff::SignedDuration::from_secs(1),
        "{latency:?} from its write"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn list_brings_in_what_a_captured_session_wrote_after_its_last_hook() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    // Threads with no session at all beside it: list looks at none of them.
    for n in 0..3 {
        new_thread(&sb, &repo, &format!("Other {n}"));
    }
    let task = new_task(&sb, &repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    let transcript = sb.path().join("s1.jsonl");
    let fixture = fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl");
    std::fs::copy(&fixture, &transcript).unwrap();
    // The session's end: no follow-up watches the transcript after it.
    hook(
        &sb,
        &wt,
        "claude",
        Some(id),
        serde_json::json!({
            "session_id": "cb88ae13-898d-4076-aeb5-bc37191c5d2e",
            "transcript_path": transcript,
            "cwd": wt,
            "hook_event_name": "SessionEnd",
        }),
    );
    let count = |list: &Value| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["threadId"] == id)
            .unwrap()["stats"]["messageCount"]
            .as_u64()
            .unwrap()
    };
    let before = count(&json(&ok(sb.grove(&repo).args(["list", "--json"]))));
    assert!(before > 0);
    // Claude Code writes one more prompt with no hook run.
    let text = std::fs::read_to_string(&fixture).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut prompt: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["type"] == "user")
        .unwrap();
    prompt["uuid"] = "0b0e7c35-6a2f-4c57-9a57-0d4c9b0e1f11".into();
    prompt["parentUuid"] = last["uuid"].clone();
    prompt["message"]["content"] = "One more thing, after the hooks".into();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    std::io::Write::write_all(&mut file, format!("{prompt}\n").as_bytes()).unwrap();
    let after = count(&json(&ok(sb.grove(&repo).args(["list", "--json"]))));
    assert_eq!(after, before + 1, "the prompt written after the last hook");
}

/// A handoff thread's agent opens with the summary and the prompts the
/// thread carries after it, in that order.
#[test]
fn launching_a_handoff_opens_with_its_summary_and_the_prompts_it_carries() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let task = new_task(
        &sb,
        &repo,
        &[
            "Big refactor",
            "--prompt",
            "refactor",
            "--agent",
            "claude-code",
        ],
    );
    let parent = task["threadId"].as_str().unwrap();
    let summary = "Step 1 is committed. Next: step 2.";
    let handoff = json(&ok(sb.grove(&repo).args([
        "handoff",
        parent,
        "--summary",
        summary,
        "--json",
    ])));
    let child = handoff["threadId"].as_str().unwrap();
    ok(sb.grove(&repo).args([
        "append",
        child,
        "--role",
        "user",
        "--text",
        "Start with the parser.",
    ]));
    let out = run(sb.grove_with_agents(&repo).args(["launch", child]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = sb.stub_runs();
    let argv: Vec<&str> = runs[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv.last().copied(),
        Some(format!("{summary}\n\nStart with the parser.").as_str()),
        "{argv:?}"
    );
    // The agent's copy of its opening is not added to the thread again.
    let wt = PathBuf::from(handoff["worktreePath"].as_str().unwrap());
    let (_, messages) = thread_of(&wt, child);
    assert_eq!(texts(&messages, "user"), vec!["Start with the parser."]);
    assert_eq!(texts(&messages, "system"), vec![summary]);
}

/// A handoff no agent has run has nothing to continue: `resume` opens a
/// session with its summary, the prompts it carries and `--prompt` last.
#[test]
fn resuming_a_handoff_opens_with_its_summary_and_the_prompts_it_carries() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let task = new_task(
        &sb,
        &repo,
        &[
            "Big refactor",
            "--prompt",
            "refactor",
            "--agent",
            "claude-code",
        ],
    );
    let parent = task["threadId"].as_str().unwrap();
    let summary = "Step 1 is committed. Next: step 2.";
    let handoff = json(&ok(sb.grove(&repo).args([
        "handoff",
        parent,
        "--summary",
        summary,
        "--json",
    ])));
    let child = handoff["threadId"].as_str().unwrap();
    ok(sb.grove(&repo).args([
        "append",
        child,
        "--role",
        "user",
        "--text",
        "Start with the parser.",
    ]));
    let out =
        run(sb
            .grove_with_agents(&repo)
            .args(["resume", child, "--prompt", "Then the lexer."]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = sb.stub_runs();
    let argv: Vec<&str> = runs[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv.last().copied(),
        Some(format!("{summary}\n\nStart with the parser.\n\nThen the lexer.").as_str()),
        "{argv:?}"
    );
    let wt = PathBuf::from(handoff["worktreePath"].as_str().unwrap());
    let (_, messages) = thread_of(&wt, child);
    assert_eq!(
        texts(&messages, "user"),
        vec!["Start with the parser.", "Then the lexer."],
        "each prompt once"
    );
}
