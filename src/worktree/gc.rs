//! `grove gc`: pick stale worktrees.

use std::time::Duration;

use serde::Serialize;

use crate::discovery::{Found, Status};

/// Which worktrees count as stale.
#[derive(Debug, Clone, Copy, Default)]
pub struct Criteria {
    /// Branch integrated into the default branch.
    pub merged: bool,
    /// Worktree directory gone.
    pub missing: bool,
    /// Not updated for this long.
    pub older_than: Option<Duration>,
}

/// A worktree picked by gc, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub thread_id: String,
    pub title: String,
    pub worktree_path: Option<String>,
    pub branch: Option<String>,
    pub status: Status,
    pub reasons: Vec<String>,
    /// How its branch is integrated into the default branch (`--merged`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated: Option<crate::worktree::Integration>,
    /// Why gc leaves it alone, if it does (locked, dirty…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
}

/// Picks from `threads` the worktree threads matching `criteria`. Locked
/// worktrees are listed with a reason to skip and are never touched.
pub fn select(
    threads: &[Found],
    criteria: Criteria,
    now: jiff::Timestamp,
) -> Vec<(usize, Candidate)> {
    let mut out = Vec::new();
    for (i, f) in threads.iter().enumerate() {
        if matches!(f.status, Status::Local | Status::Removed) || f.worktree.is_none() {
            continue;
        }
        let mut reasons = Vec::new();
        if criteria.merged && f.status == Status::Merged {
            reasons.push(match &f.integration {
                Some(how) => format!("merged ({how})"),
                None => "merged".to_string(),
            });
        }
        if criteria.missing && f.status == Status::Missing {
            reasons.push("missing".to_string());
        }
        // The latest of the thread's times and this machine's last write of
        // it: a pulled `updatedAt` from long ago cannot make an active task
        // look stale.
        if let Some(age) = criteria.older_than
            && let Some(updated) = crate::discovery::last_activity(f)
        {
            let idle = now.duration_since(updated);
            if idle.as_secs() >= 0 && idle.unsigned_abs() >= age {
                reasons.push(format!("not updated for {}", humanize(idle.unsigned_abs())));
            }
        }
        if reasons.is_empty() {
            continue;
        }
        let skip = f.locked.as_ref().map(|r| {
            if r.is_empty() {
                "locked".to_string()
            } else {
                format!("locked ({r})")
            }
        });
        out.push((
            i,
            Candidate {
                thread_id: f.meta.thread_id.clone(),
                title: f.meta.title.clone(),
                worktree_path: f.worktree.as_ref().map(|p| p.display().to_string()),
                branch: f.branch.clone(),
                status: f.status,
                reasons,
                integrated: f.integration.clone().filter(|_| criteria.merged),
                skip,
            },
        ));
    }
    out
}

fn humanize(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s >= 86_400 => format!("{}d", s / 86_400),
        s if s >= 3_600 => format!("{}h", s / 3_600),
        s => format!("{}m", s / 60),
    }
}

/// Parses `14d`, `12h`, `2w`, `30m`, `1 day`, `6mo`, `1y`… (jiff's friendly
/// format; days are 24 h; months and years counted back from now).
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    let span: jiff::Span = input
        .trim()
        .parse()
        .map_err(|e| format!("{input:?} is not a duration like 14d, 12h or 2w: {e}"))?;
    // Calendar units (1y, 6mo) are counted back from now, as a person means
    // them; days and smaller as 24-hour days.
    let d = match span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()) {
        Ok(d) => d,
        Err(_) => {
            let now = jiff::Zoned::now();
            span.negate()
                .to_duration(&now)
                .map(|d| -d)
                .map_err(|e| format!("{input:?}: {e}"))?
        }
    };
    d.try_into().map_err(|_| format!("{input:?} is negative"))
}
