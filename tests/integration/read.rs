//! Reading: streaming long lines, partial and malformed lines, show, list, repair.

use std::io::Write;

use grove::store::MessageReader;

use crate::support::*;

fn thread_dir(repo: &std::path::Path, id: &str) -> std::path::PathBuf {
    repo.join(".agent/threads").join(id)
}

fn append_raw(dir: &std::path::Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("messages.jsonl"))
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn a_line_of_tens_of_megabytes_is_read() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "big");
    let big = "z".repeat(30 * 1024 * 1024);
    let input = format!(r#"{{"role":"agent","content":[{{"type":"text","text":"{big}"}}]}}"#);
    let out = run_with_stdin(
        sb.grove(&repo)
            .args(["append", &id, "--stdin", "--no-fsync"]),
        input.as_bytes(),
    );
    assert!(out.status.success());
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "small"]));
    let out = json(&ok(sb.grove(&repo).args(["show", &id, "--json"])));
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0]["content"][0]["text"].as_str().unwrap().len(),
        big.len()
    );
    assert_eq!(messages[1]["content"][0]["text"], "small");
}

#[test]
fn a_partial_last_line_is_ignored_and_malformed_lines_are_reported_with_their_line() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let dir = thread_dir(&repo, &id);
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "first"]));
    append_raw(&dir, b"{this is not json}\n");
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "agent", "--text", "third"]));
    append_raw(&dir, b"{\"id\":\"partial\",\"role\":\"user\",\"timest");

    let log = dir.join("messages.jsonl");
    let mut reader = MessageReader::open(&log).unwrap();
    let items: Vec<_> = reader.by_ref().collect();
    assert_eq!(items.len(), 3);
    assert!(items[0].is_ok() && items[2].is_ok());
    match &items[1] {
        Err(grove::Error::Parse { line, path, .. }) => {
            assert_eq!(*line, Some(2));
            assert_eq!(path, &log);
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert!(reader.torn_tail() > 0);

    let out = run(sb.grove(&repo).args(["show", &id]));
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("first") && stdout.contains("third"),
        "{stdout}"
    );
    assert!(!stdout.contains("partial"));
    assert!(
        stderr.contains("messages.jsonl:2"),
        "file and line named: {stderr}"
    );
    let json_out = json(&ok(sb.grove(&repo).args(["show", &id, "--json"])));
    assert_eq!(json_out["messages"].as_array().unwrap().len(), 2);
    assert!(
        json_out["errors"][0]
            .as_str()
            .unwrap()
            .contains("messages.jsonl:2")
    );
}

#[test]
fn repair_recomputes_stats_sets_aside_the_tail_and_keeps_bad_lines() {
    let sb = Sandbox::new();
    let project = sb.dir("p");
    copy_tree(&fixtures().join("atsf/spec-example"), &project);
    let id = "a1b2c3d4-e5f6-7890-abcd-ef1234567890";
    let dir = project.join(".agent/threads").join(id);
    append_raw(&dir, b"garbage\n{\"id\":\"torn");
    let report = json(&ok(sb.grove(&project).args(["repair", "a1b2", "--json"])));
    assert_eq!(
        report["statsBefore"]["messageCount"], 12,
        "the spec example's cached value"
    );
    assert_eq!(report["statsAfter"]["messageCount"], 2);
    assert_eq!(report["statsAfter"]["toolCallCount"], 1);
    assert_eq!(report["rewroteThreadJson"], true);
    assert_eq!(report["badLines"].as_array().unwrap().len(), 1);
    assert!(
        report["badLines"][0]
            .as_str()
            .unwrap()
            .contains("messages.jsonl:3")
    );
    assert_eq!(report["tornTail"]["bytes"], 11);
    let saved = report["tornTail"]["savedTo"].as_str().unwrap();
    assert_eq!(std::fs::read(saved).unwrap(), b"{\"id\":\"torn");
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 2);
    assert_eq!(meta["stats"]["userMessageCount"], 1);
    let log = std::fs::read_to_string(dir.join("messages.jsonl")).unwrap();
    assert!(log.ends_with("garbage\n"), "the bad line is kept");

    let again = json(&ok(sb.grove(&project).args(["repair", id, "--json"])));
    assert_eq!(again["rewroteThreadJson"], false);
    assert!(again["tornTail"].is_null());
}

#[test]
fn list_is_newest_first_and_never_opens_messages() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let a = new_thread(&sb, &repo, "older");
    let b = new_thread(&sb, &repo, "newer");
    let input = r#"{"role":"user","timestamp":"2020-01-01T00:00:00.000Z","content":[]}"#;
    run_with_stdin(
        sb.grove(&repo).args(["append", &a, "--stdin"]),
        input.as_bytes(),
    );
    let input = r#"{"role":"user","timestamp":"2030-01-01T00:00:00.000Z","content":[]}"#;
    run_with_stdin(
        sb.grove(&repo).args(["append", &b, "--stdin"]),
        input.as_bytes(),
    );

    // A FIFO instead of messages.jsonl: opening it for reading would block.
    let fifo = thread_dir(&repo, &a).join("messages.jsonl");
    std::fs::remove_file(&fifo).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = sb
        .grove(&repo)
        .args(["list", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("grove list opened messages.jsonl");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let rows = json(&String::from_utf8(out.stdout).unwrap());
    let ids: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b.as_str(), a.as_str()]);
    assert_eq!(rows[0]["title"], "newer");
    assert_eq!(rows[0]["stats"]["messageCount"], 1);
    assert!(rows[0]["threadDir"].as_str().unwrap().ends_with(&b));

    let human = ok(sb.grove(&repo).arg("list"));
    // The header, then the newest.
    let first = human.lines().nth(1).unwrap();
    assert!(
        first.starts_with(&b[..8]) && first.contains("newer"),
        "{human}"
    );
}

#[test]
fn show_renders_roles_tool_calls_and_hides_thinking_unless_asked() {
    let sb = Sandbox::new();
    let project = sb.dir("p");
    copy_tree(&fixtures().join("atsf/spec-example"), &project);
    let out = ok(sb.grove(&project).args(["show", "a1b2"]));
    assert!(out.contains("Fix authentication bug"));
    assert!(out.contains("#0 user"));
    assert!(out.contains("#1 agent"));
    assert!(out.contains("file_read Read auth.ts [completed]"), "{out}");
    assert!(!out.contains("Let me look at auth.ts"), "thinking hidden");
    assert!(out.contains("--thinking"));
    let out = ok(sb.grove(&project).args(["show", "a1b2", "--thinking"]));
    assert!(out.contains("Let me look at auth.ts"));
    assert!(!out.contains('\x1b'), "no colour off a terminal");
    let out = ok(sb
        .grove(&project)
        .args(["--color", "always", "show", "a1b2"]));
    assert!(out.contains('\x1b'));

    let project = sb.dir("q");
    copy_tree(&fixtures().join("atsf/unknown-fields"), &project);
    let out = ok(sb.grove(&project).args(["show", "u-1"]));
    assert!(
        out.contains("[audio block]"),
        "unknown blocks as a placeholder: {out}"
    );
}

#[test]
fn values_the_spec_does_not_name_are_kept_and_shown_not_dropped() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "written by ACP");
    let dir = thread_dir(&repo, &id);
    // As OpenAgentManager and ACP write them: a status `in_progress`, a role
    // and a stop reason the spec does not name.
    let lines = [
        r#"{"id":"m1","role":"agent","timestamp":"2025-01-01T00:00:00.000Z","content":[{"type":"text","text":"reading the file"}],"toolCalls":[{"toolCallId":"t1","name":"read","status":"in_progress","input":"{}"}],"stopReason":"refusal"}"#,
        r#"{"id":"m2","role":"tool","timestamp":"2025-01-01T00:00:01.000Z","content":[{"type":"text","text":"tool output findable"}]}"#,
    ];
    append_raw(&dir, format!("{}\n{}\n", lines[0], lines[1]).as_bytes());
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(
        shown.contains("in_progress") && shown.contains("tool output findable"),
        "{shown}"
    );
    assert!(shown.contains("refusal"), "{shown}");
    let out = run(sb.grove(&repo).args(["show", &id, "--json"]));
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "no malformed line"
    );
    let v = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    assert_eq!(v["messages"][0]["toolCalls"][0]["status"], "in_progress");
    assert_eq!(v["messages"][1]["role"], "tool");
    let md = ok(sb.grove(&repo).args(["export", &id, "--format", "md"]));
    assert!(md.contains("tool output findable"), "{md}");
    let hits = json(&ok(sb.grove(&repo).args(["search", "findable", "--json"])));
    assert_eq!(hits[0]["role"], "tool");
    let repaired = json(&ok(sb.grove(&repo).args(["repair", &id, "--json"])));
    assert_eq!(repaired["statsAfter"]["messageCount"], 2);
    assert_eq!(repaired["badLines"], serde_json::json!([]));
    // Written back as they were: a fork copies, an append re-reads them.
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "next"]));
    let log = std::fs::read_to_string(dir.join("messages.jsonl")).unwrap();
    assert!(log.starts_with(&format!("{}\n{}\n", lines[0], lines[1])));
}

#[test]
fn parent_thread_id_is_read_as_the_fork_origin() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let parent = new_thread(&sb, &repo, "parent");
    let child = new_thread(&sb, &repo, "child");
    let path = thread_dir(&repo, &child).join("thread.json");
    let mut meta = read_json(&path);
    meta["parentThreadId"] = serde_json::json!(parent);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    assert_eq!(
        row_of(&sb, &repo, &child)["originThreadID"],
        parent.as_str()
    );
    let tree = json(&ok(sb
        .grove(&repo)
        .args(["show", &child, "--tree", "--json"])));
    let edges = tree["edges"].as_array().unwrap();
    assert!(
        edges.iter().any(|e| e["from"] == parent.as_str()
            && e["to"] == child.as_str()
            && e["type"] == "fork"),
        "{tree}"
    );
    ok(sb
        .grove(&repo)
        .args(["append", &child, "--role", "user", "--text", "x"]));
    assert_eq!(
        read_json(&path)["parentThreadId"],
        parent.as_str(),
        "kept as written"
    );
}

/// Rows fit the width (COLUMNS pins it), titles cut with `…`, never
/// wrapped; imported threads' ids are their shortest unique prefix, which
/// names the thread again.
#[test]
fn list_rows_fit_the_width_and_show_pasteable_ids() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    new_task(
        &sb,
        &repo,
        &["A rather long title that goes on and on about the login bug and more"],
    );
    let src = fixtures().join("claude/project");
    ok(sb.grove(&repo).args(["import", "claude"]).arg(&src));
    let table = ok(sb
        .grove(&repo)
        .args(["list", "--archived"])
        .env("COLUMNS", "72"));
    for line in table.lines() {
        assert!(
            unicode_width_of(line) <= 72,
            "{line:?} is {} wide",
            unicode_width_of(line)
        );
    }
    assert!(table.contains('…'), "{table}");
    let mut pasted = 0;
    for line in table.lines().filter(|l| l.starts_with("claude-")) {
        let id = line.split_whitespace().next().unwrap();
        // A subagent's id, cut: it is reached through its session's thread.
        if id.ends_with('…') {
            continue;
        }
        assert!(
            id.len() < "claude-fe5e1c67-53e7-4862-81ae-d0e013e3270b".len(),
            "{line}"
        );
        let shown = json(&ok(sb.grove(&repo).args(["show", id, "--json"])));
        assert!(
            shown["thread"]["threadId"]
                .as_str()
                .unwrap()
                .starts_with(id)
        );
        pasted += 1;
    }
    assert!(pasted >= 3, "{table}");
    // Piped without COLUMNS, nothing is cut.
    let full = ok(sb.grove(&repo).args(["list"]));
    assert!(
        full.contains("goes on and on about the login bug and more"),
        "{full}"
    );
}

fn unicode_width_of(s: &str) -> usize {
    s.chars().count()
}

#[test]
fn list_filters_sorts_by_activity_and_all_shows_other_repositories_real_status() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let other = sb.repo("lib");
    let a = new_task(&sb, &repo, &["Alpha", "--agent", "codex"]);
    let b = new_task(&sb, &repo, &["beta", "--agent", "claude-code"]);
    std::fs::write(
        std::path::Path::new(b["worktreePath"].as_str().unwrap()).join("wip.txt"),
        "x",
    )
    .unwrap();
    let elsewhere = new_task(&sb, &other, &["In the other repository"]);
    // An old session imported now: listed first, its updatedAt kept.
    let imported = run(sb
        .grove(&repo)
        .args(["import", "claude"])
        .arg(fixtures().join("claude/branching")));
    assert!(matches!(imported.status.code(), Some(0 | 4)));
    let rows = list_rows(&sb, &repo);
    assert!(
        rows[0]["threadId"].as_str().unwrap().starts_with("claude-"),
        "{rows:?}"
    );
    let updated = rows[0]["updatedAt"].as_str().unwrap();
    assert!(
        updated < a_created(&a).as_str(),
        "the session's own time: {updated}"
    );

    let ids = |args: &[&str]| -> Vec<String> {
        json(&ok(sb.grove(&repo).args(["list", "--json"]).args(args)))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["threadId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&["--status", "dirty"]),
        [b["threadId"].as_str().unwrap()]
    );
    assert_eq!(
        ids(&["--agent", "codex"]),
        [a["threadId"].as_str().unwrap()]
    );
    assert_eq!(
        ids(&["--status", "live", "--status", "dirty", "--sort", "title"]).len(),
        2
    );
    assert_eq!(
        ids(&["--status", "live", "--status", "dirty", "--sort", "title"])[0],
        a["threadId"].as_str().unwrap(),
        "Alpha before beta, case aside"
    );
    assert_eq!(ids(&["--limit", "1"]).len(), 1);
    fails_with(sb.grove(&repo).args(["list", "--status", "stale"]), 2);

    // --all: the other repository's task with its real status, and a column.
    let all = json(&ok(sb.grove(&repo).args(["list", "--all", "--json"])));
    let row = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["threadId"] == elsewhere["threadId"])
        .unwrap();
    assert_eq!(row["status"], "live", "{row}");
    let table = ok(sb
        .grove(&repo)
        .args(["list", "--all"])
        .env("COLUMNS", "120"));
    let line = table.lines().find(|l| l.contains("In the other")).unwrap();
    assert!(line.contains(" lib "), "{line}");

    // A locked worktree is marked.
    sb.git(
        &repo,
        &["worktree", "lock", a["worktreePath"].as_str().unwrap()],
    );
    let table = ok(sb.grove(&repo).args(["list"]).env("COLUMNS", "120"));
    let line = table.lines().find(|l| l.contains("Alpha")).unwrap();
    assert!(line.contains("(locked)"), "{line}");
}

fn a_created(task: &serde_json::Value) -> String {
    let dir = std::path::PathBuf::from(task["threadDir"].as_str().unwrap());
    read_json(&dir.join("thread.json"))["createdAt"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Small answers that must be right: search finds titles, an unchanged
/// re-import says so, handoffs are numbered, `path --json` has list's status.
#[test]
fn titles_are_searched_unchanged_imports_say_so_handoffs_are_numbered() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Untangle the payment retries"]);
    let id = task["threadId"].as_str().unwrap();
    let hits = json(&ok(sb.grove(&repo).args([
        "search",
        "payment retries",
        "--json",
    ])));
    assert_eq!(hits[0]["field"], "title", "{hits}");
    assert_eq!(hits[0]["threadId"], id);

    let file = fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl");
    ok(sb.grove(&repo).args(["import", "claude"]).arg(&file));
    let again = ok(sb.grove(&repo).args(["import", "claude"]).arg(&file));
    assert!(again.contains(" unchanged "), "{again}");

    let first = ok(sb
        .grove(&repo)
        .args(["handoff", id, "--summary", "one", "--no-worktree"]));
    let second = ok(sb
        .grove(&repo)
        .args(["handoff", id, "--summary", "two", "--no-worktree"]));
    let title = |child: &str| row_of(&sb, &repo, child.trim())["title"].clone();
    assert_eq!(title(&first), "Handoff: Untangle the payment retries");
    assert_eq!(title(&second), "Handoff (2): Untangle the payment retries");

    let wt = std::path::PathBuf::from(task["worktreePath"].as_str().unwrap());
    std::fs::write(wt.join("wip.txt"), "x").unwrap();
    let path = json(&ok(sb.grove(&repo).args(["path", id, "--json"])));
    assert_eq!(path["status"], "dirty");
    assert_eq!(path["status"], row_of(&sb, &repo, id)["status"]);
}
