//! `grove blame` and `grove why` (issue 28, items 2–4): each line of a file
//! followed to the thread, message and tool call that wrote it — exactly
//! from turn snapshots, through a person's edits between turns, a commit
//! made outside any task and a rebase of the task's branch; by inference
//! for a thread without snapshots; and refused for files outside the
//! repository or behind a link.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

const SESSION: &str = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";

/// Runs the stub Claude Code in `wt`, one turn per prompt.
fn turns(sb: &Sandbox, wt: &Path, resume: bool, prompts: &[String]) {
    claude_turns(sb, wt, SESSION, resume, prompts);
}

/// A prompt whose turn makes these Write/Edit calls.
fn tools(calls: Value) -> String {
    format!("tools: {calls}")
}

/// A tool call of the thread: its message's index, its id, tool and input.
#[derive(Debug, Clone)]
struct Call(usize, String, String, String);

/// Each line of a file, with the call that wrote it (`None`: a person).
type Expected<'a> = [(&'a str, Option<&'a Call>)];

/// Each tool call of the thread.
fn calls(wt: &Path, id: &str) -> Vec<Call> {
    message_lines(&wt.join(".agent/threads").join(id))
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("completesMessage").is_none())
        .flat_map(|(i, m)| {
            m["toolCalls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |c| {
                    Call(
                        i,
                        c["toolCallId"].as_str().unwrap().to_string(),
                        c["name"].as_str().unwrap().to_string(),
                        c["input"].as_str().unwrap_or("").to_string(),
                    )
                })
        })
        .collect()
}

/// `grove blame FILE --json`'s lines, in `dir`.
fn blame(sb: &Sandbox, dir: &Path, file: &str) -> Vec<Value> {
    let out = json(&ok(sb.grove(dir).args(["blame", file, "--json"])));
    out["lines"].as_array().unwrap().clone()
}

const CALC: &str = "def add(a, b):\n    return a + b\n";
const SUB: &str = "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const MUL: &str = "    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
const BASE: &str = "b1\nb2\nb3\nb4\nb5\nb6\nb7\nb8\n";

/// A task whose agent worked over three captured turns, with a person's
/// edit between the first two, a commit made on main outside any task,
/// the task's branch rebased onto it, and the person's edit after the last
/// turn: (sandbox, repository, worktree, thread id, branch).
fn worked_task() -> (Sandbox, PathBuf, PathBuf, String, String) {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    std::fs::write(repo.join("base.txt"), BASE).unwrap();
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-q", "-m", "base"]);
    let task = new_task(&sb, &repo, &["Calc", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let id = task["threadId"].as_str().unwrap().to_string();
    let branch = task["branch"].as_str().unwrap().to_string();
    ok(sb.grove(&wt).args(["capture", "install", &id]));

    // Turn 1: a new file, and an edit of a committed one.
    turns(
        &sb,
        &wt,
        false,
        &[tools(json!([
            ["Write", {"file_path": "calc.py", "content": CALC}],
            ["Edit", {"file_path": "base.txt", "old_string": "b2\n", "new_string": "b2\nagent in base\n"}]
        ]))],
    );
    // The person, between turns.
    let mut calc = std::fs::read_to_string(wt.join("calc.py")).unwrap();
    calc.push_str("# person between turns\n");
    std::fs::write(wt.join("calc.py"), calc).unwrap();
    // Turn 2: the agent goes on; the person commits.
    turns(
        &sb,
        &wt,
        true,
        &[tools(json!([
            ["Edit", {"file_path": "calc.py", "old_string": "    return a + b\n", "new_string": SUB}]
        ]))],
    );
    sb.git(&wt, &["add", "calc.py", "base.txt"]);
    sb.git(&wt, &["commit", "-q", "-m", "calc"]);
    // Outside any task: a commit on main, which the task's branch is
    // rebased onto.
    let mut base = BASE.to_string();
    base.push_str("outside in base\n");
    std::fs::write(repo.join("base.txt"), base).unwrap();
    sb.git(&repo, &["commit", "-q", "-am", "outside"]);
    sb.git(&wt, &["rebase", "-q", "main"]);
    // Turn 3, left uncommitted; then the person again.
    turns(
        &sb,
        &wt,
        true,
        &[tools(json!([
            ["Edit", {"file_path": "calc.py", "old_string": "    return a - b\n", "new_string": MUL}]
        ]))],
    );
    let mut calc = std::fs::read_to_string(wt.join("calc.py")).unwrap();
    calc.push_str("# person after the last turn\n");
    std::fs::write(wt.join("calc.py"), calc).unwrap();
    (sb, repo, wt, id, branch)
}

#[test]
fn blame_gives_each_agent_line_its_tool_call_exactly_and_no_person_line_to_an_agent() {
    let (sb, repo, wt, id, branch) = worked_task();
    let calls = calls(&wt, &id);
    let call = |name: &str, holding: &str| {
        calls
            .iter()
            .find(|Call(_, _, n, input)| n == name && input.contains(holding))
            .unwrap_or_else(|| panic!("no {name} call with {holding:?}: {calls:#?}"))
            .clone()
    };
    let write = call("Write", "def add");
    let base_edit = call("Edit", "agent in base");
    let sub_edit = call("Edit", "def sub");
    let mul_edit = call("Edit", "def mul");
    // Each line of the files now, with the call that wrote it (None: a
    // person's).
    let expected_calc: Vec<(&str, Option<&Call>)> = vec![
        ("def add(a, b):", Some(&write)),
        ("    return a + b", Some(&write)),
        ("", Some(&sub_edit)),
        ("", Some(&sub_edit)),
        ("def sub(a, b):", Some(&sub_edit)),
        ("    return a - b", Some(&sub_edit)),
        ("", Some(&mul_edit)),
        ("", Some(&mul_edit)),
        ("def mul(a, b):", Some(&mul_edit)),
        ("    return a * b", Some(&mul_edit)),
        ("# person between turns", None),
        ("# person after the last turn", None),
    ];
    let mut expected_base: Vec<(&str, Option<&Call>)> = vec![
        ("b1", None),
        ("b2", None),
        ("agent in base", Some(&base_edit)),
    ];
    for b in ["b3", "b4", "b5", "b6", "b7", "b8", "outside in base"] {
        expected_base.push((b, None));
    }

    let check = |dir: &Path, file: &str, expected: &Expected| {
        let lines = blame(&sb, dir, file);
        let contents: Vec<&str> = lines
            .iter()
            .map(|l| l["content"].as_str().unwrap())
            .collect();
        let wanted: Vec<&str> = expected.iter().map(|(c, _)| *c).collect();
        assert_eq!(contents, wanted, "{file} in {}", dir.display());
        for (line, (content, by)) in lines.iter().zip(expected) {
            match by {
                Some(Call(index, call_id, tool, _)) => {
                    assert_eq!(line["author"], "agent", "{content:?}: {line:#}");
                    assert_eq!(line["basis"], "exact", "{line:#}");
                    assert_eq!(line["reason"], "toolCall", "{line:#}");
                    assert_eq!(line["threadId"], id.as_str(), "{line:#}");
                    assert_eq!(line["branch"], branch.as_str(), "{line:#}");
                    assert_eq!(
                        line["toolCallId"],
                        call_id.as_str(),
                        "{content:?}: {line:#}"
                    );
                    assert_eq!(line["tool"], tool.as_str(), "{line:#}");
                    assert_eq!(line["messageIndex"], *index, "{line:#}");
                    assert!(line["messageId"].is_string(), "{line:#}");
                }
                None => {
                    assert_eq!(line["author"], "person", "{content:?}: {line:#}");
                    assert!(line["toolCallId"].is_null(), "{line:#}");
                }
            }
        }
        lines
    };
    // In the task's worktree: committed lines (rebased: new commits, same
    // content) and uncommitted ones alike.
    let calc = check(&wt, "calc.py", &expected_calc);
    assert!(calc[0]["commit"].is_string(), "{:#}", calc[0]);
    assert!(calc[8]["commit"].is_null(), "{:#}", calc[8]);
    assert_eq!(calc[10]["reason"], "betweenTurns", "{:#}", calc[10]);
    assert_eq!(calc[10]["basis"], "exact");
    assert_eq!(calc[11]["reason"], "afterSnapshots", "{:#}", calc[11]);
    let base = check(&wt, "base.txt", &expected_base);
    assert_eq!(base[0]["reason"], "beforeThread", "{:#}", base[0]);
    let outside = sb.git(&repo, &["rev-parse", "main"]);
    assert_eq!(base[9]["commit"], outside.as_str());
    assert_eq!(base[9]["reason"], "betweenTurns", "{:#}", base[9]);

    // From the main checkout, once the task's commits landed there: the
    // committed lines only (the last turn's and the person's after it are
    // not), the same answers.
    sb.git(&repo, &["merge", "-q", "--ff-only", &branch]);
    let main_calc = blame(&sb, &repo, "calc.py");
    let want: Vec<&str> = vec![
        "def add(a, b):",
        "    return a + b",
        "",
        "",
        "def sub(a, b):",
        "    return a - b",
        "# person between turns",
    ];
    let got: Vec<&str> = main_calc
        .iter()
        .map(|l| l["content"].as_str().unwrap())
        .collect();
    assert_eq!(got, want);
    for l in &main_calc {
        let person = l["content"] == "# person between turns";
        assert_eq!(
            l["author"],
            if person { "person" } else { "agent" },
            "{l:#}"
        );
        if !person {
            assert_eq!(l["basis"], "exact");
            let expected = if l["content"] == "def add(a, b):" || l["content"] == "    return a + b"
            {
                &write
            } else {
                &sub_edit
            };
            assert_eq!(l["toolCallId"], expected.1.as_str(), "{l:#}");
        }
    }

    // The human output: one row per line, like git blame's.
    let text = ok(sb.grove(&wt).args(["blame", "calc.py", "-L", "11,12"]));
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows[0].contains("person") && rows[0].ends_with("11) # person between turns"),
        "{text}"
    );
    let one = json(&ok(sb
        .grove(&wt)
        .args(["blame", "calc.py", "-L", "9", "--json"])));
    assert_eq!(one["lines"].as_array().unwrap().len(), 1);
    assert_eq!(one["lines"][0]["toolCallId"], mul_edit.1.as_str());
}

#[test]
fn why_shows_the_prompt_the_agent_s_words_and_the_tool_call_behind_a_line() {
    let (sb, _repo, wt, id, branch) = worked_task();
    let why = json(&ok(sb.grove(&wt).args(["why", "calc.py:5", "--json"])));
    assert_eq!(why["line"]["content"], "def sub(a, b):", "{why:#}");
    assert_eq!(why["line"]["author"], "agent");
    assert_eq!(why["task"]["threadId"], id.as_str());
    assert_eq!(why["task"]["branch"], branch.as_str());
    let prompt = why["prompt"]["text"].as_str().unwrap();
    assert!(
        prompt.starts_with("tools: ") && prompt.contains("def sub"),
        "{why:#}"
    );
    assert_eq!(why["toolCall"]["name"], "Edit");
    assert_eq!(why["toolCall"]["toolCallId"], why["line"]["toolCallId"]);
    assert!(
        why["toolCall"]["input"]
            .as_str()
            .unwrap()
            .contains("def sub"),
        "{why:#}"
    );
    let said: Vec<&str> = why["agent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(said.iter().any(|t| t.starts_with("Now Edit")), "{said:?}");

    // A person's line: no conversation behind it.
    let person = json(&ok(sb.grove(&wt).args(["why", "calc.py:11", "--json"])));
    assert_eq!(person["line"]["author"], "person");
    assert!(person["toolCall"].is_null() && person["prompt"].is_null());

    let text = ok(sb.grove(&wt).args(["why", "calc.py:5"]));
    assert!(text.contains("tool call Edit"), "{text}");
    assert!(text.contains("def sub"), "{text}");
}

#[test]
fn a_thread_without_snapshots_answers_inferred_never_exact() {
    let sb = Sandbox::new();
    sb.install_stubs();
    let repo = sb.repo("app");
    // The agent ran without grove: its transcript is all there is.
    let session = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a";
    let mut cmd = sb.agent("claude", &repo);
    cmd.args(["--session-id", session]).arg(tools(json!([
        ["Write", {"file_path": "calc.py", "content": CALC}],
        ["Edit", {"file_path": "calc.py", "old_string": "    return a + b\n", "new_string": SUB}]
    ])));
    assert!(run(&mut cmd).status.success());
    let mut calc = std::fs::read_to_string(repo.join("calc.py")).unwrap();
    calc.push_str("# a person's line\n");
    std::fs::write(repo.join("calc.py"), calc).unwrap();
    sb.git(&repo, &["add", "calc.py"]);
    sb.git(&repo, &["commit", "-q", "-m", "calc"]);
    let projects = sb.path().join("claude/projects");
    let dir = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let transcript = dir.join(format!("{session}.jsonl"));
    ok(sb
        .grove(&repo)
        .args(["import", "claude", transcript.to_str().unwrap()]));

    let lines = blame(&sb, &repo, "calc.py");
    let mut agent = 0;
    for l in &lines {
        assert_ne!(l["basis"], "exact", "{l:#}");
        if l["content"] == "# a person's line" {
            assert_eq!(l["author"], "person", "{l:#}");
        } else {
            assert_eq!(l["author"], "agent", "{l:#}");
            assert_eq!(l["reason"], "toolInput", "{l:#}");
            assert_eq!(l["threadId"], format!("claude-{session}"), "{l:#}");
            agent += 1;
        }
    }
    assert_eq!(agent, 6, "{lines:#?}");
    let sub = lines
        .iter()
        .find(|l| l["content"] == "def sub(a, b):")
        .unwrap();
    assert_eq!(sub["tool"], "Edit", "{sub:#}");
    let add = lines
        .iter()
        .find(|l| l["content"] == "def add(a, b):")
        .unwrap();
    assert_eq!(add["tool"], "Write", "{add:#}");
}

#[test]
fn files_outside_the_repository_or_behind_a_link_and_lines_it_lacks_are_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    std::fs::write(sb.path().join("secret.txt"), "s\n").unwrap();
    let refused = |args: &[&str], code: i32, says: &str| {
        let err = fails_with(sb.grove(&repo).args(args), code);
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(&["blame", "../secret.txt"], 1, "outside the repository");
    let outside = sb.path().join("secret.txt");
    refused(
        &["blame", outside.to_str().unwrap()],
        1,
        "outside the repository",
    );
    refused(&["why", "../secret.txt:1"], 1, "outside the repository");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, repo.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(sb.path(), repo.join("up")).unwrap();
        refused(&["blame", "link.txt"], 1, "symbolic link");
        refused(&["blame", "up/secret.txt"], 1, "symbolic link");
        refused(&["why", "up/secret.txt:1"], 1, "symbolic link");
    }
    refused(
        &["blame", "README.md", "-L", "1,5"],
        1,
        "README.md has 1 line",
    );
    refused(&["why", "README.md:2"], 1, "README.md has 1 line");
    refused(&["blame", "README.md", "-L", "x"], 2, "START,END");
    refused(&["why", "README.md"], 2, "FILE:LINE");
    refused(&["blame", "missing.txt"], 1, "not a file of the repository");
}

#[test]
fn a_task_squashed_into_main_and_removed_still_answers_exactly_from_its_snapshots() {
    let (sb, repo, wt, id, branch) = worked_task();
    let calls = calls(&wt, &id);
    // Squashed: main holds the task's lines under a commit its branch never
    // had, and the branch and worktree are gone.
    ok(sb.grove(&repo).args(["merge", &id, "--commit", "--json"]));
    assert!(!wt.exists());
    assert!(!branches(&sb, &repo).contains(&branch));
    let lines = blame(&sb, &repo, "calc.py");
    assert_eq!(lines.len(), 12, "{lines:#?}");
    for l in &lines {
        let person = l["content"].as_str().unwrap().starts_with("# person");
        assert_eq!(
            l["author"],
            if person { "person" } else { "agent" },
            "{l:#}"
        );
        if !person {
            assert_eq!(l["basis"], "exact", "{l:#}");
            assert_eq!(l["threadId"], id.as_str(), "{l:#}");
            assert!(
                calls.iter().any(|c| l["toolCallId"] == c.1.as_str()),
                "{l:#}"
            );
        }
    }
}
