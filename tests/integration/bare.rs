//! Bare repositories with worktrees, a common layout for agent work:
//! grove works from the bare directory and from any of its worktrees, and
//! never writes inside the git directory.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::*;

/// `proj.git` (bare, cloned from a repository with a committed config)
/// and, when `with_main`, its worktree `proj-main` on `main`.
fn bare(sb: &Sandbox, with_main: bool) -> (PathBuf, Option<PathBuf>) {
    let src = sb.repo("src");
    write_config(
        &src,
        json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "git rev-parse --is-bare-repository > .git-info-seen"}]}}),
    );
    std::fs::write(src.join(".gitignore"), ".git-info-seen\n").unwrap();
    sb.git(&src, &["add", "."]);
    sb.git(&src, &["commit", "-qm", "config"]);
    let git_dir = sb.path().join("proj.git");
    sb.git(
        &sb.path(),
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            git_dir.to_str().unwrap(),
        ],
    );
    let main = with_main.then(|| {
        let main = sb.path().join("proj-main");
        sb.git(
            &git_dir,
            &["worktree", "add", "-q", main.to_str().unwrap(), "main"],
        );
        main
    });
    (git_dir, main)
}

fn no_agent_inside(git_dir: &Path) {
    assert!(
        !git_dir.join(".agent").exists(),
        "nothing of grove's in the git directory"
    );
}

#[test]
fn tasks_are_made_listed_and_removed_from_the_bare_directory_and_any_worktree() {
    let sb = Sandbox::new();
    let (git_dir, main) = bare(&sb, true);
    let main = main.unwrap();
    let from_bare = new_task(&sb, &git_dir, &["from bare", "--trust"]);
    let wt1 = PathBuf::from(from_bare["worktreePath"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(wt1.join(".git-info-seen"))
            .unwrap()
            .trim(),
        "false",
        "the committed config's hooks ran in the new worktree"
    );
    let from_main = new_task(&sb, &main, &["from main"]);
    let wt2 = PathBuf::from(from_main["worktreePath"].as_str().unwrap());
    let from_task = new_task(&sb, &wt2, &["from a task"]);

    for dir in [&git_dir, &main, &wt1] {
        let rows = list_rows(&sb, dir);
        for t in [&from_bare, &from_main, &from_task] {
            assert!(
                rows.iter().any(|r| r["threadId"] == t["threadId"]),
                "{} lists {}: {rows:?}",
                dir.display(),
                t["threadId"]
            );
        }
    }
    ok(sb
        .grove(&git_dir)
        .args(["rm", from_main["threadId"].as_str().unwrap()]));
    assert!(!wt2.exists());
    let row = row_of(&sb, &wt1, from_main["threadId"].as_str().unwrap());
    assert_eq!(row["status"], "removed", "{row}");
    no_agent_inside(&git_dir);
}

#[test]
fn init_never_writes_inside_a_git_directory() {
    let sb = Sandbox::new();
    let (git_dir, _) = bare(&sb, false);
    let err = fails_with(sb.grove(&git_dir).args(["init"]), 1);
    assert!(
        err.contains("git directory") && err.contains("worktree"),
        "{err}"
    );
    fails_with(
        sb.grove(&git_dir).args(["new", "--no-worktree", "notes"]),
        1,
    );
    no_agent_inside(&git_dir);
    // A task still gets a worktree of its own.
    let task = new_task(&sb, &git_dir, &["task"]);
    assert!(
        PathBuf::from(task["worktreePath"].as_str().unwrap())
            .join("README.md")
            .is_file()
    );
    no_agent_inside(&git_dir);
    // Started inside a `.git`, init writes in its working tree.
    let repo = sb.repo("plain");
    let out = ok(sb.grove(&repo.join(".git")).args(["init"]));
    assert_eq!(PathBuf::from(out.trim()), repo.join(".agent"));
    no_agent_inside(&repo.join(".git"));
}

/// A grove task's worktree stands in for nothing: with a bare repository
/// whose only worktree is a task, grove still works as if there were none.
#[test]
fn a_task_worktree_never_stands_in_for_the_main_checkout() {
    let sb = Sandbox::new();
    let (git_dir, _) = bare(&sb, false);
    let task = new_task(&sb, &git_dir, &["only task", "--trust"]);
    let id = task["threadId"].as_str().unwrap();
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let before = snapshot(&wt);

    let err = fails_with(sb.grove(&git_dir).args(["init"]), 1);
    assert!(err.contains("git directory"), "{err}");
    fails_with(
        sb.grove(&git_dir).args(["new", "--no-worktree", "notes"]),
        1,
    );
    assert_eq!(
        snapshot(&wt),
        before,
        "nothing written in the task's worktree"
    );
    no_agent_inside(&git_dir);

    for cwd in [&git_dir, &wt] {
        let rows = list_rows(&sb, cwd);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["threadId"], id, "{rows:?}");
        assert_eq!(rows[0]["status"], "live", "{rows:?}");
        assert_eq!(rows[0]["worktreePath"], wt.to_str().unwrap(), "{rows:?}");
        assert_eq!(rows[0]["repoRoot"], git_dir.to_str().unwrap(), "{rows:?}");
    }

    ok(sb.grove(&git_dir).args(["rm", id]));
    assert!(!wt.exists(), "the task's worktree is removed");
    assert!(
        !branches(&sb, &git_dir).contains(&task["branch"].as_str().unwrap().to_string()),
        "the branch grove made is deleted"
    );
    no_agent_inside(&git_dir);
}

/// A `--dir` task outside grove's data directory, made from the bare
/// directory, is known as a task by grove's cache: it does not stand in
/// either, and its committed `.agent/config.json` is not the repository's.
#[test]
fn a_dir_task_outside_groves_data_never_stands_in() {
    let sb = Sandbox::new();
    let (git_dir, _) = bare(&sb, false);
    let dir = sb.path().join("proj-task");
    let task = new_task(
        &sb,
        &git_dir,
        &["elsewhere", "--dir", dir.to_str().unwrap()],
    );
    let id = task["threadId"].as_str().unwrap();
    assert!(dir.join(".agent/config.json").is_file(), "committed config");
    let before = snapshot(&dir);

    for cwd in [&git_dir, &dir] {
        let rows = list_rows(&sb, cwd);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["status"], "live", "{rows:?}");
        assert_eq!(rows[0]["repoRoot"], git_dir.to_str().unwrap(), "{rows:?}");
    }
    fails_with(sb.grove(&git_dir).args(["init"]), 1);
    fails_with(
        sb.grove(&git_dir).args(["new", "--no-worktree", "notes"]),
        1,
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "nothing written in the task's worktree"
    );

    // The next task runs no hooks of the first task's config, and goes
    // where the first task's repository keeps its worktrees.
    let second = new_task(&sb, &git_dir, &["second"]);
    assert_eq!(second["hooks"], json!([]), "{second}");
    let wt2 = PathBuf::from(second["worktreePath"].as_str().unwrap());
    assert!(!wt2.join(".git-info-seen").exists(), "no hook ran");
    let key_dir = wt2.parent().unwrap().file_name().unwrap().to_str().unwrap();
    assert!(key_dir.starts_with("proj.git-"), "{}", wt2.display());

    ok(sb.grove(&git_dir).args(["rm", id]));
    assert!(!dir.exists(), "the --dir task's worktree is removed");
    let row = row_of(&sb, &git_dir, id);
    assert_eq!(row["status"], "removed", "{row}");

    // Made again in its old directory, it is still a task, not the main
    // checkout.
    let back = json(&ok(sb.grove(&git_dir).args(["switch", id, "--json"])));
    assert_eq!(back["revived"], true, "{back}");
    assert_eq!(back["worktreePath"], dir.to_str().unwrap(), "{back}");
    let row = row_of(&sb, &dir, id);
    assert_eq!(row["status"], "live", "{row}");
    assert_eq!(row["repoRoot"], git_dir.to_str().unwrap(), "{row}");
    fails_with(sb.grove(&git_dir).args(["init"]), 1);
    no_agent_inside(&git_dir);
}

/// `grove gc` from the bare directory finds the merged task that is the
/// repository's only worktree, and removes it.
#[test]
fn gc_removes_a_merged_task_that_is_the_only_worktree() {
    let sb = Sandbox::new();
    let (git_dir, _) = bare(&sb, false);
    let task = new_task(&sb, &git_dir, &["merged"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    std::fs::write(wt.join("done.txt"), "done\n").unwrap();
    sb.git(&wt, &["add", "done.txt"]);
    sb.git(&wt, &["commit", "-qm", "done"]);
    let tip = sb.git(&wt, &["rev-parse", "HEAD"]);
    sb.git(&git_dir, &["update-ref", "refs/heads/main", tip.trim()]);

    let out = json(&ok(sb.grove(&git_dir).args(["gc", "--yes", "--json"])));
    assert!(!wt.exists(), "gc removed the merged task: {out}");
    let row = row_of(&sb, &git_dir, task["threadId"].as_str().unwrap());
    assert_eq!(row["status"], "removed", "{row}");
}

/// The stand-in is the user's worktree as soon as there is one: made after
/// the tasks, it stands in from then on, and the tasks made before are
/// still listed and removed from it and from the bare directory.
#[test]
fn a_worktree_added_after_the_tasks_stands_in_from_then_on() {
    let sb = Sandbox::new();
    let (git_dir, _) = bare(&sb, false);
    let task = new_task(&sb, &git_dir, &["before"]);
    let id = task["threadId"].as_str().unwrap();
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let main = sb.path().join("proj-main");
    sb.git(
        &git_dir,
        &["worktree", "add", "-q", main.to_str().unwrap(), "main"],
    );
    for cwd in [&git_dir, &main, &wt] {
        let row = row_of(&sb, cwd, id);
        assert_eq!(row["status"], "live", "{row}");
        assert_eq!(row["repoRoot"], main.to_str().unwrap(), "{row}");
    }
    let out = ok(sb.grove(&git_dir).args(["init"]));
    assert_eq!(PathBuf::from(out.trim()), main.join(".agent"));
    let removed = json(&ok(sb.grove(&git_dir).args(["rm", id, "--json"])));
    assert!(!wt.exists(), "{removed}");
    // grove's record that it made the branch, kept under the bare
    // directory that stood in then, is still found.
    assert_eq!(removed["branchDeleted"], true, "{removed}");
    assert!(!branches(&sb, &git_dir).contains(&task["branch"].as_str().unwrap().to_string()));
    no_agent_inside(&git_dir);
}
