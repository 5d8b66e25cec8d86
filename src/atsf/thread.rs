use serde::{Deserialize, Serialize};

use super::{Extra, Role};
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
    #[serde(flatten)]
    pub extra: Extra,
}

impl ThreadMeta {
    /// The application-specific `metadata` object, created when absent.
    pub fn metadata_mut(&mut self) -> &mut Extra {
        self.metadata.get_or_insert_with(Extra::new)
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
    #[serde(flatten)]
    pub extra: Extra,
}

impl Stats {
    /// Adds one message's contribution.
    pub fn add(&mut self, message: &Message) {
        self.message_count += 1;
        match message.role {
            Role::User => self.user_message_count += 1,
            Role::Agent => self.agent_message_count += 1,
            Role::System => {}
        }
        self.tool_call_count += message.tool_call_count() as u64;
    }

    /// True when the four counts equal `other`'s (extension fields aside).
    pub fn same_counts(&self, other: &Stats) -> bool {
        (
            self.message_count,
            self.user_message_count,
            self.agent_message_count,
            self.tool_call_count,
        ) == (
            other.message_count,
            other.user_message_count,
            other.agent_message_count,
            other.tool_call_count,
        )
    }
}
