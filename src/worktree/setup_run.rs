//! The setup commands of a task, as `grove new` and `grove setup` run them:
//! the project's `postSetupCommands` (behind the trust gate), then the
//! user's own (`config.toml` `[hooks]`, trusted); the foreground ones one
//! after another, then the background ones handed over
//! ([`super::background`]).

use std::path::Path;

use crate::atsf::PostSetupCommand;
use crate::setup::interrupt::{Watch, signal_name};
use crate::setup::{CommandEnv, HookKind, HookOutcome, HookReporter, HookStatus, TrustStore};
use crate::store::Thread;

/// What to run, and where.
pub(crate) struct SetupCommands<'a> {
    /// The project's `postSetupCommands`.
    pub project: Vec<PostSetupCommand>,
    /// Whether the project's list is trusted.
    pub trusted: bool,
    /// `false`: `--no-hooks`, everything skipped.
    pub enabled: bool,
    pub main_root: &'a Path,
    pub env: CommandEnv,
    pub thread: &'a Thread,
}

/// What the commands did.
pub(crate) struct Ran {
    pub outcomes: Vec<HookOutcome>,
    /// The signal that stopped them, if one did.
    pub interrupted: Option<i32>,
}

/// One command to run: its log's name, and whether trust gates it.
struct Entry {
    key: String,
    spec: PostSetupCommand,
    gated: bool,
}

/// The user's own commands (`config.toml` `[hooks]`): applied in every
/// repository, after the project's.
pub(crate) fn user_commands() -> Vec<PostSetupCommand> {
    let Ok(user) = crate::userconfig::get() else {
        return Vec::new();
    };
    let fore = user.hooks.post_setup.iter().map(|c| (c, false));
    let back = user.hooks.post_setup_background.iter().map(|c| (c, true));
    fore.chain(back)
        .map(|(c, background)| PostSetupCommand::plain(c, background))
        .collect()
}

impl SetupCommands<'_> {
    /// Every entry: foreground ones first, in order, then background ones.
    fn entries(&self) -> Vec<Entry> {
        let project = self.project.iter().enumerate().map(|(i, c)| Entry {
            key: format!("post-setup-{}", i + 1),
            spec: c.clone(),
            gated: true,
        });
        let user = user_commands().into_iter().enumerate().map(|(i, c)| Entry {
            key: format!("user-setup-{}", i + 1),
            spec: c,
            gated: false,
        });
        let (back, mut all): (Vec<Entry>, Vec<Entry>) =
            project.chain(user).partition(|e| e.spec.is_background());
        all.extend(back);
        all
    }

    /// Runs them, reporting each outcome; a failure (without
    /// `continueOnError`) or a signal skips the rest.
    pub(crate) fn run(&self, reporter: &dyn HookReporter) -> Ran {
        let entries = self.entries();
        let mut outcomes = Vec::new();
        if entries.is_empty() {
            return Ran {
                outcomes,
                interrupted: None,
            };
        }
        let logs = self.thread.dir().join("logs");
        let watch = Watch::start();
        let mut stop_reason: Option<String> = None;
        for entry in &entries {
            if let Some(signal) = watch.received().filter(|_| stop_reason.is_none()) {
                stop_reason = Some(format!("grove was interrupted ({})", signal_name(signal)));
            }
            let outcome = match self.why_not(entry, stop_reason.as_deref()) {
                Some(skipped) => skipped,
                None => self.run_one(entry, &logs, reporter, &watch),
            };
            if outcome.is_failure() && !entry.spec.continue_on_error.unwrap_or(false) {
                stop_reason.get_or_insert(format!("an earlier command ({}) failed", outcome.label));
            }
            reporter.finished(&outcome);
            outcomes.push(outcome);
        }
        Ran {
            outcomes,
            interrupted: watch.received(),
        }
    }

    /// Why `entry` is not run, as its outcome.
    fn why_not(&self, entry: &Entry, stop_reason: Option<&str>) -> Option<HookOutcome> {
        let label = entry
            .spec
            .label
            .clone()
            .unwrap_or_else(|| entry.spec.command.clone());
        let why = if !self.enabled {
            crate::error::Hinted::new("{no-hooks}").to_string()
        } else if entry.gated && !self.trusted {
            format!(
                "not trusted: review .agent/config.json, then run `grove trust` in {} or pass {}",
                self.main_root.display(),
                crate::error::Hinted::new("{trust}")
            )
        } else {
            stop_reason?.to_string()
        };
        Some(HookOutcome::skipped(HookKind::Command, label, why))
    }

    /// Runs one command (or hands it over), its output into its log.
    fn run_one(
        &self,
        entry: &Entry,
        logs: &Path,
        reporter: &dyn HookReporter,
        watch: &Watch,
    ) -> HookOutcome {
        if let Err(e) = crate::fsutil::real_dir(self.thread.dir(), logs) {
            let label = entry
                .spec
                .label
                .clone()
                .unwrap_or(entry.spec.command.clone());
            return HookOutcome {
                reason: Some(format!("cannot create its log directory: {e}")),
                status: HookStatus::Failed,
                ..HookOutcome::skipped(HookKind::Command, label, "")
            };
        }
        let log = logs.join(format!("{}.log", entry.key));
        // Without a grove binary to wait for it (a library user), a
        // background command runs in the foreground.
        if entry.spec.is_background() && super::background::can_hand_over() {
            return super::background::start(self.thread, &entry.key, &entry.spec, &self.env, &log);
        }
        crate::setup::run_command(&entry.spec, &self.env, &log, reporter, Some(watch))
    }
}

/// Whether the setup commands may run: already trusted, trusted now by
/// `--trust`, or trusted by the user's answer, which covers the teardown too
/// (each list by its own hash: `rm` runs the teardown). Declined, the setup
/// still runs when its own list was trusted before. A trust store that
/// cannot be read means "not trusted", with a problem recorded.
pub(crate) fn decide_trust(
    root: &Path,
    asked: &crate::setup::TrustAsked,
    trust_flag: bool,
    ask: &dyn Fn(&crate::setup::TrustAsked) -> bool,
    problems: &mut Vec<String>,
) -> bool {
    let store = match TrustStore::open() {
        Ok(s) => s,
        Err(e) => {
            problems.push(e.to_string());
            return false;
        }
    };
    let setup = (!asked.setup.is_empty()).then(|| crate::setup::commands_hash(asked.setup));
    let teardown =
        (!asked.teardown.is_empty()).then(|| crate::setup::teardown_hash(asked.teardown));
    let untrusted: Vec<&String> = [&setup, &teardown]
        .into_iter()
        .flatten()
        .filter(|hash| match store.is_trusted(root, hash) {
            Ok(trusted) => !trusted,
            Err(e) => {
                problems.push(format!(
                    "{e}; the commands count as not trusted (`grove trust` rewrites the trust store)"
                ));
                true
            }
        })
        .collect();
    if untrusted.is_empty() {
        return true;
    }
    let setup_trusted = setup.as_ref().is_none_or(|h| !untrusted.contains(&h));
    if !(trust_flag || ask(asked)) {
        return setup_trusted;
    }
    for hash in untrusted {
        match store.trust(root, hash) {
            Ok(Some(saved)) => problems.push(format!(
                "the unreadable trust store was kept as {}",
                saved.display()
            )),
            Ok(None) => {}
            Err(e) => problems.push(format!("the commands run, but trust was not saved: {e}")),
        }
    }
    true
}

/// What `grove setup` did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rerun {
    pub thread_id: String,
    pub worktree_path: std::path::PathBuf,
    pub hooks: Vec<HookOutcome>,
    /// Background commands of an earlier run still running, killed first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub killed: Vec<crate::atsf::grove::BackgroundRun>,
    pub problems: Vec<String>,
    #[serde(skip)]
    pub interrupted: Option<i32>,
}

/// Runs the setup commands of `found`'s task again in its worktree (the
/// project's, trust-gated as `grove new` does — `trust_flag` trusts them —
/// then the user's), and records the outcomes in place of the commands'
/// earlier ones.
pub fn rerun(
    project: &crate::project::Project,
    found: &crate::discovery::Found,
    trust_flag: bool,
    ask: &dyn Fn(&crate::setup::TrustAsked) -> bool,
    reporter: &dyn HookReporter,
) -> crate::error::Result<Rerun> {
    let worktree = found.live_worktree().ok_or_else(|| {
        crate::error::Error::Refused(format!(
            "thread {} has no worktree to set up",
            found.thread.id()
        ))
    })?;
    let hooks = project
        .main_store()
        .config()?
        .and_then(|c| c.worktree_hooks);
    let project_commands = hooks
        .as_ref()
        .and_then(|h| h.post_setup_commands.clone())
        .unwrap_or_default();
    let teardown = hooks
        .and_then(|h| h.pre_remove_commands)
        .unwrap_or_default();
    let killed = super::background::kill_running(&found.thread, "started again by grove setup");
    let mut problems = Vec::new();
    let asked = crate::setup::TrustAsked {
        setup: &project_commands,
        teardown: &teardown,
    };
    let trusted = !project_commands.is_empty()
        && decide_trust(&project.main_root, &asked, trust_flag, ask, &mut problems);
    let ran = SetupCommands {
        project: project_commands,
        trusted,
        enabled: true,
        main_root: &project.main_root,
        env: CommandEnv {
            worktree: worktree.to_path_buf(),
            repo_root: project.main_root.clone(),
            thread_id: found.thread.id().to_string(),
            branch: found.branch.clone().unwrap_or_default(),
            ports: found.meta.grove().ports(),
        },
        thread: &found.thread,
    }
    .run(reporter);
    if let Err(e) = record_commands(&found.thread, &ran.outcomes) {
        problems.push(format!("the outcomes were not recorded: {e}"));
    }
    Ok(Rerun {
        thread_id: found.thread.id().to_string(),
        worktree_path: worktree.to_path_buf(),
        hooks: ran.outcomes,
        killed,
        problems,
        interrupted: ran.interrupted,
    })
}

/// The recorded hook outcomes with the commands' replaced by `outcomes`
/// (links, copies and ports stay as `grove new` recorded them).
fn record_commands(thread: &Thread, outcomes: &[HookOutcome]) -> crate::error::Result<()> {
    thread
        .update_meta(|m| {
            let mut hooks: Vec<serde_json::Value> = m
                .grove()
                .fields()
                .get("hooks")
                .and_then(serde_json::Value::as_array)
                .cloned()
                .unwrap_or_default();
            hooks.retain(|h| h.get("kind").and_then(serde_json::Value::as_str) != Some("command"));
            hooks.extend(outcomes.iter().filter_map(|o| serde_json::to_value(o).ok()));
            m.grove_mut().set_hooks(serde_json::Value::Array(hooks));
        })
        .map(drop)
}
