//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! Records form a tree through `parentUuid`. The conversation is the chain
//! through the last prompt or reply; another branch that holds a prompt or
//! a reply becomes a fork thread (relationships as `grove fork` writes
//! them); branches holding only tool results or progress records are not
//! forks (parallel tool calls share a parent) and stay in the conversation
//! in file order. Sidechains (`isSidechain`) and subagent files
//! (`agent-*.jsonl`, `<session>/subagents/`) become subagent threads with
//! `mainThreadID`. How each record kind maps: see [`build`].
//!
//! A first import reads the file twice, holding one record at a time: once
//! for the tree ([`index`]), once to write each thread. Later imports read
//! only the lines after the last one taken, as long as each goes on the
//! conversation or on a sidechain written inline ([`side`]); a new branch,
//! or a record following one no thread remembers, means the whole file is
//! read again.

mod build;
mod index;
mod side;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use self::build::{Builder, Carried, Results};
use self::index::{Entry, Facts};
use self::side::{Route, Side};
use super::lines::{Lines, Reread};
use super::stream::set_waiting;
use super::tree::{link_fork, shape};
use super::{Resumable, Resume, Sink, is_live};
use crate::atsf::{self, Agent, Context, Extra};
use crate::error::{Error, IoContext, Result};

/// Claude Code, as a [`super::Format`].
pub struct Claude;

impl super::Format for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }
    fn about(&self) -> &'static str {
        "Claude Code session transcripts"
    }
    fn layout(&self) -> &'static str {
        "a session .jsonl, or a ~/.claude/projects/<project> directory holding them \
         (with their agent-*.jsonl and <session>/subagents/ files)"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        sources(path)
    }
    fn resumable(&self) -> Resumable {
        Resumable::Lines
    }
    fn import(
        &self,
        source: &Path,
        from: Option<&Resume>,
        out: &mut Sink,
    ) -> Result<Option<Resume>> {
        match from {
            Some(from) => import_tail(source, from, out),
            None => import_whole(source, out),
        }
    }
}

/// The source files under `path`: itself if a file; else its `*.jsonl` and
/// those of `<dir>/*/subagents/`. Sessions first, subagent files after.
pub fn sources(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let jsonl = |dir: &Path, files: &mut Vec<PathBuf>| -> Result<()> {
        for entry in std::fs::read_dir(dir).ctx("listing", dir)? {
            let p = entry.ctx("listing", dir)?.path();
            if p.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                files.push(p);
            }
        }
        Ok(())
    };
    jsonl(path, &mut files)?;
    for entry in std::fs::read_dir(path).ctx("listing", path)? {
        let sub = entry.ctx("listing", path)?.path().join("subagents");
        if sub.is_dir() {
            jsonl(&sub, &mut files)?;
        }
    }
    files.sort_by_key(|p| (is_agent_file(p), p.clone()));
    Ok(files)
}

fn is_agent_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-"))
        || p.parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "subagents")
}

/// What the next import of a source needs (kept in its cursor).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    session: String,
    agent_file: bool,
    cwd: String,
    branch: Option<String>,
    version: Option<String>,
    created: String,
    /// The conversation's last records: (uuid, a prompt or reply), oldest first.
    window: Vec<(String, bool)>,
    /// The first byte of the conversation's records not taken, when the
    /// cursor is behind it (held back by a sidechain): the conversation's
    /// records before it are passed over when read again.
    #[serde(default, skip_serializing_if = "is_zero")]
    main_from: u64,
    /// The sidechains written inline (Claude Code 1.0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sidechains: Vec<Side>,
    /// Lines after the cursor their threads took: not read again (a
    /// subagent's long sidechain, while the reply that started it waits
    /// for its result, would be read at every import).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    taken: side::Taken,
    #[serde(flatten)]
    carried: Carried,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How many of the conversation's last records a cursor remembers: a new
/// record must follow one of them (a result answers a call made a little
/// earlier), or the whole file is read again.
const WINDOW: usize = 512;

/// The ids the thread of a session gets.
struct Names {
    session: String,
    agent_file: bool,
    main_id: String,
}

impl Names {
    /// The thread's title: what the session says, else a name from its id;
    /// a subagent's says so.
    fn title(&self, said: Option<String>) -> String {
        let title = said.unwrap_or_else(|| format!("Claude Code session {}", short(&self.session)));
        if self.agent_file {
            format!("Subagent: {title}")
        } else {
            title
        }
    }

    fn of(path: &Path, session: Option<&str>) -> Names {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("session")
            .to_string();
        let session = session.unwrap_or(&stem).to_string();
        let agent_file = is_agent_file(path);
        let main_id = if agent_file {
            format!("claude-{session}-{stem}")
        } else {
            format!("claude-{session}")
        };
        Names {
            session,
            agent_file,
            main_id,
        }
    }
}

/// The results of the whole file, read again by offset.
struct FileResults<'a> {
    entries: &'a [Entry],
    facts: &'a Facts,
    reread: Reread,
}

impl Results for FileResults<'_> {
    fn result(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>> {
        let Some(&i) = self.facts.results.get(id) else {
            return Ok(None);
        };
        let e = &self.entries[i];
        Ok(self.reread.object(e.offset, e.len)?.map(|r| (r, e.offset)))
    }
    fn has_call(&self, id: &str) -> bool {
        self.facts.calls.contains(id)
    }
}

/// The results of the new records only, in memory.
struct TailResults<'a> {
    records: &'a [Map<String, Value>],
    entries: &'a [Entry],
    results: HashMap<String, usize>,
    calls: HashSet<String>,
}

impl Results for TailResults<'_> {
    fn result(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>> {
        Ok(self
            .results
            .get(id)
            .map(|&i| (self.records[i].clone(), self.entries[i].offset)))
    }
    fn has_call(&self, id: &str) -> bool {
        self.calls.contains(id)
    }
}

/// A whole transcript: the tree first, then each thread.
fn import_whole(path: &Path, out: &mut Sink) -> Result<Option<Resume>> {
    let live = is_live(path);
    let Scan {
        entries,
        end,
        next_line,
        facts,
        ..
    } = scan(path, 0, 1, live, out)?;
    if !entries
        .iter()
        .any(|e| matches!(&*e.kind, "user" | "assistant"))
    {
        if !entries.is_empty() {
            out.summary().skip(
                "session",
                "a transcript without a prompt or a reply (only bookkeeping records)".into(),
            );
        }
        return Ok(None);
    }
    let names = Names::of(path, facts.session.as_deref());
    let shape = shape(&entries, names.agent_file);
    let mut whole = Whole::new(path, &entries, &facts, &names, live)?;

    let meta = whole.meta(&names.main_id, "", &shape.main_records);
    let (main, builder) = whole.feed(out, meta, &shape.main_records, Kind::Conversation)?;
    let title = names.title(builder.title());
    let index_of = builder.index_of.clone();
    let ended = builder.end(out);
    let main_cut = ended.unconsumed.unwrap_or(end);
    // A sidechain's thread records where the lines read end: it is only
    // checked by the next import that writes it (see `Side::at`), and each
    // is finished as soon as it is written, not held open.
    out.set_offset(end);
    let mut sidechains = whole.sidechains(out, &shape.sidechains, end)?;
    // The cursor stops where the first thread's records stop being taken.
    let cut = sidechains
        .iter()
        .filter(|s| s.open)
        .map(|s| s.from)
        .fold(main_cut, u64::min);
    out.set_offset(cut);
    let mut main_meta = out.meta_mut(main).cloned();
    if let Some(m) = &mut main_meta {
        m.title = title.clone();
        set_waiting(m, ended.waiting);
    }
    whole.forks(out, &shape.forks, &title, main_meta.as_mut(), &index_of)?;
    let taken = taken_in_whole(&entries, &shape, main_cut, &sidechains, cut);
    side::prune(&mut sidechains);
    if let (Some(m), Some(slot)) = (main_meta, out.meta_mut(main)) {
        *slot = m;
    }
    out.finish(main)?;

    let state = State {
        session: names.session.clone(),
        agent_file: names.agent_file,
        cwd: facts.cwd.clone().unwrap_or_default(),
        branch: facts.branch.clone(),
        version: facts.version.clone(),
        created: first_time(&entries, &shape.main_records),
        window: window_of(&entries, &shape.main_records, main_cut),
        main_from: if main_cut > cut { main_cut } else { 0 },
        sidechains,
        taken,
        carried: ended.carried,
    };
    Ok(Some(Resume {
        offset: cut,
        line: line_at(&entries, cut, next_line),
        state: serde_json::to_value(state).unwrap_or(Value::Null),
    }))
}

/// The lines after `cut` a whole import took: the conversation's before
/// its own stop `main_cut`, each sidechain's before its own, every fork's
/// (a fork is written whole).
fn taken_in_whole(
    entries: &[Entry],
    shape: &super::tree::Shape,
    main_cut: u64,
    sides: &[Side],
    cut: u64,
) -> side::Taken {
    let mut limit = vec![main_cut; entries.len()];
    for ((_, members), side) in shape.sidechains.iter().zip(sides) {
        for &i in members {
            limit[i] = side.from;
        }
    }
    if !shape.forks.is_empty() {
        let main: HashSet<usize> = shape.main_records.iter().copied().collect();
        for (_, chain, _) in &shape.forks {
            for &i in chain.iter().filter(|i| !main.contains(i)) {
                limit[i] = u64::MAX;
            }
        }
    }
    side::taken_ranges(&[], entries, cut, |i| entries[i].offset < limit[i])
}

/// A sidechain's records written: what its state is made of.
struct Fed {
    root: String,
    members: Vec<usize>,
    /// The first byte of it not taken, if any.
    cut: Option<u64>,
    carried: Carried,
}

impl Fed {
    /// What the next import needs of it; `end` is where the lines read
    /// end, recorded on its thread.
    fn state(self, entries: &[Entry], end: u64) -> Side {
        let from = self.cut.unwrap_or(end);
        let mut window = Vec::new();
        side::extend_window(&mut window, entries, &self.members, from);
        Side {
            root: self.root,
            from,
            at: end,
            open: self.cut.is_some(),
            created: first_time(entries, &self.members),
            window,
            carried: self.carried,
        }
    }
}

/// A whole transcript being written: what each of its threads needs.
struct Whole<'a> {
    path: &'a Path,
    entries: &'a [Entry],
    facts: &'a Facts,
    names: &'a Names,
    uuids: std::rc::Rc<HashSet<String>>,
    reread: Reread,
    results: FileResults<'a>,
    live: bool,
}

impl<'a> Whole<'a> {
    fn new(
        path: &'a Path,
        entries: &'a [Entry],
        facts: &'a Facts,
        names: &'a Names,
        live: bool,
    ) -> Result<Self> {
        Ok(Whole {
            path,
            entries,
            facts,
            names,
            uuids: std::rc::Rc::new(
                entries
                    .iter()
                    .filter_map(|e| e.uuid.as_deref().map(str::to_string))
                    .collect(),
            ),
            reread: Reread::open(path)?,
            results: FileResults {
                entries,
                facts,
                reread: Reread::open(path)?,
            },
            live,
        })
    }

    fn meta(&self, id: &str, title: &str, members: &[usize]) -> atsf::ThreadMeta {
        thread_meta(
            id,
            title,
            self.facts,
            self.entries,
            members,
            self.path,
            self.names,
        )
    }

    /// Begins thread `meta` and feeds it the records `members`. `thread`
    /// says which kind: the conversation's trailing records wait for the
    /// next import; a fork is a finished branch, nothing of it deferred.
    fn feed(
        &mut self,
        out: &mut Sink,
        meta: atsf::ThreadMeta,
        members: &[usize],
        thread: Kind,
    ) -> Result<(super::ThreadHandle, Builder)> {
        let handle = out.begin(meta)?;
        let hold = thread == Kind::Conversation;
        let live = self.live && thread != Kind::Fork;
        let mut b = Builder::new(handle, hold, live, Carried::default());
        b.uuids = self.uuids.clone();
        for &i in members {
            let e = &self.entries[i];
            if let Some(raw) = self.reread.object(e.offset, e.len)? {
                b.record(out, i, e, raw, &mut self.results)?;
            }
        }
        Ok((handle, b))
    }

    /// Forks: branches with a prompt or a reply of their own, linked to the
    /// conversation (`main`) where they left it.
    fn forks(
        &mut self,
        out: &mut Sink,
        forks: &[(usize, Vec<usize>, usize)],
        title: &str,
        mut main: Option<&mut atsf::ThreadMeta>,
        index_of: &HashMap<usize, u64>,
    ) -> Result<()> {
        for (leaf, chain, split) in forks {
            let leaf_uuid = self.entries[*leaf].uuid.as_deref().unwrap_or("leaf");
            let id = format!("{}-fork-{leaf_uuid}", self.names.main_id);
            let mut meta = self.meta(&id, &atsf::fork_title(title), chain);
            if let Some(m) = main.as_deref_mut() {
                link_fork(
                    m,
                    &mut meta,
                    index_of.get(split).copied(),
                    self.entries[*leaf].time.as_deref().map(str::to_string),
                );
            }
            let (fork, b) = self.feed(out, meta, chain, Kind::Fork)?;
            b.end(out);
            out.finish(fork)?;
        }
        Ok(())
    }

    /// Sidechains written into the session file (before subagent files);
    /// what the next import needs of each.
    fn sidechains(
        &mut self,
        out: &mut Sink,
        sidechains: &[(String, Vec<usize>)],
        end: u64,
    ) -> Result<Vec<Side>> {
        let mut sides = Vec::with_capacity(sidechains.len());
        for (root, members) in sidechains {
            let id = format!("{}-side-{root}", self.names.main_id);
            let mut meta = self.meta(&id, "", members);
            meta.main_thread_id = Some(self.names.main_id.clone());
            let (side, b) = self.feed(out, meta, members, Kind::Sidechain)?;
            set_side_title(out, side, &b);
            let ended = b.end(out);
            out.finish(side)?;
            let fed = Fed {
                root: root.clone(),
                members: members.clone(),
                cut: ended.unconsumed,
                carried: ended.carried,
            };
            sides.push(fed.state(self.entries, end));
        }
        Ok(sides)
    }
}

/// A subagent's thread is named by its first prompt.
fn set_side_title(out: &mut Sink, side: super::ThreadHandle, b: &Builder) {
    let title = format!(
        "Subagent: {}",
        b.title().unwrap_or_else(|| "sidechain".into())
    );
    if let Some(m) = out.meta_mut(side) {
        m.title = title;
    }
}

/// The threads a transcript makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Conversation,
    Fork,
    Sidechain,
}

/// The lines after the last import: each goes on the conversation or on a
/// sidechain it knows, or the whole file is read again.
fn import_tail(path: &Path, from: &Resume, out: &mut Sink) -> Result<Option<Resume>> {
    let mut state: State = serde_json::from_value(from.state.clone())
        .map_err(|e| Error::Restart(format!("the cursor's state does not read: {e}")))?;
    let live = is_live(path);
    let Scan {
        entries,
        records,
        end,
        next_line,
        ..
    } = scan_keeping(path, from, live, out, &state.taken)?;
    if entries.is_empty() {
        return Ok(Some(Resume {
            offset: end,
            line: next_line,
            state: from.state.clone(),
        }));
    }
    let routes = side::route(
        &entries,
        &mut state.sidechains,
        state.main_from,
        &state.window,
        state.agent_file,
        from.offset,
    )?;
    check_continues(&state, &entries, &routes)?;
    let tail = Tail::new(path, &state, &entries, &records, &routes, live);
    let mut results = tail.results();

    let main_members = tail.members(Route::Main);
    let mut meta = tail.meta(&tail.names.main_id, &main_members);
    meta.created_at = state.created.clone();
    let main = out.begin(meta)?;
    let mut builder = tail.builder(main, state.carried.clone());
    for &i in &main_members {
        builder.record(out, i, &entries[i], records[i].clone(), &mut results)?;
    }
    let title = tail.names.title(builder.title());
    let ended = builder.end(out);
    let main_cut = ended.unconsumed.unwrap_or(end);

    out.set_offset(end);
    for n in 0..state.sidechains.len() {
        let members = tail.members(Route::Side(n));
        if members.is_empty() {
            continue;
        }
        let fed = tail.side(out, &state.sidechains[n], &members, &mut results)?;
        let side = &mut state.sidechains[n];
        let mut next = fed.state(&entries, end);
        next.window = std::mem::take(&mut side.window);
        side::extend_window(&mut next.window, &entries, &members, next.from);
        if !side.created.is_empty() {
            next.created = std::mem::take(&mut side.created);
        }
        *side = next;
    }
    let cut = state
        .sidechains
        .iter()
        .filter(|s| s.open)
        .map(|s| s.from)
        .fold(main_cut, u64::min);
    out.set_offset(cut);
    state.taken = side::taken_ranges(&state.taken, &entries, cut, |i| match routes[i] {
        Route::Taken => true,
        Route::Main => entries[i].offset < main_cut,
        Route::Side(n) => entries[i].offset < state.sidechains[n].from,
    });
    side::prune(&mut state.sidechains);
    if let Some(m) = out.meta_mut(main) {
        m.title = title;
        set_waiting(m, ended.waiting);
    }
    out.finish(main)?;

    let mut window = std::mem::take(&mut state.window);
    window.extend(
        main_members
            .iter()
            .map(|&i| &entries[i])
            .filter(|e| e.offset < main_cut)
            .filter_map(|e| Some((e.uuid.as_deref()?.to_string(), e.substantive))),
    );
    let excess = window.len().saturating_sub(WINDOW);
    window.drain(..excess);
    let state = State {
        window,
        main_from: if main_cut > cut { main_cut } else { 0 },
        carried: ended.carried,
        ..state
    };
    Ok(Some(Resume {
        offset: cut,
        line: line_at(&entries, cut, next_line),
        state: serde_json::to_value(state).unwrap_or(Value::Null),
    }))
}

/// The new lines of a source, routed: what each thread written from them
/// needs.
struct Tail<'a> {
    path: &'a Path,
    names: Names,
    facts: Facts,
    entries: &'a [Entry],
    records: &'a [Map<String, Value>],
    routes: &'a [Route],
    /// The session's uuids known here (a summary's leaf must be one).
    uuids: std::rc::Rc<HashSet<String>>,
    live: bool,
}

impl<'a> Tail<'a> {
    fn new(
        path: &'a Path,
        state: &State,
        entries: &'a [Entry],
        records: &'a [Map<String, Value>],
        routes: &'a [Route],
        live: bool,
    ) -> Self {
        let names = Names {
            session: state.session.clone(),
            agent_file: state.agent_file,
            main_id: if state.agent_file {
                let stem = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("session");
                format!("claude-{}-{stem}", state.session)
            } else {
                format!("claude-{}", state.session)
            },
        };
        let facts = Facts {
            session: Some(state.session.clone()),
            cwd: Some(state.cwd.clone()),
            branch: state.branch.clone(),
            version: state.version.clone(),
            ..Facts::default()
        };
        let uuids = std::rc::Rc::new(
            state
                .window
                .iter()
                .map(|(u, _)| u.clone())
                .chain(
                    entries
                        .iter()
                        .filter_map(|e| e.uuid.as_deref().map(str::to_string)),
                )
                .collect(),
        );
        Tail {
            path,
            names,
            facts,
            entries,
            records,
            routes,
            uuids,
            live,
        }
    }

    /// The entries going to `route`, in file order.
    fn members(&self, route: Route) -> Vec<usize> {
        (0..self.routes.len())
            .filter(|&i| self.routes[i] == route)
            .collect()
    }

    fn meta(&self, id: &str, members: &[usize]) -> atsf::ThreadMeta {
        thread_meta(
            id,
            "",
            &self.facts,
            self.entries,
            members,
            self.path,
            &self.names,
        )
    }

    /// A builder for thread `handle`: records after its last message wait
    /// for the next import (a sidechain's too: it may go on).
    fn builder(&self, handle: super::ThreadHandle, carried: Carried) -> Builder {
        let mut b = Builder::new(handle, true, self.live, carried);
        b.uuids = self.uuids.clone();
        b
    }

    /// The results of the records taken here, in memory: a record another
    /// import took is not looked at again.
    fn results(&self) -> TailResults<'a> {
        let mut results = TailResults {
            records: self.records,
            entries: self.entries,
            results: HashMap::new(),
            calls: HashSet::new(),
        };
        for (i, raw) in self.records.iter().enumerate() {
            if self.routes[i] == Route::Taken {
                continue;
            }
            for id in index::result_ids(raw) {
                results.results.entry(id.to_string()).or_insert(i);
            }
            for id in call_ids(raw) {
                results.calls.insert(id);
            }
        }
        results
    }

    /// Writes sidechain `side`'s new records `members`.
    fn side(
        &self,
        out: &mut Sink,
        side: &Side,
        members: &[usize],
        results: &mut TailResults,
    ) -> Result<Fed> {
        let id = format!("{}-side-{}", self.names.main_id, side.root);
        let mut meta = self.meta(&id, members);
        meta.main_thread_id = Some(self.names.main_id.clone());
        if !side.created.is_empty() {
            meta.created_at = side.created.clone();
        }
        let handle = out.begin_expecting(meta, side.at)?;
        let mut b = self.builder(handle, side.carried.clone());
        for &i in members {
            let e = &self.entries[i];
            b.record(out, i, e, self.records[i].clone(), results)?;
        }
        set_side_title(out, handle, &b);
        let ended = b.end(out);
        out.finish(handle)?;
        Ok(Fed {
            root: side.root.clone(),
            members: members.to_vec(),
            cut: ended.unconsumed,
            carried: ended.carried,
        })
    }
}

/// The conversation's new records go on it: each follows one of its last
/// records, and none starts a branch beside a later prompt or reply.
/// Otherwise the whole file is read again.
fn check_continues(state: &State, entries: &[Entry], routes: &[Route]) -> Result<()> {
    let mut position: HashMap<&str, usize> = HashMap::new();
    let mut last_said = None;
    let mut n = 0;
    for (u, said) in &state.window {
        position.insert(u, n);
        if *said {
            last_said = Some(n);
        }
        n += 1;
    }
    for (e, route) in entries.iter().zip(routes) {
        if *route != Route::Main {
            continue;
        }
        if let Some(p) = e.parent.as_deref() {
            let Some(&at) = position.get(p) else {
                return Err(Error::Restart(format!(
                    "line {} follows a record that is not among the conversation's last",
                    e.line
                )));
            };
            if e.substantive && last_said.is_some_and(|s| s > at) {
                return Err(Error::Restart(format!("line {} starts a branch", e.line)));
            }
        }
        if let Some(u) = e.uuid.as_deref() {
            position.insert(u, n);
            if e.substantive {
                last_said = Some(n);
            }
            n += 1;
        }
    }
    Ok(())
}

/// What a pass over the lines found.
struct Scan {
    entries: Vec<Entry>,
    /// The records themselves, when kept (the new lines of a later import).
    records: Vec<Map<String, Value>>,
    facts: Facts,
    /// Where the lines taken end.
    end: u64,
    next_line: u64,
}

/// Reads the lines from `offset` for the tree, one record at a time.
fn scan(path: &Path, offset: u64, line: u64, live: bool, out: &mut Sink) -> Result<Scan> {
    scan_lines(path, (offset, line), live, out, false, &[])
}

/// [`scan`], keeping the records, passing over the `taken` lines.
fn scan_keeping(
    path: &Path,
    from: &Resume,
    live: bool,
    out: &mut Sink,
    taken: &[(u64, u64, u64)],
) -> Result<Scan> {
    scan_lines(path, (from.offset, from.line), live, out, true, taken)
}

fn scan_lines(
    path: &Path,
    (offset, line): (u64, u64),
    live: bool,
    out: &mut Sink,
    keep: bool,
    taken: &[(u64, u64, u64)],
) -> Result<Scan> {
    let mut lines = Lines::open(path, offset, line)?;
    let mut taken = taken.iter().peekable();
    let mut scan = Scan {
        entries: Vec::new(),
        records: Vec::new(),
        facts: Facts::default(),
        end: offset,
        next_line: line.max(1),
    };
    loop {
        while let Some(&&(start, end, newlines)) = taken.peek() {
            if start > lines.offset() {
                break;
            }
            if start == lines.offset() {
                lines.skip_to(end, newlines)?;
            }
            taken.next();
        }
        let Some(line) = lines.next_line()? else {
            break;
        };
        if line.is_blank() {
            if line.terminated {
                scan.end = line.end();
                scan.next_line = line.number + 1;
            }
            continue;
        }
        match line.object() {
            Ok(raw) => {
                let i = scan.entries.len();
                scan.entries.push(index::entry(&line, &raw));
                scan.facts.take(i, &raw);
                if keep {
                    scan.records.push(raw);
                }
            }
            // The last line of a running session may still be written.
            Err(_) if !line.terminated && live => break,
            Err(e) => {
                out.problem(Some(line.number), &e);
                out.summary()
                    .skip("malformed", "a line that is not a JSON object".into());
            }
        }
        scan.end = line.end();
        scan.next_line = line.number + 1;
    }
    Ok(scan)
}

fn call_ids(raw: &Map<String, Value>) -> Vec<String> {
    index::blocks(raw)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The line number of the line at `offset`.
fn line_at(entries: &[Entry], offset: u64, next_line: u64) -> u64 {
    entries
        .iter()
        .find(|e| e.offset == offset)
        .map_or(next_line, |e| e.line)
}

/// The conversation's last records before `cut`.
fn window_of(entries: &[Entry], main: &[usize], cut: u64) -> Vec<(String, bool)> {
    let mut window: Vec<(String, bool)> = main
        .iter()
        .map(|&i| &entries[i])
        .filter(|e| e.offset < cut)
        .filter_map(|e| Some((e.uuid.as_deref()?.to_string(), e.substantive)))
        .collect();
    let excess = window.len().saturating_sub(WINDOW);
    window.drain(..excess);
    window
}

fn first_time(entries: &[Entry], members: &[usize]) -> String {
    members
        .iter()
        .find_map(|&i| entries[i].time.as_deref())
        .map(str::to_string)
        .unwrap_or_else(atsf::now_timestamp)
}

fn short(session: &str) -> String {
    session.chars().take(8).collect()
}

fn thread_meta(
    id: &str,
    title: &str,
    facts: &Facts,
    entries: &[Entry],
    members: &[usize],
    path: &Path,
    names: &Names,
) -> atsf::ThreadMeta {
    let created = first_time(entries, members);
    let mut meta = crate::threads::new_meta(
        title,
        "claude-code",
        Context {
            working_dir: facts.cwd.clone().unwrap_or_default(),
            git_branch: facts.branch.clone(),
            ..Context::default()
        },
    );
    meta.thread_id = id.to_string();
    meta.created_at = created.clone();
    meta.updated_at = created;
    meta.agent = Agent {
        id: "claude-code".into(),
        name: "Claude Code".into(),
        version: facts.version.clone(),
        protocol: None,
        protocol_version: None,
        extra: Extra::new(),
    };
    if names.agent_file {
        meta.main_thread_id = Some(format!("claude-{}", names.session));
    }
    meta.metadata_mut().insert(
        "import".into(),
        json!({
            "format": "claude",
            "source": path,
            "sourceId": names.session,
            "importedAt": atsf::now_timestamp(),
        }),
    );
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Destination, Summary};

    /// Lines their threads took are passed over, and the lines after them
    /// keep their numbers and offsets.
    #[test]
    fn taken_lines_are_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let lines: Vec<String> = (1..=6)
            .map(|n| format!("{{\"type\":\"user\",\"uuid\":\"u{n}\"}}\n"))
            .collect();
        std::fs::write(&path, lines.concat()).unwrap();
        let at = |n: usize| lines[..n - 1].iter().map(String::len).sum::<usize>() as u64;
        let entry = |n: usize| Entry {
            offset: at(n),
            len: lines[n - 1].len() - 1,
            line: n as u64,
            kind: "user".into(),
            uuid: None,
            parent: None,
            sidechain: false,
            time: None,
            only_results: false,
            substantive: true,
            hash: None,
        };
        // Lines 3 and 4 taken, then 6; read from line 2.
        let entries = [entry(2), entry(3), entry(4), entry(5), entry(6)];
        let taken = side::taken_ranges(&[], &entries, at(2), |i| matches!(i, 1 | 2 | 4));
        assert_eq!(taken.len(), 2, "{taken:?}");
        let destination = Destination::Root(dir.path().to_path_buf());
        let mut summary = Summary::default();
        let mut out = Sink::new(&destination, &mut summary, &path, None);
        let from = Resume {
            offset: at(2),
            line: 2,
            state: Value::Null,
        };
        let scan = scan_keeping(&path, &from, false, &mut out, &taken).unwrap();
        let read: Vec<(u64, u64, Option<&str>)> = scan
            .entries
            .iter()
            .zip(&scan.records)
            .map(|(e, r)| (e.line, e.offset, r.get("uuid").and_then(Value::as_str)))
            .collect();
        assert_eq!(read, [(2, at(2), Some("u2")), (5, at(5), Some("u5"))]);
        assert_eq!(scan.end, at(7));
        assert_eq!(scan.next_line, 7);
    }
}
