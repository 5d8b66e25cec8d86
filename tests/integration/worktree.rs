//! `grove new` with a worktree: branch, directory, thread, rollback.

use std::path::PathBuf;

use crate::support::*;

#[test]
fn new_creates_branch_worktree_and_thread_and_prints_the_path() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    sb.git(
        &repo,
        &["remote", "add", "origin", "https://example.invalid/app.git"],
    );
    write_config(&repo, serde_json::json!({"specVersion": "1.1"}));
    let stdout = ok(sb
        .grove(&repo)
        .args(["new", "Fix the login bug", "--agent", "claude-code"]));
    let path = PathBuf::from(stdout.trim_end());
    assert_eq!(stdout.lines().count(), 1, "the path alone: {stdout}");
    assert!(
        path.starts_with(sb.grove_home().join("worktrees")),
        "{}",
        path.display()
    );
    let dir_name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        dir_name.starts_with("thread-") && dir_name.len() == 15,
        "{dir_name}"
    );
    assert!(worktree_paths(&sb, &repo).contains(&path));

    let threads: Vec<_> = std::fs::read_dir(path.join(".agent/threads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(threads.len(), 1);
    assert_eq!(
        std::fs::read_to_string(path.join(".agent/threads/.gitignore")).unwrap(),
        "# Created by grove: keeps this directory out of git status.\n*\n",
        "every thread of a task's worktree is kept out of git status"
    );
    let meta = read_json(&threads[0].join("thread.json"));
    let id = meta["threadId"].as_str().unwrap();
    assert_eq!(&dir_name[7..], &id[..8]);
    // The branch is named after the title.
    let branch = "grove/fix-the-login-bug";
    assert_eq!(sb.git(&path, &["branch", "--show-current"]), branch);
    let ctx = &meta["context"];
    assert_eq!(ctx["workingDir"], path.display().to_string());
    assert_eq!(ctx["relativeDir"], ".");
    assert_eq!(ctx["gitBranch"], branch);
    assert_eq!(ctx["gitCommit"], sb.git(&path, &["rev-parse", "HEAD"]));
    assert_eq!(ctx["worktree"]["path"], path.display().to_string());
    assert_eq!(ctx["worktree"]["branch"], branch);
    assert_eq!(ctx["remoteUrl"], "https://example.invalid/app.git");
    assert_eq!(ctx["baseRevision"], "HEAD");
    assert_eq!(ctx["baseCommit"], sb.git(&repo, &["rev-parse", "HEAD"]));
    assert_eq!(meta["agent"]["id"], "claude-code");

    // The project's config and .gitignore are there, and grove's files are not "changes".
    assert!(path.join(".agent/config.json").is_file());
    assert!(path.join(".agent/.gitignore").is_file());
    assert_eq!(
        sb.git(&path, &["status", "--porcelain"]),
        "",
        "fresh worktree is clean"
    );
    assert_eq!(
        sb.git(&repo, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}

#[test]
fn a_task_set_up_with_nothing_writes_its_thread_json_once() {
    // Each write of thread.json is a file and a directory to sync: a setup
    // that ran nothing records outcomes the thread already holds.
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    for args in [
        &["new", "--no-hooks", "Quiet one"][..],
        &["new", "Quiet two"][..],
    ] {
        let path = PathBuf::from(ok(sb.grove(&repo).args(args)).trim_end());
        let dir = std::fs::read_dir(path.join(".agent/threads"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap();
        let meta = read_json(&dir.join("thread.json"));
        assert_eq!(meta.get("v"), None, "{args:?}: written once: {meta}");
        assert_eq!(meta["metadata"]["grove"]["hooks"], serde_json::json!([]));
    }
}

#[test]
fn json_output_and_tracked_agent_files() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "grove": {"branchPrefix": "agent/"}}),
    );
    ok(sb.grove(&repo).arg("init"));
    sb.git(&repo, &["add", ".agent"]);
    sb.git(&repo, &["commit", "-qm", "agent config"]);
    let out = new_task(&sb, &repo, &["Task"]);
    for key in [
        "threadId",
        "title",
        "branch",
        "worktreePath",
        "threadDir",
        "hooks",
    ] {
        assert!(out.get(key).is_some(), "{key} in {out}");
    }
    assert!(
        out["branch"].as_str().unwrap().starts_with("agent/"),
        "prefix from config"
    );
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    assert!(PathBuf::from(out["threadDir"].as_str().unwrap()).starts_with(&wt));
}

#[test]
fn two_repositories_with_the_same_name_do_not_collide() {
    let sb = Sandbox::new();
    let a = sb.repo("one/app");
    let b = sb.repo("two/app");
    let pa = PathBuf::from(new_task(&sb, &a, &["a"])["worktreePath"].as_str().unwrap());
    let pb = PathBuf::from(new_task(&sb, &b, &["b"])["worktreePath"].as_str().unwrap());
    assert_ne!(pa.parent(), pb.parent());
    assert!(
        pa.parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("app-")
    );
}

#[test]
fn branch_base_and_dir_options() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let first = sb.git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("two.txt"), "2").unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-qm", "two"]);
    let dir = sb.path().join("custom-wt");
    let out = new_task(
        &sb,
        &repo,
        &[
            "t",
            "--branch",
            "feature/x",
            "--base",
            &first[..10],
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out["branch"], "feature/x");
    assert_eq!(PathBuf::from(out["worktreePath"].as_str().unwrap()), dir);
    assert_eq!(sb.git(&dir, &["rev-parse", "HEAD"]), first);

    // An existing branch that is not checked out anywhere can be used…
    sb.git(&repo, &["branch", "existing"]);
    let out = new_task(&sb, &repo, &["t2", "--branch", "existing"]);
    assert_eq!(out["branch"], "existing");
    // …but not one checked out elsewhere, and not with --base.
    let err = fails_with(sb.grove(&repo).args(["new", "t3", "--branch", "main"]), 1);
    assert!(err.contains("already checked out"), "{err}");
    sb.git(&repo, &["branch", "other"]);
    let err = fails_with(
        sb.grove(&repo)
            .args(["new", "t4", "--branch", "other", "--base", "HEAD"]),
        1,
    );
    assert!(err.contains("--base"), "{err}");
    let err = fails_with(
        sb.grove(&repo).args(["new", "t5", "--branch", "bad..name"]),
        1,
    );
    assert!(err.contains("not a valid branch name"), "{err}");
}

#[test]
fn failures_before_the_thread_exists_leave_no_trace() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let before_worktrees = worktree_paths(&sb, &repo);

    let err = fails_with(
        sb.grove(&repo).args(["new", "t", "--base", "no-such-rev"]),
        1,
    );
    assert!(err.contains("no-such-rev"), "{err}");

    // A repository that tracks a *file* named .agent: the worktree is made,
    // then writing the thread fails — everything must be undone.
    std::fs::write(repo.join(".agent"), "not a directory").unwrap();
    sb.git(&repo, &["add", ".agent"]);
    sb.git(&repo, &["commit", "-qm", "agent file"]);
    let before_branches2 = branches(&sb, &repo);
    let err = fails_with(sb.grove(&repo).args(["new", "t"]), 1);
    assert!(!err.is_empty());
    assert_eq!(branches(&sb, &repo), before_branches2, "no dangling branch");
    assert_eq!(
        worktree_paths(&sb, &repo),
        before_worktrees,
        "no registration left"
    );
    let wt_root = sb.grove_home().join("worktrees");
    let leftovers: Vec<_> = walk(&wt_root);
    assert!(leftovers.is_empty(), "no half worktree: {leftovers:?}");
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                let inner = walk(&e.path());
                if inner.is_empty() && e.file_name().to_string_lossy().starts_with("thread-") {
                    out.push(e.path());
                }
                out.extend(inner);
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn exec_runs_in_the_worktree_with_the_prompt() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let out = run(sb.grove(&repo).args([
        "new",
        "t",
        "--prompt",
        "do the thing",
        "--exec",
        "pwd > exec.txt; printf %s \"$GROVE_PROMPT\" >> exec.txt; echo noise",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim_end());
    let text = std::fs::read_to_string(path.join("exec.txt")).unwrap();
    assert_eq!(text, format!("{}\ndo the thing", path.display()));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("noise"),
        "exec output kept off stdout"
    );
    let code = run(sb.grove(&repo).args(["new", "t2", "--exec", "exit 7"]))
        .status
        .code();
    assert_eq!(code, Some(7), "the command's exit code");
}

#[test]
fn outside_a_repository_worktree_mode_explains_itself() {
    let sb = Sandbox::new();
    let dir = sb.dir("plain");
    let err = fails_with(sb.grove(&dir).args(["new", "t"]), 1);
    assert!(err.contains("--no-worktree"), "{err}");
}

#[test]
fn list_and_show_find_threads_in_every_worktree_from_anywhere() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let local = new_thread(&sb, &repo, "local one");
    let out = new_task(&sb, &repo, &["wt one", "--prompt", "hello"]);
    let id = out["threadId"].as_str().unwrap().to_string();
    let wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    // From inside the worktree too.
    for dir in [&repo, &wt] {
        let rows = list_rows(&sb, dir);
        let ids: Vec<_> = rows
            .iter()
            .map(|r| r["threadId"].as_str().unwrap())
            .collect();
        assert!(
            ids.contains(&local.as_str()) && ids.contains(&id.as_str()),
            "{rows:?}"
        );
    }
    assert_eq!(row_of(&sb, &repo, &local)["status"], "local");
    assert_eq!(row_of(&sb, &repo, &id)["status"], "live");
    let shown = json(&ok(sb.grove(&repo).args(["show", &id[..8], "--json"])));
    assert_eq!(shown["messages"][0]["content"][0]["text"], "hello");
    assert_eq!(
        ok(sb.grove(&repo).args(["path", &id[..8]])).trim_end(),
        wt.display().to_string()
    );
    ok(sb
        .grove(&repo)
        .args(["append", &id[..8], "--role", "agent", "--text", "hi"]));
    assert_eq!(row_of(&sb, &repo, &id)["stats"]["messageCount"], 2);
    let err = fails_with(sb.grove(&repo).args(["path", &local]), 1);
    assert!(err.contains("no worktree"), "{err}");
}

#[test]
fn new_in_starts_a_sibling_thread_in_a_task_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap();
    let before = branches(&sb, &repo);

    let by_thread = ok(sb
        .grove(&repo)
        .args(["new", "Second look", "--in", &id[..8]]));
    assert_eq!(PathBuf::from(by_thread.trim_end()), wt);
    let by_path = new_task(&sb, &repo, &["Third", "--in", wt.to_str().unwrap()]);
    assert_eq!(by_path["worktreePath"], wt.display().to_string());
    assert_eq!(branches(&sb, &repo), before, "no new branch");
    assert_eq!(worktree_paths(&sb, &repo).len(), 2, "no new worktree");

    let threads: Vec<_> = std::fs::read_dir(wt.join(".agent/threads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(threads.len(), 3, "three siblings in the task's worktree");
    let third =
        read_json(&PathBuf::from(by_path["threadDir"].as_str().unwrap()).join("thread.json"));
    assert_eq!(
        third["context"]["worktree"]["path"],
        wt.display().to_string()
    );
    assert_eq!(third["context"]["gitBranch"], task["branch"]);

    let list = json(&ok(sb.grove(&repo).args(["list", "--json"])));
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{list}");
    assert!(
        rows.iter()
            .all(|r| r["worktreePath"] == wt.display().to_string()),
        "all three listed under the task's worktree: {list}"
    );

    let err = fails_with(
        sb.grove(&repo).args(["new", "x", "--in", "nosuchthread"]),
        1,
    );
    assert!(err.contains("nosuchthread"), "{err}");
    fails_with(
        sb.grove(&repo)
            .args(["new", "x", "--in", id, "--branch", "b"]),
        2,
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
}

/// grove reads the worktree list from git's files (no git process); what
/// it reads must be what `git worktree list --porcelain -z` says, in every
/// state an entry can be in.
#[test]
fn worktree_list_read_from_gits_files_matches_git_worktree_list() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let at = |name: &str| sb.path().join(name).display().to_string();
    sb.git(
        &repo,
        &["worktree", "add", "-q", "-b", "feature", &at("on branch")],
    );
    sb.git(
        &repo,
        &["worktree", "add", "-q", "--detach", &at("detached")],
    );
    sb.git(
        &repo,
        &["worktree", "add", "-q", "-b", "locked", &at("locked")],
    );
    sb.git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "on a USB disk",
            &at("locked"),
        ],
    );
    sb.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "bare-lock",
            &at("lock-no-reason"),
        ],
    );
    sb.git(&repo, &["worktree", "lock", &at("lock-no-reason")]);
    sb.git(&repo, &["worktree", "add", "-q", "-b", "gone", &at("gone")]);
    std::fs::remove_dir_all(sb.path().join("gone")).unwrap();
    sb.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--orphan",
            "-b",
            "unborn",
            &at("new\nline"),
        ],
    );
    sb.git(&repo, &["pack-refs", "--all"]);

    let lib = grove::worktree::Repo::new(&repo).unwrap();
    let sorted = |mut v: Vec<grove::worktree::WorktreeEntry>| {
        v[1..].sort_by(|a, b| a.path.cmp(&b.path));
        v
    };
    let from_files = sorted(lib.worktrees().unwrap());
    let from_git = sorted(lib.worktrees_from_git().unwrap());
    assert_eq!(from_files.len(), 7, "{from_files:#?}");
    assert_eq!(from_files, from_git);
    let entry = |name: &str| {
        from_files
            .iter()
            .find(|e| e.path.file_name().unwrap() == name)
            .unwrap_or_else(|| panic!("{name} in {from_files:#?}"))
    };
    assert_eq!(entry("locked").locked.as_deref(), Some("on a USB disk"));
    assert_eq!(entry("lock-no-reason").locked.as_deref(), Some(""));
    assert!(entry("gone").prunable);
    assert_eq!(entry("detached").branch, None);
    assert_eq!(
        entry("new\nline").head,
        None,
        "an unborn branch has no commit"
    );
    assert_eq!(entry("on branch").branch.as_deref(), Some("feature"));

    // A bare repository with worktrees.
    let bare = sb.path().join("bare.git");
    sb.git(
        sb.path().as_path(),
        &[
            "clone",
            "-q",
            "--bare",
            &repo.display().to_string(),
            &bare.display().to_string(),
        ],
    );
    sb.git(&bare, &["worktree", "add", "-q", &at("bare-main"), "main"]);
    let lib = grove::worktree::Repo::new(&sb.path().join("bare-main")).unwrap();
    let from_files = lib.worktrees().unwrap();
    assert!(from_files[0].bare, "{from_files:#?}");
    assert_eq!(from_files, lib.worktrees_from_git().unwrap());
}

#[test]
fn the_main_checkout_can_commit_its_agent_config_after_grove_new() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    ok(sb.grove(&repo).arg("init"));
    // An older grove's entries, hiding the config in every checkout.
    let exclude = repo.join(".git/info/exclude");
    std::fs::write(
        &exclude,
        "# >>> grove: files grove created in worktrees (managed; see grove README)\n\
         /.agent/config.json\n/.agent/.gitignore\n# <<< grove\n",
    )
    .unwrap();
    let task = new_task(&sb, &repo, &["t"]);
    let wt = std::path::PathBuf::from(task["worktreePath"].as_str().unwrap());
    // The task's worktree is clean, with the config copied in.
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    assert!(wt.join(".agent/config.json").is_file());
    // The main checkout still sees its config, and commits it.
    let status = sb.git(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.contains(".agent/config.json"), "{status}");
    sb.git(&repo, &["add", ".agent/config.json"]);
    sb.git(&repo, &["commit", "-qm", "grove config"]);
    let excluded = std::fs::read_to_string(&exclude).unwrap();
    assert!(!excluded.contains(".agent/"), "{excluded}");
    // A task made once it is committed has it checked out, clean too.
    let next = new_task(&sb, &repo, &["u"]);
    let next_wt = std::path::PathBuf::from(next["worktreePath"].as_str().unwrap());
    assert_eq!(sb.git(&next_wt, &["status", "--porcelain"]), "");
    assert_eq!(
        sb.git(&next_wt, &["ls-files", ".agent/config.json"]),
        ".agent/config.json"
    );
}

#[test]
fn a_tracked_agent_gitignore_is_left_alone_and_an_untracked_config_not_copied() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    ok(sb.grove(&repo).arg("init"));
    sb.git(&repo, &["add", ".agent/.gitignore"]);
    sb.git(&repo, &["commit", "-qm", "agent gitignore"]);
    let task = new_task(&sb, &repo, &["t"]);
    let wt = std::path::PathBuf::from(task["worktreePath"].as_str().unwrap());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
    assert!(!wt.join(".agent/config.json").exists());
    assert_eq!(
        std::fs::read(wt.join(".agent/.gitignore")).unwrap(),
        std::fs::read(repo.join(".agent/.gitignore")).unwrap()
    );
}
