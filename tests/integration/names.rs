//! Naming a task as a person does: by a word of its title, its branch, its
//! worktree's path, or nothing at all inside its worktree — and `rm` of
//! several at once.

use std::path::{Path, PathBuf};

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

fn path_of(sb: &Sandbox, dir: &Path, args: &[&str]) -> PathBuf {
    PathBuf::from(ok(sb.grove(dir).arg("path").args(args)).trim())
}

#[test]
fn a_task_is_named_by_a_title_word_its_branch_or_its_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let login = task(&sb, &repo, "Fix the login bug");
    let parser = task(&sb, &repo, "Tidy the parser");
    assert_eq!(path_of(&sb, &repo, &["login"]), login.wt);
    assert_eq!(path_of(&sb, &repo, &["LOGIN"]), login.wt);
    assert_eq!(path_of(&sb, &repo, &[&parser.branch]), parser.wt);
    assert_eq!(
        path_of(&sb, &repo, &[parser.wt.to_str().unwrap()]),
        parser.wt
    );
    // A directory inside the worktree names its task too, relative or not.
    std::fs::create_dir_all(login.wt.join("src/deep")).unwrap();
    assert_eq!(path_of(&sb, &login.wt.join("src/deep"), &["."]), login.wt);
    assert_eq!(path_of(&sb, &login.wt.join("src"), &[".."]), login.wt);
    // The id and its prefixes still win.
    assert_eq!(path_of(&sb, &repo, &[&login.id[..8]]), login.wt);
}

#[test]
fn without_a_name_a_command_means_the_task_the_shell_is_in() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "Fix the login bug");
    std::fs::create_dir_all(t.wt.join("src")).unwrap();
    let inside = t.wt.join("src");
    assert_eq!(path_of(&sb, &inside, &[]), t.wt);
    let env = ok(sb.grove(&inside).args(["env", "--json"]));
    assert_eq!(json(&env)["GROVE_THREAD_ID"], t.id.as_str(), "{env}");
    let shown = ok(sb.grove(&inside).args(["show", "--json"]));
    assert_eq!(json(&shown)["thread"]["threadId"], t.id.as_str(), "{shown}");
    // Outside any task, nothing is guessed.
    let err = fails_with(sb.grove(&repo).arg("path"), 1);
    assert!(err.contains("is not in a task's worktree"), "{err}");
}

#[test]
fn an_ambiguous_name_lists_the_candidates_and_does_nothing() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let a = task(&sb, &repo, "Tidy the parser");
    let b = task(&sb, &repo, "Fix the parser crash");
    let err = fails_with(sb.grove(&repo).args(["rm", "parser"]), 1);
    assert!(err.contains("ambiguous"), "{err}");
    for t in [&a, &b] {
        assert!(err.contains(&t.id) && err.contains(&t.branch), "{err}");
        assert!(t.wt.is_dir(), "nothing removed");
    }
    // Once one is removed, the word names the other.
    ok(sb.grove(&repo).args(["rm", &a.id]));
    assert_eq!(path_of(&sb, &repo, &["parser"]), b.wt);
}

#[test]
fn rm_takes_several_names_and_a_typo_removes_none() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let login = task(&sb, &repo, "Fix the login bug");
    let parser = task(&sb, &repo, "Tidy the parser");
    let keep = task(&sb, &repo, "Keep this one");
    let err = fails_with(sb.grove(&repo).args(["rm", "login", "nosuchtask"]), 1);
    assert!(err.contains("nosuchtask"), "{err}");
    assert!(login.wt.is_dir(), "a typo among the names removes nothing");
    let out = ok(sb
        .grove(&repo)
        .args(["rm", "login", &parser.branch, "--json"]));
    let removed = json(&out);
    let ids: Vec<&str> = removed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [login.id.as_str(), parser.id.as_str()]);
    assert!(!login.wt.exists() && !parser.wt.exists());
    assert!(keep.wt.is_dir());
}

#[test]
fn rm_of_several_goes_on_past_a_refusal_and_exits_with_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let dirty = task(&sb, &repo, "Dirty work");
    let clean = task(&sb, &repo, "Clean work");
    std::fs::write(dirty.wt.join("README.md"), "changed").unwrap();
    let err = fails_with(sb.grove(&repo).args(["rm", &dirty.id, &clean.id]), 1);
    assert!(
        err.contains(&dirty.id) && err.contains("uncommitted"),
        "{err}"
    );
    assert!(dirty.wt.is_dir(), "the refused one stays");
    assert!(!clean.wt.exists(), "the other one is removed");
}

#[test]
fn branches_are_named_after_the_title_with_the_id_only_to_tell_two_apart() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let first = task(&sb, &repo, "Fix the login bug!");
    assert_eq!(first.branch, "grove/fix-the-login-bug");
    let second = task(&sb, &repo, "Fix the login bug");
    assert_eq!(
        second.branch,
        format!("grove/fix-the-login-bug-{}", &second.id[..4])
    );
    // A title with no letter grove can use: the id.
    let none = task(&sb, &repo, "日本語");
    assert_eq!(none.branch, format!("grove/{}", &none.id[..8]));
    // The template and the prefix are the repository's to choose.
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "grove": {"branchPrefix": "agent/", "branchTemplate": "{prefix}{id}-{slug}"}}),
    );
    let templated = task(&sb, &repo, "Tidy up");
    assert_eq!(
        templated.branch,
        format!("agent/{}-tidy-up", &templated.id[..8])
    );
}

#[test]
fn rename_changes_the_title_and_with_branch_the_branch_grove_made() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "Fix the login bug");
    std::fs::write(t.wt.join("a.txt"), "a").unwrap();
    sb.git(&t.wt, &["add", "a.txt"]);
    sb.git(&t.wt, &["commit", "-qm", "a"]);
    // The title alone.
    let out = ok(sb
        .grove(&repo)
        .args(["rename", "login", "Fix the sign-in bug"]));
    assert_eq!(out.trim(), "Fix the sign-in bug");
    assert_eq!(row_of(&sb, &repo, &t.id)["title"], "Fix the sign-in bug");
    assert_eq!(sb.git(&t.wt, &["branch", "--show-current"]), t.branch);
    // And the branch, from inside the task.
    let v = json(&ok(sb.grove(&t.wt).args([
        "rename",
        ".",
        "Fix the sign-in flow",
        "--branch",
        "--json",
    ])));
    assert_eq!(v["branch"]["from"], t.branch.as_str());
    assert_eq!(v["branch"]["to"], "grove/fix-the-sign-in-flow");
    assert_eq!(
        sb.git(&t.wt, &["branch", "--show-current"]),
        "grove/fix-the-sign-in-flow"
    );
    let meta = read_json(&t.wt.join(".agent/threads").join(&t.id).join("thread.json"));
    assert_eq!(meta["context"]["gitBranch"], "grove/fix-the-sign-in-flow");
    // grove still knows it made the branch: rm deletes it with the worktree.
    sb.git(&repo, &["merge", "-q", "grove/fix-the-sign-in-flow"]);
    ok(sb.grove(&repo).args(["rm", "sign-in"]));
    assert!(!branches(&sb, &repo).iter().any(|b| b.contains("sign-in")));
}

#[test]
fn rename_refuses_a_branch_grove_did_not_make_or_that_is_pushed() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    sb.git(&repo, &["branch", "mine"]);
    let v = new_task(&sb, &repo, &["Use my branch", "--branch", "mine"]);
    let id = v["threadId"].as_str().unwrap().to_string();
    let err = fails_with(
        sb.grove(&repo).args(["rename", &id, "Other", "--branch"]),
        1,
    );
    assert!(err.contains("did not make the branch mine"), "{err}");
    assert_eq!(
        row_of(&sb, &repo, &id)["title"],
        "Use my branch",
        "nothing changed"
    );

    let pushed = task(&sb, &repo, "Pushed work");
    let remote = sb.dir("remote.git");
    sb.git(&remote, &["init", "-q", "--bare"]);
    sb.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    sb.git(&pushed.wt, &["push", "-q", "-u", "origin", &pushed.branch]);
    let err = fails_with(
        sb.grove(&repo)
            .args(["rename", &pushed.id, "Renamed", "--branch"]),
        1,
    );
    assert!(err.contains("is pushed"), "{err}");
    assert_eq!(
        sb.git(&pushed.wt, &["branch", "--show-current"]),
        pushed.branch
    );
}
