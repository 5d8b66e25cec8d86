//! Command-line behaviour: new, exit codes, help, pipes.

use crate::support::*;

#[test]
fn new_records_agent_context_and_prompt() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let sub = repo.join("pkg");
    std::fs::create_dir_all(&sub).unwrap();
    let out = json(&ok(sb.grove(&sub).args([
        "new",
        "--no-worktree",
        "Fix the login bug",
        "--agent",
        "claude-code",
        "--prompt",
        "Look at auth.ts",
        "--json",
    ])));
    assert_eq!(out["title"], "Fix the login bug");
    let dir = std::path::PathBuf::from(out["threadDir"].as_str().unwrap());
    assert_eq!(
        dir,
        repo.join(".agent/threads")
            .join(out["threadId"].as_str().unwrap())
    );
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(meta["specVersion"], "1.1");
    assert_eq!(meta["agent"]["id"], "claude-code");
    assert_eq!(meta["context"]["workingDir"], sub.display().to_string());
    assert_eq!(meta["context"]["relativeDir"], "pkg");
    assert_eq!(meta["context"]["gitBranch"], "main");
    assert_eq!(
        meta["context"]["gitCommit"],
        sb.git(&repo, &["rev-parse", "HEAD"])
    );
    let lines = message_lines(&dir);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["role"], "user");
    assert_eq!(lines[0]["content"][0]["text"], "Look at auth.ts");
    assert_eq!(meta["stats"]["messageCount"], 1);
}

#[test]
fn agent_comes_from_flag_then_config_then_unknown() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let agent_of = |args: &[&str]| {
        let mut all = vec!["new", "--no-worktree", "t", "--json"];
        all.extend_from_slice(args);
        let out = json(&ok(sb.grove(&repo).args(&all)));
        read_json(&std::path::Path::new(out["threadDir"].as_str().unwrap()).join("thread.json"))["agent"]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(agent_of(&[]), "unknown");
    std::fs::write(
        repo.join(".agent/config.json"),
        r#"{"specVersion":"1.1","defaults":{"agentId":"amp","useWorktree":false}}"#,
    )
    .unwrap();
    assert_eq!(agent_of(&[]), "amp");
    assert_eq!(agent_of(&["--agent", "codex"]), "codex");
    // useWorktree false in the config: no --no-worktree needed.
    let out = ok(sb.grove(&repo).args(["new", "plain"]));
    assert!(repo.join(".agent/threads").join(out.trim()).is_dir());
}

#[test]
fn title_defaults_to_the_prompt_or_untitled() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let out = json(&ok(sb.grove(&dir).args([
        "new",
        "--no-worktree",
        "--prompt",
        "Refactor the parser\nthen test",
        "--json",
    ])));
    assert_eq!(out["title"], "Refactor the parser");
    let out = json(&ok(sb.grove(&dir).args(["new", "--no-worktree", "--json"])));
    assert_eq!(out["title"], "Untitled");
    let meta =
        read_json(&std::path::Path::new(out["threadDir"].as_str().unwrap()).join("thread.json"));
    assert!(
        meta["context"].get("gitBranch").is_none(),
        "no git outside a repository"
    );
}

#[test]
fn exit_codes_are_0_1_2() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    fails_with(sb.grove(&repo).arg("frobnicate"), 2);
    fails_with(sb.grove(&repo).args(["append", "x"]), 2);
    fails_with(sb.grove(&repo).args(["append", "x", "--role", "user"]), 2);
    fails_with(
        sb.grove(&repo)
            .args(["append", "x", "--role", "robot", "--text", "t"]),
        2,
    );
    fails_with(sb.grove(&repo).args(["show", "nope"]), 1);
    ok(sb.grove(&repo).arg("--help"));
}

/// Only the subcommand that runs has its arguments defined (the others are
/// deferred): whatever shows texts still shows them all and right.
#[test]
fn subcommands_defined_when_they_run_still_explain_themselves() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let top = ok(sb.grove(&dir).arg("--help"));
    assert!(
        top.contains("Remove a task's worktree and branch"),
        "every subcommand's summary in {top}"
    );
    let empty = fails_with(&mut sb.grove(&dir), 2);
    assert!(empty.contains("Remove a task's worktree"), "{empty}");
    // A variant's own summary wins over that of the arguments it shares.
    let unarchive = ok(sb.grove(&dir).args(["unarchive", "--help"]));
    assert!(unarchive.contains("Show an archived thread"), "{unarchive}");
    let via_help = ok(sb.grove(&dir).args(["help", "rm"]));
    assert!(via_help.contains("--keep-branch"), "{via_help}");
    // A mistake in a subcommand parsed with only its own arguments defined.
    let wrong = fails_with(sb.grove(&dir).args(["rm", "--keep-brnch", "x"]), 2);
    assert!(wrong.contains("Usage: grove rm "), "{wrong}");
    assert!(wrong.contains("--keep-branch"), "a suggestion in {wrong}");
    let missing = fails_with(sb.grove(&dir).args(["-q", "delete"]), 2);
    assert!(missing.contains("<THREAD>"), "{missing}");
}

#[test]
fn help_explains_every_flag() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let help = ok(sb.grove(&dir).args(["append", "--help"]));
    for needle in [
        "--role",
        "--text",
        "--stdin",
        "--no-fsync",
        "--json",
        "fsync",
    ] {
        assert!(help.contains(needle), "{needle} in {help}");
    }
    for cmd in ["init", "new", "show", "list", "repair"] {
        let help = ok(sb.grove(&dir).args([cmd, "--help"]));
        assert!(help.contains("--json"), "{cmd} --help mentions --json");
    }
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "t");
    let big = "line\n".repeat(200_000);
    let input = serde_json::json!({"role": "agent", "content": [{"type": "text", "text": big}]})
        .to_string();
    run_with_stdin(
        sb.grove(&repo).args(["append", &id, "--stdin"]),
        input.as_bytes(),
    );
    let script = format!("set -o pipefail; '{GROVE}' show '{id}' | head -n 1 >/dev/null");
    let mut cmd = std::process::Command::new("bash");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-c", &script])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Answers that must be right (issue 13's list): each a clear answer, no
/// silently ignored flag.
#[test]
fn calendar_durations_empty_repositories_worktree_flags_and_append_say_what_is_needed() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    for d in ["1y", "6mo", "2w", "36h"] {
        ok(sb.grove(&repo).args(["gc", "--older-than", d, "--dry-run"]));
    }
    let err = fails_with(sb.grove(&repo).args(["gc", "--older-than", "soon"]), 2);
    assert!(err.contains("14d"), "{err}");

    let empty = sb.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    sb.git(&empty, &["init", "-q"]);
    let err = fails_with(sb.grove(&empty).args(["new", "first"]), 1);
    assert!(
        err.contains("no commits yet") && err.contains("git commit"),
        "{err}"
    );

    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "defaults": {"useWorktree": false}}),
    );
    let err = fails_with(sb.grove(&repo).args(["new", "t", "--branch", "b"]), 2);
    assert!(
        err.contains("--branch") && err.contains("--worktree"),
        "{err}"
    );
    let err = fails_with(
        sb.grove(&repo)
            .args(["new", "t", "--no-worktree", "--dir", "x"]),
        2,
    );
    assert!(err.contains("--dir"), "{err}");
    let local = json(&ok(sb.grove(&repo).args(["new", "local", "--json"])));
    assert!(local.get("worktreePath").is_none(), "{local}");
    let task = json(&ok(sb.grove(&repo).args([
        "new",
        "task",
        "--worktree",
        "--branch",
        "b",
        "--json",
    ])));
    assert_eq!(task["branch"], "b", "{task}");

    let err = fails_with(
        sb.grove(&repo)
            .args(["append", local["threadId"].as_str().unwrap()]),
        2,
    );
    assert!(err.contains("--role") && err.contains("--stdin"), "{err}");
}

/// Personal defaults in config.toml: where worktrees go, the branch prefix,
/// the agent, default flags; the repository wins for its own matters;
/// `grove config` says where each value comes from.
#[test]
fn personal_defaults_from_config_toml_and_where_each_value_comes_from() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "true"}]}}),
    );
    let xdg = sb.dir("xdg");
    std::fs::create_dir_all(xdg.join("grove")).unwrap();
    std::fs::write(
        xdg.join("grove/config.toml"),
        format!(
            "worktree-dir = \"{}/wts/{{repo}}-{{short}}\"\nbranch-prefix = \"me/\"\nagent = \"codex\"\n\n[flags]\nnew = [\"--no-hooks\"]\n",
            sb.path().display()
        ),
    )
    .unwrap();
    let with = |cmd: &mut std::process::Command| {
        cmd.env("XDG_CONFIG_HOME", &xdg);
    };
    let mut cmd = sb.grove(&repo);
    with(&mut cmd);
    let task = json(&ok(cmd.args(["new", "mine", "--json"])));
    let wt = task["worktreePath"].as_str().unwrap();
    assert!(
        wt.starts_with(&format!("{}/wts/app-", sb.path().display())),
        "{wt}"
    );
    assert!(
        task["branch"].as_str().unwrap().starts_with("me/"),
        "{task}"
    );
    assert!(
        task["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["status"] == "skipped"),
        "default flags: {task}"
    );
    let meta =
        read_json(&std::path::Path::new(task["threadDir"].as_str().unwrap()).join("thread.json"));
    assert_eq!(meta["agent"]["id"], "codex");

    // The repository's own branch prefix wins.
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "grove": {"branchPrefix": "team/"}}),
    );
    let mut cmd = sb.grove(&repo);
    with(&mut cmd);
    let task = json(&ok(cmd.args(["new", "theirs", "--json"])));
    assert!(
        task["branch"].as_str().unwrap().starts_with("team/"),
        "{task}"
    );
    let mut cmd = sb.grove(&repo);
    with(&mut cmd);
    let config = json(&ok(cmd.args(["config", "--json"])));
    let source = |key: &str| {
        config["values"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["key"] == key)
            .unwrap()["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        source("branch-prefix").starts_with("repository"),
        "{config}"
    );
    assert_eq!(source("agent"), "user config");
    assert_eq!(source("worktree-dir"), "user config");
    assert_eq!(source("flags.new"), "user config");

    // A config.toml grove cannot read stops it, naming file and line.
    std::fs::write(
        xdg.join("grove/config.toml"),
        "agent = \"codex\"\nbranch-prefix = \n",
    )
    .unwrap();
    let mut cmd = sb.grove(&repo);
    with(&mut cmd);
    let err = fails_with(cmd.args(["list"]), 1);
    assert!(
        err.contains("config.toml") && err.contains("line 2"),
        "{err}"
    );
}

#[test]
fn a_relative_grove_home_is_made_absolute_once() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [
            {"command": "echo \"$GROVE_HOME\" > \"$GROVE_REPO_ROOT/../home-seen\""}]}}),
    );
    let mut cmd = sb.grove(&sb.path());
    let task = json(&ok(cmd.env("GROVE_HOME", "relative-home").args([
        "-C",
        repo.to_str().unwrap(),
        "new",
        "t",
        "--trust",
        "--json",
    ])));
    let home = sb.path().join("relative-home");
    assert!(
        task["worktreePath"]
            .as_str()
            .unwrap()
            .starts_with(home.to_str().unwrap()),
        "{task}"
    );
    let seen = std::fs::read_to_string(sb.path().join("home-seen")).unwrap();
    assert_eq!(
        seen.trim(),
        home.to_str().unwrap(),
        "the hook, run in the worktree, sees it absolute"
    );
}

/// Every subcommand of `grove --help`, and every flag of its own `--help`,
/// is in the README.
#[test]
fn every_subcommand_and_flag_of_help_is_in_the_readme() {
    let sb = Sandbox::new();
    let dir = sb.dir("d");
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let help = ok(sb.grove(&dir).args(["--help"]));
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A description's continuation lines are indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 25, "{help}");
    let mut missing = Vec::new();
    for c in &commands {
        if !readme.contains(&format!("grove {c}")) {
            missing.push(format!("grove {c}"));
        }
        let sub = ok(sb.grove(&dir).args([c.as_str(), "--help"]));
        for line in sub.lines().skip_while(|l| !l.starts_with("Options:")) {
            // An option's own line starts with it (`  -o, --output <FILE>`).
            if !line.trim_start().starts_with('-') {
                continue;
            }
            let Some(flag) = line
                .split_whitespace()
                .take(2)
                .map(|w| w.trim_end_matches(','))
                .find(|w| w.starts_with("--"))
            else {
                continue;
            };
            let flag = flag.split(['=', '[', '<']).next().unwrap();
            if ["--help", "--version"].contains(&flag) {
                continue;
            }
            if !readme.contains(flag) {
                missing.push(format!("grove {c} {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in the README: {missing:#?}");
}
