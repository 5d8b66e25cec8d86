//! Import benchmark: `cargo bench --bench import`.
//!
//! A 20 MB Claude Code transcript (records shaped like the real 2.1
//! fixtures: prompts, replies split over several records with one usage,
//! tool calls with their results and `toolUseResult`, progress and
//! file-history records), imported into a git repository:
//!
//! - the first import: its time and peak memory (target: peak <= 60 MB);
//! - then, each round, two new records are appended and imported again,
//!   alternating with `cat` of the whole file into a pipe that is read
//!   (page cache warm for both): ratio of medians (target <= 3) and the
//!   re-import's peak memory (target <= 30 MB).
//!
//! Peak memory is each child's own maximum resident set, from `wait4`.
//! GROVE_BENCH_SCALE shrinks the transcript for a quick look.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{median, scaled};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
const SESSION: &str = "b3c1a2d4-0000-4000-8000-00000000be0c";

/// Writes a transcript of about `bytes`; returns the uuid of its last record.
fn transcript(path: &Path, bytes: usize) -> (String, usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("transcript"));
    let mut written = 0;
    let mut parent: Option<String> = None;
    let mut n = 0usize;
    let body = "The coupon path subtracts the amount without a floor, so a large coupon makes the total negative. ";
    let file = "export function total(items, coupon) {\n  return sum(items) - coupon.amount;\n}\n"
        .repeat(40);
    while written < bytes {
        for line in turn(n, &mut parent, body, &file) {
            writeln!(out, "{line}").expect("write");
            written += line.len() + 1;
        }
        n += 1;
    }
    out.flush().expect("flush");
    (parent.unwrap_or_default(), n)
}

fn common(kind: &str, uuid: &str, parent: &Option<String>, t: usize) -> serde_json::Value {
    serde_json::json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/dev/projects/shop", "sessionId": SESSION, "version": "2.1.39",
        "gitBranch": "fix-cart", "type": kind, "uuid": uuid,
        "timestamp": format!("2026-02-12T{:02}:{:02}:{:02}.000Z", (t / 3600) % 24, (t / 60) % 60, t % 60),
    })
}

/// One turn: a prompt, a reply in three records (one API message), a
/// progress record, the tool result, a file-history snapshot.
fn turn(n: usize, parent: &mut Option<String>, body: &str, file: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut push =
        |mut v: serde_json::Value, extra: serde_json::Value, parent: &mut Option<String>| {
            if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
                o.extend(e);
            }
            *parent = v["uuid"].as_str().map(str::to_string);
            lines.push(v.to_string());
        };
    let id = |k: &str| format!("{k}-{n:08}");
    let t = n * 7;
    push(
        common("user", &id("u"), parent, t),
        serde_json::json!({"message": {"role": "user", "content": format!("Turn {n}: {body}")}}),
        parent,
    );
    let usage = serde_json::json!({"input_tokens": 3, "cache_creation_input_tokens": 15005,
        "cache_read_input_tokens": 11442, "output_tokens": 9, "service_tier": "standard"});
    let mid = format!("msg_{n:016}");
    for (k, content) in [
        (
            "a1",
            serde_json::json!([{"type": "thinking", "thinking": body, "signature": "EqQBCkYIBxgCKkB3"}]),
        ),
        ("a2", serde_json::json!([{"type": "text", "text": body}])),
        (
            "a3",
            serde_json::json!([{"type": "tool_use", "id": format!("toolu_{n:010}"), "name": "Read",
            "input": {"file_path": "/home/dev/projects/shop/src/cart.ts"}}]),
        ),
    ] {
        push(
            common("assistant", &id(k), parent, t + 1),
            serde_json::json!({"message": {"model": "claude-opus-4-6", "id": mid, "type": "message",
                "role": "assistant", "content": content, "stop_reason": null, "usage": usage},
                "requestId": format!("req_{n:012}")}),
            parent,
        );
    }
    let call_parent = parent.clone();
    push(
        common("progress", &id("p"), parent, t + 2),
        serde_json::json!({"data": {"type": "hook_progress", "hookEvent": "PreToolUse",
            "hookName": "PreToolUse:Read", "command": "guard.sh"},
            "toolUseID": format!("toolu_{n:010}"), "parentToolUseID": format!("toolu_{n:010}")}),
        parent,
    );
    let mut result_parent = call_parent;
    push(
        common("user", &id("r"), &result_parent, t + 3),
        serde_json::json!({"message": {"role": "user", "content": [{"tool_use_id": format!("toolu_{n:010}"),
            "type": "tool_result", "content": file}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/home/dev/projects/shop/src/cart.ts",
                "content": file, "numLines": 120, "startLine": 1, "totalLines": 120}},
            "sourceToolAssistantUUID": id("a3")}),
        &mut result_parent,
    );
    *parent = result_parent;
    lines.push(
        serde_json::json!({"type": "file-history-snapshot", "messageId": id("u"),
            "snapshot": {"messageId": id("u"), "trackedFileBackups": {}, "timestamp": "2026-02-12T10:00:00.000Z"},
            "isSnapshotUpdate": false})
        .to_string(),
    );
    lines
}

/// Runs `cmd`, reading its stdout (a pipe, as a caller would); its wall time.
fn time(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut sink = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut sink)
        .expect("read");
    let status = child.wait().expect("wait");
    let elapsed = start.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    elapsed
}

/// Runs `cmd` under this benchmark started as a wrapper (`--peak-of`),
/// which waits for it alone and reads its children's peak resident set:
/// the peak of `cmd` itself, in KB.
fn peak(cmd: &Command) -> u64 {
    let out = Command::new(std::env::current_exe().expect("exe"))
        .arg("--peak-of")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(cmd.get_current_dir().unwrap_or(Path::new(".")))
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdout(Stdio::null())
        .output()
        .expect("wrapper");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("peak-kb=")?.trim().parse().ok())
        .expect("peak")
}

/// The wrapper: runs the command, waits, prints `peak-kb=`.
fn peak_of(args: &[String]) -> ! {
    let status = Command::new(&args[0])
        .args(&args[1..])
        .status()
        .expect("run");
    eprintln!("peak-kb={}", children_peak_kb());
    std::process::exit(status.code().unwrap_or(1));
}

#[cfg(unix)]
fn children_peak_kb() -> i64 {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    // KB on Linux, bytes on macOS.
    if cfg!(target_os = "macos") {
        usage.max_rss() / 1024
    } else {
        usage.max_rss()
    }
}

#[cfg(not(unix))]
fn children_peak_kb() -> i64 {
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--peak-of") {
        peak_of(&args[at + 1..]);
    }
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-import-")
        .tempdir()
        .expect("tempdir");
    let dir = tmp.path();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
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
    let (mut last, mut turns) = transcript(&file, scaled(20 << 20));
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
        let mut parent = Some(last.clone());
        let t = turns * 7;
        let u = format!("u-new-{turns}");
        let a = format!("a-new-{turns}");
        let mut prompt = common("user", &u, &parent, t);
        prompt["message"] = serde_json::json!({"role": "user", "content": "one more thing"});
        parent = Some(u);
        let mut reply = common("assistant", &a, &parent, t + 1);
        reply["message"] = serde_json::json!({"model": "claude-opus-4-6", "id": format!("msg_new_{turns}"),
            "role": "assistant", "content": [{"type": "text", "text": "Done."}],
            "usage": {"input_tokens": 1, "output_tokens": 2}});
        writeln!(f, "{prompt}\n{reply}").expect("write");
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
