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
