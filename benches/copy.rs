//! Copy benchmark: `cargo bench --bench copy`.
//!
//! A `node_modules`-like tree of about 200 MB (2,000 packages, each a few
//! directories of small and middling files, a `.bin` of links) copied by
//! `grove::copytree::copy` (what `worktreeHooks.copies` runs) and by
//! `cp -a --reflink=auto`, alternating, the source warm for both, each copy
//! removed between rounds (untimed). Ratio of medians; target <= 1.2.
//! GROVE_BENCH_SCALE shrinks the tree for a quick look.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{median, scaled};

/// Writes the tree; returns its bytes and files.
fn tree(root: &Path, packages: usize) -> (u64, u64) {
    let (mut bytes, mut files) = (0u64, 0u64);
    let small = "module.exports = function () { return 42; };\n".repeat(20);
    let middling =
        "/* a bundled library */ var x = [1, 2, 3].map(function (n) { return n * 2; });\n"
            .repeat(1200);
    let bin = root.join(".bin");
    std::fs::create_dir_all(&bin).expect("bin");
    for p in 0..packages {
        let pkg = root.join(format!("pkg-{p:05}"));
        for sub in ["lib", "dist", "types"] {
            std::fs::create_dir_all(pkg.join(sub)).expect("dir");
        }
        let mut write = |rel: String, body: &str| {
            std::fs::write(pkg.join(rel), body).expect("write");
            bytes += body.len() as u64;
            files += 1;
        };
        write(
            "package.json".into(),
            "{\"name\":\"pkg\",\"version\":\"1.0.0\"}\n",
        );
        for i in 0..4 {
            write(format!("lib/file{i}.js"), &small);
            write(format!("types/file{i}.d.ts"), &small[..200]);
        }
        write("dist/bundle.js".into(), &middling);
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            format!("../pkg-{p:05}/lib/file0.js"),
            bin.join(format!("pkg-{p:05}")),
        )
        .expect("link");
    }
    (bytes, files)
}

fn main() {
    let tmp = tempfile::Builder::new()
        .prefix("grove-bench-copy-")
        .tempdir()
        .expect("tempdir");
    let src = tmp.path().join("node_modules");
    let (bytes, files) = tree(&src, scaled(2_000));
    let mb = bytes as f64 / (1 << 20) as f64;
    let dst = tmp.path().join("copy");
    let clear = || {
        if dst.exists() {
            std::fs::remove_dir_all(&dst).expect("clear");
        }
    };
    let grove = || {
        clear();
        let start = Instant::now();
        grove::copytree::copy(&src, &dst).expect("copy");
        start.elapsed()
    };
    let cp = || {
        clear();
        let start = Instant::now();
        let ok = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(&src)
            .arg(&dst)
            .status()
            .expect("cp")
            .success();
        assert!(ok, "cp failed");
        start.elapsed()
    };
    // Warm both, and check the copy is whole.
    grove();
    let copied: usize = walk_count(&dst);
    assert_eq!(copied, walk_count(&src), "the copy has every entry");
    cp();
    let (mut g, mut c): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        g.push(grove());
        c.push(cp());
    }
    clear();
    let (g, c) = (median(g), median(c));
    println!(
        "copy of a {mb:.0} MB tree ({files} files): grove {:.0} ms, cp -a --reflink=auto {:.0} ms, ratio {:.2} (target <= 1.20)",
        g.as_secs_f64() * 1e3,
        c.as_secs_f64() * 1e3,
        g.as_secs_f64() / c.as_secs_f64()
    );
}

fn walk_count(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read").flatten() {
            n += 1;
            if e.file_type().expect("type").is_dir() {
                stack.push(e.path());
            }
        }
    }
    n
}
