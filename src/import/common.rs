//! Helpers the importers share: reading their files, the pending tail of a
//! running session, titles from the first prompt, tool calls, Anthropic-style
//! content.

use std::path::Path;

use super::Summary;
use crate::atsf::{self, ContentBlock, Message, Role, ToolStatus};
use crate::error::{Error, IoContext, Result};

/// The `.json` files of `path` (itself if a file), sorted.
pub fn json_files(path: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(Error::Other(format!("{} does not exist", path.display())));
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).ctx("listing", path)? {
        let p = entry.ctx("listing", path)?.path();
        if p.is_file() && p.extension().is_some_and(|e| e == "json") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// Reads a JSON object file; a malformed one is reported (path, line) and
/// skipped so the other files still import.
pub(crate) fn read_object(
    path: &std::path::Path,
    kind: &str,
    summary: &mut Summary,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let bytes = std::fs::read(path).ctx("reading", path)?;
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(o)) => Ok(Some(o)),
        Ok(_) => {
            summary
                .errors
                .push(format!("{}: not a JSON object", path.display()));
            summary.skip(kind, "a file that is not a JSON object".into());
            Ok(None)
        }
        Err(e) => {
            summary
                .errors
                .push(format!("{}:{}: {e}", path.display(), e.line()));
            summary.skip(kind, "a file that is not valid JSON".into());
            Ok(None)
        }
    }
}

/// Whether the session may still be running: written to in the last hour.
pub(crate) fn is_live(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 3600)
}

/// A running session's last reply may still wait for its tool results.
/// Messages are never rewritten once imported (the log is append-only), so
/// such a tail is left for the next import instead of being stored as
/// `pending` for good. A session idle for an hour is imported as it is.
pub(crate) fn defer_pending_tail(messages: &mut Vec<Message>, live: bool, summary: &mut Summary) {
    if !live {
        return;
    }
    let pending = |m: &Message| {
        m.tool_calls
            .iter()
            .flatten()
            .any(|c| c.status == ToolStatus::Pending)
    };
    if let Some(first) = messages.iter().position(pending) {
        let later_turn = messages[first + 1..]
            .iter()
            .any(|m| m.role == Role::User && !pending(m));
        if !later_turn {
            for _ in first..messages.len() {
                summary.skip(
                    "deferred",
                    "the session is running and a tool call has no result yet; the next import brings it"
                        .into(),
                );
            }
            messages.truncate(first);
        }
    }
}

pub(crate) fn first_prompt(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                Some(crate::threads::title_from_prompt(text))
            }
            _ => None,
        })
}

/// A tool call with its result joined: `(output, failed)` when found,
/// `pending` otherwise.
pub(crate) fn tool_call(
    id: String,
    name: String,
    input: Option<String>,
    result: Option<(&str, bool)>,
    extra: crate::atsf::Extra,
) -> crate::atsf::ToolCall {
    use crate::atsf::ToolStatus;
    crate::atsf::ToolCall {
        tool_call_id: id,
        name,
        title: None,
        status: match result {
            Some((_, true)) => ToolStatus::Failed,
            Some(_) => ToolStatus::Completed,
            None => ToolStatus::Pending,
        },
        input,
        output: result.map(|(text, _)| text.to_string()),
        duration: None,
        diff: None,
        extra,
    }
}

/// Anthropic-style message content (Claude Code, Amp): a string, or blocks
/// `text`, `thinking` (its `signature` kept: a conversation continues with
/// it), `image` (base64 `source`, stored as an asset when written),
/// `tool_use` (made into a call by `tool_use`), `tool_result` (joined
/// elsewhere; counted), anything else kept whole. Fields a block has beyond
/// those grove maps stay on the block. Returns the blocks, the calls, and
/// how many tool results there were.
pub(crate) fn anthropic_content(
    content: Option<&serde_json::Value>,
    mut tool_use: impl FnMut(&serde_json::Value) -> crate::atsf::ToolCall,
) -> (Vec<ContentBlock>, Vec<crate::atsf::ToolCall>, usize) {
    use serde_json::Value;
    let mut out = Vec::new();
    let mut calls = Vec::new();
    let mut results = 0;
    match content {
        Some(Value::String(s)) => out.push(ContentBlock::text(s.clone())),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                let Value::Object(map) = b else {
                    continue;
                };
                match map.get("type").and_then(Value::as_str) {
                    Some("tool_use") => calls.push(tool_use(b)),
                    Some("tool_result") => results += 1,
                    _ => out.push(anthropic_block(map)),
                }
            }
        }
        _ => {}
    }
    (out, calls, results)
}

/// One Anthropic content block (not a tool use or result) as ATSF.
pub(crate) fn anthropic_block(map: &serde_json::Map<String, serde_json::Value>) -> ContentBlock {
    use serde_json::Value;
    let mut rest = map.clone();
    rest.remove("type");
    let take = |rest: &mut serde_json::Map<String, Value>, k: &str| match rest.remove(k) {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            rest.insert(k.to_string(), other);
            None
        }
        None => None,
    };
    match map.get("type").and_then(Value::as_str) {
        Some("text") => {
            let text = take(&mut rest, "text").unwrap_or_default();
            ContentBlock::Text { text, extra: rest }
        }
        Some("thinking") => {
            let text = take(&mut rest, "thinking")
                .or_else(|| take(&mut rest, "text"))
                .unwrap_or_default();
            ContentBlock::Thinking { text, extra: rest }
        }
        Some("image") => {
            let mut source = match rest.remove("source") {
                Some(Value::Object(s)) => s,
                Some(other) => {
                    rest.insert("source".into(), other);
                    serde_json::Map::new()
                }
                None => serde_json::Map::new(),
            };
            let mime = take(&mut source, "media_type");
            // A URL source stays a URL: the writer keeps it as a placeholder.
            let data = take(&mut source, "data").or_else(|| take(&mut source, "url"));
            source.remove("type");
            if !source.is_empty() {
                rest.insert("source".into(), Value::Object(source));
            }
            ContentBlock::Image(atsf::ImageBlock {
                asset_ref: None,
                mime_type: mime,
                data,
                extra: rest,
            })
        }
        _ => ContentBlock::Unknown(map.clone()),
    }
}

/// A usage's counts, in the order of [`crate::atsf::Tokens::COUNTS`], read
/// from the vendor's keys named in the same order (`None`: the vendor has
/// no such count).
pub(crate) fn usage_counts(usage: &serde_json::Value, keys: [Option<&str>; 5]) -> [Option<u64>; 5] {
    keys.map(|k| k.and_then(|k| usage.get(k)?.as_u64()))
}

/// What usage `now` adds to what was `counted` of the same total (a reply
/// Claude Code wrote as several records, or Codex's running totals): per
/// count, what exceeds it; `counted` is raised to `now`. `None` when it
/// adds nothing, so a repeated usage is never counted twice.
pub(crate) fn usage_added(
    counted: &mut [u64; 5],
    now: [Option<u64>; 5],
) -> Option<crate::atsf::Tokens> {
    let mut added = [None; 5];
    for (i, n) in now.iter().enumerate() {
        if let Some(n) = *n
            && n > counted[i]
        {
            added[i] = Some(n - counted[i]);
            counted[i] = n;
        }
    }
    let t = crate::atsf::Tokens::from_counts(added);
    (!t.is_empty()).then_some(t)
}

/// `extra` added to the counts of `into` (a message gets the usage of
/// more than one record).
pub(crate) fn add_usage(into: &mut Option<crate::atsf::Tokens>, extra: crate::atsf::Tokens) {
    let Some(t) = into else {
        *into = Some(extra);
        return;
    };
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    };
    let a = t.counts();
    let b = extra.counts();
    let summed = std::array::from_fn(|i| sum(a[i], b[i]));
    let kept = std::mem::take(&mut t.extra);
    *t = crate::atsf::Tokens::from_counts(summed);
    t.extra = kept;
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn a_usage_repeated_or_growing_adds_only_what_is_new() {
        let mut counted = [0; 5];
        let first = usage_added(&mut counted, [Some(3), Some(1), Some(100), None, None]).unwrap();
        assert_eq!(first.counts(), [Some(3), Some(1), Some(100), None, None]);
        // The same reply again, its output grown: only the growth.
        let later = usage_added(&mut counted, [Some(3), Some(40), Some(100), None, None]).unwrap();
        assert_eq!(later.counts(), [None, Some(39), None, None, None]);
        // Repeated as it was: nothing.
        assert!(usage_added(&mut counted, [Some(3), Some(40), Some(100), None, None]).is_none());
        let mut sum = Some(first);
        add_usage(&mut sum, later);
        assert_eq!(
            sum.unwrap().counts(),
            [Some(3), Some(40), Some(100), None, None]
        );
    }
}
