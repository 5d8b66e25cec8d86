//! The file format: fixtures round-trip, unknown fields survive, versions,
//! deterministic bytes, the default .gitignore.

use grove::atsf::{self, Config, Message, ThreadMeta};
use serde_json::Value;

use crate::support::*;

const SPEC_THREAD: &str = "a1b2c3d4-e5f6-7890-abcd-ef1234567890";

fn spec_dir() -> std::path::PathBuf {
    fixtures().join("atsf/spec-example/.agent")
}

#[test]
fn spec_examples_parse_and_round_trip_without_losing_a_field() {
    let config_path = spec_dir().join("config.json");
    let config: Config = atsf::read_json_file(&config_path).unwrap();
    let hooks = config.worktree_hooks.as_ref().unwrap();
    assert_eq!(hooks.symlinks.as_ref().unwrap().len(), 2);
    assert_eq!(
        hooks.post_setup_commands.as_ref().unwrap()[0].timeout,
        Some(300_000)
    );
    let back: Value = serde_json::from_slice(&atsf::to_pretty(&config).unwrap()).unwrap();
    assert_eq!(back, read_json(&config_path));

    let thread_path = spec_dir()
        .join("threads")
        .join(SPEC_THREAD)
        .join("thread.json");
    let meta: ThreadMeta = atsf::read_json_file(&thread_path).unwrap();
    assert_eq!(
        meta.context.worktree.as_ref().unwrap().branch,
        "am-a1b2c3d4"
    );
    let back: Value = serde_json::from_slice(&atsf::to_pretty(&meta).unwrap()).unwrap();
    assert_eq!(back, read_json(&thread_path));

    let log = spec_dir()
        .join("threads")
        .join(SPEC_THREAD)
        .join("messages.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2);
    for (i, line) in text.lines().enumerate() {
        let message = atsf::parse_message_line(&log, i as u64 + 1, line.as_bytes()).unwrap();
        let again = atsf::to_line(&message).unwrap();
        // The spec's lines are already in grove's canonical order: byte-identical.
        assert_eq!(String::from_utf8(again).unwrap(), format!("{line}\n"));
    }
}

#[test]
fn unknown_fields_at_every_level_survive_an_append() {
    let sb = Sandbox::new();
    let project = sb.dir("p");
    copy_tree(&fixtures().join("atsf/unknown-fields"), &project);
    let thread_dir = project.join(".agent/threads/u-1");
    let before_meta = read_json(&thread_dir.join("thread.json"));
    let before_line = std::fs::read_to_string(thread_dir.join("messages.jsonl")).unwrap();
    let before_config = std::fs::read(project.join(".agent/config.json")).unwrap();

    let message = r#"{"role":"agent","content":[{"type":"text","text":"ok","citations":[1]},{"type":"hologram","depth":3}],"toolCalls":[{"toolCallId":"c2","name":"bash","status":"failed","diff":{"path":"x","oldText":"","newText":"y","mode":"100644"},"retry":{"n":1}}],"tokens":{"input":5,"reasoning":9},"traceId":"t-9"}"#;
    let out = run_with_stdin(
        sb.grove(&project).args(["append", "u-1", "--stdin"]),
        message.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // config.json is not rewritten at all.
    assert_eq!(
        std::fs::read(project.join(".agent/config.json")).unwrap(),
        before_config
    );
    // The first line is untouched, byte for byte; the new one keeps its unknown fields.
    let text = std::fs::read_to_string(thread_dir.join("messages.jsonl")).unwrap();
    assert!(text.starts_with(&before_line));
    let lines = message_lines(&thread_dir);
    let new = &lines[1];
    assert_eq!(new["traceId"], "t-9");
    assert_eq!(new["content"][0]["citations"], serde_json::json!([1]));
    assert_eq!(
        new["content"][1],
        serde_json::json!({"type":"hologram","depth":3})
    );
    assert_eq!(new["toolCalls"][0]["retry"]["n"], 1);
    assert_eq!(new["toolCalls"][0]["diff"]["mode"], "100644");
    assert_eq!(new["tokens"]["reasoning"], 9);

    // thread.json: every field is still there; only updatedAt, the counts,
    // the version counter and grove's own key changed.
    let mut after = read_json(&thread_dir.join("thread.json"));
    assert_eq!(
        after["v"], 1,
        "the version counter starts at 0 and was bumped once"
    );
    assert_eq!(after["stats"]["messageCount"], 2);
    assert_eq!(after["stats"]["agentMessageCount"], 1);
    assert_eq!(
        after["stats"]["toolCallCount"], 2,
        "one from the old line, one new"
    );
    assert_eq!(after["stats"]["bytes"], 10, "unknown stats field kept");
    assert_eq!(
        after["metadata"]["otherApp"],
        before_meta["metadata"]["otherApp"]
    );
    assert!(after["metadata"]["grove"].is_object());
    let mut expected = before_meta.clone();
    for v in [&mut after, &mut expected] {
        let o = v.as_object_mut().unwrap();
        o.remove("updatedAt");
        o.remove("stats");
        o.remove("v");
        o["metadata"].as_object_mut().unwrap().remove("grove");
    }
    assert_eq!(after, expected);
}

#[test]
fn a_newer_major_version_is_refused_and_the_files_are_left_untouched() {
    let sb = Sandbox::new();
    let project = sb.dir("p");
    copy_tree(&fixtures().join("atsf/unknown-fields"), &project);
    let thread_json = project.join(".agent/threads/u-1/thread.json");
    let text = std::fs::read_to_string(&thread_json)
        .unwrap()
        .replace("\"1.9\"", "\"2.0\"");
    std::fs::write(&thread_json, &text).unwrap();
    let before = snapshot(&project);

    for args in [
        vec!["append", "u-1", "--role", "user", "--text", "x"],
        vec!["repair", "u-1"],
        vec!["show", "u-1"],
    ] {
        let err = fails_with(sb.grove(&project).args(&args), 1);
        assert!(err.contains("2.0"), "names the version: {err}");
        assert!(err.contains("thread.json"), "names the file: {err}");
    }
    assert_eq!(snapshot(&project), before);

    // A 2.0 config is refused too.
    let config = project.join(".agent/config.json");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("\"1.3\"", "\"2.0\"");
    std::fs::write(&config, &text).unwrap();
    let err = fails_with(sb.grove(&project).args(["new", "--no-worktree", "t"]), 1);
    assert!(err.contains("config.json") && err.contains("2.0"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

#[test]
fn minor_versions_of_1_are_accepted() {
    let p = std::path::Path::new("thread.json");
    for ok in ["1.0", "1.1", "1.9", "1.10"] {
        assert!(atsf::check_spec_version(p, ok).is_ok(), "{ok}");
    }
    for bad in ["2.0", "10.1", "0.9", "1", "one", ""] {
        assert!(atsf::check_spec_version(p, bad).is_err(), "{bad}");
    }
}

#[test]
fn the_same_thread_written_twice_gives_identical_bytes() {
    let path = spec_dir()
        .join("threads")
        .join(SPEC_THREAD)
        .join("thread.json");
    let meta: ThreadMeta = atsf::read_json_file(&path).unwrap();
    let a = atsf::to_pretty(&meta).unwrap();
    let reparsed: ThreadMeta = serde_json::from_slice(&a).unwrap();
    let b = atsf::to_pretty(&reparsed).unwrap();
    assert_eq!(a, b);
    let text = String::from_utf8(a).unwrap();
    assert!(
        text.starts_with("{\n  \"specVersion\": \"1.0\",\n  \"threadId\""),
        "{text}"
    );
    assert!(text.ends_with("}\n"));

    // Unknown fields come out in a stable (sorted) order whatever the input order.
    let m1: Message = serde_json::from_str(
        r#"{"id":"a","role":"user","timestamp":"2025-01-01T00:00:00.000Z","content":[],"zeta":1,"alpha":2}"#,
    )
    .unwrap();
    let m2: Message = serde_json::from_str(
        r#"{"alpha":2,"content":[],"zeta":1,"timestamp":"2025-01-01T00:00:00.000Z","role":"user","id":"a"}"#,
    )
    .unwrap();
    assert_eq!(atsf::to_line(&m1).unwrap(), atsf::to_line(&m2).unwrap());
    assert_eq!(
        String::from_utf8(atsf::to_line(&m1).unwrap()).unwrap(),
        "{\"id\":\"a\",\"role\":\"user\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"content\":[],\"alpha\":2,\"zeta\":1}\n"
    );
}

#[test]
fn timestamps_are_utc_with_milliseconds() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let input = r#"{"role":"user","timestamp":"2025-02-14T12:30:00+02:00","content":[{"type":"text","text":"x"}]}"#;
    append_stdin(&sb, &repo, &id, input);
    let dir = repo.join(".agent/threads").join(&id);
    let meta = read_json(&dir.join("thread.json"));
    let shape = |s: &str| {
        s.len() == 24 && s.ends_with('Z') && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.'
    };
    assert!(shape(meta["createdAt"].as_str().unwrap()), "{meta}");
    assert_eq!(
        message_lines(&dir)[0]["timestamp"],
        "2025-02-14T10:30:00.000Z"
    );
    assert_eq!(meta["updatedAt"], "2025-02-14T10:30:00.000Z");

    let bad = r#"{"role":"user","timestamp":"yesterday","content":[]}"#;
    let out = run_with_stdin(
        sb.grove(&repo).args(["append", &id, "--stdin"]),
        bad.as_bytes(),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "an invalid message is a usage error"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("yesterday"));
}

#[test]
fn init_writes_the_spec_gitignore_and_never_overwrites() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let sub = repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let stdout = ok(sb.grove(&sub).arg("init"));
    assert_eq!(
        stdout.trim(),
        repo.join(".agent").display().to_string(),
        "at the repository root"
    );
    let gitignore = std::fs::read_to_string(repo.join(".agent/.gitignore")).unwrap();
    assert_eq!(gitignore, atsf::DEFAULT_GITIGNORE);
    assert!(gitignore.contains("threads/*/messages.jsonl\nthreads/*/assets/\n"));
    let config = read_json(&repo.join(".agent/config.json"));
    assert_eq!(config["specVersion"], "1.1");
    assert_eq!(config["createdBy"]["name"], "grove");
    assert_eq!(config["createdBy"]["version"], env!("CARGO_PKG_VERSION"));

    // User edits survive a second init.
    std::fs::write(repo.join(".agent/.gitignore"), "mine\n").unwrap();
    std::fs::write(
        repo.join(".agent/config.json"),
        "{\"specVersion\":\"1.1\",\"defaults\":{\"agentId\":\"amp\"}}\n",
    )
    .unwrap();
    let out = json(&ok(sb.grove(&repo).args(["init", "--json"])));
    assert_eq!(out["createdConfig"], false);
    assert_eq!(out["createdGitignore"], false);
    assert_eq!(
        std::fs::read_to_string(repo.join(".agent/.gitignore")).unwrap(),
        "mine\n"
    );
    assert!(
        std::fs::read_to_string(repo.join(".agent/config.json"))
            .unwrap()
            .contains("amp")
    );

    // Outside a repository: the current directory.
    let plain = sb.dir("plain");
    ok(sb.grove(&plain).arg("init"));
    assert!(plain.join(".agent/config.json").is_file());
    assert!(plain.join(".agent/.gitignore").is_file());
}

#[test]
fn new_thread_creates_agent_dir_with_gitignore() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    new_thread(&sb, &repo, "t");
    assert_eq!(
        std::fs::read_to_string(repo.join(".agent/.gitignore")).unwrap(),
        atsf::DEFAULT_GITIGNORE
    );
}
