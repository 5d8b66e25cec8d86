//! Forks and handoffs: new threads that continue another one, linked to it
//! on both sides.
//!
//! The child is built aside (messages copied, assets linked), then, holding
//! the parent's lock, the parent's version `v` is compared with the one the
//! copy was made from. Unchanged: the child is moved into place and the
//! parent's side of the relationship written, each atomically. Changed (an
//! append, a rename, another fork in between): nothing is written, the
//! staged child is dropped, and the fork is made again from the new state —
//! a few times, then it fails cleanly. There is never a one-sided link.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::atsf::{
    self, ContentBlock, Message, RelationKind, RelationRole, Relationship, Role, Stats, ThreadMeta,
};
use crate::discovery::Found;
use crate::error::{Error, IoContext, Result};
use crate::project::Project;
use crate::setup::HookReporter;
use crate::store::{Snapshot, StagedThread, Store, Thread, ThreadLock, set_recorded_length};
use crate::worktree::{self, CreatedTask, MakeThread, NewTask};

/// Optimistic attempts before the last one, which holds the parent's lock
/// from snapshot to commit (appends to the parent wait for the copy).
const OPTIMISTIC_ATTEMPTS: usize = 3;

/// What the child continues from its parent.
#[derive(Debug, Clone)]
pub enum Derivation {
    /// Messages `0..=at` (default: all) copied.
    Fork { at: Option<u64> },
    /// A fresh context whose first message (role `system`) is the summary.
    Handoff { summary: String },
}

impl Derivation {
    fn kind(&self) -> RelationKind {
        match self {
            Derivation::Fork { .. } => RelationKind::Fork,
            Derivation::Handoff { .. } => RelationKind::Handoff,
        }
    }
}

/// The child to make.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    pub derivation: Derivation,
    /// Title; default `Forked: X` (per seed 001) or `Handoff: X`.
    pub title: Option<String>,
}

/// Where the child goes.
#[derive(Debug, Clone, Default)]
pub struct DeriveOptions {
    /// Give the child its own worktree when the parent has one.
    pub worktree: bool,
    /// Carry the parent worktree's uncommitted changes into the child's.
    pub carry: bool,
    /// Apply `worktreeHooks`.
    pub hooks: bool,
    /// Trust the repository's commands without asking.
    pub trust: bool,
    pub branch: Option<String>,
    pub dir: Option<PathBuf>,
    /// Leave the submodules uninitialised.
    pub no_submodules: bool,
    /// Check out Git LFS files as pointers.
    pub no_lfs: bool,
}

/// What was made.
#[derive(Debug)]
pub struct Derived {
    pub thread: Thread,
    pub meta: ThreadMeta,
    /// The child's worktree, when it got one.
    pub task: Option<CreatedTask>,
    /// Why the child has no worktree although one was asked for.
    pub no_worktree_reason: Option<String>,
    /// What went wrong once the child existed (it is kept).
    pub problems: Vec<String>,
}

/// Makes a fork or handoff of `parent`: with its own worktree (from the
/// parent worktree's HEAD) when the parent has a live worktree and
/// `options.worktree`, else in `project`'s `.agent/`.
pub fn derive(
    project: &Project,
    parent: &Found,
    spec: &ChildSpec,
    options: &DeriveOptions,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&crate::setup::TrustAsked) -> bool,
) -> Result<Derived> {
    let maker = ChildMaker {
        parent: &parent.thread,
        spec,
    };
    let title = spec
        .title
        .clone()
        .unwrap_or_else(|| default_title(&spec.derivation, &parent.meta));
    let (parent_wt, reason) = match (options.worktree, parent.live_worktree()) {
        (true, Some(wt)) => (Some(wt.to_path_buf()), None),
        (true, None) => (
            None,
            Some(format!(
                "thread {} has no worktree ({})",
                parent.meta.thread_id,
                parent.status.as_str()
            )),
        ),
        (false, _) => (None, None),
    };
    let result = match parent_wt {
        Some(wt) => {
            let wt_project = Project::discover(&wt)?;
            let head = crate::git::discover(&wt)?
                .and_then(|info| info.head)
                .ok_or_else(|| {
                    Error::Other(format!("the worktree {} has no commit", wt.display()))
                })?;
            let task = NewTask {
                title,
                agent: parent.meta.agent.id.clone(),
                prompt: None,
                branch: options.branch.clone(),
                base: (!options.carry).then_some(head),
                dir: options.dir.clone(),
                hooks: options.hooks,
                trust: options.trust,
                carry_from: options.carry.then_some(wt),
                thread_id: None,
                no_submodules: options.no_submodules,
                no_lfs: options.no_lfs,
            };
            let created = worktree::create_with(&wt_project, &task, reporter, ask_trust, &maker)?;
            Derived {
                thread: created.thread.clone(),
                meta: created.meta.clone(),
                task: Some(created),
                no_worktree_reason: None,
                problems: Vec::new(),
            }
        }
        None => {
            let template =
                crate::threads::new_meta(&title, &parent.meta.agent.id, project.context());
            let thread = maker.make(&project.store(), template)?;
            Derived {
                meta: thread.meta()?,
                thread,
                task: None,
                no_worktree_reason: reason,
                problems: Vec::new(),
            }
        }
    };
    let mut result = result;
    if result.task.is_none()
        && let Err(e) = crate::discovery::cache_if_in_worktree(project, &result.thread)
    {
        result.problems.push(format!(
            "the new thread is not in grove's cache yet (the next `grove list` retries): {e}"
        ));
    }
    Ok(result)
}

fn default_title(derivation: &Derivation, parent: &ThreadMeta) -> String {
    match derivation {
        Derivation::Fork { .. } => atsf::fork_title(&parent.title),
        Derivation::Handoff { .. } => {
            let base = handoff_base(&parent.title);
            // The parent's handoffs so far: the next one is numbered.
            let earlier = parent
                .relationships()
                .iter()
                .filter(|r| {
                    r.kind == atsf::RelationKind::Handoff && r.role == atsf::RelationRole::Parent
                })
                .count();
            match earlier {
                0 => format!("Handoff: {base}"),
                n => format!("Handoff ({}): {base}", n + 1),
            }
        }
    }
}

/// A title without the `Handoff: ` or `Handoff (N): ` it may start with.
fn handoff_base(title: &str) -> &str {
    if let Some(rest) = title.strip_prefix("Handoff: ") {
        return rest;
    }
    if let Some(rest) = title.strip_prefix("Handoff (")
        && let Some((n, rest)) = rest.split_once("): ")
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return rest;
    }
    title
}

struct ChildMaker<'a> {
    parent: &'a Thread,
    spec: &'a ChildSpec,
}

impl MakeThread for ChildMaker<'_> {
    fn make(&self, store: &Store, meta: ThreadMeta) -> Result<Thread> {
        make_child(self.parent, store, meta, self.spec)
    }

    fn initial_prompt(&self) -> bool {
        false
    }
}

/// Prepares and commits the child; made again from the new state while the
/// parent keeps changing. After a few conflicts the parent is locked for the
/// whole copy, so a busy parent (an agent appending every second) cannot
/// starve the fork.
pub fn make_child(
    parent: &Thread,
    store: &Store,
    template: ThreadMeta,
    spec: &ChildSpec,
) -> Result<Thread> {
    for _ in 0..OPTIMISTIC_ATTEMPTS {
        let prepared = prepare(parent, store, template.clone(), spec)?;
        match prepared.commit(parent) {
            Err(Error::Conflict { .. }) => continue,
            other => return other,
        }
    }
    let lock = parent.lock()?;
    let prepared = prepare_from(parent, lock.snapshot()?, store, template, spec)?;
    prepared.commit_locked(&lock)
}

/// A child built aside from a snapshot of its parent, not yet visible.
#[derive(Debug)]
pub struct Prepared {
    staged: StagedThread,
    parent_version: u64,
    parent_side: Relationship,
}

impl Prepared {
    /// The child's id.
    pub fn child_id(&self) -> &str {
        self.staged.thread().id()
    }

    /// Links the child into the parent: under the parent's lock, if its
    /// version is still the snapshot's, the child is moved into place and the
    /// parent's relationship written. Otherwise [`Error::Conflict`], and
    /// nothing is written (the staged child is removed).
    pub fn commit(self, parent: &Thread) -> Result<Thread> {
        self.commit_locked(&parent.lock()?)
    }

    /// [`Prepared::commit`] under a lock already held on the parent.
    ///
    /// The link is recorded in the intent journal first: if grove is killed
    /// between publishing the child and writing the parent's side, `grove
    /// gc` writes the parent's side.
    pub fn commit_locked(self, lock: &ThreadLock<'_>) -> Result<Thread> {
        let mut meta = lock.meta()?;
        lock.check_version(&meta, Some(self.parent_version))?;
        let step = crate::intent::begin(crate::intent::Action::Link {
            parent: lock.thread().dir().to_path_buf(),
            child: self.staged.thread().dir().to_path_buf(),
            relationship: self.parent_side.clone(),
        })?;
        meta.relationships
            .get_or_insert_with(Vec::new)
            .push(self.parent_side);
        let child = match self.staged.publish() {
            Ok(child) => child,
            Err(e) => {
                step.undone();
                return Err(e);
            }
        };
        if let Err(e) = lock.save(&mut meta) {
            // The parent's side could not be written: take the child back
            // rather than leave a one-sided link.
            let area = crate::store::Store::at(
                child
                    .dir()
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new(".")),
            )
            .private_dir();
            if let Ok(area) = area
                && crate::trash::remove_dir(child.dir(), &area).is_ok()
            {
                step.undone();
            }
            return Err(e);
        }
        step.done();
        Ok(child)
    }
}

/// Builds the child of `parent` in `store` from a snapshot of the parent:
/// `template` gives its id and context; title, agent, messages, stats and the
/// child's side of the relationship are filled in here.
pub fn prepare(
    parent: &Thread,
    store: &Store,
    template: ThreadMeta,
    spec: &ChildSpec,
) -> Result<Prepared> {
    prepare_from(parent, parent.snapshot()?, store, template, spec)
}

fn prepare_from(
    parent: &Thread,
    snap: Snapshot,
    store: &Store,
    template: ThreadMeta,
    spec: &ChildSpec,
) -> Result<Prepared> {
    let mut meta = template;
    // From this snapshot: the parent may have been renamed since `derive` began.
    meta.title = spec
        .title
        .clone()
        .unwrap_or_else(|| default_title(&spec.derivation, &snap.meta));
    meta.agent = snap.meta.agent.clone();
    let tags = snap.meta.tags();
    if !tags.is_empty() {
        meta.add_tags(&tags);
    }
    let staged = store.stage_thread(&meta)?;
    let messages_path = staged.log_path();
    let now = atsf::now_timestamp();
    let (copied, message_index, comment) = match &spec.derivation {
        Derivation::Fork { at } => {
            let copied = copy_messages(parent, &snap, *at, &staged)?;
            link_assets(&parent.assets_dir(), &staged.path().join(atsf::ASSETS_DIR))?;
            let index = copied.lines.checked_sub(1);
            meta.origin_thread_id = Some(parent.id().to_string());
            meta.fork_point_index = index;
            (copied, index, None)
        }
        Derivation::Handoff { summary } => {
            let mut message = Message::new(Role::System, vec![ContentBlock::text(summary)]);
            message.timestamp = now.clone();
            let line = atsf::to_line(&message)?;
            std::io::Write::write_all(&mut staged.open_log()?, &line)
                .ctx("writing", &messages_path)?;
            let mut stats = Stats::default();
            stats.add(&message);
            let parent_lines = count_lines(parent, &snap)?;
            let copied = Copied {
                lines: 1,
                bytes: line.len() as u64,
                stats,
                last_timestamp: Some(message.timestamp),
            };
            (copied, parent_lines.checked_sub(1), Some(summary.clone()))
        }
    };
    meta.stats = copied.stats;
    meta.updated_at = copied
        .last_timestamp
        .unwrap_or_else(|| meta.created_at.clone());
    set_recorded_length(&mut meta, copied.bytes);
    let relation = |thread_id: &str, role| Relationship {
        thread_id: thread_id.to_string(),
        kind: spec.derivation.kind(),
        role,
        message_index,
        created_at: Some(now.clone()),
        comment: comment.clone(),
        extra: Default::default(),
    };
    meta.relationships = Some(vec![relation(parent.id(), RelationRole::Child)]);
    staged.write_meta(&meta)?;
    let parent_side = relation(&meta.thread_id, RelationRole::Parent);
    Ok(Prepared {
        staged,
        parent_version: snap.meta.version(),
        parent_side,
    })
}

/// What [`copy_messages`] copied.
struct Copied {
    /// Non-blank lines (message indices), malformed ones included.
    lines: u64,
    bytes: u64,
    stats: Stats,
    last_timestamp: Option<String>,
}

/// Copies messages `0..=at` (all without `at`) of the snapshot, byte for
/// byte, so fields grove does not know survive.
///
/// The copy is not fsynced, like git's checkout of the worktree next to it:
/// syncing 50 MB costs more than the whole fork. After a power loss the
/// fork's log may be short; the parent's is untouched, and the next append
/// (or `grove repair`) recounts the fork's stats.
fn copy_messages(
    parent: &Thread,
    snap: &Snapshot,
    at: Option<u64>,
    staged: &StagedThread,
) -> Result<Copied> {
    let from = parent.messages_path();
    let to = &staged.log_path();
    if at.is_none() {
        // Fast path: every line a valid message, so the bytes are copied by
        // the kernel unparsed.
        if let Some(newlines) = all_lines_valid(&from, snap)? {
            let mut src = crate::fsutil::open_read(&from)?;
            let mut dst = staged.open_log()?;
            let bytes = std::io::copy(&mut (&mut src).take(snap.messages_len), &mut dst)
                .ctx("copying", &from)?;
            let mut stats = snap.meta.stats.clone();
            stats.extra = Default::default();
            return Ok(Copied {
                lines: newlines,
                bytes,
                stats,
                last_timestamp: (newlines > 0).then(|| snap.meta.updated_at.clone()),
            });
        }
    }
    let src = crate::fsutil::open_read(&from)?;
    let mut reader = BufReader::with_capacity(256 * 1024, src.take(snap.messages_len));
    let mut out = BufWriter::with_capacity(256 * 1024, staged.open_log()?);
    let mut copied = Copied {
        lines: 0,
        bytes: 0,
        stats: Stats::default(),
        last_timestamp: None,
    };
    let mut line = Vec::new();
    let mut number = 0;
    while at.is_none_or(|n| copied.lines <= n) {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ctx("reading", &from)?;
        if n == 0 {
            break;
        }
        number += 1;
        out.write_all(&line).ctx("writing", to)?;
        copied.bytes += n as u64;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        copied.lines += 1;
        if let Ok(m) = atsf::parse_message_line(&from, number, &line) {
            copied.stats.add(&m);
            copied.last_timestamp = Some(m.timestamp);
        }
    }
    if let Some(n) = at
        && copied.lines <= n
    {
        return Err(Error::Other(format!(
            "thread {} has {} message(s) (indices 0 to {}); --at {n} is past the end",
            parent.id(),
            copied.lines,
            copied.lines.saturating_sub(1)
        )));
    }
    out.flush().ctx("writing", to)?;
    Ok(copied)
}

/// Message indices in the snapshot (non-blank lines).
fn count_lines(parent: &Thread, snap: &Snapshot) -> Result<u64> {
    let from = parent.messages_path();
    if let Some(lines) = all_lines_valid(&from, snap)? {
        return Ok(lines);
    }
    let src = crate::fsutil::open_read(&from)?;
    let reader = BufReader::with_capacity(256 * 1024, src.take(snap.messages_len));
    let mut count = 0;
    for line in reader.split(b'\n') {
        if !line
            .ctx("reading", &from)?
            .iter()
            .all(u8::is_ascii_whitespace)
        {
            count += 1;
        }
    }
    Ok(count)
}

/// The number of lines when every line of the snapshot is a valid message:
/// the stats are exact for these bytes and count as many messages as there
/// are newlines. `None` when that cannot be known without parsing.
fn all_lines_valid(path: &Path, snap: &Snapshot) -> Result<Option<u64>> {
    if !snap.stats_exact {
        return Ok(None);
    }
    let newlines = count_newlines(path, snap.messages_len)?;
    Ok((newlines == snap.meta.stats.message_count).then_some(newlines))
}

fn count_newlines(path: &Path, len: u64) -> Result<u64> {
    let mut file = crate::fsutil::open_read(path)?.take(len);
    let mut buf = vec![0u8; 1 << 20];
    let mut count = 0u64;
    loop {
        let n = file.read(&mut buf).ctx("reading", path)?;
        if n == 0 {
            return Ok(count);
        }
        count += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// Shares the parent's assets with the child: content-addressed files never
/// change, so a hard link is enough (a copy across filesystems).
fn link_assets(from: &Path, to: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("listing", from, e)),
    };
    std::fs::create_dir_all(to).ctx("creating", to)?;
    for entry in entries {
        let entry = entry.ctx("listing", from)?;
        if entry.file_type().ctx("reading", &entry.path())?.is_file() {
            crate::fsutil::link_or_copy(&entry.path(), &to.join(entry.file_name()), true)?;
        }
    }
    Ok(())
}
