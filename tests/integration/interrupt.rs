//! Interrupted work: Ctrl-C while a hook runs, and grove killed at random
//! moments of its commands — after which `gc --yes` leaves nothing behind
//! and no message is lost.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::*;

/// Whether process `pid` is gone (or a zombie nobody reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_for(path: &Path, limit: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ctrl_c_during_a_hook_kills_its_process_group_and_records_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [
            {"command": "sleep 60 & echo $! > bg.pid; echo $$ > sh.pid; wait", "label": "npm ci"},
            {"command": "touch second"}
        ]}}),
    );
    let dir = sb.path().join("wt");
    let child = sb
        .grove(&repo)
        .args(["new", "t", "--trust", "--json", "--dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&dir.join("sh.pid"), Duration::from_secs(20));
    wait_for(&dir.join("bg.pid"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["hooks"][0]["status"], "interrupted", "{v}");
    assert_eq!(v["hooks"][1]["status"], "skipped", "{v}");
    assert!(!dir.join("second").exists());
    for f in ["sh.pid", "bg.pid"] {
        let pid: i32 = std::fs::read_to_string(dir.join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let start = Instant::now();
        while !gone(pid) {
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "{f} {pid} still runs"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let meta = read_json(&PathBuf::from(v["threadDir"].as_str().unwrap()).join("thread.json"));
    assert_eq!(
        meta["metadata"]["grove"]["hooks"][0]["status"],
        "interrupted"
    );
    let row = row_of(&sb, &repo, v["threadId"].as_str().unwrap());
    assert!(row["status"] == "live" || row["status"] == "dirty", "{row}");
}

/// A small deterministic generator: kills land at spread-out moments, the
/// same ones on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

fn grove_group(sb: &Sandbox, dir: &Path, args: &[String]) -> Child {
    let mut cmd = Command::new(GROVE);
    sb.env(&mut cmd);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own process group: the kill takes git children with it, as a CI
    // runner's timeout or a closed terminal does.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn().unwrap()
}

/// How long one uninterrupted run of `args` takes (milliseconds).
fn duration(sb: &Sandbox, dir: &Path, args: &[String]) -> u64 {
    let start = Instant::now();
    let _ = grove_group(sb, dir, args).wait();
    start.elapsed().as_millis() as u64
}

/// Runs `args(i)` `n` times, each killed (with its process group) after a
/// random delay within about one run's duration.
fn kill_runs(sb: &Sandbox, dir: &Path, n: usize, seed: u64, args: impl Fn(usize) -> Vec<String>) {
    let mut rng = Lcg(seed);
    let span = duration(sb, dir, &args(n)).max(20) + 10;
    for i in 0..n {
        let mut child = grove_group(sb, dir, &args(i));
        std::thread::sleep(Duration::from_millis(rng.below(span)));
        let _ = kill(Pid::from_raw(-(child.id() as i32)), Signal::SIGKILL);
        let _ = child.wait();
    }
}

/// Every path under `root` whose name says it is grove's unfinished work.
fn leftovers(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let in_private = dir.file_name().is_some_and(|n| n == ".grove");
            if name.starts_with(".grove-tmp-")
                || name.starts_with(".grove-trash-")
                || name.starts_with(".grove-new-")
                || (in_private && name != ".gitignore")
            {
                out.push(path.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) && name != ".git" {
                stack.push(path);
            }
        }
    }
    out
}

/// The state after `gc --yes`: nothing of grove's left half-made.
fn assert_clean(sb: &Sandbox, repo: &Path) {
    // A moment later, as a person would run it: gc leaves a git lock younger
    // than a second alone (its git may still be running).
    std::thread::sleep(Duration::from_millis(1100));
    let out = run(sb.grove(repo).args(["gc", "--yes", "--json"]));
    assert!(
        out.status.success(),
        "gc: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let rows = list_rows(sb, repo);
    let wts: Vec<String> = rows
        .iter()
        .filter(|r| r["status"] != "removed" && r["status"] != "local")
        .filter_map(|r| r["worktreePath"].as_str().map(str::to_string))
        .collect();
    for wt in worktree_paths(sb, repo).into_iter().skip(1) {
        let wt = wt.display().to_string();
        assert!(
            wts.contains(&wt),
            "worktree {wt} without a thread: {rows:?}"
        );
    }
    let recorded: Vec<&str> = rows
        .iter()
        .filter(|r| r["status"] != "removed")
        .filter_map(|r| r["branch"].as_str())
        .collect();
    for b in branches(sb, repo) {
        assert!(
            b == "main" || recorded.contains(&b.as_str()),
            "branch {b} without a task\nrows: {rows:#?}\ngc: {}\n{}\nworktrees: {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            worktree_paths(sb, repo),
        );
    }
    for root in [repo.to_path_buf(), sb.grove_home()] {
        let left = leftovers(&root);
        assert!(left.is_empty(), "left behind: {left:?}");
    }
    let again = json(&ok(sb.grove(repo).args(["gc", "--json"])));
    assert_eq!(again["leftovers"], serde_json::json!([]), "{again}");
    let intents = sb.grove_home().join("intents");
    let journals: Vec<_> = std::fs::read_dir(&intents)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(journals.is_empty(), "{journals:?}");
}

fn logs(sb: &Sandbox, repo: &Path) -> BTreeMap<String, Vec<u8>> {
    // `--all`: removed tasks' threads too, in the cache.
    json(&ok(sb.grove(repo).args(["list", "--json", "--all"])))
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let dir = PathBuf::from(r["threadDir"].as_str().unwrap());
            (
                r["threadId"].as_str().unwrap().to_string(),
                std::fs::read(dir.join("messages.jsonl")).unwrap_or_default(),
            )
        })
        .collect()
}

fn with_messages(sb: &Sandbox, repo: &Path, id: &str, n: usize) {
    let input: String = (0..n)
        .map(|i| {
            format!(
                "{{\"role\":\"agent\",\"content\":[{{\"type\":\"text\",\"text\":\"{i} {}\"}}]}}\n",
                "x".repeat(2000)
            )
        })
        .collect();
    append_stdin(sb, repo, id, &input);
}

/// A `git worktree add` killed half-way leaves an entry (locked while
/// "initializing", an empty `commondir`) that makes git fail every
/// worktree command. When one
/// appears while `new` makes its task (here: a failing `post-checkout`
/// hook makes it, as a dying git would), `new` cannot delete the branch it
/// made, and leaves its intent open for `gc` instead of a branch nothing
/// records.
#[test]
fn a_new_that_cannot_undo_its_branch_leaves_it_to_gc() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let half = repo.join(".git/worktrees/half");
    let hook = repo.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nmkdir -p '{h}'\necho initializing > '{h}/locked'\n\
             echo /nowhere/.git > '{h}/gitdir'\necho 'ref: refs/heads/gone' > '{h}/HEAD'\n\
             : > '{h}/commondir'\nexit 1\n",
            h = half.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    fails_with(sb.grove(&repo).args(["new", "blocked"]), 1);
    let made: Vec<String> = std::fs::read_dir(repo.join(".git/refs/heads/grove"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(made.len(), 1, "git made the branch: {made:?}");

    // The half-made entry goes (its own killed run's intent, or the user).
    std::fs::remove_dir_all(&half).unwrap();
    std::fs::remove_file(&hook).unwrap();
    let out = json(&ok(sb.grove(&repo).args(["gc", "--yes", "--json"])));
    let actions = out["leftovers"].to_string();
    assert!(actions.contains(&format!("grove/{}", made[0])), "{out}");
    assert_eq!(branches(&sb, &repo), ["main"]);
    assert_eq!(worktree_paths(&sb, &repo).len(), 1);
}

const KILLS: usize = 50;

#[test]
fn kills_during_new_and_fork_leave_nothing_gc_cannot_clean() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for i in 0..200 {
        std::fs::write(repo.join(format!("f{i}.txt")), "x".repeat(1000)).unwrap();
    }
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-qm", "files"]);
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "true"}]}}),
    );
    let parent = new_task(&sb, &repo, &["parent", "--trust"]);
    let pid = parent["threadId"].as_str().unwrap().to_string();
    with_messages(&sb, &repo, &pid, 40);
    let before = logs(&sb, &repo);

    kill_runs(&sb, &repo, KILLS, 7, |i| {
        vec![
            "new".into(),
            format!("job {i}"),
            "--trust".into(),
            "--prompt".into(),
            "go".into(),
        ]
    });
    kill_runs(&sb, &repo, KILLS, 11, |_| {
        vec!["fork".into(), pid.clone(), "--trust".into()]
    });
    assert_clean(&sb, &repo);
    let after = logs(&sb, &repo);
    assert_eq!(after[&pid], before[&pid], "the parent's log is untouched");
    for (id, log) in &after {
        let text = String::from_utf8_lossy(log);
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{id} has a torn log"
        );
    }
    // Every fork holds the parent's messages whole.
    for r in list_rows(&sb, &repo) {
        if r["originThreadID"] == pid.as_str() {
            assert_eq!(r["stats"]["messageCount"], 40, "{r}");
        }
    }
}

#[test]
fn kills_during_rm_and_delete_leave_nothing_gc_cannot_clean_and_lose_no_message() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let mut tasks = Vec::new();
    for i in 0..KILLS {
        let v = new_task(&sb, &repo, &[&format!("task {i}")]);
        let id = v["threadId"].as_str().unwrap().to_string();
        with_messages(&sb, &repo, &id, 3);
        tasks.push(id);
    }
    let locals: Vec<String> = (0..KILLS)
        .map(|i| {
            let id = new_thread(&sb, &repo, &format!("local {i}"));
            with_messages(&sb, &repo, &id, 3);
            id
        })
        .collect();
    let before = logs(&sb, &repo);

    let removing = tasks.clone();
    kill_runs(&sb, &repo, KILLS, 13, |i| {
        vec!["rm".into(), removing[i.min(KILLS - 1)].clone()]
    });
    // Every task's thread is still there, whole, in its worktree or the cache.
    let after = logs(&sb, &repo);
    for id in &tasks {
        assert_eq!(after.get(id), before.get(id), "{id}");
    }
    let deleting = locals.clone();
    kill_runs(&sb, &repo, KILLS, 17, |i| {
        vec![
            "delete".into(),
            deleting[i.min(KILLS - 1)].clone(),
            "--yes".into(),
        ]
    });
    assert_clean(&sb, &repo);
    let after = logs(&sb, &repo);
    for id in &tasks {
        assert_eq!(after.get(id), before.get(id), "{id}");
    }
    for id in &locals {
        if let Some(log) = after.get(id) {
            assert_eq!(
                Some(log),
                before.get(id),
                "{id}: deleted whole or kept whole"
            );
        }
    }
}

#[test]
fn kills_during_import_lose_no_message_and_leave_nothing_behind() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.dir("claude").join("session.jsonl");
    let mut text = String::new();
    let mut parent = serde_json::Value::Null;
    for i in 0..400 {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        let record = serde_json::json!({
            "type": if i % 2 == 0 { "user" } else { "assistant" },
            "uuid": uuid, "parentUuid": parent, "sessionId": "killed-session",
            "timestamp": format!("2025-06-01T10:{:02}:{:02}.000Z", i / 60, i % 60),
            "message": {"role": if i % 2 == 0 { "user" } else { "assistant" },
                        "content": [{"type": "text", "text": format!("{i} {}", "y".repeat(3000))}]}
        });
        text.push_str(&record.to_string());
        text.push('\n');
        parent = serde_json::json!(uuid);
    }
    std::fs::write(&src, text).unwrap();
    let arg = src.to_str().unwrap().to_string();
    kill_runs(&sb, &repo, KILLS, 19, |_| {
        vec!["import".into(), "claude".into(), arg.clone()]
    });
    ok(sb.grove(&repo).args(["import", "claude", &arg]));
    assert_clean(&sb, &repo);
    let dir = repo.join(".agent/threads/claude-killed-session");
    let ids: Vec<String> = message_lines(&dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), 400, "every record once");
    assert_eq!(unique.len(), 400);
}

/// A writer killed between its temp file and the rename leaves the temp in
/// whatever directory of the thread it was writing: `logs/`, `assets/`, a
/// side directory, in the worktree or in the cache's copy. gc finds them all.
#[test]
fn gc_removes_a_killed_writers_temp_files_in_every_directory_of_a_thread() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["temps"]);
    let id = task["threadId"].as_str().unwrap().to_string();
    let dir = PathBuf::from(task["threadDir"].as_str().unwrap());
    std::fs::create_dir_all(dir.join("logs/deep")).unwrap();
    std::fs::write(dir.join("logs/deep/hook.log"), "ran\n").unwrap();
    list_rows(&sb, &repo); // refreshes the cache, which links logs/ in
    let cache = sb.grove_home().join("cache");
    let entry = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path().join(&id))
        .find(|p| p.is_dir())
        .expect("a cache entry");
    assert!(entry.join("logs/deep/hook.log").is_file());
    std::fs::create_dir_all(sb.grove_home().join("integration")).unwrap();
    let planted = [
        // grove's own registries: ports.json, the integration verdicts.
        sb.grove_home().join(".grove-tmp-ports"),
        sb.grove_home().join("integration/.grove-tmp-verdicts"),
        dir.join("logs/.grove-tmp-link-a"),
        dir.join("logs/deep/.grove-tmp-link-b"),
        entry.join("logs/.grove-tmp-link-c"),
        entry.join("logs/deep/.grove-tmp-link-d"),
    ];
    for p in &planted {
        std::fs::write(p, "half").unwrap();
    }
    std::thread::sleep(Duration::from_millis(1100));
    let out = json(&ok(sb.grove(&repo).args(["gc", "--yes", "--json"])));
    for p in &planted {
        assert!(!p.exists(), "{} left behind: {out}", p.display());
    }
    assert!(dir.join("logs/deep/hook.log").is_file(), "real files stay");
    assert!(
        entry.join("logs/deep/hook.log").is_file(),
        "real files stay"
    );
}
