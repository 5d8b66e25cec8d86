//! What a Codex tool call gave back. Outputs come as a string (plain text;
//! in older rollouts a JSON string `{"output", "metadata": {"exit_code"}}`;
//! in newer ones text carrying `Process exited with code N`), as an array
//! of content items (`input_text`, `input_image`, …), or as an object
//! (`{content, success}`, an MCP result's `isError`, an `exit_code`).

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// A tool's output, made readable.
#[derive(Debug, Default)]
pub(super) struct ToolOutput {
    pub text: String,
    pub failed: bool,
    pub exit_code: Option<i64>,
    /// The items beyond text (images first of all), as ATSF content blocks.
    pub rich: Vec<Value>,
}

/// Reads `v`, a `*_output` payload's `output`.
pub(super) fn parse(v: Option<&Value>) -> ToolOutput {
    let mut out = ToolOutput::default();
    let mut texts = Vec::new();
    read(v, &mut out, &mut texts, 0);
    out.text = texts.join("\n");
    if out.exit_code.is_none() {
        out.exit_code = exit_code_in(&out.text);
    }
    if out.exit_code.is_some_and(|c| c != 0) {
        out.failed = true;
    }
    out
}

fn read(v: Option<&Value>, out: &mut ToolOutput, texts: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    match v {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            // Older rollouts: a JSON string holding the output and its exit code.
            Ok(Value::Object(o)) if o.get("output").is_some_and(Value::is_string) => {
                texts.push(o["output"].as_str().unwrap_or("").to_string());
                if let Some(code) = o
                    .get("metadata")
                    .and_then(|m| m.get("exit_code"))
                    .and_then(Value::as_i64)
                {
                    out.exit_code = Some(code);
                }
            }
            _ => texts.push(s.clone()),
        },
        Some(Value::Array(items)) => {
            let first = texts.len();
            for item in items {
                item_of(item, out, texts);
            }
            if texts.get(first).is_some_and(|t| script_failed(t)) {
                out.failed = true;
            }
        }
        Some(Value::Object(o)) => {
            if o.get("success").and_then(Value::as_bool) == Some(false)
                || o.get("isError").and_then(Value::as_bool) == Some(true)
                || o.get("is_error").and_then(Value::as_bool) == Some(true)
            {
                out.failed = true;
            }
            if let Some(code) = o.get("exit_code").and_then(Value::as_i64) {
                out.exit_code = Some(code);
            }
            let inner = o
                .get("content")
                .or_else(|| o.get("output"))
                .or_else(|| o.get("result"));
            match inner {
                Some(inner) => read(Some(inner), out, texts, depth + 1),
                None => texts.push(Value::Object(o.clone()).to_string()),
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => texts.push(other.to_string()),
    }
}

/// One content item of an output array.
fn item_of(item: &Value, out: &mut ToolOutput, texts: &mut Vec<String>) {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("input_text" | "output_text" | "text") => {
            let text = item.get("text").and_then(Value::as_str).unwrap_or("");
            // Code mode prints a nested tool's result as JSON: a command
            // that failed in the script is a failure of the call.
            if let Some(code) = nested_exit_code(text) {
                if code != 0 {
                    out.failed = true;
                }
                out.exit_code = out.exit_code.filter(|c| *c != 0).or(Some(code));
            }
            texts.push(text.to_string());
        }
        Some("input_image" | "image") => {
            let url = item
                .get("image_url")
                .or_else(|| item.get("data"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut block = serde_json::json!({"type": "image", "data": url});
            if let Some(m) = item.get("mimeType").or_else(|| item.get("mime_type")) {
                block["mimeType"] = m.clone();
            }
            out.rich.push(block);
        }
        _ => out.rich.push(item.clone()),
    }
}

/// Whether a code-mode output's header (its first text item: `Script
/// completed`, `Script failed`, `Script terminated`, `Script running…`,
/// then the wall time) says the script did not complete.
fn script_failed(header: &str) -> bool {
    matches!(
        header.lines().next().map(str::trim),
        Some("Script failed" | "Script terminated")
    )
}

/// The `exit_code` of a text item that is a JSON object (a nested tool's
/// result, printed by a code-mode script).
fn nested_exit_code(text: &str) -> Option<i64> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    serde_json::from_str::<Value>(trimmed)
        .ok()?
        .get("exit_code")?
        .as_i64()
}

/// The exit code said in an output's text: `Process exited with code N`
/// (unified exec), `Exit code: N` (shell).
pub(crate) fn exit_code_in(text: &str) -> Option<i64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$")
            .expect("a valid regex")
    });
    re.captures(text)?.get(1)?.as_str().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exit_codes_and_item_arrays() {
        let o = parse(Some(&json!(
            "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nboom"
        )));
        assert!(o.failed);
        assert_eq!(o.exit_code, Some(2));
        let o = parse(Some(&json!("Process exited with code 0\nOutput:\nok")));
        assert!(!o.failed);
        let o = parse(Some(&json!(
            "{\"output\":\"1 failed\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":0.5}}"
        )));
        assert_eq!((o.text.as_str(), o.failed), ("1 failed", true));
        let o = parse(Some(&json!([
            {"type": "input_text", "text": "shot taken"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
        ])));
        assert_eq!(o.text, "shot taken");
        assert_eq!(o.rich[0]["type"], "image");
        let o = parse(Some(&json!({"content": "denied", "success": false})));
        assert_eq!((o.text.as_str(), o.failed), ("denied", true));
        let o = parse(Some(
            &json!({"content": [{"type": "text", "text": "x"}], "isError": true}),
        ));
        assert!(o.failed);
    }

    #[test]
    fn code_mode_failures_are_failures() {
        // The shapes of codex-rs/core/src/tools/code_mode: a header item,
        // the script's output, `Script error:` when it threw.
        let failed = json!([
            {"type": "input_text", "text": "Script failed\nWall time 0.2 seconds\nOutput:\n"},
            {"type": "input_text", "text": "Script error:\nReferenceError: x is not defined"}
        ]);
        assert!(parse(Some(&failed)).failed);
        let completed = json!([
            {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": "done"}
        ]);
        assert!(!parse(Some(&completed)).failed);
        let nested = json!([
            {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": "{\"exit_code\": 2, \"output\": \"no such file\"}"}
        ]);
        let o = parse(Some(&nested));
        assert!(o.failed);
        assert_eq!(o.exit_code, Some(2));
        // A plain string that happens to begin so is not code mode.
        assert!(!parse(Some(&json!("Script failed\nis a phrase"))).failed);
    }
}
