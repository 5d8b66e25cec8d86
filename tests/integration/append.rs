//! Appending: stdin messages, locking under concurrency, crashes and torn tails, assets.

use std::io::Write;
use std::process::Stdio;

use base64::Engine as _;
use grove::store::{MessageReader, Store};
use sha2::{Digest, Sha256};

use crate::support::*;

fn thread_dir(repo: &std::path::Path, id: &str) -> std::path::PathBuf {
    repo.join(".agent/threads").join(id)
}

#[test]
fn stdin_messages_get_id_and_timestamp_and_keep_their_own() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let input = concat!(
        r#"{"role":"user","content":[{"type":"text","text":"one"}]}"#,
        "\n",
        r#"{"id":"mine","timestamp":"2025-02-14T10:30:00.000Z","role":"agent","content":[],"toolCalls":[{"toolCallId":"a","name":"x","status":"running"},{"toolCallId":"b","name":"y","status":"completed"}]}"#,
        "\n"
    );
    let out = run_with_stdin(
        sb.grove(&repo).args(["append", &id, "--stdin", "--json"]),
        input.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(json)
        .collect();
    assert_eq!(printed.len(), 2);
    assert_eq!(printed[1]["messageId"], "mine");
    assert_eq!(printed[1]["index"], 1);

    let lines = message_lines(&thread_dir(&repo, &id));
    assert_eq!(lines[0]["id"], printed[0]["messageId"]);
    assert!(uuid::Uuid::parse_str(lines[0]["id"].as_str().unwrap()).is_ok());
    assert!(lines[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[1]["id"], "mine");
    let meta = read_json(&thread_dir(&repo, &id).join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 2);
    assert_eq!(meta["stats"]["userMessageCount"], 1);
    assert_eq!(meta["stats"]["agentMessageCount"], 1);
    assert_eq!(meta["stats"]["toolCallCount"], 2);
}

#[test]
fn invalid_stdin_messages_are_usage_errors_naming_the_field() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let cases = [
        (r#"{"content":[]}"#, "role"),
        (r#"{"role":"robot","content":[]}"#, "role"),
        (r#"{"role":"user"}"#, "content"),
        (
            r#"{"role":"user","content":[{"type":"text"}]}"#,
            "content[0]",
        ),
        (
            r#"{"role":"user","content":[],"toolCalls":[{"name":"x","status":"done","toolCallId":"1"}]}"#,
            "toolCalls[0].status",
        ),
        (
            r#"{"role":"user","content":[],"toolCalls":[{"toolCallId":"","name":"x","status":"failed"}]}"#,
            "toolCallId",
        ),
        ("[1,2]", "expected a JSON object"),
        ("{not json", "not valid JSON"),
        ("", "no message"),
    ];
    for (input, needle) in cases {
        let out = run_with_stdin(
            sb.grove(&repo).args(["append", &id, "--stdin"]),
            input.as_bytes(),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{input} must fail");
        assert!(err.contains(needle), "{input}: {err}");
    }
    assert_eq!(
        std::fs::read(thread_dir(&repo, &id).join("messages.jsonl")).unwrap(),
        b""
    );
    let meta = read_json(&thread_dir(&repo, &id).join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 0);
}

#[test]
fn eight_processes_appending_500_messages_each_lose_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "concurrent");
    let children: Vec<_> = (0..8)
        .map(|writer| {
            let mut input = String::new();
            for n in 0..500 {
                // Lines of varied length, some long, so interleaving would show.
                let pad = "x".repeat((n * 37 + writer * 101) % 3000);
                input.push_str(&format!(
                    "{{\"id\":\"w{writer}-{n}\",\"role\":\"{}\",\"content\":[{{\"type\":\"text\",\"text\":\"{pad}\"}}]}}\n",
                    if n % 2 == 0 { "user" } else { "agent" }
                ));
            }
            let mut child = sb
                .grove(&repo)
                .args(["append", &id, "--stdin", "--no-fsync"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = thread_dir(&repo, &id);
    let mut seen = std::collections::HashSet::new();
    let mut per_writer = [0usize; 8];
    for item in MessageReader::open(&dir.join("messages.jsonl")).unwrap() {
        let m = item.expect("every line is valid");
        let w: usize = m.id[1..2].parse().unwrap();
        per_writer[w] += 1;
        assert!(seen.insert(m.id.clone()), "duplicate {}", m.id);
    }
    assert_eq!(seen.len(), 4000);
    assert_eq!(per_writer, [500; 8]);
    let text = std::fs::read_to_string(dir.join("messages.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 4000);
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 4000);
    assert_eq!(meta["stats"]["userMessageCount"], 2000);
    assert_eq!(meta["stats"]["agentMessageCount"], 2000);
}

#[test]
fn a_writer_killed_mid_append_leaves_only_readable_lines() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "crash");
    let dir = thread_dir(&repo, &id);
    // A writer appending batch after batch (each batch is checked whole,
    // then written), killed without warning at some moment of it.
    let batch = sb.path().join("batch.jsonl");
    let body = "y".repeat(200_000);
    let mut lines = String::new();
    for n in 0..4 {
        lines.push_str(&format!(
            "{{\"role\":\"agent\",\"content\":[{{\"type\":\"text\",\"text\":\"{body} {n}\"}}]}}\n"
        ));
    }
    std::fs::write(&batch, lines).unwrap();
    let mut cmd = std::process::Command::new("sh");
    sb.env(&mut cmd);
    cmd.arg("-c")
        .arg(r#"while :; do "$0" append "$1" --stdin --no-fsync < "$2" >/dev/null 2>&1; done"#)
        .arg(GROVE)
        .arg(&id)
        .arg(&batch)
        .current_dir(&repo)
        .stdin(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().unwrap();
    // Let it append for a while, then kill it (and the append in flight).
    let log = dir.join("messages.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) < 5_000_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "writer made no progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();

    let mut reader = MessageReader::open(&log).unwrap();
    let mut complete = 0;
    for m in reader.by_ref() {
        m.expect("complete lines are valid");
        complete += 1;
    }
    assert!(complete >= 20, "{complete}");

    // What the kill left after the last newline, if it split a write (rare
    // but possible for a 200 KB line): set aside with the torn bytes below.
    let logged = std::fs::read(&log).unwrap();
    let left_by_kill = logged[logged
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1)..]
        .to_vec();
    // Simulate the torn write a crash can leave (a kill rarely splits a write()).
    let torn = b"{\"id\":\"half\",\"role\":\"ag";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(torn)
        .unwrap();
    let out =
        run(sb
            .grove(&repo)
            .args(["append", &id, "--role", "user", "--text", "after the crash"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("incomplete last line"));

    let messages: Vec<_> = MessageReader::open(&log)
        .unwrap()
        .map(|m| m.expect("valid after repair"))
        .collect();
    assert_eq!(messages.len(), complete + 1);
    assert_eq!(
        messages.last().unwrap().id.len(),
        36,
        "the new message is last"
    );
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'));
    let side: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("messages.jsonl.torn-")
        })
        .collect();
    assert_eq!(side.len(), 1, "the torn bytes are kept aside");
    assert_eq!(
        std::fs::read(&side[0]).unwrap(),
        [left_by_kill.as_slice(), torn.as_slice()].concat()
    );
    // The stats were recounted: they match the log even though the killed
    // writer may have died between its line and thread.json.
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], (complete + 1) as u64);
}

#[test]
fn stats_are_recounted_when_the_log_was_changed_behind_grove() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "a"]));
    // Another tool appends without updating stats.
    let log = thread_dir(&repo, &id).join("messages.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(b"{\"id\":\"ext\",\"role\":\"agent\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"content\":[],\"toolCalls\":[{\"toolCallId\":\"1\",\"name\":\"n\",\"status\":\"completed\"}]}\n")
        .unwrap();
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "b"]));
    let meta = read_json(&thread_dir(&repo, &id).join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 3);
    assert_eq!(meta["stats"]["agentMessageCount"], 1);
    assert_eq!(meta["stats"]["toolCallCount"], 1);
}

#[test]
fn token_totals_an_older_grove_did_not_keep_are_counted_at_the_next_append() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let agent = |id: &str, input: u64| {
        format!(
            "{{\"id\":\"{id}\",\"role\":\"agent\",\"content\":[{{\"type\":\"text\",\"text\":\"x\"}}],\"tokens\":{{\"input\":{input},\"output\":2,\"cacheRead\":5}}}}\n"
        )
    };
    append_stdin(&sb, &repo, &id, &agent("a1", 10));
    let path = thread_dir(&repo, &id).join("thread.json");
    let meta = read_json(&path);
    assert_eq!(
        meta["stats"]["tokens"],
        serde_json::json!({"input": 10, "output": 2, "cacheRead": 5, "cacheCreation": 0, "reasoning": 0})
    );
    // thread.json as an older grove wrote it: no token totals.
    let mut old = meta.clone();
    old["stats"].as_object_mut().unwrap().remove("tokens");
    std::fs::write(&path, serde_json::to_vec_pretty(&old).unwrap()).unwrap();
    append_stdin(&sb, &repo, &id, &agent("a2", 7));
    let meta = read_json(&path);
    assert_eq!(
        meta["stats"]["tokens"]["input"], 17,
        "both messages counted"
    );
    assert_eq!(meta["stats"]["tokens"]["cacheRead"], 10);
    // A user-only thread keeps no totals.
    let other = new_thread(&sb, &repo, "u");
    ok(sb
        .grove(&repo)
        .args(["append", &other, "--role", "user", "--text", "a"]));
    let meta = read_json(&thread_dir(&repo, &other).join("thread.json"));
    assert!(meta["stats"].get("tokens").is_none(), "{}", meta["stats"]);
}

#[test]
fn inline_images_become_content_addressed_assets_once() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "img");
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\nnot really a png but bytes".to_vec();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let hash: String = Sha256::digest(&png)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let name = format!("sha256-{hash}.png");
    let inputs = [
        format!(
            r#"{{"role":"user","content":[{{"type":"image","mimeType":"image/png","data":"{b64}"}}]}}"#
        ),
        format!(
            r#"{{"role":"user","content":[{{"type":"image","data":"data:image/png;base64,{b64}"}}]}}"#
        ),
        format!(
            r#"{{"role":"user","content":[{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{b64}"}}}}]}}"#
        ),
    ];
    for input in &inputs {
        append_stdin(&sb, &repo, &id, input);
    }
    let dir = thread_dir(&repo, &id);
    let assets: Vec<_> = std::fs::read_dir(dir.join("assets"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        assets,
        vec![std::ffi::OsString::from(&name)],
        "same bytes, one file"
    );
    assert_eq!(std::fs::read(dir.join("assets").join(&name)).unwrap(), png);
    for line in message_lines(&dir) {
        let block = &line["content"][0];
        assert_eq!(block["assetRef"], name.as_str());
        assert_eq!(block["mimeType"], "image/png");
        assert!(
            block.get("data").is_none() && block.get("source").is_none(),
            "{block}"
        );
    }
    let bad = r#"{"role":"user","content":[{"type":"image","mimeType":"image/png","data":"***"}]}"#;
    let out = run_with_stdin(
        sb.grove(&repo).args(["append", &id, "--stdin"]),
        bad.as_bytes(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("base64"));
}

#[test]
fn library_append_without_fsync_and_store_listing() {
    let sb = Sandbox::new();
    let store = Store::for_project(&sb.dir("p"));
    let meta = grove::threads::new_meta("lib", "x", Default::default());
    let thread = store.create_thread(&meta).unwrap();
    for i in 0..3 {
        let m = grove::atsf::Message::new(
            grove::atsf::Role::Agent,
            vec![grove::atsf::ContentBlock::text(format!("{i}"))],
        );
        let appended = thread
            .append(m, grove::store::AppendOptions { fsync: false })
            .unwrap();
        assert_eq!(appended.index, i);
    }
    let listing = store.list().unwrap();
    assert_eq!(listing.threads.len(), 1);
    assert_eq!(listing.threads[0].meta.stats.agent_message_count, 3);
}

/// An agent hook can pipe what it has: Anthropic-shaped messages (thinking
/// with `thinking`, `tool_use` with object `input`, `tool_result` later).
#[test]
fn append_stdin_takes_anthropic_shaped_messages() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "hooked");
    let turn = serde_json::json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [
        {"type": "thinking", "thinking": "Read the file first.", "signature": "EqQBCkYIBxgC"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "src/a.rs"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 12, "output_tokens": 5}});
    let results = serde_json::json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "fn a() {}"}]});
    let prompt = serde_json::json!({"role": "user", "content": "Thanks, now test it"});
    append_stdin(&sb, &dir, &id, &format!("{turn}\n{results}\n{prompt}\n"));
    let thread = dir.join(".agent/threads").join(&id);
    let lines = message_lines(&thread);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert_eq!(lines[0]["role"], "agent");
    assert_eq!(lines[0]["content"][0]["type"], "thinking");
    assert_eq!(lines[0]["content"][0]["text"], "Read the file first.");
    assert_eq!(lines[0]["content"][0]["signature"], "EqQBCkYIBxgC");
    assert_eq!(lines[0]["toolCalls"][0]["toolCallId"], "toolu_01");
    assert_eq!(
        lines[0]["toolCalls"][0]["input"],
        "{\"file_path\":\"src/a.rs\"}"
    );
    assert_eq!(lines[0]["tokens"]["output"], 5);
    assert_eq!(lines[1]["completesMessage"], lines[0]["id"]);
    assert_eq!(lines[1]["toolCalls"][0]["status"], "completed");
    assert_eq!(lines[1]["toolCalls"][0]["output"], "fn a() {}");
    assert_eq!(lines[2]["content"][0]["text"], "Thanks, now test it");
    let shown = json(&ok(sb.grove(&dir).args(["show", &id, "--json"])));
    assert!(shown["errors"].as_array().unwrap().is_empty(), "{shown}");
    ok(sb.grove(&dir).args(["validate"]));

    // A result for a call the thread lacks is refused, and nothing written.
    let stray = serde_json::json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_99", "content": "?"}]});
    let out = run_with_stdin(
        sb.grove(&dir).args(["append", &id, "--stdin"]),
        format!("{prompt}\n{stray}\n").as_bytes(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("toolu_99"));
    assert_eq!(message_lines(&thread).len(), 3);
}
