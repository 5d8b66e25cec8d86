//! Crashes and clear errors: no panic on odd text, `new` always answers once
//! its worktree exists, submodules, file names that are not UTF-8, imports
//! that go on past a bad session, appends that write all or nothing.

use std::path::{Path, PathBuf};

use crate::support::*;

#[test]
fn non_ascii_fields_never_panic_show_export_or_import() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "accents");
    let path = repo.join(".agent/threads").join(&id).join("thread.json");
    let mut meta = read_json(&path);
    meta["context"]["gitBranch"] = serde_json::json!("main");
    meta["context"]["gitCommit"] = serde_json::json!("éééééééééé€€€");
    meta["git"] =
        serde_json::json!({"currentCommit": "ééééééé€€€€€", "commitsMade": [], "dirty": false});
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    ok(sb.grove(&repo).args(["show", &id]));
    ok(sb.grove(&repo).args(["export", &id, "--format", "md"]));
    // The commit names nothing: an error, not a panic.
    let out = run(sb.grove(&repo).args(["checkpoint", &id, "--json"]));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));

    let src = sb.dir("src");
    let session = "ééé€€€-session";
    std::fs::write(
        src.join("s.jsonl"),
        format!(
            "{{\"type\":\"assistant\",\"uuid\":\"u1\",\"parentUuid\":null,\"sessionId\":\"{session}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{{}}}}]}}}}\n"
        ),
    )
    .unwrap();
    let out = run(sb
        .grove(&repo)
        .args(["import", "claude"])
        .arg(src.join("s.jsonl")));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rollout = String::from(
        "{\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"ñññ€€€€€€\",\"cwd\":\"/x\"}}\n",
    );
    rollout.push_str("{\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"name\":\"sh\",\"arguments\":\"{}\",\"call_id\":\"c\"}}\n");
    std::fs::write(src.join("rollout-x.jsonl"), rollout).unwrap();
    let out = run(sb
        .grove(&repo)
        .args(["import", "codex"])
        .arg(src.join("rollout-x.jsonl")));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn once_the_worktree_exists_new_prints_its_path_and_records_the_problem() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "touch ran"}]}}),
    );
    std::fs::create_dir_all(sb.grove_home()).unwrap();
    std::fs::write(sb.grove_home().join("trust.json"), "{corrupt").unwrap();
    // The cache cannot be written: a file where its directory should be.
    std::fs::write(sb.grove_home().join("cache"), "not a directory").unwrap();

    let out = run(sb.grove(&repo).args(["new", "t", "--json"]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    assert!(wt.is_dir());
    assert!(
        !wt.join("ran").exists(),
        "a corrupt trust store means not trusted"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("trust store") && err.contains("cache"),
        "{err}"
    );
    let meta = read_json(&PathBuf::from(v["threadDir"].as_str().unwrap()).join("thread.json"));
    let problems = meta["metadata"]["grove"]["problems"].to_string();
    assert!(problems.contains("cache"), "{problems}");

    let out = run(sb.grove(&repo).args(["new", "strict", "--strict"]));
    assert_eq!(out.status.code(), Some(3));
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(path.is_dir(), "the path is printed under --strict too");
}

#[test]
fn rm_of_a_clean_worktree_with_a_submodule_works_and_checks_the_submodule() {
    let sb = Sandbox::new();
    let lib = sb.repo("lib");
    let repo = sb.repo("app");
    sb.git(
        &repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "lib",
        ],
    );
    sb.git(&repo, &["commit", "-qm", "add lib"]);
    let task = |title: &str| {
        let v = new_task(&sb, &repo, &[title]);
        let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
        sb.git(
            &wt,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "--init",
                "-q",
            ],
        );
        (v["threadId"].as_str().unwrap().to_string(), wt)
    };
    let (clean, wt) = task("clean");
    ok(sb.grove(&repo).args(["rm", &clean]));
    assert!(!wt.exists());

    let (dirty, wt) = task("dirty submodule");
    std::fs::write(wt.join("lib/README.md"), "changed").unwrap();
    let err = fails_with(sb.grove(&repo).args(["rm", &dirty]), 1);
    assert!(err.contains("lib"), "{err}");
    sb.git(&wt.join("lib"), &["commit", "-qam", "local only"]);
    sb.git(&wt, &["commit", "-qam", "bump lib"]);
    sb.git(
        &repo,
        &[
            "merge",
            "-q",
            "--ff-only",
            &sb.git(&wt, &["branch", "--show-current"]),
        ],
    );
    let err = fails_with(sb.grove(&repo).args(["rm", &dirty]), 1);
    assert!(
        err.contains("submodule lib") && err.contains("local only"),
        "{err}"
    );
    ok(sb.grove(&repo).args(["rm", &dirty, "--force"]));
}

#[test]
fn files_whose_names_are_not_utf8_are_carried() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    let tracked = std::ffi::OsStr::from_bytes(b"tracked-\xff.txt");
    std::fs::write(repo.join(tracked), "v1").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-qm", "latin-1 name"]);
    let v = new_task(&sb, &repo, &["source"]);
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    std::fs::write(wt.join(name), "untracked").unwrap();
    std::fs::write(wt.join(tracked), "v2").unwrap();
    let check = |dir: &Path| {
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), b"untracked");
        assert_eq!(std::fs::read(dir.join(tracked)).unwrap(), b"v2");
    };
    let fork = json(&ok(sb.grove(&repo).args([
        "fork",
        v["threadId"].as_str().unwrap(),
        "--json",
    ])));
    check(Path::new(fork["worktreePath"].as_str().unwrap()));
    let carried = new_task(&sb, &wt, &["carried", "--carry"]);
    check(Path::new(carried["worktreePath"].as_str().unwrap()));
    check(&wt);
}

#[test]
fn a_bad_session_never_stops_the_others_and_is_named_by_file_and_line() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.dir("sessions");
    let record = |session: &str, uuid: &str, content: &str| {
        format!(
            "{{\"type\":\"user\",\"uuid\":\"{uuid}\",\"parentUuid\":null,\"sessionId\":\"{session}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":{content}}}}}\n"
        )
    };
    std::fs::write(src.join("a.jsonl"), record("good-a", "a1", "\"hello a\"")).unwrap();
    std::fs::write(
        src.join("b.jsonl"),
        record("bad/../id", "b1", "\"hello b\""),
    )
    .unwrap();
    let image = r#"[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"***not base64***"}}]"#;
    std::fs::write(
        src.join("c.jsonl"),
        format!(
            "{}{}",
            record("bad-image", "c1", "\"first\""),
            record("bad-image", "c2", image)
        ),
    )
    .unwrap();
    std::fs::write(src.join("d.jsonl"), record("good-d", "d1", "\"hello d\"")).unwrap();
    let out = run(sb.grove(&repo).args(["import", "claude"]).arg(&src));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "something was not imported as it was: {err}"
    );
    assert!(
        err.contains(&format!("{}:1", src.join("b.jsonl").display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:2", src.join("c.jsonl").display())),
        "{err}"
    );
    let ids: Vec<String> = list_rows(&sb, &repo)
        .iter()
        .map(|r| r["threadId"].as_str().unwrap().to_string())
        .collect();
    for id in ["claude-good-a", "claude-good-d", "claude-bad-image"] {
        assert!(ids.contains(&id.to_string()), "{id}: {ids:?}");
    }
    assert!(
        ids.iter().any(|i| i.starts_with("claude-bad-..-id-")),
        "an unsafe session id gets a safe thread id: {ids:?}"
    );
    // The bad image is a placeholder keeping the original block.
    let shown = json(&ok(sb.grove(&repo).args([
        "show",
        "claude-bad-image",
        "--json",
    ])));
    let block = &shown["messages"][1]["content"][0];
    assert_eq!(block["type"], "text");
    assert!(
        block["text"]
            .as_str()
            .unwrap()
            .contains("image not imported")
    );
    assert_eq!(block["unimported"]["data"], "***not base64***");
}

#[test]
fn append_stdin_with_an_invalid_message_after_valid_ones_writes_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "all or nothing");
    let dir = repo.join(".agent/threads").join(&id);
    let before = (
        std::fs::read(dir.join("messages.jsonl")).unwrap(),
        std::fs::read(dir.join("thread.json")).unwrap(),
    );
    for bad in [
        r#"{"role":"user","content":42}"#,
        r#"{"role":"robot","content":[]}"#,
        r#"{"role":"user","content":[{"type":"image","data":"%%%","mimeType":"image/png"}]}"#,
        r#"{"role":"user","content":[]"#,
    ] {
        let input = format!(
            "{}\n{}\n{bad}\n",
            r#"{"role":"user","content":[{"type":"text","text":"one"}]}"#,
            r#"{"role":"agent","content":[{"type":"text","text":"two"}]}"#
        );
        let out = run_with_stdin(
            sb.grove(&repo).args(["append", &id, "--stdin"]),
            input.as_bytes(),
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("#3"));
        assert_eq!(
            std::fs::read(dir.join("messages.jsonl")).unwrap(),
            before.0,
            "{bad}"
        );
        assert_eq!(
            std::fs::read(dir.join("thread.json")).unwrap(),
            before.1,
            "{bad}"
        );
        assert!(!dir.join("assets").exists(), "{bad}");
    }
}

#[test]
fn an_append_whose_thread_json_cannot_be_rewritten_still_reports_success() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "big metadata");
    let dir = repo.join(".agent/threads").join(&id);
    let path = dir.join("thread.json");
    let mut meta = read_json(&path);
    meta["metadata"]["blob"] = serde_json::json!("m".repeat(200_000));
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    // Files may not grow past 100 KB: the line fits in the log, the new
    // thread.json does not (SIGXFSZ ignored, so the write fails with EFBIG).
    let mut cmd = std::process::Command::new("sh");
    sb.env(&mut cmd);
    let out = cmd
        .args([
            "-c",
            &format!(
                "trap '' XFSZ; ulimit -f 200; exec {GROVE} append {id} --role user --text written"
            ),
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the message is in the log: {err}"
    );
    assert!(err.contains("thread.json was not updated"), "{err}");
    assert_eq!(message_lines(&dir).len(), 1);
    // The next append recounts.
    ok(sb
        .grove(&repo)
        .args(["append", &id, "--role", "user", "--text", "again"]));
    assert_eq!(read_json(&path)["stats"]["messageCount"], 2);
}
