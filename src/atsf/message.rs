use serde::{Deserialize, Serialize};

use super::{ContentBlock, Extra};

/// Who wrote a message. A value the spec does not name is kept as it is
/// ([`Role::Other`]) and written back unchanged: another tool's role is not
/// a reason to drop its message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Agent,
    System,
    /// A role the spec does not name, exactly as written.
    Other(String),
}

impl Role {
    /// The role as the format spells it.
    pub fn as_str(&self) -> &str {
        match self {
            Role::User => "user",
            Role::Agent => "agent",
            Role::System => "system",
            Role::Other(s) => s,
        }
    }

    /// The role spelled `s`.
    pub fn parse(s: &str) -> Role {
        match s {
            "user" => Role::User,
            "agent" => Role::Agent,
            "system" => Role::System,
            other => Role::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serializes and reads an enum of known spellings plus `Other(String)` as
/// the plain string.
macro_rules! open_enum_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                Ok(<$ty>::parse(&s))
            }
        }
    };
}

open_enum_serde!(Role);

/// One line of `messages.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub timestamp: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Message {
    /// A new message with a fresh UUID v4 id and the current time.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Message {
            id: uuid::Uuid::new_v4().to_string(),
            role,
            timestamp: super::now_timestamp(),
            content,
            tool_calls: None,
            stop_reason: None,
            model: None,
            tokens: None,
            extra: Extra::new(),
        }
    }

    /// Number of tool calls this message carries.
    pub fn tool_call_count(&self) -> usize {
        if self.completes().is_some() {
            return 0;
        }
        self.tool_calls.as_ref().map_or(0, Vec::len)
    }

    /// The text of its `text` blocks, one per line.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                super::ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("\n")
    }

    /// The id of the message whose tool calls this one completes, when it is
    /// a completion: see [`COMPLETES_KEY`].
    pub fn completes(&self) -> Option<&str> {
        self.extra
            .get(COMPLETES_KEY)
            .and_then(serde_json::Value::as_str)
    }
}

/// grove's extension field on a message that brings the result of tool
/// calls made in an earlier message (an import saw the call before its
/// result existed). Messages are lines that are never rewritten, so the
/// result comes as a new `agent` message: no content, the same
/// `toolCallId`s with their final status and output, and this field naming
/// the message that made the calls. Its calls are not counted again in
/// `stats.toolCallCount`; a reader that does not know the field sees the
/// call twice, the second time with its output.
pub const COMPLETES_KEY: &str = "completesMessage";

/// The message that completes tool `calls` of message `of`, at `timestamp`.
pub fn completion(of: &str, calls: Vec<ToolCall>, timestamp: String) -> Message {
    let ids: Vec<&str> = calls.iter().map(|c| c.tool_call_id.as_str()).collect();
    let mut m = Message {
        id: completion_id(of, &ids),
        role: Role::Agent,
        timestamp,
        content: Vec::new(),
        tool_calls: Some(calls),
        stop_reason: None,
        model: None,
        tokens: None,
        extra: Extra::new(),
    };
    m.extra
        .insert(COMPLETES_KEY.into(), serde_json::Value::from(of));
    m
}

/// The id of a completion of `calls` of message `of`: the same calls always
/// give the same id, so importing again never adds it twice.
pub fn completion_id(of: &str, calls: &[&str]) -> String {
    format!("{of}~done~{}", calls.join("+"))
}

/// Token usage of a message, as its agent reported it (see `docs/atsf.md`):
/// `input` and `output` are the spec's; the others are grove's named counts
/// of what the vendors report beside them. Each figure is the agent's own,
/// not made comparable: Anthropic's `input` leaves out the cache's tokens,
/// OpenAI's includes its cached ones; OpenAI's `output` includes
/// `reasoning`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Input tokens read from the prompt cache (Anthropic's
    /// `cache_read_input_tokens`, OpenAI's `cached_input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Input tokens written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, Codex's `cache_write_input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<u64>,
    /// Output tokens spent reasoning (Codex's `reasoning_output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tokens {
    /// The named counts, in the order of [`Tokens::COUNTS`].
    pub fn counts(&self) -> [Option<u64>; 5] {
        [
            self.input,
            self.output,
            self.cache_read,
            self.cache_creation,
            self.reasoning,
        ]
    }

    /// The names of [`Tokens::counts`] as the format spells them.
    pub const COUNTS: [&str; 5] = ["input", "output", "cacheRead", "cacheCreation", "reasoning"];

    /// Tokens with these counts (in the order of [`Tokens::COUNTS`]).
    pub fn from_counts(counts: [Option<u64>; 5]) -> Tokens {
        let [input, output, cache_read, cache_creation, reasoning] = counts;
        Tokens {
            input,
            output,
            cache_read,
            cache_creation,
            reasoning,
            extra: Extra::new(),
        }
    }

    /// Whether no count is given (or every one is zero).
    pub fn is_empty(&self) -> bool {
        self.counts().iter().all(|c| c.unwrap_or(0) == 0)
    }
}

/// State of a tool call. A value the spec does not name (`in_progress`, as
/// ACP writes it) is kept as it is ([`ToolStatus::Other`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Failed,
    /// A status the spec does not name, exactly as written.
    Other(String),
}

impl ToolStatus {
    /// The status as the format spells it.
    pub fn as_str(&self) -> &str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::Running => "running",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
            ToolStatus::Other(s) => s,
        }
    }

    /// The status spelled `s`.
    pub fn parse(s: &str) -> ToolStatus {
        match s {
            "pending" => ToolStatus::Pending,
            "running" => ToolStatus::Running,
            "completed" => ToolStatus::Completed,
            "failed" => ToolStatus::Failed,
            other => ToolStatus::Other(other.to_string()),
        }
    }
}

open_enum_serde!(ToolStatus);

/// A tool call made during a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub status: ToolStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Milliseconds; kept as a JSON number so `12` is not rewritten as `12.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A file change made by a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
    #[serde(flatten)]
    pub extra: Extra,
}
