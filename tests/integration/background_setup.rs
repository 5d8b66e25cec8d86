//! Background setup commands (`postSetupCommands[].background`), `grove
//! setup`, and the user's own hooks (`config.toml` `[hooks]`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// Polls `check` every 50 ms for up to 10 s.
#[track_caller]
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The task's background runs, as `grove list --json` gives them.
fn runs(sb: &Sandbox, repo: &Path, id: &str) -> Vec<serde_json::Value> {
    row_of(sb, repo, id)["backgroundSetup"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn state_of(sb: &Sandbox, repo: &Path, id: &str, label: &str) -> String {
    runs(sb, repo, id)
        .iter()
        .find(|r| r["label"] == label)
        .map(|r| r["state"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

fn background(command: &str) -> serde_json::Value {
    json!({"command": command, "background": true})
}

fn config_with(repo: &Path, commands: serde_json::Value) {
    write_config(
        repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": commands}}),
    );
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn new_returns_before_a_background_command_ends_and_list_and_show_follow_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(
        &repo,
        json!([
            {"command": "echo fore > fore.txt"},
            background("sleep 2; echo fetched; touch done")
        ]),
    );
    let start = Instant::now();
    let out = new_task(&sb, &repo, &["t", "--trust"]);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "new waited for the background command: {:?}",
        start.elapsed()
    );
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    let id = out["threadId"].as_str().unwrap().to_string();
    assert!(
        wt.join("fore.txt").is_file(),
        "the foreground one ran first"
    );
    assert!(!wt.join("done").exists());
    let label = "sleep 2; echo fetched; touch done";
    let hook = out["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["label"] == label)
        .cloned()
        .unwrap();
    assert_eq!(hook["status"], "background");

    assert_eq!(state_of(&sb, &repo, &id, label), "running");
    let human = ok(sb.grove(&repo).args(["list"]));
    assert!(human.contains("(setup running)"), "{human}");
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(shown.contains(&format!("running {label}")), "{shown}");

    eventually("the background command ends", || {
        state_of(&sb, &repo, &id, label) == "ok"
    });
    assert!(wt.join("done").is_file());
    let run = &runs(&sb, &repo, &id)[0];
    let log = PathBuf::from(run["logFile"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(log).unwrap(), "fetched\n");
    assert_eq!(run["exitCode"], 0);
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(shown.contains(&format!("ok {label}")), "{shown}");
    let human = ok(sb.grove(&repo).args(["list"]));
    assert!(!human.contains("(setup"), "{human}");
}

#[test]
fn a_failing_background_command_shows_failed_with_its_exit_code() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(&repo, json!([background("exit 7")]));
    let out = new_task(&sb, &repo, &["t", "--trust"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    eventually("the command fails", || {
        state_of(&sb, &repo, &id, "exit 7") == "failed"
    });
    assert_eq!(runs(&sb, &repo, &id)[0]["exitCode"], 7);
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(shown.contains("failed (exit code 7) exit 7"), "{shown}");
    let human = ok(sb.grove(&repo).args(["list"]));
    assert!(human.contains("(setup failed)"), "{human}");
}

#[test]
fn a_background_command_times_out() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(
        &repo,
        json!([{"command": "sleep 30", "background": true, "timeout": 300}]),
    );
    let out = new_task(&sb, &repo, &["t", "--trust"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    eventually("the command times out", || {
        state_of(&sb, &repo, &id, "sleep 30") == "timedOut"
    });
}

#[test]
fn untrusted_background_commands_do_not_run() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(&repo, json!([background("touch ran")]));
    let out = new_task(&sb, &repo, &["t"]);
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    assert_eq!(out["hooks"][0]["status"], "skipped");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!wt.join("ran").exists());
}

#[test]
fn rm_kills_a_running_background_command_without_reap() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(&repo, json!([background("sleep 30")]));
    let out = new_task(&sb, &repo, &["t", "--trust"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    let run = runs(&sb, &repo, &id)[0].clone();
    assert_eq!(run["state"], "running");
    let pid = run["pid"].as_u64().unwrap();
    let waiter = run["waiterPid"].as_u64().unwrap();
    assert!(alive(pid) && alive(waiter));
    let removed = json(&ok(sb.grove(&repo).args([
        "rm",
        &id,
        "--foreground",
        "--json",
    ])));
    assert_eq!(removed["setupKilled"][0]["state"], "killed", "{removed}");
    assert!(!wt.exists());
    eventually("the command's processes are gone", || {
        !alive(pid) && !alive(waiter)
    });
    // The thread kept in the cache says so too.
    let shown = ok(sb.grove(&repo).args(["show", &id]));
    assert!(shown.contains("killed sleep 30"), "{shown}");
}

#[test]
fn grove_setup_runs_the_commands_again_after_trust() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(
        &repo,
        json!([{"command": "echo x >> fore.txt"}, background("touch back")]),
    );
    let out = new_task(&sb, &repo, &["t"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    assert!(!wt.join("fore.txt").exists(), "not trusted yet");
    // Untrusted, `grove setup` skips them as new did.
    let again = json(&ok(sb.grove(&wt).args(["setup", "--json"])));
    assert_eq!(again["hooks"][0]["status"], "skipped", "{again}");
    ok(sb.grove(&repo).args(["trust"]));
    // From inside the worktree, no THREAD: the task the shell is in.
    let again = json(&ok(sb.grove(&wt).args(["setup", "--json"])));
    assert_eq!(again["hooks"][0]["status"], "ok", "{again}");
    assert_eq!(again["hooks"][1]["status"], "background", "{again}");
    assert_eq!(std::fs::read_to_string(wt.join("fore.txt")).unwrap(), "x\n");
    eventually("the background one ran", || wt.join("back").is_file());
    // By name, from the main checkout, once more.
    ok(sb.grove(&repo).args(["setup", &id]));
    assert_eq!(
        std::fs::read_to_string(wt.join("fore.txt")).unwrap(),
        "x\nx\n"
    );
    let meta = read_json(&wt.join(format!(".agent/threads/{id}/thread.json")));
    let recorded: Vec<_> = meta["metadata"]["grove"]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "command")
        .collect();
    assert_eq!(recorded.len(), 2, "replaced, not added: {recorded:?}");
}

#[test]
fn a_failed_setup_exits_3_and_can_be_run_again() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    config_with(&repo, json!([{"command": "test -f ok || exit 1"}]));
    let out = new_task(&sb, &repo, &["t", "--trust"]);
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    assert_eq!(out["hooks"][0]["status"], "failed");
    fails_with(sb.grove(&wt).args(["setup"]), 3);
    std::fs::write(wt.join("ok"), "").unwrap();
    ok(sb.grove(&wt).args(["setup"]));
}

#[test]
fn user_hooks_run_in_a_repository_without_config() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let config = sb.path().join("home/.config/grove");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[hooks]\npost-setup = [\"echo $GROVE_BRANCH > mine.txt\"]\npost-setup-background = [\"touch later\"]\n",
    )
    .unwrap();
    let out = new_task(&sb, &repo, &["my task"]);
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    let branch = out["branch"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(wt.join("mine.txt")).unwrap().trim(),
        branch,
        "run without any trust: they are the user's own"
    );
    eventually("the user's background hook ran", || {
        wt.join("later").is_file()
    });
    // A misspelt key is an error naming the file, as for every key.
    std::fs::write(config.join("config.toml"), "[hooks]\npost-setp = []\n").unwrap();
    let err = fails_with(sb.grove(&repo).args(["list"]), 1);
    assert!(err.contains("post-setp"), "{err}");
}

#[test]
fn rm_never_kills_a_pid_only_thread_json_names() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let out = new_task(&sb, &repo, &["t"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    // A process of the user's, and a thread.json (pulled, committed,
    // edited) that claims it as its background setup.
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = bystander.id();
    let path = wt.join(format!(".agent/threads/{id}/thread.json"));
    let mut meta = read_json(&path);
    meta["metadata"]["grove"]["backgroundSetup"] = json!([{
        "key": "post-setup-1", "label": "forged", "state": "running",
        "pid": pid, "waiterPid": pid, "startedAt": "2025-01-01T00:00:00.000Z"
    }]);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let removed = json(&ok(sb.grove(&repo).args([
        "rm",
        &id,
        "--foreground",
        "--json",
    ])));
    assert!(removed.get("setupKilled").is_none(), "{removed}");
    assert!(alive(u64::from(pid)), "the bystander was killed");
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn a_background_setup_started_from_another_task_does_not_hold_that_task() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let a = new_task(&sb, &repo, &["first"]);
    let wt_a = PathBuf::from(a["worktreePath"].as_str().unwrap());
    let a_id = a["threadId"].as_str().unwrap().to_string();
    config_with(&repo, json!([background("sleep 30")]));
    let b = json(&ok(sb
        .grove(&wt_a)
        .args(["new", "second", "--trust", "--json"])));
    let b_id = b["threadId"].as_str().unwrap().to_string();
    assert_eq!(state_of(&sb, &repo, &b_id, "sleep 30"), "running");
    // The waiter is not in the first task's worktree: rm needs no --reap.
    ok(sb.grove(&repo).args(["rm", &a_id, "--foreground"]));
    ok(sb.grove(&repo).args(["rm", &b_id, "--foreground"]));
}
