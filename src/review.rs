//! A task as a reviewer reads it: each turn's prompt, the agent's reply and
//! the diff that turn produced, with the person's edits between turns as
//! entries of their own, and the commits of the task's branch that carry
//! each change.
//!
//! The diffs come from the thread's turn snapshots (see
//! [`crate::snapshot`]): a turn's is the change from the snapshot taken
//! when its prompt was submitted to the one taken when it ended; the
//! person's, from one turn's end to the next prompt. A thread without
//! snapshots (imported, or captured before them) still lists its turns,
//! without diffs, and says so.

use serde::Serialize;

use crate::atsf::{Role, ThreadMeta};
use crate::error::Result;
use crate::git::Repo;
use crate::snapshot::{At, Record};
use crate::store::Thread;

/// The review of one task.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub thread_id: String,
    pub title: String,
    pub branch: Option<String>,
    /// Whether the thread has turn snapshots (else no entry has a diff).
    pub snapshots: bool,
    pub entries: Vec<Entry>,
}

/// A turn of the agent's, or the person's edits between two turns.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `turn` or `person`.
    pub kind: String,
    /// For a turn: its prompt's message index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent's text replies in the turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<String>,
    /// The snapshots the change runs between (`from` taken first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The files the change touches.
    pub files: Vec<String>,
    /// `git diff` between the two snapshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Commits of the task's branch that touch those files (`hash subject`).
    pub commits: Vec<String>,
}

/// A turn as the thread's messages tell it.
struct Told {
    index: u64,
    prompt: String,
    replies: Vec<String>,
}

/// The review of `thread`; `repo` (the task's repository) gives the diffs
/// and commits.
pub fn review(thread: &Thread, repo: Option<&Repo>) -> Result<Review> {
    let meta = thread.meta()?;
    let (told, mut taken) = read(thread)?;
    taken.extend(
        crate::snapshot::record::pending(&meta)
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok()),
    );
    // Only the snapshots the thread's own chain holds (see chain::commits).
    let chain = match repo {
        Some(repo) => crate::snapshot::chain::commits(
            &repo.git,
            &repo.main_root,
            &crate::snapshot::chain::ref_name(thread.id().as_str()),
        )?,
        None => Default::default(),
    };
    taken.retain(|(_, r)| chain.get(&r.commit) == Some(&r.tree));
    let snapshots = !taken.is_empty();
    let entries = match repo {
        Some(repo) if snapshots => entries(repo, &meta, &told, &taken),
        _ => told.into_iter().map(turn_without_diff).collect(),
    };
    Ok(Review {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        branch: meta.context.git_branch.clone(),
        snapshots,
        entries,
    })
}

/// Each snapshot with the index of the message carrying it, in order.
type Taken = Vec<(u64, Record)>;

impl Review {
    /// How many secrets the diffs hold (the rest comes from the thread,
    /// checked as the thread is).
    pub fn secrets(&self) -> usize {
        self.entries
            .iter()
            .filter_map(|e| e.diff.as_deref())
            .map(|d| crate::secrets::redact_text(d).1)
            .sum()
    }

    /// Replaces each secret in the diffs; returns how many.
    pub fn redact(&mut self) -> usize {
        let mut n = 0;
        for diff in self.entries.iter_mut().filter_map(|e| e.diff.as_mut()) {
            let (text, found) = crate::secrets::redact_text(diff);
            *diff = text;
            n += found;
        }
        n
    }

    /// Where each entry goes among the thread's messages: before the
    /// message index it is paired with (the next turn's prompt), or after
    /// the last (`None`).
    pub fn placed(&self) -> Vec<(Option<u64>, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let next_prompt = self.entries[i + 1..]
                    .iter()
                    .find(|n| n.kind == "turn")
                    .and_then(|n| n.index);
                (next_prompt, e)
            })
            .collect()
    }
}

/// The turns the messages tell, and every snapshot they carry, in order.
fn read(thread: &Thread) -> Result<(Vec<Told>, Taken)> {
    let mut told: Vec<Told> = Vec::new();
    let mut taken = Vec::new();
    for (index, message) in (0u64..).zip(thread.messages()?) {
        let message = message?;
        taken.extend(
            crate::snapshot::record::of_message(&message)
                .into_iter()
                .map(|r| (index, r)),
        );
        let text = message.text();
        if text.trim().is_empty() {
            continue;
        }
        match (&message.role, told.last_mut()) {
            (Role::User, _) => told.push(Told {
                index,
                prompt: text.trim().to_string(),
                replies: Vec::new(),
            }),
            (Role::Agent, Some(turn)) => turn.replies.push(text.trim().to_string()),
            _ => {}
        }
    }
    Ok((told, taken))
}

fn turn_without_diff(t: Told) -> Entry {
    Entry {
        kind: "turn".into(),
        index: Some(t.index),
        prompt: Some(t.prompt),
        replies: t.replies,
        from: None,
        to: None,
        files: Vec::new(),
        diff: None,
        commits: Vec::new(),
    }
}

/// Turns and the person's edits, from the snapshots in the order taken: a
/// turn runs from a `prompt` snapshot to the `turnEnd` (or next `prompt`)
/// after it; what changed from a turn's end to the next prompt is the
/// person's.
fn entries(repo: &Repo, meta: &ThreadMeta, told: &[Told], taken: &[(u64, Record)]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut last_end: Option<&Record> = None;
    let prompts: Vec<usize> = (0..taken.len())
        .filter(|&i| taken[i].1.at == At::Prompt)
        .collect();
    for (n, &start) in prompts.iter().enumerate() {
        let (carrier, prompt) = (&taken[start].0, &taken[start].1);
        if let Some(end) = last_end
            && end.tree != prompt.tree
        {
            out.push(change(repo, meta, "person", end, prompt));
        }
        let next = prompts.get(n + 1).copied().unwrap_or(taken.len());
        // The turn's last snapshot: its end, else its last tool call's.
        let end = taken[start + 1..next]
            .iter()
            .rev()
            .map(|(_, r)| r)
            .find(|r| r.at == At::TurnEnd)
            .or_else(|| taken[start + 1..next].last().map(|(_, r)| r))
            .unwrap_or(prompt);
        let mut entry = change(repo, meta, "turn", prompt, end);
        // The prompt's snapshot is carried by the prompt's own message.
        if let Some(t) = told.iter().find(|t| t.index == *carrier) {
            entry.index = Some(t.index);
            entry.prompt = Some(t.prompt.clone());
            entry.replies = t.replies.clone();
        }
        out.push(entry);
        last_end = Some(end);
    }
    out
}

/// The change from snapshot `from` to `to`.
fn change(repo: &Repo, meta: &ThreadMeta, kind: &str, from: &Record, to: &Record) -> Entry {
    let trees = [from.tree.as_str(), to.tree.as_str()];
    // Trees named by a thread are checked before git sees them.
    let sane = trees.iter().all(|t| crate::git::is_object_id(t));
    let git = |args: &[&str]| -> Option<String> {
        let out = repo.git.output(&repo.main_root, args).ok()?;
        out.success.then_some(out.stdout)
    };
    let files: Vec<String> = if sane {
        git(&["diff", "--name-only", "-z", trees[0], trees[1]])
            .map(|s| {
                s.split('\0')
                    .filter(|f| !f.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let diff = if sane && !files.is_empty() {
        git(&["diff", trees[0], trees[1]])
    } else {
        None
    };
    Entry {
        kind: kind.into(),
        index: None,
        prompt: None,
        replies: Vec::new(),
        from: Some(from.tree.clone()),
        to: Some(to.tree.clone()),
        commits: commits_touching(repo, meta, &files),
        files,
        diff,
    }
}

/// Commits of the task's branch since its base that touch `files`.
fn commits_touching(repo: &Repo, meta: &ThreadMeta, files: &[String]) -> Vec<String> {
    let (Some(branch), Some(base)) = (
        meta.context.git_branch.as_deref(),
        meta.context.base_commit(),
    ) else {
        return Vec::new();
    };
    if files.is_empty() || branch.starts_with('-') || !crate::git::is_object_id(base) {
        return Vec::new();
    }
    let range = format!("{base}..refs/heads/{branch}");
    // The names are files, never pathspec magic.
    let mut args = vec![
        "--literal-pathspecs",
        "log",
        "--format=%h %s",
        "--end-of-options",
        &range,
        "--",
    ];
    args.extend(files.iter().map(String::as_str));
    match repo.git.output(&repo.main_root, &args) {
        Ok(out) if out.success => out.stdout.lines().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}
