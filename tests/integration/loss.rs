//! Nothing lost: the log only grows (cache included), every thread of a
//! worktree is protected, commits only a worktree holds block its removal,
//! and commands reach the live thread wherever they run.

use std::path::{Path, PathBuf};

use crate::support::*;

struct Task {
    id: String,
    wt: PathBuf,
    branch: String,
    dir: PathBuf,
}

fn task(sb: &Sandbox, repo: &Path, title: &str) -> Task {
    let v = new_task(sb, repo, &[title]);
    Task {
        id: v["threadId"].as_str().unwrap().to_string(),
        wt: PathBuf::from(v["worktreePath"].as_str().unwrap()),
        branch: v["branch"].as_str().unwrap().to_string(),
        dir: PathBuf::from(v["threadDir"].as_str().unwrap()),
    }
}

fn append_n(sb: &Sandbox, dir: &Path, id: &str, n: usize) {
    let input: String = (0..n)
        .map(|i| {
            format!("{{\"role\":\"agent\",\"content\":[{{\"type\":\"text\",\"text\":\"message {i}\"}}]}}\n")
        })
        .collect();
    append_stdin(sb, dir, id, &input);
}

fn cache_dir(sb: &Sandbox, id: &str) -> PathBuf {
    let root = sb.grove_home().join("cache");
    for repo in std::fs::read_dir(&root).unwrap() {
        let dir = repo.unwrap().path().join(id);
        if dir.is_dir() {
            return dir;
        }
    }
    panic!("{id} is not cached under {}", root.display());
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_deleted_log_is_refused_kept_in_the_cache_and_restored_by_repair() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "twenty messages");
    append_n(&sb, &repo, &t.id, 20);
    let log = t.dir.join("messages.jsonl");
    let cached_log = cache_dir(&sb, &t.id).join("messages.jsonl");
    assert_eq!(lines(&cached_log), 20);

    std::fs::remove_file(&log).unwrap();
    let err = fails_with(
        sb.grove(&repo)
            .args(["append", &t.id, "--role", "user", "--text", "one more"]),
        1,
    );
    assert!(
        err.contains("missing")
            && err.contains("grove repair")
            && err.contains(&*cached_log.parent().unwrap().to_string_lossy()),
        "names the cache copy and `grove repair`: {err}"
    );
    assert!(!log.exists(), "no new log was started");
    list_rows(&sb, &repo);
    assert_eq!(
        lines(&cached_log),
        20,
        "the cache still holds every message"
    );

    let out = json(&ok(sb.grove(&repo).args(["repair", &t.id, "--json"])));
    assert_eq!(out["restored"]["from"], cached_log.display().to_string());
    assert_eq!(lines(&log), 20);
    ok(sb
        .grove(&repo)
        .args(["append", &t.id, "--role", "user", "--text", "one more"]));
    let shown = json(&ok(sb.grove(&repo).args(["show", &t.id, "--json"])));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 21);
    list_rows(&sb, &repo);
    assert_eq!(lines(&cached_log), 21, "the cache follows the log again");
}

#[test]
fn a_shortened_log_is_refused_and_never_replaces_the_cached_copy() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "shortened");
    append_n(&sb, &repo, &t.id, 10);
    let log = t.dir.join("messages.jsonl");
    let cached_log = cache_dir(&sb, &t.id).join("messages.jsonl");
    let full = std::fs::read(&log).unwrap();
    // Another program rewrites the log with its first half (a new file).
    let half: Vec<u8> = full
        .split_inclusive(|&b| b == b'\n')
        .take(5)
        .flatten()
        .copied()
        .collect();
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, &half).unwrap();

    let err = fails_with(
        sb.grove(&repo)
            .args(["append", &t.id, "--role", "user", "--text", "x"]),
        1,
    );
    assert!(
        err.contains("bytes") && err.contains("grove repair"),
        "{err}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), half, "nothing was written");
    let out = run(sb.grove(&repo).args(["list", "--json"]));
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&cached_log).unwrap(),
        full,
        "the cache kept its copy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ok(sb.grove(&repo).args(["repair", &t.id]));
    assert_eq!(std::fs::read(&log).unwrap(), full, "restored byte for byte");
}

#[test]
fn every_thread_of_a_worktree_is_cached_and_kept_out_of_git_status() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "the task");
    // A fork made in the worktree without a worktree of its own.
    let fork = json(&ok(sb.grove(&t.wt).args([
        "fork",
        &t.id,
        "--no-worktree",
        "--json",
    ])));
    let fork_id = fork["threadId"].as_str().unwrap().to_string();
    // A thread another tool wrote there.
    let other_id = "other-tool-thread";
    let other = t.wt.join(".agent/threads").join(other_id);
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("thread.json"),
        serde_json::to_vec_pretty(&serde_json::json!({
            "specVersion": "1.1", "threadId": other_id, "title": "written by another tool",
            "createdAt": "2025-01-01T00:00:00.000Z", "updatedAt": "2025-01-01T00:00:00.000Z",
            "agent": {"id": "x", "name": "X"}, "context": {"workingDir": t.wt},
            "stats": {"messageCount": 1, "userMessageCount": 1, "agentMessageCount": 0, "toolCallCount": 0}
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        other.join("messages.jsonl"),
        "{\"id\":\"m1\",\"role\":\"user\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}\n",
    )
    .unwrap();
    // Side files: a torn tail set aside, a hook log.
    std::fs::write(t.dir.join("messages.jsonl.torn-abc"), "{\"partial").unwrap();
    std::fs::create_dir_all(t.dir.join("logs")).unwrap();
    std::fs::write(t.dir.join("logs/post-setup-1.log"), "npm output").unwrap();

    assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "");
    assert_eq!(row_of(&sb, &repo, &t.id)["status"], "live");
    for id in [&fork_id, &other_id.to_string()] {
        assert!(
            cache_dir(&sb, id).join("messages.jsonl").is_file(),
            "{id} cached"
        );
    }
    let cached = cache_dir(&sb, &t.id);
    assert!(cached.join("messages.jsonl.torn-abc").is_file());
    assert!(cached.join("logs/post-setup-1.log").is_file());

    let err = fails_with(sb.grove(&repo).args(["rm", &t.id, "--purge"]), 1);
    assert!(
        err.contains(&fork_id) && err.contains(other_id) && err.contains("--force"),
        "names every thread it would drop: {err}"
    );
    assert!(t.wt.is_dir());
    ok(sb.grove(&repo).args(["rm", &t.id]));
    assert!(!t.wt.exists());
    let shown = json(&ok(sb.grove(&repo).args(["show", other_id, "--json"])));
    assert_eq!(shown["messages"][0]["content"][0]["text"], "hi");
    assert_eq!(row_of(&sb, &repo, &fork_id)["status"], "removed");
}

#[test]
fn delete_names_the_other_threads_its_worktree_holds() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "the task");
    let other = new_thread(&sb, &t.wt, "second conversation");
    let err = fails_with(sb.grove(&repo).args(["delete", &t.id, "--yes"]), 1);
    assert!(err.contains(&other) && err.contains("--force"), "{err}");
    assert!(t.dir.is_dir() && t.wt.is_dir(), "nothing deleted");
    let out = json(&ok(sb
        .grove(&repo)
        .args(["delete", &t.id, "--yes", "--force", "--json"])));
    let deleted: Vec<&str> = out["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(deleted.contains(&t.id.as_str()) && deleted.contains(&other.as_str()));
}

#[test]
fn a_commit_on_a_detached_head_blocks_rm_and_gc() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "detached");
    sb.git(&t.wt, &["checkout", "-q", "--detach"]);
    std::fs::write(t.wt.join("work.txt"), "only here").unwrap();
    sb.git(&t.wt, &["add", "work.txt"]);
    sb.git(&t.wt, &["commit", "-qm", "work on a detached head"]);
    sb.git(&t.wt, &["checkout", "-q", "--detach", "HEAD"]);

    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(
        err.contains("detached HEAD") && err.contains("work on a detached head"),
        "{err}"
    );
    // gc picks it (its branch has nothing unmerged) but will not remove it.
    let plan = json(&ok(sb.grove(&repo).args([
        "gc",
        "--older-than",
        "0s",
        "--yes",
        "--json",
    ])));
    let row = &plan["worktrees"][0];
    assert!(
        row["skip"].as_str().unwrap_or("").contains("detached HEAD"),
        "{plan}"
    );
    assert!(t.wt.is_dir());
    ok(sb.grove(&repo).args(["rm", &t.id, "--force"]));
    assert!(!t.wt.exists());
}

#[test]
fn a_branch_switched_to_in_the_worktree_is_checked_and_never_deleted() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    sb.git(&repo, &["branch", "feature"]);
    let t = task(&sb, &repo, "switching");
    sb.git(&t.wt, &["switch", "-q", "-c", "spike"]);
    std::fs::write(t.wt.join("spike.txt"), "x").unwrap();
    sb.git(&t.wt, &["add", "spike.txt"]);
    sb.git(&t.wt, &["commit", "-qm", "spike commit"]);
    let err = fails_with(sb.grove(&repo).args(["rm", &t.id]), 1);
    assert!(
        err.contains("spike") && err.contains("spike commit"),
        "{err}"
    );

    // Switched to a branch that existed before grove: rm deletes grove's
    // own branch (by its recorded name), never the one checked out now.
    sb.git(&t.wt, &["switch", "-q", "feature"]);
    let out = json(&ok(sb
        .grove(&repo)
        .args(["rm", &t.id, "--force", "--json"])));
    assert_eq!(out["branch"], t.branch.as_str());
    let all = branches(&sb, &repo);
    assert!(all.contains(&"feature".to_string()), "{all:?}");
    assert!(all.contains(&"spike".to_string()), "{all:?}");
    assert!(!all.contains(&t.branch), "grove's branch goes: {all:?}");
}

#[test]
fn a_branch_that_existed_before_grove_survives_even_force() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    sb.git(&repo, &["branch", "mine"]);
    let v = new_task(&sb, &repo, &["on my branch", "--branch", "mine"]);
    let id = v["threadId"].as_str().unwrap();
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    std::fs::write(wt.join("a.txt"), "a").unwrap();
    sb.git(&wt, &["add", "a.txt"]);
    sb.git(&wt, &["commit", "-qm", "a"]);
    ok(sb.grove(&repo).args(["rm", id, "--force"]));
    assert!(branches(&sb, &repo).contains(&"mine".to_string()));
}

/// Runs `grove` in `dir` with every argument, expecting success.
fn grove_ok(sb: &Sandbox, dir: &Path, args: &[&str]) -> String {
    ok(sb.grove(dir).args(args))
}

#[test]
fn commands_reach_the_worktree_thread_from_anywhere() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let elsewhere = sb.repo("unrelated");
    let outside = sb.dir("plain");
    let t = task(&sb, &repo, "live task");
    for (n, dir) in [&repo, &elsewhere, &outside].into_iter().enumerate() {
        grove_ok(
            &sb,
            dir,
            &[
                "append",
                &t.id,
                "--role",
                "user",
                "--text",
                &format!("from {n}"),
            ],
        );
        let out = grove_ok(
            &sb,
            dir,
            &[
                "checkpoint",
                &t.id,
                "--summary",
                &format!("summary {n}"),
                "--json",
            ],
        );
        assert!(
            json(&out)["git"].is_object(),
            "git state refreshed from {}",
            dir.display()
        );
        assert_eq!(
            read_json(&t.dir.join("thread.json"))["conversationSummary"],
            format!("summary {n}"),
            "the worktree's thread.json holds the summary"
        );
        let shown = json(&grove_ok(&sb, dir, &["show", &t.id, "--json"]));
        assert_eq!(shown["messages"].as_array().unwrap().len(), n + 1);
        let path = json(&grove_ok(&sb, dir, &["path", &t.id, "--json"]));
        assert_eq!(path["worktreePath"], t.wt.display().to_string());
        assert_eq!(path["status"], "live");
    }
    assert_eq!(lines(&t.dir.join("messages.jsonl")), 3);

    std::fs::write(t.wt.join("dirty.txt"), "unsaved").unwrap();
    for dir in [&elsewhere, &outside] {
        let err = fails_with(sb.grove(dir).args(["rm", &t.id]), 1);
        assert!(
            err.contains("uncommitted") && err.contains("dirty.txt"),
            "{err}"
        );
    }
    assert!(t.wt.join("dirty.txt").is_file());
}

#[test]
fn after_git_clean_the_thread_is_restored_and_rm_works() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "cleaned");
    append_n(&sb, &repo, &t.id, 3);
    sb.git(&t.wt, &["clean", "-fdxq"]);
    assert!(!t.dir.exists());
    let row = row_of(&sb, &repo, &t.id);
    assert_eq!(row["status"], "live", "{row}");
    assert_eq!(row["worktreePath"], t.wt.display().to_string());
    assert_eq!(
        lines(&t.dir.join("messages.jsonl")),
        3,
        "restored from the cache"
    );
    assert_eq!(sb.git(&t.wt, &["status", "--porcelain"]), "");
    ok(sb.grove(&repo).args(["rm", &t.id]));
    assert!(!t.wt.exists());
    let shown = json(&ok(sb.grove(&repo).args(["show", &t.id, "--json"])));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 3);
}

/// Issue 25: a change of a task's thread.json reaches the cache's copy by
/// itself — here an agent's state, which the capture hook records and
/// nothing else saves to the cache — so a worktree deleted behind grove's
/// back right after loses nothing of it.
#[test]
fn the_cache_copy_follows_every_change_of_thread_json() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let t = task(&sb, &repo, "followed");
    let cached = sb.cache_entry(&t.id).join("thread.json");
    assert!(read_json(&cached)["metadata"]["capture"]["state"].is_null());
    give_agent_state(&sb, &t.wt, &t.id);
    let copy = read_json(&cached);
    assert_eq!(
        copy["metadata"]["capture"]["state"]["state"], "working",
        "{copy}"
    );
    // Archiving, which used to refresh the copy itself, still reaches it.
    ok(sb.grove(&repo).args(["archive", &t.id]));
    assert_eq!(read_json(&cached)["archived"], true);
}
