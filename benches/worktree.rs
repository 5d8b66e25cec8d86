//! Worktree benchmarks: `cargo bench --bench worktree`.
//!
//! - `grove new --no-hooks` against plain `git worktree add -b` on a
//!   generated repository of 20 files (target <= 1.3x) and of 5,000 files
//!   (target <= 1.03x), alternating in one run: ratio of medians.
//! - `grove list --json` with 100 worktrees × 10 threads, warm; half the
//!   branches have a commit of their own (not merged), a tenth of those
//!   squash-merged, so the integration checks run. With
//!   `GROVE_BENCH_BASELINE=<another grove binary>` (say, the last release's)
//!   the two alternate on the same data: ratio of medians.
//! - `grove fork` of a thread with a 50 MB `messages.jsonl` in a worktree of
//!   5,000 files (one modified and one untracked file carried), against
//!   `git worktree add -b` plus `cp` of the messages file, alternating.
//!
//! - statuses: `grove list --json` over 100 task worktrees of a 5,000-file
//!   repository against a serial `git status --porcelain` loop over the
//!   same worktrees (target <= 0.6x) and, when `wt` (worktrunk) is on the
//!   PATH or named by GROVE_BENCH_WT, `wt list` (target <= 0.5x); CPU
//!   (user + system of the children) per worktree against git's.
//! - rm: the fixed cost on a 20-file repository, `grove rm` against `git
//!   worktree remove` + `git branch -D` (target <= 1.2x); on a 5,000-file
//!   worktree, `grove rm --force --foreground` against `wt remove
//!   --foreground` when worktrunk is there (target <= 1.0x), and `grove rm
//!   --force --background` against `git worktree remove --force` (target
//!   <= 0.5x; each round waits, untimed, for the background delete to end).
//! - start-up: `grove list --json` in a repository with one commit and
//!   no thread, against `git status` there (target <= 1.5x), 300
//!   alternating rounds, medians.
//!
//! Each timed command starts after an untimed `sync`, so none pays for the
//! writes another left behind.
//!
//! GROVE_BENCH_SCALE (e.g. 0.2) shrinks the sizes for a quick look.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grove::store::Store;

mod common;
use common::{alternate, median, report, scaled, wanted};

const GROVE: &str = env!("CARGO_BIN_EXE_grove");

struct Env {
    root: PathBuf,
}

impl Env {
    fn cmd(&self, program: &str, dir: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(dir)
            .env("GROVE_HOME", self.root.join("grove-home"))
            .env("GIT_CONFIG_GLOBAL", self.root.join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // The agents' own directories, which list looks at for sessions
            // run by hand: the benchmark's, never the machine's.
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("CODEX_HOME", self.root.join("codex"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    fn git(&self, dir: &Path, args: &[&str]) {
        let status = self.cmd("git", dir).args(args).status().expect("git");
        assert!(status.success(), "git {args:?}");
    }

    fn time(&self, mut cmd: Command) -> Duration {
        settle();
        let start = Instant::now();
        let status = cmd.status().expect("run");
        let elapsed = start.elapsed();
        assert!(status.success(), "{cmd:?}");
        elapsed
    }
}

/// Writes back, untimed, what earlier commands left for the disk: each
/// timed command starts from the same clean state instead of paying for
/// the other's writes (a checkout git leaves unsynced is otherwise flushed
/// by grove's next fsync, or slows the next checkout), as hyperfine's
/// `--prepare sync` does.
fn settle() {
    nix::unistd::sync();
}

fn make_repo(env: &Env, name: &str, files: usize) -> PathBuf {
    let repo = env.root.join(name);
    std::fs::create_dir_all(&repo).expect("mkdir");
    env.git(&repo, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let dir = repo.join(format!("src/mod{}", i / 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join(format!("file{i}.rs")),
            format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(20),
        )
        .expect("write");
    }
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-q", "-m", "generated"]);
    repo
}

fn bench_new(env: &Env) {
    // The fixed cost on a small repository, then a large one where git's
    // checkout is most of the work.
    for (files, target) in [(20, 1.3), (scaled(5_000), 1.03)] {
        let repo = make_repo(env, &format!("new-{files}"), files);
        let n = std::cell::Cell::new(0);
        let next = || {
            n.set(n.get() + 1);
            n.get()
        };
        let (g, p) = alternate(
            scaled(21).max(5),
            || {
                let mut grove = env.cmd(GROVE, &repo);
                grove.args(["new", "--no-hooks", &format!("bench {}", next())]);
                env.time(grove)
            },
            || {
                let n = next();
                let dir = env.root.join(format!("plain-{files}-{n}"));
                let mut git = env.cmd("git", &repo);
                git.args([
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    &format!("plain-{n}"),
                    dir.to_str().expect("utf-8"),
                    "HEAD",
                ]);
                env.time(git)
            },
        );
        report(
            &format!("new --no-hooks, {files} files: grove new vs git worktree add -b"),
            g,
            p,
            target,
        );
    }
}

fn bench_list(env: &Env) {
    let worktrees = scaled(100);
    let repo = make_repo(env, "many", 20);
    other_codex_sessions(env, 200);
    for i in 0..worktrees {
        // Tasks of both agents: list looks for sessions run by hand in
        // each task's worktree.
        let agent = if i % 2 == 0 { "claude-code" } else { "codex" };
        let out = env
            .cmd(GROVE, &repo)
            .args([
                "new",
                "--no-hooks",
                "--json",
                "--agent",
                agent,
                &format!("task {i}"),
            ])
            .stdout(Stdio::piped())
            .output()
            .expect("grove new");
        assert!(out.status.success());
        let made: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let wt = PathBuf::from(made["worktreePath"].as_str().expect("path"));
        if i % 2 == 1 {
            std::fs::write(wt.join(format!("work{i}.txt")), "work\n").expect("work");
            env.git(&wt, &["add", "."]);
            env.git(&wt, &["commit", "-q", "-m", &format!("work {i}")]);
            if i % 10 == 1 {
                let branch = made["branch"].as_str().expect("branch");
                env.git(&repo, &["merge", "-q", "--squash", branch]);
                env.git(&repo, &["commit", "-q", "-m", &format!("squash {i}")]);
            }
        }
        let store = Store::for_project(&wt);
        for j in 0..9 {
            let meta =
                grove::threads::new_meta(&format!("sub {i}.{j}"), "bench", Default::default());
            store.create_thread(&meta).expect("thread");
        }
    }
    let baseline = std::env::var("GROVE_BENCH_BASELINE").ok();
    let list = |bin: &str| {
        let mut list = env.cmd(bin, &repo);
        list.args(["list", "--json"]);
        env.time(list)
    };
    list(GROVE);
    if let Some(b) = &baseline {
        list(b);
    }
    let (mut g, mut b) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        g.push(list(GROVE));
        if let Some(bin) = &baseline {
            b.push(list(bin));
        }
    }
    let g = median(g);
    println!(
        "list --json with {worktrees} worktrees x 10 threads: {:.1} ms warm (target < 100 ms)",
        g.as_secs_f64() * 1e3
    );
    if !b.is_empty() {
        let b = median(b);
        println!(
            "  baseline {}: {:.1} ms, ratio {:.2}",
            baseline.unwrap_or_default(),
            b.as_secs_f64() * 1e3,
            g.as_secs_f64() / b.as_secs_f64()
        );
    }
}

/// `n` Codex rollouts of another project in today's day directory, as a
/// machine where Codex is used elsewhere has them (a first line as Codex
/// writes it, with its instructions, then a little more).
fn other_codex_sessions(env: &Env, n: usize) {
    let day = jiff::Zoned::now().strftime("%Y/%m/%d").to_string();
    let dir = env.root.join("codex/sessions").join(day);
    std::fs::create_dir_all(&dir).expect("codex sessions");
    let instructions = "You are Codex. ".repeat(1000);
    for i in 0..n {
        let id = format!("019a0000-0000-7000-8000-{i:012}");
        let meta = serde_json::json!({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": id, "cwd": "/elsewhere/project", "cli_version": "0.169.0",
                        "base_instructions": {"text": instructions}}});
        std::fs::write(
            dir.join(format!("rollout-2026-01-01T00-00-00-{id}.jsonl")),
            format!(
                "{meta}\n{}\n",
                r#"{"type":"event_msg","payload":{"type":"task_started"}}"#
            ),
        )
        .expect("rollout");
    }
}

/// Fills `thread_dir/messages.jsonl` with about `bytes` of realistic messages.
fn fill_log(thread_dir: &Path, bytes: usize) {
    use std::io::Write;
    let path = thread_dir.join("messages.jsonl");
    let mut out = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open log"),
    );
    let body = "Let me look at the failing test and the code it exercises. ".repeat(30);
    let mut written = 0;
    let mut i = 0u64;
    while written < bytes {
        let line = serde_json::json!({
            "id": format!("m{i}"),
            "role": if i.is_multiple_of(2) { "user" } else { "agent" },
            "timestamp": "2025-03-01T10:00:00.000Z",
            "content": [{"type": "text", "text": format!("{i}: {body}")}],
            "toolCalls": [{"toolCallId": format!("t{i}"), "name": "read_file",
                "status": "completed", "input": "{\"path\":\"src/lib.rs\"}",
                "output": body}],
        })
        .to_string();
        writeln!(out, "{line}").expect("write");
        written += line.len() + 1;
        i += 1;
    }
    out.flush().expect("flush");
}

fn bench_fork(env: &Env) {
    let files = scaled(5_000);
    let log_bytes = scaled(50 << 20);
    let repo = make_repo(env, "forked", files);
    let out = env
        .cmd(GROVE, &repo)
        .args(["new", "--no-hooks", "parent", "--json"])
        .stdout(Stdio::piped())
        .output()
        .expect("grove new");
    assert!(out.status.success());
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = created["threadId"].as_str().expect("id").to_string();
    let wt = PathBuf::from(created["worktreePath"].as_str().expect("path"));
    let thread_dir = PathBuf::from(created["threadDir"].as_str().expect("dir"));
    fill_log(&thread_dir, log_bytes);
    let mut repair = env.cmd(GROVE, &wt);
    repair.args(["repair", &id]);
    env.time(repair);
    std::fs::write(wt.join("src/mod0/file0.rs"), "changed\n").expect("modify");
    std::fs::write(wt.join("notes.md"), "untracked\n").expect("untracked");
    // A worktree in use has an index newer than its files (any `git status`
    // or commit refreshes it). Right after checkout every entry is "racily
    // clean" and each read-only status would re-read all 5,000 files.
    std::thread::sleep(Duration::from_millis(1100));
    env.git(&wt, &["status", "--short"]);
    let log = thread_dir.join("messages.jsonl");
    let log_mb = std::fs::metadata(&log).expect("log").len() as f64 / (1 << 20) as f64;

    let rounds = 9;
    let (mut grove_t, mut base_t) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let mut fork = env.cmd(GROVE, &wt);
        fork.args(["fork", &id, "--no-hooks"]);
        grove_t.push(env.time(fork));
        let dir = env.root.join(format!("fork-plain-{i}"));
        let mut git = env.cmd("git", &wt);
        git.args([
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("fork-plain-{i}"),
            dir.to_str().expect("utf-8"),
            "HEAD",
        ]);
        let mut cp = env.cmd("cp", &wt);
        cp.arg(&log).arg(dir.join("messages.jsonl"));
        base_t.push(env.time(git) + env.time(cp));
    }
    let (g, b) = (median(grove_t), median(base_t));
    println!(
        "fork of a {log_mb:.0} MB thread, {files}-file worktree: grove {:.1} ms, git worktree add + cp {:.1} ms, ratio {:.2} (target <= 1.20)",
        g.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        g.as_secs_f64() / b.as_secs_f64()
    );
}

/// Statuses of many real-size worktrees: grove's list against the loop a
/// script would write and against worktrunk's list.
fn bench_status(env: &Env) {
    let (files, worktrees) = (scaled(5_000), scaled(100));
    let repo = make_repo(env, "statuses", files);
    let mut paths = Vec::new();
    for i in 0..worktrees {
        let out = env
            .cmd(GROVE, &repo)
            .args(["new", "--no-hooks", &format!("status {i}")])
            .stdout(Stdio::piped())
            .output()
            .expect("grove new");
        assert!(out.status.success());
        paths.push(PathBuf::from(
            String::from_utf8_lossy(&out.stdout).trim_end(),
        ));
    }
    let timed = |cmd: &mut Command| {
        let before = children_cpu();
        let start = Instant::now();
        let out = cmd.stdout(Stdio::piped()).output().expect("run");
        let wall = start.elapsed();
        assert!(out.status.success(), "{cmd:?}");
        (wall, children_cpu() - before)
    };
    let grove = || timed(env.cmd(GROVE, &repo).args(["list", "--json"]));
    let git_loop = || {
        let (mut wall, mut cpu) = (Duration::ZERO, Duration::ZERO);
        for wt in &paths {
            let (w, c) = timed(env.cmd("git", wt).args(["status", "--porcelain"]));
            wall += w;
            cpu += c;
        }
        (wall, cpu)
    };
    // Warm: every index refreshed by git once, the same for both.
    git_loop();
    let (mut grove_cpu, mut git_cpu) = (Vec::new(), Vec::new());
    let (g, l) = alternate(
        7,
        || {
            let (wall, cpu) = grove();
            grove_cpu.push(cpu);
            wall
        },
        || {
            let (wall, cpu) = git_loop();
            git_cpu.push(cpu);
            wall
        },
    );
    let what = format!("list --json, {worktrees} worktrees of {files} files");
    report(&format!("{what} vs serial git status loop"), g, l, 0.6);
    let per = |cpu: Vec<Duration>| median(cpu).as_secs_f64() * 1e3 / worktrees as f64;
    println!(
        "  CPU per worktree: grove {:.2} ms, git status {:.2} ms (target: grove <= git)",
        per(grove_cpu),
        per(git_cpu)
    );
    let wt = worktrunk();
    if let Some(wt) = wt {
        let (g, w) = alternate(
            7,
            || grove().0,
            || timed(env.cmd(wt.to_str().expect("utf-8"), &repo).arg("list")).0,
        );
        report(&format!("{what} vs wt list"), g, w, 0.5);
    } else {
        println!("  wt (worktrunk) not found: set GROVE_BENCH_WT to compare with `wt list`");
    }
}

/// worktrunk's `wt`: GROVE_BENCH_WT, else the one on the PATH.
fn worktrunk() -> Option<PathBuf> {
    std::env::var_os("GROVE_BENCH_WT")
        .map(PathBuf::from)
        .or_else(|| which::which("wt").ok())
}

/// User + system time of every child waited for so far.
fn children_cpu() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    tv(usage.user_time()) + tv(usage.system_time())
}

/// A task made by grove for `rm` to remove: (thread id, worktree, branch).
fn grove_task(env: &Env, repo: &Path) -> (String, PathBuf, String) {
    let out = env
        .cmd(GROVE, repo)
        .args(["new", "--no-hooks", "--json", "rm me"])
        .stdout(Stdio::piped())
        .output()
        .expect("grove new");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let wt = PathBuf::from(v["worktreePath"].as_str().expect("path"));
    let branch = v["branch"].as_str().expect("branch").to_string();
    (v["threadId"].as_str().expect("id").to_string(), wt, branch)
}

/// Waits (untimed) until no trash directory is left beside `wt`.
fn trash_gone(wt: &Path) {
    let area = wt.parent().expect("parent");
    let start = Instant::now();
    while std::fs::read_dir(area).expect("area").flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with(grove::trash::TRASH_PREFIX)
    }) {
        assert!(start.elapsed() < Duration::from_secs(60), "trash left");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn bench_rm(env: &Env) {
    let small = make_repo(env, "rm-small", 20);
    let mut n = 0;
    let (g, p) = alternate(
        scaled(15).max(3),
        || {
            let (id, _, _) = grove_task(env, &small);
            let mut rm = env.cmd(GROVE, &small);
            rm.args(["rm", "--foreground", &id]);
            env.time(rm)
        },
        || {
            n += 1;
            let dir = env.root.join(format!("rm-plain-{n}"));
            let branch = format!("plain-{n}");
            env.git(
                &small,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    &branch,
                    dir.to_str().expect("utf-8"),
                ],
            );
            settle();
            let start = Instant::now();
            env.git(
                &small,
                &["worktree", "remove", dir.to_str().expect("utf-8")],
            );
            env.git(&small, &["branch", "-D", "-q", &branch]);
            start.elapsed()
        },
    );
    report(
        "rm, 20 files: grove rm vs git worktree remove + git branch -D",
        g,
        p,
        1.2,
    );

    let files = scaled(5_000);
    let big = make_repo(env, "rm-big", files);
    let rounds = scaled(7).max(3);
    let (g, p) = alternate(
        rounds,
        || {
            let (id, wt, _) = grove_task(env, &big);
            let mut rm = env.cmd(GROVE, &big);
            rm.args(["rm", "--force", "--background", &id]);
            let t = env.time(rm);
            trash_gone(&wt);
            t
        },
        || {
            n += 1;
            let dir = env.root.join(format!("rm-plain-{n}"));
            env.git(
                &big,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "--detach",
                    dir.to_str().expect("utf-8"),
                ],
            );
            let mut rm = env.cmd("git", &big);
            rm.args([
                "worktree",
                "remove",
                "--force",
                dir.to_str().expect("utf-8"),
            ]);
            env.time(rm)
        },
    );
    report(
        &format!("rm, {files} files: grove rm --force --background vs git worktree remove --force"),
        g,
        p,
        0.5,
    );
    let wt = worktrunk();
    let Some(wt) = wt else {
        println!("  wt (worktrunk) not found: set GROVE_BENCH_WT to compare with `wt remove`");
        return;
    };
    let (g, w) = alternate(
        rounds,
        || {
            let (id, _, _) = grove_task(env, &big);
            let mut rm = env.cmd(GROVE, &big);
            rm.args(["rm", "--force", "--foreground", &id]);
            env.time(rm)
        },
        || {
            let (_, _, branch) = grove_task(env, &big);
            let mut rm = env.cmd(wt.to_str().expect("utf-8"), &big);
            rm.args([
                "remove",
                "--foreground",
                "--force",
                "-D",
                "--no-hooks",
                &branch,
            ]);
            env.time(rm)
        },
    );
    report(
        &format!("rm, {files} files: grove rm --force --foreground vs wt remove --foreground"),
        g,
        w,
        1.0,
    );
}

/// What grove costs before any work: `list --json` with nothing to list.
fn bench_startup(env: &Env) {
    let repo = make_repo(env, "empty", 1);
    let run = |program: &str, args: &[&str]| {
        let mut cmd = env.cmd(program, &repo);
        cmd.args(args);
        env.time(cmd)
    };
    let (g, s) = alternate(
        scaled(300),
        || run(GROVE, &["list", "--json"]),
        || run("git", &["status"]),
    );
    report(
        "start-up: grove list --json vs git status, repository with no thread",
        g,
        s,
        1.5,
    );
}

fn main() {
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-")
        .tempdir()
        .expect("tempdir");
    let env = Env {
        root: tmp.path().to_path_buf(),
    };
    std::fs::write(
        env.root.join("gitconfig"),
        "[user]\n\tname = Bench\n\temail = bench@grove.invalid\n",
    )
    .expect("gitconfig");
    if wanted("new") {
        bench_new(&env);
    }
    if wanted("list") {
        bench_list(&env);
    }
    if wanted("fork") {
        bench_fork(&env);
    }
    if wanted("status") {
        bench_status(&env);
    }
    if wanted("rm") {
        bench_rm(&env);
    }
    if wanted("startup") {
        bench_startup(&env);
    }
}
