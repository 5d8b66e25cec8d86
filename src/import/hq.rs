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
        out: &mut super::Output,
    ) -> Result<Option<super::Resume>> {
        let threads = import_file(source, out.summary())?
            .into_iter()
            .collect::<Vec<_>>();
        for t in threads {
            out.thread(t)?;
        }
        Ok(None)
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

/// Imports one checkpoint file.
pub fn import_file(path: &Path, summary: &mut Summary) -> Result<Option<ImportedThread>> {
    let Some(raw) = super::read_object(path, "checkpoint", summary)? else {
        return Ok(None);
    };
    let s = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v.and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
    };
    let Some(source_id) = s(&raw, "thread_id") else {
        summary
            .errors
            .push(format!("{}: no thread_id", path.display()));
        summary.skip("checkpoint", "no thread_id".into());
        return Ok(None);
    };
    let kind = s(&raw, "type").unwrap_or_else(|| "checkpoint".into());
    let id = format!("hq-{}", sanitize(&source_id));
    let created = s(&raw, "created_at")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(atsf::now_timestamp);
    let updated = s(&raw, "updated_at")
        .and_then(|t| atsf::normalize_timestamp(&t).ok())
        .unwrap_or_else(|| created.clone());
    let metadata = raw.get("metadata").and_then(Value::as_object);
    let title = metadata
        .and_then(|m| s(m, "title"))
        .unwrap_or_else(|| source_id.clone());
    let root = s(&raw, "workspace_root").unwrap_or_default();
    let cwd = s(&raw, "cwd");
    let working_dir = match &cwd {
        Some(c) if !root.is_empty() => format!("{}/{c}", root.trim_end_matches('/')),
        Some(c) => c.clone(),
        None => root.clone(),
    };
    let git = raw.get("git").and_then(Value::as_object);
    let mut meta = crate::threads::new_meta(
        &title,
        "hq",
        Context {
            working_dir,
            relative_dir: cwd,
            git_branch: git.and_then(|g| s(g, "branch")),
            git_commit: git.and_then(|g| s(g, "initial_commit").or_else(|| s(g, "current_commit"))),
            ..Context::default()
        },
    );
    meta.thread_id = id;
    meta.created_at = created;
    meta.updated_at = updated.clone();
    meta.agent.name = "HQ".into();
    if let Some(g) = git {
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
        meta.git = Some(GitState {
            branch: s(g, "branch"),
            remote_url: s(g, "remote_url"),
            initial_commit: s(g, "initial_commit"),
            current_commit: s(g, "current_commit"),
            commits_made: strings(g.get("commits_made")).unwrap_or_default(),
            dirty: g.get("dirty").and_then(Value::as_bool).unwrap_or(false),
            checkpointed_at: Some(updated.clone()),
            extra,
        });
    }
    meta.conversation_summary = s(&raw, "conversation_summary");
    meta.files_touched = strings(raw.get("files_touched"));
    meta.next_steps = strings(raw.get("next_steps"));
    let mut tags = strings(metadata.and_then(|m| m.get("tags"))).unwrap_or_default();
    if kind == "auto-checkpoint" && !tags.contains(&kind) {
        tags.push(kind.clone());
    }
    meta.add_tags(&tags);
    meta.metadata_mut()
        .insert("hq".into(), Value::Object(raw.clone()));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "hq", "source": path, "sourceId": source_id}),
    );

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
    if let Some(files) = &meta.files_touched
        && !files.is_empty()
    {
        text.push_str(&format!("\nFiles touched: {}", files.join(", ")));
    }
    if let Some(next) = &meta.next_steps
        && !next.is_empty()
    {
        text.push_str(&format!("\nNext steps: {}", next.join("; ")));
    }
    let mut m = Message::new(Role::System, vec![ContentBlock::text(text)]);
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
