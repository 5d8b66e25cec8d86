//! `checkpoint`: the thread's git state refreshed from its worktree (after
//! HQ's thread checkpoints, seed 003), with a summary, next steps and tags.

use std::path::{Path, PathBuf};

use crate::atsf::{GitState, ThreadMeta};
use crate::discovery::{Found, Status};
use crate::error::{Error, Result};
use crate::git::cmd::Git;
use crate::worktree::carry;

/// What the user adds to a checkpoint.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// Replaces `conversationSummary` when given.
    pub summary: Option<String>,
    /// Replace `nextSteps` when any is given.
    pub next_steps: Vec<String>,
    /// Added to `metadata.tags`.
    pub tags: Vec<String>,
}

/// Records a checkpoint of `found`. The git state comes from the thread's
/// worktree (or the project its `.agent/` belongs to); a thread whose
/// worktree was removed gets summary, next steps and tags only, and the
/// second value says why its git state was not refreshed.
pub fn checkpoint(found: &Found, input: &Input) -> Result<(ThreadMeta, Option<String>)> {
    let (git_state, files, skipped) = match work_dir(found) {
        Some(dir) => {
            let (state, files) = read_git_state(&dir, &found.meta)?;
            (Some(state), Some(files), None)
        }
        None => (
            None,
            None,
            Some(format!(
                "the worktree of thread {} is gone ({}); git state not refreshed",
                found.meta.thread_id,
                found.status.as_str()
            )),
        ),
    };
    let meta = found.thread.update_meta(|m| {
        if let Some(state) = git_state {
            let mut state = state;
            if let Some(old) = &m.git {
                state.extra = old.extra.clone();
            }
            m.git = Some(state);
        }
        if files.is_some() {
            m.files_touched = files.map(crate::atsf::notes);
        }
        if let Some(s) = &input.summary {
            m.conversation_summary = Some(s.clone());
        }
        if !input.next_steps.is_empty() {
            m.next_steps = Some(crate::atsf::notes(input.next_steps.clone()));
        }
        if !input.tags.is_empty() {
            m.add_tags(&input.tags);
        }
    })?;
    Ok((meta, skipped))
}

/// The working tree whose state the thread records.
fn work_dir(found: &Found) -> Option<PathBuf> {
    if let Some(wt) = found.live_worktree() {
        return Some(wt.to_path_buf());
    }
    if found.status != Status::Local {
        return None;
    }
    // <root>/.agent/threads/<id>
    let root = found.thread.dir().parent()?.parent()?.parent()?;
    root.join(".git").exists().then(|| root.to_path_buf())
}

/// Reads the git state of `dir` relative to the thread's initial commit.
/// Returns it with the files touched since that commit.
pub fn read_git_state(dir: &Path, meta: &ThreadMeta) -> Result<(GitState, Vec<String>)> {
    let git = Git::find()?;
    let current = git.run(dir, &["rev-parse", "HEAD"])?;
    let recorded = meta
        .git
        .as_ref()
        .and_then(|g| g.initial_commit.clone())
        .or_else(|| meta.context.git_commit.clone())
        .or_else(|| meta.context.base_commit().map(str::to_string))
        .unwrap_or_else(|| current.clone());
    // The recorded commit comes from thread.json, which may come from
    // anywhere: it is resolved to an object id (never read as an option)
    // before git is given it again.
    let resolved = git.output(
        dir,
        &[
            "rev-parse",
            "-q",
            "--verify",
            "--end-of-options",
            &format!("{recorded}^{{commit}}"),
        ],
    )?;
    if !resolved.success {
        return Err(Error::Git(format!(
            "the thread's initial commit {recorded:?} is not in the repository at {}",
            dir.display()
        )));
    }
    let initial = resolved.stdout.trim().to_string();
    let log = git.bytes(
        dir,
        &[
            "log",
            "--reverse",
            "--no-color",
            "--no-show-signature",
            "--format=%h: %s",
            &format!("{initial}..HEAD"),
        ],
        None,
        true,
    )?;
    let commits_made: Vec<String> = String::from_utf8_lossy(&log)
        .lines()
        .map(str::to_string)
        .collect();
    let changes = carry::changes(&git, dir)?;
    let diff = git.bytes(
        dir,
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--no-relative",
            &initial,
        ],
        None,
        true,
    )?;
    let mut files: Vec<String> = diff
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .chain(
            changes
                .untracked
                .iter()
                .map(|p| p.to_string_lossy().into_owned()),
        )
        .collect();
    files.sort();
    files.dedup();
    let branch = git
        .output(dir, &["symbolic-ref", "--short", "-q", "HEAD"])?
        .stdout
        .trim()
        .to_string();
    let remote_url = crate::worktree::Repo::new(dir)
        .ok()
        .and_then(|r| r.remote_url().ok().flatten());
    let state = GitState {
        branch: (!branch.is_empty()).then_some(branch),
        remote_url,
        initial_commit: Some(initial),
        current_commit: Some(current),
        commits_made,
        dirty: !changes.is_empty() || !changes.unmerged.is_empty(),
        checkpointed_at: Some(crate::atsf::now_timestamp()),
        extra: Default::default(),
    };
    Ok((state, files))
}
