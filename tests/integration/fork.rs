//! `grove fork`, `grove handoff`, `grove new --carry`: copied conversations,
//! carried changes, both sides of the relationship.

use std::path::{Path, PathBuf};

use crate::support::*;

/// A `--no-worktree` thread in `dir` with `n` agent messages (one carrying a
/// field grove does not know); returns its id.
fn thread_with_messages(sb: &Sandbox, dir: &Path, title: &str, n: usize) -> String {
    let id = new_thread(sb, dir, title);
    let lines: String = (0..n)
        .map(|i| {
            format!(
                "{{\"id\":\"m{i}\",\"role\":\"agent\",\"timestamp\":\"2025-03-01T10:00:0{}.000Z\",\"content\":[{{\"type\":\"text\",\"text\":\"message {i}\"}}],\"vendorField\":{{\"k\":{i}}}}}\n",
                i % 10
            )
        })
        .collect();
    append_stdin(sb, dir, &id, &lines);
    id
}

fn thread_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join(".agent/threads").join(id)
}

fn fork_json(sb: &Sandbox, dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["fork"];
    all.extend_from_slice(args);
    all.push("--json");
    json(&ok(sb.grove(dir).args(&all)))
}

#[test]
fn fork_at_n_copies_exactly_n_plus_one_messages_and_leaves_the_parent_unchanged() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent = thread_with_messages(&sb, &dir, "Try caching", 6);
    let parent_log = std::fs::read(thread_dir(&dir, &parent).join("messages.jsonl")).unwrap();

    let fork = fork_json(&sb, &dir, &[&parent, "--at", "3", "--no-worktree"]);
    assert_eq!(fork["messageCount"], 4);
    assert_eq!(fork["forkPointIndex"], 3);
    let child = fork["threadId"].as_str().unwrap();
    let child_dir = thread_dir(&dir, child);

    // The child holds exactly the first 4 lines, byte for byte (unknown fields too).
    let child_log = std::fs::read(child_dir.join("messages.jsonl")).unwrap();
    let first_four: Vec<u8> = parent_log
        .split_inclusive(|&b| b == b'\n')
        .take(4)
        .flatten()
        .copied()
        .collect();
    assert_eq!(child_log, first_four);
    assert_eq!(message_lines(&child_dir)[3]["vendorField"]["k"], 3);
    // The parent's log is untouched.
    assert_eq!(
        std::fs::read(thread_dir(&dir, &parent).join("messages.jsonl")).unwrap(),
        parent_log
    );

    // Stats are exact, and both sides of the relationship exist.
    let child_meta = read_json(&child_dir.join("thread.json"));
    assert_eq!(child_meta["stats"]["messageCount"], 4);
    assert_eq!(child_meta["stats"]["agentMessageCount"], 4);
    assert_eq!(child_meta["originThreadID"], parent.as_str());
    assert_eq!(child_meta["forkPointIndex"], 3);
    assert_eq!(child_meta["updatedAt"], "2025-03-01T10:00:03.000Z");
    let rel = &child_meta["relationships"][0];
    assert_eq!(
        (
            &rel["threadID"],
            &rel["type"],
            &rel["role"],
            &rel["messageIndex"]
        ),
        (
            &serde_json::json!(parent),
            &serde_json::json!("fork"),
            &serde_json::json!("child"),
            &serde_json::json!(3)
        )
    );
    let parent_meta = read_json(&thread_dir(&dir, &parent).join("thread.json"));
    let rels = parent_meta["relationships"].as_array().unwrap();
    assert_eq!(rels.len(), 1);
    assert_eq!(rels[0]["threadID"], child);
    assert_eq!(rels[0]["role"], "parent");
    assert_eq!(rels[0]["type"], "fork");
    assert_eq!(rels[0]["messageIndex"], 3);
    assert_eq!(
        parent_meta["stats"]["messageCount"], 6,
        "parent stats unchanged"
    );
}

#[test]
fn fork_without_at_copies_the_whole_log() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent = thread_with_messages(&sb, &dir, "All of it", 5);
    let fork = fork_json(&sb, &dir, &[&parent, "--no-worktree"]);
    assert_eq!(fork["messageCount"], 5);
    assert_eq!(fork["forkPointIndex"], 4);
    let child = fork["threadId"].as_str().unwrap();
    assert_eq!(
        std::fs::read(thread_dir(&dir, child).join("messages.jsonl")).unwrap(),
        std::fs::read(thread_dir(&dir, &parent).join("messages.jsonl")).unwrap()
    );
    // The copy is a valid, appendable thread.
    ok(sb
        .grove(&dir)
        .args(["append", child, "--role", "user", "--text", "go on"]));
    assert_eq!(message_lines(&thread_dir(&dir, child)).len(), 6);
    assert_eq!(message_lines(&thread_dir(&dir, &parent)).len(), 5);
}

#[test]
fn fork_titles_count_up_as_seed_001_says() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let a = thread_with_messages(&sb, &dir, "A", 1);
    let f1 = fork_json(&sb, &dir, &[&a, "--no-worktree"]);
    assert_eq!(f1["title"], "Forked: A");
    let f2 = fork_json(
        &sb,
        &dir,
        &[f1["threadId"].as_str().unwrap(), "--no-worktree"],
    );
    assert_eq!(f2["title"], "Forked(2): A");
    let f3 = fork_json(
        &sb,
        &dir,
        &[f2["threadId"].as_str().unwrap(), "--no-worktree"],
    );
    assert_eq!(f3["title"], "Forked(3): A");
    let named = fork_json(&sb, &dir, &[&a, "--no-worktree", "--title", "Plan B"]);
    assert_eq!(named["title"], "Plan B");
}

#[test]
fn fork_past_the_end_is_refused_and_creates_nothing() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent = thread_with_messages(&sb, &dir, "Short", 2);
    let before = snapshot(&dir.join(".agent"));
    let err = fails_with(
        sb.grove(&dir)
            .args(["fork", &parent, "--at", "2", "--no-worktree"]),
        1,
    );
    assert!(err.contains("--at 2 is past the end"), "{err}");
    assert!(err.contains("0 to 1"), "{err}");
    assert_eq!(snapshot(&dir.join(".agent")), before, "nothing written");
}

/// Makes every kind of uncommitted change in `wt`.
fn make_changes(sb: &Sandbox, wt: &Path) {
    std::fs::write(wt.join(".gitignore"), "*.log\n").unwrap();
    sb.git(wt, &["add", ".gitignore"]);
    sb.git(wt, &["commit", "-q", "-m", "ignore logs"]);
    std::fs::write(wt.join("README.md"), "# test\nchanged, not staged\n").unwrap();
    std::fs::write(wt.join("staged.txt"), "staged new file\n").unwrap();
    sb.git(wt, &["add", "staged.txt"]);
    std::fs::write(wt.join("both.txt"), "v1\n").unwrap();
    sb.git(wt, &["add", "both.txt"]);
    std::fs::write(wt.join("both.txt"), "v1\nv2 unstaged\n").unwrap();
    std::fs::create_dir_all(wt.join("src/deep")).unwrap();
    std::fs::write(wt.join("src/deep/untracked.rs"), "fn main() {}\n").unwrap();
    std::fs::write(wt.join("debug.log"), "ignored\n").unwrap();
    std::fs::write(wt.join("bin.dat"), [0u8, 159, 146, 150, 255]).unwrap();
    sb.git(wt, &["add", "bin.dat"]);
}

/// Everything `git` says about a worktree's state.
fn git_state(sb: &Sandbox, wt: &Path) -> (String, String, String) {
    (
        sb.git(wt, &["status", "--porcelain=v1", "--untracked-files=all"]),
        sb.git(wt, &["diff", "--binary"]),
        sb.git(wt, &["diff", "--cached", "--binary"]),
    )
}

fn index_file(sb: &Sandbox, wt: &Path) -> PathBuf {
    PathBuf::from(sb.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    ))
}

/// The worktree's files outside `.agent/` and `.git`.
fn work_files(wt: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(wt)
        .into_iter()
        .filter(|(p, _)| {
            let rel = p.strip_prefix(wt).unwrap();
            !rel.starts_with(".agent") && !rel.starts_with(".git")
        })
        .map(|(p, b)| (p.strip_prefix(wt).unwrap().to_path_buf(), b))
        .collect()
}

#[test]
fn fork_of_a_worktree_thread_carries_its_changes_and_leaves_it_untouched() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Parent task", "--prompt", "do it"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let parent = task["threadId"].as_str().unwrap();
    make_changes(&sb, &wt);
    let state_before = git_state(&sb, &wt);
    let index_before = std::fs::read(index_file(&sb, &wt)).unwrap();
    let files_before = work_files(&wt);

    let fork = fork_json(&sb, &wt, &[parent]);
    let fork_wt = PathBuf::from(fork["worktreePath"].as_str().unwrap());
    assert_ne!(fork_wt, wt);
    assert_eq!(fork["carried"]["staged"], 3, "{fork}");
    assert_eq!(fork["carried"]["unstaged"], 2, "{fork}");
    assert_eq!(fork["carried"]["untracked"], 1, "{fork}");

    // The parent worktree: same status, same index bytes, same files.
    assert_eq!(std::fs::read(index_file(&sb, &wt)).unwrap(), index_before);
    assert_eq!(git_state(&sb, &wt), state_before);
    assert_eq!(work_files(&wt), files_before);

    // The fork: same staged/unstaged split, same files, the ignored file left behind.
    assert_eq!(git_state(&sb, &fork_wt), state_before);
    let mut expected: Vec<_> = files_before
        .iter()
        .filter(|(p, _)| p != Path::new("debug.log"))
        .cloned()
        .collect();
    expected.sort();
    assert_eq!(work_files(&fork_wt), expected);
    assert_eq!(
        sb.git(&fork_wt, &["rev-parse", "HEAD"]),
        sb.git(&wt, &["rev-parse", "HEAD"]),
        "the fork's branch starts at the parent worktree's HEAD"
    );
    assert_ne!(
        sb.git(&fork_wt, &["branch", "--show-current"]),
        sb.git(&wt, &["branch", "--show-current"])
    );
    // The conversation came along, and both threads list as dirty tasks.
    let child = fork["threadId"].as_str().unwrap();
    let child_dir = fork_wt.join(".agent/threads").join(child);
    assert_eq!(message_lines(&child_dir)[0]["content"][0]["text"], "do it");
    assert_eq!(row_of(&sb, &repo, child)["status"], "dirty");
    let parent_meta = read_json(&wt.join(".agent/threads").join(parent).join("thread.json"));
    assert_eq!(parent_meta["relationships"][0]["threadID"], child);
}

#[test]
fn new_carry_starts_a_task_with_the_current_worktrees_changes() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    make_changes(&sb, &repo);
    let state_before = git_state(&sb, &repo);
    let files_before = work_files(&repo);
    let task = new_task(&sb, &repo, &["Continue elsewhere", "--carry"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    assert_eq!(git_state(&sb, &repo), state_before, "source untouched");
    assert_eq!(work_files(&repo), files_before);
    assert_eq!(git_state(&sb, &wt), state_before);
    assert_eq!(
        std::fs::read_to_string(wt.join("src/deep/untracked.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert!(!wt.join("debug.log").exists(), "ignored files stay behind");
}

#[test]
fn new_carry_with_nothing_to_carry_is_a_plain_new() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Clean", "--carry"]);
    assert_eq!(
        task["carried"],
        serde_json::json!({"staged":0,"unstaged":0,"untracked":0})
    );
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");
}

#[test]
fn a_conflicted_worktree_is_not_carried_and_nothing_is_created() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    sb.git(&repo, &["checkout", "-q", "-b", "other"]);
    std::fs::write(repo.join("README.md"), "other\n").unwrap();
    sb.git(&repo, &["commit", "-q", "-am", "other"]);
    sb.git(&repo, &["checkout", "-q", "main"]);
    std::fs::write(repo.join("README.md"), "main\n").unwrap();
    sb.git(&repo, &["commit", "-q", "-am", "main"]);
    let mut merge = std::process::Command::new("git");
    sb.env(&mut merge);
    let _ = merge.args(["merge", "other"]).current_dir(&repo).output();
    let before = (worktree_paths(&sb, &repo), branches(&sb, &repo));
    let err = fails_with(sb.grove(&repo).args(["new", "X", "--carry"]), 1);
    assert!(
        err.contains("merge conflicts") && err.contains("README.md"),
        "{err}"
    );
    assert_eq!((worktree_paths(&sb, &repo), branches(&sb, &repo)), before);
}

#[test]
fn handoff_starts_from_the_summary_in_a_worktree_at_the_parents_head() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Big refactor", "--prompt", "refactor"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let parent = task["threadId"].as_str().unwrap();
    std::fs::write(wt.join("done.txt"), "step 1\n").unwrap();
    sb.git(&wt, &["add", "done.txt"]);
    sb.git(&wt, &["commit", "-q", "-m", "step 1"]);
    std::fs::write(wt.join("scratch.txt"), "not carried\n").unwrap();
    ok(sb
        .grove(&wt)
        .args(["append", parent, "--role", "agent", "--text", "did step 1"]));

    let summary = "Step 1 is committed. Next: step 2, see done.txt.";
    let out = json(&ok(sb.grove(&repo).args([
        "handoff",
        parent,
        "--summary",
        summary,
        "--json",
    ])));
    assert_eq!(out["title"], "Handoff: Big refactor");
    let child = out["threadId"].as_str().unwrap();
    let child_wt = PathBuf::from(out["worktreePath"].as_str().unwrap());
    assert_eq!(
        sb.git(&child_wt, &["rev-parse", "HEAD"]),
        sb.git(&wt, &["rev-parse", "HEAD"])
    );
    assert!(child_wt.join("done.txt").exists());
    assert!(
        !child_wt.join("scratch.txt").exists(),
        "no carry by default"
    );
    let child_dir = child_wt.join(".agent/threads").join(child);
    let messages = message_lines(&child_dir);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[0]["content"][0]["text"], summary);
    let child_meta = read_json(&child_dir.join("thread.json"));
    assert_eq!(child_meta["stats"]["messageCount"], 1);
    let c = &child_meta["relationships"][0];
    assert_eq!(
        (c["type"].as_str(), c["role"].as_str()),
        (Some("handoff"), Some("child"))
    );
    assert_eq!(c["comment"], summary);
    assert_eq!(c["threadID"], parent);
    let parent_meta = read_json(&wt.join(".agent/threads").join(parent).join("thread.json"));
    let p = &parent_meta["relationships"][0];
    assert_eq!(
        (p["type"].as_str(), p["role"].as_str()),
        (Some("handoff"), Some("parent"))
    );
    assert_eq!(p["threadID"], child);
    assert_eq!(p["comment"], summary);
    assert_eq!(p["messageIndex"], 1, "made at the parent's last message");
}

#[test]
fn fork_of_a_removed_thread_has_no_worktree_and_says_so() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Gone", "--prompt", "hi"]);
    let parent = task["threadId"].as_str().unwrap();
    ok(sb.grove(&repo).args(["rm", parent]));
    let out = run(sb.grove(&repo).args(["fork", parent, "--json"]));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no worktree (removed)"), "{stderr}");
    let fork = json(&String::from_utf8(out.stdout).unwrap());
    assert!(fork["worktreePath"].is_null());
    assert_eq!(fork["messageCount"], 1);
    // The cached parent records the fork too.
    let parent_row = row_of(&sb, &repo, parent);
    assert_eq!(parent_row["status"], "removed");
    assert_eq!(parent_row["relationships"][0]["threadID"], fork["threadId"]);
}

#[test]
fn a_fork_shares_the_parents_assets() {
    use base64::Engine;
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent = new_thread(&sb, &dir, "Screenshots");
    let b64 = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake image bytes");
    append_stdin(
        &sb,
        &dir,
        &parent,
        &format!(
            r#"{{"role":"user","content":[{{"type":"image","mimeType":"image/png","data":"{b64}"}}]}}"#
        ),
    );
    let fork = fork_json(&sb, &dir, &[&parent, "--no-worktree"]);
    let child_dir = thread_dir(&dir, fork["threadId"].as_str().unwrap());
    let asset_ref = message_lines(&child_dir)[0]["content"][0]["assetRef"]
        .as_str()
        .unwrap()
        .to_string();
    let in_child = child_dir.join("assets").join(&asset_ref);
    let in_parent = thread_dir(&dir, &parent).join("assets").join(&asset_ref);
    assert_eq!(
        std::fs::read(&in_child).unwrap(),
        std::fs::read(&in_parent).unwrap()
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            std::fs::metadata(&in_child).unwrap().ino(),
            std::fs::metadata(&in_parent).unwrap().ino(),
            "shared by a hard link, not copied"
        );
    }
}

#[test]
fn a_forked_worktree_gets_the_hooks_but_not_the_initial_prompt_again() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    std::fs::write(repo.join(".env.local"), "SECRET=1\n").unwrap();
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {
            "symlinks": [{"source": ".env.local"}],
            "initialPrompt": "Read CONTRIBUTING first."
        }}),
    );
    let task = new_task(&sb, &repo, &["Hooked", "--prompt", "fix it"]);
    let parent = task["threadId"].as_str().unwrap();
    let fork = fork_json(&sb, &repo, &[parent]);
    let wt = PathBuf::from(fork["worktreePath"].as_str().unwrap());
    assert!(
        std::fs::symlink_metadata(wt.join(".env.local"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let hooks = fork["hooks"].as_array().unwrap();
    let prompt = hooks.iter().find(|h| h["kind"] == "initialPrompt").unwrap();
    assert_eq!(prompt["status"], "skipped", "{prompt}");
    let child_dir = wt
        .join(".agent/threads")
        .join(fork["threadId"].as_str().unwrap());
    let texts: Vec<String> = message_lines(&child_dir)
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        texts,
        ["Read CONTRIBUTING first.", "fix it"],
        "copied once, not re-sent"
    );
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "",
        "hook files excluded"
    );
}
