//! `grove new`: branch, worktree, thread, hooks — in that order, with
//! everything made before the thread exists rolled back on failure.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::carry::{self, Carried};
use super::{Repo, exclude};
use crate::atsf::{self, Config, Context, ThreadMeta, WorktreeInfo};
use crate::cache::{self, CacheRecord, CacheState};
use crate::error::{Error, IoContext, Result};
use crate::hooks::{self, CommandEnv, HookKind, HookOutcome, HookReporter, HookStatus, TrustStore};
use crate::project::Project;
use crate::store::{Store, Thread};

/// Default prefix of generated branch names; `grove.branchPrefix` in
/// `config.json` changes it.
pub const DEFAULT_BRANCH_PREFIX: &str = "grove/";

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct NewTask {
    pub title: String,
    pub agent: String,
    pub prompt: Option<String>,
    pub branch: Option<String>,
    pub base: Option<String>,
    pub dir: Option<PathBuf>,
    /// Apply `worktreeHooks` (false: `--no-hooks`).
    pub hooks: bool,
    /// Trust the command list without asking (`--trust`).
    pub trust: bool,
    /// A worktree whose uncommitted changes the new worktree starts with
    /// (`--carry`, `fork`); the source is not changed. The branch then starts
    /// at that worktree's HEAD unless `base` says otherwise.
    pub carry_from: Option<PathBuf>,
}

/// How the task's thread is made once its worktree exists.
pub trait MakeThread {
    /// Creates the thread in `store` from `meta`, whose id, context and
    /// `metadata.grove` are filled in.
    fn make(&self, store: &Store, meta: ThreadMeta) -> Result<Thread>;

    /// Whether the project's `initialPrompt` opens the conversation (not for
    /// a thread that continues another's).
    fn initial_prompt(&self) -> bool {
        true
    }
}

/// A new, empty thread.
struct EmptyThread;

impl MakeThread for EmptyThread {
    fn make(&self, store: &Store, meta: ThreadMeta) -> Result<Thread> {
        store.create_thread(&meta)
    }
}

/// What was created.
#[derive(Debug)]
pub struct CreatedTask {
    pub thread: Thread,
    pub meta: ThreadMeta,
    pub worktree: PathBuf,
    pub branch: String,
    pub hooks: Vec<HookOutcome>,
    /// What was carried from `carry_from`.
    pub carried: Option<Carried>,
}

/// Undoes what `create` made if it fails before the thread exists.
struct Rollback<'a> {
    repo: &'a Repo,
    worktree: Option<PathBuf>,
    branch: Option<String>,
    armed: bool,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let root = &self.repo.main_root;
        if let Some(wt) = &self.worktree {
            let path = wt.to_string_lossy();
            let _ = self
                .repo
                .git
                .output(root, &["worktree", "remove", "--force", &path]);
            if wt.exists() {
                let _ = std::fs::remove_dir_all(wt);
            }
            let _ = self.repo.git.output(root, &["worktree", "prune"]);
        }
        if let Some(branch) = &self.branch {
            let _ = self.repo.git.output(root, &["branch", "-D", branch]);
        }
    }
}

/// The branch prefix configured under `grove.branchPrefix`, or the default.
pub fn branch_prefix(config: Option<&Config>) -> String {
    config
        .and_then(|c| {
            c.extra
                .get("grove")?
                .get("branchPrefix")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| DEFAULT_BRANCH_PREFIX.to_string())
}

/// Creates the task. `ask_trust` is called with the command list when it is
/// not yet trusted (and `--trust` was not given); it returns the user's answer.
pub fn create(
    project: &Project,
    task: &NewTask,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
) -> Result<CreatedTask> {
    create_with(project, task, reporter, ask_trust, &EmptyThread)
}

/// [`create`], with the thread made by `maker` (a fork or a handoff brings
/// its conversation).
pub fn create_with(
    project: &Project,
    task: &NewTask,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
    maker: &dyn MakeThread,
) -> Result<CreatedTask> {
    if project.git.is_none() {
        return Err(Error::Other(format!(
            "{} is not in a git repository; use --no-worktree for a thread without a worktree",
            project.cwd.display()
        )));
    }
    let repo = Repo::new(&project.main_root)?;
    let main_store = project.main_store();
    let config = main_store.config()?;

    let meta_template = crate::threads::new_meta(&task.title, &task.agent, Context::default());
    let id = meta_template.thread_id.clone();
    let short: String = id.chars().take(8).collect();

    // 1. Branch and base, checked before anything is made.
    let (branch, create_branch) = match &task.branch {
        Some(name) => {
            if !repo.valid_branch_name(name)? {
                return Err(Error::Other(format!(
                    "{name:?} is not a valid branch name (see `git check-ref-format --branch`)"
                )));
            }
            if repo.branch_exists(name)? {
                if task.base.is_some() {
                    return Err(Error::Other(format!(
                        "branch {name} exists; --base only applies to a new branch"
                    )));
                }
                if let Some(wt) = repo
                    .worktrees()?
                    .into_iter()
                    .find(|w| w.branch.as_deref() == Some(name))
                {
                    return Err(Error::Refused(format!(
                        "branch {name} is already checked out in {}; choose another --branch",
                        wt.path.display()
                    )));
                }
                (name.clone(), false)
            } else {
                (name.clone(), true)
            }
        }
        None => {
            let name = format!("{}{short}", branch_prefix(config.as_ref()));
            if !repo.valid_branch_name(&name)? {
                return Err(Error::Other(format!(
                    "the generated branch name {name:?} is not valid; fix grove.branchPrefix in config.json"
                )));
            }
            if repo.branch_exists(&name)? {
                return Err(Error::Refused(format!(
                    "branch {name} already exists; pass --branch to choose a name"
                )));
            }
            (name, true)
        }
    };
    // Carried changes are relative to the source worktree's HEAD.
    let (base_rev, carry) = match (&task.carry_from, &task.base) {
        (Some(src), base) => {
            let changes = carry::changes(&repo.git, src)?;
            if !changes.unmerged.is_empty() {
                return Err(Error::Refused(format!(
                    "{} has unresolved merge conflicts ({}); resolve them first",
                    src.display(),
                    changes.unmerged.join(", ")
                )));
            }
            let rev = match base {
                Some(b) => b.clone(),
                None => crate::git::discover(src)?
                    .and_then(|info| info.head)
                    .ok_or_else(|| {
                        Error::Other(format!("{} has no commit to start from", src.display()))
                    })?,
            };
            (rev, Some((src.clone(), changes)))
        }
        (None, base) => (base.clone().unwrap_or_else(|| "HEAD".to_string()), None),
    };
    let base_commit = if create_branch {
        repo.resolve_commit(&base_rev)?.ok_or_else(|| {
            Error::Other(format!(
                "--base {base_rev:?} does not name a commit in {}",
                repo.main_root.display()
            ))
        })?
    } else {
        repo.resolve_commit(&format!("refs/heads/{branch}"))?
            .unwrap_or_default()
    };

    // 2. The worktree directory.
    let dir = match &task.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => project.cwd.join(d),
        None => crate::home::worktrees_dir(&project.main_root)?.join(format!("thread-{short}")),
    };
    if dir.exists()
        && std::fs::read_dir(&dir)
            .ctx("reading", &dir)?
            .next()
            .is_some()
    {
        return Err(Error::Refused(format!(
            "{} exists and is not empty; choose another --dir",
            dir.display()
        )));
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).ctx("creating", parent)?;
    }

    let mut rollback = Rollback {
        repo: &repo,
        worktree: None,
        branch: None,
        armed: true,
    };
    let dir_str = dir.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "add", "--quiet"];
    if create_branch {
        args.extend([
            "-b",
            branch.as_str(),
            dir_str.as_str(),
            base_commit.as_str(),
        ]);
    } else {
        args.extend([dir_str.as_str(), branch.as_str()]);
    }
    // The source's patches are read while git checks the new worktree out.
    let (added, patches) = std::thread::scope(|scope| {
        let patches = carry.as_ref().map(|(src, changes)| {
            let git = repo.git.clone();
            scope.spawn(move || carry::patches(&git, changes, src))
        });
        let added = repo.git.output(&repo.main_root, &args);
        let patches = patches.map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (added, patches)
    });
    let added = added?;
    rollback.worktree = Some(dir.clone());
    if create_branch && repo.branch_exists(&branch)? {
        rollback.branch = Some(branch.clone());
    }
    if !added.success {
        return Err(Error::Git(format!(
            "`git worktree add` failed: {}",
            added.stderr
        )));
    }
    let patches = patches.transpose()?;
    let dir = dir.canonicalize().ctx("resolving", &dir)?;
    let carried = match (&carry, &patches) {
        (Some((src, changes)), Some(patches)) => {
            Some(carry::apply(&repo.git, changes, patches, src, &dir)?)
        }
        _ => None,
    };

    // 3. The thread, inside the worktree.
    let head = match crate::git::discover(&dir)?.and_then(|info| info.head) {
        Some(head) => head,
        None => repo.git.run(&dir, &["rev-parse", "HEAD"])?,
    };
    let wt_store = Store::for_project(&dir);
    let mut excludes = Vec::new();
    for name in [atsf::CONFIG_FILE, ".gitignore"] {
        let from = main_store.agent_dir().join(name);
        let to = wt_store.agent_dir().join(name);
        if from.is_file() && !to.exists() {
            std::fs::create_dir_all(wt_store.agent_dir()).ctx("creating", wt_store.agent_dir())?;
            std::fs::copy(&from, &to).ctx("copying", &from)?;
            excludes.push(exclude::pattern_for(&Path::new(atsf::AGENT_DIR).join(name)));
        }
    }
    if !wt_store.agent_dir().join(".gitignore").exists() {
        excludes.push(exclude::pattern_for(
            &Path::new(atsf::AGENT_DIR).join(".gitignore"),
        ));
    }
    wt_store.ensure_dir()?;
    let thread_rel = Path::new(atsf::AGENT_DIR).join(atsf::THREADS_DIR).join(&id);
    excludes.push(format!("{}/", exclude::pattern_for(&thread_rel)));
    let exclude_file = exclude::exclude_file(&repo.git, &dir)?;
    exclude::add(&exclude_file, &excludes)?;

    let mut context = Context {
        working_dir: dir.to_string_lossy().into_owned(),
        relative_dir: Some(".".into()),
        git_branch: Some(branch.clone()),
        git_commit: Some(head.clone()),
        worktree: Some(WorktreeInfo {
            path: dir.to_string_lossy().into_owned(),
            branch: branch.clone(),
            extra: Default::default(),
        }),
        extra: Default::default(),
    };
    if let Some(url) = repo.remote_url()? {
        context.extra.insert("remoteUrl".into(), Value::from(url));
    }
    context
        .extra
        .insert("baseRevision".into(), Value::from(base_rev.clone()));
    context
        .extra
        .insert("baseCommit".into(), Value::from(base_commit.clone()));
    let mut meta = meta_template;
    meta.context = context;
    meta.metadata_mut().insert(
        "grove".into(),
        json!({
            "mainRoot": project.main_root,
            "createdBranch": create_branch,
            "excludes": excludes,
        }),
    );
    let thread = maker.make(&wt_store, meta)?;
    rollback.armed = false;

    // 4. Hooks. From here on nothing fails the task: outcomes are recorded.
    let hooks_cfg = config
        .as_ref()
        .and_then(|c| c.worktree_hooks.clone())
        .unwrap_or_default();
    let mut outcomes = Vec::new();
    let mut new_excludes = Vec::new();
    for link in hooks_cfg.symlinks.iter().flatten() {
        let outcome = if task.hooks {
            hooks::apply_symlink(&project.main_root, &dir, link)
        } else {
            HookOutcome::skipped(
                HookKind::Symlink,
                format!("link {}", link.target.as_deref().unwrap_or(&link.source)),
                "--no-hooks",
            )
        };
        if outcome.status == HookStatus::Ok
            && let Ok(target) =
                hooks::checked_relative(link.target.as_deref().unwrap_or(&link.source))
        {
            new_excludes.push(exclude::pattern_for(&target));
        }
        reporter.finished(&outcome);
        outcomes.push(outcome);
    }
    if !new_excludes.is_empty() {
        exclude::add(&exclude_file, &new_excludes)?;
    }
    let commands = hooks_cfg.post_setup_commands.clone().unwrap_or_default();
    if !commands.is_empty() {
        let trusted =
            task.hooks && command_trust(&project.main_root, &commands, task.trust, ask_trust)?;
        let env = CommandEnv {
            worktree: dir.clone(),
            repo_root: project.main_root.clone(),
            thread_id: id.clone(),
            branch: branch.clone(),
        };
        let logs = thread.dir().join("logs");
        let mut stop_reason: Option<String> = None;
        for (i, cmd) in commands.iter().enumerate() {
            let label = cmd.label.clone().unwrap_or_else(|| cmd.command.clone());
            let outcome = if !task.hooks {
                HookOutcome::skipped(HookKind::Command, label, "--no-hooks")
            } else if !trusted {
                HookOutcome::skipped(
                    HookKind::Command,
                    label,
                    format!(
                        "not trusted: review .agent/config.json, then run `grove trust` in {} or pass --trust",
                        project.main_root.display()
                    ),
                )
            } else if let Some(why) = &stop_reason {
                HookOutcome::skipped(HookKind::Command, label, why.clone())
            } else {
                std::fs::create_dir_all(&logs).ctx("creating", &logs)?;
                let log = logs.join(format!("post-setup-{}.log", i + 1));
                let outcome = hooks::run_command(cmd, &env, &log, reporter);
                if outcome.is_failure() && !cmd.continue_on_error.unwrap_or(false) {
                    stop_reason = Some(format!("an earlier command ({}) failed", outcome.label));
                }
                outcome
            };
            reporter.finished(&outcome);
            outcomes.push(outcome);
        }
    }

    // 5. First messages: initialPrompt, then --prompt.
    let mut prompts = Vec::new();
    if let Some(initial) = &hooks_cfg.initial_prompt {
        let outcome = if !maker.initial_prompt() {
            HookOutcome::skipped(
                HookKind::InitialPrompt,
                "initial prompt",
                "the thread continues an existing conversation",
            )
        } else if task.hooks {
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
            HookOutcome::skipped(HookKind::InitialPrompt, "initial prompt", "--no-hooks")
        };
        reporter.finished(&outcome);
        outcomes.push(outcome);
    }
    prompts.extend(task.prompt.clone());
    for prompt in prompts {
        let message = atsf::Message::new(atsf::Role::User, vec![atsf::ContentBlock::text(prompt)]);
        thread.append(message, crate::store::AppendOptions::default())?;
    }
    let hooks_json = serde_json::to_value(&outcomes).unwrap_or(Value::Null);
    let all_excludes: Vec<String> = excludes.iter().chain(&new_excludes).cloned().collect();
    let meta = thread.update_meta(|m| {
        if let Some(Value::Object(grove)) = m.metadata_mut().get_mut("grove") {
            grove.insert("hooks".into(), hooks_json);
            grove.insert("excludes".into(), json!(all_excludes));
        }
    })?;

    // 6. The cache, from the start: a later `rm -rf` cannot lose the thread.
    let record = CacheRecord {
        repo_root: project.main_root.to_string_lossy().into_owned(),
        worktree_path: dir.to_string_lossy().into_owned(),
        branch: branch.clone(),
        state: CacheState::Live,
        cached_at: atsf::now_timestamp(),
    };
    cache::save(&project.main_root, &thread, &record, false)?;

    Ok(CreatedTask {
        thread,
        meta,
        worktree: dir,
        branch,
        hooks: outcomes,
        carried,
    })
}

/// Decides whether the command list may run: already trusted, trusted now by
/// `--trust`, or trusted by the user's answer.
fn command_trust(
    repo_root: &Path,
    commands: &[atsf::PostSetupCommand],
    trust_flag: bool,
    ask: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
) -> Result<bool> {
    let store = TrustStore::open()?;
    let hash = hooks::commands_hash(commands);
    if store.is_trusted(repo_root, &hash)? {
        return Ok(true);
    }
    if trust_flag || ask(commands) {
        store.trust(repo_root, &hash)?;
        return Ok(true);
    }
    Ok(false)
}
