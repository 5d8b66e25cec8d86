//! Teardown, symmetric with setup: `worktreeHooks.preRemoveCommands` run in
//! the worktree before `rm`, `gc` or `delete` removes it — trust-gated by
//! their own hash, with their timeouts, the process-group kill, the
//! platform filter and a log each in the thread's `logs/`. A failure stops
//! the removal unless the command says `continueOnError` or the removal is
//! forced; every outcome is recorded in the thread (and so in its cache).

use std::path::Path;

use serde_json::Value;

use super::Repo;
use crate::atsf::PostSetupCommand;
use crate::discovery::Found;
use crate::error::{Error, Result};
use crate::setup::interrupt::Watch;
use crate::setup::{CommandEnv, HookKind, HookOutcome, HookReporter, TrustStore};
use crate::store::Store;

/// Runs the teardown `commands` (see [`commands`]) in `found`'s worktree `wt`. `Err` when a command
/// failed and the removal must stop (not with `force`).
pub fn run(
    repo: &Repo,
    found: &Found,
    wt: &Path,
    commands: &[PostSetupCommand],
    force: bool,
    reporter: &dyn HookReporter,
) -> Result<Vec<HookOutcome>> {
    if commands.is_empty() {
        return Ok(Vec::new());
    }
    let outcomes = if wt.is_dir() {
        run_commands(repo, found, wt, commands, reporter)
    } else {
        commands
            .iter()
            .map(|c| skipped(c, "the worktree directory is gone".into()))
            .collect()
    };
    record(found, &outcomes);
    let stop = outcomes
        .iter()
        .zip(commands)
        .find(|(o, c)| o.is_failure() && !c.continue_on_error.unwrap_or(false));
    if let (Some((failed, _)), false) = (stop, force) {
        return Err(Error::hinted(format!(
            "not removing {}: its teardown command {:?} failed ({}){}; fix it, or pass {{force}} to remove anyway",
            wt.display(),
            failed.label,
            failed.reason.as_deref().unwrap_or("failed"),
            failed
                .log_file
                .as_deref()
                .map(|l| format!(", log {l}"))
                .unwrap_or_default()
        )));
    }
    Ok(outcomes)
}

/// The main repository's `preRemoveCommands`.
pub fn commands(repo: &Repo) -> Vec<PostSetupCommand> {
    Store::for_project(&repo.main_root)
        .config()
        .ok()
        .flatten()
        .and_then(|c| c.worktree_hooks?.pre_remove_commands)
        .unwrap_or_default()
}

fn skipped(c: &PostSetupCommand, why: String) -> HookOutcome {
    HookOutcome::skipped(
        HookKind::Command,
        c.label.clone().unwrap_or_else(|| c.command.clone()),
        why,
    )
}

fn run_commands(
    repo: &Repo,
    found: &Found,
    wt: &Path,
    commands: &[PostSetupCommand],
    reporter: &dyn HookReporter,
) -> Vec<HookOutcome> {
    let hash = crate::setup::teardown_hash(commands);
    let trusted = TrustStore::open()
        .and_then(|s| s.is_trusted(&repo.main_root, &hash))
        .unwrap_or(false);
    if !trusted {
        let why = format!(
            "not trusted: review preRemoveCommands in .agent/config.json, then run `grove trust` in {}",
            repo.main_root.display()
        );
        return commands.iter().map(|c| skipped(c, why.clone())).collect();
    }
    let env = CommandEnv {
        worktree: wt.to_path_buf(),
        repo_root: repo.main_root.clone(),
        thread_id: found.meta.thread_id.clone(),
        branch: found.branch.clone().unwrap_or_default(),
        ports: crate::ports::of(&found.meta),
    };
    let logs = found.thread.dir().join("logs");
    let watch = Watch::start();
    let mut stop: Option<String> = None;
    let mut outcomes = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        if let Some(signal) = watch.received() {
            stop.get_or_insert_with(|| {
                format!(
                    "grove was interrupted ({})",
                    crate::setup::interrupt::signal_name(signal)
                )
            });
        }
        let outcome = match (&stop, crate::fsutil::real_dir(found.thread.dir(), &logs)) {
            (Some(why), _) => skipped(c, why.clone()),
            (None, Err(e)) => skipped(c, format!("cannot create its log directory: {e}")),
            (None, Ok(())) => {
                let log = logs.join(format!("pre-remove-{}.log", i + 1));
                let o = crate::setup::run_command(c, &env, &log, reporter, Some(&watch));
                if o.is_failure() && !c.continue_on_error.unwrap_or(false) {
                    stop = Some(format!("an earlier command ({}) failed", o.label));
                }
                o
            }
        };
        reporter.finished(&outcome);
        outcomes.push(outcome);
    }
    outcomes
}

/// The outcomes into `metadata.grove.teardown` of the thread (best effort:
/// the removal does not depend on it).
fn record(found: &Found, outcomes: &[HookOutcome]) {
    let value = serde_json::to_value(outcomes).unwrap_or(Value::Null);
    let _ = found
        .thread
        .update_meta(|m| m.grove_mut().set_teardown(value.clone()));
}
