//! Snapshots of the human output people read — `list`, `show`, `gc`'s
//! plan, the trust question, the main errors — with paths, ids and times
//! redacted and the width pinned (COLUMNS), so a change to any of them is
//! seen in review (`cargo insta review`, or INSTA_UPDATE=always).

use std::path::Path;

use crate::support::*;

/// Redactions: the sandbox's path, thread ids (UUIDs and their 8-character
/// prefixes), branch names made from them, times and ages.
fn settings(sb: &Sandbox) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex_escape(&sb.path().display().to_string()), "[SANDBOX]");
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    );
    s.add_filter(r"grove/[0-9a-f]{8}", "grove/[ID8]");
    s.add_filter(r"thread-[0-9a-f]{8}", "thread-[ID8]");
    s.add_filter(r"app-[0-9a-f]{8}", "app-[HASH]");
    s.add_filter(r"(?m)^[0-9a-f]{8}( |$)", "[ID8]$1");
    // A table's id after the current task's marker (`@`) or its blank.
    s.add_filter(r"(?m)^([@ ]  )[0-9a-f]{8}( |$)", "$1[ID8]$2");
    // A branch cut to its column: what is left of the id varies.
    s.add_filter(r"grove/[0-9a-f]{1,7}…", "grove/[ID]…");
    s.add_filter(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[TIME]");
    s.add_filter(r"\b\d+(s|m|h|d)\b( ago)?", "[AGE]");
    s.add_filter(r"\(\d+ ms\)", "([MS] ms)");
    s.add_filter(r"\b[0-9a-f]{12}\b", "[COMMIT]");
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn human(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    human_at(sb, dir, args, 100)
}

/// At `columns` wide: wide enough, where a row holds a path (whose length
/// is the machine's), that nothing is cut before the path is redacted.
fn human_at(sb: &Sandbox, dir: &Path, args: &[&str], columns: usize) -> String {
    let out = run(sb.grove(dir).args(args).env("COLUMNS", columns.to_string()));
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn human_output_of_list_show_gc_and_the_main_errors() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(
        &sb,
        &repo,
        &["Fix the login bug", "--prompt", "Look at auth.ts"],
    );
    let id = task["threadId"].as_str().unwrap().to_string();
    append_stdin(
        &sb,
        &repo,
        &id,
        r#"{"role":"agent","content":[{"type":"text","text":"Reading auth.ts."}],"toolCalls":[{"toolCallId":"t1","name":"Read","status":"completed","input":"{\"file_path\":\"auth.ts\"}","output":"export function login() {}"}]}"#,
    );
    new_task(
        &sb,
        &repo,
        &["A second task with a title long enough to be cut at a hundred columns wide, surely"],
    );
    settings(&sb).bind(|| {
        insta::assert_snapshot!("list", human(&sb, &repo, &["list"]));
        insta::assert_snapshot!("show", human(&sb, &repo, &["show", &id]));
        insta::assert_snapshot!(
            "gc_plan",
            human_at(&sb, &repo, &["gc", "--older-than", "0s"], 1000)
        );
        insta::assert_snapshot!("error_no_thread", human(&sb, &repo, &["show", "nosuch"]));
        insta::assert_snapshot!(
            "error_not_a_repository",
            human(&sb, &sb.dir("plain"), &["new", "x"])
        );
        insta::assert_snapshot!(
            "error_usage",
            human(&sb, &repo, &["list", "--status", "stale"])
        );
    });
}

/// `list`'s columns: the current task marked `@`, its uncommitted lines,
/// a task ahead of and behind main with its last commit; at 100 columns
/// and at 80, where the least useful columns go first.
#[test]
fn human_list_columns_and_the_current_task() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let here = new_task(&sb, &repo, &["Fix the login bug"]);
    let here = std::path::PathBuf::from(here["worktreePath"].as_str().unwrap());
    std::fs::write(here.join("README.md"), "# test\nmore\n").unwrap();
    std::fs::write(here.join("notes.txt"), "n\n").unwrap();
    let ahead = new_task(&sb, &repo, &["Add the settings page"]);
    let ahead = std::path::PathBuf::from(ahead["worktreePath"].as_str().unwrap());
    std::fs::write(ahead.join("settings.txt"), "s\n").unwrap();
    sb.git(&ahead, &["add", "settings.txt"]);
    sb.git(&ahead, &["commit", "-qm", "Settings page skeleton"]);
    std::fs::write(repo.join("main.txt"), "m\n").unwrap();
    sb.git(&repo, &["add", "main.txt"]);
    sb.git(&repo, &["commit", "-qm", "Main moves on"]);
    let gone = new_task(&sb, &repo, &["Removed, so not listed"]);
    ok(sb
        .grove(&repo)
        .args(["rm", gone["threadId"].as_str().unwrap()]));
    settings(&sb).bind(|| {
        insta::assert_snapshot!("list_columns", human(&sb, &here, &["list"]));
        insta::assert_snapshot!("list_columns_80", human_at(&sb, &here, &["list"], 80));
    });
}

#[test]
fn the_trust_question_as_a_terminal_shows_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [
            {"command": "npm ci", "label": "Install"}, {"command": "make setup"}],
            "preRemoveCommands": [{"command": "docker compose down", "label": "Stop"}]}}),
    );
    let mut cmd = std::process::Command::new("script");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-qec", &format!("{GROVE} --color never new t"), "/dev/null"])
        .env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"n\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    // Up to the question; the terminal's echo of the answer, which may come
    // before or after it, left out.
    let end = shown
        .find("[y/N]")
        .map_or(shown.len(), |i| i + "[y/N]".len());
    let question: String = shown[..end]
        .lines()
        .filter(|l| l.trim() != "n")
        .map(|l| format!("{l}\n"))
        .collect();
    settings(&sb).bind(|| insta::assert_snapshot!("trust_question", question));
}

/// On a terminal a hook's spinner is cleared when the hook ends: nothing of
/// it is left drawn above the trust question that follows (here the
/// submodules' update spins before the question).
#[test]
fn no_spinner_is_left_above_the_trust_question() {
    let sb = Sandbox::new();
    let config = sb.path().join("gitconfig");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[protocol \"file\"]\n\tallow = always\n");
    std::fs::write(&config, text).unwrap();
    let lib = sb.repo("lib");
    let repo = sb.repo("app");
    sb.git(
        &repo,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
    );
    sb.git(&repo, &["commit", "-qm", "lib"]);
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "true"}]}}),
    );
    let mut cmd = std::process::Command::new("script");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-qec", &format!("{GROVE} --color never new t"), "/dev/null"])
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"n\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("hook ok: git submodule update"), "{shown:?}");
    let question = shown.find("This repository's").expect("the question");
    // What the terminal shows last before the question: the line it starts
    // on, after the last clear-line or newline.
    let before = &shown[..question];
    let line_start = before
        .rfind(['\n', '\r'])
        .max(before.rfind("\u{1b}[2K").map(|i| i + 3))
        .map_or(0, |i| i + 1);
    let on_the_line = &before[line_start..];
    assert!(
        !on_the_line
            .chars()
            .any(|c| ('\u{2800}'..='\u{28ff}').contains(&c)),
        "a spinner glyph is left before the question: {on_the_line:?}"
    );
}

/// A tool call recorded pending, then completed by a later completion
/// message: `show` has it once, in the message that made it, completed.
#[test]
fn show_has_a_call_completed_later_once_with_its_result() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Late result");
    let lines = [
        r#"{"id":"a1","role":"agent","timestamp":"2025-03-01T10:00:05.000Z","content":[{"type":"text","text":"Counting."}],"toolCalls":[{"toolCallId":"t1","name":"Bash","status":"pending","input":"wc -l src/app.ts"}]}"#,
        r#"{"id":"a1~done~t1","role":"agent","timestamp":"2025-03-01T10:00:09.000Z","content":[],"toolCalls":[{"toolCallId":"t1","name":"Bash","status":"completed","input":"wc -l src/app.ts","output":"42 src/app.ts"}],"completesMessage":"a1"}"#,
        r#"{"id":"a2","role":"agent","timestamp":"2025-03-01T10:00:10.000Z","content":[{"type":"text","text":"It has 42 lines."}]}"#,
    ];
    append_stdin(&sb, &dir, &id, &lines.join("\n"));
    settings(&sb).bind(|| {
        insta::assert_snapshot!("show_completed_later", human(&sb, &dir, &["show", &id]));
    });
}

#[test]
fn human_output_of_a_background_setup() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [
            {"command": "echo ready"},
            {"command": "exit 7", "label": "fetch", "background": true}
        ]}}),
    );
    let new = human(&sb, &repo, &["new", "Background setup", "--trust"]);
    let id = list_rows(&sb, &repo)[0]["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while row_of(&sb, &repo, &id)["backgroundSetup"][0]["state"] == "running" {
        assert!(std::time::Instant::now() < deadline, "never ended");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    settings(&sb).bind(|| {
        insta::assert_snapshot!("new_background_setup", new);
        insta::assert_snapshot!("show_background_setup", human(&sb, &repo, &["show", &id]));
    });
}
