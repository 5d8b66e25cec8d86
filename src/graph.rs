//! The relationship graph between threads: mentions (linking two existing
//! threads on both sides), removing links to deleted threads, and the graph
//! as nodes and edges for `--tree`.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::atsf::{RelationKind, RelationRole, Relationship};
use crate::discovery::{Found, Status};
use crate::error::{Error, Result};
use crate::store::Thread;

/// Records that `from` mentions `to`: `to` gets the `parent` side, `from`
/// (the thread that refers to it) the `child` side, at `from`'s last message.
/// Both threads are locked (in a fixed order, so two mentions cannot
/// deadlock) while both sides are written; if the second write fails the
/// first is undone. Returns false when the mention already existed.
pub fn mention(from: &Found, to: &Found, comment: Option<String>) -> Result<bool> {
    if from.meta.thread_id == to.meta.thread_id {
        return Err(Error::Other(format!(
            "thread {} cannot mention itself",
            from.meta.thread_id
        )));
    }
    let (first, second) = if from.thread.dir() <= to.thread.dir() {
        (&from.thread, &to.thread)
    } else {
        (&to.thread, &from.thread)
    };
    let lock_a = first.lock()?;
    let lock_b = second.lock()?;
    let (from_lock, to_lock) = if std::ptr::eq(first, &from.thread) {
        (&lock_a, &lock_b)
    } else {
        (&lock_b, &lock_a)
    };
    let mut from_meta = from_lock.meta()?;
    let mut to_meta = to_lock.meta()?;
    let exists = |rels: &[Relationship], id: &str, role| {
        rels.iter()
            .any(|r| r.thread_id == id && r.kind == RelationKind::Mention && r.role == role)
    };
    if exists(
        from_meta.relationships(),
        &to_meta.thread_id,
        RelationRole::Child,
    ) && exists(
        to_meta.relationships(),
        &from_meta.thread_id,
        RelationRole::Parent,
    ) {
        return Ok(false);
    }
    let index = from_meta.stats.message_count.checked_sub(1);
    let now = crate::atsf::now_timestamp();
    let entry = |id: &str, role| Relationship {
        thread_id: id.to_string(),
        kind: RelationKind::Mention,
        role,
        message_index: index,
        created_at: Some(now.clone()),
        comment: comment.clone(),
        extra: Default::default(),
    };
    let from_before = from_meta.clone();
    if !exists(
        from_meta.relationships(),
        &to_meta.thread_id,
        RelationRole::Child,
    ) {
        from_meta
            .relationships
            .get_or_insert_with(Vec::new)
            .push(entry(&to_meta.thread_id, RelationRole::Child));
    }
    if !exists(
        to_meta.relationships(),
        &from_meta.thread_id,
        RelationRole::Parent,
    ) {
        to_meta
            .relationships
            .get_or_insert_with(Vec::new)
            .push(entry(&from_meta.thread_id, RelationRole::Parent));
    }
    from_lock.save(&mut from_meta)?;
    if let Err(e) = to_lock.save(&mut to_meta) {
        let mut restore = from_before;
        restore.v = from_meta.v;
        let _ = from_lock.save(&mut restore);
        return Err(e);
    }
    drop(lock_b);
    drop(lock_a);
    Ok(true)
}

/// Removes from `thread` every relationship entry that points at one of
/// `ids`; writes only when there is one. Returns how many were removed.
pub fn remove_links(thread: &Thread, ids: &HashSet<String>) -> Result<usize> {
    let meta = thread.meta()?;
    if !meta
        .relationships()
        .iter()
        .any(|r| ids.contains(&r.thread_id))
    {
        return Ok(0);
    }
    let mut removed = 0;
    thread.update_meta(|m| {
        if let Some(rels) = &mut m.relationships {
            let before = rels.len();
            rels.retain(|r| !ids.contains(&r.thread_id));
            removed = before - rels.len();
            if rels.is_empty() {
                m.relationships = None;
            }
        }
    })?;
    Ok(removed)
}

/// A thread in the graph.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub thread_id: String,
    /// `None` for a thread that no longer exists (a dangling link).
    pub title: Option<String>,
    pub status: Option<Status>,
    pub archived: bool,
    /// False when the thread is only known from another thread's link.
    pub exists: bool,
    #[serde(skip)]
    pub created_at: String,
}

/// A relationship, from parent to child. `type` is `fork`, `handoff`,
/// `mention` (from the mentioned thread to the one mentioning it) or
/// `subagent` (from `mainThreadID`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Nodes and edges.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

impl Graph {
    /// The graph of every relationship among `threads`, with the threads
    /// they name that are not among them as nodes that do not exist.
    pub fn build(threads: &[Found]) -> Graph {
        let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
        for f in threads {
            nodes.insert(
                f.meta.thread_id.clone(),
                Node {
                    thread_id: f.meta.thread_id.clone(),
                    title: Some(f.meta.title.clone()),
                    status: Some(f.status),
                    archived: f.meta.is_archived(),
                    exists: true,
                    created_at: f.meta.created_at.clone(),
                },
            );
        }
        let mut edges: Vec<Edge> = Vec::new();
        let mut seen = HashSet::new();
        let mut push = |edge: Edge, edges: &mut Vec<Edge>| {
            if seen.insert((edge.from.clone(), edge.to.clone(), edge.kind.clone())) {
                edges.push(edge);
            }
        };
        for f in threads {
            let me = &f.meta.thread_id;
            for r in f.meta.relationships() {
                let (from, to) = match r.role {
                    RelationRole::Parent => (me.clone(), r.thread_id.clone()),
                    RelationRole::Child => (r.thread_id.clone(), me.clone()),
                };
                push(
                    Edge {
                        from,
                        to,
                        kind: r.kind.as_str().to_string(),
                        message_index: r.message_index,
                        comment: r.comment.clone(),
                    },
                    &mut edges,
                );
            }
            // A fork another tool recorded by its origin alone.
            if let Some(origin) = f.meta.origin()
                && !f.meta.relationships().iter().any(|r| r.thread_id == origin)
            {
                push(
                    Edge {
                        from: origin.to_string(),
                        to: me.clone(),
                        kind: "fork".into(),
                        message_index: f.meta.fork_point_index,
                        comment: None,
                    },
                    &mut edges,
                );
            }
            if let Some(main) = &f.meta.main_thread_id {
                push(
                    Edge {
                        from: main.clone(),
                        to: me.clone(),
                        kind: "subagent".into(),
                        message_index: None,
                        comment: None,
                    },
                    &mut edges,
                );
            }
        }
        for e in &edges {
            for id in [&e.from, &e.to] {
                nodes.entry(id.clone()).or_insert_with(|| Node {
                    thread_id: id.clone(),
                    title: None,
                    status: None,
                    archived: false,
                    exists: false,
                    created_at: String::new(),
                });
            }
        }
        Graph {
            nodes: nodes.into_values().collect(),
            edges,
        }
    }

    /// The node of `id`.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.thread_id == id)
    }

    /// Edges that shape the tree (all but mentions) into `id`.
    pub fn parents_of(&self, id: &str) -> impl Iterator<Item = &Edge> {
        self.edges
            .iter()
            .filter(move |e| e.to == id && e.kind != "mention")
    }

    /// Tree edges out of `id`, in message order.
    pub fn children_of(&self, id: &str) -> Vec<&Edge> {
        let mut out: Vec<&Edge> = self
            .edges
            .iter()
            .filter(|e| e.from == id && e.kind != "mention")
            .collect();
        out.sort_by(|a, b| {
            (a.message_index, self.created(&a.to), &a.to).cmp(&(
                b.message_index,
                self.created(&b.to),
                &b.to,
            ))
        });
        out
    }

    /// Threads `id` mentions.
    pub fn mentions_of(&self, id: &str) -> Vec<&Edge> {
        self.edges
            .iter()
            .filter(|e| e.to == id && e.kind == "mention")
            .collect()
    }

    /// The root of `id`'s tree: followed up through fork, handoff and
    /// subagent edges (a cycle stops the walk).
    pub fn root_of<'a>(&'a self, id: &'a str) -> &'a str {
        let mut current = id;
        let mut visited = HashSet::new();
        while visited.insert(current) {
            match self.parents_of(current).next() {
                Some(e) => current = &e.from,
                None => break,
            }
        }
        current
    }

    /// Threads with no parent in the tree, oldest first.
    pub fn roots(&self) -> Vec<&Node> {
        let mut roots: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| self.parents_of(&n.thread_id).next().is_none())
            .collect();
        roots.sort_by(|a, b| (&a.created_at, &a.thread_id).cmp(&(&b.created_at, &b.thread_id)));
        roots
    }

    /// The nodes and edges connected to `id` (mentions included).
    pub fn family_of(&self, id: &str) -> Graph {
        let mut ids: HashSet<&str> = HashSet::from([id]);
        let mut queue = vec![id];
        while let Some(current) = queue.pop() {
            for e in &self.edges {
                let other = if e.from == current {
                    &e.to
                } else if e.to == current {
                    &e.from
                } else {
                    continue;
                };
                if ids.insert(other) {
                    queue.push(other);
                }
            }
        }
        Graph {
            nodes: self
                .nodes
                .iter()
                .filter(|n| ids.contains(n.thread_id.as_str()))
                .cloned()
                .collect(),
            edges: self
                .edges
                .iter()
                .filter(|e| ids.contains(e.from.as_str()))
                .cloned()
                .collect(),
        }
    }

    fn created(&self, id: &str) -> String {
        self.node(id)
            .map(|n| n.created_at.clone())
            .unwrap_or_default()
    }
}
