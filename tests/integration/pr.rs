//! `grove pr`: a pull request's description from a task's thread.

use std::path::PathBuf;

use crate::support::*;

/// A task whose thread holds two turns: a prompt, a reply that ran the
/// tests (which failed), a second prompt, a reply that ran them again.
fn task_with_turns(sb: &Sandbox) -> (PathBuf, PathBuf, String) {
    let repo = sb.repo("app");
    let task = new_task(sb, &repo, &["Fix the login bug", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap().to_string();
    std::fs::write(wt.join("login.rs"), "fn login() {}\n").unwrap();
    sb.git(&wt, &["add", "login.rs"]);
    sb.git(&wt, &["commit", "-q", "-m", "Fix the login"]);
    let input = [
        r#"{"role":"user","content":[{"type":"text","text":"The login page loops.\nIt started after the cookie change."}]}"#,
        r#"{"role":"agent","content":[{"type":"text","text":"I changed the session refresh so it keeps the cookie.\n\nMore details here."}],"toolCalls":[{"toolCallId":"t1","name":"Bash","status":"failed","input":"{\"command\":\"cargo test -q\"}"},{"toolCallId":"t2","name":"Read","status":"completed","input":"{\"file_path\":\"login.rs\"}"}]}"#,
        r#"{"role":"user","content":[{"type":"text","text":"Now make the tests pass."}]}"#,
        r#"{"role":"agent","content":[{"type":"text","text":"Fixed the test fixture; the suite passes."}],"toolCalls":[{"toolCallId":"t3","name":"Bash","status":"completed","input":"{\"command\":\"cargo test\"}"}]}"#,
    ]
    .join("\n")
        + "\n";
    let out = run_with_stdin(
        sb.grove(&wt).args(["append", &id, "--stdin"]),
        input.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (repo, wt, id)
}

#[test]
fn the_description_says_what_was_asked_done_decided_and_tested() {
    let sb = Sandbox::new();
    let (repo, wt, id) = task_with_turns(&sb);
    // A fork of the task, archived: an approach left behind.
    let fork: serde_json::Value = serde_json::from_str(&ok(sb.grove(&wt).args([
        "fork",
        &id,
        "--no-worktree",
        "--title",
        "Try a rewrite",
        "--json",
    ])))
    .unwrap();
    let fork_id = fork["threadId"].as_str().unwrap().to_string();
    ok(sb.grove(&repo).args(["archive", &fork_id]));

    let md = ok(sb.grove(&wt).arg("pr"));
    for expected in [
        "# Fix the login bug",
        "> The login page loops.\n> It started after the cookie change.",
        "Then:\n- Now make the tests pass.",
        "1. I changed the session refresh so it keeps the cookie.\n",
        "2. Fixed the test fixture; the suite passes.",
        "Forked into \"Try a rewrite\"",
        "archived: an approach left behind",
        "- `cargo test -q`: failed (message 1)",
        "- `cargo test`: passed (message 3)",
        "login.rs | 1 +",
        "branch grove/fix-the-login-bug",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in:\n{md}");
    }
    assert!(
        !md.contains("More details here"),
        "a summary is the first paragraph"
    );
    assert!(!md.contains("login.rs\"}"), "reading a file is no test run");

    let json: serde_json::Value =
        serde_json::from_str(&ok(sb.grove(&repo).args(["pr", &id, "--json"]))).unwrap();
    assert_eq!(json["threadId"], id.as_str());
    assert_eq!(json["turns"].as_array().unwrap().len(), 2);
    assert_eq!(json["tests"][0]["status"], "failed");
    assert_eq!(json["decisions"][0]["kind"], "fork");
    assert_eq!(json["decisions"][0]["archived"], true);
    assert_eq!(json["markdown"].as_str().unwrap().trim_end(), md.trim_end());
}

#[test]
fn a_description_holding_a_secret_is_refused_unless_redacted_or_allowed() {
    let sb = Sandbox::new();
    let (_repo, wt, id) = task_with_turns(&sb);
    let token = "ghp_R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7";
    // In a later prompt's second line: only the JSON holds it whole.
    let line = format!(
        r#"{{"role":"user","content":[{{"type":"text","text":"Use the CI token\n{token}"}}]}}"#
    );
    let out = run_with_stdin(
        sb.grove(&wt).args(["append", &id, "--stdin"]),
        format!("{line}\n").as_bytes(),
    );
    assert!(out.status.success());

    let err = fails_with(sb.grove(&wt).arg("pr"), 1);
    assert!(err.contains("secret"), "{err}");
    assert!(!err.contains(token));
    let redacted = ok(sb.grove(&wt).args(["pr", "--redact", "--json"]));
    assert!(!redacted.contains(token), "{redacted}");
    assert!(redacted.contains("REDACTED"), "{redacted}");
    let allowed = ok(sb.grove(&wt).args(["pr", "--allow-secrets", "--json"]));
    assert!(allowed.contains(token));
}

#[test]
fn review_of_a_thread_without_snapshots_lists_its_turns_and_says_why_no_diff() {
    let sb = Sandbox::new();
    let (_repo, wt, _id) = task_with_turns(&sb);
    let review: serde_json::Value =
        serde_json::from_str(&ok(sb.grove(&wt).args(["review", "--json"]))).unwrap();
    assert_eq!(review["snapshots"], false);
    let entries = review["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["prompt"], "Now make the tests pass.");
    assert_eq!(
        entries[1]["replies"][0],
        "Fixed the test fixture; the suite passes."
    );
    assert!(entries.iter().all(|e| e.get("diff").is_none()));
    let out = run(sb.grove(&wt).arg("review"));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no turn snapshots"));
}

#[test]
fn review_uses_no_snapshot_its_thread_s_own_chain_does_not_hold() {
    // A thread (pulled, say) that names trees of this repository as its
    // snapshots, with no chain of its own: none is read.
    let sb = Sandbox::new();
    let (repo, wt, id) = task_with_turns(&sb);
    let tree = sb.git(&repo, &["rev-parse", "HEAD^{tree}"]);
    let head = sb.git(&wt, &["rev-parse", "HEAD"]);
    let other = sb.git(&wt, &["rev-parse", "HEAD^{tree}"]);
    let forged = |at: &str, tree: &str| serde_json::json!({"tree": tree, "commit": head, "at": at, "takenAt": "2026-01-01T00:00:00.000Z"});
    let line = serde_json::json!({
        "role": "user",
        "content": [{"type": "text", "text": "Again"}],
        "metadata": {"grove": {"snapshots": [forged("prompt", &tree), forged("turnEnd", &other)]}},
    });
    let out = run_with_stdin(
        sb.grove(&wt).args(["append", &id, "--stdin"]),
        format!("{line}\n").as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review: serde_json::Value =
        serde_json::from_str(&ok(sb.grove(&wt).args(["review", "--json"]))).unwrap();
    assert_eq!(review["snapshots"], false, "{review:#}");
    let entries = review["entries"].as_array().unwrap();
    assert!(
        entries.iter().all(|e| e.get("diff").is_none()),
        "{review:#}"
    );
}
