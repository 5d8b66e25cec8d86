//! Sidechains written inline (Claude Code 1.0: a subagent's records are
//! `isSidechain: true` lines of the session file, interleaved with the
//! conversation and with each other) read a tail at a time.
//!
//! The file has one cursor, but each of its threads stops where its own
//! records stop being taken: a sidechain's reply waiting for its tool's
//! result holds the cursor back while the conversation and the other
//! sidechains go on. So the cursor is the lowest of the threads' stops, and
//! each thread remembers its own ([`Side::from`], `State::main_from`): a
//! record read again that its thread already took is passed over.

use std::collections::{HashMap, HashSet};

use super::build::Carried;
use super::index::Entry;
use crate::error::{Error, Result};

/// What the next import needs of one sidechain.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Side {
    /// The uuid of its first record: its thread is `<main>-side-<root>`.
    pub root: String,
    /// The first byte of its records not taken (all before it were).
    pub from: u64,
    /// The offset its thread records (`metadata.import.offset`): where the
    /// lines read by the import that last wrote it end. Only the next import
    /// writing it checks it (another import moved it on: the whole file is
    /// read again); it is not the cursor, which is known only once every
    /// thread is written, and a thread is not held open that long.
    pub at: u64,
    /// Whether records of it were left for the next import.
    pub open: bool,
    pub created: String,
    /// Its last records taken: a new record of it follows one of them.
    pub window: Vec<String>,
    #[serde(flatten)]
    pub carried: Carried,
}

/// How many of a sidechain's last records its state remembers.
pub(super) const SIDE_WINDOW: usize = 64;
/// How many finished sidechains a cursor remembers: a record going on an
/// older one (none has been seen) reads the whole file again.
const KEPT_DONE: usize = 32;

/// Where one record of a tail goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Its thread took it in an earlier import (read again because the
    /// cursor is behind another thread's stop).
    Taken,
    Main,
    /// The sidechain at this index of the list [`route`] returns.
    Side(usize),
}

/// Routes each of `entries` to its thread. `sides` (the state's) gains the
/// sidechains the tail starts (their threads, not written yet, expected
/// at `cursor`, where this import starts). A sidechain record following a record no
/// sidechain remembers is [`Error::Restart`]: only the whole file says
/// where it goes.
pub(super) fn route(
    entries: &[Entry],
    sides: &mut Vec<Side>,
    main_from: u64,
    main_window: &[(String, bool)],
    agent_file: bool,
    cursor: u64,
) -> Result<Vec<Route>> {
    let mut owner: HashMap<String, usize> = HashMap::new();
    for (n, side) in sides.iter().enumerate() {
        owner.insert(side.root.clone(), n);
        for u in &side.window {
            owner.insert(u.clone(), n);
        }
    }
    let mut main: HashSet<&str> = main_window.iter().map(|(u, _)| u.as_str()).collect();
    let mut routes = Vec::with_capacity(entries.len());
    for e in entries {
        let Some(uuid) = e.uuid.as_deref().filter(|_| e.sidechain && !agent_file) else {
            if let Some(u) = e.uuid.as_deref() {
                main.insert(u);
            }
            routes.push(if e.offset < main_from {
                Route::Taken
            } else {
                Route::Main
            });
            continue;
        };
        let n = match owner.get(uuid).copied() {
            Some(n) => n,
            None => side_of(e, uuid, &owner, &main, sides, cursor)?,
        };
        owner.insert(uuid.to_string(), n);
        routes.push(if e.offset < sides[n].from {
            Route::Taken
        } else {
            Route::Side(n)
        });
    }
    Ok(routes)
}

/// The sidechain a record not seen before goes on: its parent's, or a new
/// one when it has no parent or follows the conversation (as a subagent's
/// first record does).
fn side_of(
    e: &Entry,
    uuid: &str,
    owner: &HashMap<String, usize>,
    main: &HashSet<&str>,
    sides: &mut Vec<Side>,
    cursor: u64,
) -> Result<usize> {
    match e.parent.as_deref() {
        Some(p) if owner.contains_key(p) => Ok(owner[p]),
        Some(p) if !main.contains(p) => Err(Error::Restart(format!(
            "line {} follows a record that is not among the sidechains' last",
            e.line
        ))),
        _ => {
            sides.push(Side {
                root: uuid.to_string(),
                from: e.offset,
                // Not written yet: no import has left its thread anywhere.
                at: cursor,
                open: true,
                created: String::new(),
                window: Vec::new(),
                carried: Carried::default(),
            });
            Ok(sides.len() - 1)
        }
    }
}

/// The uuids of `members` taken (before `cut`), the last [`SIDE_WINDOW`]
/// of them after `window`.
pub(super) fn extend_window(
    window: &mut Vec<String>,
    entries: &[Entry],
    members: &[usize],
    cut: u64,
) {
    window.extend(
        members
            .iter()
            .map(|&i| &entries[i])
            .filter(|e| e.offset < cut)
            .filter_map(|e| e.uuid.as_deref().map(str::to_string)),
    );
    let excess = window.len().saturating_sub(SIDE_WINDOW);
    window.drain(..excess);
}

/// Forgets the oldest finished sidechains beyond [`KEPT_DONE`]; open ones
/// are all kept (their records are read again).
pub(super) fn prune(sides: &mut Vec<Side>) {
    let done = sides.iter().filter(|s| !s.open).count();
    let mut drop = done.saturating_sub(KEPT_DONE);
    sides.retain(|s| {
        if drop > 0 && !s.open {
            drop -= 1;
            return false;
        }
        true
    });
}

/// Bytes after the cursor that their threads took: (start, end, the
/// newlines within). A later import does not read them again.
pub(super) type Taken = Vec<(u64, u64, u64)>;

/// `ranges` (sorted, from an earlier import) from `cut` on, with the lines
/// of `entries` that `taken` says were taken and are at `cut` or after;
/// lines next to each other (one newline apart) make one range.
pub(super) fn taken_ranges(
    ranges: &[(u64, u64, u64)],
    entries: &[Entry],
    cut: u64,
    taken: impl Fn(usize) -> bool,
) -> Taken {
    let mut all: Taken = ranges.iter().copied().filter(|r| r.0 >= cut).collect();
    all.extend(
        (0..entries.len())
            .filter(|&i| entries[i].offset >= cut && taken(i))
            .map(|i| {
                (
                    entries[i].offset,
                    entries[i].offset + entries[i].len as u64,
                    0,
                )
            }),
    );
    all.sort_unstable();
    let mut merged: Taken = Vec::with_capacity(all.len());
    for r in all {
        match merged.last_mut() {
            Some(last) if last.1 + 1 == r.0 => {
                last.1 = r.1;
                last.2 += r.2 + 1;
            }
            _ => merged.push(r),
        }
    }
    merged
}
