//! `grove capture install` / `uninstall` and the agents' settings files they
//! edit: the user's file comes back byte for byte, and the report says which
//! events got grove's hook and which did not, and why.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

const CLAUDE_EVENTS: [&str; 9] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "SubagentStop",
    "SessionEnd",
];

/// A task of `agent` in a new repository: (worktree, thread id).
fn task(sb: &Sandbox, agent: &str) -> (PathBuf, String) {
    let repo = sb.repo("app");
    let task = new_task(sb, &repo, &["Task", "--agent", agent]);
    (
        PathBuf::from(task["worktreePath"].as_str().unwrap()),
        task["threadId"].as_str().unwrap().to_string(),
    )
}

fn settings(wt: &Path) -> PathBuf {
    wt.join(".claude/settings.local.json")
}

/// The commands of every hook of `event` in a settings value.
fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str().map(str::to_string))
        .collect()
}

fn grove_hooks(settings: &Value) -> usize {
    CLAUDE_EVENTS
        .iter()
        .flat_map(|e| commands(settings, e))
        .filter(|c| c.contains("capture claude --thread"))
        .count()
}

/// Settings files as people write them: tabs, CRLF, four spaces, minified,
/// no final newline, keys not sorted, `1.50`, escapes, empty groups, empty
/// event lists, an empty `hooks`.
const UNUSUAL: &[&str] = &[
    "{\n\t\"zeta\": 1.50,\n\t\"alpha\": \"caf\\u00e9 \\/ \\ud83d\\ude00\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"matcher\": \"\", \"hooks\": []},\n\t\t\t{\n\t\t\t\t\"hooks\": [ { \"type\": \"command\", \"command\": \"echo stop\" } ]\n\t\t\t}\n\t\t],\n\t\t\"Notification\": [ ]\n\t},\n\t\"permissions\": { \"allow\": [ \"Bash(ls:*)\" ], \"deny\": [] }\n}",
    "{\r\n    \"model\" : \"opus\",\r\n    \"hooks\" : {\r\n        \"PreToolUse\" : [\r\n            {\r\n                \"matcher\" : \"Bash\",\r\n                \"hooks\" : [\r\n                    {\"type\":\"command\",\"command\":\"check.sh\",\"timeout\":1.0e1}\r\n                ]\r\n            }\r\n        ]\r\n    }\r\n}\r\n",
    "{\"b\":1,\"a\":[],\"hooks\":{\"Stop\":[{\"hooks\":[]}]}}",
    "{}",
    "{ }\n",
    "{\n  \"hooks\": {}\n}\n",
    "{\n  \"hooks\": {\n  },\n  \"x\": null\n}\n",
    "{\"hooks\":{\"SessionEnd\":[]},\"env\":{\"A\":\"1\"}}\n\n",
];

#[test]
fn install_then_uninstall_gives_the_users_settings_back_byte_for_byte() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    for original in UNUSUAL {
        std::fs::write(settings(&wt), original).unwrap();
        #[cfg(unix)]
        set_mode(&settings(&wt), 0o600);
        ok(sb.grove(&wt).args(["capture", "install", &id]));
        let installed = std::fs::read_to_string(settings(&wt)).unwrap();
        let value: Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(grove_hooks(&value), 9, "{installed}");
        // Installing again changes nothing.
        ok(sb.grove(&wt).args(["capture", "install", &id]));
        assert_eq!(std::fs::read_to_string(settings(&wt)).unwrap(), installed);
        ok(sb.grove(&wt).args(["capture", "uninstall", &id]));
        assert_eq!(
            std::fs::read_to_string(settings(&wt)).unwrap(),
            *original,
            "after install:\n{installed}"
        );
        #[cfg(unix)]
        assert_eq!(mode(&settings(&wt)), 0o600, "the file's permissions stay");
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn install_keeps_the_users_text_as_it_is_and_adds_in_its_style() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    std::fs::write(settings(&wt), UNUSUAL[0]).unwrap();
    ok(sb.grove(&wt).args(["capture", "install", &id]));
    let installed = std::fs::read_to_string(settings(&wt)).unwrap();
    for kept in [
        "{\n\t\"zeta\": 1.50,\n\t\"alpha\": \"caf\\u00e9 \\/ \\ud83d\\ude00\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"matcher\": \"\", \"hooks\": []},\n\t\t\t{\n\t\t\t\t\"hooks\": [ { \"type\": \"command\", \"command\": \"echo stop\" } ]\n\t\t\t}",
        "\t\"permissions\": { \"allow\": [ \"Bash(ls:*)\" ], \"deny\": [] }\n}",
    ] {
        assert!(installed.contains(kept), "{kept:?} in\n{installed}");
    }
    assert!(
        !installed.contains("  "),
        "indented with tabs like the rest:\n{installed}"
    );
    let value: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(
        commands(&value, "Stop")[0],
        "echo stop",
        "the user's hooks run first"
    );
}

#[test]
fn uninstall_keeps_what_the_user_changed_after_install() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    let original = UNUSUAL[0];
    std::fs::write(settings(&wt), original).unwrap();
    ok(sb.grove(&wt).args(["capture", "install", &id]));
    // While grove's hooks are in, the user (or Claude Code, approving a
    // command) changes other parts of the file.
    let edit = |text: &str| {
        text.replace("\"zeta\": 1.50", "\"zeta\": 2.50")
            .replace("\"Bash(ls:*)\" ]", "\"Bash(ls:*)\", \"Bash(git:*)\" ]")
    };
    let installed = std::fs::read_to_string(settings(&wt)).unwrap();
    std::fs::write(settings(&wt), edit(&installed)).unwrap();
    ok(sb.grove(&wt).args(["capture", "uninstall", &id]));
    assert_eq!(
        std::fs::read_to_string(settings(&wt)).unwrap(),
        edit(original)
    );
}

#[test]
fn uninstall_removes_the_file_and_directory_install_created() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    assert!(!wt.join(".claude").exists());
    ok(sb.grove(&wt).args(["capture", "install", &id]));
    assert!(settings(&wt).is_file());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    ok(sb.grove(&wt).args(["capture", "uninstall", &id]));
    assert!(
        !wt.join(".claude").exists(),
        "{:?}",
        std::fs::read_dir(wt.join(".claude")).map(|d| d.count())
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");

    // A directory that was there stays; the file install created goes.
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    ok(sb.grove(&wt).args(["capture", "install", &id]));
    ok(sb.grove(&wt).args(["capture", "uninstall", &id]));
    assert!(wt.join(".claude").is_dir());
    assert!(!settings(&wt).exists());
}

#[test]
fn a_file_grove_cannot_read_as_a_json_object_or_a_link_is_never_rewritten() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();
    for (content, why) in [
        ("{\"hooks\": {,}}", "not valid JSON"),
        ("[{\"hooks\": {}}]\n", "not a JSON object"),
        ("\u{feff}{}", "not valid JSON"),
    ] {
        std::fs::write(settings(&wt), content).unwrap();
        let out = run(sb.grove(&wt).args(["capture", "install", &id, "--json"]));
        assert_eq!(out.status.code(), Some(1), "nothing was installed");
        let report = json(&String::from_utf8(out.stdout).unwrap());
        let agent = &report["agents"][0];
        assert_eq!(agent["installed"], serde_json::json!([]));
        assert_eq!(agent["skipped"].as_array().unwrap().len(), 9, "{report}");
        let reason = agent["skipped"][0]["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{reason}");
        assert_eq!(std::fs::read_to_string(settings(&wt)).unwrap(), content);

        let err = fails_with(sb.grove(&wt).args(["capture", "uninstall", &id]), 1);
        assert!(err.contains(why), "{err}");
        assert_eq!(std::fs::read_to_string(settings(&wt)).unwrap(), content);
    }

    #[cfg(unix)]
    {
        let shared = sb.path().join("shared-settings.json");
        std::fs::write(&shared, "{\"model\": \"opus\"}").unwrap();
        std::fs::remove_file(settings(&wt)).unwrap();
        std::os::unix::fs::symlink(&shared, settings(&wt)).unwrap();
        let err = fails_with(sb.grove(&wt).args(["capture", "install", &id]), 1);
        assert!(err.contains("symbolic link"), "{err}");
        let err = fails_with(sb.grove(&wt).args(["capture", "uninstall", &id]), 1);
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&shared).unwrap(),
            "{\"model\": \"opus\"}"
        );
        assert!(
            std::fs::symlink_metadata(settings(&wt))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[test]
fn install_says_which_events_got_the_hook_and_fails_when_none_did() {
    let sb = Sandbox::new();
    let (wt, id) = task(&sb, "claude-code");
    std::fs::create_dir_all(wt.join(".claude")).unwrap();

    // `hooks` is not a table of events: no hook can go in.
    std::fs::write(settings(&wt), "{\"hooks\": []}").unwrap();
    let out = run(sb.grove(&wt).args(["capture", "install", &id, "--json"]));
    assert_eq!(out.status.code(), Some(1));
    let report = json(&String::from_utf8(out.stdout).unwrap());
    let agent = &report["agents"][0];
    assert_eq!(agent["agent"], "claude-code");
    assert_eq!(agent["installed"], serde_json::json!([]));
    let skipped: Vec<&str> = agent["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["event"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, CLAUDE_EVENTS);
    assert!(
        agent["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not an object"),
        "{report}"
    );
    assert_eq!(report["files"], serde_json::json!([]), "nothing written");
    assert_eq!(
        std::fs::read_to_string(settings(&wt)).unwrap(),
        "{\"hooks\": []}"
    );
    let err = fails_with(sb.grove(&wt).args(["capture", "install", &id]), 1);
    assert!(err.contains("no capture hook installed"), "{err}");
    assert!(err.contains("not an object"), "{err}");
    assert!(!err.contains("hooks installed for"), "{err}");

    // One event whose list is not a list: the others get the hook, that
    // one is named with why, and the exit code says not everything went in.
    std::fs::write(settings(&wt), "{\"hooks\": {\"Stop\": \"say done\"}}").unwrap();
    let out = run(sb.grove(&wt).args(["capture", "install", &id, "--json"]));
    assert_eq!(out.status.code(), Some(4));
    let report = json(&String::from_utf8(out.stdout).unwrap());
    let agent = &report["agents"][0];
    assert_eq!(agent["installed"].as_array().unwrap().len(), 8, "{report}");
    assert_eq!(agent["skipped"][0]["event"], "Stop");
    assert!(
        agent["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not a list"),
        "{report}"
    );
    let value = read_json(&settings(&wt));
    assert_eq!(value["hooks"]["Stop"], "say done");
    assert_eq!(grove_hooks(&value), 8);
    let err = fails_with(sb.grove(&wt).args(["capture", "install", &id]), 4);
    assert!(err.contains("Stop"), "{err}");

    // Everything in: exit 0, every event named.
    std::fs::remove_file(settings(&wt)).unwrap();
    let report = json(&ok(sb
        .grove(&wt)
        .args(["capture", "install", &id, "--json"])));
    let agent = &report["agents"][0];
    assert_eq!(agent["installed"], serde_json::json!(CLAUDE_EVENTS));
    assert_eq!(agent["skipped"], serde_json::json!([]));
    assert_eq!(agent["file"], settings(&wt).to_str().unwrap());
}

#[test]
fn a_tracked_settings_file_is_named_as_the_reason_nothing_was_installed() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.local.json"), "{}\n").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "settings"]);
    let task = new_task(&sb, &repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let err = fails_with(sb.grove(&wt).args(["capture", "install"]), 1);
    assert!(err.contains("tracked"), "{err}");
    assert_eq!(std::fs::read_to_string(settings(&wt)).unwrap(), "{}\n");
}

#[test]
fn codex_with_a_tracked_hooks_json_gets_groves_own_config_toml_again_and_again() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    std::fs::create_dir_all(repo.join(".codex")).unwrap();
    std::fs::write(repo.join(".codex/hooks.json"), "{\"hooks\": {}}\n").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "codex hooks"]);
    let task = new_task(&sb, &repo, &["Task", "--agent", "codex"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    codex_trusts(&sb, &repo, "");
    for _ in 0..2 {
        let report = json(&ok(sb.grove(&wt).args([
            "capture",
            "install",
            "--trust-agent",
            "--json",
        ])));
        let agent = &report["agents"][0];
        assert_eq!(agent["agent"], "codex");
        assert_eq!(agent["installed"].as_array().unwrap().len(), 7, "{report}");
        // The main worktree's, which Codex reads (the tracked file stays).
        assert_eq!(
            agent["file"],
            repo.join(".codex/config.toml").to_str().unwrap()
        );
        assert_eq!(agent["trust"]["trusted"].as_array().unwrap().len(), 7);
    }
    assert_eq!(
        std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap(),
        "{\"hooks\": {}}\n"
    );
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    // Codex runs them from the task's worktree.
    assert!(run(sb.agent("codex", &wt).arg("Go")).status.success());
    let log = std::fs::read_to_string(wt.join(format!(".agent/threads/{id}/logs/capture.log")))
        .unwrap_or_default();
    assert!(log.contains("Stop"), "{log:?}");

    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    assert!(!repo.join(".codex/config.toml").exists());
    assert!(!repo.join(".codex/.gitignore").exists());
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(sb.path().join("codex/config.toml")).unwrap(),
        trusted_config(&repo, "")
    );

    // A config.toml of the repository's too: nothing can go in.
    std::fs::write(repo.join(".codex/config.toml"), "model = \"o3\"\n").unwrap();
    let err = fails_with(sb.grove(&wt).args(["capture", "install"]), 1);
    assert!(err.contains("the repository's own"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.join(".codex/config.toml")).unwrap(),
        "model = \"o3\"\n"
    );
}

/// The user's Codex config trusting `repo` (Codex's "Trust this folder?"),
/// with `rest` before it.
fn trusted_config(repo: &Path, rest: &str) -> String {
    format!(
        "{rest}[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.display()
    )
}

fn codex_trusts(sb: &Sandbox, repo: &Path, rest: &str) {
    std::fs::create_dir_all(sb.path().join("codex")).unwrap();
    std::fs::write(
        sb.path().join("codex/config.toml"),
        trusted_config(repo, rest),
    )
    .unwrap();
}

#[test]
fn codex_hooks_serve_every_task_of_the_repository_and_go_with_the_last() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    let a = new_task(&sb, &repo, &["A", "--agent", "codex"]);
    let b = new_task(&sb, &repo, &["B", "--agent", "codex"]);
    let (wa, wb) = (
        PathBuf::from(a["worktreePath"].as_str().unwrap()),
        PathBuf::from(b["worktreePath"].as_str().unwrap()),
    );
    let (ia, ib) = (
        a["threadId"].as_str().unwrap(),
        b["threadId"].as_str().unwrap(),
    );
    // The user's own hooks and config, which must come back byte for byte.
    std::fs::create_dir_all(repo.join(".codex")).unwrap();
    let hooks =
        "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"true\"}]}]}}";
    std::fs::write(repo.join(".codex/hooks.json"), hooks).unwrap();
    let mine = "# mine\nmodel = \"o3\" # keep\n\n";
    codex_trusts(&sb, &repo, mine);
    let config = sb.path().join("codex/config.toml");
    let before = std::fs::read_to_string(&config).unwrap();

    let first = json(&ok(sb.grove(&wa).args([
        "capture",
        "install",
        "--trust-agent",
        "--json",
    ])));
    let text = std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap();
    let second = json(&ok(sb.grove(&wb).args([
        "capture",
        "install",
        "--trust-agent",
        "--json",
    ])));
    assert_eq!(
        std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap(),
        text,
        "one command for both tasks: the second install changes nothing"
    );
    assert_eq!(
        second["agents"][0]["files"],
        serde_json::json!([wb.join(".codex")])
    );
    assert_eq!(
        first["agents"][0]["trust"]["trusted"],
        second["agents"][0]["trust"]["trusted"]
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    let command = value["hooks"]["Stop"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.ends_with(" capture codex"),
        "no thread in it: {command}"
    );
    let trusted = std::fs::read_to_string(&config).unwrap();
    assert!(trusted.starts_with(&before), "{trusted}");
    assert!(
        trusted.contains(&format!(
            "[hooks.state.\"{}:stop:1:0\"]",
            repo.join(".codex/hooks.json").display()
        )),
        "{trusted}"
    );

    // Each task's Codex session goes into its own thread, whatever
    // GROVE_THREAD the environment carries.
    for (wt, id, other) in [(&wa, ia, ib), (&wb, ib, ia)] {
        let out = run(sb
            .agent("codex", wt)
            .arg(format!("for {id}"))
            .env("GROVE_THREAD", other));
        assert!(out.status.success());
        let log = std::fs::read_to_string(wt.join(format!(".agent/threads/{id}/logs/capture.log")))
            .unwrap();
        assert!(log.contains("UserPromptSubmit"), "{log}");
    }
    for (wt, id) in [(&wa, ia), (&wb, ib)] {
        let messages = message_lines(&wt.join(".agent/threads").join(id));
        let users: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"][0]["text"].as_str())
            .collect();
        assert_eq!(users, vec![format!("for {id}")], "{messages:?}");
    }

    // Codex adds its own state after grove's block (a hook the user trusted).
    let codex_added =
        "\n[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n";
    std::fs::write(&config, format!("{trusted}{codex_added}")).unwrap();

    let out = json(&ok(sb.grove(&wa).args(["capture", "uninstall", "--json"])));
    assert_eq!(
        out["agents"][0]["keptFor"],
        serde_json::json!([ib]),
        "{out}"
    );
    assert!(!wa.join(".codex").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap(),
        text,
        "B still uses them"
    );
    ok(sb.grove(&wb).args(["capture", "uninstall"]));
    assert_eq!(
        std::fs::read_to_string(repo.join(".codex/hooks.json")).unwrap(),
        hooks
    );
    assert!(!wb.join(".codex").exists());
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!("{before}{codex_added}"),
        "the user's config as it was, with what Codex added since"
    );
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "?? .codex/");
}

#[test]
fn codex_trust_leaves_a_state_codex_already_has_and_a_config_it_cannot_read() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["A", "--agent", "codex"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let config = sb.path().join("codex/config.toml");
    let key = format!("{}:stop:0:0", repo.join(".codex/hooks.json").display());
    codex_trusts(
        &sb,
        &repo,
        &format!("[hooks.state.\"{key}\"]\ntrusted_hash = \"sha256:old\"\n\n"),
    );
    let before = std::fs::read_to_string(&config).unwrap();
    let out = run(sb
        .grove(&wt)
        .args(["capture", "install", "--trust-agent", "--json"]));
    assert_eq!(out.status.code(), Some(4), "not everything is trusted");
    let report = json(&String::from_utf8(out.stdout).unwrap());
    let trust = &report["agents"][0]["trust"];
    assert_eq!(trust["trusted"].as_array().unwrap().len(), 6, "{report}");
    assert_eq!(trust["refused"][0]["key"], key.as_str());
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(after.starts_with(&before) && after.contains("sha256:old"));
    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);

    // Not TOML: left alone, and said so.
    std::fs::write(&config, "model = \n").unwrap();
    let out = run(sb.grove(&wt).args(["capture", "install", "--trust-agent"]));
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid TOML"));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "model = \n");
}

#[test]
fn codex_install_takes_an_older_grove_s_hooks_out_of_the_task_s_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["A", "--agent", "codex"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    // Where an older grove put them, each naming the thread: Codex never
    // ran them there.
    std::fs::create_dir_all(wt.join(".codex")).unwrap();
    let old = serde_json::json!({"hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "say done"}]},
            {"hooks": [{"type": "command", "command": "/old/grove capture codex --thread t", "timeout": 15}]}
        ],
        "SessionStart": [{"hooks": [{"type": "command", "command": "/old/grove capture codex --thread t", "timeout": 15}]}]
    }});
    std::fs::write(wt.join(".codex/hooks.json"), old.to_string()).unwrap();
    let report = json(&ok(sb.grove(&wt).args(["capture", "install", "--json"])));
    assert_eq!(
        report["agents"][0]["file"],
        repo.join(".codex/hooks.json").to_str().unwrap()
    );
    let left: Value = read_json(&wt.join(".codex/hooks.json"));
    assert_eq!(
        left,
        serde_json::json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}),
        "the user's hook stays, grove's old ones go"
    );
}
