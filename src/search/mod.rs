//! `search`: find text in every thread's messages — text, thinking, tool
//! names, inputs and outputs — streaming each log, never loading it whole,
//! and streaming the hits out in the threads' order.
//!
//! Every query first runs over the raw bytes of the log ([`prefilter`]);
//! only the lines it finds are parsed and searched for real ([`scan`]),
//! threads on every core with bounded memory ([`ordered`]).

mod ordered;
mod prefilter;
mod scan;

pub use ordered::search_in_order;
pub use scan::scan_thread;

use serde::Serialize;

use crate::atsf::{ContentBlock, Message, Role};
use crate::error::{Error, Result};
use prefilter::Prefilter;

/// What to look for.
#[derive(Debug, Clone)]
pub struct Query {
    matcher: Matcher,
    prefilter: Prefilter,
    /// Only messages of this role.
    pub role: Option<Role>,
}

#[derive(Debug, Clone)]
enum Matcher {
    Literal(String),
    Regex(regex::Regex),
}

impl Query {
    /// A query for `pattern`: a literal, or a regular expression (Rust
    /// `regex` syntax) when `regex`; `ignore_case` for both.
    pub fn new(pattern: &str, regex: bool, ignore_case: bool, role: Option<Role>) -> Result<Self> {
        if pattern.is_empty() {
            return Err(Error::Other("the search query is empty".into()));
        }
        if !regex && !ignore_case {
            return Ok(Query {
                matcher: Matcher::Literal(pattern.to_string()),
                prefilter: Prefilter::literal(pattern),
                role,
            });
        }
        let source = if regex {
            pattern.to_string()
        } else {
            regex::escape(pattern)
        };
        let re = regex::RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .build()
            .map_err(|e| Error::Other(format!("invalid --regex {pattern:?}: {e}")))?;
        let prefilter = if regex {
            Prefilter::regex(pattern, ignore_case)
        } else {
            Prefilter::folded_literal(pattern)
        };
        Ok(Query {
            matcher: Matcher::Regex(re),
            prefilter,
            role,
        })
    }

    /// Byte ranges of the matches in `text` (a line of a message, a
    /// thread's title).
    pub fn find_in(&self, text: &str) -> Vec<(usize, usize)> {
        match &self.matcher {
            Matcher::Literal(literal) => text
                .match_indices(literal.as_str())
                .map(|(i, m)| (i, i + m.len()))
                .collect(),
            Matcher::Regex(re) => re
                .find_iter(text)
                .filter(|m| !m.is_empty())
                .map(|m| (m.start(), m.end()))
                .collect(),
        }
    }

    /// Whether the query is limited to one role (titles then do not match).
    pub fn has_role(&self) -> bool {
        self.role.is_some()
    }
}

/// One matching line of one message.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// 0-based index of the message in the thread.
    pub index: u64,
    pub role: Role,
    pub timestamp: String,
    /// `text`, `thinking`, `toolName`, `toolTitle`, `toolInput` or `toolOutput`.
    pub field: &'static str,
    /// The matching line of that field.
    pub line: String,
    /// Byte ranges of the matches within `line`.
    pub matches: Vec<(usize, usize)>,
}

/// What searching a thread reports, in the order of its log.
#[derive(Debug)]
pub enum Event {
    Hit(Hit),
    /// A candidate line that is not a valid message (file and line named).
    Malformed(Error),
    /// The thread could not be searched.
    Failed(Error),
    /// The thread's last event.
    Done,
}

impl Event {
    /// Roughly the memory it holds.
    fn size(&self) -> usize {
        64 + match self {
            Event::Hit(hit) => hit.line.len() + hit.timestamp.len() + 16 * hit.matches.len(),
            Event::Malformed(_) | Event::Failed(_) => 256,
            Event::Done => 0,
        }
    }
}

/// The searchable text of a message, with the name of its field.
fn fields(m: &Message) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    for block in &m.content {
        match block {
            ContentBlock::Text { text, .. } => out.push(("text", text.as_str())),
            ContentBlock::Thinking { text, .. } => out.push(("thinking", text.as_str())),
            _ => {}
        }
    }
    for call in m.tool_calls.iter().flatten() {
        out.push(("toolName", call.name.as_str()));
        if let Some(t) = &call.title {
            out.push(("toolTitle", t.as_str()));
        }
        if let Some(i) = &call.input {
            out.push(("toolInput", i.as_str()));
        }
        if let Some(o) = &call.output {
            out.push(("toolOutput", o.as_str()));
        }
    }
    out
}

#[cfg(test)]
mod tests;
