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

use crate::model_server::{
    Action, Api, ENCRYPTED, ModelServer, Request, SIGNATURE, Turn, is_title_request,
};
use crate::support::*;

/// The API key the agents send; nothing checks it but the tests.
pub(crate) const KEY: &str = "sk-grove-scripted-model";
/// Where a proxy would send anything not for 127.0.0.1: a closed port, so
/// nothing the agents try reaches the network.
const NOWHERE: &str = "http://127.0.0.1:9";

/// The scenario every agent plays: one prompt, a shell command with output,
/// a failing command, a file written, a final reply.
pub(crate) fn scenario() -> Vec<Turn> {
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
pub(crate) fn offline(cmd: &mut Command) -> &mut Command {
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        cmd.env(var, NOWHERE).env(var.to_lowercase(), NOWHERE);
    }
    cmd.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
}

/// Claude Code's config directory (the sandbox's `CLAUDE_CONFIG_DIR`) set up
/// as after onboarding (once), and the environment that sends it to
/// `server`.
pub(crate) fn claude_setup(sb: &Sandbox, server: &ModelServer, cmd: &mut Command) {
    let config = sb.path().join("claude");
    std::fs::create_dir_all(&config).unwrap();
    // Without it the first interactive run exits 1 reaching the vendor.
    // Written once: what Claude Code keeps there later (the folders
    // trusted, the API key approved) stays, as for a user.
    if !config.join(".claude.json").exists() {
        std::fs::write(
            config.join(".claude.json"),
            json!({"hasCompletedOnboarding": true}).to_string(),
        )
        .unwrap();
    }
    offline(cmd)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1");
}

/// Codex's home (the sandbox's `CODEX_HOME`) with a model provider at
/// `server`, and the environment with its key.
pub(crate) fn codex_setup(sb: &Sandbox, server: &ModelServer, cmd: &mut Command, extra: &str) {
    codex_config(sb, server, extra);
    codex_env(cmd);
}

/// The environment that runs Codex offline with the scripted provider's key.
pub(crate) fn codex_env(cmd: &mut Command) -> &mut Command {
    offline(cmd).env("SCRIPTED_API_KEY", KEY)
}

/// Codex's config (the sandbox's `CODEX_HOME`) with a model provider at
/// `server`, and `extra` after it.
pub(crate) fn codex_config(sb: &Sandbox, server: &ModelServer, extra: &str) {
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
pub(crate) fn headless_agents(sb: &Sandbox) {
    headless_agents_with(sb, &[]);
}

/// [`headless_agents`] with `extra` arguments for Claude Code's command.
fn headless_agents_with(sb: &Sandbox, extra: &[&str]) {
    let mut claude: Vec<&str> = vec!["claude", "-p", "--allowedTools", "Bash Write"];
    claude.extend(extra);
    claude.extend(["--session-id", "{sessionId}", "--", "{prompt}"]);
    std::fs::create_dir_all(sb.grove_home()).unwrap();
    std::fs::write(
        sb.grove_home().join("config.json"),
        json!({"grove": {"agents": {
            "claude-code": {
                "command": claude,
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
pub(crate) fn launch(
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
pub(crate) fn conversation(thread_dir: &Path) -> Vec<String> {
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
pub(crate) fn assert_lines(lines: &[String], patterns: &[String]) {
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
pub(crate) fn assert_in_order(text: &str, parts: &[&str]) {
    let mut at = 0;
    for p in parts {
        match text[at..].find(p) {
            Some(i) => at += i + p.len(),
            None => panic!("{p:?} not found (in order) in:\n{text}"),
        }
    }
}

/// The text of an Anthropic tool result's content (a string or blocks).
pub(crate) fn result_text(content: &Value) -> String {
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
pub(crate) fn tool_result(request: &Value) -> Value {
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
pub(crate) fn items<'a>(request: &'a Value, kind: &str) -> Vec<&'a Value> {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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

    // Token usage: what Claude Code's own transcript says each reply used
    // (a reply written as several records counted once), what the model
    // server reported, and grove's totals all agree.
    let from_transcript = claude_transcript_usage(&agent_files(&sb, "claude"));
    assert_eq!(from_transcript, served(&calls, Api::Anthropic));
    assert_tokens(&thread_dir, &row, from_transcript);

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
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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

    // Token usage: Codex's rollout gives each response's usage twice (a
    // token_usage_record and a token_count, both with running totals);
    // grove counts each once.
    let from_rollout = codex_rollout_usage(&agent_files(&sb, "codex"));
    assert_eq!(from_rollout, served(&calls, Api::OpenAi));
    assert_tokens(&thread_dir, &row, from_rollout);
    // The session's own running totals, as Codex last gave them: named too.
    let meta = read_json(&thread_dir.join("thread.json"));
    assert_eq!(
        meta["metadata"]["capture"]["sessions"][0]["tokens"],
        row["stats"]["tokens"]
    );

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
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
pub(crate) fn trusted_project(repo: &Path) -> String {
    format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.display()
    )
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
pub(crate) const CLAUDE_TURN: &[&str] = &[
    "thinking: First look, then write the note. [signed]",
    "tool Bash completed: *echo grove-real-test* => grove-real-test",
    "tool Bash failed: *cat missing-file.txt* => *No such file or directory",
    "tool Write completed: *notes.txt* => *notes.txt*",
    "agent: The note is in notes.txt.",
];

/// The same for Codex.
pub(crate) const CODEX_TURN: &[&str] = &[
    "thinking: First look, then write the note. [encrypted]",
    "tool exec_command completed: *echo grove-real-test* => *grove-real-test",
    "tool exec_command failed: *cat missing-file.txt* => *No such file or directory",
    "tool apply_patch completed: *Add File: notes.txt* => *A notes.txt",
    "agent: The note is in notes.txt.",
];

/// The thread after one turn: the prompt, then the agent's `turn`.
pub(crate) fn expected(prompt: &str, turn: &[&str]) -> Vec<String> {
    std::iter::once(format!("user: {prompt}"))
        .chain(turn.iter().map(|s| s.to_string()))
        .collect()
}

/// A task of `agent` made without launching it; its worktree and id.
pub(crate) fn task(sb: &Sandbox, repo: &Path, agent: &str) -> (PathBuf, String) {
    let task = new_task(sb, repo, &["By hand", "--agent", agent]);
    (
        PathBuf::from(task["worktreePath"].as_str().unwrap()),
        task["threadId"].as_str().unwrap().to_string(),
    )
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_launched_again_after_a_launch_that_failed_before_it_wrote_anything_gets_the_prompt() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::Anthropic, scenario());
    // A mistake in the agent's command: the real claude refuses the option
    // and exits 1 before it writes a session.
    headless_agents_with(&sb, &["--permission-mode", "no-such-mode"]);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args([
        "new",
        "Real agent task",
        "--prompt",
        prompt,
        "--launch=claude-code",
    ]);
    claude_setup(&sb, &server, &mut cmd);
    let out = run(&mut cmd);
    assert_eq!(
        out.status.code(),
        Some(1),
        "claude's own exit code: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        server.model_calls().is_empty(),
        "claude never reached the model"
    );
    let wt = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    let id = list_rows(&sb, &repo)
        .into_iter()
        .find(|r| r["worktreePath"] == wt.to_str().unwrap())
        .unwrap()["threadId"]
        .as_str()
        .unwrap()
        .to_string();

    // The command fixed, the task launched again: it opens with the prompt.
    headless_agents(&sb);
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["launch", &id]);
    claude_setup(&sb, &server, &mut cmd);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = server.model_calls();
    assert_eq!(calls.len(), 4, "the scripted turn was played");
    assert!(
        calls[0].body["messages"]
            .to_string()
            .contains(prompt.as_str()),
        "the prompt reached the model"
    );
    let thread_dir = wt.join(".agent/threads").join(&id);
    assert_lines(&conversation(&thread_dir), &expected(prompt, CLAUDE_TURN));
}

/// The names grove gives token counts, in the order the helpers below use.
pub(crate) const TOKEN_COUNTS: [&str; 5] =
    ["input", "output", "cacheRead", "cacheCreation", "reasoning"];

/// The usage the model server reported over `calls`, as grove names it:
/// Anthropic's cache read and creation; OpenAI's cached and reasoning.
fn served(calls: &[Request], api: Api) -> [u64; 5] {
    let mut sum = [0; 5];
    for c in calls {
        let [a, b, c3, d] = c.usage.expect("a model call's usage");
        let named = match api {
            Api::Anthropic => [a, b, c3, d, 0],
            Api::OpenAi => [a, b, c3, 0, d],
        };
        for i in 0..5 {
            sum[i] += named[i];
        }
    }
    sum
}

/// The agent's own session files under the sandbox's `CLAUDE_CONFIG_DIR`
/// (`claude`) or `CODEX_HOME` (`codex`).
pub(crate) fn agent_files(sb: &Sandbox, agent: &str) -> Vec<PathBuf> {
    let root = sb.path().join(agent).join(match agent {
        "claude" => "projects",
        _ => "sessions",
    });
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

pub(crate) fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Claude Code's usage, summed from its transcripts: per reply (API message
/// id) the usage of its last record.
pub(crate) fn claude_transcript_usage(files: &[PathBuf]) -> [u64; 5] {
    let mut replies: std::collections::BTreeMap<String, Value> = Default::default();
    for f in files {
        for r in jsonl(f) {
            if r["type"] == "assistant" && r["message"]["usage"].is_object() {
                let id = r["message"]["id"].as_str().unwrap().to_string();
                replies.insert(id, r["message"]["usage"].clone());
            }
        }
    }
    assert!(!replies.is_empty(), "no usage in {files:?}");
    let mut sum = [0; 5];
    for u in replies.values() {
        let keys = [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ];
        for (i, k) in keys.iter().enumerate() {
            sum[i] += u[k].as_u64().unwrap_or(0);
        }
    }
    sum
}

/// Codex's usage from its rollouts: the sum of the responses' own usage
/// (`token_usage_record`), checked against the running total the last
/// `token_count` gives.
pub(crate) fn codex_rollout_usage(files: &[PathBuf]) -> [u64; 5] {
    let keys = [
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cache_write_input_tokens",
        "reasoning_output_tokens",
    ];
    let mut sum = [0; 5];
    for f in files {
        let records = jsonl(f);
        let mut file_sum = [0; 5];
        for r in &records {
            if r["type"] == "token_usage_record" {
                for (i, k) in keys.iter().enumerate() {
                    file_sum[i] += r["payload"]["usage"][k].as_u64().unwrap_or(0);
                }
            }
        }
        let last_total = records
            .iter()
            .rev()
            .find(|r| r["payload"]["type"] == "token_count" && r["payload"]["info"].is_object())
            .map(|r| r["payload"]["info"]["total_token_usage"].clone())
            .expect("a token_count with totals");
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(
                last_total[k].as_u64().unwrap_or(0),
                file_sum[i],
                "{k}: the running total is the responses' sum in {}",
                f.display()
            );
            sum[i] += file_sum[i];
        }
    }
    sum
}

/// Asserts that the thread's token totals (thread.json `stats.tokens`, the
/// list row's, and the sum over its messages) are `want`, and that each
/// message's tokens are grove's named counts only.
#[track_caller]
pub(crate) fn assert_tokens(thread_dir: &Path, row: &Value, want: [u64; 5]) {
    let want_json: Value = TOKEN_COUNTS
        .iter()
        .zip(want)
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let meta = read_json(&thread_dir.join("thread.json"));
    assert_eq!(meta["stats"]["tokens"], want_json, "thread.json stats");
    assert_eq!(row["stats"]["tokens"], want_json, "grove list");
    let mut sum = [0; 5];
    for m in message_lines(thread_dir) {
        let Some(t) = m["tokens"].as_object() else {
            continue;
        };
        for k in t.keys() {
            assert!(TOKEN_COUNTS.contains(&k.as_str()), "a raw key {k} in {m}");
        }
        for (i, k) in TOKEN_COUNTS.iter().enumerate() {
            sum[i] += t.get(*k).and_then(Value::as_u64).unwrap_or(0);
        }
    }
    assert_eq!(sum, want, "the messages' tokens");
}

/// The scenario, then a second turn that only answers.
pub(crate) fn two_turns() -> Vec<Turn> {
    let mut turns = scenario();
    turns.push(Turn {
        prompt: "Now sum it up".into(),
        thinking: String::new(),
        actions: vec![],
        reply: "All done: one note written.".into(),
    });
    turns
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_run_by_hand_is_adopted_at_show_and_list() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::Anthropic, scenario());
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "claude-code");
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("claude", &wt);
    cmd.args(["-p", "--allowedTools", "Bash Write", "--", prompt]);
    claude_setup(&sb, &server, &mut cmd);
    assert!(run(&mut cmd).status.success());
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(
        shown.contains("The note is in notes.txt."),
        "adopted at show: {shown}"
    );
    let thread_dir = wt.join(".agent/threads").join(&id);
    assert_lines(&conversation(&thread_dir), &expected(prompt, CLAUDE_TURN));
    let row = row_of(&sb, &repo, &id);
    assert_eq!(row["stats"]["toolCallCount"], 3, "{row}");
    // Nothing twice at the next look.
    ok(sb.grove(&repo).args(["list"]));
    assert_lines(&conversation(&thread_dir), &expected(prompt, CLAUDE_TURN));
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_run_by_hand_is_in_the_session_grove_resume_writes_in_order() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::Anthropic, two_turns());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "claude-code");
    let prompt = &scenario()[0].prompt;
    let mut cmd = sb.agent("claude", &wt);
    cmd.args(["-p", "--allowedTools", "Bash Write", "--", prompt]);
    claude_setup(&sb, &server, &mut cmd);
    assert!(run(&mut cmd).status.success());
    assert_eq!(server.model_calls().len(), 4);

    // Resumed at once, with no list or show between.
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["resume", &id, "--prompt", "Now sum it up"]);
    claude_setup(&sb, &server, &mut cmd);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = server.model_calls();
    assert_eq!(calls.len(), 5, "one answer for the new turn");
    let sent = calls[4].body["messages"].to_string();
    assert_in_order(
        &sent,
        &[
            prompt,
            "grove-real-test",
            "The note is in notes.txt.",
            "Now sum it up",
        ],
    );
    let thread_dir = wt.join(".agent/threads").join(&id);
    let mut want = expected(prompt, CLAUDE_TURN);
    want.push("user: Now sum it up".into());
    want.push("agent: All done: one note written.".into());
    assert_lines(&conversation(&thread_dir), &want);
}

/// The rollouts under the sandbox's `CODEX_HOME`, each as its records.
pub(crate) fn rollouts(sb: &Sandbox) -> Vec<(PathBuf, Vec<Value>)> {
    agent_files(sb, "codex")
        .into_iter()
        .map(|p| {
            let records = jsonl(&p);
            (p, records)
        })
        .collect()
}

/// The rollout whose session_meta names session `id`.
pub(crate) fn rollout_of(sb: &Sandbox, id: &str) -> Vec<Value> {
    rollouts(sb)
        .into_iter()
        .find(|(_, r)| r[0]["payload"]["id"] == id)
        .unwrap_or_else(|| panic!("no rollout of session {id}"))
        .1
}

/// The session id `grove resume` wrote (from its status line).
pub(crate) fn written_session(stderr: &str) -> String {
    let at = stderr.find(" session ").expect("grove says what it wrote");
    stderr[at + " session ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The shapes a rollout's records have that Codex reads back: per record
/// kind, its payload's keys' JSON types (`response_item message`'s `role`
/// by the text it starts with, a `*_output`'s `output` type).
fn shapes(records: &[Value]) -> std::collections::BTreeSet<String> {
    let kind = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
        _ => "other",
    };
    let mut out = std::collections::BTreeSet::new();
    for r in records {
        let p = &r["payload"];
        let t = format!(
            "{} {}",
            r["type"].as_str().unwrap_or(""),
            p["type"].as_str().unwrap_or("")
        );
        match p["type"].as_str() {
            Some("function_call_output" | "custom_tool_call_output") => {
                out.insert(format!("{t} output:{}", kind(&p["output"])));
            }
            Some("message") => {
                let text = p["content"][0]["text"].as_str().unwrap_or("");
                if text.starts_with('<') {
                    let tag: String = text.chars().take_while(|c| *c != '>').collect();
                    out.insert(format!(
                        "{t} {tag}> role:{}",
                        p["role"].as_str().unwrap_or("")
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// What a rollout grove wrote must have for Codex to take it back whole:
/// the configured provider, the installed version, each turn completed.
#[track_caller]
pub(crate) fn assert_codex_session(written: &[Value], turns: usize) {
    let meta = &written[0]["payload"];
    assert_eq!(written[0]["type"], "session_meta");
    assert_eq!(
        meta["model_provider"], "scripted",
        "the configured provider: {meta}"
    );
    assert_eq!(
        meta["cli_version"], "0.169.0",
        "the installed codex's version: {meta}"
    );
    let count = |t: &str| {
        written
            .iter()
            .filter(|r| r["type"] == "event_msg" && r["payload"]["type"] == t)
            .count()
    };
    assert_eq!(count("task_started"), turns, "a task_started per turn");
    assert_eq!(count("task_complete"), turns, "a task_complete per turn");
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_exec_thread_resumed_in_codex_keeps_the_rollout_s_shapes_and_goes_on() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let server = ModelServer::start(Api::OpenAi, two_turns());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    let (wt, id) = launch(&sb, &repo, "codex", prompt, |cmd| {
        codex_setup(&sb, &server, cmd, "")
    });
    let real = rollouts(&sb).remove(0).1;
    // The thread as grove writes it back, next to the rollout it came from.
    let exported = sb.path().join("exported.jsonl");
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args([
        "export",
        &id,
        "--format",
        "codex",
        "-o",
        exported.to_str().unwrap(),
    ]);
    codex_setup(&sb, &server, &mut cmd, "");
    ok(&mut cmd);
    let ours = jsonl(&exported);
    assert_codex_session(&ours, 1);
    let (real_shapes, our_shapes) = (shapes(&real), shapes(&ours));
    assert!(
        real_shapes.is_subset(&our_shapes),
        "the real rollout's shapes {real_shapes:?} kept in {our_shapes:?}"
    );

    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["resume", &id, "--prompt", "Now sum it up"]);
    codex_setup(&sb, &server, &mut cmd, "");
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let calls = server.model_calls();
    assert_eq!(calls.len(), 5, "one answer for the new turn: {stderr}");
    let sent = calls[4].body["input"].to_string();
    assert_in_order(
        &sent,
        &[
            prompt,
            "grove-real-test",
            "No such file",
            "A notes.txt",
            "The note is in notes.txt.",
            "Now sum it up",
        ],
    );
    let thread_dir = wt.join(".agent/threads").join(&id);
    let mut want = expected(prompt, CODEX_TURN);
    want.push("user: Now sum it up".into());
    want.push("agent: All done: one note written.".into());
    assert_lines(&conversation(&thread_dir), &want);

    // The session grove wrote, as Codex left it after the new turn.
    assert_codex_session(&rollout_of(&sb, &written_session(&stderr)), 2);
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_thread_resumed_in_codex_goes_on_with_the_earlier_turn() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let anthropic = ModelServer::start(Api::Anthropic, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    let (wt, id) = launch(&sb, &repo, "claude-code", prompt, |cmd| {
        claude_setup(&sb, &anthropic, cmd)
    });
    let openai = ModelServer::start(Api::OpenAi, two_turns());
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args([
        "resume",
        &id,
        "--agent",
        "codex",
        "--prompt",
        "Now sum it up",
    ]);
    codex_setup(&sb, &openai, &mut cmd, "");
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let calls = openai.model_calls();
    assert_eq!(calls.len(), 1, "Codex answered the new prompt: {stderr}");
    let sent = calls[0].body["input"].to_string();
    assert_in_order(
        &sent,
        &[
            prompt,
            "grove-real-test",
            "No such file",
            "The note is in notes.txt.",
            "Now sum it up",
        ],
    );
    let thread_dir = wt.join(".agent/threads").join(&id);
    let mut want = expected(prompt, CLAUDE_TURN);
    want.push("user: Now sum it up".into());
    want.push("agent: All done: one note written.".into());
    assert_lines(&conversation(&thread_dir), &want);
    assert_codex_session(&rollout_of(&sb, &written_session(&stderr)), 2);
}

/// The scenario played by `codex exec` run by hand outside any repository;
/// its rollout and the rollout's records.
fn codex_exec_rollout(sb: &Sandbox) -> (PathBuf, Vec<Value>) {
    let server = ModelServer::start(Api::OpenAi, scenario());
    let dir = sb.dir("by-hand");
    let mut cmd = sb.agent("codex", &dir);
    cmd.args([
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "--",
        &scenario()[0].prompt,
    ]);
    codex_setup(sb, &server, &mut cmd, "");
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rollouts(sb).remove(0)
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_rollout_read_while_a_reply_waits_for_its_usage_counts_it_once_read_again() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let (rollout, records) = codex_exec_rollout(&sb);
    let want = codex_rollout_usage(std::slice::from_ref(&rollout));

    // Read as a capture would while Codex writes: the answer is in the
    // file, its usage not yet.
    let text = std::fs::read_to_string(&rollout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let answer = records
        .iter()
        .rposition(|r| r["type"] == "response_item" && r["payload"]["role"] == "assistant")
        .expect("the answer");
    let growing = sb.dir("growing").join(rollout.file_name().unwrap());
    std::fs::write(&growing, lines[..=answer].join("\n") + "\n").unwrap();
    let repo = sb.repo("r");
    let import = |sb: &Sandbox| {
        let out =
            run(sb
                .grove(&repo)
                .args(["import", "codex", growing.to_str().unwrap(), "--json"]));
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    import(&sb);
    std::fs::write(&growing, &text).unwrap();
    import(&sb);
    let rows = list_rows(&sb, &repo);
    assert_eq!(rows.len(), 1);
    let named: Value = TOKEN_COUNTS
        .iter()
        .zip(want)
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    assert_eq!(
        rows[0]["stats"]["tokens"], named,
        "the last reply's usage too"
    );
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_rollout_read_line_by_line_as_codex_writes_it_counts_every_response_s_usage_once() {
    let sb = Sandbox::new();
    if !sb.install_real_agents() {
        return;
    }
    let (rollout, _) = codex_exec_rollout(&sb);
    let want = codex_rollout_usage(std::slice::from_ref(&rollout));
    // A capture may come after any record Codex writes (a hook, the
    // follow-up): here after each one, so a call whose output or usage is
    // still to come is read before them, and again with them.
    let text = std::fs::read_to_string(&rollout).unwrap();
    let growing = sb.dir("growing").join(rollout.file_name().unwrap());
    let repo = sb.repo("r");
    let mut so_far = String::new();
    for line in text.lines() {
        so_far.push_str(line);
        so_far.push('\n');
        std::fs::write(&growing, &so_far).unwrap();
        let out =
            run(sb
                .grove(&repo)
                .args(["import", "codex", growing.to_str().unwrap(), "--json"]));
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let rows = list_rows(&sb, &repo);
    assert_eq!(rows.len(), 1);
    let named: Value = TOKEN_COUNTS
        .iter()
        .zip(want)
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    assert_eq!(rows[0]["stats"]["tokens"], named, "every response's usage");
    let thread_dir = repo
        .join(".agent/threads")
        .join(rows[0]["threadId"].as_str().unwrap());
    assert_lines(
        &conversation(&thread_dir),
        &expected(&scenario()[0].prompt, CODEX_TURN),
    );
}

/// A record the agent writes into its transcript, which the thread must
/// hold before the model answers the request that follows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Awaited {
    /// The user's prompt.
    Prompt(String),
    /// The result of the tool call with this id.
    Result(String),
    /// The agent's reply with this text (no request follows a turn's last
    /// one: looked for once the turn is over).
    Reply(String),
}

/// What a model request follows: the result it carries last, or the
/// prompt (one of `prompts`) that opens it. Codex's requests for a task's
/// title follow nothing of the session's.
pub(crate) fn awaited(api: Api, body: &Value, prompts: &[String]) -> Option<Awaited> {
    let named = |last: &Value| {
        let text = last.to_string();
        prompts
            .iter()
            .rev()
            .find(|p| text.contains(p.as_str()))
            .map(|p| Awaited::Prompt(p.clone()))
    };
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
            named(last)
        }
        Api::OpenAi => {
            if is_title_request(body) {
                return None;
            }
            let last = body["input"].as_array()?.last()?;
            if let Some(id) = last["call_id"].as_str()
                && last["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_output"))
            {
                return Some(Awaited::Result(id.to_string()));
            }
            named(last)
        }
    }
}

/// Whether message `m` (a line of messages.jsonl, or of `show --follow
/// --json`) is `what`: the prompt as a user message, a tool call's result
/// (completed or failed).
pub(crate) fn is_awaited(m: &Value, what: &Awaited) -> bool {
    match what {
        Awaited::Prompt(p) => m["role"] == "user" && m["content"].to_string().contains(p.as_str()),
        Awaited::Result(id) => m["toolCalls"].as_array().into_iter().flatten().any(|c| {
            c["toolCallId"] == id.as_str()
                && matches!(c["status"].as_str(), Some("completed" | "failed"))
        }),
        Awaited::Reply(text) => {
            m["role"] == "agent" && m["content"].to_string().contains(text.as_str())
        }
    }
}

/// Whether the thread holds `what`.
fn thread_holds(thread_dir: &Path, what: &Awaited) -> bool {
    let Ok(text) = std::fs::read_to_string(thread_dir.join("messages.jsonl")) else {
        return false;
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|m| is_awaited(&m, what))
}

/// When the agent wrote `what` into one of the transcripts under `dir`
/// (its record's own timestamp; the earliest, when a later session, a
/// resumed one, repeats it).
fn written_at(dir: &Path, what: &Awaited) -> Option<jiff::Timestamp> {
    let mut files = vec![dir.to_path_buf()];
    let mut first: Option<jiff::Timestamp> = None;
    while let Some(f) = files.pop() {
        if f.is_dir() {
            files.extend(
                std::fs::read_dir(&f)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path()),
            );
            continue;
        }
        if f.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines() {
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
                // Claude's assistant record, Codex's assistant message item.
                Awaited::Reply(text) => {
                    (v["type"] == "assistant"
                        || v["payload"]["type"] == "message" && v["payload"]["role"] == "assistant")
                        && v.to_string().contains(text.as_str())
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
            let at = v["timestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            if let (true, Some(at)) = (hit, at) {
                first = Some(first.map_or(at, |f| f.min(at)));
            }
        }
    }
    first
}

/// What the gate saw before one model answer.
#[derive(Debug)]
pub(crate) struct Seen {
    pub what: Awaited,
    /// When the thread held it (`None`: not within the bound).
    pub held: Option<(jiff::Timestamp, Instant)>,
    /// The agent's state `grove list` showed meanwhile.
    pub state: String,
}

impl Seen {
    /// From the agent's write of the record into one of the transcripts
    /// under `transcripts` to the thread holding it (none when the thread
    /// held it first: grove's copy of the opening prompt). Asked once the
    /// turn is over: an agent may write a record after the request that
    /// follows it (Claude Code's TUI its opening prompt).
    pub(crate) fn latency(&self, transcripts: &Path) -> Option<std::time::Duration> {
        let (at, _) = self.held?;
        let written = written_at(transcripts, &self.what)?;
        let ms = at.duration_since(written).as_millis().max(0);
        Some(std::time::Duration::from_millis(
            ms.try_into().unwrap_or(u64::MAX),
        ))
    }
}

/// A pause in a gated session: once the gate saw `after` records, the
/// next model answer waits until the test releases it (at most 60 s).
#[derive(Debug, Default)]
pub(crate) struct Pause {
    pub after: usize,
    pub reached: std::sync::atomic::AtomicBool,
    pub released: std::sync::atomic::AtomicBool,
}

/// What a gate watches: the thread (known once the task exists, so a task
/// `grove new --launch` makes can be watched), the prompts that open turns.
pub(crate) struct Watch {
    pub sb: std::sync::Arc<Sandbox>,
    pub api: Api,
    pub repo: PathBuf,
    pub thread: std::sync::Arc<std::sync::OnceLock<PathBuf>>,
    pub prompts: Vec<String>,
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    pub pause: Option<std::sync::Arc<Pause>>,
}

impl Watch {
    /// A watch of `thread_dir`'s session of the scenario, seen into `seen`.
    pub(crate) fn of(
        sb: std::sync::Arc<Sandbox>,
        api: Api,
        repo: PathBuf,
        thread_dir: Option<PathBuf>,
        seen: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    ) -> Watch {
        let thread = std::sync::Arc::new(std::sync::OnceLock::new());
        if let Some(dir) = thread_dir {
            let _ = thread.set(dir);
        }
        Watch {
            sb,
            api,
            repo,
            thread,
            prompts: two_turns().into_iter().map(|t| t.prompt).collect(),
            seen,
            pause: None,
        }
    }

    /// The gate for the model server: before each answer, waits (at most
    /// 10 s) until the thread holds the record the request follows, and
    /// notes how long after its write that was, and what `grove list`
    /// says; then waits at the pause, if any.
    pub(crate) fn gate(self) -> impl Fn(u64, &Value) + Send + Sync + 'static {
        move |_, body| {
            let Some(what) = awaited(self.api, body, &self.prompts) else {
                return;
            };
            let Some(thread_dir) = self.thread.get() else {
                return;
            };
            let seen = watch_for(&self.sb, &self.repo, thread_dir, what);
            let count = {
                let mut all = self.seen.lock().unwrap();
                all.push(seen);
                all.len()
            };
            if let Some(pause) = self.pause.as_ref().filter(|p| p.after == count) {
                use std::sync::atomic::Ordering;
                pause.reached.store(true, Ordering::SeqCst);
                let start = Instant::now();
                while !pause.released.load(Ordering::SeqCst)
                    && start.elapsed() < std::time::Duration::from_secs(60)
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
    }
}

/// Waits (at most 10 s) until the thread in `thread_dir` holds `what`, and
/// says when that was, and what `grove list` said then.
pub(crate) fn watch_for(sb: &Sandbox, repo: &Path, thread_dir: &Path, what: Awaited) -> Seen {
    let start = Instant::now();
    let mut held = None;
    while start.elapsed() < std::time::Duration::from_secs(10) {
        if thread_holds(thread_dir, &what) {
            held = Some((jiff::Timestamp::now(), Instant::now()));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let id = thread_dir.file_name().unwrap().to_string_lossy();
    let state = row_of(sb, repo, &id)["agentState"]["state"]
        .as_str()
        .unwrap_or("")
        .to_string();
    Seen { what, held, state }
}

/// Asserts that the gate saw each of `n` records reach the thread within a
/// second of its write into the transcripts under `transcripts`, the agent
/// `working` meanwhile.
#[track_caller]
pub(crate) fn assert_within_a_second(seen: &[Seen], n: usize, transcripts: &Path) {
    assert_eq!(seen.len(), n, "{seen:#?}");
    assert!(
        matches!(seen[0].what, Awaited::Prompt(_)),
        "the prompt first: {seen:#?}"
    );
    for s in seen {
        let latency = s.latency(transcripts);
        assert!(
            latency.is_some_and(|l| l < std::time::Duration::from_secs(1)),
            "{:?} reached the thread within 1 s of its write (took {latency:?}, written at {:?}): {seen:#?}",
            s.what,
            written_at(transcripts, &s.what)
        );
        assert_eq!(s.state, "working", "{seen:#?}");
    }
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
        Watch::of(
            sb.clone(),
            Api::Anthropic,
            repo.clone(),
            Some(thread_dir.clone()),
            seen.clone(),
        )
        .gate(),
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
    assert_within_a_second(&seen.lock().unwrap(), 4, &sb.path().join("claude/projects"));
    assert_lines(&conversation(&thread_dir), &expected(prompt, CLAUDE_TURN));
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
        Watch::of(
            sb.clone(),
            Api::OpenAi,
            repo.clone(),
            Some(thread_dir.clone()),
            seen.clone(),
        )
        .gate(),
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
    assert_within_a_second(&seen.lock().unwrap(), 4, &sb.path().join("codex/sessions"));
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
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
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
