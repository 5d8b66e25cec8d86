//! Messages shaped like Anthropic's Messages API — what an agent's hook has
//! at hand — read as ATSF: `assistant` is `agent`; `thinking` blocks carry
//! `thinking` (and their `signature`); `tool_use` blocks (`id`, object
//! `input`) become the message's tool calls; `tool_result` blocks answer a
//! call made earlier and become its result; base64 `image` sources become
//! inline images (stored as assets on append).

use serde_json::{Map, Value, json};

/// A tool result read from an Anthropic-shaped message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call it answers (`tool_use_id`).
    pub tool_call_id: String,
    /// Its text.
    pub output: String,
    pub is_error: bool,
}

/// An Anthropic-shaped message, converted.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The ATSF message object, or `None` when the message held nothing but
    /// tool results.
    pub message: Option<Value>,
    /// The tool results it held, in order.
    pub results: Vec<ToolResult>,
}

/// Whether `value` is shaped like an Anthropic message rather than ATSF: an
/// `assistant` role, `content` as a string, or a content block only
/// Anthropic's shape has.
pub fn is_anthropic(value: &Value) -> bool {
    if value.get("role").and_then(Value::as_str) == Some("assistant")
        || value.get("content").is_some_and(Value::is_string)
    {
        return true;
    }
    value
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks.iter().any(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("tool_use" | "tool_result")
                ) || (b.get("type").and_then(Value::as_str) == Some("thinking")
                    && b.get("thinking").is_some())
                    || b.get("source").is_some()
            })
        })
}

/// Converts an Anthropic-shaped message object. A `content` given as a
/// string is one text block.
pub fn convert(value: Value) -> Result<Converted, String> {
    let Value::Object(mut map) = value else {
        return Err("expected a JSON object".into());
    };
    let role = match map.get("role").and_then(Value::as_str) {
        Some("assistant") => "agent",
        Some(other) => other,
        None => return Err("missing `role`".into()),
    }
    .to_string();
    let content = match map.remove("content") {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => blocks,
        Some(other) => {
            return Err(format!(
                "`content` must be a string or an array, not {other}"
            ));
        }
        None => Vec::new(),
    };
    let mut blocks = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (i, block) in content.into_iter().enumerate() {
        let at = |e: &str| format!("content[{i}]: {e}");
        let Value::Object(b) = block else {
            return Err(at("a content block must be an object"));
        };
        match b.get("type").and_then(Value::as_str) {
            Some("thinking") => blocks.push(thinking(b)),
            Some("tool_use") => calls.push(tool_use(b).map_err(|e| at(&e))?),
            Some("tool_result") => results.push(tool_result(&b).map_err(|e| at(&e))?),
            Some("image") if b.contains_key("source") => blocks.push(image(b).map_err(|e| at(&e))?),
            _ => blocks.push(Value::Object(b)),
        }
    }
    if blocks.is_empty() && calls.is_empty() {
        return Ok(Converted {
            message: None,
            results,
        });
    }
    let mut out = Map::new();
    if let Some(id) = map.remove("id") {
        out.insert("id".into(), id);
    }
    out.insert("role".into(), Value::from(role));
    if let Some(t) = map.remove("timestamp") {
        out.insert("timestamp".into(), t);
    }
    out.insert("content".into(), Value::Array(blocks));
    if !calls.is_empty() {
        out.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(model) = map.remove("model") {
        out.insert("model".into(), model);
    }
    if let Some(stop) = map.remove("stop_reason").filter(|v| !v.is_null()) {
        out.insert("stopReason".into(), stop);
    }
    if let Some(Value::Object(usage)) = map.remove("usage") {
        out.insert(
            "tokens".into(),
            json!({"input": usage.get("input_tokens"), "output": usage.get("output_tokens")}),
        );
    }
    // Anything else (`type`, `stop_sequence`…) is kept as it came.
    for (k, v) in map {
        out.entry(k).or_insert(v);
    }
    Ok(Converted {
        message: Some(Value::Object(out)),
        results,
    })
}

fn thinking(mut b: Map<String, Value>) -> Value {
    let text = b.remove("thinking").unwrap_or(Value::from(""));
    b.insert("text".into(), text);
    Value::Object(b)
}

fn tool_use(b: Map<String, Value>) -> Result<Value, String> {
    let id = b
        .get("id")
        .and_then(Value::as_str)
        .ok_or("a tool_use needs its `id`")?;
    let name = b
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool_use needs its `name`")?;
    let input = match b.get("input") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "{}".into(),
    };
    Ok(json!({"toolCallId": id, "name": name, "status": "pending", "input": input}))
}

fn tool_result(b: &Map<String, Value>) -> Result<ToolResult, String> {
    let id = b
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or("a tool_result needs its `tool_use_id`")?;
    let output = match b.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Ok(ToolResult {
        tool_call_id: id.to_string(),
        output,
        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn image(mut b: Map<String, Value>) -> Result<Value, String> {
    let source = b.remove("source").unwrap_or(Value::Null);
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Err("only base64 image sources can be stored".into());
    }
    let mime = source.get("media_type").cloned().unwrap_or(Value::Null);
    let data = source
        .get("data")
        .and_then(Value::as_str)
        .ok_or("an image source needs its `data`")?;
    b.insert("mimeType".into(), mime);
    b.insert("data".into(), Value::from(data));
    Ok(Value::Object(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assistant_turn_and_its_results_convert() {
        let turn = json!({"role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "thinking", "thinking": "Look first.", "signature": "EqQB"},
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.rs"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 3}});
        assert!(is_anthropic(&turn));
        let c = convert(turn).unwrap();
        let m = c.message.unwrap();
        assert_eq!(m["role"], "agent");
        assert_eq!(
            m["content"][0],
            json!({"type": "thinking", "text": "Look first.", "signature": "EqQB"})
        );
        assert_eq!(m["toolCalls"][0]["input"], "{\"file_path\":\"a.rs\"}");
        assert_eq!(m["tokens"], json!({"input": 10, "output": 3}));
        let results = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "fn a() {}"}]}]});
        assert!(is_anthropic(&results));
        let c = convert(results).unwrap();
        assert!(c.message.is_none());
        assert_eq!(c.results[0].output, "fn a() {}");
        assert!(!is_anthropic(
            &json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
        ));
    }
}
