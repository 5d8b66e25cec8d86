//! The answer for each line of a file: git's blame gives the commit; the
//! threads of the repository's tasks give the author.
//!
//! A line is an agent's, exactly, when a thread's snapshots show a step of
//! its agent writing it — that thread's task holding the line (its branch
//! holds the commit, or its worktree is where the uncommitted line is), or
//! its branch gone (landed and removed). It is a person's, exactly, when
//! such a thread saw it written between turns or not at all (after its
//! last snapshot). Failing those, any thread's agent step with the line
//! answers (a squash of a task's branch holds its lines under another
//! commit), then the tool calls of threads without snapshots (inferred),
//! then the person.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::atsf::ThreadMeta;
use crate::discovery::{self, Found};
use crate::git::Git;
use crate::project::Project;
use crate::snapshot::chain;
use crate::store::Thread;

use super::infer::{self, Written};
use super::linediff::lines;
use super::objects::Objects;
use super::origins::{self, Origin};
use super::porcelain::{self, Blamed};
use super::steps::{self, MessageRef, Owner, Steps};
use super::{AttributionError, Author, Basis, LineAnswer, Reason, target};

/// Each line of a file, with who wrote it.
#[derive(Debug)]
pub struct Blame {
    /// The file, relative to the worktree's root.
    pub path: String,
    /// Each line asked for, in order.
    pub lines: Vec<LineAnswer>,
    /// Threads that could not be read (the others answered).
    pub skipped: Vec<crate::Error>,
}

/// A thread of the repository, with what it can tell of the file.
pub struct Known {
    /// The thread's files.
    pub thread: Thread,
    /// Its `thread.json`.
    pub meta: ThreadMeta,
    /// Its task's branch.
    pub branch: Option<String>,
    /// Where its agent worked.
    pub root: PathBuf,
    /// The commit its branch is on; `None` when the branch is gone.
    tip: Option<String>,
    steps: Steps,
    /// For each line of the file now, its origin in the thread's last
    /// snapshot (`None`: not there); empty when no snapshot holds the file.
    aligned: Vec<Option<Origin>>,
    /// What its tool calls wrote to the file (threads without snapshots).
    writes: Vec<Written>,
    /// For those, the write behind each line of the file.
    inferred: Vec<Option<usize>>,
}

/// The lines `range` (1-based, inclusive; all when `None`) of `file`
/// (relative to where grove runs, or absolute), each with its commit and
/// author.
pub fn blame(
    project: &Project,
    file: &Path,
    range: Option<(usize, usize)>,
) -> Result<Blame, AttributionError> {
    blame_with_threads(project, file, range).map(|(b, _)| b)
}

/// [`blame`], with the threads that answered (for `why`).
pub fn blame_with_threads(
    project: &Project,
    file: &Path,
    range: Option<(usize, usize)>,
) -> Result<(Blame, Vec<Known>), AttributionError> {
    if project.git.is_none() {
        return Err(AttributionError::NoRepository {
            dir: project.cwd.clone(),
        });
    }
    let root = &project.root;
    let rel = target::resolve(root, &project.cwd, file)?;
    let text = crate::fsutil::read(&root.join(&rel))?;
    let count = lines(&text).len();
    let (start, end) = checked(range, count, &rel)?;
    let git = Git::find()?;
    // git blames while the threads are read.
    let running = (count > 0)
        .then(|| {
            git.start(
                root,
                &[
                    "blame",
                    "--porcelain",
                    "-L",
                    &format!("{start},{end}"),
                    "--",
                    &rel,
                ],
                true,
            )
        })
        .transpose()?;
    let objects = Objects::open(root)?;
    let (known, skipped) = read_threads(project, &objects, &rel, &text);
    let blamed = match running {
        None => Vec::new(),
        Some(running) => match running.bytes() {
            Ok(out) => porcelain::parse(&out),
            // git blames tracked files only: all of an untracked one is
            // uncommitted.
            Err(_) if !tracked(&git, root, &rel) => uncommitted(&text, start, end),
            Err(e) => return Err(e.into()),
        },
    };
    let mut judge = Judge {
        project,
        objects: &objects,
        known: &known,
        held: HashMap::new(),
    };
    let lines = blamed.into_iter().map(|b| judge.answer(b)).collect();
    Ok((
        Blame {
            path: rel,
            lines,
            skipped,
        },
        known,
    ))
}

/// `range` checked against a file of `count` lines; all of it by default.
fn checked(
    range: Option<(usize, usize)>,
    count: usize,
    rel: &str,
) -> Result<(usize, usize), AttributionError> {
    let Some((start, end)) = range else {
        return Ok((1, count));
    };
    if start == 0 || end < start || end > count {
        return Err(AttributionError::OutOfRange {
            path: rel.to_string(),
            start,
            end,
            lines: count,
        });
    }
    Ok((start, end))
}

/// Whether git tracks `rel` (an untracked file is not blamed: all of it
/// is uncommitted).
fn tracked(git: &Git, root: &Path, rel: &str) -> bool {
    git.check(root, &["ls-files", "--error-unmatch", "--", rel])
        .unwrap_or(true)
}

/// Lines `start..=end` of `text`, none of them committed.
fn uncommitted(text: &[u8], start: usize, end: usize) -> Vec<Blamed> {
    lines(text)
        .iter()
        .enumerate()
        .skip(start - 1)
        .take(end + 1 - start)
        .map(|(i, l)| Blamed {
            commit: None,
            line: i + 1,
            content: String::from_utf8_lossy(l.strip_suffix(b"\n").unwrap_or(l))
                .trim_end_matches('\r')
                .to_string(),
        })
        .collect()
}

/// Every thread of the repository with what it tells of file `rel`, whose
/// content now is `text`; the threads that could not be read.
fn read_threads(
    project: &Project,
    objects: &Objects,
    rel: &str,
    text: &[u8],
) -> (Vec<Known>, Vec<crate::Error>) {
    let found = match discovery::discover(project, discovery::Options::default()) {
        Ok(d) => d,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut skipped = found.errors;
    let file: Vec<String> = lines(text)
        .iter()
        .map(|l| {
            String::from_utf8_lossy(l.strip_suffix(b"\n").unwrap_or(l))
                .trim_end_matches('\r')
                .to_string()
        })
        .collect();
    let file: Vec<&str> = file.iter().map(String::as_str).collect();
    let mut known = Vec::new();
    for f in found.threads {
        match know(f, objects, rel, text, &file) {
            Ok(Some(k)) => known.push(k),
            Ok(None) => {}
            Err(e) => skipped.push(e),
        }
    }
    (known, skipped)
}

/// What thread `f` tells of the file; `None` when nothing.
fn know(
    f: Found,
    objects: &Objects,
    rel: &str,
    text: &[u8],
    file: &[&str],
) -> crate::Result<Option<Known>> {
    // A thread of the main checkout's `.agent/` worked there.
    let root = f.worktree.clone().unwrap_or_else(|| f.repo_root.clone());
    let root = root.canonicalize().unwrap_or(root);
    let chain = objects.chain(&chain::ref_name(f.thread.id().as_str()))?;
    let steps = steps::of_thread(&f.thread, &chain)?;
    let mut known = Known {
        tip: f.branch.as_deref().and_then(|b| objects.branch(b)),
        branch: f.branch.clone(),
        root,
        steps,
        aligned: Vec::new(),
        writes: Vec::new(),
        inferred: Vec::new(),
        thread: f.thread,
        meta: f.meta,
    };
    if !known.steps.is_empty() {
        if let Some(followed) = origins::follow(objects, &known.steps.trees, rel)? {
            known.aligned = followed.align(text);
        }
        return Ok(Some(known));
    }
    let roots = known.roots();
    known.writes = infer::writes(&known.thread)?
        .into_iter()
        .filter(|w| infer::names(&w.path, rel, &roots))
        .collect();
    if known.writes.is_empty() {
        return Ok(None);
    }
    let writes: Vec<&Written> = known.writes.iter().collect();
    known.inferred = infer::attribute(file, &writes);
    Ok(Some(known))
}

impl Known {
    /// Where the thread's agent may have worked, for its tool calls' paths.
    fn roots(&self) -> Vec<PathBuf> {
        let context = &self.meta.context;
        let mut roots = vec![self.root.clone(), PathBuf::from(&context.working_dir)];
        roots.extend(context.worktree.iter().map(|w| PathBuf::from(&w.path)));
        roots
    }

    /// Whether the thread has snapshots.
    pub fn exact(&self) -> bool {
        !self.steps.is_empty()
    }

    /// A line's answer naming this thread.
    fn answer(&self, author: Author, basis: Basis, reason: Reason) -> LineAnswer {
        LineAnswer {
            line: 0,
            content: String::new(),
            commit: None,
            author,
            basis,
            reason,
            thread_id: Some(self.meta.thread_id.clone()),
            title: Some(self.meta.title.clone()),
            branch: self.branch.clone(),
            message_id: None,
            message_index: None,
            prompt_index: None,
            tool_call_id: None,
            tool: None,
        }
    }
}

/// What one thread says of one line.
enum Claim {
    /// Step `k` of the thread wrote it.
    Step(usize),
    /// The thread's last snapshot does not hold it.
    After,
    /// Its first snapshot held it.
    Before,
    /// Write `w` of the thread (inferred).
    Wrote(usize),
}

/// How strongly a claim answers, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Agent,
    Person,
    AgentElsewhere,
    Inferred,
    PersonBefore,
}

struct Judge<'a> {
    project: &'a Project,
    objects: &'a Objects,
    known: &'a [Known],
    /// Whether thread `i`'s task holds commit `c`, as asked before.
    held: HashMap<(usize, String), bool>,
}

impl Judge<'_> {
    fn answer(&mut self, b: Blamed) -> LineAnswer {
        let i = b.line - 1;
        let mut best: Option<(Rank, usize, Claim)> = None;
        for t in 0..self.known.len() {
            let Some((rank, claim)) = self.claim(t, i, b.commit.as_deref()) else {
                continue;
            };
            if best.as_ref().is_none_or(|(r, _, _)| rank < *r) {
                best = Some((rank, t, claim));
            }
        }
        let mut answer = match best {
            Some((_, t, claim)) => self.explain(t, claim),
            None => LineAnswer {
                line: 0,
                content: String::new(),
                commit: None,
                author: Author::Person,
                basis: Basis::Inferred,
                reason: Reason::NoTask,
                thread_id: None,
                title: None,
                branch: None,
                message_id: None,
                message_index: None,
                prompt_index: None,
                tool_call_id: None,
                tool: None,
            },
        };
        answer.line = b.line;
        answer.content = b.content;
        answer.commit = b.commit;
        answer
    }

    /// What thread `t` says of line `i` (0-based) of commit `commit`.
    fn claim(&mut self, t: usize, i: usize, commit: Option<&str>) -> Option<(Rank, Claim)> {
        let known = self.known;
        let k = &known[t];
        if !k.exact() {
            let w = (*k.inferred.get(i)?)?;
            return Some((Rank::Inferred, Claim::Wrote(w)));
        }
        let holds = self.holds(t, commit);
        // A task whose branch is gone may have landed anywhere.
        let may_hold = holds || (commit.is_some() && k.tip.is_none());
        if k.aligned.is_empty() {
            return holds.then_some((Rank::Person, Claim::After));
        }
        match k.aligned.get(i).copied().flatten() {
            Some(Origin::Step(s)) if k.steps.steps[s].owner == Owner::Agent => {
                let rank = if may_hold {
                    Rank::Agent
                } else {
                    Rank::AgentElsewhere
                };
                Some((rank, Claim::Step(s)))
            }
            Some(Origin::Step(s)) => holds.then_some((Rank::Person, Claim::Step(s))),
            Some(Origin::Before) => holds.then_some((Rank::PersonBefore, Claim::Before)),
            None => holds.then_some((Rank::Person, Claim::After)),
        }
    }

    /// Whether thread `t`'s task holds the line: its worktree is where the
    /// uncommitted line is, or its branch holds the commit.
    fn holds(&mut self, t: usize, commit: Option<&str>) -> bool {
        let known = self.known;
        let k = &known[t];
        let Some(commit) = commit else {
            return k.root == self.project.root;
        };
        let Some(tip) = &k.tip else {
            return false;
        };
        let objects = self.objects;
        *self
            .held
            .entry((t, commit.to_string()))
            .or_insert_with(|| objects.holds(tip, commit))
    }

    fn explain(&self, t: usize, claim: Claim) -> LineAnswer {
        let k = &self.known[t];
        let set_message = |a: &mut LineAnswer, m: Option<&MessageRef>, p: Option<&MessageRef>| {
            a.message_id = m.map(|m| m.id.clone());
            a.message_index = m.map(|m| m.index);
            a.prompt_index = p.map(|p| p.index);
        };
        match claim {
            Claim::Step(s) => {
                let step = &k.steps.steps[s];
                let mut a = match step.owner {
                    Owner::Agent => k.answer(
                        Author::Agent,
                        Basis::Exact,
                        if step.tool_call_id.is_some() {
                            Reason::ToolCall
                        } else {
                            Reason::Turn
                        },
                    ),
                    Owner::Person => k.answer(Author::Person, Basis::Exact, Reason::BetweenTurns),
                };
                set_message(&mut a, step.message.as_ref(), step.prompt.as_ref());
                a.tool_call_id = step.tool_call_id.clone();
                a.tool = step.tool.clone();
                a
            }
            Claim::After => k.answer(Author::Person, Basis::Exact, Reason::AfterSnapshots),
            Claim::Before => k.answer(Author::Person, Basis::Exact, Reason::BeforeThread),
            Claim::Wrote(w) => {
                let written = &k.writes[w];
                let mut a = k.answer(Author::Agent, Basis::Inferred, Reason::ToolInput);
                set_message(&mut a, Some(&written.message), written.prompt.as_ref());
                a.tool_call_id = Some(written.tool_call_id.clone());
                a.tool = Some(written.tool.clone());
                a
            }
        }
    }
}
