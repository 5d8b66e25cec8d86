//! Thread relationships (fork, handoff, mention), an extension of ATSF
//! spelled as Amp spells it (seed 001) so either tool can read the other's.
//!
//! Both threads of a relationship carry an entry: the parent's names the
//! child with `role: "parent"`, the child's names the parent with
//! `role: "child"` — `role` is the holder's own role.

use serde::{Deserialize, Deserializer, Serialize};

use super::Extra;

/// One entry of `thread.json` `relationships`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Relationship {
    /// The other thread.
    #[serde(rename = "threadID")]
    pub thread_id: String,
    #[serde(rename = "type")]
    pub kind: RelationKind,
    /// The role of the thread holding this entry.
    pub role: RelationRole,
    /// Index of the parent's message where the relationship was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_index: Option<u64>,
    /// When it was made, ISO 8601 UTC. Amp's milliseconds since the epoch are
    /// read too, and written back as ISO 8601.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "timestamp_or_millis"
    )]
    pub created_at: Option<String>,
    /// A description; the summary of a handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type` of a relationship. Values grove does not know are kept as they are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RelationKind {
    Fork,
    Handoff,
    Mention,
    Other(String),
}

impl RelationKind {
    pub fn as_str(&self) -> &str {
        match self {
            RelationKind::Fork => "fork",
            RelationKind::Handoff => "handoff",
            RelationKind::Mention => "mention",
            RelationKind::Other(s) => s,
        }
    }
}

impl From<String> for RelationKind {
    fn from(s: String) -> Self {
        match s.as_str() {
            "fork" => RelationKind::Fork,
            "handoff" => RelationKind::Handoff,
            "mention" => RelationKind::Mention,
            _ => RelationKind::Other(s),
        }
    }
}

impl From<RelationKind> for String {
    fn from(k: RelationKind) -> Self {
        k.as_str().to_string()
    }
}

/// `role` of a relationship: the holder's side of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelationRole {
    Parent,
    Child,
}

impl RelationRole {
    /// The other side's role.
    pub fn opposite(self) -> Self {
        match self {
            RelationRole::Parent => RelationRole::Child,
            RelationRole::Child => RelationRole::Parent,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RelationRole::Parent => "parent",
            RelationRole::Child => "child",
        }
    }
}

fn timestamp_or_millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(serde_json::Value::Number(n)) => {
            let ms = n
                .as_i64()
                .ok_or_else(|| serde::de::Error::custom("createdAt must be whole milliseconds"))?;
            let ts = jiff::Timestamp::from_millisecond(ms).map_err(serde::de::Error::custom)?;
            Ok(Some(ts.strftime(super::time::FORMAT).to_string()))
        }
        Some(other) => Err(serde::de::Error::custom(format!(
            "createdAt must be an ISO 8601 string or milliseconds, not {other}"
        ))),
    }
}

/// The title of a fork of a thread titled `original`, as Amp makes it:
/// `Forked: X`, then `Forked(2): X`, `Forked(3): X`…
///
/// ```
/// use grove::atsf::fork_title;
/// assert_eq!(fork_title("Fix login"), "Forked: Fix login");
/// assert_eq!(fork_title("Forked: Fix login"), "Forked(2): Fix login");
/// assert_eq!(fork_title("Forked(2): Fix login"), "Forked(3): Fix login");
/// assert_eq!(fork_title(""), "Forked: Untitled");
/// ```
pub fn fork_title(original: &str) -> String {
    let title = if original.trim().is_empty() {
        "Untitled"
    } else {
        original
    };
    if let Some(rest) = title.strip_prefix("Forked") {
        let (count, rest) = match rest.strip_prefix('(') {
            Some(r) => match r.split_once("): ") {
                Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    (n.parse::<u64>().ok(), rest)
                }
                _ => (None, ""),
            },
            None => match rest.strip_prefix(": ") {
                Some(rest) => (Some(1), rest),
                None => (None, ""),
            },
        };
        if let Some(n) = count
            && !rest.is_empty()
        {
            return format!("Forked({}): {rest}", n + 1);
        }
    }
    format!("Forked: {title}")
}
