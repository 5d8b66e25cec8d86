//! Turn snapshot benchmark: `cargo bench --bench snapshot`.
//!
//! What one snapshot costs (`grove::snapshot::take`: the private index
//! brought up to date with `git add -A`, `git write-tree`, the chain's
//! commit and compare-and-swap of its ref) in a repository of 5,000 files
//! (50 directories of 100), committed: with nothing changed (target: median
//! <= 50 ms), then with k files changed between snapshots (k = 1, 10, 100,
//! 1000: the cost should follow k, not the repository's size). Alternating
//! with it, the floor: `git add -A` + `git write-tree` of the same worktree
//! into an index of the benchmark's own, kept between rounds as grove keeps
//! its own.
//!
//! GROVE_BENCH_SCALE shrinks the repository and the rounds for a quick
//! look (CI runs it so).

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{alternate, scaled};

const TARGET_MS: f64 = 50.0;

fn git(dir: &Path, args: &[&str], index: Option<&Path>) {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .stdout(Stdio::null());
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    assert!(cmd.status().expect("git").success(), "git {args:?}");
}

/// Rewrites `k` of the repository's files (a different `k` each round).
fn change(repo: &Path, files: usize, k: usize, round: usize) {
    for i in 0..k {
        let n = (round * k + i) % files;
        let path = repo.join(format!("d{}/f{}.txt", n / 100, n % 100));
        std::fs::write(path, format!("file {n}, round {round}\n")).expect("write");
    }
}

fn main() {
    let files = scaled(5000).max(100) / 100 * 100;
    let rounds = scaled(21).max(3);
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("repo");
    for d in 0..files / 100 {
        let dir = repo.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let n = d * 100 + f;
            std::fs::write(dir.join(format!("f{f}.txt")), format!("file {n}\n")).expect("write");
        }
    }
    git(&repo, &["init", "-q"], None);
    git(&repo, &["add", "-A"], None);
    git(&repo, &["commit", "-q", "-m", "files"], None);
    let meta = grove::threads::new_meta("bench", "bench", Default::default());
    let thread = grove::store::Store::for_project(&repo)
        .create_thread(&meta)
        .expect("thread");
    let moment = grove::snapshot::Moment::default();
    let floor_index = tmp.path().join("floor.index");

    let round = std::cell::Cell::new(0);
    for k in [0, 1, 10, 100, 1000] {
        if k > files {
            continue;
        }
        // Each run changes its own k files since the one before.
        let changed = || {
            round.set(round.get() + 1);
            change(&repo, files, k, round.get());
        };
        let (ours, floor) = alternate(
            rounds,
            || {
                changed();
                let start = Instant::now();
                grove::snapshot::take(&repo, &thread, grove::snapshot::At::ToolCall, &moment)
                    .expect("snapshot");
                start.elapsed()
            },
            || {
                changed();
                let start = Instant::now();
                let index = Some(floor_index.as_path());
                git(&repo, &["add", "-A"], index);
                git(&repo, &["write-tree"], index);
                start.elapsed()
            },
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let target = if k == 0 {
            format!(" (target <= {TARGET_MS:.0} ms)")
        } else {
            String::new()
        };
        println!(
            "snapshot of {files} files, {k} changed: {:.1} ms{target}; git add -A + write-tree: {:.1} ms",
            ms(ours),
            ms(floor)
        );
    }
}
