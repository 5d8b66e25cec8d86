//! What the native writers (Claude Code sessions, Codex rollouts, Gemini
//! CLI chats, OpenCode exports) share:
//! the thread's messages with the results that came later folded into their
//! calls, images read back from `assets/`, tool inputs as JSON.
//!
//! Every record a writer emits for a message whose id the agent's format
//! would not give back (a Codex line number, a non-UUID id in Claude Code)
//! carries `"grove": {"id": …}`: importing the session again — grove does,
//! capturing the resumed session — gives the messages their ids back, so
//! none is added twice.

use std::collections::HashMap;
use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::atsf::{ContentBlock, Message, ToolCall};
use crate::error::{Error, Result};
use crate::store::Thread;

pub use crate::agent::marks::{GROVE_KEY, grove_id};

/// The thread's messages, in order, for a native writer: a completion
/// message (a result read after its call) is folded into the call it
/// completes and not given on its own. Malformed lines are skipped and
/// named in `skipped`.
pub(crate) fn messages(thread: &Thread, skipped: &mut Vec<String>) -> Result<Vec<Message>> {
    let mut done: HashMap<String, Vec<ToolCall>> = HashMap::new();
    let mut out = Vec::new();
    for item in thread.messages()? {
        match item {
            Ok(m) => match m.completes() {
                Some(of) => done
                    .entry(of.to_string())
                    .or_default()
                    .extend(m.tool_calls.into_iter().flatten()),
                None => out.push(m),
            },
            Err(e @ Error::Parse { .. }) => skipped.push(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    for m in &mut out {
        let Some(calls) = done.remove(&m.id) else {
            continue;
        };
        super::completions::fold_calls(m.tool_calls.iter_mut().flatten(), &calls);
    }
    Ok(out)
}

/// Reads images back from a thread's `assets/`.
pub(crate) struct Assets {
    dir: PathBuf,
    /// Names that could not be read, for the report.
    pub missing: Vec<String>,
}

impl Assets {
    pub fn of(thread: &Thread) -> Assets {
        Assets {
            dir: thread.assets_dir(),
            missing: Vec::new(),
        }
    }

    /// The base64 bytes of asset `name`.
    pub fn base64(&mut self, name: &str) -> Option<String> {
        let path = super::asset_path(&self.dir, name)?;
        match crate::fsutil::read(&path) {
            Ok(bytes) => Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            Err(_) => {
                if !self.missing.iter().any(|m| m == name) {
                    self.missing.push(name.to_string());
                }
                None
            }
        }
    }

    /// The image of `block` as (media type, base64), from its asset or its
    /// inline data.
    pub fn image(&mut self, block: &crate::atsf::ImageBlock) -> Option<(String, String)> {
        let mime = block
            .mime_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into());
        if let Some(name) = &block.asset_ref {
            return self.base64(name).map(|b| (mime, b));
        }
        let data = block.data.as_deref()?;
        match data.strip_prefix("data:") {
            Some(rest) => {
                let (head, b64) = rest.split_once(',')?;
                let mime = head
                    .split(';')
                    .next()
                    .filter(|m| !m.is_empty())
                    .unwrap_or(&mime);
                Some((mime.to_string(), b64.to_string()))
            }
            None => Some((mime, data.to_string())),
        }
    }

    /// `value` with every `{assetRef, mimeType}` object the import made
    /// holding its data again (`base64`, or a `data:` URL under `image_url`
    /// for an `input_image`).
    pub fn inline(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    if k != "assetRef" {
                        out.insert(k.clone(), self.inline(v));
                    }
                }
                if let Some(name) = map.get("assetRef").and_then(Value::as_str)
                    && let Some(b64) = self.base64(name)
                {
                    let mime = map
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("application/octet-stream")
                        .to_string();
                    if map.get("type").and_then(Value::as_str) == Some("input_image") {
                        out.insert(
                            "image_url".into(),
                            Value::from(format!("data:{mime};base64,{b64}")),
                        );
                    } else {
                        out.insert("base64".into(), Value::from(b64));
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.inline(v)).collect()),
            other => other.clone(),
        }
    }
}

/// A tool call's input as the JSON object the agents' APIs want: the input
/// when it is a JSON object, else `{"input": <the text>}`.
pub(crate) fn input_object(call: &ToolCall) -> Value {
    match call.input.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(v @ Value::Object(_))) => v,
        Some(_) => json!({"input": call.input}),
        None => json!({}),
    }
}

/// The text of a message's `text` blocks, and whether it has anything else.
pub(crate) fn has_only_text(m: &Message) -> bool {
    m.content
        .iter()
        .all(|b| matches!(b, ContentBlock::Text { .. }))
}

/// A stable UUID for an id that is not one (same id, same UUID).
pub(crate) fn uuid_for(id: &str) -> String {
    if uuid::Uuid::parse_str(id).is_ok() {
        return id.to_string();
    }
    use sha2::Digest;
    let d = sha2::Sha256::digest(id.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(b).into_uuid().to_string()
}

/// What every native writer starts from: its report, the thread's messages
/// (completions folded) and `thread.json`.
pub(crate) fn begin(
    thread: &Thread,
    session: &str,
) -> Result<(NativeExport, Vec<Message>, crate::atsf::ThreadMeta)> {
    let mut report = NativeExport {
        session_id: session.to_string(),
        ..NativeExport::default()
    };
    let messages = messages(thread, &mut report.skipped)?;
    let meta = thread.meta()?;
    Ok((report, messages, meta))
}

impl NativeExport {
    /// Names the images the writer could not read back.
    pub(crate) fn missing_assets(&mut self, assets: &Assets) {
        for name in &assets.missing {
            self.skipped
                .push(format!("the image {name} is not in the thread's assets"));
        }
    }
}

/// What a native export wrote.
#[derive(Debug, Default, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeExport {
    /// The agent's session id of what was written.
    pub session_id: String,
    /// Where it was written, when written to the agent's own directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Messages written (completions folded into their calls).
    pub messages: u64,
    /// What was left out or could not be read, each saying why.
    pub skipped: Vec<String>,
}
