//! Where a task's worktree stands, as `grove list` shows it beside each
//! task: the lines it changed and has not committed, how far its branch is
//! ahead of and behind the default branch, and the commit it is on. Read
//! for one worktree of many at once (one per core): a `git diff` only when
//! `git status` saw a tracked file changed, the rest with libgit2.

use std::path::Path;

use serde::Serialize;

use super::Git;
use super::repo::StatusCounts;
use crate::error::Result;

/// Uncommitted work: lines added and removed in tracked files against HEAD
/// (staged or not), and the files `git status` lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Uncommitted {
    pub added: u64,
    pub removed: u64,
    /// Tracked files changed.
    pub files: usize,
    /// Untracked files (not ignored); their lines are not counted.
    pub untracked: usize,
}

/// Commits on a branch and not on the default branch (`ahead`), and on the
/// default branch and not on the branch (`behind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    pub ahead: usize,
    pub behind: usize,
    /// The default branch compared with (`refs/heads/main`).
    pub target: String,
}

/// The commit a task's branch points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeadCommit {
    pub id: String,
    /// Its message's first line.
    pub subject: String,
    /// When it was committed (the committer's date), ISO 8601 UTC.
    pub time: String,
}

/// The uncommitted lines of the worktree at `path`, whose `git status`
/// counted `counts`. `git diff` runs only when a tracked file changed: a
/// clean worktree, or one with only new files, costs nothing more.
pub fn uncommitted(path: &Path, counts: StatusCounts) -> Result<Uncommitted> {
    let mut out = Uncommitted {
        files: counts.tracked,
        untracked: counts.untracked,
        ..Uncommitted::default()
    };
    if counts.tracked == 0 {
        return Ok(out);
    }
    let numstat = Git::find()?.bytes(
        path,
        &[
            "diff",
            "--numstat",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "HEAD",
        ],
        None,
        true,
    )?;
    (out.added, out.removed) = sum_numstat(&numstat);
    Ok(out)
}

/// The added and removed lines of `git diff --numstat -z` output (binary
/// files, shown as `-`, count none).
fn sum_numstat(out: &[u8]) -> (u64, u64) {
    let number = |field: Option<&[u8]>| -> u64 {
        field
            .and_then(|f| std::str::from_utf8(f).ok())
            .and_then(|f| f.parse().ok())
            .unwrap_or(0)
    };
    out.split(|&b| b == 0)
        .filter(|record| !record.is_empty())
        .fold((0, 0), |(added, removed), record| {
            let mut fields = record.splitn(3, |&b| b == b'\t');
            let a = number(fields.next());
            let r = number(fields.next());
            (added + a, removed + r)
        })
}

/// How far `tip` is from `base`, the tip of the default branch `target` (a
/// full ref name).
pub fn divergence(
    git: &git2::Repository,
    tip: git2::Oid,
    target: &str,
    base: git2::Oid,
) -> Result<Divergence> {
    let (ahead, behind) = git.graph_ahead_behind(tip, base)?;
    Ok(Divergence {
        ahead,
        behind,
        target: target.to_string(),
    })
}

/// The commit `tip`: its id, subject and time.
pub fn head_commit(git: &git2::Repository, tip: git2::Oid) -> Result<HeadCommit> {
    let commit = git.find_commit(tip)?;
    let time = jiff::Timestamp::from_second(commit.committer().when().seconds())
        .map(|t| t.to_string())
        .unwrap_or_default();
    Ok(HeadCommit {
        id: tip.to_string(),
        subject: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned(),
        time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_sums_lines_and_counts_binary_files_as_none() {
        assert_eq!(
            sum_numstat(b"3\t1\tsrc/a.rs\x0010\t0\tnew.txt\x00-\t-\tlogo.png\x00"),
            (13, 1)
        );
        assert_eq!(sum_numstat(b""), (0, 0));
    }
}
