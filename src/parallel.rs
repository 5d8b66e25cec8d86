//! How many threads grove's parallel walks use, and the one way they share
//! out work.
//!
//! Every walk (search, statuses, the store, copying and deleting trees)
//! runs on as many threads as this process may use: its cgroup quota and
//! CPU affinity counted, no fixed cap, `-j`/`GROVE_JOBS` over both (work
//! that waits on the disk, deleting a tree, on at least 8). Work is
//! handed out one job at a time from a shared counter, so a worker that
//! drew small jobs takes more and every core stays busy until the end
//! (static chunks leave cores idle behind the one chunk of large jobs).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable that sets the number of threads (`0` or unset:
/// one per available core).
pub const JOBS_ENV: &str = "GROVE_JOBS";

static CHOSEN: OnceLock<usize> = OnceLock::new();
static CORES: OnceLock<usize> = OnceLock::new();

/// Sets the number of threads for this process, over [`JOBS_ENV`] and the
/// cores; `0` means one per core. Only the first call counts: it is meant
/// for the program's start.
pub fn set_jobs(jobs: usize) {
    if jobs > 0 {
        let _ = CHOSEN.set(jobs);
    }
}

/// Reads [`JOBS_ENV`]: `Ok(None)` when unset, empty or `0`.
pub fn jobs_from_env() -> Result<Option<usize>, String> {
    let Some(value) = std::env::var_os(JOBS_ENV) else {
        return Ok(None);
    };
    let text = value.to_string_lossy();
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(n) => Ok(Some(n)),
        Err(_) => Err(format!(
            "{JOBS_ENV}={text:?} is not a number of threads: set it to 1 or more, or 0 for one per core"
        )),
    }
}

/// The threads a parallel walk uses: what [`set_jobs`] chose, else the
/// cores this process may use. The cores are asked once per process: the
/// standard library reads the cgroup files anew at each call.
pub fn workers() -> usize {
    if let Some(&chosen) = CHOSEN.get() {
        return chosen;
    }
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// `work` over every job on [`workers`] threads, each taking the next job
/// as it finishes one; the results in the jobs' order. `init` makes each
/// thread's own state (an open repository, a buffer) once. Fewer than
/// `serial_below` jobs run on this thread: a thread costs more than they do.
pub fn map_with<J, R, S>(
    jobs: &[J],
    serial_below: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &J) -> R + Sync,
) -> Vec<R>
where
    J: Sync,
    R: Send,
{
    map_on(workers(), jobs, serial_below, init, work)
}

/// The fewest threads for work that waits on the filesystem more than on a
/// core: an unlink blocks on its directory and the journal, and with more
/// threads than cores the disk always has the next one (a 5,000-file tree
/// on 2 cores: 215 ms with 2 threads, 136 ms with 8).
const IO_FLOOR: usize = 8;

/// Threads for such work: `-j`/`GROVE_JOBS` when given, else one per core
/// and at least [`IO_FLOOR`].
pub fn io_workers() -> usize {
    match CHOSEN.get() {
        Some(&chosen) => chosen,
        None => workers().max(IO_FLOOR),
    }
}

/// [`map`] on [`io_workers`] threads: for deleting (or otherwise waiting
/// on) many files.
pub fn map_io<J, R>(jobs: &[J], serial_below: usize, work: impl Fn(&J) -> R + Sync) -> Vec<R>
where
    J: Sync,
    R: Send,
{
    map_on(io_workers(), jobs, serial_below, || (), |_, job| work(job))
}

fn map_on<J, R, S>(
    threads: usize,
    jobs: &[J],
    serial_below: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &J) -> R + Sync,
) -> Vec<R>
where
    J: Sync,
    R: Send,
{
    let threads = threads.min(jobs.len());
    if threads < 2 || jobs.len() < serial_below {
        let mut state = init();
        return jobs.iter().map(|job| work(&mut state, job)).collect();
    }
    let next = AtomicUsize::new(0);
    let parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (next, init, work) = (&next, &init, &work);
                scope.spawn(move || {
                    let mut state = init();
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, work(&mut state, job)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    in_order(jobs.len(), parts)
}

/// [`map_with`] without per-thread state.
pub fn map<J, R>(jobs: &[J], serial_below: usize, work: impl Fn(&J) -> R + Sync) -> Vec<R>
where
    J: Sync,
    R: Send,
{
    map_with(jobs, serial_below, || (), |_, job| work(job))
}

/// Puts each worker's `(index, result)` pairs back in index order without
/// sorting: every index below `len` occurs exactly once.
fn in_order<R>(len: usize, parts: Vec<Vec<(usize, R)>>) -> Vec<R> {
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(len).collect();
    for (i, result) in parts.into_iter().flatten() {
        slots[i] = Some(result);
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_the_jobs_order_whatever_finishes_first() {
        let jobs: Vec<u64> = (0..500).collect();
        // Early jobs are slow, so later ones finish first.
        let out = map(&jobs, 0, |&j| {
            if j < 4 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            j * 2
        });
        assert_eq!(out, jobs.iter().map(|j| j * 2).collect::<Vec<_>>());
    }

    #[test]
    fn each_thread_makes_its_state_once_and_every_job_runs_once() {
        let inits = AtomicUsize::new(0);
        let jobs: Vec<usize> = (0..1000).collect();
        let out = map_with(
            &jobs,
            0,
            || {
                inits.fetch_add(1, Ordering::Relaxed);
                0usize
            },
            |seen, &j| {
                *seen += 1;
                j
            },
        );
        assert_eq!(out, jobs);
        let inits = inits.load(Ordering::Relaxed);
        assert!(
            (1..=workers().max(1)).contains(&inits),
            "{inits} states for {} workers",
            workers()
        );
    }

    #[test]
    fn waiting_work_runs_on_more_threads_than_cores() {
        // Jobs that wait (as unlinks do) each hold a thread: with no `-j`
        // given, at least IO_FLOOR of them wait side by side.
        let jobs: Vec<u64> = (0..32).collect();
        let ids = map_io(&jobs, 0, |_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::thread::current().id()
        });
        let distinct: std::collections::HashSet<_> = ids.into_iter().collect();
        assert!(io_workers() >= IO_FLOOR.max(workers()));
        assert!(distinct.len() >= IO_FLOOR, "{} threads", distinct.len());
    }

    #[test]
    fn few_jobs_run_here() {
        let here = std::thread::current().id();
        let out = map(&[1, 2, 3], 64, |_| std::thread::current().id() == here);
        assert_eq!(out, vec![true, true, true]);
    }
}
