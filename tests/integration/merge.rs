//! `grove merge`: a task lands on its target as asked (squash, rebase,
//! merge), tested, recorded in its thread, then removed; every refusal
//! (uncommitted work, a conflict, a failing test, a dirty target checkout,
//! a target that moved) leaves the target exactly as it was.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

struct Task {
    id: String,
    wt: PathBuf,
    branch: String,
}

fn task(sb: &Sandbox, repo: &Path, title: &str) -> Task {
    let v = new_task(sb, repo, &[title]);
    Task {
        id: v["threadId"].as_str().unwrap().to_string(),
        wt: PathBuf::from(v["worktreePath"].as_str().unwrap()),
        branch: v["branch"].as_str().unwrap().to_string(),
    }
}

fn commit_file(sb: &Sandbox, dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).unwrap();
    sb.git(dir, &["add", file]);
    sb.git(dir, &["commit", "-qm", message]);
}

fn head(sb: &Sandbox, dir: &Path, rev: &str) -> String {
    sb.git(dir, &["rev-parse", rev])
}

/// A task with two commits (`feature.txt`, then a change to it).
fn task_with_work(sb: &Sandbox, repo: &Path) -> Task {
    let t = task(sb, repo, "Fix the login bug");
    commit_file(sb, &t.wt, "feature.txt", "one\n", "add feature");
    commit_file(sb, &t.wt, "feature.txt", "one\ntwo\n", "extend feature");
    t
}

/// The thread's `thread.json` wherever it is now (the worktree, or the
/// cache once removed).
fn thread_json(sb: &Sandbox, t: &Task) -> Value {
    let in_wt = t.wt.join(".agent/threads").join(&t.id).join("thread.json");
    if in_wt.is_file() {
        return read_json(&in_wt);
    }
    read_json(&sb.cache_entry(&t.id).join("thread.json"))
}

fn thread_messages(sb: &Sandbox, t: &Task) -> Vec<Value> {
    let in_wt = t.wt.join(".agent/threads").join(&t.id);
    if in_wt.is_dir() {
        return message_lines(&in_wt);
    }
    message_lines(&sb.cache_entry(&t.id))
}

#[test]
fn squash_lands_one_commit_updates_the_checkout_records_and_removes_the_task() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let before = head(&sb, &repo, "main");
    let t = task_with_work(&sb, &repo);
    let out = ok(sb.grove(&repo).args(["merge", &t.id[..8]]));
    let main = head(&sb, &repo, "main");
    assert_eq!(out.trim(), main, "stdout is the target's new commit");
    assert_eq!(head(&sb, &repo, "main^"), before, "one commit on top");
    let message = sb.git(&repo, &["log", "-1", "--format=%B", "main"]);
    assert!(message.starts_with("Fix the login bug\n"), "{message}");
    assert!(
        message.contains("* add feature\n* extend feature"),
        "{message}"
    );
    assert!(
        message.contains(&format!("Grove-Thread: {}", t.id)),
        "{message}"
    );
    // The main checkout has main checked out: brought along, clean.
    assert_eq!(
        std::fs::read_to_string(repo.join("feature.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    // Removed, branch deleted.
    assert!(!t.wt.exists());
    assert!(!branches(&sb, &repo).contains(&t.branch));
    // Recorded in the thread (now in the cache).
    let merge = &thread_json(&sb, &t)["metadata"]["grove"]["merge"];
    assert_eq!(merge["strategy"], "squash");
    assert_eq!(merge["target"], "main");
    assert_eq!(merge["targetBefore"], before.as_str());
    assert_eq!(merge["targetAfter"], main.as_str());
    let last = thread_messages(&sb, &t).pop().unwrap();
    assert_eq!(last["role"], "system");
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Merged") && text.contains("main (squash)") && text.contains(&main[..12]),
        "{text}"
    );
}

#[test]
fn rebase_replays_the_commits_onto_a_target_that_moved_and_fast_forwards() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    commit_file(&sb, &repo, "other.txt", "main's own\n", "work on main");
    let main_before = head(&sb, &repo, "main");
    ok(sb.grove(&repo).args(["merge", &t.id, "--rebase"]));
    let subjects = sb.git(&repo, &["log", "--format=%s", "-3", "main"]);
    assert_eq!(subjects, "extend feature\nadd feature\nwork on main");
    assert_eq!(head(&sb, &repo, "main~2"), main_before);
    assert!(repo.join("feature.txt").is_file() && repo.join("other.txt").is_file());
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert!(!t.wt.exists());
}

#[test]
fn merge_makes_a_merge_commit_even_when_a_fast_forward_was_possible() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let before = head(&sb, &repo, "main");
    let t = task_with_work(&sb, &repo);
    let tip = head(&sb, &t.wt, "HEAD");
    ok(sb.grove(&repo).args(["merge", &t.id, "--merge"]));
    let parents = sb.git(&repo, &["log", "-1", "--format=%P", "main"]);
    assert_eq!(parents, format!("{before} {tip}"));
    let subject = sb.git(&repo, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(subject, format!("Merge branch '{}' into main", t.branch));
}

#[test]
fn a_conflict_names_the_files_and_changes_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "t");
    commit_file(&sb, &t.wt, "README.md", "task's\n", "task edits README");
    commit_file(&sb, &repo, "README.md", "main's\n", "main edits README");
    let main = head(&sb, &repo, "main");
    let tip = head(&sb, &t.wt, "HEAD");
    for strategy in ["--squash", "--rebase", "--merge"] {
        let err = fails_with(sb.grove(&repo).args(["merge", &t.id, strategy]), 5);
        assert!(
            err.contains("conflicts with main in: README.md")
                && err.contains("nothing was changed"),
            "{strategy}: {err}"
        );
        assert_eq!(
            head(&sb, &repo, "main"),
            main,
            "{strategy}: target unchanged"
        );
        assert_eq!(head(&sb, &t.wt, "HEAD"), tip, "{strategy}: task unchanged");
        assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "", "{strategy}");
        assert!(t.wt.is_dir());
    }
}

#[test]
fn uncommitted_work_in_the_task_is_refused_and_commit_lands_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "Add notes");
    std::fs::write(t.wt.join("notes.txt"), "n\n").unwrap();
    let main = head(&sb, &repo, "main");
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("uncommitted changes: notes.txt") && err.contains("--commit"),
        "{err}"
    );
    assert_eq!(head(&sb, &repo, "main"), main);
    assert!(t.wt.join("notes.txt").is_file());

    let out = json(&ok(sb
        .grove(&repo)
        .args(["merge", &t.id, "--commit", "--json"])));
    assert!(out["committed"].is_string(), "{out}");
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.txt")).unwrap(),
        "n\n"
    );
    assert_eq!(
        sb.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "Add notes"
    );
    // The thread's own files were not committed.
    let files = sb.git(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!files.contains(".agent/threads"), "{files}");
}

#[test]
fn a_dirty_target_checkout_is_refused_where_the_merge_touches_it_and_kept_elsewhere() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "t");
    commit_file(&sb, &t.wt, "README.md", "# test\nmore\n", "extend README");
    std::fs::write(repo.join("README.md"), "my local edit\n").unwrap();
    let main = head(&sb, &repo, "main");
    let tip = head(&sb, &t.wt, "HEAD");
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("in files this merge changes: README.md")
            && err.contains(&repo.display().to_string()),
        "{err}"
    );
    assert_eq!(head(&sb, &repo, "main"), main);
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "my local edit\n"
    );
    assert_eq!(head(&sb, &t.wt, "HEAD"), tip, "task branch put back");

    // A local change elsewhere is kept as it is.
    sb.git(&repo, &["checkout", "README.md"]);
    std::fs::write(repo.join("scratch.txt"), "mine\n").unwrap();
    commit_file(&sb, &repo, "local.txt", "a\n", "local file");
    std::fs::write(repo.join("local.txt"), "a\nb\n").unwrap();
    ok(sb.grove(&repo).args(["merge", &t.id]));
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "# test\nmore\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("local.txt")).unwrap(),
        "a\nb\n"
    );
    assert!(repo.join("scratch.txt").is_file());
    let status = sb.git(&repo, &["status", "--porcelain"]);
    assert_eq!(status, " M local.txt\n?? scratch.txt");
}

#[test]
fn a_failing_test_shows_its_output_and_changes_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    let main = head(&sb, &repo, "main");
    let tip = head(&sb, &t.wt, "HEAD");
    let err = fails_with(
        sb.grove(&repo).args([
            "merge",
            &t.id,
            "--test",
            "test -f feature.txt && echo checked-out-merge; echo boom >&2; exit 3",
        ]),
        6,
    );
    assert!(err.contains("failed (exited with code 3)"), "{err}");
    assert!(
        err.contains("| checked-out-merge") && err.contains("| boom"),
        "{err}"
    );
    assert_eq!(head(&sb, &repo, "main"), main);
    assert_eq!(head(&sb, &t.wt, "HEAD"), tip, "task branch put back");
    assert!(t.wt.is_dir());

    // A passing test is recorded.
    let out = json(&ok(sb.grove(&repo).args([
        "merge",
        &t.id,
        "--test",
        "test \"$(git log -1 --format=%s)\" = 'Fix the login bug'",
        "--json",
    ])));
    assert_eq!(out["tests"][0]["status"], "ok");
    let merge = &thread_json(&sb, &t)["metadata"]["grove"]["merge"];
    assert_eq!(merge["tests"][0]["status"], "ok");
}

#[test]
fn a_target_that_moves_during_the_merge_is_left_alone() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    let sneak = format!(
        "git -C '{}' commit -q --allow-empty -m sneaked-in",
        repo.display()
    );
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id, "--test", &sneak]), 1);
    assert!(err.contains("main moved while grove was merging"), "{err}");
    assert_eq!(
        sb.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "sneaked-in"
    );
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert!(t.wt.is_dir());
    assert_eq!(
        sb.git(&t.wt, &["log", "-1", "--format=%s"]),
        "extend feature",
        "task branch put back"
    );
}

#[test]
fn an_integrated_branch_says_so_and_is_cleaned_up() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    commit_file(&sb, &repo, "other.txt", "o\n", "main moves on");
    sb.git(&repo, &["merge", "-q", "--squash", &t.branch]);
    sb.git(&repo, &["commit", "-qm", "squashed by hand"]);
    let main = head(&sb, &repo, "main");
    let out = run(sb.grove(&repo).args(["merge", &t.id, "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is already in main"), "{stderr}");
    let v = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["alreadyIntegrated"]["reason"], "merge-adds-nothing");
    assert_eq!(v["targetAfter"], main.as_str());
    assert_eq!(head(&sb, &repo, "main"), main, "nothing merged");
    assert!(!t.wt.exists());
    assert!(!branches(&sb, &repo).contains(&t.branch));
}

#[test]
fn keep_keeps_the_task_on_the_landed_commit() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    ok(sb.grove(&repo).args(["merge", &t.id, "--keep"]));
    assert!(t.wt.is_dir());
    assert!(branches(&sb, &repo).contains(&t.branch));
    assert_eq!(head(&sb, &t.wt, "HEAD"), head(&sb, &repo, "main"));
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "merged");
    assert_eq!(
        thread_json(&sb, &t)["metadata"]["grove"]["merge"]["strategy"],
        "squash"
    );
}

#[test]
fn json_shape() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    let v = json(&ok(sb.grove(&repo).args(["merge", &t.id, "--json"])));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "alreadyIntegrated",
            "branch",
            "branchTip",
            "committed",
            "removed",
            "strategy",
            "target",
            "targetAfter",
            "targetBefore",
            "targetWorktree",
            "tests",
            "threadId"
        ]
    );
    assert_eq!(v["threadId"], t.id.as_str());
    assert_eq!(v["branch"], t.branch.as_str());
    assert_eq!(v["strategy"], "squash");
    assert_eq!(v["targetWorktree"], json!(repo));
    assert_eq!(v["removed"]["branchDeleted"], true);
    assert_eq!(v["tests"], json!([]));
}

#[test]
fn without_a_thread_inside_the_task_and_into_another_branch() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    sb.git(&repo, &["branch", "develop"]);
    let t = task_with_work(&sb, &repo);
    let main = head(&sb, &repo, "main");
    let v = json(&ok(sb
        .grove(&t.wt)
        .args(["merge", "--into", "develop", "--json"])));
    assert_eq!(head(&sb, &repo, "main"), main, "main untouched");
    assert_eq!(
        sb.git(&repo, &["log", "-1", "--format=%s", "develop"]),
        "Fix the login bug"
    );
    // Removed: the work is saved on develop, which the branch now tracks;
    // it is kept, not being in the default branch.
    assert!(!t.wt.exists(), "{v}");
    assert_eq!(v["removed"]["branchDeleted"], false);
    assert_eq!(
        sb.git(
            &repo,
            &["rev-parse", "--abbrev-ref", &format!("{}@{{u}}", t.branch)]
        ),
        "develop"
    );
    // Outside any task, THREAD is needed.
    let err = fails_with(sb.grove(&repo).args(["merge"]), 1);
    assert!(err.contains("is not in a task's worktree"), "{err}");
    // A removed task is named as such.
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("is gone (removed)") && err.contains("grove switch"),
        "{err}"
    );
    // A thread without a worktree has nothing to merge.
    let notes = new_thread(&sb, &repo, "notes");
    let err = fails_with(sb.grove(&repo).args(["merge", &notes]), 1);
    assert!(err.contains("has no worktree"), "{err}");
}

#[test]
fn pre_merge_commands_run_only_once_trusted() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"preMergeCommands": [
            {"command": "test -f feature.txt && echo ran > ../merge-check-ran"}
        ]}}),
    );
    sb.git(&repo, &["add", ".agent/config.json"]);
    sb.git(&repo, &["commit", "-qm", "config"]);
    let t = task_with_work(&sb, &repo);
    let main = head(&sb, &repo, "main");
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("preMergeCommands")
            && err.contains("not trusted")
            && err.contains("grove trust"),
        "{err}"
    );
    assert_eq!(head(&sb, &repo, "main"), main);

    ok(sb.grove(&repo).args(["trust"]));
    let v = json(&ok(sb.grove(&repo).args(["merge", &t.id, "--json"])));
    assert_eq!(v["tests"][0]["status"], "ok", "{v}");
    assert!(t.wt.parent().unwrap().join("merge-check-ran").is_file());
    assert!(
        v["tests"][0]["logFile"]
            .as_str()
            .unwrap()
            .ends_with("pre-merge-1.log")
    );
}

/// Redactions for the human output: the sandbox, ids, commits.
fn settings(sb: &Sandbox) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(
        &regex::escape(&sb.path().display().to_string()),
        "[SANDBOX]",
    );
    s.add_filter(r"[0-9a-f]{40}", "[COMMIT]");
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[UUID]",
    );
    s.add_filter(r"[0-9a-f]{12}\.\.[0-9a-f]{12}", "[OLD]..[NEW]");
    s.add_filter(r"grove/[0-9a-f]{8}", "grove/[ID8]");
    s.add_filter(r"thread-[0-9a-f]{8}", "thread-[ID8]");
    s.add_filter(r"app-[0-9a-f]{8}", "app-[HASH]");
    s.add_filter(r"\(\d+ ms\)", "([MS] ms)");
    s
}

fn human(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    let out = run(sb.grove(dir).args(args));
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn human_output_of_merge() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let conflicting = task(&sb, &repo, "Conflicting");
    commit_file(&sb, &conflicting.wt, "README.md", "task's\n", "task edit");
    let t = task_with_work(&sb, &repo);
    let failing = task_with_work(&sb, &repo);
    let failed = human(
        &sb,
        &repo,
        &[
            "merge",
            &failing.id,
            "--test",
            "echo 'expected 2, got 3'; exit 1",
        ],
    );
    ok(sb.grove(&repo).args(["rm", &failing.id, "--force"]));
    let landed = human(&sb, &repo, &["merge", &t.id, "--test", "true"]);
    commit_file(&sb, &repo, "README.md", "main's\n", "main edit");
    let conflict = human(&sb, &repo, &["merge", &conflicting.id]);
    settings(&sb).bind(|| {
        insta::assert_snapshot!("merge_landed", landed);
        insta::assert_snapshot!("merge_conflict", conflict);
        insta::assert_snapshot!("merge_test_failed", failed);
    });
}

/// A grove killed between moving the target and bringing its checkout
/// along left its intent: `gc --yes` brings the checkout along.
#[test]
fn gc_finishes_a_merge_killed_before_the_checkout_was_brought_along() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let old = head(&sb, &repo, "main");
    // The landing commit, made elsewhere; the ref moved, the checkout not.
    let side = sb.dir("side");
    sb.git(
        &repo,
        &["worktree", "add", "-q", "--detach", side.to_str().unwrap()],
    );
    commit_file(&sb, &side, "landed.txt", "landed\n", "landed");
    let new = head(&sb, &side, "HEAD");
    sb.git(&repo, &["update-ref", "refs/heads/main", &new, &old]);
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "D  landed.txt");
    let intents = sb.grove_home().join("intents");
    std::fs::create_dir_all(&intents).unwrap();
    std::fs::write(
        intents.join("killed.jsonl"),
        format!(
            "{}\n",
            json!({"step": 1, "op": "land", "repo": repo, "checkout": repo,
                   "targetRef": "refs/heads/main", "old": old, "new": new})
        ),
    )
    .unwrap();
    let plan = ok(sb.grove(&repo).args(["gc", "--dry-run", "--json"]));
    assert!(plan.contains("\"land\""), "{plan}");
    ok(sb.grove(&repo).args(["gc", "--yes"]));
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(repo.join("landed.txt")).unwrap(),
        "landed\n"
    );
    assert!(!intents.join("killed.jsonl").exists());
}

/// git takes an ignored file for expendable; grove refuses to overwrite
/// one in the target's checkout where the merge adds a file.
#[test]
fn an_ignored_file_in_the_way_in_the_target_checkout_is_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    commit_file(&sb, &repo, ".gitignore", "build.log\n", "ignore build.log");
    let t = task(&sb, &repo, "t");
    std::fs::write(t.wt.join("build.log"), "the task's\n").unwrap();
    sb.git(&t.wt, &["add", "-f", "build.log"]);
    sb.git(&t.wt, &["commit", "-qm", "track build.log"]);
    std::fs::write(repo.join("build.log"), "my ignored log\n").unwrap();
    let main = head(&sb, &repo, "main");
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("ignored file in the way) in files this merge changes: build.log"),
        "{err}"
    );
    assert_eq!(head(&sb, &repo, "main"), main);
    assert_eq!(
        std::fs::read_to_string(repo.join("build.log")).unwrap(),
        "my ignored log\n"
    );
}

/// A checkout that cannot be brought along after the ref moved (another
/// git holds its index) gets the ref back: nothing changed.
#[test]
fn a_checkout_that_cannot_follow_puts_the_target_back() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    let main = head(&sb, &repo, "main");
    std::fs::write(repo.join(".git/index.lock"), "").unwrap();
    let err = fails_with(sb.grove(&repo).args(["merge", &t.id]), 1);
    assert!(
        err.contains("could not be brought to the merged commit"),
        "{err}"
    );
    assert!(err.contains("index.lock"), "{err}");
    std::fs::remove_file(repo.join(".git/index.lock")).unwrap();
    assert_eq!(head(&sb, &repo, "main"), main, "the ref went back");
    assert_eq!(sb.git(&repo, &["status", "--porcelain"]), "");
    assert!(t.wt.is_dir());
    let journals = std::fs::read_dir(sb.grove_home().join("intents"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(journals, 0, "the step was undone, no journal left");
}

/// Ctrl-C while the test runs: its processes killed, the target as it
/// was, the task's branch put back, exit 130.
#[cfg(unix)]
#[test]
fn ctrl_c_during_the_test_stops_the_merge() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task_with_work(&sb, &repo);
    let main = head(&sb, &repo, "main");
    let tip = head(&sb, &t.wt, "HEAD");
    let started = t.wt.parent().unwrap().join("test-started");
    let test = format!("touch '{}'; sleep 60", started.display());
    let child = sb
        .grove(&repo)
        .args(["merge", &t.id, "--test", &test])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let since = Instant::now();
    while !started.exists() {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "the test never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert_eq!(head(&sb, &repo, "main"), main);
    assert_eq!(head(&sb, &t.wt, "HEAD"), tip);
    assert!(t.wt.is_dir());
}
