//! Turn snapshots (issue 28, item 1): at each boundary of a captured turn
//! the worktree's content is recorded as a git tree, linked from the
//! thread's messages, kept alive by `refs/grove/snapshots/<id>` and carried
//! by `grove push`/`pull` — and nothing of the user's git state moves.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// Every snapshot the thread records, in the order taken: those its
/// messages carry, then those still waiting in `thread.json`.
fn snapshots(wt: &Path, id: &str) -> Vec<Value> {
    let dir = wt.join(".agent/threads").join(id);
    let mut all: Vec<Value> = message_lines(&dir)
        .iter()
        .flat_map(|m| {
            m["metadata"]["grove"]["snapshots"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let meta = read_json(&dir.join("thread.json"));
    all.extend(
        meta["metadata"]["grove"]["pendingSnapshots"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    all
}

/// The tree `git add -A` + `git write-tree` gives of the worktree now, in
/// an index of the test's own (the threads left out, as grove does).
fn tree_of_worktree(sb: &Sandbox, wt: &Path) -> String {
    let index = sb.path().join("expected.index");
    let _ = std::fs::remove_file(&index);
    let mut add = std::process::Command::new("git");
    sb.env(&mut add);
    let status = add
        .args(["add", "-A", "--", ".", ":(exclude).agent/threads"])
        .current_dir(wt)
        .env("GIT_INDEX_FILE", &index)
        .status()
        .unwrap();
    assert!(status.success());
    let mut write = std::process::Command::new("git");
    sb.env(&mut write);
    let out = write
        .arg("write-tree")
        .current_dir(wt)
        .env("GIT_INDEX_FILE", &index)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The files of `tree` with their content.
fn files_of(sb: &Sandbox, wt: &Path, tree: &str) -> Vec<(String, String)> {
    sb.git(wt, &["ls-tree", "-r", "--name-only", tree])
        .lines()
        .map(|name| {
            let content = sb.git(wt, &["cat-file", "-p", &format!("{tree}:{name}")]);
            (name.to_string(), content)
        })
        .collect()
}

/// What of the user's git state a snapshot must leave as it was.
fn user_state(sb: &Sandbox, wt: &Path) -> Vec<String> {
    vec![
        sb.git(wt, &["status", "--porcelain=v2", "--untracked-files=all"]),
        sb.git(wt, &["diff", "--cached"]),
        sb.git(wt, &["diff"]),
        sb.git(wt, &["rev-parse", "HEAD"]),
        sb.git(wt, &["symbolic-ref", "HEAD"]),
        sb.git(wt, &["stash", "list"]),
        sb.git(
            wt,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
                "refs/tags",
                "refs/stash",
                "refs/remotes",
            ],
        ),
    ]
}

/// A task of Claude Code (the stub) in a repository that ignores `*.log`,
/// with grove's hooks installed: (sandbox, repository, worktree, thread).
fn task() -> (Sandbox, PathBuf, PathBuf, String) {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    std::fs::write(repo.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(repo.join("kept.txt"), "kept\n").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "ignore logs"]);
    let (wt, id) = captured_task(&sb, &repo);
    (sb, repo, wt, id)
}

/// A Claude Code task of `repo` whose capture is installed: its worktree
/// and thread id.
fn captured_task(sb: &Sandbox, repo: &Path) -> (PathBuf, String) {
    let task = new_task(sb, repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap().to_string();
    ok(sb.grove(&wt).args(["capture", "install", &id]));
    (wt, id)
}

/// The index file of the worktree, as bytes.
fn index_bytes(sb: &Sandbox, wt: &Path) -> Vec<u8> {
    let path = sb.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    std::fs::read(path).unwrap()
}

const SESSION: &str = "5a1f0c1e-2b3c-4d5e-8f90-a1b2c3d4e5f6";

#[test]
fn a_captured_turn_snapshots_each_boundary_and_leaves_the_user_s_git_state_alone() {
    let (sb, _repo, wt, id) = task();
    // The user's own state: a staged change, an unstaged one, a stash, an
    // ignored file and an untracked one.
    std::fs::write(wt.join("staged.txt"), "staged\n").unwrap();
    sb.git(&wt, &["add", "staged.txt"]);
    std::fs::write(wt.join("stashed.txt"), "x\n").unwrap();
    sb.git(&wt, &["add", "stashed.txt"]);
    sb.git(&wt, &["stash", "push", "-q", "--", "stashed.txt"]);
    std::fs::write(wt.join("kept.txt"), "kept, edited\n").unwrap();
    std::fs::write(wt.join("debug.log"), "ignored\n").unwrap();
    std::fs::write(wt.join("notes.txt"), "untracked\n").unwrap();
    let before = user_state(&sb, &wt);
    let index_before = index_bytes(&sb, &wt);

    claude_turns(&sb, &wt, SESSION, false, &["run: echo one > a.txt"]);
    // The person, between turns.
    std::fs::write(wt.join("person.txt"), "mine\n").unwrap();
    claude_turns(
        &sb,
        &wt,
        SESSION,
        true,
        &["run: echo two >> a.txt && rm notes.txt"],
    );

    assert_eq!(
        index_bytes(&sb, &wt),
        index_before,
        "the user's index file is untouched"
    );
    assert_eq!(user_state(&sb, &wt)[1..], before[1..]);
    let status_now = user_state(&sb, &wt)[0].clone();
    assert!(
        status_now.contains("a.txt") && status_now.contains("person.txt"),
        "{status_now}"
    );

    let taken = snapshots(&wt, &id);
    let at: Vec<&str> = taken.iter().map(|s| s["at"].as_str().unwrap()).collect();
    assert_eq!(
        at,
        [
            "prompt", "toolCall", "turnEnd", "prompt", "toolCall", "turnEnd"
        ],
        "{taken:#?}"
    );
    let trees: Vec<&str> = taken.iter().map(|s| s["tree"].as_str().unwrap()).collect();
    let files = |i: usize| files_of(&sb, &wt, trees[i]);
    let has = |i: usize, name: &str, content: &str| {
        files(i)
            .iter()
            .any(|(n, c)| n == name && c.trim_end() == content)
    };
    let named = |i: usize, name: &str| files(i).iter().any(|(n, _)| n == name);
    // Before the agent's first turn: the user's worktree, untracked file
    // included, ignored file and threads left out.
    assert!(has(0, "kept.txt", "kept, edited"));
    assert!(has(0, "notes.txt", "untracked"));
    assert!(has(0, "staged.txt", "staged"));
    assert!(!named(0, "debug.log"), "an ignored file is no snapshot's");
    assert!(
        !files(0)
            .iter()
            .any(|(n, _)| n.starts_with(".agent/threads")),
        "the thread is not the code: {:?}",
        files(0)
    );
    assert!(!named(0, "a.txt"));
    // The tool call's change, then the turn's end with nothing more.
    assert!(has(1, "a.txt", "one"));
    assert_eq!(trees[2], trees[1]);
    assert_eq!(
        taken[2]["commit"], taken[1]["commit"],
        "no change, no commit"
    );
    // The person's file between the turns, the second call's changes.
    assert!(has(3, "person.txt", "mine"));
    assert!(!named(2, "person.txt"));
    assert!(has(4, "a.txt", "one\ntwo"));
    assert!(!named(4, "notes.txt"));
    // The last snapshot is what git itself makes of the worktree now.
    assert_eq!(trees[5], tree_of_worktree(&sb, &wt));

    // Each tool call's snapshot names its call, as the transcript does.
    let messages = message_lines(&wt.join(".agent/threads").join(&id));
    for s in taken.iter().filter(|s| s["at"] == "toolCall") {
        let call = s["toolCallId"].as_str().unwrap();
        assert_eq!(s["tool"], "Bash");
        assert!(
            messages.iter().any(|m| m["toolCalls"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["toolCallId"] == call))),
            "{call} is a call of the thread"
        );
        assert_eq!(s["sessionId"], SESSION);
    }
    // A prompt's snapshot goes on the prompt (the hook runs before the
    // agent writes it); a resumed session's end goes on the final reply
    // (its Stop runs before the reply is written).
    for prompt in [
        "run: echo one > a.txt",
        "run: echo two >> a.txt && rm notes.txt",
    ] {
        let message = messages
            .iter()
            .find(|m| m["role"] == "user" && m["content"][0]["text"] == prompt)
            .unwrap();
        let carried = message["metadata"]["grove"]["snapshots"].as_array();
        assert_eq!(
            carried.and_then(|c| c.last()).map(|s| s["at"].clone()),
            Some(Value::from("prompt")),
            "{message:#}"
        );
    }
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "agent");
    assert_eq!(
        last["metadata"]["grove"]["snapshots"][0]["at"], "turnEnd",
        "{last:#}"
    );
    let meta = read_json(&wt.join(".agent/threads").join(&id).join("thread.json"));
    assert!(
        meta["metadata"]["grove"].get("pendingSnapshots").is_none(),
        "{meta:#}"
    );
    // The chain: one ref, each snapshot commit on the previous one.
    let tip = sb.git(&wt, &["rev-parse", &format!("refs/grove/snapshots/{id}")]);
    assert_eq!(tip, taken[5]["commit"].as_str().unwrap());
    let chain = sb.git(&wt, &["rev-list", &tip]);
    for s in &taken {
        assert!(chain.contains(s["commit"].as_str().unwrap()));
    }
}

#[test]
fn the_ref_keeps_snapshots_through_gc_and_push_and_pull_carry_them_to_another_clone() {
    let (sb, a, b) = crate::sync::machines();
    sb.install_stubs();
    let (wt, id) = captured_task(&sb, &a);
    // Written by the agent and never committed: only snapshots hold it.
    claude_turns(
        &sb,
        &wt,
        SESSION,
        false,
        &["run: echo only-here > loose.txt"],
    );
    let taken = snapshots(&wt, &id);
    let tool = taken.iter().find(|s| s["at"] == "toolCall").unwrap();
    let blob = format!("{}:loose.txt", tool["tree"].as_str().unwrap());

    sb.git(&a, &["gc", "-q", "--prune=now"]);
    for s in &taken {
        sb.git(&a, &["cat-file", "-e", s["tree"].as_str().unwrap()]);
    }
    assert_eq!(sb.git(&a, &["cat-file", "-p", &blob]), "only-here");

    let pushed = json(&ok(sb.grove(&a).args(["push", &id, "--json"])));
    assert_eq!(pushed["snapshots"], serde_json::json!([id]), "{pushed:#}");
    let name = format!("refs/grove/snapshots/{id}");
    let tip = sb.git(&a, &["rev-parse", &name]);

    let pulled = json(&ok(sb.grove(&b).args(["pull", "--json"])));
    assert_eq!(pulled["snapshots"], serde_json::json!([id]), "{pulled:#}");
    assert_eq!(sb.git(&b, &["rev-parse", &name]), tip);
    sb.git(&b, &["gc", "-q", "--prune=now"]);
    assert_eq!(sb.git(&b, &["cat-file", "-p", &blob]), "only-here");
    // Pulled again, nothing moves.
    let again = json(&ok(sb.grove(&b).args(["pull", "--json"])));
    assert_eq!(again["snapshots"], serde_json::json!([]));
}

#[test]
fn snapshot_refs_pulled_under_names_that_are_no_thread_or_naming_no_commit_are_refused() {
    let (sb, a, b) = crate::sync::machines();
    let head = sb.git(&a, &["rev-parse", "HEAD"]);
    let blob = sb.git(&a, &["rev-parse", "HEAD:README.md"]);
    let thread = "0b7a3f52-5b7e-4c1e-9a6e-2f4d3c1b0a99";
    // Any name a thread may have is taken (it only adds objects here);
    // one that would be a path, or a ref naming no commit, is not.
    sb.git(&a, &["update-ref", "refs/grove/snapshots/T-other", &head]);
    sb.git(&a, &["update-ref", "refs/grove/snapshots/x/y", &head]);
    sb.git(
        &a,
        &[
            "update-ref",
            &format!("refs/grove/snapshots/{thread}"),
            &blob,
        ],
    );
    sb.git(
        &a,
        &[
            "push",
            "-q",
            "origin",
            "refs/grove/snapshots/*:refs/grove/snapshots/*",
        ],
    );
    let out = run(sb.grove(&b).args(["pull", "--json"]));
    assert_eq!(out.status.code(), Some(1), "a refused ref is a failure");
    let report = json(&String::from_utf8(out.stdout).unwrap());
    let mut failed: Vec<&str> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["threadId"].as_str().unwrap())
        .collect();
    failed.sort();
    assert_eq!(failed, [thread, "x/y"], "{report:#}");
    assert_eq!(report["snapshots"], serde_json::json!(["T-other"]));
    assert_eq!(
        sb.git(
            &b,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/grove/snapshots/"
            ]
        ),
        "refs/grove/snapshots/T-other",
        "nothing else of the remote's became this machine's"
    );
}

#[test]
fn snapshots_holding_a_secret_stay_home_unless_secrets_are_allowed() {
    let (sb, a, _b) = crate::sync::machines();
    sb.install_stubs();
    let (wt, id) = captured_task(&sb, &a);
    // The token is made by the command, so the conversation never holds it
    // (the thread leaves): only the file the agent wrote does.
    claude_turns(
        &sb,
        &wt,
        SESSION,
        false,
        &["run: printf '%s_%s\\n' ghp R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7 > token.txt"],
    );
    let name = format!("refs/grove/snapshots/{id}");
    let remote = a.parent().unwrap().join("remote.git");

    let out = run(sb.grove(&a).args(["push", &id, "--json"]));
    assert_eq!(out.status.code(), Some(1));
    let report = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(report["pushed"][0]["threadId"], id.as_str(), "{report:#}");
    assert_eq!(report["snapshots"], serde_json::json!([]));
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("github-token in token.txt"), "{report:#}");
    assert_eq!(sb.git(&remote, &["for-each-ref", &name]), "");

    let out = ok(sb
        .grove(&a)
        .args(["push", &id, "--allow-secrets", "--json"]));
    assert_eq!(json(&out)["snapshots"], serde_json::json!([id]));
    assert_ne!(sb.git(&remote, &["for-each-ref", &name]), "");
}

#[test]
fn a_user_who_turned_snapshots_off_gets_none() {
    let (sb, _repo, wt, id) = task();
    let config = sb.path().join("config.toml");
    std::fs::write(&config, "turn-snapshots = false\n").unwrap();
    let mut cmd = sb.agent("claude", &wt);
    cmd.args(["--session-id", SESSION, "run: echo one > a.txt"])
        .env("STUB_PROMPTS", "[]")
        .env("GROVE_CONFIG", &config);
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = wt.join(".agent/threads").join(&id);
    assert!(
        message_lines(&dir).len() >= 2,
        "the turn was captured all the same"
    );
    assert_eq!(snapshots(&wt, &id), Vec::<Value>::new());
    let refs = sb.git(&wt, &["for-each-ref", "refs/grove/"]);
    assert_eq!(refs, "", "no snapshot ref either");
}

#[test]
fn deleting_a_thread_takes_its_snapshot_ref_and_only_its_own() {
    let (sb, repo, wt, id) = task();
    let (other_wt, other) = captured_task(&sb, &repo);
    claude_turns(&sb, &wt, SESSION, false, &["run: echo one > a.txt"]);
    claude_turns(
        &sb,
        &other_wt,
        "6b2f0d2e-3c4d-4e5f-9a01-b2c3d4e5f607",
        false,
        &["run: echo two > b.txt"],
    );
    let refs = || {
        sb.git(
            &repo,
            &["for-each-ref", "--format=%(refname)", "refs/grove/"],
        )
    };
    let before = refs();
    assert!(before.contains(&id) && before.contains(&other), "{before}");
    ok(sb.grove(&repo).args(["delete", &id, "--yes", "--force"]));
    let after = refs();
    assert!(
        !after.contains(&id),
        "the deleted thread's ref went: {after}"
    );
    assert!(after.contains(&other), "the other thread's stays: {after}");
}

#[test]
fn review_shows_each_turn_s_diff_between_its_snapshots_and_the_person_s_edits_apart() {
    let (sb, _repo, wt, id) = task();
    claude_turns(&sb, &wt, SESSION, false, &["run: echo one > a.txt"]);
    std::fs::write(wt.join("person.txt"), "mine\n").unwrap();
    sb.git(&wt, &["add", "a.txt"]);
    sb.git(&wt, &["commit", "-q", "-m", "Add a"]);
    claude_turns(&sb, &wt, SESSION, true, &["run: echo two >> a.txt"]);

    let review: Value =
        serde_json::from_str(&ok(sb.grove(&wt).args(["review", "--json"]))).unwrap();
    assert_eq!(review["threadId"], id.as_str());
    assert_eq!(review["snapshots"], true);
    let entries = review["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["turn", "person", "turn"], "{review:#}");
    let files = |e: &Value| -> Vec<String> {
        e["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(files(&entries[0]), ["a.txt"]);
    assert_eq!(
        files(&entries[1]),
        ["person.txt"],
        "the person's edit is the person's"
    );
    assert_eq!(files(&entries[2]), ["a.txt"]);
    assert_eq!(entries[0]["prompt"], "run: echo one > a.txt");
    assert_eq!(entries[2]["prompt"], "run: echo two >> a.txt");
    for e in entries {
        let expected = sb.git(
            &wt,
            &[
                "diff",
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
            ],
        );
        assert_eq!(e["diff"].as_str().unwrap().trim_end(), expected.trim_end());
    }
    let commits = entries[0]["commits"].as_array().unwrap();
    assert!(
        commits
            .iter()
            .any(|c| c.as_str().unwrap().ends_with(" Add a")),
        "the commit carrying the turn's change: {commits:?}"
    );
    let human = ok(sb.grove(&wt).arg("review"));
    assert!(
        human.contains("Turn 1 (message 0)") && human.contains("The person's edits"),
        "{human}"
    );
    assert!(human.contains("+two"), "{human}");
}

#[test]
fn the_html_export_shows_each_turn_s_changes_and_keeps_a_diff_s_secret_home() {
    let (sb, _repo, wt, id) = task();
    claude_turns(&sb, &wt, SESSION, false, &["run: echo '<one>' > a.txt"]);
    let html = ok(sb.grove(&wt).args(["export", &id, "--format", "html"]));
    assert!(html.contains("Changes of turn 1 · a.txt"), "{html}");
    assert!(html.contains("+&lt;one&gt;"), "the diff, escaped: {html}");
    let before_prompt = html.find("Changes of turn 1").unwrap();
    assert!(
        before_prompt > html.find("id=\"m-0\"").unwrap(),
        "after the turn's prompt"
    );
    if has_browser() {
        // Still one page a browser builds, the change in it as text.
        let page = sb.path().join("turns.html");
        std::fs::write(&page, &html).unwrap();
        let dom = browser_dom(&sb, &page);
        let at = dom
            .find("<details class=\"change\"")
            .expect("the change block");
        assert!(dom[at..].contains("+&lt;one&gt;"), "{dom}");
        assert!(!dom.contains("<one>"), "the diff is text, never markup");
    }

    // The token is made by the command: only the diff holds it.
    claude_turns(
        &sb,
        &wt,
        SESSION,
        true,
        &["run: printf '%s_%s\\n' ghp R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7 > token.txt"],
    );
    let token = "ghp_R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7";
    let err = fails_with(sb.grove(&wt).args(["export", &id, "--format", "html"]), 1);
    assert!(err.contains("diffs hold 1 secret"), "{err}");
    let redacted = ok(sb
        .grove(&wt)
        .args(["export", &id, "--format", "html", "--redact"]));
    assert!(!redacted.contains(token) && redacted.contains("REDACTED"));
    let allowed = ok(sb
        .grove(&wt)
        .args(["export", &id, "--format", "html", "--allow-secrets"]));
    assert!(allowed.contains(token));
}
