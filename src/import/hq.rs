//! HQ thread checkpoints (`workspace/threads/<id>.json`, seed 003), full and
//! auto: git context, summary, files touched, next steps, tags.
//!
//! One thread per HQ thread id (`hq-<thread_id>`). Each checkpoint becomes
//! a `system` message (id from the thread id and `updated_at`), so a
//! checkpoint updated later adds a message and refreshes the thread's git
//! state, summary, files, next steps and tags. The whole source object is
//! kept under `metadata.hq`.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{ImportedThread, Summary};
use crate::atsf::{self, ContentBlock, Context, GitState, Message, Role};
use crate::error::Result;

/// HQ, as a [`super::Format`].
pub struct Hq;

impl super::Format for Hq {
    fn name(&self) -> &'static str {
        "hq"
    }
    fn about(&self) -> &'static str {
        "HQ thread checkpoints (workspace/threads/<id>.json)"
    }
    fn layout(&self) -> &'static str {
        "an HQ directory, its workspace/ or workspace/threads/, or one checkpoint .json"
    }
    fn sources(&self, path: &Path) -> Result<Vec<std::path::PathBuf>> {
        let dir = [path.join("workspace/threads"), path.join("threads")]
            .into_iter()
            .find(|d| d.is_dir())
            .unwrap_or_else(|| path.to_path_buf());
        Ok(super::json_files(&dir)?
            .into_iter()
            .filter(|p| is_checkpoint(p))
            .collect())
    }
    fn import(
        &self,
        source: &Path,
        _from: Option<&super::Resume>,
        out: &mut super::Sink,
    ) -> Result<Option<super::Resume>> {
        super::write_all(out, |summary| import_file(source, summary))
    }
}

/// A checkpoint file, not one of what sits beside them in
/// `workspace/threads/`: a `<id>.changeset.json` sidecar, the `handoff.json`
/// pointer.
fn is_checkpoint(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    !name.ends_with(".changeset.json") && name != "handoff.json"
}

/// Imports one checkpoint file, with what sits beside it for the same
/// thread: its `<id>.changeset.json` sidecar, and `handoff.json` when that
/// points at it.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let Some(raw) = super::read_object(path, "checkpoint", summary)? else {
        return Ok(None);
    };
    let Some(source_id) = string(&raw, "thread_id") else {
        summary
            .errors
            .push(format!("{}: no thread_id", path.display()));
        summary.skip("checkpoint", "no thread_id".into());
        return Ok(None);
    };
    let kind = string(&raw, "type").unwrap_or_else(|| "checkpoint".into());
    let created = string(&raw, "created_at")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(atsf::now_timestamp);
    let updated = string(&raw, "updated_at")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(|| created.clone());
    let metadata = raw.get("metadata").and_then(Value::as_object);
    let title = string(&raw, "title")
        .or_else(|| metadata.and_then(|m| string(m, "title")))
        .unwrap_or_else(|| source_id.clone());
    let mut meta = crate::threads::new_meta(&title, "hq", context(&raw));
    meta.thread_id = format!("hq-{}", sanitize(&source_id));
    meta.created_at = created;
    meta.updated_at = updated.clone();
    meta.agent.name = "HQ".into();
    meta.git = git_state(&raw, &updated);
    meta.conversation_summary = string(&raw, "conversation_summary");
    meta.files_touched = notes_of(raw.get("files_touched"));
    meta.next_steps = notes_of(raw.get("next_steps"));
    let mut tags = strings(metadata.and_then(|m| m.get("tags")));
    if kind == "auto-checkpoint" && !tags.contains(&kind) {
        tags.push(kind.clone());
    }
    let mut hq = raw.clone();
    if let Some(changeset) = beside(path, &format!("{source_id}.changeset.json"), summary) {
        hq.insert("changeset".into(), Value::Object(changeset));
    }
    if let Some(handoff) = beside(path, "handoff.json", summary)
        && handoff.get("last_thread").and_then(Value::as_str) == Some(source_id.as_str())
    {
        hq.insert("handoff".into(), Value::Object(handoff));
        tags.push("handoff".into());
    }
    meta.add_tags(&tags);
    meta.metadata_mut().insert("hq".into(), Value::Object(hq));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "hq", "source": path, "sourceId": source_id}),
    );
    let mut m = Message::new(
        Role::System,
        vec![ContentBlock::text(message_text(&kind, &source_id, &meta))],
    );
    m.id = format!("{}@{updated}", meta.thread_id);
    m.timestamp = updated;
    if let Some(worker) = raw.get("worker") {
        m.extra.insert("hqWorker".into(), worker.clone());
    }
    summary.count(&kind).mapped += 1;
    Ok(Some(ImportedThread {
        meta,
        messages: vec![m],
    }))
}

fn string(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect()
}

/// `files_touched` / `next_steps`: strings, or objects (`{path, reason}`,
/// `{step}`) kept as they are.
fn notes_of(v: Option<&Value>) -> Option<Vec<atsf::Note>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter(|x| !x.is_null())
            .cloned()
            .map(atsf::Note)
            .collect()
    })
}

/// Where the checkpoint ran: `cwd` under `workspace_root`, or `cwd` itself
/// when absolute; `~` is the home directory.
fn context(raw: &Map<String, Value>) -> Context {
    let root = string(raw, "workspace_root").map(|r| expand_home(&r));
    let cwd = string(raw, "cwd");
    let absolute = |p: &str| p.starts_with('/') || p.starts_with('~') || Path::new(p).is_absolute();
    let (working_dir, relative_dir) = match (&cwd, &root) {
        (Some(c), _) if absolute(c) => (expand_home(c), None),
        (Some(c), Some(r)) => (format!("{}/{c}", r.trim_end_matches('/')), Some(c.clone())),
        (Some(c), None) => (c.clone(), Some(c.clone())),
        (None, Some(r)) => (r.clone(), None),
        (None, None) => (String::new(), None),
    };
    let git = raw.get("git").and_then(Value::as_object);
    Context {
        working_dir,
        relative_dir,
        git_branch: git.and_then(|g| string(g, "branch")),
        git_commit: git
            .and_then(|g| string(g, "initial_commit").or_else(|| string(g, "current_commit"))),
        ..Context::default()
    }
}

/// `~/x` as an absolute path, when there is a home directory.
fn expand_home(p: &str) -> String {
    match (p.strip_prefix('~'), dirs::home_dir()) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", home.display())
        }
        _ => p.to_string(),
    }
}

fn git_state(raw: &Map<String, Value>, updated: &str) -> Option<GitState> {
    let g = raw.get("git").and_then(Value::as_object)?;
    let mut extra = g.clone();
    for k in [
        "branch",
        "remote_url",
        "initial_commit",
        "current_commit",
        "commits_made",
        "dirty",
    ] {
        extra.remove(k);
    }
    Some(GitState {
        branch: string(g, "branch"),
        remote_url: string(g, "remote_url"),
        initial_commit: string(g, "initial_commit"),
        current_commit: string(g, "current_commit"),
        commits_made: strings(g.get("commits_made")),
        dirty: g.get("dirty").and_then(Value::as_bool).unwrap_or(false),
        checkpointed_at: Some(updated.to_string()),
        extra,
    })
}

/// A JSON object next to the checkpoint, if there is one (a malformed one
/// is named in the summary).
fn beside(path: &Path, name: &str, summary: &mut Summary) -> Option<Map<String, Value>> {
    let p = path.parent()?.join(name);
    if !p.is_file() {
        return None;
    }
    super::read_object(&p, "sidecar", summary).ok().flatten()
}

fn message_text(kind: &str, source_id: &str, meta: &atsf::ThreadMeta) -> String {
    let mut text = format!(
        "{} {source_id}: {}",
        if kind == "auto-checkpoint" {
            "Auto-checkpoint"
        } else {
            "Checkpoint"
        },
        meta.conversation_summary
            .as_deref()
            .unwrap_or("(no summary)")
    );
    let list = |notes: &Option<Vec<atsf::Note>>| -> Vec<String> {
        notes.iter().flatten().map(atsf::Note::text).collect()
    };
    let files = list(&meta.files_touched);
    if !files.is_empty() {
        text.push_str(&format!("\nFiles touched: {}", files.join(", ")));
    }
    let next = list(&meta.next_steps);
    if !next.is_empty() {
        text.push_str(&format!("\nNext steps: {}", next.join("; ")));
    }
    text
}

/// HQ ids are `T-YYYYMMDD-HHMMSS-slug`; anything outside a thread id's
/// characters becomes `-`.
fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}
