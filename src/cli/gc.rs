//! `grove gc`

use std::io::IsTerminal;
use std::path::Path;

use grove::discovery::{self, Options};
use grove::project::Project;
use grove::recover::Leftovers;
use grove::worktree::gc::{self, Criteria};
use grove::worktree::{self, RemoveOptions, Repo};
use serde_json::json;

use super::{Output, UsageError};

/// Remove stale worktrees: merged into the default branch, missing, or idle;
/// and finish or undo what interrupted grove runs left (staging and trash
/// directories, worktrees made without a thread, half-done removals).
///
/// Without --yes it only shows what it would do. Locked worktrees are never
/// touched; dirty or unpushed ones are skipped unless --force. With no
/// criterion given, --merged and --missing are used.
#[derive(clap::Args)]
pub struct Args {
    /// Worktrees whose branch is integrated into the default branch.
    #[arg(long)]
    merged: bool,

    /// Worktrees whose directory is gone.
    #[arg(long)]
    missing: bool,

    /// Worktrees whose thread was not updated for DURATION (e.g. 14d, 12h, 2w).
    #[arg(long, value_name = "DURATION")]
    older_than: Option<String>,

    /// Only show what would be removed (the default without --yes).
    #[arg(long, conflicts_with = "yes")]
    dry_run: bool,

    /// Remove them.
    #[arg(long)]
    yes: bool,

    /// Also remove dirty or unpushed worktrees (and their unmerged branches).
    #[arg(long)]
    force: bool,

    /// End the processes still at work in a worktree (SIGTERM, then
    /// SIGKILL) instead of skipping it.
    #[arg(long)]
    reap: bool,

    #[command(flatten)]
    deletion: super::Deletion,

    /// Print the plan (or what was done) as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let older_than = match &args.older_than {
        Some(s) => Some(gc::parse_duration(s).map_err(UsageError)?),
        None => None,
    };
    let mut criteria = Criteria {
        merged: args.merged,
        missing: args.missing,
        older_than,
    };
    if !criteria.merged && !criteria.missing && criteria.older_than.is_none() {
        criteria.merged = true;
        criteria.missing = true;
    }
    let project = Project::discover(cwd)?;
    if project.git.is_none() {
        anyhow::bail!("{} is not in a git repository", cwd.display());
    }
    let repo = Repo::new(&project.main_root)?;
    let apply = args.yes && !args.dry_run;
    // What killed grove processes left, recorded in their intent journals:
    // finished or undone first, so the rest sees a repository git can read.
    let leftovers = Leftovers::scan()?;
    let findings = leftovers.findings();
    let mut errors: Vec<String> = Vec::new();
    if apply {
        errors.extend(leftovers.apply().iter().map(ToString::to_string));
    }
    let found = discovery::discover(
        &project,
        Options {
            all_repos: false,
            statuses: true,
            details: false,
        },
    )?;
    for e in &found.errors {
        out.warn(&format!("skipped a thread: {e}"));
    }
    let mut picked = gc::select(&found.threads, criteria, jiff::Timestamp::now());
    let mut temps = 0;
    if apply {
        match remove_stale_temps(&project, &repo, &found.threads) {
            Ok(n) => temps = n,
            Err(e) => errors.push(e.to_string()),
        }
    }

    if apply {
        remove_picked(&repo, &found.threads, &mut picked, &args);
    } else if !args.force {
        mark_refusals(&repo, &found.threads, &mut picked)?;
    }

    let candidates: Vec<_> = picked.into_iter().map(|(_, c)| c).collect();
    for e in &errors {
        out.warn(e);
    }
    if args.json {
        out.json(&json!({
            "applied": apply,
            "worktrees": candidates,
            "leftovers": findings,
            "tempFilesRemoved": temps,
            "errors": errors,
        }))?;
        return Ok(exit_code(&errors));
    }
    let s = out.style();
    for f in &findings {
        out.line(&format!(
            "{}  {}  {}: {}",
            s.text(f.op),
            s.text(&f.path.display().to_string()),
            if apply { "done" } else { "would" },
            s.text(&f.action)
        ))?;
    }
    if temps > 0 {
        out.status(&format!(
            "grove: removed {temps} temp file(s) of interrupted writes"
        ));
    }
    if candidates.is_empty() {
        if findings.is_empty() {
            out.status("grove: nothing to clean up");
        } else if !apply {
            out.status("grove: dry run; pass --yes to clean up what interrupted runs left");
        }
        return Ok(exit_code(&errors));
    }
    print_plan(out, &candidates, apply)?;
    if !apply {
        out.status("grove: dry run; pass --yes to remove");
    }
    Ok(exit_code(&errors))
}

/// Removes the picked worktrees gc does not skip (a progress bar on a
/// terminal when there are several); a removal refused becomes its skip.
fn remove_picked(
    repo: &Repo,
    threads: &[discovery::Found],
    picked: &mut [(usize, gc::Candidate)],
    args: &Args,
) {
    let todo = picked.iter().filter(|(_, c)| c.skip.is_none()).count() as u64;
    let bar =
        (todo > 1 && std::io::stderr().is_terminal()).then(|| indicatif::ProgressBar::new(todo));
    let options = RemoveOptions {
        force: args.force,
        keep_branch: false,
        purge: false,
        reap: args.reap,
        background: args.deletion.background(),
    };
    for (i, candidate) in picked.iter_mut() {
        if candidate.skip.is_some() {
            continue;
        }
        if let Some(bar) = &bar {
            bar.set_message(candidate.title.clone());
        }
        if let Err(e) = worktree::remove(repo, &threads[*i], options) {
            candidate.skip = Some(e.to_string());
        }
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// A dry run shows now what removal would refuse.
fn mark_refusals(
    repo: &Repo,
    threads: &[discovery::Found],
    picked: &mut [(usize, gc::Candidate)],
) -> anyhow::Result<()> {
    for (i, candidate) in picked.iter_mut() {
        if candidate.skip.is_none() {
            let reasons = worktree::unsafe_reasons(repo, &threads[*i])?;
            if !reasons.is_empty() {
                candidate.skip = Some(format!("{}; --force removes it anyway", reasons.join("; ")));
            }
        }
    }
    Ok(())
}

/// One line per worktree: what and why first; the path, longest, last.
fn print_plan(out: &Output, candidates: &[gc::Candidate], apply: bool) -> anyhow::Result<()> {
    let s = out.style();
    let ids: Vec<&str> = candidates.iter().map(|c| c.thread_id.as_str()).collect();
    let ids = super::table::unique_prefixes(&ids);
    let width = super::table::width();
    for (c, id) in candidates.iter().zip(&ids) {
        let action = match (&c.skip, apply) {
            (Some(why), _) => format!("skip ({why})"),
            (None, true) => "removed".to_string(),
            (None, false) => "would remove".to_string(),
        };
        let line = format!(
            "{}  {}  [{}]  {}  {}",
            s.text(id),
            s.text(&action),
            c.reasons.join(", "),
            s.text(&c.title),
            s.text(c.worktree_path.as_deref().unwrap_or("-")),
        );
        out.line(&match width {
            Some(w) => super::table::fit(&line, w),
            None => line,
        })?;
    }
    Ok(())
}

fn exit_code(errors: &[String]) -> u8 {
    if errors.is_empty() {
        super::exit::SUCCESS
    } else {
        super::exit::ERROR
    }
}

/// Removes the temp files killed writers left — in the repository's
/// `info/`, its cache, and every thread directory found — each under the
/// lock its writers hold, so a write in progress is never taken for one.
fn remove_stale_temps(
    project: &Project,
    repo: &Repo,
    threads: &[discovery::Found],
) -> anyhow::Result<usize> {
    let mut removed = 0;
    let exclude = grove::worktree::exclude::exclude_file(&repo.git, &project.main_root)?;
    removed += grove::worktree::exclude::remove_stale_temps(&exclude)?.len();
    removed += grove::cache::remove_stale_temps(&project.main_root)?.len();
    for f in threads.iter().filter(|f| !f.from_cache) {
        if let Ok(lock) = f.thread.lock() {
            removed += grove::fsutil::remove_stale_temps_tree(f.thread.dir())?.len();
            drop(lock);
        }
    }
    // `.agent/`, `threads/` and `.grove/` only get small files written
    // once (their `.gitignore`s): a temp file there older than a second
    // belongs to a writer that is gone.
    let mut roots = vec![project.main_root.clone()];
    roots.extend(
        repo.worktrees()
            .unwrap_or_default()
            .into_iter()
            .map(|w| w.path),
    );
    // grove's own small files (the port registry, the verdicts of
    // integrated branches, the branches grove made, the capture ledger):
    // written whole in a moment.
    if let Ok(data) = grove::home::data_dir() {
        let mut dirs = vec![
            data.clone(),
            data.join("integration"),
            data.join("hook-installs"),
        ];
        dirs.extend(grove::worktree::ownership::dir(&project.main_root));
        dirs.extend(grove::capture::ledger::dirs(&project.main_root));
        for dir in dirs {
            removed +=
                grove::fsutil::remove_temps_older_than(&dir, std::time::Duration::from_secs(1))?
                    .len();
        }
    }
    for root in roots {
        let store = grove::store::Store::for_project(&root);
        for dir in [
            store.agent_dir().to_path_buf(),
            store.threads_dir(),
            store.agent_dir().join(grove::store::PRIVATE_DIR),
        ] {
            removed +=
                grove::fsutil::remove_temps_older_than(&dir, std::time::Duration::from_secs(1))?
                    .len();
        }
    }
    Ok(removed)
}
