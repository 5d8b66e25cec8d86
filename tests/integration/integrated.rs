//! Branches whose work is already in the default branch, however it got
//! there: `list` says `merged` with the reason, `rm` deletes the branch
//! without `--force`, `gc --merged` picks the worktree. Work the default
//! branch does not have keeps a branch unmerged.

use std::path::{Path, PathBuf};

use crate::support::*;

struct Task {
    id: String,
    wt: PathBuf,
    branch: String,
}

fn task(sb: &Sandbox, repo: &Path, title: &str) -> Task {
    let t = new_task(sb, repo, &[title]);
    Task {
        id: t["threadId"].as_str().unwrap().to_string(),
        wt: PathBuf::from(t["worktreePath"].as_str().unwrap()),
        branch: t["branch"].as_str().unwrap().to_string(),
    }
}

/// A repository whose `app.txt` has ten lines.
fn repo(sb: &Sandbox) -> PathBuf {
    let repo = sb.repo("app");
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(repo.join("app.txt"), lines).unwrap();
    sb.git(&repo, &["add", "app.txt"]);
    sb.git(&repo, &["commit", "-qm", "app"]);
    repo
}

/// Replaces line `n` of `app.txt` in `dir` and commits.
fn change_line(sb: &Sandbox, dir: &Path, n: usize, text: &str) {
    let path = dir.join("app.txt");
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines[n - 1] = text.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    sb.git(dir, &["commit", "-qam", &format!("line {n}: {text}")]);
}

fn other_file(sb: &Sandbox, dir: &Path, name: &str) {
    std::fs::write(dir.join(name), name).unwrap();
    sb.git(dir, &["add", name]);
    sb.git(dir, &["commit", "-qm", &format!("add {name}")]);
}

fn integrated(sb: &Sandbox, repo: &Path, t: &Task) -> serde_json::Value {
    let row = row_of(sb, repo, &t.id);
    if row["status"] == "merged" {
        assert!(row["integrated"]["target"].is_string(), "{row}");
        row["integrated"]["reason"].clone()
    } else {
        assert!(row["integrated"].is_null(), "{row}");
        serde_json::Value::Null
    }
}

fn squash(sb: &Sandbox, repo: &Path, branch: &str) {
    sb.git(repo, &["merge", "-q", "--squash", branch]);
    sb.git(repo, &["commit", "-qm", &format!("squashed {branch}")]);
}

#[test]
fn squash_merges_are_recognised_even_after_the_default_branch_changed_the_same_lines() {
    let sb = Sandbox::new();
    let repo = repo(&sb);

    // A plain squash merge: the trees match.
    let a = task(&sb, &repo, "a");
    change_line(&sb, &a.wt, 2, "two");
    change_line(&sb, &a.wt, 3, "three");
    assert_eq!(integrated(&sb, &repo, &a), serde_json::Value::Null);
    squash(&sb, &repo, &a.branch);
    assert_eq!(integrated(&sb, &repo, &a), "trees-match");

    // Squashed while the default branch moved on elsewhere: merging again adds nothing.
    let b = task(&sb, &repo, "b");
    change_line(&sb, &b.wt, 5, "five");
    other_file(&sb, &repo, "elsewhere.txt");
    squash(&sb, &repo, &b.branch);
    other_file(&sb, &repo, "later.txt");
    assert_eq!(integrated(&sb, &repo, &b), "merge-adds-nothing");

    // Squashed, then the same lines changed again on the default branch:
    // merging would conflict; the squash commit's patch-id is the branch's.
    let c = task(&sb, &repo, "c");
    change_line(&sb, &c.wt, 7, "seven");
    change_line(&sb, &c.wt, 8, "eight");
    squash(&sb, &repo, &c.branch);
    change_line(&sb, &repo, 7, "SEVEN, later");
    assert_eq!(integrated(&sb, &repo, &c), "squash-patch-id");

    // rm deletes the branch without --force; the verdict was cached.
    let out = json(&ok(sb.grove(&repo).args(["rm", &c.id, "--json"])));
    assert_eq!(out["branchDeleted"], true, "{out}");
    assert!(!branches(&sb, &repo).contains(&c.branch));
    let cache = sb.grove_home().join("integration");
    assert!(
        std::fs::read_dir(&cache).unwrap().next().is_some(),
        "verdicts are cached"
    );

    // A commit after the squash is work the default branch lacks.
    change_line(&sb, &a.wt, 10, "ten");
    assert_eq!(integrated(&sb, &repo, &a), serde_json::Value::Null);
    let err = fails_with(sb.grove(&repo).args(["rm", &a.id]), 1);
    assert!(err.contains("neither pushed"), "{err}");
}

#[test]
fn rebase_merges_and_merge_commits_are_integrated_a_cherry_picked_subset_is_not() {
    let sb = Sandbox::new();
    let repo = repo(&sb);

    // Rebase merge: each commit replayed on the default branch, which then
    // changed one of the lines again (so merging would conflict).
    let r = task(&sb, &repo, "rebased");
    change_line(&sb, &r.wt, 2, "two");
    change_line(&sb, &r.wt, 4, "four");
    other_file(&sb, &repo, "main-only.txt");
    let commits = sb.git(
        &repo,
        &["rev-list", "--reverse", &format!("main..{}", r.branch)],
    );
    for c in commits.lines() {
        sb.git(&repo, &["cherry-pick", c]);
    }
    change_line(&sb, &repo, 4, "FOUR, later");
    assert_eq!(integrated(&sb, &repo, &r), "rebase-patch-ids");

    // A merge commit: the branch is an ancestor.
    let m = task(&sb, &repo, "merged");
    other_file(&sb, &m.wt, "feature.txt");
    sb.git(&repo, &["merge", "-q", "--no-ff", "-m", "merge", &m.branch]);
    assert_eq!(integrated(&sb, &repo, &m), "ancestor");

    // Only the first of two commits cherry-picked: not integrated.
    let s = task(&sb, &repo, "subset");
    other_file(&sb, &s.wt, "one.txt");
    other_file(&sb, &s.wt, "two.txt");
    let first = sb.git(&s.wt, &["rev-parse", "HEAD~1"]);
    sb.git(&repo, &["cherry-pick", &first]);
    assert_eq!(integrated(&sb, &repo, &s), serde_json::Value::Null);
    fails_with(sb.grove(&repo).args(["rm", &s.id]), 1);

    // gc --merged picks the integrated ones, each with its reason.
    let plan = json(&ok(sb.grove(&repo).args([
        "gc",
        "--merged",
        "--dry-run",
        "--json",
    ])));
    let picked: Vec<(String, String)> = plan["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["threadId"].as_str().unwrap().to_string(),
                w["integrated"]["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    assert!(
        picked.contains(&(r.id.clone(), "rebase-patch-ids".into())),
        "{plan}"
    );
    assert!(
        picked.contains(&(m.id.clone(), "ancestor".into())),
        "{plan}"
    );
    assert!(!picked.iter().any(|(id, _)| *id == s.id), "{plan}");
}

#[test]
fn a_branch_squashed_upstream_is_integrated_while_the_local_default_branch_diverged() {
    let sb = Sandbox::new();
    let repo = repo(&sb);
    let origin = sb.path().join("origin.git");
    sb.git(
        &sb.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    sb.git(
        &repo,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    sb.git(&repo, &["fetch", "-q", "origin"]);
    let t = task(&sb, &repo, "t");
    change_line(&sb, &t.wt, 3, "three");
    // Squashed on the remote's main; the local main has a commit of its own.
    sb.git(&repo, &["checkout", "-q", "-b", "tmp", "origin/main"]);
    squash(&sb, &repo, &t.branch);
    sb.git(&repo, &["push", "-q", "origin", "tmp:main"]);
    sb.git(&repo, &["checkout", "-q", "main"]);
    sb.git(&repo, &["branch", "-q", "-D", "tmp"]);
    change_line(&sb, &repo, 3, "three, locally");
    sb.git(&repo, &["fetch", "-q", "origin"]);
    let row = row_of(&sb, &repo, &t.id);
    assert_eq!(row["status"], "merged", "{row}");
    assert_eq!(
        row["integrated"]["target"], "refs/remotes/origin/main",
        "{row}"
    );
}

/// A repository whose `app.py` has a function with an `if` block, its last
/// line ending in blanks.
fn python_repo(sb: &Sandbox) -> PathBuf {
    let repo = sb.repo("py");
    std::fs::write(repo.join("app.py"), PY_BASE).unwrap();
    sb.git(&repo, &["add", "app.py"]);
    sb.git(&repo, &["commit", "-qm", "app.py"]);
    repo
}

const PY_BASE: &str = "def main():\n    if ready:\n        start()\n    report()  \n    return 0\n";

/// Writes `app.py` in `dir` and commits.
fn commit_py(sb: &Sandbox, dir: &Path, text: &str, message: &str) {
    std::fs::write(dir.join("app.py"), text).unwrap();
    sb.git(dir, &["commit", "-qam", message]);
}

#[test]
fn whitespace_is_content_an_indentation_change_is_not_a_blank_stripping_commit() {
    let sb = Sandbox::new();
    let repo = python_repo(&sb);
    // The task moves `report()` into the `if` block: a change of meaning
    // made of whitespace only.
    let indented = PY_BASE.replace("    report()  \n", "        report()\n");
    let stripped = PY_BASE.replace("    report()  \n", "    report()\n");

    // Squash: the default branch's only commit strips the line's trailing
    // blanks, which a whitespace-blind patch-id takes for the task's change.
    let s = task(&sb, &repo, "squash");
    commit_py(&sb, &s.wt, &indented, "report only when ready");
    commit_py(&sb, &repo, &stripped, "strip trailing blanks");
    assert_eq!(integrated(&sb, &repo, &s), serde_json::Value::Null);
    let err = fails_with(sb.grove(&repo).args(["rm", &s.id]), 1);
    assert!(err.contains("neither pushed"), "{err}");
    assert!(branches(&sb, &repo).contains(&s.branch));

    // Rebase: two commits cherry-picked, the third "matched" by a
    // blank-adding commit only if whitespace did not count.
    let r = task(&sb, &repo, "rebase");
    other_file(&sb, &r.wt, "notes.txt");
    other_file(&sb, &r.wt, "more.txt");
    let base = std::fs::read_to_string(r.wt.join("app.py")).unwrap();
    let reindented = base.replace("    report()\n", "        report()\n");
    commit_py(&sb, &r.wt, &reindented, "report only when ready");
    let main_text = std::fs::read_to_string(repo.join("app.py")).unwrap();
    commit_py(
        &sb,
        &repo,
        &main_text.replace("    report()\n", "    report()   \n"),
        "trailing blanks again",
    );
    for back in ["HEAD~2", "HEAD~1"] {
        let picked = sb.git(&r.wt, &["rev-parse", back]);
        sb.git(&repo, &["cherry-pick", &picked]);
    }
    assert_eq!(integrated(&sb, &repo, &r), serde_json::Value::Null);
    let err = fails_with(sb.grove(&repo).args(["rm", &r.id]), 1);
    assert!(err.contains("neither pushed"), "{err}");
    assert!(branches(&sb, &repo).contains(&r.branch));
}

#[test]
fn verdicts_an_older_grove_cached_under_other_rules_are_not_trusted() {
    let sb = Sandbox::new();
    let repo = python_repo(&sb);
    let t = task(&sb, &repo, "indent");
    let indented = PY_BASE.replace("    report()  \n", "        report()\n");
    commit_py(&sb, &t.wt, &indented, "report only when ready");
    commit_py(
        &sb,
        &repo,
        &PY_BASE.replace("    report()  \n", "    report()\n"),
        "strip trailing blanks",
    );
    // What a grove with a whitespace-blind patch-id cached for this pair,
    // in the file it kept its verdicts in.
    let key =
        t.wt.parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
    let tip = sb.git(&repo, &["rev-parse", &t.branch]);
    let main = sb.git(&repo, &["rev-parse", "main"]);
    let dir = sb.grove_home().join("integration");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{key}.json")),
        serde_json::json!({ format!("{tip}:{main}"): "squash-patch-id" }).to_string(),
    )
    .unwrap();
    assert_eq!(integrated(&sb, &repo, &t), serde_json::Value::Null);
    fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(branches(&sb, &repo).contains(&t.branch));
}

/// Merges `from` into the branch checked out in `dir` without committing.
fn merge_no_commit(sb: &Sandbox, dir: &Path, from: &str) {
    sb.git(dir, &["merge", "-q", "--no-ff", "--no-commit", from]);
}

/// Cherry-picks onto the default branch, in order, the commits of `dir`'s
/// branch that are not merges.
fn cherry_pick_all_but_merges(sb: &Sandbox, repo: &Path, dir: &Path) {
    let commits = sb.git(dir, &["rev-list", "--reverse", "--no-merges", "main..HEAD"]);
    for c in commits.lines() {
        sb.git(repo, &["cherry-pick", c]);
    }
}

#[test]
fn a_fix_written_into_a_merge_commit_is_work_the_default_branch_lacks() {
    let sb = Sandbox::new();
    let repo = repo(&sb);
    other_file(&sb, &repo, "main-only.txt");

    // The task merges a side branch and fixes line 5 in the merge commit
    // (an "evil" merge: its tree is not the automatic merge's); the default
    // branch cherry-picks the two plain commits and never gets the fix.
    let t = task(&sb, &repo, "evil merge");
    sb.git(&t.wt, &["branch", "side", "HEAD~0"]);
    other_file(&sb, &t.wt, "notes.txt");
    sb.git(&t.wt, &["checkout", "-q", "side"]);
    other_file(&sb, &t.wt, "more.txt");
    sb.git(&t.wt, &["checkout", "-q", &t.branch]);
    merge_no_commit(&sb, &t.wt, "side");
    let text = std::fs::read_to_string(t.wt.join("app.txt")).unwrap();
    std::fs::write(t.wt.join("app.txt"), text.replace("line 5\n", "fixed 5\n")).unwrap();
    sb.git(&t.wt, &["commit", "-qam", "merge side, fix line 5"]);
    cherry_pick_all_but_merges(&sb, &repo, &t.wt);
    assert!(
        !std::fs::read_to_string(repo.join("app.txt"))
            .unwrap()
            .contains("fixed 5")
    );
    assert_eq!(integrated(&sb, &repo, &t), serde_json::Value::Null);
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(err.contains("neither pushed"), "{err}");
    assert!(branches(&sb, &repo).contains(&t.branch));

    // A merge that is only the automatic merge carries nothing of its own:
    // the cherry-picked commits are the whole work (the default branch then
    // changed line 2 again, so merging the task would conflict).
    let c = task(&sb, &repo, "clean merge");
    sb.git(&c.wt, &["branch", "side2", "HEAD~0"]);
    change_line(&sb, &c.wt, 2, "two");
    sb.git(&c.wt, &["checkout", "-q", "side2"]);
    other_file(&sb, &c.wt, "two.txt");
    sb.git(&c.wt, &["checkout", "-q", &c.branch]);
    sb.git(
        &c.wt,
        &["merge", "-q", "--no-ff", "-m", "merge side2", "side2"],
    );
    other_file(&sb, &repo, "main-later.txt");
    cherry_pick_all_but_merges(&sb, &repo, &c.wt);
    change_line(&sb, &repo, 2, "TWO, later");
    assert_eq!(integrated(&sb, &repo, &c), "rebase-patch-ids");
}

/// Adds, with `git fast-import`, one commit per file of `files` to
/// `branch` (from its tip), each adding that file; then checks the result
/// out in `dir`, where the branch is checked out.
fn import_commits(sb: &Sandbox, dir: &Path, branch: &str, files: &[String]) {
    let tip = sb.git(dir, &["rev-parse", branch]);
    let mut stream = String::new();
    for (i, file) in files.iter().enumerate() {
        let message = format!("add {file}");
        stream.push_str(&format!(
            "commit refs/heads/{branch}\ncommitter Grove Test <test@grove.invalid> 1735689600 +0000\ndata {}\n{message}\n",
            message.len()
        ));
        if i == 0 {
            stream.push_str(&format!("from {tip}\n"));
        }
        stream.push_str(&format!(
            "M 100644 inline {file}\ndata {}\n{file}\n",
            file.len()
        ));
    }
    let mut cmd = std::process::Command::new("git");
    sb.env(&mut cmd);
    cmd.args(["fast-import", "--quiet"]).current_dir(dir);
    let out = run_with_stdin(&mut cmd, stream.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.git(dir, &["reset", "-q", "--hard", branch]);
}

#[test]
fn a_branch_longer_than_the_patch_id_limit_is_not_vouched_for_by_its_newest_commits() {
    let sb = Sandbox::new();
    let repo = repo(&sb);
    let t = task(&sb, &repo, "long");
    // 501 commits; the default branch gets all but the oldest, cherry-picked.
    let files: Vec<String> = (1..=501).map(|i| format!("f{i}.txt")).collect();
    import_commits(&sb, &t.wt, &t.branch, &files);
    import_commits(&sb, &repo, "main", &files[1..]);
    // The newest 500 are all on the default branch; f1.txt is not.
    assert_eq!(integrated(&sb, &repo, &t), serde_json::Value::Null);
    fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(branches(&sb, &repo).contains(&t.branch));
}
