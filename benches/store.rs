//! Store benchmarks: `cargo bench --bench store`.
//!
//! Not a timed test: it prints figures for the README. Each comparison runs
//! grove and its baseline alternately in the same run and reports medians.
//! Sizes can be scaled down with GROVE_BENCH_SCALE (e.g. 0.1) for a quick look.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grove::atsf::{ContentBlock, Message, Role, Stats, ToolCall, ToolStatus};
use grove::store::{AppendOptions, Store};

mod common;
use common::{alternate, median, peak, report, scale, scaled, time_piped, wanted};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");

fn sample_message(i: usize, body: usize) -> Message {
    let mut m = Message::new(
        if i.is_multiple_of(2) {
            Role::User
        } else {
            Role::Agent
        },
        vec![ContentBlock::text(format!(
            "message {i} {}",
            "lorem ipsum ".repeat(body / 12)
        ))],
    );
    if !i.is_multiple_of(2) {
        m.tool_calls = Some(vec![ToolCall {
            tool_call_id: format!("tc-{i}"),
            name: "bash".into(),
            title: Some("Run tests".into()),
            status: ToolStatus::Completed,
            input: Some("{\"command\":\"cargo test\"}".into()),
            output: Some("test result: ok. ".repeat(body / 60)),
            duration: None,
            diff: None,
            extra: Default::default(),
        }]);
    }
    m
}

fn bench_append(root: &Path) {
    for (fsync, n) in [(true, scaled(1_000)), (false, scaled(10_000))] {
        let store = Store::for_project(&root.join(format!("append-{fsync}")));
        let meta = grove::threads::new_meta("bench", "bench", Default::default());
        let thread = store.create_thread(&meta).expect("create");
        let messages: Vec<_> = (0..n).map(|i| sample_message(i, 400)).collect();
        let start = Instant::now();
        for m in messages {
            thread.append(m, AppendOptions { fsync }).expect("append");
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "append (fsync {}): {n} messages in {secs:.2}s = {:.0} messages/s",
            if fsync { "on " } else { "off" },
            n as f64 / secs
        );
    }
}

fn time_cmd(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let status = cmd.stdout(Stdio::null()).status().expect("run");
    assert!(status.success(), "{cmd:?} failed");
    start.elapsed()
}

fn bench_list(root: &Path) {
    let n = scaled(10_000);
    let project = root.join("list");
    let store = Store::for_project(&project);
    store.ensure_dir().expect("init");
    for i in 0..n {
        let mut meta =
            grove::threads::new_meta(&format!("thread {i}"), "claude-code", Default::default());
        meta.stats = Stats {
            message_count: i as u64,
            ..Stats::default()
        };
        let dir = store.threads_dir().join(&meta.thread_id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("thread.json"),
            grove::atsf::to_pretty(&meta).expect("json"),
        )
        .expect("write");
    }
    // cat gets the files themselves, in the order the directory lists
    // them, as a shell glob would (no shell timed); both write into a pipe
    // that is read.
    let mut files: Vec<_> = std::fs::read_dir(store.threads_dir())
        .expect("list")
        .map(|e| e.expect("entry").path().join("thread.json"))
        .collect();
    files.sort();
    let mut grove_cmd = Command::new(GROVE);
    grove_cmd.args(["list", "--json"]).current_dir(&project);
    let (g, c) = alternate(
        21,
        || time_piped(&mut grove_cmd),
        || time_piped(Command::new("cat").args(&files)),
    );
    report(
        &format!("list --json over {n} threads vs cat of their thread.json"),
        g,
        c,
        1.0,
    );
    println!(
        "list --json over {n} threads: peak {:.1} MiB (target <= 64 MiB)",
        peak(&grove_cmd) as f64 / 1024.0
    );
}

fn bench_read(root: &Path) {
    let target = (100.0 * 1024.0 * 1024.0 * scale()) as u64;
    let project = root.join("read");
    let store = Store::for_project(&project);
    let meta = grove::threads::new_meta("big", "claude-code", Default::default());
    let thread = store.create_thread(&meta).expect("create");
    {
        use std::io::Write;
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(thread.messages_path()).expect("create"));
        let mut written = 0u64;
        let mut i = 0;
        while written < target {
            let line = grove::atsf::to_line(&sample_message(i, 2_000)).expect("json");
            out.write_all(&line).expect("write");
            written += line.len() as u64;
            i += 1;
        }
    }
    thread.repair().expect("stats");
    let size = std::fs::metadata(thread.messages_path())
        .expect("size")
        .len() as f64
        / (1024.0 * 1024.0);
    let mut lib_t = Vec::new();
    let mut cli_t = Vec::new();
    let mut cat_t = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let count = thread
            .messages()
            .expect("open")
            .filter(|m| m.is_ok())
            .count();
        lib_t.push(start.elapsed());
        assert!(count > 0);
        cli_t.push(time_cmd(
            Command::new(GROVE)
                .args(["show", "--json", thread.id()])
                .current_dir(&project),
        ));
        cat_t.push(time_cmd(Command::new("cat").arg(thread.messages_path())));
    }
    let mbs = |d: Duration| size / d.as_secs_f64();
    println!(
        "read {size:.0} MB messages.jsonl: library {:.0} MB/s, `grove show --json` {:.0} MB/s, cat {:.0} MB/s (target >= 300 MB/s)",
        mbs(median(lib_t)),
        mbs(median(cli_t)),
        mbs(median(cat_t))
    );
}

fn main() {
    common::serve_as_peak_wrapper();
    let root = tempfile::Builder::new()
        .prefix("grove-bench-")
        .tempdir()
        .expect("tempdir");
    if wanted("append") {
        bench_append(root.path());
    }
    if wanted("list") {
        bench_list(root.path());
    }
    if wanted("read") {
        bench_read(root.path());
    }
}
