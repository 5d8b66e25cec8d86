//! Parallel use: a CI matrix starting tasks at once, agent hooks importing
//! the same session at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::support::*;

fn spawn(sb: &Sandbox, dir: &Path, args: &[&str]) -> Child {
    sb.grove(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn grove")
}

fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn sixteen_tasks_started_at_once_are_all_clean_and_live() {
    let sb = Sandbox::new();
    let repo = sb.repo("ci");
    // Hooks that write into info/exclude and the trust store at once.
    std::fs::write(repo.join(".env"), "X=1").unwrap();
    std::fs::write(repo.join(".gitignore"), ".env\n").unwrap();
    sb.git(&repo, &["add", ".gitignore"]);
    sb.git(&repo, &["commit", "-qm", "ignore .env"]);
    write_config(
        &repo,
        serde_json::json!({
            "specVersion": "1.1",
            "worktreeHooks": {
                "symlinks": [{"source": ".env", "target": "config/.env"}],
                "postSetupCommands": [{"command": "true"}]
            }
        }),
    );
    let children: Vec<Child> = (0..16)
        .map(|i| {
            spawn(
                &sb,
                &repo,
                &["new", &format!("job {i}"), "--trust", "--json"],
            )
        })
        .collect();
    let made: Vec<serde_json::Value> = children.into_iter().map(|c| json(&finish(c))).collect();
    let mut paths: Vec<PathBuf> = made
        .iter()
        .map(|v| PathBuf::from(v["worktreePath"].as_str().unwrap()))
        .collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 16);
    for v in &made {
        let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
        assert_eq!(
            sb.git(&wt, &["status", "--porcelain"]),
            "",
            "{} is clean",
            wt.display()
        );
        assert!(
            v["hooks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|h| h["status"] == "ok"),
            "{v}"
        );
    }
    let rows = list_rows(&sb, &repo);
    assert_eq!(rows.len(), 16);
    assert!(rows.iter().all(|r| r["status"] == "live"), "{rows:?}");
    for v in &made {
        ok(sb
            .grove(&repo)
            .args(["rm", v["threadId"].as_str().unwrap()]));
    }
}

/// A Claude Code session of `turns` user/assistant pairs, as JSON Lines.
fn session(turns: usize, cwd: &Path) -> String {
    let mut out = String::new();
    let mut parent = serde_json::Value::Null;
    for i in 0..turns {
        for (role, kind) in [("user", "user"), ("assistant", "assistant")] {
            let uuid = format!(
                "00000000-0000-4000-8000-{:012}",
                i * 2 + usize::from(kind == "assistant")
            );
            let content = if kind == "user" {
                serde_json::json!(format!("question {i}"))
            } else {
                serde_json::json!([{"type": "text", "text": format!("answer {i}")}])
            };
            let record = serde_json::json!({
                "type": kind, "uuid": uuid, "parentUuid": parent,
                "sessionId": "5e55105e-0000-4000-8000-000000000001",
                "timestamp": format!("2025-06-01T10:{:02}:{:02}.000Z", i / 60, i % 60),
                "cwd": cwd, "isSidechain": false,
                "message": {"role": role, "content": content}
            });
            out.push_str(&record.to_string());
            out.push('\n');
            parent = serde_json::json!(uuid);
        }
    }
    out
}

fn message_ids(thread_dir: &Path) -> Vec<String> {
    message_lines(thread_dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn concurrent_imports_of_one_session_write_every_message_once() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let src = sb.dir("claude").join("session.jsonl");
    std::fs::write(&src, session(5, &repo)).unwrap();
    let src_arg = src.to_str().unwrap();

    // First imports, all at once: one thread.
    let children: Vec<Child> = (0..8)
        .map(|_| spawn(&sb, &repo, &["import", "claude", src_arg]))
        .collect();
    for c in children {
        finish(c);
    }
    let threads: Vec<_> = std::fs::read_dir(repo.join(".agent/threads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(message_ids(&threads[0]).len(), 10);

    // The session grows; eight hooks re-import it at once.
    std::fs::write(&src, session(11, &repo)).unwrap();
    let children: Vec<Child> = (0..8)
        .map(|_| spawn(&sb, &repo, &["import", "claude", src_arg]))
        .collect();
    for c in children {
        finish(c);
    }
    let ids = message_ids(&threads[0]);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), 22, "every message id exactly once: {ids:?}");
    assert_eq!(unique.len(), 22);
    let meta = read_json(&threads[0].join("thread.json"));
    assert_eq!(meta["stats"]["messageCount"], 22);
}
