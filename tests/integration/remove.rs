//! rm, path, gc and the thread cache: nothing uncommitted or unsaved is lost,
//! and a thread outlives its worktree.

use std::path::PathBuf;

use serde_json::json;

use crate::support::*;

struct Task {
    id: String,
    wt: PathBuf,
    branch: String,
}

fn task(sb: &Sandbox, repo: &std::path::Path, title: &str) -> Task {
    let v = new_task(sb, repo, &[title, "--prompt", "first message"]);
    Task {
        id: v["threadId"].as_str().unwrap().to_string(),
        wt: PathBuf::from(v["worktreePath"].as_str().unwrap()),
        branch: v["branch"].as_str().unwrap().to_string(),
    }
}

fn commit_in(sb: &Sandbox, wt: &std::path::Path, file: &str) {
    std::fs::write(wt.join(file), file).unwrap();
    sb.git(wt, &["add", file]);
    sb.git(wt, &["commit", "-qm", &format!("add {file}")]);
}

#[test]
fn rm_refuses_uncommitted_work_and_force_overrides() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "t");
    std::fs::write(t.wt.join("README.md"), "changed").unwrap();
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(
        err.contains("uncommitted changes") && err.contains("README.md") && err.contains("--force"),
        "{err}"
    );
    assert!(t.wt.join("README.md").is_file(), "worktree untouched");
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "dirty");

    // Untracked files count too.
    sb.git(&t.wt, &["checkout", "README.md"]);
    std::fs::write(t.wt.join("new.txt"), "n").unwrap();
    fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);

    ok(sb.grove(&repo).args(["rm", &t.id, "--force"]));
    assert!(!t.wt.exists());
    assert!(
        !branches(&sb, &repo).contains(&t.branch),
        "--force deletes the branch"
    );
}

#[test]
fn rm_refuses_unpushed_commits_until_merged() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "t");
    commit_in(&sb, &t.wt, "feature.txt");
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id[..8]]), 1);
    assert!(
        err.contains("neither pushed") && err.contains("add feature.txt"),
        "{err}"
    );
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "live");

    sb.git(&repo, &["merge", "-q", "--ff-only", &t.branch]);
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "merged");
    let out = json(&ok(sb.grove(&repo).args(["rm", &t.id[..8], "--json"])));
    assert_eq!(out["branchDeleted"], true);
    assert!(!t.wt.exists());
    assert!(!branches(&sb, &repo).contains(&t.branch));
}

#[test]
fn pushed_work_is_removed_but_an_unmerged_branch_is_kept() {
    let sb = Sandbox::new();
    let remote = sb.path().join("remote.git");
    std::fs::create_dir_all(&remote).unwrap();
    sb.git(&remote, &["init", "-q", "--bare"]);
    let repo = sb.repo("app");
    sb.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    sb.git(&repo, &["push", "-q", "-u", "origin", "main"]);
    let t = task(&sb, &repo, "t");
    commit_in(&sb, &t.wt, "pushed.txt");
    sb.git(&t.wt, &["push", "-q", "-u", "origin", &t.branch]);
    let out = json(&ok(sb.grove(&repo).args(["rm", &t.id, "--json"])));
    assert_eq!(out["branchDeleted"], false);
    assert!(out["branchKept"].as_str().unwrap().contains("not merged"));
    assert!(branches(&sb, &repo).contains(&t.branch));
}

#[test]
fn a_thread_survives_rm_and_is_still_listed_and_shown() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "keep me");
    ok(sb
        .grove(&repo)
        .args(["append", &t.id, "--role", "agent", "--text", "answer"]));
    let out = run(sb.grove(&repo).args(["rm", &t.id]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        t.wt.display().to_string()
    );
    assert!(!t.wt.exists());
    assert!(!worktree_paths(&sb, &repo).contains(&t.wt));
    let row = row_of(&sb, &repo, &t.id);
    assert_eq!(row["status"], "removed");
    assert_eq!(row["stats"]["messageCount"], 2);
    let shown = json(&ok(sb.grove(&repo).args(["show", &t.id[..8], "--json"])));
    let texts: Vec<_> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert_eq!(texts, vec![json!("first message"), json!("answer")]);
    // The exclude entry of the thread is gone; the main repository is unchanged.
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap();
    assert!(!exclude.contains(&t.id), "{exclude}");
}

#[test]
fn a_worktree_deleted_behind_groves_back_keeps_its_conversation() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "rm -rf victim");
    // Messages appended after creation are in the cache too (it shares the log).
    ok(sb
        .grove(&repo)
        .args(["append", &t.id, "--role", "agent", "--text", "late answer"]));
    std::fs::remove_dir_all(&t.wt).unwrap();
    let row = row_of(&sb, &repo, &t.id);
    assert_eq!(row["status"], "missing");
    let shown = json(&ok(sb.grove(&repo).args(["show", &t.id, "--json"])));
    let msgs = shown["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1]["content"][0]["text"], "late answer");

    // gc --missing cleans the registration; the thread stays listed.
    let plan = json(&ok(sb.grove(&repo).args(["gc", "--missing", "--json"])));
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["worktrees"][0]["threadId"], t.id.as_str());
    assert!(
        worktree_paths(&sb, &repo).contains(&t.wt),
        "dry run changes nothing"
    );
    ok(sb.grove(&repo).args(["gc", "--missing", "--yes"]));
    assert!(!worktree_paths(&sb, &repo).contains(&t.wt));
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "removed");
}

#[test]
fn rm_never_follows_symlinks_into_the_main_repository() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    std::fs::create_dir_all(repo.join("node_modules/pkg")).unwrap();
    std::fs::write(repo.join("node_modules/pkg/index.js"), "keep").unwrap();
    std::fs::write(repo.join(".gitignore"), "node_modules\n").unwrap();
    sb.git(&repo, &["add", ".gitignore"]);
    sb.git(&repo, &["commit", "-qm", "ignore"]);
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"symlinks": [{"source": "node_modules"}]}}),
    );
    let t = task(&sb, &repo, "t");
    assert!(t.wt.join("node_modules/pkg/index.js").is_file());
    ok(sb.grove(&repo).args(["rm", &t.id]));
    assert_eq!(
        std::fs::read_to_string(repo.join("node_modules/pkg/index.js")).unwrap(),
        "keep"
    );
}

#[test]
fn keep_branch_purge_and_existing_branches() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "keep branch");
    ok(sb.grove(&repo).args(["rm", &t.id, "--keep-branch"]));
    assert!(branches(&sb, &repo).contains(&t.branch));

    let t = task(&sb, &repo, "purge");
    ok(sb.grove(&repo).args(["rm", &t.id, "--purge"]));
    assert!(
        list_rows(&sb, &repo)
            .iter()
            .all(|r| r["threadId"] != t.id.as_str()),
        "purged: gone from list"
    );

    sb.git(&repo, &["branch", "mine"]);
    let v = new_task(&sb, &repo, &["existing", "--branch", "mine"]);
    let out = json(&ok(sb.grove(&repo).args([
        "rm",
        v["threadId"].as_str().unwrap(),
        "--json",
    ])));
    assert_eq!(
        out["branchDeleted"], false,
        "a branch grove did not create is kept"
    );
    assert!(branches(&sb, &repo).contains(&"mine".to_string()));

    let local = new_thread(&sb, &repo, "local");
    let err = fails_with(sb.grove(&repo).args(["rm", &local]), 1);
    assert!(err.contains("no worktree"), "{err}");
}

#[test]
fn gc_picks_merged_and_idle_and_skips_locked_and_dirty() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let merged = task(&sb, &repo, "merged");
    commit_in(&sb, &merged.wt, "m.txt");
    sb.git(&repo, &["merge", "-q", "--ff-only", &merged.branch]);
    let locked = task(&sb, &repo, "locked");
    commit_in(&sb, &locked.wt, "l.txt");
    sb.git(&repo, &["merge", "-q", "--no-edit", &locked.branch]);
    sb.git(
        &repo,
        &[
            "worktree",
            "lock",
            locked.wt.to_str().unwrap(),
            "--reason",
            "in use",
        ],
    );
    let dirty = task(&sb, &repo, "dirty merged");
    commit_in(&sb, &dirty.wt, "d.txt");
    sb.git(&repo, &["merge", "-q", "--no-edit", &dirty.branch]);
    std::fs::write(dirty.wt.join("wip.txt"), "wip").unwrap();
    let fresh = task(&sb, &repo, "fresh");

    let plan = json(&ok(sb.grove(&repo).args(["gc", "--json"])));
    let picked: Vec<_> = plan["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["threadId"].as_str().unwrap().to_string())
        .collect();
    assert!(
        picked.contains(&merged.id) && picked.contains(&locked.id),
        "{plan}"
    );
    assert!(
        !picked.contains(&fresh.id),
        "a fresh task without commits is not merged"
    );
    assert!(!picked.contains(&dirty.id), "dirty is not merged status");

    ok(sb.grove(&repo).args(["gc", "--yes"]));
    assert!(!merged.wt.exists(), "merged removed");
    assert!(locked.wt.exists(), "locked never touched");
    assert!(fresh.wt.exists());

    // --older-than picks everything idle; dirty ones are skipped without --force.
    let plan = json(&ok(sb.grove(&repo).args([
        "gc",
        "--older-than",
        "0d",
        "--json",
    ])));
    let dirty_row = plan["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["threadId"] == dirty.id.as_str())
        .unwrap()
        .clone();
    assert!(
        dirty_row["skip"].as_str().unwrap().contains("uncommitted"),
        "{dirty_row}"
    );
    ok(sb.grove(&repo).args(["gc", "--older-than", "0d", "--yes"]));
    assert!(dirty.wt.exists(), "dirty skipped");
    assert!(!fresh.wt.exists(), "idle removed");
    assert!(locked.wt.exists());
    ok(sb
        .grove(&repo)
        .args(["gc", "--older-than", "0d", "--yes", "--force"]));
    assert!(!dirty.wt.exists());
    assert!(locked.wt.exists(), "locked even with --force");
    fails_with(sb.grove(&repo).args(["gc", "--older-than", "soon"]), 2);
    let plan = json(&ok(sb.grove(&repo).args([
        "gc",
        "--older-than",
        "2w",
        "--json",
    ])));
    assert!(plan["worktrees"].as_array().unwrap().is_empty());
}

#[test]
fn an_interrupted_rm_is_finished_by_the_next_list() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "interrupted");
    // What `rm` leaves if killed right after caching and deleting the directory.
    let cache_record = sb.cache_entry(&t.id).join("cache.json");
    let mut record = read_json(&cache_record);
    record["state"] = json!("removing");
    std::fs::write(&cache_record, serde_json::to_vec(&record).unwrap()).unwrap();
    std::fs::remove_dir_all(&t.wt).unwrap();
    assert!(worktree_paths(&sb, &repo).contains(&t.wt));
    let row = row_of(&sb, &repo, &t.id);
    assert_eq!(row["status"], "removed");
    assert!(!worktree_paths(&sb, &repo).contains(&t.wt), "pruned");
}

/// grove's branch checked out in another worktree is kept, and rm says so.
#[test]
fn a_branch_checked_out_in_another_worktree_is_kept() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "moved");
    sb.git(&t.wt, &["switch", "-q", "-c", "elsewhere"]);
    let other = sb.path().join("other-worktree");
    sb.git(
        &repo,
        &["worktree", "add", "-q", other.to_str().unwrap(), &t.branch],
    );
    let out = json(&ok(sb.grove(&repo).args(["rm", &t.id, "--json"])));
    assert_eq!(out["branchDeleted"], false, "{out}");
    let kept = out["branchKept"].as_str().unwrap_or_default();
    assert!(kept.contains("checked out in another worktree"), "{out}");
    assert!(branches(&sb, &repo).contains(&t.branch));
    assert!(
        other.join(".git").exists(),
        "the other worktree is untouched"
    );
    assert!(!t.wt.exists());
}

/// rm saves the threads (as `removing`) while it checks; a refusal marks
/// them live again, whichever check refused.
#[test]
fn a_refused_rm_leaves_its_threads_cached_as_live() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "refused");
    let record = sb.cache_entry(&t.id).join("cache.json");
    let state = || read_json(&record)["state"].clone();
    assert_eq!(state(), "live");

    std::fs::write(t.wt.join("README.md"), "changed").unwrap();
    fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert_eq!(state(), "live", "refused for uncommitted work");
    sb.git(&t.wt, &["checkout", "README.md"]);

    // Refused after the checks passed: a process at work in the worktree.
    #[cfg(target_os = "linux")]
    {
        let mut sleeper = std::process::Command::new("sleep")
            .arg("60")
            .current_dir(&t.wt)
            .spawn()
            .unwrap();
        let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        assert!(err.contains("process"), "{err}");
        assert_eq!(state(), "live", "refused for a process at work");
    }

    ok(sb.grove(&repo).args(["rm", &t.id]));
    assert_eq!(state(), "removed");
}

#[test]
fn list_all_shows_other_repositories_cached_threads() {
    let sb = Sandbox::new();
    let a = sb.repo("a");
    let b = sb.repo("b");
    let t = task(&sb, &a, "from a");
    ok(sb.grove(&a).args(["rm", &t.id]));
    assert!(
        list_rows(&sb, &b)
            .iter()
            .all(|r| r["threadId"] != t.id.as_str())
    );
    let all = json(&ok(sb.grove(&b).args(["list", "--all", "--json"])));
    let row = all
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["threadId"] == t.id.as_str())
        .expect("listed with --all");
    assert_eq!(row["repoRoot"], a.display().to_string());
}

#[test]
fn rm_keeps_every_thread_that_lived_in_the_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "main task");
    let sub = new_thread(&sb, &t.wt, "a second conversation in the worktree");
    ok(sb
        .grove(&t.wt)
        .args(["append", &sub, "--role", "user", "--text", "keep me too"]));
    assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "");
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "live");
    let out = run(sb.grove(&repo).args(["rm", &t.id]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&sub));
    assert!(!t.wt.exists());
    assert_eq!(row_of(&sb, &repo, &sub)["status"], "removed");
    let shown = json(&ok(sb.grove(&repo).args(["show", &sub, "--json"])));
    assert_eq!(shown["messages"][0]["content"][0]["text"], "keep me too");
}

/// The dirtiness check behind `rm`, `gc` and `list` (`git status
/// --porcelain=v2` parsed): every kind of change counts, grove's own files
/// never do, and the user's config cannot hide untracked work.
#[test]
fn dirty_check_sees_every_kind_of_change_and_never_groves_own_files() {
    let sb = Sandbox::new();
    let main = sb.repo("app");
    let repo = task(&sb, &main, "checked").wt;
    let dirty =
        |what: &str| grove::worktree::is_dirty(&repo).unwrap_or_else(|e| panic!("{what}: {e}"));
    let clean = |what: &str| {
        assert!(!dirty(what), "{what}: clean");
    };
    clean("a fresh task");
    // grove's own files: its threads (a second one too), its private area.
    ok(sb.grove(&repo).args(["new", "--no-worktree", "second"]));
    clean("a second thread of grove's");
    std::fs::remove_file(repo.join(".agent/threads/.gitignore")).unwrap();
    clean("threads without their .gitignore");
    std::fs::create_dir_all(repo.join(".agent/.grove")).unwrap();
    std::fs::write(repo.join(".agent/.grove/state"), "x").unwrap();
    clean("grove's private area");
    // Something else in `.agent/` is work.
    std::fs::write(repo.join(".agent/notes.md"), "mine\n").unwrap();
    assert!(dirty("an untracked file beside the threads"));
    std::fs::remove_file(repo.join(".agent/notes.md")).unwrap();
    clean("the note gone");

    sb.git(&repo, &["config", "status.showUntrackedFiles", "no"]);
    let odd = "new\nfile with spaces";
    std::fs::write(repo.join(odd), "x").unwrap();
    assert!(dirty("an untracked file, hidden by the user's config"));
    std::fs::remove_file(repo.join(odd)).unwrap();
    std::fs::create_dir_all(repo.join("untracked/dir")).unwrap();
    std::fs::write(repo.join("untracked/dir/f"), "x").unwrap();
    assert!(dirty("an untracked directory"));
    std::fs::remove_dir_all(repo.join("untracked")).unwrap();
    clean("untracked directory gone");

    std::fs::write(repo.join("README.md"), "changed\n").unwrap();
    assert!(dirty("a modified file"));
    sb.git(&repo, &["add", "README.md"]);
    assert!(dirty("a staged file"));
    sb.git(&repo, &["commit", "-q", "-m", "c"]);
    clean("committed");
    sb.git(&repo, &["mv", "README.md", "READ ME.md"]);
    assert!(dirty("a staged rename"));
    sb.git(&repo, &["commit", "-q", "-m", "r"]);
    clean("rename committed");
    sb.git(&repo, &["rm", "-q", "READ ME.md"]);
    assert!(dirty("a staged deletion"));
}

/// Files left in the worktree's directory, trash included.
fn entries_beside(wt: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(wt.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// `rm --background` returns once the worktree is set aside and
/// unregistered; a grove process of its own deletes the files, and
/// nothing is left once it has.
#[test]
fn rm_in_the_background_sets_the_worktree_aside_and_deletes_it_after() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "big");
    for i in 0..300 {
        let dir = t.wt.join(format!("gen/d{}", i % 7));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}")), "x").unwrap();
    }
    sb.git(&t.wt, &["add", "gen"]);
    sb.git(&t.wt, &["commit", "-q", "-m", "generated"]);
    ok(sb
        .grove(&repo)
        .args(["rm", "--background", "--force", &t.id]));
    assert!(!t.wt.exists(), "the worktree is gone from its path at once");
    assert!(
        !sb.git(&repo, &["worktree", "list"]).contains(&t.id[..8]),
        "and unregistered"
    );
    let start = std::time::Instant::now();
    while !entries_beside(&t.wt).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the background delete never finished: {:?}",
            entries_beside(&t.wt)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!branches(&sb, &repo).contains(&t.branch));
    // Its journal went with it.
    let intents = sb.grove_home().join("intents");
    let left: Vec<_> = std::fs::read_dir(&intents)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A delete interrupted by a kill (its journal unlocked, its trash
/// directory half gone) is finished by the next grove command, whatever it is.
#[test]
fn the_next_grove_command_finishes_an_interrupted_delete() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let area = sb.dir("area");
    let trash = area.join(".grove-trash-0000");
    std::fs::create_dir_all(trash.join("a/b")).unwrap();
    std::fs::write(trash.join("a/b/file"), "x").unwrap();
    std::os::unix::fs::symlink("/", trash.join("a/root-link")).unwrap();
    let intents = sb.grove_home().join("intents");
    std::fs::create_dir_all(&intents).unwrap();
    let journal = intents.join("dead.jsonl");
    std::fs::write(
        &journal,
        format!(
            "{}\n",
            json!({"step": 1, "op": "trash", "dir": trash.display().to_string()})
        ),
    )
    .unwrap();
    ok(sb.grove(&repo).args(["list", "--json"]));
    assert!(!trash.exists(), "the trash directory is deleted");
    assert!(!journal.exists(), "and its journal");
    assert!(
        std::path::Path::new("/etc").exists(),
        "a link is never followed"
    );
    // A journal with other work in it is gc's, which reports it first.
    let other = intents.join("other.jsonl");
    let stage = area.join("staged");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(
        &other,
        format!(
            "{}\n",
            json!({"step": 1, "op": "stage", "dir": stage.display().to_string()})
        ),
    )
    .unwrap();
    ok(sb.grove(&repo).args(["list", "--json"]));
    assert!(stage.exists() && other.exists());
}

/// The background deleter refuses anything but a trash directory.
#[test]
fn the_background_deleter_deletes_only_trash_directories() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let keep = sb.dir("precious");
    std::fs::write(keep.join("file"), "x").unwrap();
    fails_with(
        sb.grove(&repo)
            .args(["__delete-trash", keep.to_str().unwrap()]),
        1,
    );
    assert!(keep.join("file").exists());
}

/// A cache refresh that finds nothing new (the thread directory touched,
/// nothing added) writes nothing: no fsync on the way of the next command.
#[test]
fn a_refresh_that_finds_nothing_new_leaves_the_cache_record_as_it_was() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "untouched");
    let record = sb.cache_entry(&t.id).join("cache.json");
    ok(sb.grove(&repo).args(["list", "--json"]));
    let before = std::fs::read(&record).unwrap();
    // The directory's time moves on; its files do not change.
    std::thread::sleep(std::time::Duration::from_millis(30));
    let scratch = t.wt.join(".agent/threads").join(&t.id).join("scratch");
    std::fs::write(&scratch, b"x").unwrap();
    std::fs::remove_file(&scratch).unwrap();
    ok(sb.grove(&repo).args(["list", "--json"]));
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&record).unwrap()),
        String::from_utf8_lossy(&before)
    );
}

/// `app` with the submodule `lib`, which has the submodule `inner`, both
/// initialised in the main checkout's tasks by grove (local paths as
/// submodule URLs need `protocol.file.allow` in the user's config).
fn app_with_nested_submodules(sb: &Sandbox) -> PathBuf {
    let config = sb.path().join("gitconfig");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[protocol \"file\"]\n\tallow = always\n");
    std::fs::write(&config, text).unwrap();
    let inner = sb.repo("inner");
    let lib = sb.repo("lib");
    sb.git(
        &lib,
        &["submodule", "add", "-q", inner.to_str().unwrap(), "inner"],
    );
    sb.git(&lib, &["commit", "-qm", "add inner"]);
    let app = sb.repo("app");
    sb.git(
        &app,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
    );
    sb.git(&app, &["commit", "-qm", "add lib"]);
    app
}

/// A change to `README.md` in `dir`, stashed.
fn stash_in(sb: &Sandbox, dir: &std::path::Path, text: &str) {
    std::fs::write(dir.join("README.md"), text).unwrap();
    sb.git(dir, &["stash", "push", "-q", "-m", text]);
}

/// `rm` refuses, naming each of `words`, and says how to override.
#[track_caller]
fn refused_naming(sb: &Sandbox, repo: &std::path::Path, t: &Task, words: &[&str]) {
    let err = fails_with(sb.grove(repo).args(["rm", &t.id]), 1);
    for w in words {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
    assert!(err.contains("--force"), "{err}");
    assert!(t.wt.is_dir(), "the worktree stays");
}

#[test]
fn a_stash_in_a_submodule_or_in_its_own_submodule_is_unsaved_work() {
    let sb = Sandbox::new();
    let repo = app_with_nested_submodules(&sb);
    let t = task(&sb, &repo, "stashes");
    assert!(t.wt.join("lib/inner/README.md").is_file(), "initialised");
    stash_in(&sb, &t.wt.join("lib"), "half-done idea");
    assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "", "clean");
    refused_naming(
        &sb,
        &repo,
        &t,
        &["submodule lib", "stash", "half-done idea"],
    );

    sb.git(&t.wt.join("lib"), &["stash", "drop", "-q"]);
    stash_in(&sb, &t.wt.join("lib/inner"), "deeper idea");
    refused_naming(
        &sb,
        &repo,
        &t,
        &["submodule lib/inner", "stash", "deeper idea"],
    );

    ok(sb.grove(&repo).args(["rm", &t.id, "--force"]));
    assert!(!t.wt.exists());
}

#[test]
fn submodule_commits_on_a_branch_not_checked_out_are_unsaved_work() {
    let sb = Sandbox::new();
    let repo = app_with_nested_submodules(&sb);
    let t = task(&sb, &repo, "side branch");
    let inner = t.wt.join("lib/inner");
    let recorded = sb.git(&inner, &["rev-parse", "HEAD"]);
    sb.git(&inner, &["checkout", "-q", "-b", "experiment"]);
    commit_in(&sb, &inner, "experiment.txt");
    // Back on the commit the superproject records: the worktree looks clean.
    sb.git(&inner, &["checkout", "-q", "--detach", &recorded]);
    assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "", "clean");
    refused_naming(
        &sb,
        &repo,
        &t,
        &["submodule lib/inner", "add experiment.txt"],
    );

    // Pushed to its remote, the commit is saved.
    sb.git(&inner, &["push", "-q", "origin", "experiment"]);
    ok(sb.grove(&repo).args(["rm", &t.id]));
}

#[test]
fn a_deinitialised_submodule_keeps_its_git_directory_and_what_is_unsaved_in_it() {
    let sb = Sandbox::new();
    let repo = app_with_nested_submodules(&sb);
    let t = task(&sb, &repo, "deinit");
    stash_in(&sb, &t.wt.join("lib"), "kept in the git dir");
    sb.git(&t.wt, &["submodule", "deinit", "-q", "--force", "lib"]);
    assert!(!t.wt.join("lib/README.md").exists(), "no checkout left");
    refused_naming(
        &sb,
        &repo,
        &t,
        &["submodule lib", "stash", "kept in the git dir"],
    );
}

#[test]
fn untracked_files_in_a_nested_submodule_are_named() {
    let sb = Sandbox::new();
    let repo = app_with_nested_submodules(&sb);
    let t = task(&sb, &repo, "untracked");
    std::fs::write(t.wt.join("lib/inner/notes.txt"), "n").unwrap();
    refused_naming(&sb, &repo, &t, &["submodule lib/inner", "notes.txt"]);
}

#[test]
fn commits_kept_only_by_the_worktrees_own_refs_are_unsaved_work() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "own refs");
    commit_in(&sb, &t.wt, "experiment.txt");
    // Kept by a per-worktree ref (it lives in the worktree's git directory),
    // then the branch goes back: nothing else has the commit.
    sb.git(&t.wt, &["update-ref", "refs/worktree/keep", "HEAD"]);
    sb.git(&t.wt, &["reset", "-q", "--hard", "HEAD~1"]);
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(
        err.contains("add experiment.txt") && err.contains("--force"),
        "{err}"
    );
    assert!(t.wt.is_dir());

    // The worktree's directory deleted behind grove's back: its git
    // directory, with the ref, is still there until it is removed.
    std::fs::remove_dir_all(&t.wt).unwrap();
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(err.contains("add experiment.txt"), "{err}");
    ok(sb.grove(&repo).args(["rm", &t.id, "--force"]));
}

#[test]
fn a_worktree_deleted_behind_groves_back_leaves_its_submodules_git_directories_checked() {
    let sb = Sandbox::new();
    let repo = app_with_nested_submodules(&sb);
    let t = task(&sb, &repo, "gone");
    stash_in(&sb, &t.wt.join("lib/inner"), "still in the git dir");
    std::fs::remove_dir_all(&t.wt).unwrap();
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "missing");
    // gc --missing would prune the worktree's git directory, and with it
    // the submodules' (their stash is still there).
    let out = json(&ok(sb.grove(&repo).args([
        "gc",
        "--missing",
        "--yes",
        "--json",
    ])));
    let skip = out["worktrees"][0]["skip"].as_str().unwrap_or_default();
    assert!(
        skip.contains("submodule lib/inner") && skip.contains("still in the git dir"),
        "{out}"
    );
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(err.contains("stash") && err.contains("--force"), "{err}");
    ok(sb.grove(&repo).args(["rm", &t.id, "--force"]));
}
