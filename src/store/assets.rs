//! Content-addressed assets: inline image data becomes `assets/sha256-<16hex>.<ext>`.

use std::path::Path;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::atsf::{ContentBlock, ImageBlock, Message};
use crate::error::{Error, Result};
use crate::fsutil::write_new;

/// File extension for an image MIME type (`bin` when unknown).
///
/// ```
/// assert_eq!(grove::store::extension_for_mime("image/png"), "png");
/// assert_eq!(grove::store::extension_for_mime("image/svg+xml"), "svg");
/// ```
pub fn extension_for_mime(mime: &str) -> &'static str {
    match mime.trim().to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" | "image/pjpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "image/heic" => "heic",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "application/pdf" => "pdf",
        _ => "bin",
    }
}

/// The asset file name for `bytes`: `sha256-<first 16 hex>.<ext>`.
pub fn asset_name(bytes: &[u8], mime: &str) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256-{hex}.{}", extension_for_mime(mime))
}

/// Splits a `data:<mime>;base64,<payload>` URL; plain base64 passes through.
fn split_data_url(data: &str) -> (Option<&str>, &str) {
    if let Some(rest) = data.strip_prefix("data:")
        && let Some((header, payload)) = rest.split_once(',')
    {
        let mime = header.strip_suffix(";base64").unwrap_or(header);
        return (Some(mime).filter(|m| !m.is_empty()), payload);
    }
    (None, data)
}

/// Writes `bytes` into `assets_dir` under their content address (once) and returns the name.
pub fn store_asset(assets_dir: &Path, bytes: &[u8], mime: &str) -> Result<String> {
    let name = asset_name(bytes, mime);
    std::fs::create_dir_all(assets_dir).map_err(|e| Error::io("creating", assets_dir, e))?;
    write_new(&assets_dir.join(&name), bytes)?;
    Ok(name)
}

/// Moves every inline image of `message` into `assets_dir` and replaces the
/// data with an `assetRef`. Handles ATSF/ACP style (`data` + `mimeType`) and
/// Anthropic style (`source: {type: "base64", media_type, data}`).
pub fn extract_inline_images(assets_dir: &Path, message: &mut Message) -> Result<()> {
    for asset in take_inline_images(message)? {
        asset.store(assets_dir)?;
    }
    Ok(())
}

/// An image's bytes decoded from a message, to be written under its name.
#[derive(Debug)]
pub struct PendingAsset {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl PendingAsset {
    /// Writes the asset into `assets_dir` (once: content-addressed).
    pub fn store(&self, assets_dir: &Path) -> Result<()> {
        crate::fsutil::refuse_symlink(assets_dir)?;
        std::fs::create_dir_all(assets_dir).map_err(|e| Error::io("creating", assets_dir, e))?;
        write_new(&assets_dir.join(&self.name), &self.bytes)?;
        Ok(())
    }
}

/// Decodes every inline image of `message` and replaces its data with an
/// `assetRef`, writing nothing: the assets are returned, so a caller can
/// check every message before it writes anything.
pub fn take_inline_images(message: &mut Message) -> Result<Vec<PendingAsset>> {
    let mut out = Vec::new();
    for (index, block) in message.content.iter_mut().enumerate() {
        let ContentBlock::Image(img) = block else {
            continue;
        };
        let asset = take_inline_image(img)
            .map_err(|e| Error::InvalidMessage(format!("content[{index}]: {e}")))?;
        out.extend(asset);
    }
    Ok(out)
}

/// Decodes one image block's inline data (ATSF `data` + `mimeType`, a
/// `data:` URL, or Anthropic's `source: {type: "base64"}`) and replaces it
/// with an `assetRef`; `None` when the block has no inline data.
pub fn take_inline_image(img: &mut ImageBlock) -> Result<Option<PendingAsset>> {
    let Some((mime, payload)) = take_inline(img) else {
        return Ok(None);
    };
    let (url_mime, b64) = split_data_url(&payload);
    let mime = mime
        .or(url_mime.map(str::to_string))
        .unwrap_or_else(|| "application/octet-stream".to_string());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| Error::InvalidMessage(format!("image data is not valid base64: {e}")))?;
    let name = asset_name(&bytes, &mime);
    img.asset_ref = Some(name.clone());
    img.mime_type = Some(mime);
    Ok(Some(PendingAsset { name, bytes }))
}

/// Removes the inline payload from `img`, returning (mime, base64).
fn take_inline(img: &mut ImageBlock) -> Option<(Option<String>, String)> {
    if let Some(data) = img.data.take() {
        return Some((img.mime_type.clone(), data));
    }
    let is_base64_source = matches!(
        img.extra.get("source"),
        Some(Value::Object(s)) if s.get("type").and_then(Value::as_str) == Some("base64")
            && s.get("data").is_some_and(Value::is_string)
    );
    if !is_base64_source {
        return None;
    }
    let Some(Value::Object(mut source)) = img.extra.remove("source") else {
        return None;
    };
    let data = match source.remove("data") {
        Some(Value::String(d)) => d,
        _ => return None,
    };
    let mime = img
        .mime_type
        .clone()
        .or_else(|| match source.get("media_type") {
            Some(Value::String(m)) => Some(m.clone()),
            _ => None,
        });
    Some((mime, data))
}

/// Inline base64 payloads shorter than this are left where they are: a
/// short string that happens to look like an image is not worth an asset.
const INLINE_MIN: usize = 64;

/// Moves every inline image found anywhere in `value` (a raw record kept
/// beside a message, a tool result) into assets, leaving an `assetRef` in its
/// place: Anthropic `{type: "image", source: {type: "base64", data}}`,
/// `{base64, type | media_type}` (Claude Code's image reads), `image_url` /
/// `data` holding a `data:` URL, and bare `data:image/…;base64,` strings.
/// Data that does not decode stays as it is.
pub fn take_inline_in_json(value: &mut Value) -> Vec<PendingAsset> {
    let mut out = Vec::new();
    walk_json(value, &mut out, 0);
    out
}

fn walk_json(value: &mut Value, out: &mut Vec<PendingAsset>, depth: usize) {
    if depth > 64 {
        return;
    }
    match value {
        Value::Object(map) => {
            take_in_object(map, out);
            for v in map.values_mut() {
                walk_json(v, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                walk_json(v, out, depth + 1);
            }
        }
        Value::String(s) if s.starts_with("data:image/") && s.len() >= INLINE_MIN => {
            if let Some(asset) = decode(s, None) {
                *value = serde_json::json!({"assetRef": asset.name, "mimeType": mime_of(s)});
                out.push(asset);
            }
        }
        _ => {}
    }
}

/// The object-shaped cases: the payload key is replaced by `assetRef`.
fn take_in_object(map: &mut serde_json::Map<String, Value>, out: &mut Vec<PendingAsset>) {
    let str_of = |m: &serde_json::Map<String, Value>, k: &str| {
        m.get(k).and_then(Value::as_str).map(str::to_string)
    };
    // Anthropic: {type: "image", source: {type: "base64", media_type, data}}
    if let Some(Value::Object(source)) = map.get("source")
        && source.get("type").and_then(Value::as_str) == Some("base64")
        && let Some(data) = source.get("data").and_then(Value::as_str)
        && data.len() >= INLINE_MIN
    {
        let mime = str_of(source, "media_type");
        if let Some(asset) = decode(data, mime.as_deref()) {
            map.remove("source");
            map.insert("assetRef".into(), Value::from(asset.name.clone()));
            map.insert(
                "mimeType".into(),
                Value::from(mime.unwrap_or_else(|| "application/octet-stream".into())),
            );
            out.push(asset);
        }
        return;
    }
    for key in ["base64", "data", "image_url", "url"] {
        let Some(data) = map.get(key).and_then(Value::as_str) else {
            continue;
        };
        // `data` holds bare base64 in an ATSF image block; elsewhere only a
        // `data:` URL is taken for an image.
        let atsf_image = key == "data" && map.get("type").and_then(Value::as_str) == Some("image");
        if data.len() < INLINE_MIN || (key != "base64" && !atsf_image && !data.starts_with("data:"))
        {
            continue;
        }
        let mime = str_of(map, "mimeType")
            .or_else(|| str_of(map, "media_type"))
            .or_else(|| str_of(map, "type").filter(|t| t.contains('/')));
        let mime = mime.or_else(|| data.starts_with("data:").then(|| mime_of(data)));
        if let Some(asset) = decode(data, mime.as_deref()) {
            map.remove(key);
            map.insert("assetRef".into(), Value::from(asset.name.clone()));
            if !map.contains_key("mimeType") {
                map.insert(
                    "mimeType".into(),
                    Value::from(mime.unwrap_or_else(|| "application/octet-stream".into())),
                );
            }
            out.push(asset);
        }
    }
}

fn mime_of(data_url: &str) -> String {
    split_data_url(data_url)
        .0
        .unwrap_or("application/octet-stream")
        .to_string()
}

fn decode(payload: &str, mime: Option<&str>) -> Option<PendingAsset> {
    let (url_mime, b64) = split_data_url(payload);
    let mime = mime.or(url_mime).unwrap_or("application/octet-stream");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    Some(PendingAsset {
        name: asset_name(&bytes, mime),
        bytes,
    })
}
