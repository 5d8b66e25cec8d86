//! `grove capture install` / `uninstall` and the agents' settings files they
//! edit: the user's file comes back byte for byte, and the report says which
//! events got grove's hook and which did not, and why.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

const CLAUDE_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
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
        assert_eq!(grove_hooks(&value), 8, "{installed}");
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
