//! Helpers shared by the benchmarks.

#![allow(dead_code)]

pub mod claude;

use std::time::Duration;

/// GROVE_BENCH_SCALE (e.g. 0.1) shrinks the benchmarks for a quick look.
pub fn scale() -> f64 {
    std::env::var("GROVE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// `n` scaled, at least 2.
pub fn scaled(n: usize) -> usize {
    ((n as f64 * scale()) as usize).max(2)
}

/// The median of some timings.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The benchmark named on the command line, if any (`cargo bench --bench x -- list`).
pub fn wanted(name: &str) -> bool {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    only.as_deref().is_none_or(|o| name.contains(o))
}

/// One warm-up run of each, then `rounds` alternating rounds of `a` and
/// `b` (so both see the same machine state); their medians.
pub fn alternate(
    rounds: usize,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    a();
    b();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        x.push(a());
        y.push(b());
    }
    (median(x), median(y))
}

/// One line: the two medians and their ratio against the target.
pub fn report(what: &str, a: Duration, b: Duration, target: f64) {
    println!(
        "{what}: {:.2} ms vs {:.2} ms, ratio {:.2} (target <= {target:.2})",
        a.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        a.as_secs_f64() / b.as_secs_f64()
    );
}

/// Runs `cmd` with its stdout going into a pipe that is read, as a caller
/// reads it (with stdout on /dev/null GNU grep stops reading a file at its
/// first match, which would flatter it); its wall time. Stderr is dropped.
pub fn time_piped(cmd: &mut std::process::Command) -> Duration {
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    std::io::copy(&mut out, &mut std::io::sink()).expect("read");
    let status = child.wait().expect("wait");
    let elapsed = start.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    elapsed
}

/// The peak resident set of `cmd` itself, in KB: run under this benchmark
/// started again as a wrapper (`--peak-of`, see
/// [`serve_as_peak_wrapper`]), which waits for it alone and reads its
/// children's peak. Stdout goes to /dev/null.
pub fn peak(cmd: &std::process::Command) -> u64 {
    use std::process::{Command, Stdio};
    let out = Command::new(std::env::current_exe().expect("exe"))
        .arg("--peak-of")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(cmd.get_current_dir().unwrap_or(std::path::Path::new(".")))
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

/// [`peak`] of `cmd` reading `input` on its stdin (a hook's JSON).
pub fn peak_with_input(cmd: &std::process::Command, input: &[u8]) -> u64 {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .arg("--peak-of")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(cmd.get_current_dir().unwrap_or(std::path::Path::new(".")))
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wrapper");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("stdin");
    let out = child.wait_with_output().expect("wrapper");
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

/// First thing in a benchmark's `main` that uses [`peak`]: when started
/// as the wrapper, runs the command, prints `peak-kb=` and exits.
pub fn serve_as_peak_wrapper() {
    let args: Vec<String> = std::env::args().collect();
    let Some(at) = args.iter().position(|a| a == "--peak-of") else {
        return;
    };
    let status = std::process::Command::new(&args[at + 1])
        .args(&args[at + 2..])
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

/// `git args` in `dir` as a fixed person (b <b@b>), its output dropped;
/// panics when git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}
