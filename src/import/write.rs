//! Writing an imported thread: a new thread built aside, or what an existing
//! one lacks appended under its lock. A message grove cannot store as it is
//! (an image whose data is not base64, a URL where data should be) keeps
//! what it says as a placeholder, and the import goes on.

use std::io::Write;
use std::path::Path;

use super::{ImportedThread, Summary, ThreadOutcome};
use crate::atsf::{self, ContentBlock, Message, Relationship, Stats, ThreadMeta};
use crate::error::{Error, IoContext, Result};
use crate::store::{AppendOptions, PendingAsset, Store, Thread, set_recorded_length};

/// Writes `imported` into `store`: a new thread built aside, or the
/// messages an existing one lacks appended (and relationships it lacks
/// added). Concurrent first imports of one session converge: the one that
/// loses the race to publish appends what the winner lacks, under the lock.
/// A thread id grove refuses is replaced by a safe one, a message grove
/// cannot store as it is by a placeholder; each is named in `summary`.
pub fn write(
    store: &Store,
    imported: ImportedThread,
    summary: &mut Summary,
) -> Result<ThreadOutcome> {
    let mut imported = imported;
    safe_thread_id(&mut imported.meta, summary);
    let messages = std::mem::take(&mut imported.messages);
    let mut storable = Vec::with_capacity(messages.len());
    let mut assets = Vec::new();
    for (i, m) in messages.into_iter().enumerate() {
        let (m, found) = storable_message(m, i, &imported.meta, summary);
        assets.extend(found);
        storable.push(m);
    }
    imported.messages = storable;
    let thread = store.thread(&imported.meta.thread_id)?;
    if std::fs::symlink_metadata(thread.meta_path()).is_ok() {
        return append_new(&thread, imported);
    }
    match create(store, imported.clone(), &assets) {
        Err(Error::ThreadExists { .. }) => append_new(&thread, imported),
        other => other,
    }
}

/// A thread id from a source that is not a safe directory name (a session
/// id holding `/`, say) is made one: unsafe characters become `-`, and a
/// short hash of the original keeps two such ids apart. The original stays
/// in `metadata.import.sourceId`.
fn safe_thread_id(meta: &mut ThreadMeta, summary: &mut Summary) {
    let Err(e) = crate::store::validate_thread_id(&meta.thread_id) else {
        return;
    };
    use sha2::Digest;
    let original = meta.thread_id.clone();
    let mut safe: String = original
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    safe = safe.trim_start_matches('.').chars().take(180).collect();
    let digest = sha2::Sha256::digest(original.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    meta.thread_id = format!("{}-{hex}", if safe.is_empty() { "thread" } else { &safe });
    let source_id = meta
        .metadata
        .as_ref()
        .and_then(|m| m.get("import")?.get("sourceId")?.as_str())
        .unwrap_or(&original)
        .to_string();
    let place = locate(meta, &source_id).unwrap_or_else(|| format!("thread {original}"));
    summary.errors.push(format!(
        "{place}: the thread id {original:?} is not a safe name ({e}); imported as {}",
        meta.thread_id
    ));
}

/// Makes message `m` (the `i`th of its thread) storable: a missing id or
/// tool-call id is derived, every inline image decoded (its asset returned,
/// to be written with the thread); an image grove cannot store — data that is
/// not base64, a URL, nothing at all — becomes a text placeholder keeping the
/// original block under `unimported`, named in `summary` by `file:line`.
fn storable_message(
    mut m: Message,
    i: usize,
    meta: &ThreadMeta,
    summary: &mut Summary,
) -> (Message, Vec<PendingAsset>) {
    if m.id.trim().is_empty() {
        m.id = format!("{}-{i}", meta.thread_id);
    }
    for (j, call) in m.tool_calls.iter_mut().flatten().enumerate() {
        if call.tool_call_id.trim().is_empty() {
            call.tool_call_id = format!("{}-call-{j}", m.id);
        }
        if call.name.trim().is_empty() {
            call.name = "tool".into();
        }
    }
    let mut assets = Vec::new();
    let mut problems = Vec::new();
    for block in m.content.iter_mut() {
        let ContentBlock::Image(img) = block else {
            continue;
        };
        let original = img.clone();
        match crate::store::take_inline_image(img) {
            Ok(Some(asset)) => assets.push(asset),
            Ok(None) if img.asset_ref.is_some() => {}
            outcome => {
                let why = match outcome {
                    Err(e) => e.to_string(),
                    _ => "the image has no data".to_string(),
                };
                let what = match original.data.as_deref() {
                    Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                        format!("[image: {url}]")
                    }
                    _ => "[image not imported: its data could not be read]".to_string(),
                };
                let mut extra = atsf::Extra::new();
                if let Ok(v) = serde_json::to_value(ContentBlock::Image(original)) {
                    extra.insert("unimported".into(), v);
                }
                *block = ContentBlock::Text { text: what, extra };
                problems.push(why);
            }
        }
    }
    for why in problems {
        let place = locate(meta, &m.id).unwrap_or_else(|| format!("thread {}", meta.thread_id));
        summary.errors.push(format!(
            "{place}: an image of message {} was kept as a placeholder: {why}",
            m.id
        ));
    }
    (m, assets)
}

/// The text to look for in the source to name where error `e` comes from.
pub(super) fn needle(e: &Error, meta: &ThreadMeta) -> String {
    match e {
        Error::InvalidThreadId { .. } => meta
            .metadata
            .as_ref()
            .and_then(|m| m.get("import")?.get("sourceId")?.as_str())
            .unwrap_or("")
            .to_string(),
        Error::InvalidMessage(text) => text
            .split("(id \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

fn create(
    store: &Store,
    imported: ImportedThread,
    assets: &[PendingAsset],
) -> Result<ThreadOutcome> {
    let mut meta = imported.meta;
    let staged = store.stage_thread(&meta)?;
    let assets_dir = staged.path().join(atsf::ASSETS_DIR);
    for asset in assets {
        asset.store(&assets_dir)?;
    }
    let log = staged.path().join(atsf::MESSAGES_FILE);
    let mut out = std::io::BufWriter::new(crate::fsutil::open_append(&log, false)?);
    let mut stats = Stats::default();
    let mut bytes = 0u64;
    let mut last = None;
    for (i, m) in imported.messages.into_iter().enumerate() {
        crate::store::validate_message(&m)
            .map_err(|e| Error::InvalidMessage(format!("message #{i} (id {:?}): {e}", m.id)))?;
        let line = atsf::to_line(&m)?;
        out.write_all(&line).ctx("writing", &log)?;
        bytes += line.len() as u64;
        stats.add(&m);
        last = Some(m.timestamp);
    }
    let file = out
        .into_inner()
        .map_err(|e| Error::io("writing", &log, e.into_error()))?;
    file.sync_all().ctx("syncing", &log)?;
    meta.stats = stats;
    if let Some(t) = last {
        meta.updated_at = t;
    }
    set_recorded_length(&mut meta, bytes);
    staged.write_meta(&meta)?;
    let thread = staged.publish()?;
    Ok(ThreadOutcome {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        thread_dir: thread.dir().to_path_buf(),
        created: true,
        messages_added: meta.stats.message_count,
        message_count: meta.stats.message_count,
    })
}

/// Appends the messages the thread lacks. What is new is decided while the
/// thread's lock is held, and the lock is kept until they are written, so
/// two imports at once never write a message twice.
fn append_new(thread: &Thread, imported: ImportedThread) -> Result<ThreadOutcome> {
    let lock = thread.lock()?;
    // Only the ids: an agent hook imports after every turn, and a full parse
    // of a long thread each time would be wasted.
    let mut have = lock.message_ids()?;
    let fresh: Vec<Message> = imported
        .messages
        .into_iter()
        .filter(|m| have.insert(m.id.clone()))
        .collect();
    let added = fresh.len() as u64;
    if !fresh.is_empty() {
        // One fsync for the batch: a crash leaves a prefix, and the next
        // import appends the rest (ids tell what is there).
        lock.append_all(fresh, AppendOptions { fsync: true })?;
    }
    let mut meta = lock.meta()?;
    let src = &imported.meta;
    if refresh_from_source(&mut meta, src) {
        lock.save(&mut meta)?;
    }
    Ok(ThreadOutcome {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        thread_dir: thread.dir().to_path_buf(),
        created: false,
        messages_added: added,
        message_count: meta.stats.message_count,
    })
}

/// Adds the relationships `meta` lacks and refreshes the state a source
/// keeps current (a checkpoint's git state, summary, next steps, tags).
/// Returns whether anything changed.
fn refresh_from_source(meta: &mut ThreadMeta, src: &ThreadMeta) -> bool {
    let missing: Vec<Relationship> = src
        .relationships()
        .iter()
        .filter(|r| {
            !meta
                .relationships()
                .iter()
                .any(|h| h.thread_id == r.thread_id && h.kind == r.kind && h.role == r.role)
        })
        .cloned()
        .collect();
    let tags = src.tags();
    let refresh = (src.git.is_some() && src.git != meta.git)
        || (src.conversation_summary.is_some()
            && src.conversation_summary != meta.conversation_summary)
        || (src.files_touched.is_some() && src.files_touched != meta.files_touched)
        || (src.next_steps.is_some() && src.next_steps != meta.next_steps)
        || tags.iter().any(|t| !meta.tags().contains(t));
    if missing.is_empty() && !refresh {
        return false;
    }
    meta.relationships
        .get_or_insert_with(Vec::new)
        .extend(missing);
    if meta.relationships.as_ref().is_some_and(Vec::is_empty) {
        meta.relationships = None;
    }
    if src.git.is_some() {
        meta.git = src.git.clone();
    }
    if src.conversation_summary.is_some() {
        meta.conversation_summary = src.conversation_summary.clone();
    }
    if src.files_touched.is_some() {
        meta.files_touched = src.files_touched.clone();
    }
    if src.next_steps.is_some() {
        meta.next_steps = src.next_steps.clone();
    }
    meta.add_tags(&tags);
    true
}

/// Where an import's trouble comes from: the source file recorded in
/// `metadata.import.source`, and the first line of it holding `needle` (a
/// record's id, a session id) — so a warning can say `file:line`.
pub fn locate(meta: &ThreadMeta, needle: &str) -> Option<String> {
    let source = meta
        .metadata
        .as_ref()?
        .get("import")?
        .get("source")?
        .as_str()?;
    let path = Path::new(source);
    if needle.is_empty() {
        return Some(source.to_string());
    }
    let file = std::fs::File::open(path).ok()?;
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0u64;
    while reader.read_until(b'\n', &mut line).ok()? > 0 {
        number += 1;
        if memchr::memmem::find(&line, needle.as_bytes()).is_some() {
            return Some(format!("{source}:{number}"));
        }
        line.clear();
    }
    Some(source.to_string())
}
