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

    // `new --trust` trusts the setup, not the teardown.
    let (id, _) = task(&sb, &repo);
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
