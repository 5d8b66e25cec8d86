//! Native sessions: a thread written back as a Claude Code session or a
//! Codex rollout (`grove export --format claude|codex`, `grove resume`)
//! imports as the same conversation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

/// Every file of a fixture directory, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Imports `file` as `format` into `repo`; returns the main thread's
/// directory (the thread whose id names the session).
fn import(sb: &Sandbox, repo: &Path, format: &str, file: &Path) -> PathBuf {
    let out = run(sb.grove(repo).args(["import", format, "--json"]).arg(file));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = json(&stdout);
    let threads = report["threads"].as_array().unwrap();
    let main = threads
        .iter()
        .find(|t| {
            let id = t["threadId"].as_str().unwrap();
            !id.contains("agent-") && !id.contains('~')
        })
        .or(threads.first())
        .unwrap_or_else(|| panic!("{} imported no thread: {stdout}", file.display()));
    PathBuf::from(main["threadDir"].as_str().unwrap())
}

/// A message as a conversation has it: what the round trip must keep.
fn normalized(thread_dir: &Path) -> Vec<Value> {
    let lines = message_lines(thread_dir);
    // Results read after their call are folded into it.
    let mut later: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut messages = Vec::new();
    for m in lines {
        match m.get("completesMessage").and_then(Value::as_str) {
            Some(of) => later
                .entry(of.to_string())
                .or_default()
                .extend(m["toolCalls"].as_array().cloned().unwrap_or_default()),
            None => messages.push(m),
        }
    }
    let assets = thread_dir.join("assets");
    messages
        .into_iter()
        .map(|m| {
            let id = m["id"].as_str().unwrap().to_string();
            let done = later.remove(&id).unwrap_or_default();
            let content: Vec<Value> = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| match b["type"].as_str() {
                    Some("text") => Some(json!({"text": b["text"]})),
                    Some("thinking") => Some(json!({"thinking": b["text"], "signed": b.get("signature").is_some()})),
                    Some("image") => Some(json!({
                        "image": b["mimeType"],
                        "bytes": b["assetRef"].as_str().map(|a| std::fs::read(assets.join(a)).unwrap().len()),
                    })),
                    _ => None,
                })
                .collect();
            let calls: Vec<Value> = m["toolCalls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let c = done
                        .iter()
                        .rev()
                        .find(|d| d["toolCallId"] == c["toolCallId"])
                        .map(|d| {
                            let mut c = c.clone();
                            c["status"] = d["status"].clone();
                            if !d["output"].is_null() {
                                c["output"] = d["output"].clone();
                            }
                            c
                        })
                        .unwrap_or_else(|| c.clone());
                    let input = c["input"]
                        .as_str()
                        .map(|s| serde_json::from_str::<Value>(s).unwrap_or(Value::from(s)))
                        .unwrap_or(Value::Null);
                    json!({
                        "id": c["toolCallId"],
                        "name": c["name"],
                        "input": input,
                        "output": c["output"],
                        // Images in results: their assets are named by content.
                        "outputContent": c["outputContent"],
                        "status": c["status"],
                    })
                })
                .collect();
            json!({
                "id": id,
                "role": m["role"],
                "content": content,
                "toolCalls": calls,
                "tokens": [m["tokens"]["input"], m["tokens"]["output"]],
            })
        })
        .collect()
}

/// Import → export native → import gives the same messages, for every
/// fixture of `format`.
fn round_trip(format: &str, dir: &str, written: &[(&str, String)], kinds: &[&str]) {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let again = sb.repo("again");
    let mut files = files(&fixtures().join(dir));
    assert!(files.len() >= 4, "{files:?}");
    for (name, text) in written {
        let path = sb.dir("written").join(name);
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    let mut checked = 0;
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for file in files {
        let first = import(&sb, &repo, format, &file);
        let id = first.file_name().unwrap().to_string_lossy().into_owned();
        let session = sb.path().join(format!("{id}.jsonl"));
        let report = json(&ok(sb
            .grove(&repo)
            .args(["export", &id, "--format", format, "--json", "-o"])
            .arg(&session)));
        assert!(report["messages"].as_u64().unwrap() > 0, "{report}");
        let second = import(&sb, &again, format, &session);
        let (a, b) = (normalized(&first), normalized(&second));
        for m in &a {
            let text = m.to_string();
            for kind in ["\"thinking\"", "\"image\"", "\"completed\"", "\"failed\""] {
                if text.contains(kind) {
                    *seen.entry(kind).or_insert(0) += 1;
                }
            }
            if m["tokens"][1].is_u64() {
                *seen.entry("tokens").or_insert(0) += 1;
            }
        }
        assert!(!a.is_empty(), "{} gave no messages", file.display());
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{}: message {i} differs", file.display());
        }
        assert_eq!(a.len(), b.len(), "{}: message count", file.display());
        checked += 1;
    }
    assert!(checked >= 4);
    eprintln!("{format}: {seen:?}");
    for kind in kinds {
        assert!(seen.contains_key(kind), "no fixture has {kind}: {seen:?}");
    }
}

#[test]
fn every_claude_fixture_survives_export_as_a_claude_session_and_import_again() {
    round_trip(
        "claude",
        "claude",
        &[(
            "9d1e7a52-6b0c-4f3e-8a21-c4d5e6f7a8b9.jsonl",
            claude_images(),
        )],
        &[
            "\"thinking\"",
            "\"image\"",
            "\"completed\"",
            "\"failed\"",
            "tokens",
        ],
    );
}

#[test]
fn every_codex_fixture_survives_export_as_a_codex_rollout_and_import_again() {
    round_trip(
        "codex",
        "codex",
        &[],
        &[
            "\"thinking\"",
            "\"image\"",
            "\"completed\"",
            "\"failed\"",
            "tokens",
        ],
    );
}

/// A Claude Code session with images (none of the recorded fixtures has
/// one): a pasted screenshot in the prompt and a `Read` of a PNG, whose
/// result is the image. Record shapes as Claude Code 2.1 writes them.
fn claude_images() -> String {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let session = "9d1e7a52-6b0c-4f3e-8a21-c4d5e6f7a8b9";
    let common = |uuid: &str, parent: Value, time: &str| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/u/app", "sessionId": session, "version": "2.1.3",
            "gitBranch": "main", "uuid": uuid, "timestamp": time})
    };
    let with = |mut base: Value, extra: Value| {
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    };
    let records = [
        with(
            common(
                "0b7e8f10-1111-4a2b-9c3d-000000000001",
                Value::Null,
                "2026-01-05T10:00:00.000Z",
            ),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": "What is wrong in this screenshot?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]}}),
        ),
        with(
            common(
                "0b7e8f10-1111-4a2b-9c3d-000000000002",
                json!("0b7e8f10-1111-4a2b-9c3d-000000000001"),
                "2026-01-05T10:00:03.000Z",
            ),
            json!({"type": "assistant", "requestId": "req_011CWq1", "message": {
                "model": "claude-sonnet-4-5-20250929", "id": "msg_01Hb", "type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_01Rd", "name": "Read", "input": {"file_path": "/home/u/app/shot.png"}}],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 1520, "output_tokens": 64}}}),
        ),
        with(
            common(
                "0b7e8f10-1111-4a2b-9c3d-000000000003",
                json!("0b7e8f10-1111-4a2b-9c3d-000000000002"),
                "2026-01-05T10:00:04.000Z",
            ),
            json!({"type": "user", "sourceToolAssistantUUID": "0b7e8f10-1111-4a2b-9c3d-000000000002",
                "message": {"role": "user", "content": [{"tool_use_id": "toolu_01Rd", "type": "tool_result",
                    "content": [{"type": "image", "source": {"type": "base64", "data": png, "media_type": "image/png"}}]}]},
                "toolUseResult": {"type": "image", "file": {"base64": png, "type": "image/png", "originalSize": 70}}}),
        ),
        with(
            common(
                "0b7e8f10-1111-4a2b-9c3d-000000000004",
                json!("0b7e8f10-1111-4a2b-9c3d-000000000003"),
                "2026-01-05T10:00:09.000Z",
            ),
            json!({"type": "assistant", "requestId": "req_011CWq2", "message": {
                "model": "claude-sonnet-4-5-20250929", "id": "msg_01Hc", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "The button overlaps the header."}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 1650, "output_tokens": 12}}}),
        ),
    ];
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// The thread `id` of `worktree`: its metadata and messages.
fn thread_in(worktree: &Path, id: &str) -> (Value, Vec<Value>) {
    let dir = worktree.join(".agent/threads").join(id);
    (read_json(&dir.join("thread.json")), message_lines(&dir))
}

fn text_of(m: &Value) -> String {
    m["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Ids are unique, and no prompt or reply naming its prompt appears twice
/// (the stubs' replies say "Working on turn N: <prompt>").
fn assert_no_duplicates(messages: &[Value]) {
    let mut ids = std::collections::HashSet::new();
    let mut texts = std::collections::HashSet::new();
    for m in messages {
        assert!(ids.insert(m["id"].clone()), "id twice: {}", m["id"]);
        let t = text_of(m);
        if m["role"] == "user" || t.starts_with("Working on") {
            assert!(
                texts.insert((m["role"].clone(), t.clone())),
                "message twice: {t:?} in {messages:#?}"
            );
        }
    }
}

/// Starts a task whose agent ran one turn; returns (worktree, thread id,
/// the agent's session id).
fn task_with_a_session(sb: &Sandbox, repo: &Path, agent: &str) -> (PathBuf, String) {
    let out = ok(sb.grove_with_agents(repo).args([
        "new",
        "Fix the login bug",
        "--prompt",
        "Fix the login bug",
        "--agent",
        agent,
        "--launch",
    ]));
    let wt = PathBuf::from(out.trim_end());
    let id = sb.stub_runs().last().unwrap()["env"]["GROVE_THREAD"]
        .as_str()
        .unwrap()
        .to_string();
    (wt, id)
}

fn argv_of(run: &Value) -> Vec<String> {
    run["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn resume_continues_a_claude_thread_in_a_session_written_for_it_and_adds_only_the_new_turns() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let (wt, id) = task_with_a_session(&sb, &repo, "claude-code");
    let (_, before) = thread_in(&wt, &id);
    assert_eq!(before.len(), 4, "{before:#?}");

    let out = run(sb
        .grove_with_agents(&repo)
        .args(["resume", &id, "--prompt", "Now add docs"])
        .env("STUB_EXIT", "7"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(7),
        "the agent's exit code: {stderr}"
    );
    let runs = sb.stub_runs();
    assert_eq!(runs.len(), 2);
    let argv = argv_of(&runs[1]);
    assert_eq!(argv[0], "--resume", "{argv:?}");
    assert_eq!(argv[2..], ["--", "Now add docs"], "{argv:?}");
    assert_eq!(PathBuf::from(runs[1]["cwd"].as_str().unwrap()), wt);
    let session = argv[1].clone();

    // The session grove wrote is where Claude Code looks, chained.
    let (meta, after) = thread_in(&wt, &id);
    let sessions = meta["metadata"]["capture"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(sessions[1]["sessionId"], session.as_str());
    assert_eq!(sessions[1]["exported"], true);
    let file = PathBuf::from(sessions[1]["transcript"].as_str().unwrap());
    assert!(
        file.starts_with(sb.path().join("claude/projects")),
        "{file:?}"
    );
    assert_eq!(
        file.file_name().unwrap().to_string_lossy(),
        format!("{session}.jsonl")
    );
    let records: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let chain: Vec<&Value> = records.iter().filter(|r| r.get("uuid").is_some()).collect();
    assert!(chain[0]["parentUuid"].is_null());
    for pair in chain.windows(2) {
        assert_eq!(
            pair[1]["parentUuid"], pair[0]["uuid"],
            "one chain: {pair:?}"
        );
    }
    assert!(chain.iter().all(|r| r["sessionId"] == session.as_str()));
    let tool_uses = records
        .iter()
        .filter(|r| r.to_string().contains("\"type\":\"tool_use\""))
        .count();
    let tool_results = records
        .iter()
        .filter(|r| r.to_string().contains("\"type\":\"tool_result\""))
        .count();
    assert!(tool_uses >= 2 && tool_uses == tool_results, "{records:#?}");

    // The thread goes on: what it had, then the resumed session's turn, once.
    assert_eq!(&after[..before.len()], &before[..]);
    assert_no_duplicates(&after);
    let new: Vec<String> = after[before.len()..].iter().map(text_of).collect();
    assert_eq!(
        new.first().map(String::as_str),
        Some("Now add docs"),
        "{new:?}"
    );
    assert!(new.iter().any(|t| t == "Done with turn 1."), "{new:?}");
    assert_eq!(meta["metadata"]["capture"]["state"]["exitCode"], 7);

    // Capturing again (a late hook, `list`) adds nothing.
    ok(sb.grove(&wt).args(["capture", "sync", &id]));
    list_rows(&sb, &repo);
    let (_, again) = thread_in(&wt, &id);
    assert_eq!(again.len(), after.len());
}

#[test]
fn a_codex_thread_resumes_in_claude_code_and_back_in_codex() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let (wt, id) = task_with_a_session(&sb, &repo, "codex");
    let (_, before) = thread_in(&wt, &id);
    assert!(before.len() >= 3, "{before:#?}");

    ok(sb.grove_with_agents(&repo).args([
        "resume",
        &id,
        "--agent",
        "claude-code",
        "--prompt",
        "Continue in Claude",
    ]));
    let claude = sb.stub_runs().last().unwrap().clone();
    assert_eq!(claude["agent"], "claude");
    assert_eq!(argv_of(&claude)[0], "--resume");
    let (_, mid) = thread_in(&wt, &id);
    assert_eq!(&mid[..before.len()], &before[..]);
    assert_no_duplicates(&mid);
    assert_eq!(text_of(&mid[before.len()]), "Continue in Claude");

    ok(sb.grove_with_agents(&repo).args([
        "resume",
        &id,
        "--agent",
        "codex",
        "--prompt",
        "Back to Codex",
    ]));
    let codex = sb.stub_runs().last().unwrap().clone();
    assert_eq!(codex["agent"], "codex");
    let argv = argv_of(&codex);
    assert_eq!(argv[..1], ["resume".to_string()]);
    assert!(
        uuid_version(&argv[1]) == Some(7),
        "a Codex session id is a UUIDv7: {argv:?}"
    );
    let (meta, after) = thread_in(&wt, &id);
    assert_eq!(&after[..mid.len()], &mid[..]);
    assert_no_duplicates(&after);
    assert_eq!(text_of(&after[mid.len()]), "Back to Codex");
    let rollout = meta["metadata"]["capture"]["sessions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["transcript"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        rollout.contains("/codex/sessions/") && rollout.ends_with(&format!("-{}.jsonl", argv[1])),
        "{rollout}"
    );
}

fn uuid_version(id: &str) -> Option<u32> {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    (hex.len() == 32).then(|| hex[12..13].parse::<u32>().ok())?
}

#[test]
fn resume_makes_a_removed_worktree_again_from_its_branch_or_its_commit() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "touch set-up"}]}}),
    );
    std::fs::write(repo.join(".gitignore"), "set-up\n").unwrap();
    sb.git(&repo, &["add", ".gitignore"]);
    sb.git(&repo, &["commit", "-qm", "ignore the setup's mark"]);
    let task = new_task(
        &sb,
        &repo,
        &[
            "Task",
            "--agent",
            "claude-code",
            "--prompt",
            "Fix it",
            "--trust",
        ],
    );
    let id = task["threadId"].as_str().unwrap().to_string();
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let branch = task["branch"].as_str().unwrap().to_string();
    let (_, before) = thread_in(&wt, &id);

    // Kept branch: the worktree comes back on it, at the same place.
    ok(sb.grove(&repo).args(["rm", &id, "--keep-branch"]));
    assert!(!wt.exists());
    ok(sb
        .grove_with_agents(&repo)
        .args(["resume", &id, "--prompt", "Go on"]));
    assert!(wt.join("set-up").is_file(), "the project's setup ran again");
    assert_eq!(sb.git(&wt, &["branch", "--show-current"]).trim(), branch);
    let (meta, after) = thread_in(&wt, &id);
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(text_of(&after[before.len()]), "Go on");
    assert_no_duplicates(&after);
    assert_eq!(meta["context"]["worktree"]["path"], wt.to_str().unwrap());
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["status"], "live", "{row}");

    // Branch gone too: made again at the recorded commit.
    let head = sb.git(&wt, &["rev-parse", "HEAD"]);
    ok(sb.grove(&repo).args(["rm", &id]));
    assert!(
        sb.git(&repo, &["branch", "--list", &branch])
            .trim()
            .is_empty()
    );
    ok(sb
        .grove_with_agents(&repo)
        .args(["resume", &id, "--prompt", "Once more"]));
    assert_eq!(sb.git(&wt, &["rev-parse", "HEAD"]), head);
    assert_eq!(sb.git(&wt, &["branch", "--show-current"]).trim(), branch);
    let (_, last) = thread_in(&wt, &id);
    assert_eq!(&last[..after.len()], &after[..]);
    assert_no_duplicates(&last);
}

#[test]
fn export_as_a_session_writes_where_the_agent_looks_and_never_replaces_a_file() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let (wt, id) = task_with_a_session(&sb, &repo, "claude-code");
    let path =
        PathBuf::from(ok(sb.grove(&repo).args(["export", &id, "--format", "claude"])).trim_end());
    assert!(path.is_file(), "{path:?}");
    let session = path.file_stem().unwrap().to_string_lossy().into_owned();
    // The agent, started by hand in the worktree, resumes it.
    let out = run(sb
        .agent("claude", &wt)
        .args(["--resume", &session, "hello"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let report = json(&ok(sb
        .grove(&repo)
        .args(["export", &id, "--format", "codex", "--json"])));
    let rollout = PathBuf::from(report["path"].as_str().unwrap());
    assert!(
        rollout.starts_with(sb.path().join("codex/sessions")),
        "{report}"
    );
    assert_eq!(report["cwd"], wt.to_str().unwrap());

    // -o never replaces a file.
    let target = sb.path().join("mine.jsonl");
    std::fs::write(&target, "keep me\n").unwrap();
    let err = fails_with(
        sb.grove(&repo)
            .args(["export", &id, "--format", "claude", "-o"])
            .arg(&target),
        1,
    );
    assert!(err.contains("exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    // -o - is stdout: the session's records.
    let text = ok(sb
        .grove(&repo)
        .args(["export", &id, "--format", "codex", "-o", "-"]));
    assert!(
        text.lines().next().unwrap().contains("session_meta"),
        "{text}"
    );
}

#[test]
fn resume_refuses_before_writing_anything_when_the_agent_cannot_start() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task", "--prompt", "Fix it"]);
    let id = task["threadId"].as_str().unwrap().to_string();
    // The thread's agent is "unknown": resume needs to be told which.
    let err = fails_with(sb.grove(&repo).args(["resume", &id]), 1);
    assert!(err.contains("--agent claude-code"), "{err}");
    // No claude on PATH (only git there): nothing is written.
    ok(sb.grove(&repo).args(["rm", &id]));
    let only_git = sb.dir("only-git");
    let git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(git.trim(), only_git.join("git")).unwrap();
    let err = fails_with(
        sb.grove(&repo)
            .args(["resume", &id, "--agent", "claude-code"])
            .env("PATH", &only_git),
        1,
    );
    assert!(err.contains("was not found on PATH"), "{err}");
    assert!(!sb.path().join("claude").exists(), "no session written");
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    assert!(!wt.exists(), "the worktree is not made again for nothing");
    assert_eq!(row_of(&sb, &repo, &id)["status"], "removed");
}
