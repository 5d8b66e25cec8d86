//! Searching threads on every core while handing their results on in the
//! threads' order, holding back a bounded amount.
//!
//! Workers take threads in order. The worker on the first unfinished
//! thread (the front) hands its results straight to the sink; the others
//! keep theirs until their turn. Once more than `LIMITS.held_back` bytes wait,
//! a worker ahead of the front pauses, so memory stays flat however many
//! hits a search has.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Event, Query, scan_thread};
use crate::store::Thread;

/// How much may wait (bytes, roughly), and in what batches it moves.
#[derive(Clone, Copy)]
struct Limits {
    /// Results waiting for their turn, all workers together.
    held_back: usize,
    /// A worker hands its results on in batches of about this size.
    batch: usize,
}

const LIMITS: Limits = Limits {
    held_back: 16 << 20,
    batch: 256 << 10,
};

/// Searches `threads` on every core; `sink` gets each thread's events in
/// the order of `threads` (thread by thread, each ending with
/// [`Event::Done`]), from one worker at a time. The first error `sink`
/// returns stops the search and is returned.
pub fn search_in_order<S>(threads: &[Thread], query: &Query, sink: S) -> std::io::Result<()>
where
    S: FnMut(usize, Event) -> std::io::Result<()> + Send,
{
    search_within(threads, query, LIMITS, sink)
}

fn search_within<S>(
    threads: &[Thread],
    query: &Query,
    limits: Limits,
    sink: S,
) -> std::io::Result<()>
where
    S: FnMut(usize, Event) -> std::io::Result<()> + Send,
{
    let workers = crate::parallel::workers().min(threads.len().max(1));
    let shared = Shared {
        state: Mutex::new(State {
            sink,
            front: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            error: None,
        }),
        turn: Condvar::new(),
        next: AtomicUsize::new(0),
        limits,
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| shared.work(threads, query));
        }
    });
    let state = shared.state.into_inner().unwrap_or_else(|p| p.into_inner());
    state.error.map_or(Ok(()), Err)
}

struct Shared<S> {
    state: Mutex<State<S>>,
    /// Signalled whenever the front moves or held results are written.
    turn: Condvar,
    next: AtomicUsize,
    limits: Limits,
}

struct State<S> {
    sink: S,
    /// The first thread whose results are not all delivered.
    front: usize,
    held: BTreeMap<usize, Held>,
    held_bytes: usize,
    error: Option<std::io::Error>,
}

#[derive(Default)]
struct Held {
    events: Vec<Event>,
    bytes: usize,
    done: bool,
}

/// A worker's results not yet handed on.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    bytes: usize,
}

impl Batch {
    fn push(&mut self, event: Event) {
        self.bytes += event.size();
        self.events.push(event);
    }
}

impl<S: FnMut(usize, Event) -> std::io::Result<()>> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, State<S>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn work(&self, threads: &[Thread], query: &Query) {
        loop {
            {
                let mut state = self.lock();
                while state.held_bytes > self.limits.held_back && state.error.is_none() {
                    state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                if state.error.is_some() {
                    return;
                }
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(thread) = threads.get(i) else { return };
            let mut batch = Batch::default();
            let result = scan_thread(thread, query, &mut |event| {
                batch.push(event);
                batch.bytes < self.limits.batch || self.hand_on(i, &mut batch, false)
            });
            if let Err(e) = result {
                batch.push(Event::Failed(e));
            }
            batch.push(Event::Done);
            self.hand_on(i, &mut batch, true);
        }
    }

    /// Delivers or holds `batch`; false when the search is to stop. A
    /// worker ahead of the front waits here while too much is held.
    fn hand_on(&self, i: usize, batch: &mut Batch, done: bool) -> bool {
        let batch = std::mem::take(batch);
        let mut state = self.lock();
        state.take(i, batch, done);
        self.turn.notify_all();
        while !done
            && state.front != i
            && state.held_bytes > self.limits.held_back
            && state.error.is_none()
        {
            state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.error.is_none()
    }
}

impl<S: FnMut(usize, Event) -> std::io::Result<()>> State<S> {
    fn take(&mut self, i: usize, batch: Batch, done: bool) {
        if self.error.is_some() {
            return;
        }
        if i != self.front {
            let held = self.held.entry(i).or_default();
            held.events.extend(batch.events);
            held.bytes += batch.bytes;
            held.done |= done;
            self.held_bytes += batch.bytes;
            return;
        }
        self.deliver(i, batch.events);
        if done {
            self.front += 1;
            self.deliver_held();
        }
    }

    /// Delivers what the threads now at the front had waiting.
    fn deliver_held(&mut self) {
        while let Some(held) = self.held.remove(&self.front) {
            self.held_bytes -= held.bytes;
            self.deliver(self.front, held.events);
            if !held.done {
                break; // its worker goes on delivering directly
            }
            self.front += 1;
        }
    }

    fn deliver(&mut self, i: usize, events: Vec<Event>) {
        for event in events {
            if let Err(e) = (self.sink)(i, event) {
                self.error = Some(e);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// Threads whose logs hold 0 to a few hundred hits each.
    fn threads(dir: &std::path::Path, count: usize) -> (Vec<Thread>, Vec<usize>) {
        let store = Store::for_project(dir);
        let mut expected = Vec::new();
        let threads = (0..count)
            .map(|t| {
                let meta = crate::threads::new_meta(&format!("t{t}"), "test", Default::default());
                let thread = store.create_thread(&meta).expect("thread");
                let hits = (t * 37) % 300;
                let mut log = String::new();
                for i in 0..hits + 50 {
                    let text = if i < hits { "needle here" } else { "hay" };
                    log.push_str(&format!(
                        r#"{{"id":"m{i}","role":"user","timestamp":"2025-03-01T10:00:00.000Z","content":[{{"type":"text","text":"{text} {i}"}}]}}"#
                    ));
                    log.push('\n');
                }
                std::fs::write(thread.messages_path(), log).expect("log");
                expected.push(hits);
                thread
            })
            .collect();
        (threads, expected)
    }

    #[test]
    fn results_come_thread_by_thread_in_order_even_when_held_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (threads, expected) = threads(dir.path(), 24);
        let query = Query::new("needle", false, false, None).expect("query");
        // Tiny limits: workers ahead of the front must wait for it.
        let limits = Limits {
            held_back: 2 << 10,
            batch: 512,
        };
        let mut seen: Vec<(usize, usize)> = Vec::new(); // (thread, hits) as delivered
        search_within(&threads, &query, limits, |i, event| {
            match event {
                Event::Hit(hit) => {
                    assert!(hit.line.starts_with("needle"));
                    match seen.last_mut() {
                        Some((t, n)) if *t == i => *n += 1,
                        _ => seen.push((i, 1)),
                    }
                }
                Event::Done => {
                    if seen.last().is_none_or(|(t, _)| *t != i) {
                        seen.push((i, 0));
                    }
                    seen.push((usize::MAX, i)); // end mark
                }
                other => panic!("unexpected {other:?}"),
            }
            Ok(())
        })
        .expect("search");
        let mut want = Vec::new();
        for (i, hits) in expected.into_iter().enumerate() {
            want.push((i, hits));
            want.push((usize::MAX, i));
        }
        assert_eq!(seen, want);
    }

    #[test]
    fn the_sinks_first_error_stops_the_search() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (threads, _) = threads(dir.path(), 12);
        let query = Query::new("needle", false, false, None).expect("query");
        let mut calls = 0;
        let limits = Limits {
            held_back: 1 << 10,
            batch: 256,
        };
        let result = search_within(&threads, &query, limits, |_, _| {
            calls += 1;
            if calls == 5 {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            Ok(())
        });
        assert_eq!(
            result.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::BrokenPipe)
        );
        assert_eq!(calls, 5, "nothing is delivered after the error");
    }
}
