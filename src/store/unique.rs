//! Message ids are unique in a thread (ATSF): an append whose id the log
//! already holds is refused before anything is written. A `grove pull`
//! merges by id, so a second message under one id would be dropped there.
//!
//! The log is not parsed to look: each id is searched for as its JSON
//! string (`"<id>"`) in the log's bytes, read in blocks, and only a block
//! holding it is parsed line by line to confirm that a message carries it
//! as its `id` (the same text inside a message's content is no duplicate).
//! A large batch (an import) collects the log's ids once instead.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::atsf::Message;
use crate::error::{Error, IoContext, Result};

/// Above this many messages in a batch, the log's ids are collected once
/// rather than searched for one by one.
const SEARCH_AT_MOST: usize = 16;

/// Refuses `batch` when two of its messages share an id, or one has an id
/// the first `len` bytes of the log at `path` already hold.
pub(super) fn check(path: &Path, len: u64, batch: &[Message]) -> Result<()> {
    let mut seen = HashSet::with_capacity(batch.len());
    for (i, m) in batch.iter().enumerate() {
        if !seen.insert(m.id.as_str()) {
            return Err(duplicate(
                &m.id,
                format!("message #{} of the same batch", i + 1),
            ));
        }
    }
    if len == 0 {
        return Ok(());
    }
    let found = if batch.len() > SEARCH_AT_MOST {
        first_known(path, len, &seen)?
    } else {
        search(path, len, &seen)?
    };
    match found {
        Some((id, line)) => Err(duplicate(&id, format!("line {line} of {}", path.display()))),
        None => Ok(()),
    }
}

fn duplicate(id: &str, there: String) -> Error {
    Error::InvalidMessage(format!(
        "id {id:?} is already taken by {there}; message ids are unique in a thread \
         (leave `id` out and grove makes one)"
    ))
}

/// Block size of the search.
const BLOCK: usize = 1 << 20;

/// Searches the log for each id as a JSON string; a hit is confirmed by
/// parsing the lines of its block.
fn search(path: &Path, len: u64, ids: &HashSet<&str>) -> Result<Option<(String, u64)>> {
    let needles: Vec<String> = ids
        .iter()
        .map(|id| serde_json::to_string(id).unwrap_or_default())
        .collect();
    let finders: Vec<memchr::memmem::Finder> = needles
        .iter()
        .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
        .collect();
    let mut hit = false;
    blocks(path, len, |block, _| {
        hit = finders.iter().any(|f| f.find(block).is_some());
        !hit
    })?;
    if !hit {
        return Ok(None);
    }
    first_known(path, len, ids)
}

/// The first line of the log whose message id is one of `ids`.
fn first_known(path: &Path, len: u64, ids: &HashSet<&str>) -> Result<Option<(String, u64)>> {
    let mut found = None;
    blocks(path, len, |block, first_line| {
        for (i, line) in block.split(|&b| b == b'\n').enumerate() {
            if let Some(id) = line_id(line)
                && ids.contains(id.as_str())
            {
                found = Some((id, first_line + i as u64));
                return false;
            }
        }
        true
    })?;
    Ok(found)
}

/// The `id` of the message on `line`, when it is one.
fn line_id(line: &[u8]) -> Option<String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let value: Value = serde_json::from_slice(line).ok()?;
    value.get("id")?.as_str().map(str::to_string)
}

/// Calls `each` with the log's first `len` bytes in blocks of whole lines
/// (a line longer than a block is one block) and the 1-based number of the
/// block's first line, until it returns false.
fn blocks(path: &Path, len: u64, mut each: impl FnMut(&[u8], u64) -> bool) -> Result<()> {
    let file = crate::fsutil::open_read(path)?;
    let mut reader = file.take(len);
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK);
    let mut line = 1;
    loop {
        let have = buf.len();
        buf.resize(have + BLOCK, 0);
        let n = reader.read(&mut buf[have..]).ctx("reading", path)?;
        buf.truncate(have + n);
        let end = n == 0;
        let whole = match memchr::memrchr(b'\n', &buf) {
            _ if end => buf.len(),
            Some(i) => i + 1,
            None => continue,
        };
        if whole > 0 {
            if !each(&buf[..whole], line) {
                return Ok(());
            }
            line += memchr::memchr_iter(b'\n', &buf[..whole]).count() as u64;
            buf.drain(..whole);
        }
        if end {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atsf::{ContentBlock, Role};

    fn message(id: &str, text: &str) -> Message {
        let mut m = Message::new(Role::User, vec![ContentBlock::text(text)]);
        m.id = id.to_string();
        m
    }

    #[test]
    fn an_id_in_the_log_or_twice_in_a_batch_is_refused_and_text_is_not_an_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("messages.jsonl");
        let mut log = Vec::new();
        for (id, text) in [("a", "x"), ("b", "the id \"c\" in text")] {
            log.extend(crate::atsf::to_line(&message(id, text)).unwrap());
        }
        std::fs::write(&path, &log).unwrap();
        let len = log.len() as u64;
        let err = check(&path, len, &[message("b", "again")]).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(check(&path, len, &[message("c", "new")]).is_ok());
        assert!(check(&path, len, &[message("d", ""), message("d", "")]).is_err());
        // Many at once: the ids are collected instead.
        let many: Vec<Message> = (0..40).map(|i| message(&format!("n{i}"), "")).collect();
        assert!(check(&path, len, &many).is_ok());
        let mut many = many;
        many.push(message("a", ""));
        assert!(
            check(&path, len, &many)
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
        // Only the first `len` bytes are the log.
        assert!(check(&path, 0, &[message("a", "")]).is_ok());
    }
}
