//! Search benchmark: `cargo bench --bench search`.
//!
//! 1 GB of `messages.jsonl` (100 threads of 10 MB, records shaped like
//! grove's own), page cache warm, each query alternating with its
//! baseline over the same files in one run, ratio of medians; every
//! program writes into a pipe that is read:
//!
//! - a literal, against `rg -F` (target <= 1.1) and `grep -rF`;
//! - `-i`, against `rg -i -F` (target <= 1.1);
//! - a word in every message, against `rg -F` (target <= 1.5);
//! - `--regex`, against `rg -e` (target <= 1.1);
//! - the peak memory of a search for a word in every message (target
//!   <= 64 MB whatever the number of hits).
//!
//! The ripgrep comparisons print a skip line when `rg` is not installed.
//! GROVE_BENCH_SCALE shrinks the data; GROVE_BENCH_KEEP=1 keeps it (its
//! directory is printed) for profiling by hand.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::Command;

use grove::store::Store;

mod common;
use common::{alternate, peak, report, scaled, time_piped};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
const ROUNDS: usize = 7;

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

/// Lines a command prints (a hit per line for grep and rg, an element
/// per line for `grove search --json`).
fn lines_out(mut cmd: Command) -> usize {
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "{cmd:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with(['[', ']']))
        .count()
}

/// One query of grove against one baseline: same hits, then timed.
fn compare(
    what: &str,
    make_grove: impl Fn() -> Command,
    make_baseline: impl Fn() -> Command,
    target: f64,
) {
    let hits = lines_out(make_grove());
    let expected = lines_out(make_baseline());
    assert_eq!(hits, expected, "{what}: grove and the baseline disagree");
    let (mut grove, mut baseline) = (make_grove(), make_baseline());
    let (g, b) = alternate(
        ROUNDS,
        || time_piped(&mut grove),
        || time_piped(&mut baseline),
    );
    report(&format!("{what} ({hits} hits)"), g, b, target);
}

fn main() {
    common::serve_as_peak_wrapper();
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
    println!("search over {total_mb:.0} MB in {threads} threads");
    let (_tmp, dir) = if std::env::var_os("GROVE_BENCH_KEEP").is_some() {
        let kept = tmp.keep();
        println!("data kept in {}", kept.display());
        (None, kept)
    } else {
        let dir = dir.to_path_buf();
        (Some(tmp), dir)
    };
    let dir = dir.as_path();
    let grove = |args: &[&str]| {
        let mut c = Command::new(GROVE);
        c.current_dir(dir)
            .env("GROVE_HOME", dir.join("grove-home"))
            .arg("search")
            .args(args)
            .arg("--json");
        c
    };
    let tool = |program: &str, args: &[&str]| {
        let mut c = Command::new(program);
        c.current_dir(dir).args(args).arg(".agent/threads");
        c
    };
    // ripgrep as it searches a directory it is given, with no ignore files
    // to read and one thread per core (its default).
    let rg = |args: &[&str]| {
        let mut all = vec!["--no-ignore", "--hidden", "--no-messages"];
        all.extend_from_slice(args);
        tool("rg", &all)
    };
    let has_rg = Command::new("rg").arg("--version").output().is_ok();

    if common::wanted("memory") {
        // A word in every message: 2 hits per message, hundreds of thousands.
        let kb = peak(&grove(&["session"]));
        println!(
            "memory of a search for a word in every message: peak {:.1} MB (target <= 64)",
            kb as f64 / 1024.0
        );
    }
    if common::wanted("literal") {
        compare(
            "literal vs grep -rF",
            || grove(&["zanzibar-4711"]),
            || tool("grep", &["-rF", "zanzibar-4711"]),
            1.5,
        );
        if has_rg {
            compare(
                "literal vs rg -F",
                || grove(&["zanzibar-4711"]),
                || rg(&["-F", "zanzibar-4711"]),
                1.1,
            );
        }
    }
    if !has_rg {
        println!("skipped: the -i and --regex comparisons need rg (ripgrep) on PATH");
        return;
    }
    if common::wanted("ignore-case") {
        compare(
            "-i vs rg -i -F",
            || grove(&["-i", "ZANZIBAR-4711"]),
            || rg(&["-i", "-F", "ZANZIBAR-4711"]),
            1.1,
        );
    }
    if common::wanted("common") {
        // A word in every message: grove reports each block it is in (the
        // text and the tool output, two per message), rg each line (one
        // per message), so only the times are compared; both outputs are
        // read from a pipe.
        let (mut g, mut r) = (grove(&["middleware"]), rg(&["-F", "middleware"]));
        let (g, r) = alternate(ROUNDS, || time_piped(&mut g), || time_piped(&mut r));
        report("a word in every message vs rg -F", g, r, 1.5);
    }
    if common::wanted("regex") {
        compare(
            "--regex vs rg -e",
            || grove(&["--regex", r"zanzi[a-z]+-\d+"]),
            || rg(&["-e", r"zanzi[a-z]+-\d+"]),
            1.1,
        );
    }
}
