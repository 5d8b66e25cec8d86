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

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::claude::{SESSION, common, transcript};
use common::{median, scaled};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
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
