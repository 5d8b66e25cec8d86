//! Step 4, set up, once the thread exists: submodules, links, copies,
//! ports and env, commands, the first messages. Nothing here fails the
//! task; each outcome is reported and problems are collected.

use super::*;

/// Step 4, once the thread exists: hooks, first messages, the record of it
/// all, the cache. Nothing here fails the task; problems are collected.
pub(super) struct Finish<'a> {
    pub(super) project: &'a Project,
    pub(super) repo: &'a Repo,
    pub(super) task: &'a NewTask,
    pub(super) plan: &'a Plan,
    pub(super) dir: PathBuf,
    pub(super) thread: Thread,
    pub(super) excludes: Vec<String>,
    pub(super) outcomes: Vec<HookOutcome>,
    pub(super) problems: Vec<String>,
    pub(super) interrupted: Option<i32>,
    /// The task's ports, once given.
    pub(super) ports: Vec<u16>,
}

impl<'a> Finish<'a> {
    pub(super) fn new(
        project: &'a Project,
        repo: &'a Repo,
        task: &'a NewTask,
        plan: &'a Plan,
        dir: &Path,
        thread: Thread,
        excludes: Vec<String>,
    ) -> Self {
        Finish {
            project,
            repo,
            task,
            plan,
            dir: dir.to_path_buf(),
            thread,
            excludes,
            outcomes: Vec::new(),
            problems: Vec::new(),
            interrupted: None,
            ports: Vec::new(),
        }
    }

    /// Every setup step, in order.
    pub(super) fn run(
        &mut self,
        hooks: &atsf::WorktreeHooks,
        reporter: &dyn HookReporter,
        ask_trust: &dyn Fn(&crate::setup::TrustAsked) -> bool,
        maker: &dyn MakeThread,
    ) {
        self.submodules(reporter);
        self.symlinks(hooks, reporter);
        self.copies(hooks, reporter);
        self.ports_and_env(hooks, reporter);
        self.commands(hooks, reporter, ask_trust);
        self.prompts(hooks, reporter, maker);
    }

    pub(super) fn report(&mut self, reporter: &dyn HookReporter, outcome: HookOutcome) {
        reporter.finished(&outcome);
        self.outcomes.push(outcome);
    }

    fn symlinks(&mut self, cfg: &atsf::WorktreeHooks, reporter: &dyn HookReporter) {
        let mut added = Vec::new();
        for link in cfg.symlinks.iter().flatten() {
            let target = link.target.as_deref().unwrap_or(&link.source);
            let outcome = if self.task.hooks {
                crate::setup::apply_symlink(&self.project.main_root, &self.dir, link)
            } else {
                HookOutcome::skipped(HookKind::Symlink, format!("link {target}"), no_hooks())
            };
            if outcome.status == HookStatus::Ok
                && let Ok(rel) = crate::setup::checked_hook_path(target)
            {
                match exclude::pattern_for(&rel) {
                    Ok(p) => added.push(p),
                    Err(e) => self.problems.push(e.to_string()),
                }
            }
            self.report(reporter, outcome);
        }
        self.exclude(added, "symlinks");
    }

    /// `copies`, then what `.worktreeinclude` names: cloned into the
    /// worktree, never over an existing file.
    fn copies(&mut self, cfg: &atsf::WorktreeHooks, reporter: &dyn HookReporter) {
        let mut added = Vec::new();
        let included = match worktree_include(self.repo) {
            Ok(list) => list,
            Err(e) => {
                self.problems
                    .push(format!(".worktreeinclude was not applied: {e}"));
                Vec::new()
            }
        };
        let entries = cfg
            .copies
            .iter()
            .flatten()
            .cloned()
            .map(|c| (c, true))
            .chain(included.into_iter().map(|source| {
                let hook = atsf::SymlinkHook {
                    source,
                    target: None,
                    extra: Default::default(),
                };
                (hook, false)
            }));
        for (copy, configured) in entries {
            let target = copy.target.clone().unwrap_or_else(|| copy.source.clone());
            let outcome = if self.task.hooks {
                crate::setup::apply_copy(&self.project.main_root, &self.dir, &copy)
            } else {
                HookOutcome::skipped(HookKind::Copy, format!("copy {target}"), no_hooks())
            };
            // What .worktreeinclude names is ignored already.
            if configured
                && outcome.status == HookStatus::Ok
                && let Ok(rel) = crate::setup::checked_hook_path(&target)
            {
                match exclude::pattern_for(&rel) {
                    Ok(p) => added.push(p),
                    Err(e) => self.problems.push(e.to_string()),
                }
            }
            self.report(reporter, outcome);
        }
        self.exclude(added, "copies");
    }

    /// The submodules the main checkout has initialised, initialised here
    /// too (`git submodule update --init --recursive`), unless asked not to.
    fn submodules(&mut self, reporter: &dyn HookReporter) {
        if self.plan.no_submodules || !main_has_submodules(self.repo) {
            return;
        }
        let label = "git submodule update --init --recursive";
        reporter.started(label);
        let start = std::time::Instant::now();
        let env: &[(&str, &str)] = if self.plan.no_lfs {
            &[("GIT_LFS_SKIP_SMUDGE", "1")]
        } else {
            &[]
        };
        let ran = self.repo.git.output_with_env(
            &self.dir,
            &["submodule", "update", "--init", "--recursive", "--quiet"],
            env,
        );
        let failed = match ran {
            Ok(out) if out.success => None,
            Ok(out) => Some(out.stderr),
            Err(e) => Some(e.to_string()),
        };
        let outcome = HookOutcome {
            kind: HookKind::Command,
            label: label.to_string(),
            status: if failed.is_some() {
                HookStatus::Failed
            } else {
                HookStatus::Ok
            },
            exit_code: None,
            duration_ms: start.elapsed().as_millis() as u64,
            log_file: None,
            reason: failed.map(|e| {
                crate::error::Hinted::new(format!("{e} (`{{no-submodules}}` skips this)"))
                    .to_string()
            }),
        };
        self.report(reporter, outcome);
    }

    /// The task's ports, then its env file (with them filled in).
    fn ports_and_env(&mut self, cfg: &atsf::WorktreeHooks, reporter: &dyn HookReporter) {
        if !self.task.hooks {
            return;
        }
        if let Some((outcome, ports)) =
            crate::worktree::taskenv::ports(cfg, &self.thread, &self.dir)
        {
            self.ports = ports;
            self.report(reporter, outcome);
        }
        let values = crate::worktree::taskenv::Placeholders {
            ports: self.ports.clone(),
            branch: self.plan.branch.clone(),
            thread_id: self.plan.id.to_string(),
            worktree: self.dir.to_string_lossy().into_owned(),
        };
        if let Some((outcome, written)) =
            crate::worktree::taskenv::env_file(cfg, &values, &self.dir)
        {
            self.report(reporter, outcome);
            if let Some(rel) = written {
                match exclude::pattern_for(&rel) {
                    Ok(p) => self.exclude(vec![p], "env file"),
                    Err(e) => self.problems.push(e.to_string()),
                }
            }
        }
    }

    /// Keeps `added` (paths the hooks made) out of `git status`.
    fn exclude(&mut self, added: Vec<String>, what: &str) {
        if added.is_empty() {
            return;
        }
        let result = exclude::exclude_file(&self.repo.git, &self.repo.main_root)
            .and_then(|file| exclude::add(&file, &added));
        match result {
            Ok(()) => self.excludes.extend(added),
            Err(e) => self.problems.push(format!(
                "the hook {what} could not be kept out of git status: {e}"
            )),
        }
    }

    /// The project's commands (trust-gated), then the user's own.
    fn commands(
        &mut self,
        cfg: &atsf::WorktreeHooks,
        reporter: &dyn HookReporter,
        ask_trust: &dyn Fn(&crate::setup::TrustAsked) -> bool,
    ) {
        let project = cfg.post_setup_commands.clone().unwrap_or_default();
        let teardown = cfg.pre_remove_commands.clone().unwrap_or_default();
        // The teardown is trusted here too: the task's `rm` runs it.
        let asked = crate::setup::TrustAsked {
            setup: &project,
            teardown: &teardown,
        };
        let trusted = self.task.hooks
            && !(project.is_empty() && teardown.is_empty())
            && super::super::setup_run::decide_trust(
                &self.project.main_root,
                &asked,
                self.task.trust,
                ask_trust,
                &mut self.problems,
            );
        let ran = super::super::setup_run::SetupCommands {
            project,
            trusted,
            enabled: self.task.hooks,
            main_root: &self.project.main_root,
            env: CommandEnv {
                worktree: self.dir.clone(),
                repo_root: self.project.main_root.clone(),
                thread_id: self.plan.id.to_string(),
                branch: self.plan.branch.clone(),
                ports: self.ports.clone(),
            },
            thread: &self.thread,
        }
        .run(reporter);
        self.outcomes.extend(ran.outcomes);
        self.interrupted = ran.interrupted;
    }

    /// `initialPrompt` then `--prompt`, as the thread's first user messages.
    fn prompts(
        &mut self,
        cfg: &atsf::WorktreeHooks,
        reporter: &dyn HookReporter,
        maker: &dyn MakeThread,
    ) {
        let mut prompts = Vec::new();
        if let Some(initial) = &cfg.initial_prompt {
            let outcome = if !maker.initial_prompt() {
                HookOutcome::skipped(
                    HookKind::InitialPrompt,
                    "initial prompt",
                    "the thread continues an existing conversation",
                )
            } else if self.task.hooks {
                prompts.push(initial.clone());
                HookOutcome {
                    kind: HookKind::InitialPrompt,
                    label: "initial prompt".into(),
                    status: HookStatus::Ok,
                    exit_code: None,
                    duration_ms: 0,
                    log_file: None,
                    reason: None,
                }
            } else {
                HookOutcome::skipped(HookKind::InitialPrompt, "initial prompt", no_hooks())
            };
            self.report(reporter, outcome);
        }
        prompts.extend(self.task.prompt.clone());
        let messages: Vec<atsf::Message> = prompts
            .into_iter()
            .map(|p| atsf::Message::new(atsf::Role::User, vec![atsf::ContentBlock::text(p)]))
            .collect();
        if messages.is_empty() {
            return;
        }
        let appended = self
            .thread
            .lock()
            .and_then(|lock| lock.append_all(messages, crate::store::AppendOptions::default()));
        match appended {
            Ok(done) => self.problems.extend(
                done.into_iter()
                    .filter_map(|a| a.meta_error)
                    .map(|e| e.to_string()),
            ),
            Err(e) => self
                .problems
                .push(format!("the first messages were not written: {e}")),
        }
    }
}

/// Whether the main checkout has a submodule initialised.
fn main_has_submodules(repo: &Repo) -> bool {
    if !repo.main_root.join(".gitmodules").is_file() {
        return false;
    }
    repo.git
        .output(&repo.main_root, &["submodule", "status"])
        .is_ok_and(|out| {
            out.success
                && out
                    .stdout
                    .lines()
                    .any(|l| !l.is_empty() && !l.starts_with('-'))
        })
}

/// At most this many `.worktreeinclude` entries are copied.
const WORKTREE_INCLUDE_LIMIT: usize = 1000;

/// The files and directories Claude Code's `.worktreeinclude` (gitignore
/// syntax, in the main worktree) names that git ignores: what a new
/// worktree lacks and should have (`.env`, `node_modules/`).
fn worktree_include(repo: &Repo) -> Result<Vec<String>> {
    let file = repo.main_root.join(".worktreeinclude");
    if !file.is_file() {
        return Ok(Vec::new());
    }
    let from = format!("--exclude-from={}", file.display());
    let listed = repo.git.bytes(
        &repo.main_root,
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--directory",
            "--no-empty-directory",
            &from,
        ],
        None,
        true,
    )?;
    let mut out = Vec::new();
    for entry in listed.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Ok(entry) = std::str::from_utf8(entry) else {
            continue;
        };
        let entry = entry.trim_end_matches('/');
        // Never threads: each worktree has its own.
        if entry == atsf::AGENT_DIR || crate::worktree::is_grove_path(entry.as_bytes()) {
            continue;
        }
        // Only what git ignores: a tracked or merely untracked file is the
        // branch's business.
        if repo
            .git
            .check(&repo.main_root, &["check-ignore", "-q", "--", entry])?
        {
            out.push(entry.to_string());
        }
        if out.len() >= WORKTREE_INCLUDE_LIMIT {
            break;
        }
    }
    Ok(out)
}

/// Why a step was skipped when the setup was left out: the option that did
/// it, as the front end names it.
fn no_hooks() -> String {
    crate::error::Hinted::new("{no-hooks}").to_string()
}
