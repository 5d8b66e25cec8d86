//! Blame benchmark: `cargo bench --bench blame`.
//!
//! `grove blame FILE --json` against `git blame --porcelain FILE`, each
//! timed as a whole process (start to exit, its output read through a
//! pipe), in alternating rounds, medians compared (target: grove <= 2x
//! git). The file has 2,000 lines and 100 commits of history; a thread of
//! the repository holds a snapshot after each of those commits' changes
//! (a tool call each), so grove follows the file through 101 snapshots
//! besides running git's blame.
//!
//! GROVE_BENCH_SCALE shrinks the file, the history and the rounds.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

use grove::atsf::{ContentBlock, Message, Role};
use grove::snapshot::{At, Moment, record};
use grove::store::{AppendOptions, Store};

mod common;
use common::{alternate, git, report, scaled, time_piped};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
const TARGET: f64 = 2.0;

/// An agent's message making tool call `id`, carrying `snapshot`.
fn call_message(id: &str, snapshot: &grove::snapshot::Record) -> Message {
    let mut m = Message::new(Role::Agent, vec![ContentBlock::text("editing")]);
    m.tool_calls = Some(vec![
        serde_json::from_value(serde_json::json!({
            "toolCallId": id, "name": "Edit", "status": "completed", "input": "{}"
        }))
        .expect("call"),
    ]);
    record::attach(&mut m, &[serde_json::to_value(snapshot).expect("record")]);
    m
}

fn main() {
    let lines = scaled(2000).max(20);
    let commits = scaled(100).max(2);
    let rounds = scaled(15).max(3);
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("repo");
    let home = tmp.path().join("grove-home");
    std::fs::create_dir_all(&repo).expect("repo");
    git(&repo, &["init", "-q"]);
    let mut text: Vec<String> = (0..lines).map(|i| format!("line {i}")).collect();
    let file = repo.join("f.txt");
    std::fs::write(&file, text.join("\n") + "\n").expect("write");
    git(&repo, &["add", "f.txt"]);
    git(&repo, &["commit", "-q", "-m", "file"]);

    let meta = grove::threads::new_meta("bench", "claude-code", Default::default());
    let thread = Store::for_project(&repo)
        .create_thread(&meta)
        .expect("thread");
    let first =
        grove::snapshot::take(&repo, &thread, At::Prompt, &Moment::default()).expect("snapshot");
    let mut prompt = Message::new(Role::User, vec![ContentBlock::text("edit f.txt")]);
    record::attach(
        &mut prompt,
        &[serde_json::to_value(&first).expect("record")],
    );
    thread
        .append(prompt, AppendOptions::default())
        .expect("append");
    for c in 0..commits {
        for j in 0..5 {
            let i = (c * 7 + j * 13) % lines;
            text[i] = format!("line {i}, changed in {c}");
        }
        std::fs::write(&file, text.join("\n") + "\n").expect("write");
        let id = format!("call-{c}");
        let moment = Moment {
            tool_call_id: Some(id.clone()),
            tool: Some("Edit".into()),
            session_id: None,
        };
        let taken = grove::snapshot::take(&repo, &thread, At::ToolCall, &moment).expect("snapshot");
        thread
            .append(call_message(&id, &taken), AppendOptions::default())
            .expect("append");
        git(&repo, &["commit", "-q", "-am", &format!("change {c}")]);
    }

    let grove = || {
        let mut cmd = Command::new(GROVE);
        cmd.current_dir(&repo)
            .env("GROVE_HOME", &home)
            .args(["blame", "f.txt", "--json"]);
        time_piped(&mut cmd)
    };
    let git_blame = || {
        let mut cmd = Command::new("git");
        cmd.current_dir(&repo)
            .args(["blame", "--porcelain", "f.txt"]);
        time_piped(&mut cmd)
    };
    let (g, b) = alternate(rounds, grove, git_blame);
    report(
        &format!("blame ({lines} lines, {commits} commits and snapshots): grove vs git"),
        g,
        b,
        TARGET,
    );
}
