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
    let repo = sb.repo("app");
    std::fs::create_dir_all(repo.join(".codex")).unwrap();
    std::fs::write(repo.join(".codex/hooks.json"), "{\"hooks\": {}}\n").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "codex hooks"]);
    let task = new_task(&sb, &repo, &["Task", "--agent", "codex"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    for _ in 0..2 {
        let report = json(&ok(sb.grove(&wt).args(["capture", "install", "--json"])));
        let agent = &report["agents"][0];
        assert_eq!(agent["agent"], "codex");
        assert_eq!(agent["installed"].as_array().unwrap().len(), 7, "{report}");
        assert_eq!(
            agent["file"],
            wt.join(".codex/config.toml").to_str().unwrap()
        );
    }
    assert_eq!(
        std::fs::read_to_string(wt.join(".codex/hooks.json")).unwrap(),
        "{\"hooks\": {}}\n"
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    ok(sb.grove(&wt).args(["capture", "uninstall"]));
    assert!(!wt.join(".codex/config.toml").exists());
    assert!(!wt.join(".codex/.gitignore").exists());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");

    // A config.toml of the repository's too: nothing can go in.
    std::fs::write(wt.join(".codex/config.toml"), "model = \"o3\"\n").unwrap();
    let err = fails_with(sb.grove(&wt).args(["capture", "install"]), 1);
    assert!(err.contains("the repository's own"), "{err}");
    assert_eq!(
        std::fs::read_to_string(wt.join(".codex/config.toml")).unwrap(),
        "model = \"o3\"\n"
    );
}
