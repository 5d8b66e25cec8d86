//! Relationships between threads: mention, concurrent forks, cascade
//! delete, archive, the `--tree` view.

use std::path::{Path, PathBuf};

use crate::support::*;

fn meta_of(dir: &Path, id: &str) -> serde_json::Value {
    read_json(&dir.join(".agent/threads").join(id).join("thread.json"))
}

fn rels(dir: &Path, id: &str) -> Vec<serde_json::Value> {
    meta_of(dir, id)["relationships"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn say(sb: &Sandbox, dir: &Path, id: &str, text: &str) {
    ok(sb
        .grove(dir)
        .args(["append", id, "--role", "agent", "--text", text]));
}

#[test]
fn mention_links_both_threads_once() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let a = new_thread(&sb, &dir, "Writes the docs");
    let b = new_thread(&sb, &dir, "Designed the API");
    say(&sb, &dir, &a, "see the API thread");
    let out = json(&ok(sb.grove(&dir).args(["mention", &a, &b, "--json"])));
    assert_eq!(out["created"], true);
    let ra = rels(&dir, &a);
    let rb = rels(&dir, &b);
    assert_eq!(ra.len(), 1);
    assert_eq!(rb.len(), 1);
    assert_eq!(
        (
            ra[0]["threadID"].as_str(),
            ra[0]["type"].as_str(),
            ra[0]["role"].as_str()
        ),
        (Some(b.as_str()), Some("mention"), Some("child"))
    );
    assert_eq!(
        (
            rb[0]["threadID"].as_str(),
            rb[0]["type"].as_str(),
            rb[0]["role"].as_str()
        ),
        (Some(a.as_str()), Some("mention"), Some("parent"))
    );
    assert_eq!(ra[0]["messageIndex"], 0);
    // Versions moved on both threads.
    assert!(meta_of(&dir, &b)["v"].as_u64().unwrap() >= 1);

    // Again: nothing added.
    let again = json(&ok(sb.grove(&dir).args(["mention", &a, &b, "--json"])));
    assert_eq!(again["created"], false);
    assert_eq!(rels(&dir, &a).len(), 1);
    assert_eq!(rels(&dir, &b).len(), 1);

    let err = fails_with(sb.grove(&dir).args(["mention", &a, &a]), 1);
    assert!(err.contains("cannot mention itself"), "{err}");
}

#[test]
fn a_concurrent_change_to_the_parent_during_a_fork_is_detected() {
    use grove::fork::{ChildSpec, Derivation, prepare};
    use grove::store::Store;

    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent_id = new_thread(&sb, &dir, "Parent");
    say(&sb, &dir, &parent_id, "one");
    let store = Store::for_project(&dir);
    let parent = store.thread(&parent_id).unwrap();
    let spec = ChildSpec {
        derivation: Derivation::Fork { at: None },
        title: None,
    };
    let template = grove::threads::new_meta("", "test", Default::default());

    // The fork reads the parent at version v…
    let prepared = prepare(&parent, &store, template.clone(), &spec).unwrap();
    let child_id = prepared.child_id().to_string();
    // …someone appends in between…
    say(&sb, &dir, &parent_id, "two");
    let parent_before = std::fs::read(parent.meta_path()).unwrap();
    // …so the commit finds another version and writes nothing.
    let err = prepared.commit(&parent).unwrap_err();
    assert!(matches!(err, grove::Error::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("changed by someone else"), "{err}");
    assert_eq!(std::fs::read(parent.meta_path()).unwrap(), parent_before);
    assert!(!dir.join(".agent/threads").join(&child_id).exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.join(".agent/threads"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".grove-new-"))
        .collect();
    assert!(leftovers.is_empty(), "staging removed: {leftovers:?}");

    // Made again from the new state, it succeeds with both messages.
    let child = grove::fork::make_child(&parent, &store, template, &spec).unwrap();
    assert_eq!(child.meta().unwrap().stats.message_count, 2);
    assert_eq!(rels(&dir, &parent_id).len(), 1);
}

#[test]
fn concurrent_forks_and_appends_never_leave_a_one_sided_link() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let parent = new_thread(&sb, &dir, "Busy parent");
    say(&sb, &dir, &parent, "start");
    const FORKS: usize = 6;
    const APPENDS: usize = 20;
    let children: Vec<std::process::Child> = (0..FORKS)
        .map(|_| {
            sb.grove(&dir)
                .args(["fork", &parent, "--no-worktree", "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..APPENDS {
                say(&sb, &dir, &parent, &format!("a{i}"));
            }
        });
    });
    let mut forked = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        forked.push(
            json(&String::from_utf8(out.stdout).unwrap())["threadId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }

    // Every fork is on the parent, and the parent is on every fork.
    let parent_rels = rels(&dir, &parent);
    assert_eq!(parent_rels.len(), FORKS, "{parent_rels:#?}");
    for id in &forked {
        assert!(parent_rels.iter().any(|r| r["threadID"] == *id));
        let child_rels = rels(&dir, id);
        assert_eq!(child_rels.len(), 1);
        assert_eq!(child_rels[0]["threadID"], parent.as_str());
        // The fork point matches what was copied.
        let count = message_lines(&dir.join(".agent/threads").join(id)).len() as u64;
        assert_eq!(meta_of(&dir, id)["forkPointIndex"], count - 1);
    }
    // No append was lost either.
    let meta = meta_of(&dir, &parent);
    assert_eq!(meta["stats"]["messageCount"], 1 + APPENDS as u64);
    assert_eq!(meta["v"].as_u64().unwrap(), (1 + APPENDS + FORKS) as u64);
}

/// Sets `mainThreadID` of `sub` to `main` (as an importer of subagent threads would).
fn make_subagent(dir: &Path, sub: &str, main: &str) {
    let path = dir.join(".agent/threads").join(sub).join("thread.json");
    let mut meta = read_json(&path);
    meta["mainThreadID"] = serde_json::json!(main);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
}

#[test]
fn cascade_delete_removes_subagent_threads_and_dangling_links() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let main = new_thread(&sb, &dir, "Main");
    let sub1 = new_thread(&sb, &dir, "Subagent 1");
    let sub2 = new_thread(&sb, &dir, "Subagent 2");
    let other = new_thread(&sb, &dir, "Other");
    make_subagent(&dir, &sub1, &main);
    make_subagent(&dir, &sub2, &main);
    say(&sb, &dir, &main, "hello");
    let fork = json(&ok(sb.grove(&dir).args([
        "fork",
        &main,
        "--no-worktree",
        "--json",
    ])))["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    ok(sb.grove(&dir).args(["mention", &other, &sub1]));
    ok(sb.grove(&dir).args(["mention", &other, &main]));
    let before = snapshot(&dir);

    // Subagents exist: --cascade is required.
    let err = fails_with(sb.grove(&dir).args(["delete", &main, "--yes"]), 1);
    assert!(
        err.contains("2 subagent thread(s)") && err.contains("--cascade"),
        "{err}"
    );
    // No terminal and no --yes: refused.
    let err = fails_with(sb.grove(&dir).args(["delete", &main, "--cascade"]), 2);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(snapshot(&dir), before, "nothing touched");

    let out = json(&ok(sb.grove(&dir).args([
        "delete",
        &main,
        "--cascade",
        "--yes",
        "--json",
    ])));
    let mut deleted: Vec<&str> = out["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    deleted.sort();
    let mut expected = vec![main.as_str(), sub1.as_str(), sub2.as_str()];
    expected.sort();
    assert_eq!(deleted, expected);
    assert_eq!(out["linksRemoved"], 3, "{out}");
    for id in [&main, &sub1, &sub2] {
        assert!(!dir.join(".agent/threads").join(id).exists());
    }
    assert!(
        rels(&dir, &other).is_empty(),
        "links to deleted threads removed"
    );
    assert!(rels(&dir, &fork).is_empty());
    assert_eq!(
        meta_of(&dir, &fork)["originThreadID"],
        main.as_str(),
        "history of where the fork came from is kept"
    );
    let ids: Vec<String> = list_rows(&sb, &dir)
        .iter()
        .map(|r| r["threadId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&other) && ids.contains(&fork));
}

#[test]
fn delete_removes_a_worktree_only_under_rms_rules() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Doomed"]);
    let id = task["threadId"].as_str().unwrap();
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let branch = task["branch"].as_str().unwrap().to_string();
    std::fs::write(wt.join("work.txt"), "uncommitted\n").unwrap();

    let err = fails_with(sb.grove(&repo).args(["delete", id, "--yes"]), 1);
    assert!(
        err.contains("uncommitted changes") && err.contains("--force"),
        "{err}"
    );
    assert!(wt.join("work.txt").exists());
    assert!(
        wt.join(".agent/threads")
            .join(id)
            .join("thread.json")
            .exists()
    );

    let out = json(&ok(sb
        .grove(&repo)
        .args(["delete", id, "--yes", "--force", "--json"])));
    assert_eq!(out["worktrees"][0], wt.to_str().unwrap());
    assert!(!wt.exists());
    assert!(!branches(&sb, &repo).contains(&branch));
    assert!(
        list_rows(&sb, &repo).is_empty(),
        "not kept in the cache either"
    );
}

#[test]
fn archived_threads_are_hidden_until_asked_for() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let a = new_thread(&sb, &dir, "Keep");
    let b = new_thread(&sb, &dir, "Old");
    ok(sb.grove(&dir).args(["archive", &b]));
    assert_eq!(meta_of(&dir, &b)["archived"], true);
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        json(&ok(sb.grove(&dir).args(&all)))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["threadId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&[]), vec![a.clone()]);
    let mut with = ids(&["--archived"]);
    with.sort();
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    assert_eq!(with, expected);
    // Still reachable by id.
    ok(sb.grove(&dir).args(["show", &b]));
    ok(sb.grove(&dir).args(["unarchive", &b]));
    assert!(meta_of(&dir, &b).get("archived").is_none());
    assert_eq!(ids(&[]).len(), 2);
}

#[test]
fn tree_shows_forks_handoffs_and_mentions_and_dangling_links() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let root = new_thread(&sb, &dir, "Root");
    say(&sb, &dir, &root, "one");
    say(&sb, &dir, &root, "two");
    let fork_at = |id: &str, at: &str| -> String {
        json(&ok(sb.grove(&dir).args([
            "fork",
            id,
            "--at",
            at,
            "--no-worktree",
            "--json",
        ])))["threadId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let f1 = fork_at(&root, "0");
    let f2 = fork_at(&f1, "0");
    let h = json(&ok(sb.grove(&dir).args([
        "handoff",
        &root,
        "--summary",
        "sum",
        "--no-worktree",
        "--json",
    ])))["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let other = new_thread(&sb, &dir, "Elsewhere");
    ok(sb.grove(&dir).args(["mention", &f2, &other]));

    let graph = json(&ok(sb.grove(&dir).args(["show", &f2, "--tree", "--json"])));
    let mut edges: Vec<(String, String, String)> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap().to_string(),
                e["to"].as_str().unwrap().to_string(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    edges.sort();
    let mut expected = vec![
        (root.clone(), f1.clone(), "fork".to_string()),
        (f1.clone(), f2.clone(), "fork".to_string()),
        (root.clone(), h.clone(), "handoff".to_string()),
        (other.clone(), f2.clone(), "mention".to_string()),
    ];
    expected.sort();
    assert_eq!(edges, expected);
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 5);

    let text = ok(sb.grove(&dir).args(["show", &f2, "--tree"]));
    let short = |id: &str| id[..8].to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&short(&root)), "{text}");
    assert!(text.contains(&format!("fork@0 {}", short(&f1))), "{text}");
    assert!(text.contains(&format!("* {}", short(&f2))), "{text}");
    assert!(text.contains(&format!("handoff@1 {}", short(&h))), "{text}");
    assert!(
        text.contains(&format!("mentions {}", short(&other))),
        "{text}"
    );
    // f2 is indented under f1, which is under root.
    let depth = |id: &str| {
        let line = lines.iter().find(|l| l.contains(&short(id))).unwrap();
        line.find(&short(id)).unwrap()
    };
    assert!(
        depth(&root) < depth(&f1) && depth(&f1) < depth(&f2),
        "{text}"
    );

    // A related thread that no longer exists is shown as such, not an error.
    std::fs::remove_dir_all(dir.join(".agent/threads").join(&h)).unwrap();
    let text = ok(sb.grove(&dir).args(["list", "--tree"]));
    assert!(
        text.contains(&format!("{}  (deleted)", short(&h))),
        "{text}"
    );
    let shown = ok(sb.grove(&dir).args(["show", &root]));
    assert!(
        shown.contains("handed off to") && shown.contains("(deleted)"),
        "{shown}"
    );
    let graph = json(&ok(sb.grove(&dir).args(["list", "--tree", "--json"])));
    let node = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["threadId"] == h.as_str())
        .unwrap()
        .clone();
    assert_eq!(node["exists"], false);
}

#[test]
fn relationships_written_by_amp_with_millisecond_times_are_read() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let a = new_thread(&sb, &dir, "A");
    let path = dir.join(".agent/threads").join(&a).join("thread.json");
    let mut meta = read_json(&path);
    meta["relationships"] = serde_json::json!([{
        "threadID": "T-5928a90d-d53b-488f-a829-4e36442142ee",
        "type": "fork",
        "role": "parent",
        "messageIndex": 5,
        "createdAt": 1769212917000u64,
        "ampOnly": true
    }]);
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    say(&sb, &dir, &a, "touch");
    let after = read_json(&path);
    let r = &after["relationships"][0];
    assert_eq!(r["createdAt"], "2026-01-24T00:01:57.000Z");
    assert_eq!(
        r["ampOnly"], true,
        "unknown fields of a relationship survive"
    );
    let text = ok(sb.grove(&dir).args(["show", &a]));
    assert!(text.contains("forked to T-5928a9"), "{text}");
}
