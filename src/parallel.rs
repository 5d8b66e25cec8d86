//! How many threads grove's parallel walks use.

use std::sync::OnceLock;

/// The cores this process may use (its cgroup quota and affinity
/// counted), at most `max`. Asked once per process: the standard library
/// reads the cgroup files anew at each call.
pub fn workers(max: usize) -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    cores.clamp(1, max.max(1))
}
