//! `grove checkpoint`: git state, summary, next steps, tags; shown by list
//! and show, filtered by `list --tag`.

use std::path::PathBuf;

use crate::support::*;

#[test]
fn checkpoint_lists_exactly_the_commits_made_in_the_worktree_since_creation() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.git(
        &repo,
        &["remote", "add", "origin", "https://example.invalid/r.git"],
    );
    let task = new_task(&sb, &repo, &["Feature"]);
    let id = task["threadId"].as_str().unwrap();
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let start = sb.git(&wt, &["rev-parse", "HEAD"]);
    // A commit on main afterwards is not the task's.
    std::fs::write(repo.join("main.txt"), "main\n").unwrap();
    sb.git(&repo, &["add", "main.txt"]);
    sb.git(&repo, &["commit", "-q", "-m", "unrelated work on main"]);
    for (file, subject) in [("a.txt", "feat: add a"), ("b.txt", "fix: add b")] {
        std::fs::write(wt.join(file), "x\n").unwrap();
        sb.git(&wt, &["add", file]);
        sb.git(&wt, &["commit", "-q", "-m", subject]);
    }
    let short = |rev: &str| sb.git(&wt, &["rev-parse", "--short", rev]);

    let out = json(&ok(sb.grove(&repo).args(["checkpoint", id, "--json"])));
    let git = &out["git"];
    assert_eq!(
        git["commitsMade"],
        serde_json::json!([
            format!("{}: feat: add a", short("HEAD~1")),
            format!("{}: fix: add b", short("HEAD")),
        ])
    );
    assert_eq!(git["initialCommit"], start.as_str());
    assert_eq!(
        git["currentCommit"],
        sb.git(&wt, &["rev-parse", "HEAD"]).as_str()
    );
    assert_eq!(git["dirty"], false);
    assert_eq!(git["branch"], task["branch"]);
    assert_eq!(git["remoteUrl"], "https://example.invalid/r.git");
    assert_eq!(out["filesTouched"], serde_json::json!(["a.txt", "b.txt"]));

    // Uncommitted work: dirty, and its files count as touched.
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    std::fs::write(wt.join("new.txt"), "new\n").unwrap();
    let out = json(&ok(sb.grove(&wt).args(["checkpoint", id, "--json"])));
    assert_eq!(out["git"]["dirty"], true);
    assert_eq!(out["git"]["commitsMade"].as_array().unwrap().len(), 2);
    assert_eq!(
        out["filesTouched"],
        serde_json::json!(["README.md", "a.txt", "b.txt", "new.txt"])
    );
    // Stored in thread.json under the documented names.
    let meta = read_json(&wt.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(meta["git"]["initialCommit"], start.as_str());
    assert_eq!(meta["filesTouched"].as_array().unwrap().len(), 4);
}

#[test]
fn summary_next_steps_and_tags_are_recorded_shown_and_filtered() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let a = new_task(&sb, &repo, &["Auth work"]);
    let a_id = a["threadId"].as_str().unwrap();
    let b_id = new_thread(&sb, &repo, "Docs");
    ok(sb.grove(&repo).args([
        "checkpoint",
        a_id,
        "--summary",
        "Login works with OAuth",
        "--next",
        "add refresh tokens",
        "--next",
        "write tests",
        "--tag",
        "auth",
        "--tag",
        "security",
    ]));
    ok(sb
        .grove(&repo)
        .args(["checkpoint", &b_id, "--tag", "docs", "--summary", "Drafted"]));
    // Tags accumulate; next steps are replaced.
    ok(sb
        .grove(&repo)
        .args(["checkpoint", a_id, "--tag", "auth", "--next", "write tests"]));

    let row = row_of(&sb, &repo, a_id);
    assert_eq!(row["tags"], serde_json::json!(["auth", "security"]));
    assert_eq!(row["conversationSummary"], "Login works with OAuth");
    assert_eq!(row["nextSteps"], serde_json::json!(["write tests"]));

    let tagged = |tags: &[&str]| -> Vec<String> {
        let mut args = vec!["list", "--json"];
        for t in tags {
            args.extend(["--tag", t]);
        }
        json(&ok(sb.grove(&repo).args(&args)))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["threadId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(tagged(&["auth"]), vec![a_id.to_string()]);
    assert_eq!(tagged(&["docs"]), vec![b_id.clone()]);
    assert_eq!(tagged(&["auth", "security"]), vec![a_id.to_string()]);
    assert!(tagged(&["auth", "docs"]).is_empty());

    let list = ok(sb.grove(&repo).args(["list"]));
    let line = list.lines().find(|l| l.contains("Auth work")).unwrap();
    assert!(line.contains("#auth #security"), "{list}");
    assert!(list.contains("Login works with OAuth"), "{list}");
    assert!(list.contains("next: write tests"), "{list}");
    let show = ok(sb.grove(&repo).args(["show", a_id]));
    assert!(show.contains("summary: Login works with OAuth"), "{show}");
    assert!(show.contains("next:    write tests"), "{show}");
    assert!(show.contains("#auth #security"), "{show}");
    assert!(show.contains("0 commit(s) since start"), "{show}");

    let err = fails_with(
        sb.grove(&repo).args(["checkpoint", a_id, "--tag", "a,b"]),
        2,
    );
    assert!(err.contains("one tag per --tag"), "{err}");
}

#[test]
fn a_removed_worktrees_thread_still_takes_a_summary() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Short-lived"]);
    let id = task["threadId"].as_str().unwrap();
    ok(sb.grove(&repo).args(["rm", id]));
    let out = run(sb
        .grove(&repo)
        .args(["checkpoint", id, "--summary", "abandoned", "--json"]));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("git state not refreshed"));
    assert_eq!(row_of(&sb, &repo, id)["conversationSummary"], "abandoned");
}
