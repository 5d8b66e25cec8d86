//! Live capture benchmark: `cargo bench --bench capture [-- 1.0]`.
//!
//! What one agent turn costs with a 20 MB Claude Code transcript: the task's
//! thread has captured the transcript once; each round appends a turn (a
//! prompt and a reply) and runs the hook — `grove capture claude --thread
//! ID` with the `Stop` event's JSON on stdin — the whole process timed
//! (start, lock, reading the new tail, appending, the agent's state, starting
//! the follow-up). Target: median <= 20 ms. The follow-up the previous
//! hooks started is still watching: now and then it sees the turn first, and
//! the hook waits for its capture, as a hook of a live session may.
//! Alternating with it, `grove --version` (the same binary's start, the
//! floor any hook pays) for scale, and the same hook with turn snapshots
//! turned off (`turn-snapshots = false`): the capture alone.
//!
//! Then the order the agents really use: the hook first, the turn written
//! after it; timed, the hook (which then has nothing new to read) and the
//! time from the turn's write to both its messages in the thread — brought
//! by the follow-up, the promise being within a second.
//!
//! The first capture's peak memory is measured too (a second task capturing
//! the same transcript, through a wrapper that waits for it alone).
//!
//! The last check: every round's two messages are in the thread, once.
//! GROVE_BENCH_SCALE shrinks the transcript for a quick look.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::claude::{SESSION, common, transcript, transcript_1_0};
use common::{median, peak_with_input, scaled};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");
const ROUNDS: usize = 21;
/// How long a follow-up lasts after its last hook (grove's
/// `capture::follow::WINDOW`), with a margin.
const FOLLOW_UP: Duration = Duration::from_millis(3300);

struct Bench {
    home: PathBuf,
    repo: PathBuf,
}

impl Bench {
    fn grove(&self, dir: &Path) -> Command {
        let mut c = Command::new(GROVE);
        c.current_dir(dir)
            .env("GROVE_HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", self.home.join("claude"))
            .env_remove("GROVE_THREAD");
        c
    }

    fn git(&self, args: &[&str]) {
        let ok = Command::new("git")
            .current_dir(&self.repo)
            .args(["-c", "user.name=b", "-c", "user.email=b@b"])
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// Runs `cmd` with `input` on stdin; its wall time.
fn time(cmd: &mut Command, input: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("stdin");
    let out = child.wait_with_output().expect("wait");
    let elapsed = start.elapsed();
    assert!(out.status.success(), "{cmd:?} failed");
    elapsed
}

/// Appends one turn (a prompt, a reply) to the transcript.
fn append_turn(file: &Path, last: &mut String, n: usize) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .expect("append");
    let u = format!("u-live-{n}");
    let a = format!("a-live-{n}");
    let mut prompt = common("user", &u, &Some(last.clone()), n * 7);
    prompt["message"] = serde_json::json!({"role": "user", "content": format!("live prompt {n}")});
    let mut reply = common("assistant", &a, &Some(u), n * 7 + 1);
    reply["message"] = serde_json::json!({"model": "claude-opus-4-6", "id": format!("msg_live_{n}"),
        "type": "message", "role": "assistant", "content": [{"type": "text", "text": format!("live reply {n}")}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 2}});
    writeln!(f, "{prompt}\n{reply}").expect("write");
    *last = a;
}

/// `grove new NAME --agent claude-code`: the task's thread id and worktree.
fn new_task(b: &Bench, name: &str) -> (String, PathBuf) {
    let out = b
        .grove(&b.repo)
        .args(["new", name, "--agent", "claude-code", "--json"])
        .stdin(Stdio::null())
        .output()
        .expect("new");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let task: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = task["threadId"].as_str().expect("id").to_string();
    let wt = PathBuf::from(task["worktreePath"].as_str().expect("wt"));
    (id, wt)
}

fn main() {
    common::serve_as_peak_wrapper();
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-capture-")
        .tempdir()
        .expect("tempdir");
    let dir = tmp.path().canonicalize().expect("tmp");
    let b = Bench {
        home: dir.join("grove-home"),
        repo: dir.join("repo"),
    };
    std::fs::create_dir_all(&b.repo).expect("repo");
    b.git(&["init", "-q"]);
    b.git(&["commit", "-q", "--allow-empty", "-m", "init"]);
    let (id, wt) = new_task(&b, "bench");
    let file = dir.join(format!("{SESSION}.jsonl"));
    // `-- 1.0`: a Claude Code 1.0 session, a subagent's sidechain written
    // inline in every turn.
    let shape_1_0 = std::env::args().skip(1).any(|a| a == "1.0");
    let write = if shape_1_0 {
        transcript_1_0
    } else {
        transcript
    };
    let (mut last, turns) = write(&file, scaled(20 << 20));
    let mb = std::fs::metadata(&file).expect("size").len() as f64 / (1 << 20) as f64;
    let hook = serde_json::json!({
        "session_id": SESSION,
        "transcript_path": file,
        "cwd": wt,
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
    })
    .to_string();
    let capture = || {
        let mut c = b.grove(&wt);
        c.args(["capture", "claude", "--thread", &id]);
        c
    };
    let first = time(&mut capture(), hook.as_bytes());
    // The same first capture into another task, its peak memory measured.
    let (other, other_wt) = new_task(&b, "bench-peak");
    let mut c = b.grove(&other_wt);
    c.args(["capture", "claude", "--thread", &other]);
    let mut other_hook: serde_json::Value = serde_json::from_str(&hook).expect("hook");
    other_hook["cwd"] = other_wt.to_string_lossy().into_owned().into();
    let first_kb = peak_with_input(&c, other_hook.to_string().as_bytes());
    println!(
        "first capture of the {mb:.1} MB {} transcript ({turns} turns): {:.0} ms, peak {:.1} MiB (target <= 30 MiB)",
        if shape_1_0 { "1.0" } else { "2.1" },
        first.as_secs_f64() * 1e3,
        first_kb as f64 / 1024.0
    );
    let count = || {
        std::fs::read_to_string(wt.join(".agent/threads").join(&id).join("messages.jsonl"))
            .expect("log")
            .lines()
            .count()
    };
    let before = count();
    let version = || {
        let mut c = b.grove(&wt);
        c.arg("--version");
        c
    };
    // The same hook with turn snapshots turned off: the capture alone.
    let no_snapshots = dir.join("no-snapshots.toml");
    std::fs::write(&no_snapshots, "turn-snapshots = false\n").expect("config");
    let capture_only = || {
        let mut c = capture();
        c.env("GROVE_CONFIG", &no_snapshots);
        c
    };
    time(&mut version(), b"");
    let (mut g, mut o, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..ROUNDS {
        append_turn(&file, &mut last, turns + 2 * n);
        g.push(time(&mut capture(), hook.as_bytes()));
        append_turn(&file, &mut last, turns + 2 * n + 1);
        o.push(time(&mut capture_only(), hook.as_bytes()));
        v.push(time(&mut version(), b""));
    }
    std::thread::sleep(FOLLOW_UP);
    let added = count() - before;
    assert_eq!(added, 4 * ROUNDS, "each turn's two messages, once");
    let (g, o, v) = (median(g), median(o), median(v));
    println!(
        "capture of one turn: {:.1} ms median over {ROUNDS} rounds with its turn snapshot, \
         {:.1} ms without (target <= 20 ms); grove --version {:.1} ms",
        g.as_secs_f64() * 1e3,
        o.as_secs_f64() * 1e3,
        v.as_secs_f64() * 1e3,
    );

    // As the agents run it: the hook, then the turn written after it.
    let before = count();
    let (mut h, mut lag) = (Vec::new(), Vec::new());
    for n in 0..ROUNDS {
        h.push(time(&mut capture(), hook.as_bytes()));
        let want = before + 2 * (n + 1);
        append_turn(&file, &mut last, turns + 2 * ROUNDS + n);
        let written = Instant::now();
        // The log's length is looked at; its lines counted only when it grew.
        let log = wt.join(".agent/threads").join(&id).join("messages.jsonl");
        let mut size = 0;
        loop {
            let now = std::fs::metadata(&log).map_or(0, |m| m.len());
            if now != size {
                size = now;
                if count() >= want {
                    break;
                }
            }
            assert!(
                written.elapsed() < Duration::from_secs(10),
                "the follow-up brought round {n}'s turn"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        lag.push(written.elapsed());
    }
    std::thread::sleep(FOLLOW_UP);
    assert_eq!(
        count() - before,
        2 * ROUNDS,
        "each turn's two messages, once"
    );
    let (h, lag) = (median(h), median(lag));
    println!(
        "hook before the turn is written: {:.1} ms median; the turn in the thread {:.1} ms median after its write (promise <= 1 s)",
        h.as_secs_f64() * 1e3,
        lag.as_secs_f64() * 1e3,
    );
}
