//! `grove search`: finds what grep finds, in every thread grove can find.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::*;

fn msg(id: &str, role: &str, text: &str) -> String {
    serde_json::json!({
        "id": id, "role": role, "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "text", "text": text}]
    })
    .to_string()
}

/// `grove search ARGS --json` hits as (threadId, index) pairs.
fn hits(sb: &Sandbox, dir: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    all.push("--json");
    json(&ok(sb.grove(dir).args(&all)))
        .as_array()
        .unwrap()
        .clone()
}

fn pairs(hits: &[serde_json::Value]) -> BTreeSet<(String, u64)> {
    hits.iter()
        .map(|h| {
            (
                h["threadId"].as_str().unwrap().to_string(),
                h["index"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn search_finds_what_grep_finds_across_main_worktree_and_cached_threads() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let local = new_thread(&sb, &repo, "Local");
    let live = new_task(&sb, &repo, &["Live task"]);
    let live_id = live["threadId"].as_str().unwrap().to_string();
    let live_wt = PathBuf::from(live["worktreePath"].as_str().unwrap());
    let gone = new_task(&sb, &repo, &["Removed task"]);
    let gone_id = gone["threadId"].as_str().unwrap().to_string();

    let mut n = 0;
    let mut lines_for = |words: &[&str]| -> String {
        words
            .iter()
            .map(|w| {
                n += 1;
                msg(
                    &format!("m{n}"),
                    if n % 2 == 0 { "agent" } else { "user" },
                    w,
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    append_stdin(
        &sb,
        &repo,
        &local,
        &lines_for(&[
            "a haystack",
            "the needle here",
            "nothing",
            "needle and needle again",
        ]),
    );
    append_stdin(
        &sb,
        &live_wt,
        &live_id,
        &lines_for(&["needle first", "no", "no", "multi\nline with needle\nend"]),
    );
    append_stdin(&sb, &repo, &gone_id, &lines_for(&["old needle", "old hay"]));
    // Thinking and tool output are searched too.
    append_stdin(
        &sb,
        &repo,
        &local,
        r#"{"role":"agent","content":[{"type":"thinking","text":"maybe the needle"}],"toolCalls":[{"toolCallId":"t","name":"grep","status":"completed","output":"found needle in src"}]}"#,
    );
    ok(sb.grove(&repo).args(["rm", &gone_id]));

    // grep over each thread's own log (threadDir from list; `--all`: the
    // removed task's too).
    let mut expected = BTreeSet::new();
    let rows = json(&ok(sb.grove(&repo).args(["list", "--json", "--all"])));
    for row in rows.as_array().unwrap() {
        let log = PathBuf::from(row["threadDir"].as_str().unwrap()).join("messages.jsonl");
        let out = std::process::Command::new("grep")
            .args(["-nF", "needle"])
            .arg(&log)
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let number: u64 = line.split(':').next().unwrap().parse().unwrap();
            expected.insert((row["threadId"].as_str().unwrap().to_string(), number - 1));
        }
    }
    assert_eq!(expected.len(), 6, "{expected:?}");
    let found = hits(&sb, &repo, &["needle"]);
    assert_eq!(pairs(&found), expected);
    // Several matches in one message: one hit per matching line, all spans given.
    let twice = found
        .iter()
        .find(|h| h["line"] == "needle and needle again")
        .unwrap();
    assert_eq!(twice["matches"], serde_json::json!([[0, 6], [11, 17]]));
    let multi = found
        .iter()
        .find(|h| h["threadId"] == live_id.as_str() && h["index"] == 3)
        .unwrap();
    assert_eq!(
        multi["line"], "line with needle",
        "the matching line, not the whole text"
    );
    let fields: BTreeSet<&str> = found.iter().map(|h| h["field"].as_str().unwrap()).collect();
    assert_eq!(fields, BTreeSet::from(["text", "thinking", "toolOutput"]));
    assert!(
        found.iter().any(|h| h["threadId"] == gone_id.as_str()),
        "cached thread searched"
    );

    // Human output: thread, index, role, line.
    let text = ok(sb.grove(&repo).args(["search", "old needle"]));
    assert_eq!(text.lines().count(), 1);
    assert!(
        text.starts_with(&gone_id[..8]) && text.contains("#0") && text.contains("user"),
        "{text}"
    );
}

#[test]
fn filters_regex_case_and_no_match() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let a = new_thread(&sb, &dir, "A");
    let b = new_thread(&sb, &dir, "B");
    append_stdin(
        &sb,
        &dir,
        &a,
        &[
            msg("1", "user", "Error: E42 failed"),
            msg("2", "agent", "fixed error E42"),
        ]
        .join("\n"),
    );
    append_stdin(&sb, &dir, &b, &msg("3", "user", "error E7"));
    assert_eq!(hits(&sb, &dir, &["E42", "--role", "agent"]).len(), 1);
    assert_eq!(
        pairs(&hits(&sb, &dir, &["error", "--thread", &b])),
        BTreeSet::from([(b.clone(), 0)])
    );
    assert_eq!(hits(&sb, &dir, &["error", "-i"]).len(), 3);
    assert_eq!(hits(&sb, &dir, &["error"]).len(), 2);
    let re = hits(&sb, &dir, &["--regex", r"E\d{2}\b"]);
    assert_eq!(re.len(), 2);
    assert_eq!(re[0]["matches"][0], serde_json::json!([7, 10]));
    let err = fails_with(sb.grove(&dir).args(["search", "zebra"]), 1);
    assert!(err.contains("no match"), "{err}");
    let err = fails_with(sb.grove(&dir).args(["search", "--regex", "("]), 2);
    assert!(err.contains("invalid --regex"), "{err}");
}

#[test]
fn escaped_text_and_malformed_lines() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Escapes");
    let log = dir.join(".agent/threads").join(&id).join("messages.jsonl");
    // Written as Python's json.dumps would (non-ASCII as \u escapes), a
    // malformed line holding the query, a blank line, quotes.
    let lines = [
        r#"{"id":"p1","role":"user","timestamp":"2025-03-01T10:00:00.000Z","content":[{"type":"text","text":"caf\u00e9 au lait"}]}"#,
        r#"{"id":"bad","role":"user", "text":"café broken"#,
        "",
        r#"{"id":"p2","role":"agent","timestamp":"2025-03-01T10:00:01.000Z","content":[{"type":"text","text":"she said \"caf\u00e9\""}]}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = run(sb.grove(&dir).args(["search", "café", "--json"]));
    assert!(out.status.success());
    let found = json(&String::from_utf8(out.stdout).unwrap());
    let indices: Vec<u64> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["index"].as_u64().unwrap())
        .collect();
    assert_eq!(
        indices,
        vec![0, 2],
        "blank lines do not count; the malformed line does"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("messages.jsonl:2"), "{stderr}");
    assert_eq!(hits(&sb, &dir, &["said \"café\""]).len(), 1);
}

/// Writes `n` threads straight into `repo`'s store, each with one message
/// naming its number.
fn many_threads(repo: &Path, n: usize) {
    for i in 0..n {
        let id = format!("00000000-0000-4000-8000-{i:012}");
        let dir = repo.join(".agent/threads").join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let meta = serde_json::json!({
            "specVersion": "1.1", "threadId": id, "title": format!("T{i}"),
            "createdAt": "2025-03-01T10:00:00.000Z",
            "updatedAt": format!("2025-03-01T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60),
            "agent": {"id": "unknown", "name": "unknown"}, "context": {"workingDir": "."},
            "stats": {"messageCount": 1, "userMessageCount": 1, "agentMessageCount": 0, "toolCallCount": 0},
            "metadata": {}
        });
        std::fs::write(dir.join("thread.json"), meta.to_string()).unwrap();
        let line = msg("m1", "user", &format!("needle number {i}"));
        std::fs::write(dir.join("messages.jsonl"), format!("{line}\n")).unwrap();
    }
}

#[test]
fn the_number_of_threads_changes_nothing_but_speed() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    many_threads(&repo, 300);
    let default = ok(sb.grove(&repo).args(["search", "needle", "--json"]));
    assert_eq!(json(&default).as_array().unwrap().len(), 300);
    // More threads than cores, one, and the variable: the same hits in
    // the same order.
    for jobs in [["-j", "1"], ["-j", "24"], ["--jobs", "0"]] {
        let out = ok(sb
            .grove(&repo)
            .args(jobs)
            .args(["search", "needle", "--json"]));
        assert_eq!(out, default, "{jobs:?}");
    }
    let out = ok(sb
        .grove(&repo)
        .env("GROVE_JOBS", "17")
        .args(["search", "needle", "--json"]));
    assert_eq!(out, default);
    let list = ok(sb.grove(&repo).args(["list", "--json"]));
    let list_many = ok(sb.grove(&repo).args(["-j", "24", "list", "--json"]));
    assert_eq!(list_many, list);

    let err = fails_with(
        sb.grove(&repo)
            .env("GROVE_JOBS", "lots")
            .args(["search", "needle"]),
        2,
    );
    assert!(err.contains("GROVE_JOBS") && err.contains("lots"), "{err}");
}
