//! Teardown symmetric with setup: `worktreeHooks.preRemoveCommands` run by
//! `rm` (and `gc`, `delete`) in the worktree before it goes, trusted on
//! their own, a failure stopping the removal.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::*;

fn config(repo: &Path, teardown: serde_json::Value) {
    write_config(
        repo,
        json!({"specVersion": "1.1", "worktreeHooks": {
            "postSetupCommands": [{"command": "true"}],
            "preRemoveCommands": teardown}}),
    );
}

/// The teardown writes a mark outside the worktree, named by the thread.
const MARK: &str = r#"pwd > "$GROVE_REPO_ROOT/../torn-$GROVE_THREAD_ID""#;

fn task(sb: &Sandbox, repo: &Path) -> (String, PathBuf) {
    let t = new_task(sb, repo, &["t", "--trust"]);
    (
        t["threadId"].as_str().unwrap().to_string(),
        PathBuf::from(t["worktreePath"].as_str().unwrap()),
    )
}

#[test]
fn teardown_runs_in_the_worktree_once_trusted_on_its_own_and_is_recorded() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(&repo, json!([{"command": MARK, "label": "stop services"}]));

    // Not trusted (no terminal to ask on): skipped.
    let id = new_task(&sb, &repo, &["t"])["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--json"])));
    assert_eq!(out["teardown"][0]["status"], "skipped", "{out}");
    assert!(
        out["teardown"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not trusted"),
        "{out}"
    );
    assert!(!sb.path().join(format!("torn-{id}")).exists());

    let trusted = json(&ok(sb.grove(&repo).args(["trust", "--json"])));
    assert!(
        trusted["teardownHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    let (id, wt) = task(&sb, &repo);
    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--json"])));
    assert_eq!(out["teardown"][0]["status"], "ok", "{out}");
    assert_eq!(out["teardown"][0]["label"], "stop services");
    let ran_in = std::fs::read_to_string(sb.path().join(format!("torn-{id}"))).unwrap();
    assert_eq!(PathBuf::from(ran_in.trim()), wt, "run in the worktree");
    // Recorded in the cached thread, with its log kept.
    let cached = PathBuf::from(row_of(&sb, &repo, &id)["threadDir"].as_str().unwrap());
    let meta = read_json(&cached.join("thread.json"));
    assert_eq!(meta["metadata"]["grove"]["teardown"][0]["status"], "ok");
    assert!(cached.join("logs/pre-remove-1.log").is_file());
    assert_eq!(
        meta["metadata"]["grove"]["teardown"][0]["logFile"],
        cached.join("logs/pre-remove-1.log").display().to_string(),
        "the cached thread names the log it keeps"
    );
}

#[test]
fn a_failing_teardown_stops_the_removal_unless_continue_on_error_or_force() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(
        &repo,
        json!([{"command": "echo cannot stop >&2; exit 3", "label": "stop"}, {"command": MARK}]),
    );
    ok(sb.grove(&repo).args(["trust"]));
    let (id, wt) = task(&sb, &repo);
    let err = fails_with(sb.grove(&repo).args(["rm", &id]), 1);
    assert!(
        err.contains("teardown command \"stop\" failed") && err.contains("--force"),
        "{err}"
    );
    assert!(wt.is_dir(), "the worktree stays");
    assert!(
        !sb.path().join(format!("torn-{id}")).exists(),
        "later commands skipped"
    );
    let meta = read_json(&wt.join(".agent/threads").join(&id).join("thread.json"));
    assert_eq!(meta["metadata"]["grove"]["teardown"][0]["status"], "failed");
    assert_eq!(
        meta["metadata"]["grove"]["teardown"][1]["status"],
        "skipped"
    );

    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--force", "--json"])));
    assert_eq!(out["teardown"][0]["status"], "failed");
    assert!(!wt.exists(), "--force removes anyway");

    config(
        &repo,
        json!([{"command": "exit 3", "continueOnError": true}, {"command": MARK}]),
    );
    ok(sb.grove(&repo).args(["trust"]));
    let (id, wt) = task(&sb, &repo);
    ok(sb.grove(&repo).args(["rm", &id]));
    assert!(!wt.exists());
    assert!(
        sb.path().join(format!("torn-{id}")).exists(),
        "the next command ran"
    );
}

#[test]
fn validate_checks_pre_remove_commands_like_post_setup_commands() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(
        &repo,
        json!([{"label": "no command"}, {"command": "x", "timeout": -1}]),
    );
    let out = run(sb.grove(&repo).args(["validate"]));
    assert_eq!(out.status.code(), Some(1));
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains("worktreeHooks.preRemoveCommands[0].command"),
        "{out}"
    );
    assert!(
        out.contains("worktreeHooks.preRemoveCommands[1].timeout"),
        "{out}"
    );
}

fn spawn_in(dir: &Path, script: &str, arg: &Path) -> std::process::Child {
    std::process::Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(arg)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (a little) for `child` to end; whether it did.
fn ended(child: &mut std::process::Child) -> bool {
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[cfg(target_os = "linux")]
#[test]
fn rm_refuses_while_processes_work_in_the_worktree_and_reap_ends_them() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let (id, wt) = task(&sb, &repo);
    let mut server = spawn_in(&wt, "exec sleep 60", &wt);
    // Another one outside it, holding a file inside it open.
    let mut reader = spawn_in(&sb.path(), r#"exec 3<"$1/README.md"; exec sleep 61"#, &wt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let err = fails_with(sb.grove(&repo).args(["rm", &id]), 1);
    for p in [server.id(), reader.id()] {
        assert!(err.contains(&p.to_string()), "{p} in {err}");
    }
    assert!(err.contains("sleep 60") && err.contains("--reap"), "{err}");
    assert!(wt.is_dir());

    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--reap", "--json"])));
    assert_eq!(out["processes"].as_array().unwrap().len(), 2, "{out}");
    assert!(ended(&mut server) && ended(&mut reader), "both ended");
    assert!(!wt.exists());

    // One that ignores SIGTERM is killed after the grace period; --force
    // leaves them running.
    let (id, wt) = task(&sb, &repo);
    let mut stubborn = spawn_in(&wt, r#"trap "" TERM; while :; do sleep 1; done"#, &wt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    ok(sb.grove(&repo).args(["rm", &id, "--reap"]));
    assert!(ended(&mut stubborn), "SIGKILL after the grace period");
    let (id, wt) = task(&sb, &repo);
    let mut left = spawn_in(&wt, "exec sleep 62", &wt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--force", "--json"])));
    assert_eq!(out["processes"][0]["pid"], left.id(), "{out}");
    assert!(left.try_wait().unwrap().is_none(), "left running");
    left.kill().unwrap();
    left.wait().unwrap();
}

/// The teardown appends a line to a file outside the worktree: how many
/// times it ran is the number of lines.
const COUNT: &str = r#"echo ran >> "$GROVE_REPO_ROOT/../teardown-runs""#;

fn runs_of_teardown(sb: &Sandbox) -> usize {
    std::fs::read_to_string(sb.path().join("teardown-runs"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_refused_rm_runs_no_teardown_and_the_removal_runs_it_once() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(&repo, json!([{"command": COUNT, "label": "count"}]));
    ok(sb.grove(&repo).args(["trust"]));
    let (id, wt) = task(&sb, &repo);

    // Refused for uncommitted work: the teardown never ran.
    std::fs::write(wt.join("scratch.txt"), "draft").unwrap();
    let err = fails_with(sb.grove(&repo).args(["rm", &id]), 1);
    assert!(err.contains("uncommitted"), "{err}");
    assert_eq!(runs_of_teardown(&sb), 0, "refused before the teardown");

    std::fs::remove_file(wt.join("scratch.txt")).unwrap();
    ok(sb.grove(&repo).args(["rm", &id]));
    assert!(!wt.exists());
    assert_eq!(runs_of_teardown(&sb), 1, "once for the one removal");
}

#[cfg(target_os = "linux")]
#[test]
fn rm_refused_for_processes_runs_no_teardown() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(&repo, json!([{"command": COUNT, "label": "count"}]));
    ok(sb.grove(&repo).args(["trust"]));
    let (id, wt) = task(&sb, &repo);
    let mut server = spawn_in(&wt, "exec sleep 60", &wt);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let err = fails_with(sb.grove(&repo).args(["rm", &id]), 1);
    assert!(err.contains("still at work"), "{err}");
    assert_eq!(runs_of_teardown(&sb), 0, "refused before the teardown");

    ok(sb.grove(&repo).args(["rm", &id, "--reap"]));
    assert!(ended(&mut server));
    assert!(!wt.exists());
    assert_eq!(runs_of_teardown(&sb), 1, "once for the one removal");
}

#[test]
fn rm_json_names_teardown_logs_that_outlive_the_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(
        &repo,
        json!([{"command": "echo stopping the services", "label": "stop"}]),
    );
    ok(sb.grove(&repo).args(["trust"]));
    let (id, wt) = task(&sb, &repo);
    let out = json(&ok(sb.grove(&repo).args(["rm", &id, "--json"])));
    assert!(!wt.exists());
    let log = PathBuf::from(
        out["teardown"][0]["logFile"]
            .as_str()
            .unwrap_or_else(|| panic!("a log path in {out}")),
    );
    let text =
        std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{} after rm: {e}", log.display()));
    assert!(text.contains("stopping the services"), "{text}");
}

#[test]
fn yes_to_the_trust_question_at_new_trusts_the_teardown_it_lists() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config(&repo, json!([{"command": COUNT, "label": "count"}]));
    // A real terminal for the question: script(1) gives grove a pty.
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
            child.stdin.take().unwrap().write_all(b"y\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(COUNT), "the teardown is listed: {shown:?}");
    let id = list_rows(&sb, &repo)[0]["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    ok(sb.grove(&repo).args(["rm", &id]));
    assert_eq!(runs_of_teardown(&sb), 1, "trusted by the answer");
}
