//! The real Claude Code and Codex (the npm packages pinned in
//! tests/real-agents, installed by `.ci/real-agents`) run through grove,
//! offline, against the scripted model server of `model_server.rs`. The tests
//! check outcomes: what the model received, what is in the thread, what
//! `grove list` and `grove export` say.
//!
//! Headless here: `claude -p` and `codex exec`, each configured as the
//! built-in agent's command in grove's own config (`grove.agents`), so the
//! thread's agent is `claude-code` / `codex` as for a user of the TUIs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::model_server::{Action, Api, ENCRYPTED, ModelServer, SIGNATURE, Turn};
use crate::support::*;

/// The API key the agents send; nothing checks it but the tests.
const KEY: &str = "sk-grove-scripted-model";
/// Where a proxy would send anything not for 127.0.0.1: a closed port, so
/// nothing the agents try reaches the network.
const NOWHERE: &str = "http://127.0.0.1:9";

/// The scenario every agent plays: one prompt, a shell command with output,
/// a failing command, a file written, a final reply.
fn scenario() -> Vec<Turn> {
    vec![Turn {
        prompt: "Check the workspace and leave a note".into(),
        thinking: "First look, then write the note.".into(),
        actions: vec![
            Action::Shell("echo grove-real-test".into()),
            Action::Shell("cat missing-file.txt".into()),
            Action::WriteFile {
                path: "notes.txt".into(),
                content: "written by the model\n".into(),
            },
        ],
        reply: "The note is in notes.txt.".into(),
    }]
}

/// `cmd` offline: proxies point nowhere, except for 127.0.0.1.
fn offline(cmd: &mut Command) -> &mut Command {
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        cmd.env(var, NOWHERE).env(var.to_lowercase(), NOWHERE);
    }
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
}

/// Claude Code's config directory (the sandbox's `CLAUDE_CONFIG_DIR`) set up
/// as after onboarding, and the environment that sends it to `server`.
fn claude_setup(sb: &Sandbox, server: &ModelServer, cmd: &mut Command) {
    let config = sb.path().join("claude");
    std::fs::create_dir_all(&config).unwrap();
    // Without it the first interactive run exits 1 reaching the vendor.
    std::fs::write(
        config.join(".claude.json"),
        json!({"hasCompletedOnboarding": true}).to_string(),
    )
    .unwrap();
    offline(cmd)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1");
}

/// Codex's home (the sandbox's `CODEX_HOME`) with a model provider at
/// `server`, and the environment with its key.
fn codex_setup(sb: &Sandbox, server: &ModelServer, cmd: &mut Command, extra: &str) {
    codex_config(sb, server, extra);
    codex_env(cmd);
}

/// The environment that runs Codex offline with the scripted provider's key.
fn codex_env(cmd: &mut Command) -> &mut Command {
    offline(cmd).env("SCRIPTED_API_KEY", KEY)
}

/// Codex's config (the sandbox's `CODEX_HOME`) with a model provider at
/// `server`, and `extra` after it.
fn codex_config(sb: &Sandbox, server: &ModelServer, extra: &str) {
    let home = sb.path().join("codex");
    std::fs::create_dir_all(&home).unwrap();
    // gpt-5.5 is a model Codex knows: it gets the tools users get
    // (exec_command, apply_patch as a freeform tool).
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\n\n\
             [model_providers.scripted]\nname = \"Scripted\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"SCRIPTED_API_KEY\"\n\n\
             [analytics]\nenabled = false\n{extra}",
            server.url()
        ),
    )
    .unwrap();
}

/// grove's own config (trusted) making the built-in agents headless.
fn headless_agents(sb: &Sandbox) {
    std::fs::create_dir_all(sb.grove_home()).unwrap();
    std::fs::write(
        sb.grove_home().join("config.json"),
        json!({"grove": {"agents": {
            "claude-code": {
                "command": ["claude", "-p", "--allowedTools", "Bash Write", "--session-id", "{sessionId}", "--", "{prompt}"],
                "resume": ["claude", "-p", "--allowedTools", "Bash Write", "--resume", "{sessionId}", "--", "{prompt}"],
                "native": "claude"
            },
            "codex": {
                "command": ["codex", "exec", "--sandbox", "workspace-write", "--", "{prompt}"],
                "resume": ["codex", "exec", "--sandbox", "workspace-write", "resume", "{sessionId}", "--", "{prompt}"],
                "native": "codex"
            }
        }}})
        .to_string(),
    )
    .unwrap();
}

/// `grove new TITLE --prompt PROMPT --launch=AGENT` in `repo`, its agent
/// set up by `setup`; returns the worktree and thread id.
fn launch(
    sb: &Sandbox,
    repo: &Path,
    agent: &str,
    prompt: &str,
    setup: impl FnOnce(&mut Command),
) -> (PathBuf, String) {
    let mut cmd = sb.grove_with_agents(repo);
    cmd.args(["new", "Real agent task", "--prompt", prompt])
        .arg(format!("--launch={agent}"));
    setup(&mut cmd);
    let started = Instant::now();
    let out = run(&mut cmd);
    eprintln!("{agent} through grove: {:?}", started.elapsed());
    assert!(
        out.status.success(),
        "grove new --launch={agent} failed ({:?})\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let wt = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    let row = list_rows(sb, repo)
        .into_iter()
        .find(|r| r["worktreePath"] == wt.to_str().unwrap())
        .unwrap_or_else(|| panic!("{} not listed", wt.display()));
    (wt, row["threadId"].as_str().unwrap().to_string())
}

/// The thread's conversation, one line per part, in order: `user: …`,
/// `thinking: …` (with `[signed]` or `[encrypted]`), `agent: …`,
/// `tool NAME STATUS: INPUT => OUTPUT`. A call's later completion
/// (`completesMessage`) is folded into the call. System messages (the
/// agent's own context) are left out.
fn conversation(thread_dir: &Path) -> Vec<String> {
    let messages = message_lines(thread_dir);
    let mut done: std::collections::HashMap<String, Value> = Default::default();
    for m in &messages {
        if m.get("completesMessage").is_some_and(|v| !v.is_null()) {
            for c in m["toolCalls"].as_array().into_iter().flatten() {
                done.insert(c["toolCallId"].as_str().unwrap().to_string(), c.clone());
            }
        }
    }
    let mut lines = Vec::new();
    for m in &messages {
        if m.get("completesMessage").is_some_and(|v| !v.is_null()) || m["role"] == "system" {
            continue;
        }
        let role = m["role"].as_str().unwrap();
        for b in m["content"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("text") => lines.push(format!("{role}: {}", b["text"].as_str().unwrap())),
                Some("thinking") => {
                    let mark = if b.get("signature").is_some() {
                        " [signed]"
                    } else if b.get("encryptedContent").is_some() {
                        " [encrypted]"
                    } else {
                        ""
                    };
                    lines.push(format!("thinking: {}{mark}", b["text"].as_str().unwrap()));
                }
                _ => {}
            }
        }
        for c in m["toolCalls"].as_array().into_iter().flatten() {
            let id = c["toolCallId"].as_str().unwrap();
            let c = done.get(id).unwrap_or(c);
            lines.push(format!(
                "tool {} {}: {} => {}",
                c["name"].as_str().unwrap(),
                c["status"].as_str().unwrap_or("?"),
                c["input"].as_str().unwrap_or(""),
                c["output"].as_str().unwrap_or(""),
            ));
        }
    }
    lines
}

/// Asserts `lines` match `patterns` one for one: each pattern's pieces
/// (split at `*`) appear in its line in order.
#[track_caller]
fn assert_lines(lines: &[String], patterns: &[String]) {
    let ok = lines.len() == patterns.len()
        && lines.iter().zip(patterns).all(|(line, pattern)| {
            let mut rest = line.as_str();
            pattern.split('*').all(|piece| match rest.find(piece) {
                Some(at) => {
                    rest = &rest[at + piece.len()..];
                    true
                }
                None => false,
            })
        });
    assert!(
        ok,
        "the thread's conversation\n{}\ndoes not match\n{}",
        lines.join("\n"),
        patterns.join("\n")
    );
}

/// Asserts `text` holds `parts` in this order.
#[track_caller]
fn assert_in_order(text: &str, parts: &[&str]) {
    let mut at = 0;
    for p in parts {
        match text[at..].find(p) {
            Some(i) => at += i + p.len(),
            None => panic!("{p:?} not found (in order) in:\n{text}"),
        }
    }
}

/// The text of an Anthropic tool result's content (a string or blocks).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The last message of an Anthropic request, which answers the model's
/// previous tool call: its `tool_result` block.
fn tool_result(request: &Value) -> Value {
    let last = request["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result in {last}"))
        .clone()
}

/// The input items of an OpenAI request of type `kind`.
fn items<'a>(request: &'a Value, kind: &str) -> Vec<&'a Value> {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[test]
fn claude_headless_through_grove_its_turn_lands_in_the_thread_once_in_order() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let started = Instant::now();
    let server = ModelServer::start(Api::Anthropic, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    let (wt, id) = launch(&sb, &repo, "claude-code", prompt, |cmd| {
        claude_setup(&sb, &server, cmd)
    });

    // What the model received: the prompt, then each tool's result.
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| r.status == 200),
        "a request the server does not know: {:?}",
        requests
            .iter()
            .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
            .collect::<Vec<_>>()
    );
    let calls = server.model_calls();
    assert_eq!(calls.len(), 4, "one answer per step of the script");
    for c in &calls {
        assert_eq!(c.path, "/v1/messages?beta=true");
        assert_eq!(c.header("x-api-key"), Some(KEY));
        assert_eq!(c.body["stream"], true);
    }
    let first = calls[0].body["messages"].as_array().unwrap();
    assert!(
        first
            .iter()
            .filter(|m| m["role"] == "user")
            .any(|m| m.to_string().contains(prompt.as_str())),
        "the prompt reached the model: {first:?}"
    );
    // The signed thinking goes back to the model with the tool call.
    assert!(
        calls[1].body["messages"]
            .to_string()
            .contains(&format!("\"signature\":\"{SIGNATURE}\"")),
        "the thinking block and its signature are sent back"
    );
    let echo = tool_result(&calls[1].body);
    assert_eq!(result_text(&echo["content"]), "grove-real-test");
    assert_ne!(echo["is_error"], true);
    let failed = tool_result(&calls[2].body);
    assert_eq!(failed["is_error"], true, "{failed}");
    assert!(
        result_text(&failed["content"]).contains("missing-file.txt: No such file"),
        "{failed}"
    );
    let written = tool_result(&calls[3].body);
    assert_ne!(written["is_error"], true, "{written}");
    assert!(result_text(&written["content"]).contains("notes.txt"));
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).unwrap(),
        "written by the model\n",
        "the file the model wrote is in the task's worktree"
    );

    // What the thread holds: each part once, in order.
    let thread_dir = wt.join(".agent/threads").join(&id);
    let want = expected(prompt, CLAUDE_TURN);
    assert_lines(&conversation(&thread_dir), &want);
    let ids: Vec<String> = message_lines(&thread_dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no message twice: {ids:?}");

    // Claude Code ran grove's hooks in the worktree as it went.
    let log = std::fs::read_to_string(thread_dir.join("logs/capture.log")).unwrap();
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

    // grove list: the session ended with Claude's exit code.
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agent"], "claude-code");
    assert_eq!(row["agentState"]["state"], "exited", "{row}");
    assert_eq!(row["agentState"]["exitCode"], 0);
    assert_eq!(row["stats"]["userMessageCount"], 1, "{row}");
    assert_eq!(row["stats"]["toolCallCount"], 3, "{row}");

    // grove export: the conversation as a person reads it.
    let md = ok(sb.grove(&repo).args(["export", &id, "--format", "md"]));
    assert_in_order(
        &md,
        &[
            prompt,
            "First look, then write the note.",
            "Tool: Bash (completed)",
            "grove-real-test",
            "Tool: Bash (failed)",
            "No such file or directory",
            "Tool: Write (completed)",
            "The note is in notes.txt.",
        ],
    );
    eprintln!("claude headless scenario: {:?}", started.elapsed());
}

#[test]
fn codex_exec_through_grove_its_turn_lands_in_the_thread_once_in_order() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let started = Instant::now();
    let server = ModelServer::start(Api::OpenAi, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    let (wt, id) = launch(&sb, &repo, "codex", prompt, |cmd| {
        codex_setup(&sb, &server, cmd, "")
    });

    // What the model received.
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| r.status == 200),
        "a request the server does not know: {:?}",
        requests
            .iter()
            .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
            .collect::<Vec<_>>()
    );
    let calls = server.model_calls();
    assert_eq!(calls.len(), 4, "one answer per step of the script");
    for c in &calls {
        assert_eq!(c.path, "/v1/responses");
        assert_eq!(
            c.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(c.body["stream"], true);
        assert_eq!(c.body["model"], "gpt-5.5");
    }
    let tools: Vec<&str> = calls[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"exec_command") && tools.contains(&"apply_patch"),
        "the tools the script calls are offered: {tools:?}"
    );
    assert!(
        items(&calls[0].body, "message")
            .iter()
            .any(|m| m["role"] == "user" && m.to_string().contains(prompt.as_str())),
        "the prompt reached the model"
    );
    // Stateless (store: false): the reasoning goes back, encrypted.
    let reasoning = items(&calls[1].body, "reasoning");
    assert_eq!(reasoning.len(), 1, "{:?}", calls[1].body["input"]);
    assert_eq!(reasoning[0]["encrypted_content"], ENCRYPTED);
    let output = |n: usize, kind: &str| -> String {
        let outs = items(&calls[n].body, kind);
        outs.last()
            .unwrap_or_else(|| panic!("no {kind} in request {n}"))["output"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let echo = output(1, "function_call_output");
    assert!(
        echo.contains("Process exited with code 0") && echo.contains("grove-real-test"),
        "{echo}"
    );
    let failed = output(2, "function_call_output");
    assert!(
        failed.contains("Process exited with code 1") && failed.contains("No such file"),
        "{failed}"
    );
    let patched = output(3, "custom_tool_call_output");
    assert!(patched.contains("A notes.txt"), "{patched}");
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).unwrap(),
        "written by the model\n"
    );

    // What the thread holds: each part once, in order (Codex's own context
    // messages are system messages, left out here).
    let thread_dir = wt.join(".agent/threads").join(&id);
    let want = expected(prompt, CODEX_TURN);
    assert_lines(&conversation(&thread_dir), &want);
    let ids: Vec<String> = message_lines(&thread_dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no message twice: {ids:?}");

    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agent"], "codex");
    assert_eq!(row["agentState"]["state"], "exited", "{row}");
    assert_eq!(row["agentState"]["exitCode"], 0);
    assert_eq!(row["stats"]["userMessageCount"], 1, "{row}");
    assert_eq!(row["stats"]["toolCallCount"], 3, "{row}");

    let md = ok(sb.grove(&repo).args(["export", &id, "--format", "md"]));
    assert_in_order(
        &md,
        &[
            prompt,
            "First look, then write the note.",
            "Tool: exec_command (completed)",
            "grove-real-test",
            "Tool: exec_command (failed)",
            "No such file or directory",
            "Tool: apply_patch (completed)",
            "The note is in notes.txt.",
        ],
    );
    eprintln!("codex headless scenario: {:?}", started.elapsed());
}

#[test]
fn claude_a_failing_tool_runs_grove_s_post_tool_use_failure_hook() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::Anthropic, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let (wt, id) = launch(&sb, &repo, "claude-code", &scenario()[0].prompt, |cmd| {
        claude_setup(&sb, &server, cmd)
    });
    let log = std::fs::read_to_string(wt.join(".agent/threads").join(&id).join("logs/capture.log"))
        .unwrap();
    assert!(log.contains("PostToolUseFailure"), "{log}");
    // The successful tools' PostToolUse, the failing one's PostToolUseFailure.
    assert_eq!(log.matches("PostToolUse ").count(), 2, "{log}");
}

/// The user's answer to Codex's "Trust this folder?" for `repo`: the
/// repository is trusted (Codex records its main worktree).
fn trusted_project(repo: &Path) -> String {
    format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.display()
    )
}

#[test]
fn codex_trusted_its_turn_is_captured_live_by_grove_s_hooks() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::OpenAi, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    // The user trusts the repository in Codex, and grove's hooks (the
    // "Hooks need review" answer, recorded by --trust-agent).
    codex_config(&sb, &server, &trusted_project(&repo));
    let config_before = std::fs::read_to_string(sb.path().join("codex/config.toml")).unwrap();
    let installed = json(&ok(sb.grove(&wt).args([
        "capture",
        "install",
        "--trust-agent",
        "--json",
    ])));
    let codex = &installed["agents"][0];
    assert_eq!(
        codex["file"],
        repo.join(".codex/hooks.json").to_str().unwrap(),
        "Codex reads the main worktree's hooks: {installed}"
    );
    assert_eq!(codex["trust"]["trusted"].as_array().unwrap().len(), 7);
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["launch", &id, "--prompt", &scenario()[0].prompt]);
    codex_env(&mut cmd);
    ok(&mut cmd);
    let thread_dir = wt.join(".agent/threads").join(&id);
    let log = std::fs::read_to_string(thread_dir.join("logs/capture.log")).unwrap_or_default();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert!(
            log.contains(event),
            "Codex ran grove's {event} hook: {log:?}"
        );
    }
    assert!(!log.contains("problem"), "{log}");
    assert_lines(
        &conversation(&thread_dir),
        &expected(&scenario()[0].prompt, CODEX_TURN),
    );
    assert_eq!(
        sb.git(&repo, &["status", "--porcelain"]),
        "",
        "grove's hooks are no change"
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "?? notes.txt");

    // Uninstalled: the hooks, the worktree's .codex/ and the trust go; the
    // Codex config is what it was.
    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    assert!(!repo.join(".codex").exists());
    assert!(!wt.join(".codex").exists());
    assert_eq!(
        std::fs::read_to_string(sb.path().join("codex/config.toml")).unwrap(),
        config_before
    );
}

/// The scenario's thread as it should be after the agent's turn, for
/// Claude Code.
const CLAUDE_TURN: &[&str] = &[
    "thinking: First look, then write the note. [signed]",
    "tool Bash completed: *echo grove-real-test* => grove-real-test",
    "tool Bash failed: *cat missing-file.txt* => *No such file or directory",
    "tool Write completed: *notes.txt* => *notes.txt*",
    "agent: The note is in notes.txt.",
];

/// The same for Codex.
const CODEX_TURN: &[&str] = &[
    "thinking: First look, then write the note. [encrypted]",
    "tool exec_command completed: *echo grove-real-test* => *grove-real-test",
    "tool exec_command failed: *cat missing-file.txt* => *No such file or directory",
    "tool apply_patch completed: *Add File: notes.txt* => *A notes.txt",
    "agent: The note is in notes.txt.",
];

/// The thread after one turn: the prompt, then the agent's `turn`.
fn expected(prompt: &str, turn: &[&str]) -> Vec<String> {
    std::iter::once(format!("user: {prompt}"))
        .chain(turn.iter().map(|s| s.to_string()))
        .collect()
}

/// A task of `agent` made without launching it; its worktree and id.
fn task(sb: &Sandbox, repo: &Path, agent: &str) -> (PathBuf, String) {
    let task = new_task(sb, repo, &["By hand", "--agent", agent]);
    (
        PathBuf::from(task["worktreePath"].as_str().unwrap()),
        task["threadId"].as_str().unwrap().to_string(),
    )
}

#[test]
fn claude_run_by_hand_after_capture_install_lands_in_the_thread_as_it_goes() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::Anthropic, scenario());
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "claude-code");
    ok(sb.grove(&wt).args(["capture", "install"]));
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("claude", &wt);
    cmd.args(["-p", "--allowedTools", "Bash Write", "--", prompt]);
    claude_setup(&sb, &server, &mut cmd);
    let started = Instant::now();
    let out = run(&mut cmd);
    eprintln!("claude by hand: {:?}", started.elapsed());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.model_calls().len(), 4);
    // Only the hooks ran grove here: what they brought is the whole turn.
    let thread_dir = wt.join(".agent/threads").join(&id);
    let want = expected(prompt, CLAUDE_TURN);
    assert_lines(&conversation(&thread_dir), &want);
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agentState"]["state"], "exited", "SessionEnd: {row}");
    assert_eq!(row["agentState"]["event"], "SessionEnd");
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "?? notes.txt",
        "grove's hook file is no change; the model's note is"
    );
}

#[test]
fn codex_run_by_hand_is_adopted_by_capture_sync() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::OpenAi, scenario());
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    ok(sb.grove(&wt).args(["capture", "install"]));
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("codex", &wt);
    cmd.args(["exec", "--sandbox", "workspace-write", "--", prompt]);
    codex_setup(&sb, &server, &mut cmd, "");
    let started = Instant::now();
    let out = run(&mut cmd);
    eprintln!("codex by hand: {:?}", started.elapsed());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.model_calls().len(), 4);
    let thread_dir = wt.join(".agent/threads").join(&id);
    assert!(
        message_lines(&thread_dir).is_empty(),
        "Codex ran no hook of grove's: nothing was captured while it ran"
    );
    let synced = json(&ok(sb.grove(&wt).args(["capture", "sync", "--json"])));
    assert_eq!(synced["threadId"], id.as_str(), "{synced}");
    assert_eq!(synced["problems"], json!([]), "{synced}");
    let want = expected(prompt, CODEX_TURN);
    assert_lines(&conversation(&thread_dir), &want);
    // Again: nothing twice.
    let again = json(&ok(sb.grove(&wt).args(["capture", "sync", "--json"])));
    assert_eq!(again["added"], 0, "{again}");
    assert_lines(&conversation(&thread_dir), &want);
}

#[test]
#[ignore = "issue 23 item 12: a session of the task's agent run by hand in the worktree is adopted only by `grove capture sync`, not at `grove list` / `grove show` as the README says"]
fn codex_run_by_hand_is_adopted_at_list_and_show() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::OpenAi, scenario());
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("codex", &wt);
    cmd.args(["exec", "--sandbox", "workspace-write", "--", prompt]);
    codex_setup(&sb, &server, &mut cmd, "");
    assert!(run(&mut cmd).status.success());
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["stats"]["toolCallCount"], 3, "adopted at list: {row}");
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(shown.contains("The note is in notes.txt."), "{shown}");
}

/// A record the agent writes into its transcript, which the thread must
/// hold before the model answers the request that follows it.
#[derive(Debug, Clone, PartialEq)]
enum Awaited {
    /// The user's prompt.
    Prompt(String),
    /// The result of the tool call with this id.
    Result(String),
}

/// What a model request follows: the result it carries last, or the
/// prompt that opens it.
fn awaited(api: Api, body: &Value, prompt: &str) -> Option<Awaited> {
    match api {
        Api::Anthropic => {
            // Claude Code 2.1.331 sends its context as a last, system message.
            let last = body["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")?;
            if let Some(r) = last["content"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|b| b["type"] == "tool_result")
            {
                return Some(Awaited::Result(r["tool_use_id"].as_str()?.to_string()));
            }
            last.to_string()
                .contains(prompt)
                .then(|| Awaited::Prompt(prompt.to_string()))
        }
        Api::OpenAi => {
            let last = body["input"].as_array()?.last()?;
            if let Some(id) = last["call_id"].as_str()
                && last["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_output"))
            {
                return Some(Awaited::Result(id.to_string()));
            }
            last.to_string()
                .contains(prompt)
                .then(|| Awaited::Prompt(prompt.to_string()))
        }
    }
}

/// Whether the thread holds `what`: the prompt as a user message, a tool
/// call's result (completed or failed).
fn thread_holds(thread_dir: &Path, what: &Awaited) -> bool {
    let Ok(text) = std::fs::read_to_string(thread_dir.join("messages.jsonl")) else {
        return false;
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|m| match what {
            Awaited::Prompt(p) => {
                m["role"] == "user" && m["content"].to_string().contains(p.as_str())
            }
            Awaited::Result(id) => m["toolCalls"].as_array().into_iter().flatten().any(|c| {
                c["toolCallId"] == id.as_str()
                    && matches!(c["status"].as_str(), Some("completed" | "failed"))
            }),
        })
}

/// When the agent wrote `what` into one of the transcripts under `dir`
/// (its record's own timestamp).
fn written_at(dir: &Path, what: &Awaited) -> Option<jiff::Timestamp> {
    let mut files = vec![dir.to_path_buf()];
    while let Some(f) = files.pop() {
        if f.is_dir() {
            files.extend(std::fs::read_dir(&f).ok()?.flatten().map(|e| e.path()));
            continue;
        }
        if f.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&f).ok()?.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let hit = match what {
                // Claude's user record, Codex's user message item.
                Awaited::Prompt(p) => {
                    (v["type"] == "user" && v["message"]["role"] == "user"
                        || v["payload"]["type"] == "message" && v["payload"]["role"] == "user")
                        && v.to_string().contains(p.as_str())
                        && !v.to_string().contains("tool_result")
                }
                Awaited::Result(id) => {
                    v["message"]["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == id.as_str())
                        || (v["payload"]["call_id"] == id.as_str()
                            && v["payload"]["type"]
                                .as_str()
                                .is_some_and(|t| t.ends_with("_output")))
                }
            };
            if hit {
                return v["timestamp"].as_str()?.parse().ok();
            }
        }
    }
    None
}

/// What the gate saw before one model answer.
#[derive(Debug)]
struct Seen {
    what: Awaited,
    /// From the record's write to the thread holding it; `None`: not within
    /// the bound.
    latency: Option<std::time::Duration>,
    /// The agent's state `grove list` showed meanwhile.
    state: String,
}

/// A gate for the model server: before each answer, waits (at most 10 s)
/// until the thread holds the record the request follows, and notes how
/// long after its write that was, and what `grove list` says.
fn hold_until_captured(
    sb: std::sync::Arc<Sandbox>,
    api: Api,
    repo: PathBuf,
    thread_dir: PathBuf,
    transcripts: PathBuf,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
) -> impl Fn(u64, &Value) + Send + Sync + 'static {
    let prompt = scenario()[0].prompt.clone();
    let id = thread_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    move |_, body| {
        let Some(what) = awaited(api, body, &prompt) else {
            return;
        };
        let start = Instant::now();
        let mut held = None;
        while start.elapsed() < std::time::Duration::from_secs(10) {
            if thread_holds(&thread_dir, &what) {
                held = Some(jiff::Timestamp::now());
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let latency = held.and_then(|at| {
            let written = written_at(&transcripts, &what)?;
            let d = at.duration_since(written);
            Some(std::time::Duration::from_millis(
                d.as_millis().max(0).try_into().unwrap_or(0),
            ))
        });
        let state = row_of(&sb, &repo, &id)["agentState"]["state"]
            .as_str()
            .unwrap_or("")
            .to_string();
        seen.lock().unwrap().push(Seen {
            what,
            latency,
            state,
        });
    }
}

/// Asserts that the gate saw each of `n` records reach the thread within a
/// second of its write, the agent `working` meanwhile.
#[track_caller]
fn assert_within_a_second(seen: &[Seen], n: usize) {
    assert_eq!(seen.len(), n, "{seen:#?}");
    assert!(
        matches!(seen[0].what, Awaited::Prompt(_)),
        "the prompt first: {seen:#?}"
    );
    for s in seen {
        let ok = s
            .latency
            .is_some_and(|l| l < std::time::Duration::from_secs(1));
        assert!(
            ok,
            "{:?} reached the thread within 1 s of its write: {seen:#?}",
            s.what
        );
        assert_eq!(s.state, "working", "{seen:#?}");
    }
}

#[test]
fn claude_each_record_reaches_the_thread_within_a_second_before_any_later_hook() {
    let sb = std::sync::Arc::new(Sandbox::new());
    if !sb.install_real_agents() {
        return;
    }
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "claude-code");
    ok(sb.grove(&wt).args(["capture", "install"]));
    let thread_dir = wt.join(".agent/threads").join(&id);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // The model answers only once the thread holds what Claude wrote since
    // its last request: Claude waits for it meanwhile, and runs no hook.
    let server = ModelServer::start_gated(
        Api::Anthropic,
        scenario(),
        hold_until_captured(
            sb.clone(),
            Api::Anthropic,
            repo.clone(),
            thread_dir.clone(),
            sb.path().join("claude/projects"),
            seen.clone(),
        ),
    );
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("claude", &wt);
    cmd.args(["-p", "--allowedTools", "Bash Write", "--", prompt]);
    claude_setup(&sb, &server, &mut cmd);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The prompt, then each tool's result (the failing one's included).
    assert_within_a_second(&seen.lock().unwrap(), 4);
    assert_lines(&conversation(&thread_dir), &expected(prompt, CLAUDE_TURN));
}

#[test]
fn codex_each_record_reaches_the_thread_within_a_second_before_any_later_hook() {
    let sb = std::sync::Arc::new(Sandbox::new());
    if !sb.install_real_agents() {
        return;
    }
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    let thread_dir = wt.join(".agent/threads").join(&id);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = ModelServer::start_gated(
        Api::OpenAi,
        scenario(),
        hold_until_captured(
            sb.clone(),
            Api::OpenAi,
            repo.clone(),
            thread_dir.clone(),
            sb.path().join("codex/sessions"),
            seen.clone(),
        ),
    );
    codex_config(&sb, &server, &trusted_project(&repo));
    ok(sb.grove(&wt).args(["capture", "install", "--trust-agent"]));
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("codex", &wt);
    cmd.args(["exec", "--sandbox", "workspace-write", "--", prompt]);
    codex_env(&mut cmd);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_within_a_second(&seen.lock().unwrap(), 4);
    assert_lines(&conversation(&thread_dir), &expected(prompt, CODEX_TURN));
    // After the turn waiting (Stop), then exited: `codex exec` ends its
    // session (SessionEnd).
    let log = std::fs::read_to_string(thread_dir.join("logs/capture.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(" Stop ") && l.ends_with("state=waiting")),
        "{log}"
    );
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["agentState"]["state"], "exited", "{row}");
    assert_eq!(row["agentState"]["event"], "SessionEnd", "{row}");
}

/// What `codex app-server` (JSON-RPC on stdin/stdout) answers to
/// `hooks/list` for a session in `cwd`: the hooks Codex would run there,
/// each with its `trustStatus`.
fn codex_hooks_list(sb: &Sandbox, cwd: &Path) -> Vec<Value> {
    use std::io::{BufRead, Write};
    let mut cmd = sb.agent("codex", cwd);
    cmd.arg("app-server");
    codex_env(&mut cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "grove-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}}),
    ] {
        writeln!(stdin, "{request}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["id"] == 2
            {
                let _ = tx.send(v);
                return;
            }
        }
    });
    let answer = rx.recv_timeout(std::time::Duration::from_secs(30));
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer.expect("codex app-server answered hooks/list");
    answer["result"]["data"][0]["hooks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn codex_itself_reports_every_hook_of_grove_s_trusted_after_install_trust_agent() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::OpenAi, scenario());
    let repo = sb.repo("app");
    let (wt, _) = task(&sb, &repo, "codex");
    codex_config(&sb, &server, &trusted_project(&repo));
    let listed = |sb: &Sandbox| -> Vec<(String, String)> {
        codex_hooks_list(sb, &wt)
            .iter()
            .filter(|h| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c.ends_with(" capture codex"))
            })
            .map(|h| {
                (
                    h["eventName"].as_str().unwrap().to_string(),
                    h["trustStatus"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    ok(sb.grove(&wt).args(["capture", "install"]));
    let untrusted = listed(&sb);
    assert_eq!(
        untrusted.len(),
        7,
        "Codex finds grove's hooks from the task's worktree: {untrusted:?}"
    );
    assert!(
        untrusted.iter().all(|(_, t)| t == "untrusted"),
        "{untrusted:?}"
    );
    ok(sb.grove(&wt).args(["capture", "install", "--trust-agent"]));
    let trusted = listed(&sb);
    assert_eq!(trusted.len(), 7, "{trusted:?}");
    assert!(
        trusted.iter().all(|(_, t)| t == "trusted"),
        "Codex computes the hash grove recorded, for every event: {trusted:?}"
    );
}
