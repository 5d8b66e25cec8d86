use serde::{Deserialize, Serialize};

use super::{Extra, GitState, Relationship, Role};
use crate::atsf::Message;

/// `thread.json`: the thread's metadata envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMeta {
    pub spec_version: String,
    pub thread_id: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    pub agent: Agent,
    pub context: Context,
    pub stats: Stats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,

    // Extensions (documented in the README; other ATSF readers ignore them).
    /// Version counter, bumped by every write of this file grove makes; a
    /// write that finds another value than it read is a conflict (seed 001).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v: Option<u64>,
    /// Hidden from `grove list` unless `--archived`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// Fork, handoff and mention links, stored on both threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relationships: Option<Vec<Relationship>>,
    /// The thread this one was forked from.
    #[serde(
        rename = "originThreadID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_thread_id: Option<String>,
    /// Index of the origin's last message copied into this fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_point_index: Option<u64>,
    /// For a subagent thread, the thread that started it.
    #[serde(
        rename = "mainThreadID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub main_thread_id: Option<String>,
    /// Git state at the last checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitState>,
    /// What was accomplished, as of the last checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_summary: Option<String>,
    /// Files changed since the thread's initial commit (committed or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_touched: Option<Vec<Note>>,
    /// Remaining work, as of the last checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_steps: Option<Vec<Note>>,

    #[serde(flatten)]
    pub extra: Extra,
}

impl ThreadMeta {
    /// The application-specific `metadata` object, created when absent.
    pub fn metadata_mut(&mut self) -> &mut Extra {
        self.metadata.get_or_insert_with(Extra::new)
    }

    /// grove's own section, `metadata.grove`.
    pub fn grove(&self) -> super::grove::ThreadSection<'_> {
        super::grove::ThreadSection::of(self.metadata.as_ref())
    }

    /// grove's own section, `metadata.grove`, to change (made when missing).
    pub fn grove_mut(&mut self) -> super::grove::ThreadSectionMut<'_> {
        super::grove::ThreadSectionMut::of(self.metadata_mut())
    }

    /// The version counter (`v`), 0 when absent.
    pub fn version(&self) -> u64 {
        self.v.unwrap_or(0)
    }

    /// Whether the thread is archived.
    pub fn is_archived(&self) -> bool {
        self.archived == Some(true)
    }

    /// The thread this one was forked from: `originThreadID`, or
    /// OpenAgentManager's `parentThreadId` (kept as written, read as the same).
    pub fn origin(&self) -> Option<&str> {
        self.origin_thread_id
            .as_deref()
            .or_else(|| self.extra.get("parentThreadId")?.as_str())
    }

    /// The relationships (empty when there are none).
    pub fn relationships(&self) -> &[Relationship] {
        self.relationships.as_deref().unwrap_or_default()
    }

    /// `metadata.tags`, as HQ checkpoints keep them (strings only).
    pub fn tags(&self) -> Vec<String> {
        self.metadata
            .as_ref()
            .and_then(|m| m.get("tags"))
            .and_then(|t| t.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Adds `tags` to `metadata.tags`, keeping order and skipping duplicates.
    pub fn add_tags(&mut self, tags: &[String]) {
        let mut all = self.tags();
        for t in tags {
            if !all.contains(t) {
                all.push(t.clone());
            }
        }
        self.metadata_mut()
            .insert("tags".into(), serde_json::Value::from(all));
    }
}

/// `thread.json` `agent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<serde_json::Number>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread.json` `context`: where the thread was started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub working_dir: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Context {
    /// `baseCommit` (an extension of grove's): the commit a task's branch
    /// started from, as recorded — from a thread, so not yet checked.
    pub fn base_commit(&self) -> Option<&str> {
        self.extra.get("baseCommit").and_then(|v| v.as_str())
    }
}

/// `context.worktree`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeInfo {
    pub path: String,
    pub branch: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread.json` `stats`: counts derived from `messages.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub message_count: u64,
    pub user_message_count: u64,
    pub agent_message_count: u64,
    pub tool_call_count: u64,
    /// grove's extension: the sums of the messages' token counts. Present
    /// once an agent message was counted (zeros when none reported usage),
    /// so its absence beside agent messages says an older grove counted
    /// these stats and they must be counted again.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_totals"
    )]
    pub tokens: Option<TokenTotals>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `stats.tokens`: the thread's token totals, each the sum of that count
/// over its messages (see [`super::Tokens`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_creation: u64,
    #[serde(default)]
    pub reasoning: u64,
}

/// `stats.tokens` when it has grove's shape; anything else (another tool's
/// field of the same name) reads as absent, so the totals are counted
/// again rather than the whole `thread.json` refused.
fn lenient_totals<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TokenTotals>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

impl TokenTotals {
    /// Adds one message's counts.
    pub fn add(&mut self, t: &super::Tokens) {
        let n = |c: Option<u64>| c.unwrap_or(0);
        self.input = self.input.saturating_add(n(t.input));
        self.output = self.output.saturating_add(n(t.output));
        self.cache_read = self.cache_read.saturating_add(n(t.cache_read));
        self.cache_creation = self.cache_creation.saturating_add(n(t.cache_creation));
        self.reasoning = self.reasoning.saturating_add(n(t.reasoning));
    }
}

impl Stats {
    /// Adds one message's contribution.
    pub fn add(&mut self, message: &Message) {
        self.message_count += 1;
        match message.role {
            Role::User => self.user_message_count += 1,
            Role::Agent => self.agent_message_count += 1,
            Role::System | Role::Other(_) => {}
        }
        self.tool_call_count += message.tool_call_count() as u64;
        if message.role == Role::Agent || message.tokens.is_some() {
            let totals = self.tokens.get_or_insert_with(TokenTotals::default);
            if let Some(t) = &message.tokens {
                totals.add(t);
            }
        }
    }

    /// Whether these stats lack the token totals although they count agent
    /// messages: an older grove counted them, so they are counted again.
    pub fn lacks_tokens(&self) -> bool {
        self.tokens.is_none() && self.agent_message_count > 0
    }

    /// True when the counts and token totals equal `other`'s (extension
    /// fields aside).
    pub fn same_counts(&self, other: &Stats) -> bool {
        (
            self.message_count,
            self.user_message_count,
            self.agent_message_count,
            self.tool_call_count,
            self.tokens,
        ) == (
            other.message_count,
            other.user_message_count,
            other.agent_message_count,
            other.tool_call_count,
            other.tokens,
        )
    }
}

/// An entry of `filesTouched` or `nextSteps`: a string as grove writes it,
/// or whatever another tool wrote (HQ's `{path, reason}`, `{step}`), kept
/// as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Note(pub serde_json::Value);

impl Note {
    /// The entry as one line: the string, else its `path` / `step` / `text`
    /// with a `reason` after it, else the JSON.
    pub fn text(&self) -> String {
        use serde_json::Value;
        match &self.0 {
            Value::String(s) => s.clone(),
            Value::Object(o) => {
                let main = ["path", "step", "text", "title", "name"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_str));
                let reason = o.get("reason").and_then(Value::as_str);
                match (main, reason) {
                    (Some(m), Some(r)) => format!("{m} ({r})"),
                    (Some(m), None) => m.to_string(),
                    _ => self.0.to_string(),
                }
            }
            other => other.to_string(),
        }
    }
}

impl From<String> for Note {
    fn from(s: String) -> Self {
        Note(serde_json::Value::String(s))
    }
}

/// Notes from strings.
pub fn notes(items: Vec<String>) -> Vec<Note> {
    items.into_iter().map(Note::from).collect()
}
