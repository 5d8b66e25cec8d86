//! `grove list`: the table people read (a header, the current task marked,
//! rows that fit any width) and the JSON rows scripts read (checked against
//! the published schema).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// A repository with every kind of row that widens the table: a task whose
/// agent has a state, an imported session with its subagents, and a fork of
/// that session. Returns the repository and the task.
fn mixed_rows(sb: &Sandbox) -> (PathBuf, Value) {
    let repo = sb.repo("app");
    let task = new_task(sb, &repo, &["Fix the login bug", "--agent", "claude-code"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    give_agent_state(sb, &wt, task["threadId"].as_str().unwrap());
    let imported = run(sb
        .grove(&repo)
        .args(["import", "claude"])
        .arg(fixtures().join("claude/project")));
    assert!(matches!(imported.status.code(), Some(0 | 4)));
    let session = list_rows(sb, &repo)
        .into_iter()
        .find(|r| {
            r["threadId"].as_str().unwrap().starts_with("claude-") && r["mainThreadID"].is_null()
        })
        .expect("an imported session");
    ok(sb
        .grove(&repo)
        .args(["fork", session["threadId"].as_str().unwrap()]));
    (repo, task)
}

fn width_of(line: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(line)
}

/// Issue 26: an imported session, its fork and a task with an agent state
/// made every row 81 columns wide at 80. Every line fits, at any width.
#[test]
fn list_rows_fit_every_width_with_an_import_a_fork_and_an_agent_state() {
    let sb = Sandbox::new();
    let (repo, _) = mixed_rows(&sb);
    let rows = list_rows(&sb, &repo);
    assert!(rows.iter().any(|r| !r["agentState"].is_null()), "{rows:?}");
    assert!(
        rows.iter().any(|r| !r["originThreadID"].is_null()),
        "{rows:?}"
    );
    // The age shown is the last activity the rows are ordered by: the
    // sessions imported a moment ago (their own times a year old) and the
    // fork say seconds, as the task does.
    let table = ok(sb.grove(&repo).arg("list").env("COLUMNS", "200"));
    let header: Vec<char> = table.lines().next().unwrap().chars().collect();
    // (" AGE ": not the AGENT column's header.)
    let end = header.iter().collect::<String>().find(" AGE ").unwrap() + 4;
    for line in table.lines().skip(1).filter(|l| !l.starts_with(' ')) {
        let chars: Vec<char> = line.chars().collect();
        let age: String = chars[end - 4..end].iter().collect();
        assert!(
            age.trim().ends_with('s') || age.trim().ends_with('m'),
            "{age:?} in {line:?}\n{table}"
        );
    }
    for columns in [40, 50, 60, 72, 80, 81, 100, 120, 200] {
        let table = ok(sb
            .grove(&repo)
            .args(["list", "--archived"])
            .env("COLUMNS", columns.to_string()));
        for line in table.lines() {
            assert!(
                width_of(line) <= columns,
                "at {columns} columns, {line:?} is {} wide:\n{table}",
                width_of(line)
            );
        }
    }
}

/// The row schema published in the repository.
fn row_schema() -> Value {
    read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/list-row.schema.json"))
}

/// Where `value` breaks `schema` — a validator of the JSON Schema keywords
/// the row schema uses (type, enum, required, properties,
/// additionalProperties, items); any other keyword but annotations fails,
/// so the schema cannot say what this check does not.
fn violations(schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let schema = schema.as_object().expect("a schema is an object");
    for (keyword, rule) in schema {
        match keyword.as_str() {
            "$schema" | "$id" | "title" | "description" => {}
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
                    other => panic!("type {other}"),
                };
                if !types.iter().any(|t| has_type(value, t)) {
                    out.push(format!("{at}: {value} is not {types:?}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(value) {
                    out.push(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "required" => {
                if let Some(obj) = value.as_object() {
                    for name in rule.as_array().unwrap() {
                        if !obj.contains_key(name.as_str().unwrap()) {
                            out.push(format!("{at}: {name} is missing"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(obj) = value.as_object() {
                    for (name, sub) in rule.as_object().unwrap() {
                        if let Some(v) = obj.get(name) {
                            violations(sub, v, &format!("{at}.{name}"), out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                let known = schema.get("properties").and_then(Value::as_object);
                if let Some(obj) = value.as_object() {
                    for (name, v) in obj {
                        if known.is_some_and(|k| k.contains_key(name)) {
                            continue;
                        }
                        match rule {
                            Value::Bool(true) => {}
                            Value::Bool(false) => {
                                out.push(format!("{at}: {name} is not in the schema"))
                            }
                            sub => violations(sub, v, &format!("{at}.{name}"), out),
                        }
                    }
                }
            }
            "items" => {
                if let Some(items) = value.as_array() {
                    for (i, v) in items.iter().enumerate() {
                        violations(rule, v, &format!("{at}[{i}]"), out);
                    }
                }
            }
            other => panic!("the schema uses {other:?}, which this check does not know"),
        }
    }
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        other => panic!("type {other:?}"),
    }
}

#[track_caller]
fn assert_matches_schema(rows: &[Value]) {
    let schema = row_schema();
    for row in rows {
        let mut found = Vec::new();
        violations(&schema, row, "row", &mut found);
        assert!(found.is_empty(), "{found:#?}\n{row:#}");
    }
}

/// The check itself: a row that breaks the schema in each way is caught.
#[test]
fn list_schema_check_fails_on_a_row_that_breaks_it() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    new_task(&sb, &repo, &["One"]);
    let row = list_rows(&sb, &repo).remove(0);
    assert_matches_schema(std::slice::from_ref(&row));
    let schema = row_schema();
    let broken = |change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut bad = row.clone();
        change(bad.as_object_mut().unwrap());
        let mut found = Vec::new();
        violations(&schema, &bad, "row", &mut found);
        found
    };
    assert!(
        !broken(&|r| {
            r.remove("current");
        })
        .is_empty()
    );
    assert!(
        !broken(&|r| {
            r.insert("surprise".into(), Value::Bool(true));
        })
        .is_empty()
    );
    assert!(
        !broken(&|r| {
            r.insert("status".into(), "stale".into());
        })
        .is_empty()
    );
    assert!(
        !broken(&|r| {
            r.insert("uncommitted".into(), serde_json::json!({"added": "1"}));
        })
        .is_empty()
    );
    assert!(
        !broken(&|r| {
            r.insert("tags".into(), serde_json::json!([1]));
        })
        .is_empty()
    );
}

/// Every row of a varied list — tasks dirty, ahead and behind, merged,
/// removed, current; imported sessions, a fork, an agent state, a
/// checkpoint — matches the published schema, and carries the facts the
/// table shows.
#[test]
fn list_json_rows_match_the_schema_and_carry_the_table_s_facts() {
    let sb = Sandbox::new();
    let (repo, task) = mixed_rows(&sb);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    // Two lines changed (one added, one replaced), one new file.
    std::fs::write(wt.join("README.md"), "# changed\nmore\n").unwrap();
    std::fs::write(wt.join("new.txt"), "new\n").unwrap();
    // A task with a commit of its own, behind main by one.
    let ahead = new_task(&sb, &repo, &["Ahead"]);
    let ahead_wt = PathBuf::from(ahead["worktreePath"].as_str().unwrap());
    std::fs::write(ahead_wt.join("a.txt"), "a\n").unwrap();
    sb.git(&ahead_wt, &["add", "a.txt"]);
    sb.git(&ahead_wt, &["commit", "-qm", "Add a"]);
    std::fs::write(repo.join("main.txt"), "m\n").unwrap();
    sb.git(&repo, &["add", "main.txt"]);
    sb.git(&repo, &["commit", "-qm", "Main moves on"]);
    ok(sb
        .grove(&repo)
        .args(["checkpoint", ahead["threadId"].as_str().unwrap()])
        .args(["--summary", "Added a", "--next", "Test it"]));
    // A task merged, one removed.
    let merged = new_task(&sb, &repo, &["Merged"]);
    let merged_wt = PathBuf::from(merged["worktreePath"].as_str().unwrap());
    std::fs::write(merged_wt.join("b.txt"), "b\n").unwrap();
    sb.git(&merged_wt, &["add", "b.txt"]);
    sb.git(&merged_wt, &["commit", "-qm", "Add b"]);
    let merged_branch = merged["branch"].as_str().unwrap();
    sb.git(
        &repo,
        &["merge", "-q", "--no-ff", "-m", "Merge b", merged_branch],
    );
    let gone = new_task(&sb, &repo, &["Gone"]);
    ok(sb
        .grove(&repo)
        .args(["rm", gone["threadId"].as_str().unwrap(), "--force"]));

    let rows = json(&ok(sb.grove(&wt).args([
        "list",
        "--json",
        "--all",
        "--archived",
    ])));
    let rows = rows.as_array().unwrap();
    assert_matches_schema(rows);
    let row = |id: &Value| rows.iter().find(|r| r["threadId"] == *id).unwrap();

    let dirty = row(&task["threadId"]);
    assert_eq!(dirty["status"], "dirty");
    assert_eq!(dirty["current"], true, "grove ran in its worktree");
    assert_eq!(
        dirty["uncommitted"],
        serde_json::json!({"added": 2, "removed": 1, "files": 1, "untracked": 1})
    );
    assert_eq!(dirty["aheadBehind"]["ahead"], 0);
    assert_eq!(
        dirty["aheadBehind"]["behind"], 3,
        "main's commit, b and its merge"
    );
    assert_eq!(dirty["aheadBehind"]["target"], "refs/heads/main");
    assert_eq!(dirty["lastCommit"]["subject"], "initial");
    assert!(dirty["agentState"]["state"] == "working", "{dirty}");

    let a = row(&ahead["threadId"]);
    assert_eq!(a["current"], false);
    assert_eq!(a["aheadBehind"]["ahead"], 1);
    assert_eq!(a["aheadBehind"]["behind"], 3);
    assert_eq!(a["lastCommit"]["subject"], "Add a");
    assert_eq!(a["lastCommit"]["time"], "2025-01-01T00:00:00Z");
    assert_eq!(
        a["uncommitted"],
        serde_json::json!({"added": 0, "removed": 0, "files": 0, "untracked": 0})
    );
    assert_eq!(a["conversationSummary"], "Added a");

    assert_eq!(row(&merged["threadId"])["status"], "merged");
    let removed = row(&gone["threadId"]);
    assert_eq!(removed["status"], "removed");
    assert!(removed["uncommitted"].is_null() && removed["lastCommit"].is_null());
    // Rows come in the order of their last activity, which they give.
    let activity: Vec<jiff::Timestamp> = rows
        .iter()
        .map(|r| r["lastActivity"].as_str().unwrap().parse().unwrap())
        .collect();
    let mut sorted = activity.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(activity, sorted);
}

/// Removed tasks are left out of `list` (table and JSON) unless `--all` or
/// `--status removed`, and out of `switch`'s picker, where the newest
/// task — preselected — is never a removed one.
#[test]
fn list_and_the_picker_hide_removed_tasks() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let kept = new_task(&sb, &repo, &["Still here"]);
    let gone = new_task(&sb, &repo, &["Removed task"]);
    let gone_id = gone["threadId"].as_str().unwrap();
    ok(sb.grove(&repo).args(["rm", gone_id, "--keep-branch"]));
    let ids = |args: &[&str]| -> Vec<String> {
        json(&ok(sb.grove(&repo).args(["list", "--json"]).args(args)))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["threadId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&[]), [kept["threadId"].as_str().unwrap()]);
    assert!(ids(&["--all"]).contains(&gone_id.to_string()));
    assert_eq!(ids(&["--status", "removed"]), [gone_id]);
    let table = ok(sb.grove(&repo).arg("list"));
    assert!(!table.contains("Removed task"), "{table}");
    assert!(table.contains("Still here"), "{table}");
    let table = ok(sb.grove(&repo).args(["list", "--all"]));
    assert!(table.contains("Removed task"), "{table}");

    // Only removed tasks: the note says how to see them.
    ok(sb
        .grove(&repo)
        .args(["rm", kept["threadId"].as_str().unwrap(), "--keep-branch"]));
    let out = run(sb.grove(&repo).arg("list"));
    assert!(out.stdout.is_empty());
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(
        note.contains("only removed tasks (2)") && note.contains("--all"),
        "{note}"
    );

    // The picker: a live task, then a newer removed one.
    let live = new_task(&sb, &repo, &["Live task"]);
    let newest = new_task(&sb, &repo, &["Newest but removed"]);
    ok(sb
        .grove(&repo)
        .args(["rm", newest["threadId"].as_str().unwrap(), "--keep-branch"]));
    let mut cmd = std::process::Command::new("script");
    sb.env(&mut cmd);
    let mut child = cmd
        .args(["-qfec", &format!("{GROVE} switch"), "/dev/null"])
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    use std::io::Write;
    // Enter at once: the preselected task.
    stdin.write_all(b"\r").unwrap();
    stdin.flush().unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        !shown.contains("removed"),
        "no removed task offered: {shown:?}"
    );
    assert!(
        shown.contains(live["worktreePath"].as_str().unwrap()),
        "the live task picked: {shown:?}"
    );
}
