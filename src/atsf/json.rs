use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::check_spec_version;
use crate::error::{Error, Result};

/// Serializes as 2-space pretty JSON with a final newline (thread.json, config.json).
pub fn to_pretty<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::InvalidMessage(format!("cannot serialize: {e}")))?;
    out.push(b'\n');
    Ok(out)
}

/// Serializes as one compact JSON object followed by `\n` (a messages.jsonl line).
pub fn to_line<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec(value)
        .map_err(|e| Error::InvalidMessage(format!("cannot serialize: {e}")))?;
    out.push(b'\n');
    Ok(out)
}

#[derive(serde::Deserialize)]
struct VersionProbe {
    #[serde(rename = "specVersion")]
    spec_version: Option<serde_json::Value>,
}

/// Reads a versioned ATSF JSON file (thread.json, config.json).
///
/// The version is checked before the schema so that a file from a newer
/// MAJOR version gets a version error, not a confusing field error.
pub fn read_json_file<T: DeserializeOwned>(path: &Path) -> Result<T> {
    // Never through a symbolic link: a cloned repository could point it anywhere.
    let bytes = crate::fsutil::read(path)?;
    parse_versioned(path, &bytes)
}

/// Parses the bytes of a versioned ATSF JSON file (`thread.json`,
/// `config.json`) named `path` (for messages): a leading byte-order mark is
/// skipped; the version is checked before the schema.
pub fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T> {
    parse_versioned(path, bytes)
}

pub(crate) fn parse_versioned<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T> {
    let bytes = strip_bom(bytes);
    // Told from the first byte, not a parse of its own: `list` reads
    // thousands of these.
    if let Some(kind) = not_an_object(bytes) {
        return Err(Error::parse(
            path,
            format!(
                "the file must hold a JSON object ({{ \"specVersion\": \"1.1\", … }}), found {kind}"
            ),
        ));
    }
    let probe: VersionProbe = serde_json::from_slice(bytes).map_err(|e| json_error(path, e))?;
    match probe.spec_version {
        Some(serde_json::Value::String(v)) => check_spec_version(path, &v)?,
        Some(other) => {
            return Err(Error::parse(
                path,
                format!("field `specVersion` must be a string like \"1.1\", found {other}"),
            ));
        }
        None => {
            return Err(Error::parse(
                path,
                "missing required field `specVersion` (add \"specVersion\": \"1.1\")",
            ));
        }
    }
    parse_with_path(path, None, bytes)
}

/// Deserializes `bytes`, naming the offending field path in the error.
pub(crate) fn parse_with_path<T: DeserializeOwned>(
    path: &Path,
    line: Option<u64>,
    bytes: &[u8],
) -> Result<T> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let message = if field == "." {
            inner.to_string()
        } else {
            format!("field `{field}`: {inner}")
        };
        Error::Parse {
            path: path.to_path_buf(),
            line,
            message,
        }
    })
}

/// A UTF-8 byte-order mark, written by some Windows editors, is not JSON but
/// harms nothing: it is skipped.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// What a JSON document that is not an object holds, from its first byte
/// (`None` for an object, or for anything the parser will name itself).
fn not_an_object(bytes: &[u8]) -> Option<&'static str> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace())? {
        b'[' => Some("an array"),
        b'"' => Some("a string"),
        b'n' => Some("null"),
        b't' | b'f' => Some("a boolean"),
        b'-' | b'0'..=b'9' => Some("a number"),
        _ => None,
    }
}

fn json_error(path: &Path, e: serde_json::Error) -> Error {
    Error::parse(path, e)
}

/// Parses one line of `messages.jsonl`, naming the file, line and field on error.
pub fn parse_message_line(path: &Path, line: u64, bytes: &[u8]) -> Result<super::Message> {
    let bytes = if line == 1 { strip_bom(bytes) } else { bytes };
    parse_with_path(path, Some(line), bytes)
}

/// `bytes` as serde_json writes them inside a string.
pub fn json_escaped(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..0x20 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out
}
