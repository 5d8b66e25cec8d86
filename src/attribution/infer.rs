//! Attribution for a thread without snapshots, inferred from what its tool
//! calls say they wrote: an edit's new text (`new_string`, `newString`,
//! `new_str`, each of a multi-edit's), a written file's `content`, the
//! added lines of a patch (`*** Begin Patch` or a unified diff), a call's
//! ATSF `diff`. A line of the file is the last such call's whose text holds
//! it — as a whole block where the text is still there whole, else line by
//! line for lines that say something (a lone `}` or blank line matches
//! anywhere, so it is only given with its block).
//!
//! The paths are the agent's words: they are only compared with the file
//! asked about, never opened.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::atsf::{Role, ToolCall};
use crate::error::Result;
use crate::store::Thread;

use super::steps::MessageRef;

/// Text one tool call says it wrote to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The path as the call gives it.
    pub path: String,
    /// The lines written, each without its newline.
    pub lines: Vec<String>,
    /// The call.
    pub tool_call_id: String,
    /// Its tool's name.
    pub tool: String,
    /// The message making the call.
    pub message: MessageRef,
    /// The prompt before it.
    pub prompt: Option<MessageRef>,
}

/// Every text `thread`'s tool calls say they wrote, in order.
pub fn writes(thread: &Thread) -> Result<Vec<Written>> {
    let mut out = Vec::new();
    let mut prompt = None;
    for (index, item) in thread.messages()?.enumerate() {
        let Ok(message) = item else { continue };
        let this = MessageRef {
            index,
            id: message.id.clone(),
        };
        if message.role == Role::User && !message.text().is_empty() {
            prompt = Some(this.clone());
        }
        if message.completes().is_some() {
            continue;
        }
        for call in message.tool_calls.iter().flatten() {
            for (path, text) in of_call(call) {
                out.push(Written {
                    path,
                    lines: split(&text),
                    tool_call_id: call.tool_call_id.clone(),
                    tool: call.name.clone(),
                    message: this.clone(),
                    prompt: prompt.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// Whether `called` (a tool call's path) names `rel` (the file, relative to
/// the repository): the same relative path, or an absolute one under one of
/// `roots` (where the thread's agent worked), or one ending with it.
pub fn names(called: &str, rel: &str, roots: &[PathBuf]) -> bool {
    let called = called.trim().trim_start_matches("./");
    if called == rel {
        return true;
    }
    let path = Path::new(called);
    if path.is_absolute()
        && roots
            .iter()
            .any(|r| path.strip_prefix(r).is_ok_and(|p| p == Path::new(rel)))
    {
        return true;
    }
    called.ends_with(&format!("/{rel}"))
}

/// For each line of `file`, the index in `writes` of the last write whose
/// text holds it.
pub fn attribute(file: &[&str], writes: &[&Written]) -> Vec<Option<usize>> {
    let mut out = vec![None; file.len()];
    for (w, written) in writes.iter().enumerate() {
        let block: Vec<&str> = written.lines.iter().map(String::as_str).collect();
        let mut whole = false;
        if !block.is_empty() {
            for (start, window) in file.windows(block.len()).enumerate() {
                if window == block.as_slice() {
                    whole = true;
                    out[start..start + block.len()].fill(Some(w));
                }
            }
        }
        if whole {
            continue;
        }
        for (i, line) in file.iter().enumerate() {
            if says_something(line) && block.contains(line) {
                out[i] = Some(w);
            }
        }
    }
    out
}

/// A line with a letter or digit in it.
fn says_something(line: &str) -> bool {
    line.chars().any(char::is_alphanumeric)
}

/// `text`'s lines, without their newlines (a `\r` before one too).
fn split(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect()
}

/// (path, text written) of one call.
fn of_call(call: &ToolCall) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(diff) = &call.diff {
        out.push((diff.path.clone(), diff.new_text.clone()));
    }
    let Some(input) = &call.input else {
        return out;
    };
    let Ok(value) = serde_json::from_str::<Value>(input) else {
        out.extend(patch(input));
        return out;
    };
    let path = ["file_path", "filePath", "path", "absolute_path", "file"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str));
    if let Some(path) = path {
        let mut texts: Vec<&str> = ["content", "new_string", "newString", "new_str", "new_text"]
            .iter()
            .filter_map(|k| value.get(*k).and_then(Value::as_str))
            .collect();
        for edit in value
            .get("edits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            texts.extend(
                ["new_string", "newString", "new_str"]
                    .iter()
                    .filter_map(|k| edit.get(*k).and_then(Value::as_str)),
            );
        }
        out.extend(texts.into_iter().map(|t| (path.to_string(), t.to_string())));
    }
    for text in strings(&value) {
        if text.contains("*** Begin Patch") || text.contains("\n+++ ") || text.starts_with("+++ ") {
            out.extend(patch(text));
        }
    }
    out
}

/// Every string in `value`, at any depth.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// The runs of added lines of a patch, each with its file: Codex's
/// `*** Update File:`/`*** Add File:` form, or a unified diff's `+++ b/`.
fn patch(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut file: Option<String> = None;
    let mut run: Option<String> = None;
    let mut flush = |run: &mut Option<String>, file: &Option<String>| {
        if let (Some(text), Some(path)) = (run.take(), file) {
            out.push((path.clone(), text));
        }
    };
    for line in text.lines() {
        let named = [
            "*** Update File: ",
            "*** Add File: ",
            "*** Move to: ",
            "+++ b/",
            "+++ ",
        ]
        .iter()
        .find_map(|p| line.strip_prefix(p));
        if let Some(path) = named {
            flush(&mut run, &file);
            file = Some(path.trim().to_string()).filter(|p| p != "/dev/null");
            continue;
        }
        if line.starts_with("*** ") {
            flush(&mut run, &file);
            file = None;
            continue;
        }
        match line.strip_prefix('+') {
            Some(added) => {
                let run = run.get_or_insert_with(String::new);
                run.push_str(added);
                run.push('\n');
            }
            None => flush(&mut run, &file),
        }
    }
    flush(&mut run, &file);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, input: Value) -> ToolCall {
        serde_json::from_value(serde_json::json!({
            "toolCallId": "t1", "name": name, "status": "completed",
            "input": input.to_string(),
        }))
        .unwrap()
    }

    #[test]
    fn edits_writes_and_patches_say_what_they_wrote() {
        let edit = call(
            "Edit",
            serde_json::json!({"file_path": "/w/src/a.rs", "old_string": "x", "new_string": "fn a() {}\n"}),
        );
        assert_eq!(
            of_call(&edit),
            [("/w/src/a.rs".to_string(), "fn a() {}\n".to_string())]
        );
        let multi = call(
            "MultiEdit",
            serde_json::json!({"file_path": "b.rs", "edits": [{"old_string": "1", "new_string": "one"}, {"old_string": "2", "new_string": "two"}]}),
        );
        assert_eq!(of_call(&multi).len(), 2);
        let codex = call(
            "apply_patch",
            serde_json::json!({"input": "*** Begin Patch\n*** Update File: src/c.rs\n@@\n-old\n+new one\n+new two\n keep\n+later\n*** End Patch\n"}),
        );
        assert_eq!(
            of_call(&codex),
            [
                ("src/c.rs".to_string(), "new one\nnew two\n".to_string()),
                ("src/c.rs".to_string(), "later\n".to_string())
            ]
        );
        assert!(names("/w/src/a.rs", "src/a.rs", &[PathBuf::from("/w")]));
        assert!(names("./src/a.rs", "src/a.rs", &[]));
        assert!(!names(
            "/w/src/a.rs.bak",
            "src/a.rs",
            &[PathBuf::from("/w")]
        ));
    }

    #[test]
    fn a_block_is_matched_whole_and_a_bare_brace_only_with_it() {
        let w = |lines: &[&str]| Written {
            path: "f".into(),
            lines: lines.iter().map(|s| s.to_string()).collect(),
            tool_call_id: "t".into(),
            tool: "Edit".into(),
            message: MessageRef {
                index: 0,
                id: "m".into(),
            },
            prompt: None,
        };
        let file = ["fn a() {", "    1", "}", "", "fn b() {", "}"];
        let first = w(&["fn a() {", "    1", "}"]);
        let later = w(&["fn b() {", "    2", "}"]);
        let got = attribute(&file, &[&first, &later]);
        assert_eq!(got, [Some(0), Some(0), Some(0), None, Some(1), None]);
    }
}
