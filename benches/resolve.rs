//! Finding a thread: `cargo bench --bench resolve`.
//!
//! With 10,000 threads in the project's `.agent/`, `grove append <8-char
//! prefix>` against `grove append <full id>` (target <= 2x); with 10,000
//! cached threads of another repository, the same prefix append against
//! the full-id append (target <= 1.2x); a worktree thread appended to by
//! full id from the main checkout against from its worktree (target <=
//! 1.2x); `grove append` of one synced line against `dd conv=fsync`
//! appending the same line beside it (target <= 1.5x). Alternating rounds,
//! medians. GROVE_BENCH_SCALE shrinks the counts.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grove::store::Store;

mod common;
use common::{alternate, git, median, report, scaled};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
const ROUNDS: usize = 9;

struct Env {
    home: PathBuf,
}

impl Env {
    fn grove(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(GROVE);
        c.current_dir(dir)
            .env("GROVE_HOME", &self.home)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    }

    fn time(&self, mut cmd: Command) -> Duration {
        let start = Instant::now();
        let out = cmd.output().expect("run");
        let t = start.elapsed();
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }
}

fn repo(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("repo");
    git(&dir, &["init", "-q"]);
    git(&dir, &["commit", "-q", "--allow-empty", "-m", "init"]);
    dir
}

/// `n` threads in `dir`'s `.agent/`; returns the last one's id.
fn threads(dir: &Path, n: usize) -> String {
    let store = Store::for_project(dir);
    let mut last = String::new();
    for i in 0..n {
        let meta = grove::threads::new_meta(&format!("thread {i}"), "bench", Default::default());
        last = meta.thread_id.clone();
        store.create_thread(&meta).expect("thread");
    }
    last
}

fn compare(env: &Env, a: impl Fn() -> Command, b: impl Fn() -> Command) -> (Duration, Duration) {
    alternate(ROUNDS, || env.time(a()), || env.time(b()))
}

fn main() {
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-resolve-")
        .tempdir()
        .expect("tempdir");
    let root = tmp.path().canonicalize().expect("tmp");
    let env = Env {
        home: root.join("grove-home"),
    };
    let n = scaled(10_000);

    // 10,000 threads in the project.
    let big = repo(&root, "big");
    let id = threads(&big, n);
    let env = &env;
    let append = |dir: &Path, name: String| {
        let dir = dir.to_path_buf();
        move || {
            env.grove(
                &dir,
                &[
                    "append",
                    &name,
                    "--role",
                    "user",
                    "--text",
                    "x",
                    "--no-fsync",
                ],
            )
        }
    };
    let (p, f) = compare(
        env,
        append(&big, id[..8].to_string()),
        append(&big, id.clone()),
    );
    report(
        &format!("append by prefix vs full id, {n} threads in the project"),
        p,
        f,
        2.0,
    );

    // 10,000 cached threads of another repository.
    let other = repo(&root, "other");
    let cache = grove::cache::repo_dir(&other).expect("cache dir");
    std::fs::create_dir_all(&cache).expect("cache");
    for i in 0..n {
        let meta = grove::threads::new_meta(&format!("cached {i}"), "bench", Default::default());
        let dir = cache.join(&meta.thread_id);
        std::fs::create_dir_all(&dir).expect("entry");
        std::fs::write(
            dir.join("thread.json"),
            grove::atsf::to_pretty(&meta).expect("json"),
        )
        .expect("thread.json");
        std::fs::write(dir.join("messages.jsonl"), "").expect("log");
    }
    let small = repo(&root, "small");
    let id = threads(&small, 2);
    let (p, f) = compare(
        env,
        append(&small, id[..8].to_string()),
        append(&small, id.clone()),
    );
    report(
        &format!("append by prefix vs full id, {n} cached threads of another repository"),
        p,
        f,
        1.2,
    );

    // A worktree thread by full id: from the main checkout vs from its worktree.
    let out = env
        .grove(&small, &["new", "task", "--no-hooks", "--json"])
        .stdout(Stdio::piped())
        .output()
        .expect("new");
    let task: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let tid = task["threadId"].as_str().expect("id").to_string();
    let wt = PathBuf::from(task["worktreePath"].as_str().expect("wt"));
    let (m, w) = compare(env, append(&small, tid.clone()), append(&wt, tid.clone()));
    report(
        "append by full id: from the main checkout vs from the worktree",
        m,
        w,
        1.2,
    );

    // One line appended and synced: grove (which also updates thread.json)
    // against dd appending the same line to a log beside it and syncing it.
    let line = root.join("line.json");
    std::fs::write(&line, "{\"role\":\"user\",\"content\":[]}\n").expect("line");
    let beside = Store::for_project(&small)
        .threads_dir()
        .join("dd-messages.jsonl");
    let (a, d) = compare(
        env,
        || env.grove(&small, &["append", &id, "--role", "user", "--text", "x"]),
        || {
            let mut dd = Command::new("dd");
            dd.arg(format!("if={}", line.display()))
                .arg(format!("of={}", beside.display()))
                .args(["oflag=append", "conv=notrunc,fsync", "status=none"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            dd
        },
    );
    report(
        "append of one synced line: grove append vs dd conv=fsync",
        a,
        d,
        1.5,
    );

    // rm of a fresh task: in the 10,000-thread project vs in a 2-thread one.
    let task = |dir: &Path| -> String {
        let out = env
            .grove(dir, &["new", "task", "--no-hooks", "--json"])
            .stdout(Stdio::piped())
            .output()
            .expect("new");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["threadId"].as_str().expect("id").to_string()
    };
    let (mut b, mut s) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let id = task(&big);
        b.push(env.time(env.grove(&big, &["rm", &id[..8]])));
        let id = task(&small);
        s.push(env.time(env.grove(&small, &["rm", &id[..8]])));
    }
    report(
        &format!("rm by prefix: {n}-thread project vs 2-thread project"),
        median(b),
        median(s),
        1.5,
    );
}
