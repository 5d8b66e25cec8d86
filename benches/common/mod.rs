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
