//! Watching threads change: `grove show --follow`, `grove list --watch`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::support::*;

/// Starts `cmd` with stdout piped; its lines arrive on the receiver.
fn spawn_lines(cmd: &mut std::process::Command) -> (Child, Receiver<String>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn next_line(rx: &Receiver<String>, limit: Duration) -> Option<String> {
    rx.recv_timeout(limit).ok()
}

#[test]
fn show_follow_prints_each_appended_message_and_waits_for_a_torn_line() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Watched");
    for text in ["one", "two"] {
        ok(sb
            .grove(&dir)
            .args(["append", &id, "--role", "user", "--text", text]));
    }
    let (mut child, rx) = spawn_lines(sb.grove(&dir).args(["show", &id, "--follow", "--json"]));
    let first = json(&next_line(&rx, Duration::from_secs(10)).expect("the first message"));
    assert_eq!(first["content"][0]["text"], "one");
    let second = json(&next_line(&rx, Duration::from_secs(10)).unwrap());
    assert_eq!(second["content"][0]["text"], "two");

    let start = Instant::now();
    ok(sb
        .grove(&dir)
        .args(["append", &id, "--role", "agent", "--text", "three"]));
    let third = json(&next_line(&rx, Duration::from_secs(10)).expect("the appended message"));
    assert_eq!(third["content"][0]["text"], "three");
    assert_eq!(third["role"], "agent");
    assert!(start.elapsed() < Duration::from_secs(5));

    // A line written in two parts is printed once it is whole.
    let line = serde_json::json!({
        "id": "m-torn", "role": "user", "timestamp": "2026-01-01T00:00:00.000Z",
        "content": [{"type": "text", "text": "four"}]
    })
    .to_string();
    let log = dir.join(".agent/threads").join(&id).join("messages.jsonl");
    let (a, b) = line.split_at(line.len() / 2);
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(a.as_bytes()).unwrap();
    f.flush().unwrap();
    assert_eq!(
        next_line(&rx, Duration::from_millis(600)),
        None,
        "half a line is not printed"
    );
    f.write_all(format!("{b}\n").as_bytes()).unwrap();
    let fourth = json(&next_line(&rx, Duration::from_secs(10)).expect("the whole line"));
    assert_eq!(fourth["id"], "m-torn");
    assert_eq!(fourth["content"][0]["text"], "four");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn show_follow_without_json_prints_the_conversation_as_show_does() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Watched");
    ok(sb
        .grove(&dir)
        .args(["append", &id, "--role", "user", "--text", "hello"]));
    let (mut child, rx) = spawn_lines(sb.grove(&dir).args(["show", &id, "--follow"]));
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.iter().any(|l: &String| l == "hello") && Instant::now() < deadline {
        if let Some(l) = next_line(&rx, Duration::from_millis(200)) {
            seen.push(l);
        }
    }
    assert_eq!(seen[0], "Watched", "{seen:?}");
    assert!(seen.iter().any(|l| l.starts_with("── #0 user")), "{seen:?}");
    ok(sb
        .grove(&dir)
        .args(["append", &id, "--role", "agent", "--text", "hi there"]));
    let mut more = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !more.iter().any(|l: &String| l == "hi there") && Instant::now() < deadline {
        if let Some(l) = next_line(&rx, Duration::from_millis(200)) {
            more.push(l);
        }
    }
    assert!(
        more.iter().any(|l| l.starts_with("── #1 agent")),
        "{more:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn list_watch_prints_the_table_again_when_it_changes() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    new_thread(&sb, &repo, "First");
    let (mut child, rx) = spawn_lines(sb.grove(&repo).args(["list", "--watch", "--json"]));
    let first = json(&next_line(&rx, Duration::from_secs(10)).expect("the first table"));
    assert_eq!(first.as_array().unwrap().len(), 1);
    assert_eq!(
        next_line(&rx, Duration::from_millis(700)),
        None,
        "nothing changed, nothing printed"
    );
    new_thread(&sb, &repo, "Second");
    let second = json(&next_line(&rx, Duration::from_secs(10)).expect("the new table"));
    let titles: Vec<&str> = second
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"First") && titles.contains(&"Second"),
        "{titles:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// A result already there when `--follow` starts is folded into its call:
/// the call is shown once, completed.
#[test]
fn show_follow_shows_a_call_completed_before_it_started_once() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Watched");
    let lines = [
        r#"{"id":"a1","role":"agent","timestamp":"2025-03-01T10:00:05.000Z","content":[{"type":"text","text":"Counting."}],"toolCalls":[{"toolCallId":"t1","name":"Bash","status":"pending","input":"wc -l src/app.ts"}]}"#,
        r#"{"id":"a1~done~t1","role":"agent","timestamp":"2025-03-01T10:00:09.000Z","content":[],"toolCalls":[{"toolCallId":"t1","name":"Bash","status":"completed","input":"wc -l src/app.ts","output":"42 src/app.ts"}],"completesMessage":"a1"}"#,
        r#"{"id":"a2","role":"agent","timestamp":"2025-03-01T10:00:10.000Z","content":[{"type":"text","text":"It has 42 lines."}]}"#,
    ];
    append_stdin(&sb, &dir, &id, &lines.join("\n"));
    let (mut child, rx) = spawn_lines(sb.grove(&dir).args(["show", &id, "--follow"]));
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.iter().any(|l: &String| l == "It has 42 lines.") && Instant::now() < deadline {
        if let Some(l) = next_line(&rx, Duration::from_millis(200)) {
            seen.push(l);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let calls: Vec<&String> = seen.iter().filter(|l| l.contains("⚙ Bash")).collect();
    assert_eq!(calls.len(), 1, "{seen:?}");
    assert!(calls[0].contains("[completed]"), "{seen:?}");
}
