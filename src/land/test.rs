//! The checks run on what will land, in the task's worktree, before the
//! target moves: `--test CMD`, else the project's
//! `worktreeHooks.preMergeCommands` — trusted on their own hash, as
//! `preRemoveCommands` are, with the same timeouts, process-group kill,
//! platform filter and a log each in the thread's `logs/`. An untrusted
//! list stops the merge rather than being skipped: skipping would land
//! what the project asks to check unchecked.

use sha2::{Digest, Sha256};

use super::LandError;
use super::plan::Plan;
use crate::atsf::PostSetupCommand;
use crate::discovery::Found;
use crate::setup::interrupt::Watch;
use crate::setup::{self, CommandEnv, HookOutcome, HookReporter, TrustStore};
use crate::store::Store;
use crate::worktree::Repo;

/// How long `--test CMD` may run: a test suite is not a setup step.
const TEST_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// The hash `preMergeCommands` are trusted by (`grove trust` records it):
/// trusting the setup or teardown commands does not trust these.
pub fn merge_hash(commands: &[PostSetupCommand]) -> String {
    let bytes = serde_json::to_vec(&serde_json::json!({ "preMergeCommands": commands }))
        .unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Runs `test` (or the trusted `preMergeCommands`) in the task's worktree;
/// the first failure stops the merge.
pub(super) fn run(
    repo: &Repo,
    found: &Found,
    plan: &Plan,
    test: Option<&str>,
    reporter: &dyn HookReporter,
) -> Result<Vec<HookOutcome>, LandError> {
    let commands = match test {
        Some(command) => vec![given(command)],
        None => trusted_config(repo)?,
    };
    if commands.is_empty() {
        return Ok(Vec::new());
    }
    let logs = found.thread.dir().join("logs");
    crate::fsutil::real_dir(found.thread.dir(), &logs)?;
    let env = CommandEnv {
        worktree: plan.wt.clone(),
        repo_root: repo.main_root.clone(),
        thread_id: plan.thread_id.clone(),
        branch: plan.branch.clone(),
        ports: crate::ports::of(&found.meta),
    };
    let watch = Watch::start();
    let mut outcomes = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        let log = logs.join(format!("pre-merge-{}.log", i + 1));
        let outcome = setup::run_command(c, &env, &log, reporter, Some(&watch));
        reporter.finished(&outcome);
        if outcome.is_failure() && !c.continue_on_error.unwrap_or(false) {
            return Err(LandError::TestFailed {
                target: plan.target.clone(),
                outcome: Box::new(outcome),
                signal: watch.received(),
            });
        }
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// `--test CMD` as a command of the same shape as the configured ones.
fn given(command: &str) -> PostSetupCommand {
    PostSetupCommand {
        command: command.to_string(),
        label: None,
        timeout: Some(TEST_TIMEOUT_MS),
        continue_on_error: None,
        background: None,
        platforms: None,
        extra: Default::default(),
    }
}

/// The main checkout's `preMergeCommands`, refused unless trusted.
fn trusted_config(repo: &Repo) -> Result<Vec<PostSetupCommand>, LandError> {
    let commands = Store::for_project(&repo.main_root)
        .config()?
        .and_then(|c| c.worktree_hooks?.pre_merge_commands)
        .unwrap_or_default();
    if commands.is_empty() {
        return Ok(commands);
    }
    let trusted = TrustStore::open()
        .and_then(|s| s.is_trusted(&repo.main_root, &merge_hash(&commands)))
        .unwrap_or(false);
    if !trusted {
        return Err(LandError::Untrusted {
            repo: repo.main_root.clone(),
            commands: commands.iter().map(|c| c.command.clone()).collect(),
        });
    }
    Ok(commands)
}
