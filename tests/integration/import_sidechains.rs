//! Claude Code 1.0 transcripts, whose subagents write their sidechains
//! inline (`isSidechain: true` records in the session file; the real
//! 1.0.98 and 1.0.108 sessions of fixtures/claude/project): imported or
//! captured a few records at a time, as a hook after every turn does, each
//! import reads only what is new, and the threads — the conversation and
//! each sidechain's — come out as one import of the whole file makes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// 438 records, five sidechains (405 records), three of them started by
/// three `Task` calls of one reply.
const FE: &str = "fe5e1c67-53e7-4862-81ae-d0e013e3270b";
/// 53 records, two sidechains.
const C5: &str = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";

fn fixture_lines(session: &str) -> Vec<String> {
    let path = fixtures()
        .join("claude/project")
        .join(format!("{session}.jsonl"));
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

/// `grove import claude FILE --json` (exit 4 accepted: what it names is
/// checked by the callers that care).
fn import(sb: &Sandbox, repo: &Path, file: &Path) -> Value {
    let out = run(sb
        .grove(repo)
        .args(["import", "claude", "--json"])
        .arg(file));
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

/// What a thread says of itself that an import decides (not when it ran).
fn said(meta: &Value) -> Value {
    serde_json::json!({
        "title": meta["title"],
        "createdAt": meta["createdAt"],
        "updatedAt": meta["updatedAt"],
        "stats": meta["stats"],
        "mainThreadID": meta["mainThreadID"],
        "relationships": meta["relationships"],
        "context": meta["context"],
        "waiting": meta["metadata"]["import"]["waiting"],
    })
}

/// Every thread of the `.agent/` in `dir`: what it says and its messages.
fn threads(dir: &Path) -> BTreeMap<String, (Value, Vec<Value>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join(".agent/threads")).unwrap() {
        let path = entry.unwrap().path();
        if !path.join("thread.json").is_file() {
            continue;
        }
        let meta = read_json(&path.join("thread.json"));
        let id = path.file_name().unwrap().to_string_lossy().into_owned();
        out.insert(id, (said(&meta), message_lines(&path)));
    }
    out
}

/// The same threads, message by message.
fn assert_same(
    got: &BTreeMap<String, (Value, Vec<Value>)>,
    want: &BTreeMap<String, (Value, Vec<Value>)>,
) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (id, (meta, messages)) in want {
        let (got_meta, got_messages) = &got[id];
        assert_eq!(got_messages.len(), messages.len(), "{id}");
        for (a, b) in got_messages.iter().zip(messages) {
            assert_eq!(a, b, "{id}");
        }
        assert_eq!(got_meta, meta, "{id}");
    }
}

/// The threads one import of `text` makes.
fn whole(name: &str, text: &str) -> BTreeMap<String, (Value, Vec<Value>)> {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.dir("src").join(name);
    std::fs::write(&file, text).unwrap();
    let out = import(&sb, &repo, &file);
    assert_eq!(out["sources"][0]["read"], "whole");
    threads(&repo)
}

/// Writes `lines` into `file` a few at a time (1, 2, 3 records, over
/// again), every third time first with the next record half written,
/// and calls `step` after each write.
fn grow(file: &Path, lines: &[String], mut step: impl FnMut(usize)) {
    let mut n = 0;
    let mut round = 0;
    while n < lines.len() {
        round += 1;
        if round % 3 == 0 {
            let mut torn = lines[..n].concat().into_bytes();
            torn.extend_from_slice(&lines[n].as_bytes()[..lines[n].len() / 2]);
            std::fs::write(file, torn).unwrap();
            step(n);
        }
        n = (n + 1 + round % 3).min(lines.len());
        std::fs::write(file, lines[..n].concat()).unwrap();
        step(n);
    }
}

/// Imports `lines` growing, then checks the threads against one import of
/// the whole: every import after the first read only the tail.
fn imported_growing_equals_whole(session: &str, lines: &[String]) {
    let name = format!("{session}.jsonl");
    let want = whole(&name, &lines.concat());
    assert!(
        want.keys().filter(|id| id.contains("-side-")).count() >= 2,
        "{:?}",
        want.keys()
    );
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.dir("src").join(&name);
    let mut reads = Vec::new();
    grow(&file, lines, |n| {
        let out = import(&sb, &repo, &file);
        reads.push((n, out["sources"][0].clone()));
    });
    for (n, source) in &reads[1..] {
        assert!(
            source["read"] == "tail" || source["read"] == "unchanged",
            "after {n} records: {source}"
        );
        assert!(source["restarted"].is_null(), "after {n} records: {source}");
    }
    assert_same(&threads(&repo), &want);
}

#[test]
fn claude_1_0_sidechains_inline_import_a_tail_at_a_time_into_the_threads_of_a_whole_import() {
    imported_growing_equals_whole(FE, &fixture_lines(FE));
    imported_growing_equals_whole(C5, &fixture_lines(C5));
}

/// The session of [`FE`] as Claude Code writes it when its three subagents
/// run at once: their records interleaved, one of each in turn.
fn parallel_subagents() -> Vec<String> {
    let lines = fixture_lines(FE);
    // Lines 16-36, 38-123 and 125-222 (1-based) are the three sidechains
    // the reply of lines 13-15 started; 37, 124 and 223 their results.
    let (a, b, c) = (&lines[15..36], &lines[37..123], &lines[124..222]);
    let mut out: Vec<String> = lines[..15].to_vec();
    for i in 0..c.len().max(b.len()) {
        for side in [a, b, c] {
            if let Some(l) = side.get(i) {
                out.push(l.clone());
            }
        }
    }
    out.extend([lines[36].clone(), lines[123].clone()]);
    out.extend(lines[222..].iter().cloned());
    assert_eq!(out.len(), lines.len());
    out
}

#[test]
fn claude_1_0_subagents_running_at_once_import_a_tail_at_a_time_into_the_threads_of_a_whole_import()
{
    imported_growing_equals_whole(FE, &parallel_subagents());
}

#[test]
fn a_sidechain_tail_that_cannot_go_on_is_read_whole_and_nothing_is_doubled() {
    let lines = fixture_lines(FE);
    let name = format!("{FE}.jsonl");
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let file = sb.dir("src").join(&name);
    std::fs::write(&file, lines[..100].concat()).unwrap();
    import(&sb, &repo, &file);
    // A sidechain record whose parent is in no record read.
    let mut orphan: Value = serde_json::from_str(&lines[99]).unwrap();
    orphan["uuid"] = "0f0f0f0f-0000-4000-8000-000000000001".into();
    orphan["parentUuid"] = "0f0f0f0f-0000-4000-8000-00000000dead".into();
    let grown = lines[..100].concat() + &format!("{orphan}\n");
    std::fs::write(&file, &grown).unwrap();
    let out = import(&sb, &repo, &file);
    assert_eq!(out["sources"][0]["read"], "whole", "{out}");
    assert!(
        out["sources"][0]["restarted"]
            .as_str()
            .is_some_and(|why| why.contains("line 101")),
        "{out}"
    );
    assert_same(&threads(&repo), &whole(&name, &grown));
    // Rewritten: one byte changed early on, then grown on.
    let rewritten = grown.replacen("orchestrator", "Orchestrator", 1) + &lines[100..140].concat();
    std::fs::write(&file, &rewritten).unwrap();
    let out = import(&sb, &repo, &file);
    assert_eq!(out["sources"][0]["read"], "whole", "{out}");
    // Messages are never rewritten: the first prompt stays as it was.
    let want = whole(&name, &(grown + &lines[100..140].concat()));
    assert_same(&threads(&repo), &want);
    // Truncated: read whole, nothing lost or doubled.
    std::fs::write(&file, lines[..60].concat()).unwrap();
    let out = import(&sb, &repo, &file);
    assert_eq!(out["sources"][0]["read"], "whole", "{out}");
    assert_same(&threads(&repo), &want);
}

/// Runs the `SessionEnd` hook of `session` (no follow-up starts after it)
/// for the task `id` in `wt`.
fn capture(sb: &Sandbox, wt: &Path, id: &str, session: &str, transcript: &Path) {
    let input = serde_json::json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": wt,
        "hook_event_name": "SessionEnd",
    });
    let out = run_with_stdin(
        sb.grove(wt).args(["capture", "claude", "--thread", id]),
        input.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
}

/// A task whose transcript is captured: the sandbox, the worktree, the
/// thread and the transcript's path.
fn task(session: &str) -> (Sandbox, PathBuf, String, PathBuf) {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Task", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap().to_string();
    let transcript = sb.dir("claude-projects").join(format!("{session}.jsonl"));
    (sb, wt, id, transcript)
}

/// The threads of a task's worktree; of the task's own, what the capture
/// decides (not its id, title, times or worktree, which are the task's).
fn captured(wt: &Path, id: &str) -> BTreeMap<String, (Value, Vec<Value>)> {
    let mut all = threads(wt);
    let (mut meta, messages) = all.remove(id).unwrap();
    for key in ["title", "createdAt", "updatedAt", "context"] {
        meta[key] = Value::Null;
    }
    // Each task has an id of its own; its subagents name it.
    all.insert("the task".into(), (meta, messages));
    for (meta, _) in all.values_mut() {
        if meta["mainThreadID"] == id {
            meta["mainThreadID"] = "the task".into();
        }
    }
    all
}

#[test]
fn claude_1_0_sidechains_inline_captured_turn_by_turn_make_the_threads_of_one_capture() {
    for (session, lines) in [(C5, fixture_lines(C5)), (FE, parallel_subagents())] {
        let (sb, wt, id, transcript) = task(session);
        std::fs::write(&transcript, lines.concat()).unwrap();
        capture(&sb, &wt, &id, session, &transcript);
        let want = captured(&wt, &id);
        assert!(
            want.keys().any(|k| k.contains("-side-")),
            "{:?}",
            want.keys()
        );

        let (sb, wt, id, transcript) = task(session);
        grow(&transcript, &lines, |_| {
            capture(&sb, &wt, &id, session, &transcript)
        });
        assert_same(&captured(&wt, &id), &want);
    }
}
