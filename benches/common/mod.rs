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
