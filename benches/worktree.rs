//! Worktree benchmarks: `cargo bench --bench worktree`.
//!
//! - `grove new --no-hooks` against plain `git worktree add -b` on a
//!   generated repository of 5,000 files, alternating in one run: ratio of medians.
//! - `grove list --json` with 100 worktrees × 10 threads, warm.
//!
//! GROVE_BENCH_SCALE (e.g. 0.2) shrinks the sizes for a quick look.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grove::store::Store;

mod common;
use common::{median, scaled, wanted};

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
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    fn git(&self, dir: &Path, args: &[&str]) {
        let status = self.cmd("git", dir).args(args).status().expect("git");
        assert!(status.success(), "git {args:?}");
    }

    fn time(&self, mut cmd: Command) -> Duration {
        let start = Instant::now();
        let status = cmd.status().expect("run");
        let elapsed = start.elapsed();
        assert!(status.success(), "{cmd:?}");
        elapsed
    }
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
    let files = scaled(5_000);
    let repo = make_repo(env, "big", files);
    let rounds = 11;
    let (mut grove_t, mut git_t) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let mut grove = env.cmd(GROVE, &repo);
        grove.args(["new", "--no-hooks", &format!("bench {i}")]);
        grove_t.push(env.time(grove));
        let dir = env.root.join(format!("plain-{i}"));
        let mut git = env.cmd("git", &repo);
        git.args([
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("plain-{i}"),
            dir.to_str().expect("utf-8"),
            "HEAD",
        ]);
        git_t.push(env.time(git));
    }
    let (g, p) = (median(grove_t), median(git_t));
    println!(
        "new --no-hooks on {files} files: grove {:.1} ms, git worktree add -b {:.1} ms, ratio {:.2} (target <= 1.10)",
        g.as_secs_f64() * 1e3,
        p.as_secs_f64() * 1e3,
        g.as_secs_f64() / p.as_secs_f64()
    );
}

fn bench_list(env: &Env) {
    let worktrees = scaled(100);
    let repo = make_repo(env, "many", 20);
    for i in 0..worktrees {
        let out = env
            .cmd(GROVE, &repo)
            .args(["new", "--no-hooks", &format!("task {i}")])
            .stdout(Stdio::piped())
            .output()
            .expect("grove new");
        assert!(out.status.success());
        let wt = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end());
        let store = Store::for_project(&wt);
        for j in 0..9 {
            let meta =
                grove::threads::new_meta(&format!("sub {i}.{j}"), "bench", Default::default());
            store.create_thread(&meta).expect("thread");
        }
    }
    let mut list = env.cmd(GROVE, &repo);
    list.args(["list", "--json"]);
    env.time(list);
    let times: Vec<_> = (0..7)
        .map(|_| {
            let mut list = env.cmd(GROVE, &repo);
            list.args(["list", "--json"]);
            env.time(list)
        })
        .collect();
    println!(
        "list --json with {worktrees} worktrees x 10 threads: {:.1} ms warm (target < 100 ms)",
        median(times).as_secs_f64() * 1e3
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
}
