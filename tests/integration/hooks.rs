//! worktreeHooks: symlinks, commands, trust, outcomes.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::*;

fn hooks_of(out: &serde_json::Value) -> Vec<serde_json::Value> {
    out["hooks"].as_array().unwrap().clone()
}

fn hook<'a>(hooks: &'a [serde_json::Value], label: &str) -> &'a serde_json::Value {
    hooks
        .iter()
        .find(|h| h["label"] == label)
        .unwrap_or_else(|| panic!("no hook {label}: {hooks:?}"))
}

#[test]
fn symlinks_are_made_and_escapes_refused_without_touching_anything_outside() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let outside = sb.dir("outside");
    std::fs::write(repo.join(".env.local"), "SECRET=1").unwrap();
    std::fs::create_dir_all(repo.join("node_modules/pkg")).unwrap();
    std::fs::write(repo.join("node_modules/pkg/index.js"), "x").unwrap();
    std::fs::write(
        repo.join(".gitignore"),
        ".env.local\nnode_modules\nescape\n",
    )
    .unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, repo.join("escape")).unwrap();
    // A committed symlink in the worktree that leads out of it.
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, repo.join("outlink")).unwrap();
    sb.git(&repo, &["add", ".gitignore", "outlink"]);
    sb.git(&repo, &["commit", "-qm", "links"]);
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"symlinks": [
            {"source": ".env.local"},
            {"source": "node_modules", "target": "web/node_modules"},
            {"source": "README.md"},
            {"source": "missing.txt"},
            {"source": "../app/README.md", "target": "r2"},
            {"source": "/etc/hostname", "target": "h"},
            {"source": ".env.local", "target": "/tmp/grove-abs-target"},
            {"source": ".env.local", "target": "../sneaky"},
            {"source": "escape/x"},
            {"source": ".env.local", "target": "outlink/planted"}
        ]}}),
    );
    let out = new_task(&sb, &repo, &["t"]);
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    let hooks = hooks_of(&out);
    assert_eq!(
        hook(&hooks, "link .env.local -> .env.local")["status"],
        "ok"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join(".env.local")).unwrap(),
        "SECRET=1"
    );
    assert!(
        std::fs::symlink_metadata(wt.join(".env.local"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        hook(&hooks, "link web/node_modules -> node_modules")["status"],
        "ok",
        "parents created"
    );
    assert!(wt.join("web/node_modules/pkg/index.js").is_file());

    let skipped = hook(&hooks, "link README.md -> README.md");
    assert_eq!(skipped["status"], "skipped");
    assert!(
        !std::fs::symlink_metadata(wt.join("README.md"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "existing target untouched"
    );

    for (label, needle) in [
        ("link missing.txt -> missing.txt", "does not exist"),
        ("link r2 -> ../app/README.md", "leaves its root"),
        ("link h -> /etc/hostname", "absolute"),
        ("link /tmp/grove-abs-target -> .env.local", "absolute"),
        ("link ../sneaky -> .env.local", "leaves its root"),
        ("link escape/x -> escape/x", "symlink that leaves"),
        ("link outlink/planted -> .env.local", "symlink that leaves"),
    ] {
        let h = hook(&hooks, label);
        assert_eq!(h["status"], "failed", "{label}");
        assert!(
            h["reason"].as_str().unwrap().contains(needle),
            "{label}: {h}"
        );
    }
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "nothing created outside"
    );
    assert!(!Path::new("/tmp/grove-abs-target").exists());
    assert!(!wt.parent().unwrap().join("sneaky").exists());
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "",
        "links are not uncommitted work"
    );
    // Recorded in thread.json.
    let meta = read_json(&PathBuf::from(out["threadDir"].as_str().unwrap()).join("thread.json"));
    assert_eq!(
        meta["metadata"]["grove"]["hooks"].as_array().unwrap().len(),
        hooks.len()
    );
}

fn command_config(repo: &Path, commands: serde_json::Value) {
    write_config(
        repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": commands}}),
    );
}

#[test]
fn commands_run_in_order_with_environment_logs_and_failure_rules() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    command_config(
        &repo,
        json!([
            {"command": "echo \"$GROVE_THREAD_ID|$GROVE_WORKTREE|$GROVE_REPO_ROOT|$GROVE_BRANCH|$(pwd)\" > env.txt; echo to-stdout; echo to-stderr >&2", "label": "env"},
            {"command": "exit 3", "label": "tolerated", "continueOnError": true},
            {"command": "echo not here", "label": "other-os", "platforms": ["win32"]},
            {"command": "exit 5", "label": "fatal"},
            {"command": "touch after.txt", "label": "after"}
        ]),
    );
    let out = run(sb.grove(&repo).args(["new", "t", "--trust", "--json"]));
    assert!(out.status.success(), "hook failures do not fail creation");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let hooks = hooks_of(&v);
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    let id = v["threadId"].as_str().unwrap();
    let env = std::fs::read_to_string(wt.join("env.txt")).unwrap();
    let branch = v["branch"].as_str().unwrap();
    assert_eq!(
        env.trim(),
        format!(
            "{id}|{}|{}|{branch}|{}",
            wt.display(),
            repo.display(),
            wt.display()
        )
    );
    let env_hook = hook(&hooks, "env");
    assert_eq!(env_hook["status"], "ok");
    assert_eq!(env_hook["exitCode"], 0);
    let log = std::fs::read_to_string(env_hook["logFile"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("to-stdout") && log.contains("to-stderr"),
        "{log}"
    );
    assert!(
        Path::new(env_hook["logFile"].as_str().unwrap())
            .starts_with(v["threadDir"].as_str().unwrap())
    );
    assert_eq!(hook(&hooks, "tolerated")["status"], "failed");
    assert_eq!(hook(&hooks, "tolerated")["exitCode"], 3);
    assert_eq!(hook(&hooks, "other-os")["status"], "skipped");
    assert_eq!(hook(&hooks, "fatal")["exitCode"], 5);
    assert_eq!(hook(&hooks, "after")["status"], "skipped");
    assert!(!wt.join("after.txt").exists());
    for h in &hooks {
        assert!(
            h.get("durationMs").is_some() && h.get("exitCode").is_some(),
            "{h}"
        );
    }
    // Without a terminal: one plain status line per command on stderr.
    for label in ["env", "tolerated", "other-os", "fatal", "after"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("grove: hook") && l.contains(label)),
            "{label}: {stderr}"
        );
    }
    // env.txt, made by a hook, is the only change: grove's own files are not.
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "?? env.txt");

    // --strict: exit 3, worktree kept.
    let out = run(sb.grove(&repo).args(["new", "t2", "--strict"]));
    assert_eq!(out.status.code(), Some(3));
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end());
    assert!(path.is_dir());
}

#[cfg(unix)]
#[test]
fn a_timed_out_command_is_killed_with_its_grandchildren() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let pidfile = sb.path().join("grandchild.pid");
    command_config(
        &repo,
        json!([
            {"command": format!("sleep 300 & echo $! > '{}'; wait", pidfile.display()), "label": "slow", "timeout": 700}
        ]),
    );
    let start = std::time::Instant::now();
    let v = new_task(&sb, &repo, &["t", "--trust"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
    let h = hook(&hooks_of(&v), "slow").clone();
    assert_eq!(h["status"], "timedOut");
    assert!(h["durationMs"].as_u64().unwrap() >= 700);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Give the kernel a moment to reap, then the process must be gone (or a zombie).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        let alive = match &stat {
            Ok(s) => !s
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
            Err(_) => false,
        };
        if !alive {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "grandchild {pid} survived the timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn untrusted_commands_do_not_run_until_trusted_and_a_changed_list_asks_again() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    command_config(
        &repo,
        json!([{"command": "touch ran.txt", "label": "mark"}]),
    );
    let out = run(sb.grove(&repo).args(["new", "a", "--json"]));
    assert!(out.status.success());
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    assert!(!wt.join("ran.txt").exists(), "untrusted: not run");
    let hooks = hooks_of(&v);
    let h = hook(&hooks, "mark");
    assert_eq!(h["status"], "skipped");
    assert!(h["reason"].as_str().unwrap().contains("grove trust"), "{h}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trust"));

    ok(sb.grove(&repo).arg("trust"));
    let v = new_task(&sb, &repo, &["b"]);
    assert!(
        PathBuf::from(v["worktreePath"].as_str().unwrap())
            .join("ran.txt")
            .exists(),
        "trusted: run"
    );

    command_config(
        &repo,
        json!([{"command": "touch ran.txt; touch more.txt", "label": "mark"}]),
    );
    let v = new_task(&sb, &repo, &["c"]);
    assert!(
        !PathBuf::from(v["worktreePath"].as_str().unwrap())
            .join("ran.txt")
            .exists(),
        "changed list: asks again"
    );

    let v = new_task(&sb, &repo, &["d", "--trust"]);
    assert!(
        PathBuf::from(v["worktreePath"].as_str().unwrap())
            .join("more.txt")
            .exists()
    );
    let v = new_task(&sb, &repo, &["e"]);
    assert!(
        PathBuf::from(v["worktreePath"].as_str().unwrap())
            .join("more.txt")
            .exists(),
        "--trust recorded"
    );
}

#[test]
fn initial_prompt_then_prompt_and_no_hooks() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    std::fs::write(repo.join("shared.txt"), "s").unwrap();
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {
            "initialPrompt": "Read CONTRIBUTING.md",
            "symlinks": [{"source": "shared.txt"}],
            "postSetupCommands": [{"command": "touch ran.txt"}]
        }}),
    );
    let v = new_task(&sb, &repo, &["t", "--prompt", "Then fix the bug"]);
    let lines = message_lines(&PathBuf::from(v["threadDir"].as_str().unwrap()));
    let texts: Vec<_> = lines
        .iter()
        .map(|l| l["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Read CONTRIBUTING.md", "Then fix the bug"]);
    assert!(lines.iter().all(|l| l["role"] == "user"));
    assert_eq!(hook(&hooks_of(&v), "initial prompt")["status"], "ok");

    let v = new_task(&sb, &repo, &["t2", "--no-hooks", "--trust"]);
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    assert!(!wt.join("shared.txt").exists());
    assert!(!wt.join("ran.txt").exists());
    assert!(hooks_of(&v).iter().all(|h| h["status"] == "skipped"));
    assert!(message_lines(&PathBuf::from(v["threadDir"].as_str().unwrap())).is_empty());
}

/// CI logs: a hook says it started and that it still runs; `--no-hooks`
/// says so once; `-q` leaves only errors; `-v` shows each git command.
#[test]
fn quiet_verbose_and_progress_lines_off_a_terminal() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {
            "symlinks": [{"source": "README.md", "target": "LINKED.md"}],
            "postSetupCommands": [{"command": "sleep 2.5", "label": "slow setup"}, {"command": "true"}],
            "initialPrompt": "hello"}}),
    );
    let out = run(sb
        .grove(&repo)
        .args(["new", "slow", "--trust"])
        .env("GROVE_HEARTBEAT_SECS", "1"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("grove: hook started: slow setup"), "{err}");
    assert!(
        err.contains("grove: hook still running: slow setup (1 s)"),
        "{err}"
    );
    assert!(
        err.contains("grove: hook still running: slow setup (2 s)"),
        "{err}"
    );

    let out = run(sb.grove(&repo).args(["new", "none", "--no-hooks"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("hooks skipped (--no-hooks)").count(),
        1,
        "{err}"
    );
    assert!(
        !err.contains("hook skipped"),
        "one line, not one per hook: {err}"
    );

    let out = run(sb.grove(&repo).args(["-q", "new", "quiet", "--trust"]));
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "-q: nothing but errors"
    );
    assert!(!out.stdout.is_empty(), "the path is data: still printed");
    let out = run(sb.grove(&repo).args(["-q", "show", "nosuchthread"]));
    assert!(!out.stderr.is_empty(), "-q still prints errors");

    let out = run(sb.grove(&repo).args(["-v", "new", "verbose", "--no-hooks"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("grove: run git worktree add"), "{err}");
}
