//! The record trees of Claude-Code-style transcripts (Claude Code, Sage):
//! JSON Lines whose records link through `uuid` / `parentUuid`, with
//! sidechains. Which records make the conversation, which branches are forks,
//! which records belong to each sidechain.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::Summary;
use crate::atsf;
use crate::error::{IoContext, Result};

/// One line of a transcript.
pub(super) struct Record {
    pub(super) line: u64,
    pub(super) raw: Map<String, Value>,
    pub(super) bytes_hash: String,
}

impl Record {
    pub(super) fn kind(&self) -> &str {
        self.raw
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
    }
    pub(super) fn uuid(&self) -> Option<&str> {
        self.raw.get("uuid").and_then(Value::as_str)
    }
    pub(super) fn parent(&self) -> Option<&str> {
        self.raw.get("parentUuid").and_then(Value::as_str)
    }
    pub(super) fn sidechain(&self) -> bool {
        self.raw.get("isSidechain").and_then(Value::as_bool) == Some(true)
    }
    pub(super) fn timestamp(&self) -> Option<String> {
        let t = self.raw.get("timestamp").and_then(Value::as_str)?;
        atsf::normalize_timestamp(t).ok()
    }
    pub(super) fn str_field(&self, key: &str) -> Option<&str> {
        self.raw
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
    /// Message id in ATSF: the record's uuid, else a hash of its bytes.
    pub(super) fn message_id(&self) -> String {
        match self.uuid() {
            Some(u) => u.to_string(),
            None => format!("{}-{}", self.kind(), self.bytes_hash),
        }
    }
    pub(super) fn content(&self) -> Option<&Value> {
        self.raw.get("message")?.get("content")
    }
    /// A user record whose content is only tool results.
    pub(super) fn only_tool_results(&self) -> bool {
        self.kind() == "user"
            && self
                .content()
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    !blocks.is_empty()
                        && blocks
                            .iter()
                            .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                })
    }
    /// A prompt or a reply: what makes a branch a fork.
    pub(super) fn substantive(&self) -> bool {
        matches!(self.kind(), "user" | "assistant") && !self.only_tool_results()
    }
}

/// Reads one file; malformed lines are reported and skipped.
pub(super) fn read_records(path: &Path, summary: &mut Summary) -> Result<Vec<Record>> {
    let text = std::fs::read(path).ctx("reading", path)?;
    let mut out = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let number = i as u64 + 1;
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(raw)) => out.push(Record {
                line: number,
                raw,
                bytes_hash: hex16(line),
            }),
            Ok(_) => {
                summary
                    .errors
                    .push(format!("{}:{number}: not a JSON object", path.display()));
                summary.skip("malformed", "a line that is not a JSON object".into());
            }
            Err(e) => {
                summary
                    .errors
                    .push(format!("{}:{number}: {e}", path.display()));
                summary.skip("malformed", "a line that is not valid JSON".into());
            }
        }
    }
    Ok(out)
}

fn hex16(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A record of a tree-shaped transcript, as [`shape`] needs it.
pub(super) trait Node {
    fn uuid(&self) -> Option<&str>;
    fn parent(&self) -> Option<&str>;
    fn sidechain(&self) -> bool;
    /// A prompt or a reply: what makes a branch a fork.
    fn substantive(&self) -> bool;
    /// Line number in the file.
    fn line(&self) -> u64;
    /// Normalized timestamp, when it has one.
    fn time(&self) -> Option<String>;
}

impl Node for Record {
    fn uuid(&self) -> Option<&str> {
        Record::uuid(self)
    }
    fn parent(&self) -> Option<&str> {
        Record::parent(self)
    }
    fn sidechain(&self) -> bool {
        Record::sidechain(self)
    }
    fn substantive(&self) -> bool {
        Record::substantive(self)
    }
    fn line(&self) -> u64 {
        self.line
    }
    fn time(&self) -> Option<String> {
        self.timestamp()
    }
}

/// How a transcript's records divide into threads.
pub(super) struct Shape {
    /// The conversation's records: its chain and every record no other
    /// thread took, in file order.
    pub main_records: Vec<usize>,
    /// (leaf, records from the root, the record where it left the conversation).
    pub forks: Vec<(usize, Vec<usize>, usize)>,
    /// (root uuid, records in file order).
    pub sidechains: Vec<(String, Vec<usize>)>,
}

/// Divides `records`. The conversation is the chain through the last prompt
/// or reply written (and on to the newest leaf below it): a hook's progress
/// record written later on another branch never takes the conversation
/// away. Another branch holding a prompt or a reply is a fork (leaves of one
/// branch make one fork); sidechains group by their root. In a subagent file
/// (`agent_file`) every record is a sidechain and all of them are the
/// conversation.
pub(super) fn shape<N: Node>(records: &[N], agent_file: bool) -> Shape {
    let tree = Tree::new(records, agent_file);
    let main_chain = tree.main_chain();
    let main_set: HashSet<usize> = main_chain.iter().copied().collect();
    let (forks, mut claimed) = tree.forks(&main_set);
    let sidechains = if agent_file {
        Vec::new()
    } else {
        tree.sidechains()
    };
    for (_, members) in &sidechains {
        claimed.extend(members.iter().copied());
    }
    let main_records = (0..records.len())
        .filter(|i| main_set.contains(i) || !claimed.contains(i))
        .collect();
    Shape {
        main_records,
        forks,
        sidechains,
    }
}

/// The records' tree: who is whose parent.
struct Tree<'a, N> {
    records: &'a [N],
    agent_file: bool,
    by_uuid: HashMap<&'a str, usize>,
    children: HashMap<&'a str, Vec<usize>>,
}

impl<'a, N: Node> Tree<'a, N> {
    fn new(records: &'a [N], agent_file: bool) -> Self {
        let by_uuid = records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.uuid().map(|u| (u, i)))
            .collect();
        let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if let Some(p) = r.parent() {
                children.entry(p).or_default().push(i);
            }
        }
        Tree {
            records,
            agent_file,
            by_uuid,
            children,
        }
    }

    fn has_child(&self, i: usize) -> bool {
        self.records[i]
            .uuid()
            .is_some_and(|u| self.children.contains_key(u))
    }

    /// The records from the root to `leaf`.
    fn chain_to(&self, leaf: usize) -> Vec<usize> {
        let mut chain = vec![leaf];
        let mut seen = HashSet::from([leaf]);
        let mut cur = leaf;
        while let Some(&p) = self.records[cur].parent().and_then(|p| self.by_uuid.get(p)) {
            if !seen.insert(p) {
                break;
            }
            chain.push(p);
            cur = p;
        }
        chain.reverse();
        chain
    }

    /// In a subagent file every record is a sidechain: it is the main line there.
    fn in_main(&self, i: usize) -> bool {
        let r = &self.records[i];
        r.uuid().is_some() && (self.agent_file || !r.sidechain())
    }

    fn newest(&self, idx: &[usize]) -> Option<usize> {
        idx.iter()
            .copied()
            .max_by_key(|&i| (self.records[i].time(), self.records[i].line()))
    }

    fn main_leaves(&self) -> Vec<usize> {
        (0..self.records.len())
            .filter(|&i| self.in_main(i) && !self.has_child(i))
            .collect()
    }

    /// The chain to the newest leaf below the last prompt or reply; without
    /// any, to the newest leaf.
    fn main_chain(&self) -> Vec<usize> {
        let last_said = (0..self.records.len())
            .rev()
            .find(|&i| self.in_main(i) && self.records[i].substantive());
        let leaf = match last_said {
            Some(said) => {
                let mut below = Vec::new();
                let mut stack = vec![said];
                let mut seen = HashSet::new();
                while let Some(i) = stack.pop() {
                    if !seen.insert(i) {
                        continue;
                    }
                    let kids: Vec<usize> = self.records[i]
                        .uuid()
                        .and_then(|u| self.children.get(u))
                        .map(|k| k.iter().copied().filter(|&c| self.in_main(c)).collect())
                        .unwrap_or_default();
                    if kids.is_empty() {
                        below.push(i);
                    }
                    stack.extend(kids);
                }
                self.newest(&below)
            }
            None => self.newest(&self.main_leaves()),
        };
        leaf.map(|l| self.chain_to(l)).unwrap_or_default()
    }

    /// Other branches that hold a prompt or a reply: (leaf, records from the
    /// root, where it left the conversation). Leaves of one branch (a
    /// progress record beside a tool result) make one fork. Also every
    /// record the conversation and the forks took.
    #[allow(clippy::type_complexity)]
    fn forks(
        &self,
        main_set: &HashSet<usize>,
    ) -> (Vec<(usize, Vec<usize>, usize)>, HashSet<usize>) {
        let mut forks: Vec<(usize, Vec<usize>, usize)> = Vec::new();
        let mut claimed: HashSet<usize> = main_set.clone();
        let mut fork_of: HashMap<usize, usize> = HashMap::new();
        let mut others: Vec<usize> = self
            .main_leaves()
            .into_iter()
            .filter(|l| !main_set.contains(l))
            .collect();
        others
            .sort_by_key(|&i| std::cmp::Reverse((self.records[i].time(), self.records[i].line())));
        for leaf in others {
            let chain = self.chain_to(leaf);
            let Some(split) = chain.iter().rposition(|i| main_set.contains(i)) else {
                continue;
            };
            let branch = &chain[split + 1..];
            if let Some(&f) = branch.iter().find_map(|i| fork_of.get(i)) {
                for &i in branch {
                    if fork_of.insert(i, f).is_none() {
                        forks[f].1.push(i);
                        claimed.insert(i);
                    }
                }
                forks[f].1.sort();
                continue;
            }
            if branch.iter().any(|&i| self.records[i].substantive()) {
                let f = forks.len();
                for &i in branch {
                    fork_of.insert(i, f);
                    claimed.insert(i);
                }
                forks.push((leaf, chain.clone(), chain[split]));
            }
        }
        (forks, claimed)
    }

    /// Sidechains written inline: (root uuid, records in file order).
    fn sidechains(&self) -> Vec<(String, Vec<usize>)> {
        let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, r) in self.records.iter().enumerate() {
            if r.sidechain() && r.uuid().is_some() {
                let root = self
                    .chain_to(i)
                    .into_iter()
                    .find(|&j| self.records[j].sidechain())
                    .unwrap_or(i);
                groups.entry(root).or_default().push(i);
            }
        }
        let mut roots: Vec<usize> = groups.keys().copied().collect();
        roots.sort();
        roots
            .into_iter()
            .map(|root| {
                let mut all = groups[&root].clone();
                all.sort();
                let uuid = self.records[root].uuid().unwrap_or("root").to_string();
                (uuid, all)
            })
            .collect()
    }
}

/// Makes `fork` a fork of `main` at message `at`: `originThreadID`,
/// `forkPointIndex`, and the relationship on both threads, as `grove fork`
/// writes them.
pub(super) fn link_fork(
    main: &mut atsf::ThreadMeta,
    fork: &mut atsf::ThreadMeta,
    at: Option<u64>,
    created_at: Option<String>,
) {
    let rel = |thread_id: &str, role| atsf::Relationship {
        thread_id: thread_id.to_string(),
        kind: atsf::RelationKind::Fork,
        role,
        message_index: at,
        created_at: created_at.clone(),
        comment: None,
        extra: atsf::Extra::new(),
    };
    fork.origin_thread_id = Some(main.thread_id.clone());
    fork.fork_point_index = at;
    fork.relationships = Some(vec![rel(&main.thread_id, atsf::RelationRole::Child)]);
    main.relationships
        .get_or_insert_with(Vec::new)
        .push(rel(&fork.thread_id, atsf::RelationRole::Parent));
}
