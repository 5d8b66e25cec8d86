//! Search benchmark: `cargo bench --bench search`.
//!
//! `grove search --json` against `grep -rF` over the same `messages.jsonl`
//! files, 1 GB in all (100 threads of 10 MB), page cache warm, alternating
//! rounds in one run: ratio of medians. GROVE_BENCH_SCALE shrinks it.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grove::store::Store;

mod common;
use common::{median, scaled};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");

fn fill(path: &Path, bytes: usize, thread: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("log"));
    let body = "The build fails on the login page because the session cookie is not refreshed; \
                checking the middleware and the token store next. "
        .repeat(8);
    let (mut written, mut i) = (0, 0usize);
    while written < bytes {
        // One message in 2,000 holds the needle.
        let extra = if (i + thread).is_multiple_of(2000) {
            " zanzibar-4711"
        } else {
            ""
        };
        let line = format!(
            r#"{{"id":"m{i}","role":"{}","timestamp":"2025-03-01T10:00:00.000Z","content":[{{"type":"text","text":"{i}: {body}{extra}"}}],"toolCalls":[{{"toolCallId":"t{i}","name":"read_file","status":"completed","input":"src/auth.ts","output":"{body}"}}]}}"#,
            if i.is_multiple_of(2) { "user" } else { "agent" }
        );
        writeln!(out, "{line}").expect("write");
        written += line.len() + 1;
        i += 1;
    }
    out.flush().expect("flush");
}

/// Runs `cmd` with its output going into a pipe that is read, as a caller
/// reads it: with stdout on /dev/null GNU grep stops reading a file at its
/// first match, which would flatter the baseline.
fn time(mut cmd: Command) -> Duration {
    use std::io::Read;
    let start = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("run");
    let mut sink = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut sink)
        .expect("read");
    let status = child.wait().expect("wait");
    let elapsed = start.elapsed();
    assert!(status.success(), "{cmd:?}");
    elapsed
}

fn main() {
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-search-")
        .tempdir()
        .expect("tempdir");
    let dir = tmp.path();
    let threads = 100;
    let per_thread = scaled(10 << 20);
    let store = Store::for_project(dir);
    for t in 0..threads {
        let meta = grove::threads::new_meta(&format!("thread {t}"), "bench", Default::default());
        let thread = store.create_thread(&meta).expect("thread");
        fill(&thread.messages_path(), per_thread, t);
    }
    let total_mb = (threads * per_thread) as f64 / (1 << 20) as f64;
    let grove = || {
        let mut c = Command::new(GROVE);
        c.current_dir(dir)
            .env("GROVE_HOME", dir.join("grove-home"))
            .args(["search", "zanzibar-4711", "--json"]);
        c
    };
    let grep = || {
        let mut c = Command::new("grep");
        c.current_dir(dir)
            .args(["-rF", "zanzibar-4711", ".agent/threads"]);
        c
    };
    // Warm the page cache, and check both find the same lines.
    let out = grove().output().expect("grove");
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let grep_out = grep().output().expect("grep");
    let grep_lines = String::from_utf8_lossy(&grep_out.stdout).lines().count();
    assert_eq!(found.as_array().expect("array").len(), grep_lines);
    let (mut g, mut r) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        g.push(time(grove()));
        r.push(time(grep()));
    }
    let (g, r) = (median(g), median(r));
    println!(
        "search over {total_mb:.0} MB ({grep_lines} hits): grove {:.0} ms ({:.0} MB/s), grep -rF {:.0} ms, ratio {:.2} (target <= 1.50)",
        g.as_secs_f64() * 1e3,
        total_mb / g.as_secs_f64(),
        r.as_secs_f64() * 1e3,
        g.as_secs_f64() / r.as_secs_f64()
    );
}
