//! Import fidelity: a record grove cannot fully use costs only itself, a
//! path with nothing importable says what was expected, every format goes
//! through the one importer interface.

use std::path::Path;

use crate::support::*;

fn rollout(dir: &Path, n: usize, image_url: serde_json::Value) {
    let id = format!("019a0000-0000-7000-8000-00000000000{n}");
    let lines = [
        serde_json::json!({"timestamp": "2025-10-29T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": id, "cwd": "/tmp/w", "cli_version": "0.98.0"}}),
        serde_json::json!({"timestamp": "2025-10-29T00:00:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": format!("prompt {n}")},
                {"type": "input_image", "image_url": image_url}]}}),
        serde_json::json!({"timestamp": "2025-10-29T00:00:02.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": format!("answer {n}")}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(
        dir.join(format!("rollout-2025-10-29T00-00-0{n}-{id}.jsonl")),
        text,
    )
    .unwrap();
}

#[test]
fn an_image_grove_cannot_store_is_a_placeholder_and_every_rollout_still_imports() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.dir("sessions");
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let urls = [
        serde_json::json!(png),
        serde_json::json!(png),
        serde_json::Value::Null,
        serde_json::json!("https://example.com/shot.png"),
        serde_json::json!("data:image/png;base64,<redacted>"),
        serde_json::json!(png),
    ];
    for (n, url) in urls.into_iter().enumerate() {
        rollout(&src, n + 1, url);
    }
    let out = run(sb.grove(&repo).args(["import", "codex"]).arg(&src));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "something was kept as a placeholder: {err}"
    );
    for n in [3, 4, 5] {
        let file = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(&format!("000{n}.jsonl")))
            .unwrap();
        assert!(
            err.contains(&file.display().to_string()),
            "names the file of rollout {n}: {err}"
        );
    }
    let rows = list_rows(&sb, &repo);
    assert_eq!(rows.len(), 6, "every rollout imported: {rows:?}");
    let text_of = |n: usize| {
        let id = format!("codex-019a0000-0000-7000-8000-00000000000{n}");
        let shown = json(&ok(sb.grove(&repo).args(["show", &id, "--json"])));
        shown["messages"][0]["content"].clone()
    };
    assert_eq!(text_of(1)[1]["type"], "image");
    assert!(text_of(1)[1]["assetRef"].is_string());
    assert_eq!(text_of(3)[1]["type"], "text");
    assert_eq!(
        text_of(4)[1]["text"],
        "[image: https://example.com/shot.png]"
    );
    assert_eq!(
        text_of(5)[1]["unimported"]["data"],
        "data:image/png;base64,<redacted>"
    );
    // The human summary is printed even so.
    assert!(err.contains("6 thread(s) imported: 6 created"), "{err}");
    // Every placeholder is valid ATSF: no image block without an asset.
    assert_valid(&sb, &repo);
}

#[test]
fn a_path_with_nothing_importable_says_what_layout_was_expected() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let empty = sb.dir("empty");
    let err = fails_with(sb.grove(&repo).args(["import", "claude"]).arg(&empty), 1);
    assert!(err.contains("nothing to import as claude"), "{err}");
    assert!(err.contains(".jsonl"), "names the layout: {err}");

    // A Codex directory given to `import claude`.
    let codex = sb.path().join("codex");
    copy_tree(&fixtures().join("codex"), &codex);
    let err = fails_with(sb.grove(&repo).args(["import", "claude"]).arg(&codex), 1);
    assert!(err.contains("nothing to import as claude"), "{err}");

    // HQ's workspace directory instead of the HQ root: its checkpoints are found.
    let hq = sb.path().join("hq");
    copy_tree(&fixtures().join("hq"), &hq);
    let out = run(sb
        .grove(&repo)
        .args(["import", "hq"])
        .arg(hq.join("workspace")));
    // (the fixture holds one malformed checkpoint on purpose: exit 4)
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let imported = list_rows(&sb, &repo).len();
    assert!(imported > 0);
    // A directory of something else entirely.
    let other = sb.dir("other");
    std::fs::write(other.join("notes.txt"), "hello").unwrap();
    for format in ["codex", "hq", "amp", "sage", "dagent"] {
        let err = fails_with(sb.grove(&repo).args(["import", format]).arg(&other), 1);
        assert!(
            err.contains(&format!("nothing to import as {format}")) && err.contains("expected"),
            "{format}: {err}"
        );
    }
    assert_eq!(
        list_rows(&sb, &repo).len(),
        imported,
        "nothing more was written"
    );
}

/// Copies fixture `fixture` and imports it as `format` with nothing left
/// out: the copy and the summary.
fn import_fixture(
    sb: &Sandbox,
    repo: &Path,
    format: &str,
    fixture: &str,
) -> (std::path::PathBuf, serde_json::Value) {
    let src = sb.path().join(fixture.replace('/', "-"));
    copy_tree(&fixtures().join(fixture), &src);
    let out = import_json(sb, repo, format, &src);
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    (src, out)
}

/// `grove validate` finds nothing that breaks the spec.
fn assert_valid(sb: &Sandbox, repo: &Path) {
    let out = run(sb.grove(repo).args(["validate"]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn show_messages(sb: &Sandbox, dir: &Path, id: &str) -> Vec<serde_json::Value> {
    json(&ok(sb.grove(dir).args(["show", id, "--json"])))["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn import_json(sb: &Sandbox, dir: &Path, format: &str, path: &Path) -> serde_json::Value {
    let out = run(sb.grove(dir).args(["import", format, "--json"]).arg(path));
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

fn first_text(m: &serde_json::Value) -> String {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|b| b["text"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Messages that only stand for a record grove did not map.
fn placeholders(messages: &[serde_json::Value]) -> usize {
    messages
        .iter()
        .filter(|m| first_text(m).starts_with("[Claude Code"))
        .count()
}

fn set_old(path: &Path) {
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
}

const REAL_21: &str = "claude-cb88ae13-898d-4076-aeb5-bc37191c5d2e";
const SHAPES_21: &str = "claude-5f1c2d3e-0000-4000-8000-0000000021a0";

#[test]
fn claude_2_1_transcripts_keep_every_prompt_and_call_and_hardly_a_placeholder() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    import_fixture(&sb, &repo, "claude", "claude/v2.1");

    // The real 2.1.14 session: its prompt, its four calls with their results.
    let real = show_messages(&sb, &repo, REAL_21);
    assert_eq!(real[0]["role"], "user");
    let calls: Vec<&serde_json::Value> = real
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|c| c["status"] == "completed"));
    // One API response in two records (msg_01GZib…) counts its usage once.
    let output: u64 = real
        .iter()
        .filter_map(|m| m["tokens"]["output"].as_u64())
        .sum();
    assert_eq!(output, 1 + 25 + 1 + 25 + 1 + 2);
    // The stop hook's feedback is not the user speaking.
    assert!(
        real.iter()
            .any(|m| m["role"] == "system" && first_text(m).starts_with("Stop hook feedback"))
    );
    assert_eq!(real[0]["claudeRecords"][0]["type"], "queue-operation");

    let shapes = show_messages(&sb, &repo, SHAPES_21);
    let all = real.len() + shapes.len();
    assert!(
        placeholders(&real) + placeholders(&shapes) <= all * 2 / 100,
        "at most 2% placeholders"
    );
    assert_eq!(placeholders(&shapes), 0);
}

#[test]
fn claude_2_1_records_map_to_conversation_or_travel_with_a_message() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.path().join("v2.1");
    copy_tree(&fixtures().join("claude/v2.1"), &src);
    let file = src.join("5f1c2d3e-0000-4000-8000-0000000021a0.jsonl");
    set_old(&file);
    let out = import_json(&sb, &repo, "claude", &file);
    assert_eq!(
        out["records"]["summary"]["skipped"], 1,
        "another session's summary"
    );
    let row = row_of(&sb, &repo, SHAPES_21);
    assert_eq!(
        row["title"], "cart-coupon-fix",
        "the name given with /rename"
    );
    let m = show_messages(&sb, &repo, SHAPES_21);
    let by_id = |id: &str| m.iter().find(|x| x["id"] == id).unwrap().clone();
    let texts: Vec<String> = m.iter().map(first_text).collect();
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("Refactor the payment gateway"))
    );

    // Thinking keeps its signature.
    let a1 = by_id("a-0001");
    assert_eq!(a1["content"][0]["type"], "thinking");
    assert!(
        a1["content"][0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("EqQB")
    );
    // One response in three records: usage on the first only.
    assert_eq!(a1["tokens"]["input"], 3);
    assert!(by_id("a-0002")["tokens"].is_null());
    assert!(by_id("a-0003")["tokens"].is_null());
    let input: u64 = m.iter().filter_map(|x| x["tokens"]["input"].as_u64()).sum();
    assert_eq!(input, 3 + 1 + 1 + 1 + 1 + 2 + 1 + 5);

    // The screenshot in a tool result is an asset referenced from the call.
    let shot = &by_id("a-0005")["toolCalls"][0];
    assert_eq!(shot["output"], "Took the screenshot of the current page.");
    let image = &shot["outputContent"][1];
    assert_eq!(image["type"], "image");
    let asset = image["assetRef"].as_str().unwrap();
    let dir = repo.join(".agent/threads").join(SHAPES_21);
    assert!(dir.join("assets").join(asset).is_file());
    assert_eq!(shot["toolUseResult"][1]["assetRef"], asset);
    let read = &by_id("a-0006")["toolCalls"][0];
    assert!(read["toolUseResult"]["file"]["assetRef"].is_string());
    // No image data stays inline anywhere in the log.
    let log = std::fs::read_to_string(dir.join("messages.jsonl")).unwrap();
    assert!(!log.contains("iVBORw0KGgo"), "base64 left in the log");

    // What the user typed while the agent worked is a prompt.
    let queued = by_id("q-0001");
    assert_eq!(queued["role"], "user");
    assert_eq!(first_text(&queued), "also add a test for it");
    // An API error and a compaction are said by the system.
    assert_eq!(
        first_text(&by_id("s-0001")),
        "API error 529: Overloaded (retry 1 of 10)"
    );
    assert_eq!(by_id("s-0001")["role"], "system");
    assert_eq!(by_id("u-0007")["role"], "system", "isCompactSummary");
    assert!(first_text(&by_id("c-0001")).starts_with("Conversation compacted (manual"));
    // Bookkeeping travels on the next message.
    let kinds = |x: &serde_json::Value| -> Vec<String> {
        x["claudeRecords"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        kinds(&by_id("u-0001")),
        ["file-history-snapshot", "permission-mode", "progress"]
    );
    assert!(kinds(&queued).contains(&"last-prompt".to_string()));
    assert!(kinds(&queued).contains(&"ai-title".to_string()));
    assert_eq!(
        kinds(&by_id("c-0001")),
        ["mode", "worktree-state", "pr-link"]
    );
    let subtypes: Vec<&str> = queued["claudeRecords"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["subtype"].as_str())
        .collect();
    assert_eq!(subtypes, ["stop_hook_summary", "turn_duration"]);
    assert_eq!(placeholders(&m), 0);
    // The records after the last message wait on the thread for the next one.
    let meta = read_json(&dir.join("thread.json"));
    let waiting: Vec<&str> = meta["metadata"]["import"]["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["custom-title", "summary"]);
    // Every call has its result and its duration.
    for x in &m {
        for c in x["toolCalls"].as_array().into_iter().flatten() {
            assert_eq!(c["status"], "completed", "{c}");
            assert!(c["duration"].as_u64().is_some(), "{c}");
        }
    }
}

/// What a thread says, without what differs between two imports of the same
/// source (when it was imported).
fn conversation(sb: &Sandbox, dir: &Path, id: &str) -> Vec<serde_json::Value> {
    show_messages(sb, dir, id)
}

#[test]
fn importing_line_by_line_reads_only_new_lines_and_gives_the_same_thread() {
    for (name, id) in [
        ("5f1c2d3e-0000-4000-8000-0000000021a0.jsonl", SHAPES_21),
        ("cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl", REAL_21),
    ] {
        let text = std::fs::read_to_string(fixtures().join("claude/v2.1").join(name)).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();

        // All at once.
        let whole = Sandbox::new();
        let whole_repo = whole.repo("r");
        let file = whole.dir("src").join(name);
        std::fs::write(&file, &text).unwrap();
        import_json(&whole, &whole_repo, "claude", &file);
        let expected = conversation(&whole, &whole_repo, id);

        // One line at a time, as a hook importing after every record would.
        let sb = Sandbox::new();
        let repo = sb.repo("r");
        let file = sb.dir("src").join(name);
        let mut tails = 0;
        for n in 1..=lines.len() {
            std::fs::write(&file, lines[..n].concat()).unwrap();
            let out = import_json(&sb, &repo, "claude", &file);
            let source = &out["sources"][0];
            if source["read"] == "tail" {
                tails += 1;
                assert!(source["from"].as_u64().unwrap() > 0);
            }
            assert!(source["restarted"].is_null(), "line {n}: {source}");
        }
        assert!(tails > lines.len() / 2, "{name}: {tails} tails");
        let got = conversation(&sb, &repo, id);
        assert_eq!(got.len(), expected.len(), "{name}");
        for (a, b) in got.iter().zip(&expected) {
            assert_eq!(a, b, "{name}");
        }
        let meta = |sb: &Sandbox, repo: &Path| {
            let m = read_json(&repo.join(".agent/threads").join(id).join("thread.json"));
            (
                m["title"].clone(),
                m["stats"].clone(),
                m["metadata"]["import"]["waiting"].clone(),
                {
                    let _ = sb;
                },
            )
        };
        assert_eq!(meta(&sb, &repo), meta(&whole, &whole_repo), "{name}");
        // Nothing new: nothing read, nothing written.
        let agent = repo.join(".agent");
        let before = snapshot(&agent);
        let out = import_json(&sb, &repo, "claude", &file);
        assert_eq!(
            snapshot(&agent),
            before,
            "{name}: re-import changes no byte"
        );
        assert_ne!(out["sources"][0]["read"], "whole");
    }
}

#[test]
fn a_rewritten_transcript_is_read_whole_again_and_nothing_is_duplicated() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let text = std::fs::read_to_string(
        fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl"),
    )
    .unwrap();
    let file = sb
        .dir("src")
        .join("cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl");
    std::fs::write(&file, &text).unwrap();
    import_json(&sb, &repo, "claude", &file);
    let count = show_messages(&sb, &repo, REAL_21).len();
    // The same length, one byte changed early on: the prefix no longer hashes the same.
    std::fs::write(&file, text.replacen("Read test.txt", "Read TEST.txt", 1)).unwrap();
    let out = import_json(&sb, &repo, "claude", &file);
    assert_eq!(out["sources"][0]["read"], "whole");
    assert_eq!(show_messages(&sb, &repo, REAL_21).len(), count);
    // Truncated (a rewrite): read whole, nothing lost or doubled.
    let half: String = text.split_inclusive('\n').take(5).collect();
    std::fs::write(&file, half).unwrap();
    let out = import_json(&sb, &repo, "claude", &file);
    assert_eq!(out["sources"][0]["read"], "whole");
    assert_eq!(show_messages(&sb, &repo, REAL_21).len(), count);
}

#[test]
fn a_call_stored_pending_gets_its_result_when_the_session_goes_on() {
    let lines = |items: &[serde_json::Value]| -> String {
        items.iter().map(|l| format!("{l}\n")).collect()
    };
    let base = serde_json::json!({"sessionId": "9e9e9e9e-0000-4000-8000-000000000012",
        "cwd": "/w", "version": "2.1.200", "isSidechain": false});
    let with = |mut v: serde_json::Value| {
        for (k, x) in base.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let first = [
        with(
            serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": null,
            "timestamp": "2026-03-01T10:00:00.000Z",
            "message": {"role": "user", "content": "Run the tests"}}),
        ),
        with(
            serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1",
            "timestamp": "2026-03-01T10:00:02.000Z",
            "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                    "input": {"command": "cargo test"}}]}}),
        ),
    ];
    let rest = [
        with(
            serde_json::json!({"type": "user", "uuid": "u2", "parentUuid": "a1",
            "timestamp": "2026-03-01T12:30:00.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": "test result: ok. 42 passed"}]},
            "toolUseResult": {"stdout": "test result: ok. 42 passed", "stderr": ""}}),
        ),
        with(
            serde_json::json!({"type": "assistant", "uuid": "a2", "parentUuid": "u2",
            "timestamp": "2026-03-01T12:30:05.000Z",
            "message": {"id": "msg_2", "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": "All 42 pass."}]}}),
        ),
    ];
    let id = "claude-9e9e9e9e-0000-4000-8000-000000000012";
    // Incremental (a cursor), then again from a fresh home (no cursor: the
    // whole file, appended to the thread that has the call pending).
    for fresh_home in [false, true] {
        let sb = Sandbox::new();
        let repo = sb.repo("r");
        let file = sb
            .dir("src")
            .join("9e9e9e9e-0000-4000-8000-000000000012.jsonl");
        std::fs::write(&file, lines(&first)).unwrap();
        set_old(&file);
        import_json(&sb, &repo, "claude", &file);
        let before = show_messages(&sb, &repo, id);
        assert_eq!(before[1]["toolCalls"][0]["status"], "pending");
        std::fs::write(&file, lines(&first) + &lines(&rest)).unwrap();
        if fresh_home {
            std::fs::remove_dir_all(sb.grove_home().join("imports")).unwrap();
        }
        let out = import_json(&sb, &repo, "claude", &file);
        assert_eq!(
            out["sources"][0]["read"],
            if fresh_home { "whole" } else { "tail" }
        );
        let m = show_messages(&sb, &repo, id);
        assert_eq!(m.len(), 4, "{m:#?}");
        let done = &m[2];
        assert_eq!(done["role"], "agent");
        assert_eq!(done["completesMessage"], "a1");
        assert_eq!(done["toolCalls"][0]["toolCallId"], "toolu_1");
        assert_eq!(done["toolCalls"][0]["status"], "completed");
        assert_eq!(done["toolCalls"][0]["output"], "test result: ok. 42 passed");
        assert_eq!(m[3]["id"], "a2");
        // The call counts once.
        assert_eq!(row_of(&sb, &repo, id)["stats"]["toolCallCount"], 1);
        // Again: nothing more.
        std::fs::remove_dir_all(sb.grove_home().join("imports")).ok();
        import_json(&sb, &repo, "claude", &file);
        assert_eq!(show_messages(&sb, &repo, id).len(), 4);
    }
}

const CODEX_15X: &str = "codex-019d4a2b-7c10-7e21-9a3b-5c6d7e8f9a0b";

#[test]
fn codex_0_15x_outputs_tokens_injected_context_and_compaction() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let (_, out) = import_fixture(&sb, &repo, "codex", "codex/v0.15x");
    assert_eq!(
        out["records"]["event_msg item_completed"]["skipped"], 2,
        "duplicates"
    );

    let m = show_messages(&sb, &repo, CODEX_15X);
    // Injected context is the system's, by its content_item_kinds; the
    // prompt beside AGENTS.md in one message is the user's.
    assert_eq!(m[0]["role"], "system");
    assert!(first_text(&m[1]).starts_with("<recommended_plugins>"));
    assert_eq!(m[1]["role"], "system");
    assert_eq!(m[2]["role"], "system");
    assert_eq!(m[3]["role"], "user");
    let prompt = "Invoices round 2.675 to 2.67; fix the rounding and show the invoice page.";
    assert_eq!(first_text(&m[3]), prompt);
    let row = row_of(&sb, &repo, CODEX_15X);
    assert!(
        row["title"]
            .as_str()
            .unwrap()
            .starts_with("Invoices round 2.675")
    );

    let call = |name: &str, n: usize| -> serde_json::Value {
        m.iter()
            .flat_map(|x| x["toolCalls"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["name"] == name)
            .nth(n)
            .unwrap()
    };
    // Process exited with code 2: failed; 0: completed.
    assert_eq!(call("exec_command", 0)["status"], "failed");
    assert_eq!(call("exec_command", 0)["exitCode"], 2);
    assert_eq!(call("exec_command", 1)["status"], "completed");
    assert_eq!(call("apply_patch", 0)["status"], "completed");
    assert!(
        call("apply_patch", 0)["output"]
            .as_str()
            .unwrap()
            .starts_with("Success.")
    );
    // An output of content items: text, and the image as an asset.
    let shot = call("mcp__playwright__browser_take_screenshot", 0);
    assert_eq!(
        shot["output"],
        "Took a screenshot of http://localhost:8000/invoice/42"
    );
    let asset = shot["outputContent"][1]["assetRef"].as_str().unwrap();
    let dir = repo.join(".agent/threads").join(CODEX_15X);
    assert!(dir.join("assets").join(asset).is_file());
    // {content, success: false}: failed, its text kept.
    let pr = call("mcp__github__create_pull_request", 0);
    assert_eq!(pr["status"], "failed");
    assert!(pr["output"].as_str().unwrap().contains("403"));
    // Token figures: on the message they follow, as named counts, and the
    // thread's totals. The answer carries what the running totals grew by
    // since the first call's (the responses between gave no figures).
    let first_call = m
        .iter()
        .find(|x| x["toolCalls"][0]["toolCallId"] == "call_test1")
        .unwrap();
    assert_eq!(
        first_call["tokens"],
        serde_json::json!({"input": 18211, "output": 96, "cacheRead": 11008, "reasoning": 40})
    );
    let answer = m
        .iter()
        .find(|x| first_text(x).starts_with("Rounding now"))
        .unwrap();
    assert_eq!(
        answer["tokens"],
        serde_json::json!({
            "input": 61004 - 18211, "output": 512 - 96,
            "cacheRead": 40960 - 11008, "reasoning": 128 - 40
        })
    );
    let meta = read_json(&dir.join("thread.json"));
    let totals = serde_json::json!({
        "input": 61004, "output": 512, "cacheRead": 40960, "cacheCreation": 0, "reasoning": 128
    });
    assert_eq!(meta["stats"]["tokens"], totals);
    assert_eq!(meta["metadata"]["import"]["tokens"]["input"], 61004);
    assert_eq!(meta["metadata"]["import"]["tokens"]["reasoning"], 128);
    assert_eq!(meta["metadata"]["codex"]["turnContext"]["effort"], "high");
    // A compaction with an empty message says what it kept, its image an asset.
    let compacted = m
        .iter()
        .find(|x| first_text(x).starts_with("Conversation compacted"))
        .unwrap();
    assert_eq!(compacted["role"], "system");
    let blocks = compacted["content"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["text"].as_str().is_some_and(|t| t.contains(prompt)))
    );
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["assetRef"].is_string())
    );
    assert!(!m.iter().any(|x| first_text(x).trim() == "Compacted:"));
    let log = std::fs::read_to_string(dir.join("messages.jsonl")).unwrap();
    assert!(!log.contains("iVBORw0KGgo"), "base64 left in the log");

    // A Desktop rollout that keeps only events: its items are the conversation.
    let desktop = show_messages(&sb, &repo, "codex-019d4a2c-0000-7000-8000-00000000dd01");
    assert_eq!(desktop.len(), 2);
    assert_eq!(desktop[0]["role"], "user");
    assert_eq!(
        first_text(&desktop[1]),
        "src/round.py and tests/test_round.py."
    );

    // A real 0.77 rollout: AGENTS.md and the environment are context, not the title.
    let real = fixtures().join("codex/real");
    let out = import_json(&sb, &repo, "codex", &real);
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    let m = show_messages(&sb, &repo, "codex-019b64e5-57fa-7463-b644-fba7e456f905");
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "system", "user"]);
    let row = row_of(&sb, &repo, "codex-019b64e5-57fa-7463-b644-fba7e456f905");
    assert!(
        row["title"]
            .as_str()
            .unwrap()
            .starts_with("can you analyse the MD files")
    );
}

#[test]
fn a_codex_rollout_imported_line_by_line_gives_the_same_thread() {
    let name = "rollout-2026-09-14T09-00-00-019d4a2b-7c10-7e21-9a3b-5c6d7e8f9a0b.jsonl";
    let text =
        std::fs::read_to_string(fixtures().join("codex/v0.15x/2026/09/14").join(name)).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let whole = Sandbox::new();
    let whole_repo = whole.repo("r");
    let file = whole.dir("src").join(name);
    std::fs::write(&file, &text).unwrap();
    import_json(&whole, &whole_repo, "codex", &file);
    // Token figures may land on the thread's totals instead of a message
    // already written: the rest is the same.
    let strip = |mut m: Vec<serde_json::Value>| {
        for x in m.iter_mut() {
            x.as_object_mut().unwrap().remove("tokens");
        }
        m
    };
    let expected = strip(show_messages(&whole, &whole_repo, CODEX_15X));

    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.dir("src").join(name);
    let mut tails = 0;
    for n in 1..=lines.len() {
        std::fs::write(&file, lines[..n].concat()).unwrap();
        let out = import_json(&sb, &repo, "codex", &file);
        tails += usize::from(out["sources"][0]["read"] == "tail");
        assert!(out["sources"][0]["restarted"].is_null());
    }
    assert!(tails > lines.len() / 2);
    assert_eq!(strip(show_messages(&sb, &repo, CODEX_15X)), expected);
}

#[test]
fn a_codex_call_stored_pending_gets_its_output_later() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let rec = |t: &str, kind: &str, payload: serde_json::Value| {
        format!(
            "{}\n",
            serde_json::json!({"timestamp": t, "type": kind, "payload": payload})
        )
    };
    let head = rec(
        "2026-09-01T10:00:00Z",
        "session_meta",
        serde_json::json!({"id": "019d0000-0000-7000-8000-0000000000aa", "cwd": "/w"}),
    ) + &rec(
        "2026-09-01T10:00:01Z",
        "response_item",
        serde_json::json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "build it"}]}),
    ) + &rec(
        "2026-09-01T10:00:02Z",
        "response_item",
        serde_json::json!({"type": "function_call", "name": "exec_command",
                "arguments": "{\"cmd\":\"make\"}", "call_id": "call_m"}),
    );
    let file = sb
        .dir("src")
        .join("rollout-2026-09-01T10-00-00-019d0000-0000-7000-8000-0000000000aa.jsonl");
    std::fs::write(&file, &head).unwrap();
    set_old(&file);
    import_json(&sb, &repo, "codex", &file);
    let id = "codex-019d0000-0000-7000-8000-0000000000aa";
    assert_eq!(
        show_messages(&sb, &repo, id)[1]["toolCalls"][0]["status"],
        "pending"
    );
    let tail = rec(
        "2026-09-01T11:30:00Z",
        "response_item",
        serde_json::json!({"type": "function_call_output", "call_id": "call_m",
            "output": "Process exited with code 1\nOutput:\nmissing rule"}),
    );
    std::fs::write(&file, head + &tail).unwrap();
    let out = import_json(&sb, &repo, "codex", &file);
    assert_eq!(out["sources"][0]["read"], "tail");
    let m = show_messages(&sb, &repo, id);
    assert_eq!(m.len(), 3);
    assert_eq!(m[2]["completesMessage"], m[1]["id"]);
    assert_eq!(m[2]["toolCalls"][0]["status"], "failed");
    assert_eq!(m[2]["toolCalls"][0]["exitCode"], 1);
    assert_eq!(row_of(&sb, &repo, id)["stats"]["toolCallCount"], 1);
}

#[test]
fn hq_checkpoints_as_they_really_look_keep_everything_and_reimport_changes_no_byte() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let hq = sb.path().join("hq");
    copy_tree(&fixtures().join("hq/shapes"), &hq);
    let out = import_json(&sb, &repo, "hq", &hq);
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(
        out["threads"].as_array().unwrap().len(),
        2,
        "the sidecar and handoff.json are not checkpoints"
    );
    let dir = repo.join(".agent/threads");
    let draft = read_json(&dir.join("hq-T-20260310-220000-prd-draft/thread.json"));
    assert_eq!(
        draft["context"]["workingDir"], "/Users/dev/repos/hq",
        "absolute cwd kept"
    );
    assert!(draft["context"]["relativeDir"].is_null());
    assert_eq!(draft["title"], "PRD: reporting app");
    let mail = read_json(&dir.join("hq-T-20260317-mail-sdk-removal/thread.json"));
    assert_eq!(
        mail["title"], "Remove the mail SDK dependency",
        "top-level title"
    );
    assert_eq!(
        mail["context"]["workingDir"],
        "/srv/hq/repos/private/mailer"
    );
    assert_eq!(mail["filesTouched"][0]["path"], "src/mail/service.ts");
    assert_eq!(
        mail["filesTouched"][0]["reason"],
        "new service on the plain API"
    );
    assert_eq!(mail["filesTouched"][2], "package.json");
    assert_eq!(
        mail["nextSteps"][1]["step"],
        "Tell support the backfill runs on first connect"
    );
    assert_eq!(
        mail["metadata"]["hq"]["changeset"]["files"][0]["change"],
        "added"
    );
    assert_eq!(
        mail["metadata"]["hq"]["handoff"]["context_notes"],
        "PR merged; the demo video is still local."
    );
    assert!(
        mail["metadata"]["tags"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("handoff"))
    );
    assert_eq!(
        mail["metadata"]["hq"]["tasks_completed"][0],
        "mailer-30.1: Create the mail service"
    );
    let shown = ok(sb
        .grove(&repo)
        .args(["show", "hq-T-20260317-mail-sdk-removal"]));
    assert!(shown.contains("Upload the demo video to the PR"), "{shown}");
    assert!(
        shown.contains("src/mail/service.ts (new service on the plain API)"),
        "{shown}"
    );

    // Again: not one byte changes.
    let agent = repo.join(".agent");
    let before = snapshot(&agent);
    import_json(&sb, &repo, "hq", &hq);
    assert_eq!(snapshot(&agent), before, "re-import changes no byte");
    // What the importers wrote is valid ATSF.
    assert_valid(&sb, &repo);
}

#[test]
fn an_amp_threads_export_imports_from_stdin_with_its_model_tokens_and_directory() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let export =
        std::fs::read(fixtures().join("amp/export/T-3c9d2e71-5b4a-4f0e-9a61-2f8b7c6d5e40.json"))
            .unwrap();
    let out = run_with_stdin(
        sb.grove(&repo).args(["import", "amp", "-", "--json"]),
        &export,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = "T-3c9d2e71-5b4a-4f0e-9a61-2f8b7c6d5e40";
    let meta = read_json(&repo.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(
        meta["context"]["workingDir"],
        "/home/dev/src/upload service"
    );
    assert_eq!(meta["context"]["gitBranch"], "fix-flaky-upload");
    assert_eq!(
        meta["context"]["remoteUrl"],
        "https://github.com/example/upload-service"
    );
    assert_eq!(meta["agent"]["version"], "0.0.1778100000-g1a2b3c");
    assert_eq!(meta["updatedAt"], "2026-05-07T12:03:10.000Z");
    let m = show_messages(&sb, &repo, id);
    let a1 = m.iter().find(|x| x["id"] == format!("{id}-1")).unwrap();
    assert_eq!(a1["model"], "claude-sonnet-4-6");
    assert_eq!(a1["tokens"]["input"], 12);
    assert_eq!(a1["tokens"]["output"], 96);
    assert_eq!(a1["tokens"]["cacheReadInputTokens"], 14208);
    assert_eq!(a1["stopReason"], "tool_use");
    assert_eq!(a1["content"][0]["signature"], "sig-opaque-1");
    assert_eq!(a1["toolCalls"][0]["status"], "failed");
    // A string messageId, and a time from the usage record.
    let a3 = m.iter().find(|x| x["id"] == format!("{id}-a3")).unwrap();
    assert_eq!(a3["timestamp"], "2026-05-07T12:01:05.000Z");
    assert_eq!(a3["toolCalls"][0]["status"], "completed");
    assert_eq!(m.last().unwrap()["stopReason"], "end_turn");
    // Again from stdin: nothing new.
    let out = run_with_stdin(
        sb.grove(&repo).args(["import", "amp", "-", "--json"]),
        &export,
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["threads"][0]["messagesAdded"],
        0
    );
}

#[test]
fn gemini_cli_chats_import_sessions_jsonl_updates_and_saved_chats() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let (src, out) = import_fixture(&sb, &repo, "gemini", "gemini/tmp");
    assert_eq!(out["threads"].as_array().unwrap().len(), 3);

    let id = "gemini-0b9e2d41-7c3a-4f58-9e21-5d6c7b8a9f10";
    let m = show_messages(&sb, &repo, id);
    assert_eq!(m.len(), 5);
    assert_eq!(m[0]["role"], "user");
    assert_eq!(m[1]["content"][0]["type"], "thinking");
    let read = &m[1]["toolCalls"][0];
    assert_eq!(read["status"], "completed");
    assert_eq!(read["title"], "ReadFile");
    assert_eq!(read["output"], "export const DEFAULT_UNIT = 'F';");
    assert_eq!(m[1]["tokens"]["input"], 8396);
    assert_eq!(m[1]["tokens"]["thoughts"], 24);
    assert_eq!(m[1]["model"], "gemini-2.5-pro");
    assert_eq!(m[2]["toolCalls"][0]["status"], "failed");
    assert!(
        m[2]["toolCalls"][0]["output"]
            .as_str()
            .unwrap()
            .contains("exited with code 1")
    );
    assert_eq!(m[3]["role"], "system", "an info message");
    let meta = read_json(&repo.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(
        meta["context"]["workingDir"], "/home/dev/src/weather-cli",
        ".project_root"
    );

    // JSON Lines: the message written again when its tool finished is one message, finished.
    let jl = show_messages(&sb, &repo, "gemini-3e0b7a52-9c1d-4e8f-b7a6-0d1c2b3a4f5e");
    assert_eq!(jl.len(), 3);
    assert_eq!(jl[0]["content"][1]["type"], "image");
    assert!(jl[0]["content"][1]["assetRef"].is_string());
    assert_eq!(jl[1]["toolCalls"][0]["status"], "completed");
    // A chat saved with /chat save: its call joined to the response.
    let saved = show_messages(&sb, &repo, "gemini-7d4a1c0e-checkpoint-release-notes");
    assert_eq!(saved.len(), 3);
    assert_eq!(saved[1]["content"][0]["type"], "thinking");
    assert_eq!(saved[1]["toolCalls"][0]["status"], "completed");

    // Again: nothing changes. Grown: only the new message.
    let agent = repo.join(".agent");
    let before = snapshot(&agent);
    import_json(&sb, &repo, "gemini", &src);
    assert_eq!(snapshot(&agent), before);
    let file = src.join("7d4a1c0e9b2f/chats/session-2026-09-02T14-53-3e0b7a52.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"id\":\"u-2\",\"timestamp\":\"2026-09-02T14:56:00.000Z\",\"type\":\"user\",\"content\":[{\"text\":\"Thanks\"}]}\n");
    std::fs::write(&file, text).unwrap();
    let out = import_json(&sb, &repo, "gemini", &file);
    assert_eq!(out["threads"][0]["messagesAdded"], 1);
    assert_valid(&sb, &repo);
}

#[test]
fn a_gemini_tool_stored_running_gets_its_result_when_the_chat_is_imported_again() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let chats = sb.dir("gemini/tmp/abc/chats");
    let file = chats.join("session-2026-09-03T10-00-12345678.jsonl");
    let meta = r#"{"sessionId":"12345678-0000-4000-8000-000000000000","projectHash":"abc","startTime":"2026-09-03T10:00:00.000Z"}"#;
    let user =
        r#"{"id":"u","timestamp":"2026-09-03T10:00:01.000Z","type":"user","content":"run it"}"#;
    let running = r#"{"id":"g","timestamp":"2026-09-03T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"sh-1","name":"run_shell_command","args":{"command":"make"},"status":"executing"}]}"#;
    let done = r#"{"id":"g","timestamp":"2026-09-03T10:00:02.000Z","type":"gemini","content":"","toolCalls":[{"id":"sh-1","name":"run_shell_command","args":{"command":"make"},"status":"success","result":[{"functionResponse":{"id":"sh-1","name":"run_shell_command","response":{"output":"built"}}}]}]}"#;
    std::fs::write(&file, format!("{meta}\n{user}\n{running}\n")).unwrap();
    set_old(&file);
    import_json(&sb, &repo, "gemini", &file);
    let id = "gemini-12345678-0000-4000-8000-000000000000";
    assert_eq!(
        show_messages(&sb, &repo, id)[1]["toolCalls"][0]["status"],
        "running"
    );
    std::fs::write(&file, format!("{meta}\n{user}\n{running}\n{done}\n")).unwrap();
    import_json(&sb, &repo, "gemini", &file);
    let m = show_messages(&sb, &repo, id);
    assert_eq!(m.len(), 3);
    assert_eq!(m[2]["completesMessage"], "g");
    assert_eq!(m[2]["toolCalls"][0]["output"], "built");
}

#[test]
fn opencode_sessions_import_with_parts_tools_tokens_and_subagents() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.path().join("opencode");
    copy_tree(&fixtures().join("opencode"), &src);
    let out = import_json(&sb, &repo, "opencode", &src.join("storage"));
    assert!(out["errors"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(out["threads"].as_array().unwrap().len(), 2);
    let id = "opencode-ses_469cf929cffeBICghRNeI7BWy6";
    let meta = read_json(&repo.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(meta["title"], "Add pagination to GET /todos");
    assert_eq!(meta["context"]["workingDir"], "/home/dev/src/todo-api");
    assert_eq!(meta["agent"]["version"], "1.0.150");
    let m = show_messages(&sb, &repo, id);
    assert_eq!(m.len(), 4);
    assert_eq!(m[0]["role"], "user");
    assert_eq!(
        first_text(&m[0]),
        "Add pagination to GET /todos (limit and cursor)."
    );
    assert_eq!(m[0]["content"][1]["synthetic"], true);
    assert!(
        m[0]["content"][2]["assetRef"].is_string(),
        "the attached image is an asset"
    );
    let a = &m[1];
    assert_eq!(a["content"][0]["type"], "thinking");
    assert_eq!(a["toolCalls"][0]["name"], "grep");
    assert_eq!(a["toolCalls"][0]["status"], "completed");
    assert_eq!(a["toolCalls"][0]["duration"], 350);
    assert_eq!(a["toolCalls"][1]["status"], "failed");
    assert_eq!(a["toolCalls"][1]["output"], "Error: 2 tests failed");
    assert_eq!(a["tokens"]["input"], 12);
    assert_eq!(a["tokens"]["reasoning"], 120);
    assert_eq!(a["stopReason"], "tool-calls");
    assert_eq!(a["model"], "claude-sonnet-4-5");
    let kept: Vec<&str> = a["opencodeParts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["step-start", "patch", "step-finish"]);
    let sub =
        read_json(&repo.join(".agent/threads/opencode-ses_469cf61a0ffeQ3ZqRk2tGvQ1aB/thread.json"));
    assert_eq!(sub["mainThreadID"], id);

    // Again: nothing changes. A new message: only it.
    let agent = repo.join(".agent");
    let before = snapshot(&agent);
    import_json(&sb, &repo, "opencode", &src.join("storage"));
    assert_eq!(snapshot(&agent), before);
    let storage = src.join("storage");
    let msg = "msg_b96308000001NewUser0000001";
    std::fs::write(
        storage.join("message/ses_469cf929cffeBICghRNeI7BWy6").join(format!("{msg}.json")),
        format!(r#"{{"id":"{msg}","sessionID":"ses_469cf929cffeBICghRNeI7BWy6","role":"user","time":{{"created":1767787400000}}}}"#),
    )
    .unwrap();
    std::fs::create_dir_all(storage.join("part").join(msg)).unwrap();
    std::fs::write(
        storage.join("part").join(msg).join("prt_b96308000002nnnnnnnnnnnnnn.json"),
        format!(r#"{{"id":"prt_b96308000002nnnnnnnnnnnnnn","sessionID":"ses_469cf929cffeBICghRNeI7BWy6","messageID":"{msg}","type":"text","text":"Ship it"}}"#),
    )
    .unwrap();
    let out = import_json(&sb, &repo, "opencode", &storage);
    let t = out["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["threadId"] == id)
        .unwrap();
    assert_eq!(t["messagesAdded"], 1);
    assert_valid(&sb, &repo);
}

#[test]
fn an_import_killed_between_its_append_and_thread_json_never_doubles_a_message() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let text = std::fs::read_to_string(
        fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl"),
    )
    .unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let file = sb
        .dir("src")
        .join("cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl");
    std::fs::write(&file, lines[..8].concat()).unwrap();
    import_json(&sb, &repo, "claude", &file);
    let dir = repo.join(".agent/threads").join(REAL_21);
    // What a kill right after the log's append leaves: the new lines in the
    // log, thread.json and the cursor as before.
    let meta = std::fs::read(dir.join("thread.json")).unwrap();
    let cursors = sb.grove_home().join("imports");
    let saved: Vec<(std::path::PathBuf, Vec<u8>)> = std::fs::read_dir(&cursors)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    std::fs::write(&file, text.clone()).unwrap();
    import_json(&sb, &repo, "claude", &file);
    std::fs::write(dir.join("thread.json"), meta).unwrap();
    for (p, b) in saved {
        std::fs::write(p, b).unwrap();
    }
    // The next import reads the same new lines again: none is written twice.
    let out = import_json(&sb, &repo, "claude", &file);
    assert_eq!(out["sources"][0]["read"], "tail");
    let ids: Vec<String> = message_lines(&dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:#?}");
    assert_valid(&sb, &repo);
}

#[test]
fn the_published_gemini_session_imports_every_call_with_its_output() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let (_, out) = import_fixture(&sb, &repo, "gemini", "gemini/ai-sessions");
    assert_eq!(out["records"]["gemini"]["mapped"], 4);
    let m = show_messages(&sb, &repo, "gemini-f86f5318-f47b-4433-85f8-ec9d9a417f8e");
    assert_eq!(m.len(), 6);
    let calls: Vec<&serde_json::Value> = m
        .iter()
        .flat_map(|x| x["toolCalls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["status"] == "completed"));
    assert_eq!(calls[0]["title"], "ReadFolder");
    assert!(calls[0]["output"].as_str().unwrap().contains("[DIR] src"));
    // A result of several parts: the response and each text part.
    assert_eq!(
        calls[2]["output"],
        "Tool execution succeeded.\n--- file1.txt ---\nContent of file 1\n--- file2.txt ---\nContent of file 2"
    );
    assert_eq!(m[4]["model"], "gemini-2.0-flash");
    assert_valid(&sb, &repo);
}
