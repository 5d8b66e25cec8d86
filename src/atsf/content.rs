use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Extra;

/// One block of a message's `content` array.
///
/// Known types are typed; any other `type` is kept whole in [`ContentBlock::Unknown`]
/// and written back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{ "type": "text", "text": ... }`
    Text { text: String, extra: Extra },
    /// `{ "type": "thinking", "text": ... }`: the agent's reasoning.
    Thinking { text: String, extra: Extra },
    /// `{ "type": "image", "assetRef": ..., "mimeType": ... }`
    Image(ImageBlock),
    /// A block of a type this version does not know, kept verbatim (including `type`).
    Unknown(Extra),
}

/// An image block: a reference to an asset, or inline `data` before it is stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImageBlock {
    /// `sha256-<first16hex>.<ext>` inside the thread's `assets/`.
    pub asset_ref: Option<String>,
    pub mime_type: Option<String>,
    /// Inline base64 data (or a `data:` URL); the store moves it into `assets/`.
    pub data: Option<String>,
    pub extra: Extra,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            extra: Extra::new(),
        }
    }

    /// The block's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Thinking { .. } => "thinking",
            ContentBlock::Image(_) => "image",
            ContentBlock::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or("?"),
        }
    }
}

fn take_string<E: serde::de::Error>(map: &mut Extra, key: &str, kind: &str) -> Result<String, E> {
    match map.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(E::custom(format!(
            "`{key}` of a {kind} block must be a string, found {other}"
        ))),
        None => Err(E::custom(format!("{kind} block is missing `{key}`"))),
    }
}

fn take_opt_string<E: serde::de::Error>(map: &mut Extra, key: &str) -> Result<Option<String>, E> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(E::custom(format!(
            "`{key}` must be a string, found {other}"
        ))),
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Extra::deserialize(deserializer)?;
        let kind = match map.get("type") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "content block `type` must be a string, found {other}"
                )));
            }
            None => return Err(D::Error::custom("content block is missing `type`")),
        };
        match kind.as_str() {
            "text" | "thinking" => {
                map.remove("type");
                let text = take_string(&mut map, "text", &kind)?;
                Ok(if kind == "text" {
                    ContentBlock::Text { text, extra: map }
                } else {
                    ContentBlock::Thinking { text, extra: map }
                })
            }
            "image" => {
                map.remove("type");
                let asset_ref = take_opt_string(&mut map, "assetRef")?;
                let mime_type = take_opt_string(&mut map, "mimeType")?;
                let data = take_opt_string(&mut map, "data")?;
                if asset_ref.is_none() && data.is_none() && !map.contains_key("source") {
                    return Err(D::Error::custom(
                        "image block needs `assetRef` (or inline `data` to store as an asset)",
                    ));
                }
                Ok(ContentBlock::Image(ImageBlock {
                    asset_ref,
                    mime_type,
                    data,
                    extra: map,
                }))
            }
            _ => Ok(ContentBlock::Unknown(map)),
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (known, extra): (Vec<(&str, &str)>, &Extra) = match self {
            ContentBlock::Text { text, extra } => (vec![("type", "text"), ("text", text)], extra),
            ContentBlock::Thinking { text, extra } => {
                (vec![("type", "thinking"), ("text", text)], extra)
            }
            ContentBlock::Image(img) => {
                let mut known = vec![("type", "image")];
                for (key, value) in [
                    ("assetRef", &img.asset_ref),
                    ("mimeType", &img.mime_type),
                    ("data", &img.data),
                ] {
                    if let Some(v) = value {
                        known.push((key, v));
                    }
                }
                (known, &img.extra)
            }
            ContentBlock::Unknown(map) => return map.serialize(serializer),
        };
        let mut out = serializer.serialize_map(Some(known.len() + extra.len()))?;
        for (k, v) in known {
            out.serialize_entry(k, v)?;
        }
        for (k, v) in extra {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}
