//! Import benchmark: `cargo bench --bench import [-- 2.1|1.0]`.
//!
//! A 20 MB Claude Code transcript, imported into a git repository, in two
//! shapes: records like the real 2.1 fixtures (prompts, replies split over
//! several records with one usage, tool calls with their results and
//! `toolUseResult`, progress and file-history records), and a 1.0 session
//! whose every turn runs a subagent, its sidechain written inline
//! (`isSidechain: true` records between the `Task` call and its result).
//!
//! - the first import: its time and peak memory (target: peak <= 60 MB);
//! - then, each round, two new records are appended and imported again,
//!   alternating with `cat` of the whole file into a pipe that is read
//!   (page cache warm for both; each process timed itself, no shell):
//!   ratio of medians (target <= 3) and the re-import's peak memory
//!   (target <= 30 MB).
//!
//! Peak memory is each child's own maximum resident set, from `wait4`.
//! GROVE_BENCH_SCALE shrinks the transcript for a quick look.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::claude::{SESSION, common, common_1_0, transcript, transcript_1_0};
use common::{median, peak, scaled, time_piped as time, wanted};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
/// A transcript shape: its name, how to write one of about some bytes
/// (the conversation's last uuid and the turns written), and a turn's two
/// new records after a record (the prompt and the reply, one a line).
struct Shape {
    name: &'static str,
    write: fn(&Path, usize) -> (String, usize),
    side: bool,
}

/// Two new records going on the conversation after `last`: a prompt and a
/// reply, as a hook sees after a turn.
fn two_records(shape: &Shape, last: &str, turns: usize) -> (String, String) {
    let record = |kind: &str, uuid: &str, parent: &str, t: usize| {
        let parent = Some(parent.to_string());
        if shape.side {
            common_1_0(kind, uuid, &parent, t, false)
        } else {
            common(kind, uuid, &parent, t)
        }
    };
    let t = turns * 7;
    let u = format!("u-new-{turns}");
    let a = format!("a-new-{turns}");
    let mut prompt = record("user", &u, last, t);
    prompt["message"] = serde_json::json!({"role": "user", "content": "one more thing"});
    let mut reply = record("assistant", &a, &u, t + 1);
    reply["message"] = serde_json::json!({"model": "claude-opus-4-6", "id": format!("msg_new_{turns}"),
        "role": "assistant", "content": [{"type": "text", "text": "Done."}],
        "usage": {"input_tokens": 1, "output_tokens": 2}});
    (format!("{prompt}\n{reply}"), a)
}

fn main() {
    common::serve_as_peak_wrapper();
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-import-")
        .tempdir()
        .expect("tempdir");
    for shape in [
        Shape {
            name: "2.1",
            write: transcript,
            side: false,
        },
        Shape {
            name: "1.0",
            write: transcript_1_0,
            side: true,
        },
    ] {
        if wanted(shape.name) {
            bench(&tmp.path().join(shape.name), &shape);
        }
    }
}

fn bench(dir: &Path, shape: &Shape) {
    println!("Claude Code {} transcript:", shape.name);
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    let dir = &dir;
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .current_dir(&repo)
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&[
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@b",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
    ]);
    let file = dir.join(format!("{SESSION}.jsonl"));
    let (mut last, mut turns) = (shape.write)(&file, scaled(20 << 20));
    let mb = std::fs::metadata(&file).expect("size").len() as f64 / (1 << 20) as f64;
    let import = || {
        let mut c = Command::new(GROVE);
        c.current_dir(&repo)
            .env("GROVE_HOME", dir.join("grove-home"))
            .args(["import", "claude", "--json"])
            .arg(&file);
        c
    };
    let cat = || {
        let mut c = Command::new("cat");
        c.arg(&file);
        c
    };
    let first_kb = peak(&import());
    // The thread is made: measure the first import's time on a fresh copy.
    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).expect("fresh");
    let first = time(
        Command::new(GROVE)
            .current_dir(&fresh)
            .env("GROVE_HOME", dir.join("grove-home-2"))
            .args(["import", "claude", "--json"])
            .arg(&file),
    );
    println!(
        "first import of {mb:.1} MB: {:.0} ms, peak {:.1} MB (target <= 60 MB)",
        first.as_secs_f64() * 1e3,
        first_kb as f64 / 1024.0
    );
    time(&mut cat());
    let (mut g, mut c, mut most) = (Vec::new(), Vec::new(), 0);
    for _ in 0..18 {
        // Two new records: a prompt and a reply, as a hook sees after a turn.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("append");
        let (lines, a) = two_records(shape, &last, turns);
        writeln!(f, "{lines}").expect("write");
        drop(f);
        last = a;
        turns += 1;
        // The first round checks what is measured: only the new lines are
        // read, and both become messages. Then every other round measures
        // memory (through the wrapper), the others time.
        if g.is_empty() && most == 0 {
            let out = import().output().expect("import");
            let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(summary["sources"][0]["read"], "tail", "{summary}");
            assert_eq!(summary["threads"][0]["messagesAdded"], 2, "{summary}");
            most = 1;
        } else if turns % 2 == 0 {
            most = most.max(peak(&import()));
        } else {
            g.push(time(&mut import()));
            c.push(time(&mut cat()));
        }
    }
    let (g, c) = (median(g), median(c));
    println!(
        "re-import after 2 new records: grove {:.1} ms, cat {:.1} ms, ratio {:.2} (target <= 3.00); peak {:.1} MB (target <= 30 MB)",
        g.as_secs_f64() * 1e3,
        c.as_secs_f64() * 1e3,
        g.as_secs_f64() / c.as_secs_f64(),
        most as f64 / 1024.0
    );
}
