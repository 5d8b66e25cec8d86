//! `grove new`: branch, worktree, thread, hooks — in that order.
//!
//! The steps read as a pipeline: [`plan`] checks everything that can be
//! checked before anything is made; [`add_worktree`] makes the branch and
//! worktree under one rollback guard and an intent recorded first;
//! [`make_thread`] puts the thread inside; the guard is then disarmed. From
//! there on nothing fails the task: [`Finish`] applies the hooks, the first
//! messages and the cache, and records every problem instead of returning
//! it, so the worktree's path is always printed once the thread exists.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::carry::{self, Carried, Changes};
use super::{Repo, exclude};
use crate::atsf::{self, Config, Context, ThreadMeta, WorktreeInfo};
use crate::cache::{self, CacheRecord, CacheState};
use crate::error::{Error, IoContext, Result};
use crate::hooks::interrupt::Watch;
use crate::hooks::{self, CommandEnv, HookKind, HookOutcome, HookReporter, HookStatus, TrustStore};
use crate::intent::{self, Action, Step};
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
    /// The thread's id, when the task's thread exists already (a removed
    /// task made again); a new one otherwise.
    pub thread_id: Option<String>,
    /// Do not initialise the submodules the main checkout has initialised
    /// (`--no-submodules`, or `grove.submodules: false`).
    pub no_submodules: bool,
    /// Check out Git LFS files as pointers, downloading nothing
    /// (`--no-lfs`, or `grove.lfs: false`).
    pub no_lfs: bool,
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
    /// What went wrong after the thread existed (a hook log that could not
    /// be created, the cache not written…): the task is there, with these
    /// recorded in `metadata.grove.problems` where possible.
    pub problems: Vec<String>,
    /// The signal (SIGINT, SIGTERM, SIGHUP) that interrupted the hooks.
    pub interrupted: Option<i32>,
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
    let repo = repo_of(project)?;
    let config = project.main_store().config()?;
    let plan = plan(project, &repo, task, config.as_ref())?;
    let mut made = add_worktree(&repo, &plan)?;
    let (thread, meta, excludes) = make_thread(project, &repo, &plan, &made, maker)?;
    made.keep();

    let mut finish = Finish {
        project,
        repo: &repo,
        task,
        plan: &plan,
        dir: made.dir.clone(),
        thread,
        excludes,
        outcomes: Vec::new(),
        problems: Vec::new(),
        interrupted: None,
        ports: Vec::new(),
    };
    let hooks_cfg = config
        .as_ref()
        .and_then(|c| c.worktree_hooks.clone())
        .unwrap_or_default();
    finish.submodules(reporter);
    finish.symlinks(&hooks_cfg, reporter);
    finish.copies(&hooks_cfg, reporter);
    finish.ports_and_env(&hooks_cfg, reporter);
    finish.commands(&hooks_cfg, reporter, ask_trust);
    finish.prompts(&hooks_cfg, reporter, maker);
    let meta = finish.record().unwrap_or(meta);
    let meta = match finish.cache() {
        // The cache could not be written: that too goes into the record.
        false => finish.record().unwrap_or(meta),
        true => meta,
    };
    Ok(CreatedTask {
        thread: finish.thread,
        meta,
        worktree: made.dir.clone(),
        branch: plan.branch.clone(),
        hooks: finish.outcomes,
        carried: made.carried,
        problems: finish.problems,
        interrupted: finish.interrupted,
    })
}

fn repo_of(project: &Project) -> Result<Repo> {
    if project.git.is_none() {
        return Err(Error::Other(format!(
            "{} is not in a git repository; use --no-worktree for a thread without a worktree",
            project.cwd.display()
        )));
    }
    Repo::new(&project.main_root)
}

/// Everything decided before anything is made.
struct Plan {
    id: String,
    meta: ThreadMeta,
    branch: String,
    create_branch: bool,
    base_rev: String,
    base_commit: String,
    dir: PathBuf,
    carry: Option<(PathBuf, Changes)>,
    /// The worktree `git worktree add` runs in: its sparse-checkout
    /// patterns are the new worktree's.
    source: PathBuf,
    no_submodules: bool,
    no_lfs: bool,
}

/// Step 1: the thread id, the branch and its base, the directory — all
/// checked before anything is made.
fn plan(project: &Project, repo: &Repo, task: &NewTask, config: Option<&Config>) -> Result<Plan> {
    let mut meta = crate::threads::new_meta(&task.title, &task.agent, Context::default());
    if let Some(id) = &task.thread_id {
        meta.thread_id = id.clone();
    }
    let id = meta.thread_id.clone();
    let short: String = id.chars().take(8).collect();
    let (branch, create_branch) = choose_branch(repo, task, config, &short)?;
    let (base_rev, carry) = match (&task.carry_from, &task.base) {
        // Carried changes are relative to the source worktree's HEAD.
        (Some(src), base) => {
            let changes = carry::changes(&repo.git, src)?;
            if !changes.unmerged.is_empty() {
                return Err(Error::Refused(format!(
                    "{} has unresolved merge conflicts ({}); resolve them first",
                    src.display(),
                    changes.unmerged_list()
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
    let dir = match &task.dir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => project.cwd.join(d),
        None => crate::home::worktrees_dir(&project.main_root)?.join(format!("thread-{short}")),
    };
    if std::fs::symlink_metadata(&dir).is_ok()
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
    let source = match &task.carry_from {
        Some(src) => src.clone(),
        None if project.root.join(".git").exists() => project.root.clone(),
        None => repo.main_root.clone(),
    };
    let setting = |key: &str| {
        config
            .and_then(|c| c.extra.get("grove")?.get(key)?.as_bool())
            .unwrap_or(true)
    };
    Ok(Plan {
        id,
        meta,
        branch,
        create_branch,
        base_rev,
        base_commit,
        dir,
        carry,
        source,
        no_submodules: task.no_submodules || !setting("submodules"),
        no_lfs: task.no_lfs || !setting("lfs"),
    })
}

/// The branch to use and whether grove creates it.
fn choose_branch(
    repo: &Repo,
    task: &NewTask,
    config: Option<&Config>,
    short: &str,
) -> Result<(String, bool)> {
    let Some(name) = &task.branch else {
        let name = format!("{}{short}", branch_prefix(config));
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
        return Ok((name, true));
    };
    if !repo.valid_branch_name(name)? {
        return Err(Error::Other(format!(
            "{name:?} is not a valid branch name (see `git check-ref-format --branch`)"
        )));
    }
    if !repo.branch_exists(name)? {
        return Ok((name.clone(), true));
    }
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
    Ok((name.clone(), false))
}

/// A worktree being made: undone when dropped before [`Made::keep`].
struct Made<'a> {
    repo: &'a Repo,
    /// The canonical worktree directory.
    dir: PathBuf,
    carried: Option<Carried>,
    /// Made so far, for the rollback.
    worktree: Option<PathBuf>,
    branch: Option<String>,
    step: Option<Step>,
}

impl Made<'_> {
    /// The task exists: nothing is rolled back any more.
    fn keep(&mut self) {
        self.worktree = None;
        self.branch = None;
        if let Some(step) = self.step.take() {
            step.done();
        }
    }
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        let root = &self.repo.main_root;
        if let Some(wt) = &self.worktree {
            let path = wt.to_string_lossy();
            let _ = self
                .repo
                .git
                .output(root, &["worktree", "remove", "--force", "--force", &path]);
            if std::fs::symlink_metadata(wt).is_ok() {
                let _ = std::fs::remove_dir_all(wt);
            }
            let _ = self.repo.git.output(root, &["worktree", "prune"]);
        }
        if let Some(branch) = &self.branch {
            let _ = self.repo.git.output(root, &["branch", "-D", branch]);
        }
        if let Some(step) = self.step.take() {
            step.undone();
        }
    }
}

/// Step 2: the branch and the worktree (`git worktree add`, so the user's
/// hooks, LFS and sparse checkout apply), with the carried changes applied.
/// The intent is recorded first; anything made is undone on failure.
fn add_worktree<'a>(repo: &'a Repo, plan: &Plan) -> Result<Made<'a>> {
    if let Some(parent) = plan.dir.parent() {
        std::fs::create_dir_all(parent).ctx("creating", parent)?;
    }
    let thread_dir = Store::for_project(&plan.dir).thread_dir(&plan.id);
    let step = intent::begin(Action::Worktree {
        repo: repo.main_root.clone(),
        path: plan.dir.clone(),
        branch: plan.branch.clone(),
        created_branch: plan.create_branch,
        base_commit: plan.base_commit.clone(),
        thread_dir,
    })?;
    let mut made = Made {
        repo,
        dir: plan.dir.clone(),
        carried: None,
        worktree: None,
        branch: None,
        step: Some(step),
    };
    let dir_str = plan.dir.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "add", "--quiet"];
    if plan.create_branch {
        args.extend([
            "-b",
            plan.branch.as_str(),
            dir_str.as_str(),
            plan.base_commit.as_str(),
        ]);
    } else {
        args.extend([dir_str.as_str(), plan.branch.as_str()]);
    }
    // git itself races with another `git worktree add` of the repository
    // (it reads the other's half-written `worktrees/<name>/commondir` and
    // fails): grove's additions to one repository take turns.
    let _turn = crate::fsutil::FileLock::acquire(&add_lock_path(repo)?)?;
    // The source's patches are read while git checks the new worktree out.
    let (added, patches) = std::thread::scope(|scope| {
        let patches = plan.carry.as_ref().map(|(src, changes)| {
            let git = repo.git.clone();
            scope.spawn(move || carry::patches(&git, changes, src))
        });
        let env: &[(&str, &str)] = if plan.no_lfs {
            &[("GIT_LFS_SKIP_SMUDGE", "1")]
        } else {
            &[]
        };
        let added = repo.git.output_with_env(&plan.source, &args, env);
        let patches = patches.map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (added, patches)
    });
    let added = added?;
    made.worktree = Some(plan.dir.clone());
    if plan.create_branch && repo.branch_exists(&plan.branch)? {
        made.branch = Some(plan.branch.clone());
    }
    if !added.success {
        return Err(Error::Git(format!(
            "`git worktree add` failed: {}",
            added.stderr
        )));
    }
    let patches = patches.transpose()?;
    made.dir = plan.dir.canonicalize().ctx("resolving", &plan.dir)?;
    if let (Some((src, changes)), Some(patches)) = (&plan.carry, &patches) {
        made.carried = Some(carry::apply(&repo.git, changes, patches, src, &made.dir)?);
    }
    Ok(made)
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
        if entry == atsf::AGENT_DIR || super::is_grove_path(entry.as_bytes()) {
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

/// The lock grove's `git worktree add`s of one repository take turns on:
/// `<data dir>/locks/<repo key>.worktree-add`.
fn add_lock_path(repo: &Repo) -> Result<PathBuf> {
    let key = crate::home::repo_key(&repo.main_root);
    Ok(crate::home::data_dir()?
        .join("locks")
        .join(format!("{key}.worktree-add")))
}

/// Step 3: the thread, inside the worktree, with the project's config and
/// `.gitignore` beside it. Returns the thread, its metadata and the
/// `info/exclude` entries added.
fn make_thread(
    project: &Project,
    repo: &Repo,
    plan: &Plan,
    made: &Made<'_>,
    maker: &dyn MakeThread,
) -> Result<(Thread, ThreadMeta, Vec<String>)> {
    let dir = &made.dir;
    let head = match crate::git::discover(dir)?.and_then(|info| info.head) {
        Some(head) => head,
        None => repo.git.run(dir, &["rev-parse", "HEAD"])?,
    };
    let main_store = project.main_store();
    let wt_store = Store::for_project(dir);
    // A `.agent` committed as a symbolic link is refused here: the thread
    // would be written wherever it points.
    crate::fsutil::real_dir(dir, wt_store.agent_dir())?;
    let mut excludes = Vec::new();
    for name in [atsf::CONFIG_FILE, ".gitignore"] {
        let from = main_store.agent_dir().join(name);
        let to = wt_store.agent_dir().join(name);
        let missing = std::fs::symlink_metadata(&to).is_err();
        let copied = missing && from.is_file() && crate::fsutil::copy_new(&from, &to)?;
        // `.gitignore` is written with the spec's rules when there is none.
        if copied || (missing && name == ".gitignore") {
            excludes.push(exclude::pattern_for(
                &Path::new(atsf::AGENT_DIR).join(name),
            )?);
        }
    }
    wt_store.ensure_dir()?;
    exclude::add(&exclude::exclude_file(&repo.git, dir)?, &excludes)?;

    let mut meta = plan.meta.clone();
    meta.context = task_context(repo, plan, dir, &head)?;
    meta.metadata_mut().insert(
        "grove".into(),
        json!({
            "mainRoot": project.main_root,
            "createdBranch": plan.create_branch,
            "excludes": excludes,
        }),
    );
    let thread = maker.make(&wt_store, meta)?;
    let meta = thread.meta()?;
    Ok((thread, meta, excludes))
}

fn task_context(repo: &Repo, plan: &Plan, dir: &Path, head: &str) -> Result<Context> {
    let mut context = Context {
        working_dir: dir.to_string_lossy().into_owned(),
        relative_dir: Some(".".into()),
        git_branch: Some(plan.branch.clone()),
        git_commit: Some(head.to_string()),
        worktree: Some(WorktreeInfo {
            path: dir.to_string_lossy().into_owned(),
            branch: plan.branch.clone(),
            extra: Default::default(),
        }),
        extra: Default::default(),
    };
    if let Some(url) = repo.remote_url()? {
        context.extra.insert("remoteUrl".into(), Value::from(url));
    }
    context
        .extra
        .insert("baseRevision".into(), Value::from(plan.base_rev.clone()));
    context
        .extra
        .insert("baseCommit".into(), Value::from(plan.base_commit.clone()));
    Ok(context)
}

/// Step 4, once the thread exists: hooks, first messages, the record of it
/// all, the cache. Nothing here fails the task; problems are collected.
struct Finish<'a> {
    project: &'a Project,
    repo: &'a Repo,
    task: &'a NewTask,
    plan: &'a Plan,
    dir: PathBuf,
    thread: Thread,
    excludes: Vec<String>,
    outcomes: Vec<HookOutcome>,
    problems: Vec<String>,
    interrupted: Option<i32>,
    /// The task's ports, once given.
    ports: Vec<u16>,
}

impl Finish<'_> {
    fn report(&mut self, reporter: &dyn HookReporter, outcome: HookOutcome) {
        reporter.finished(&outcome);
        self.outcomes.push(outcome);
    }

    fn symlinks(&mut self, cfg: &atsf::WorktreeHooks, reporter: &dyn HookReporter) {
        let mut added = Vec::new();
        for link in cfg.symlinks.iter().flatten() {
            let target = link.target.as_deref().unwrap_or(&link.source);
            let outcome = if self.task.hooks {
                hooks::apply_symlink(&self.project.main_root, &self.dir, link)
            } else {
                HookOutcome::skipped(HookKind::Symlink, format!("link {target}"), "--no-hooks")
            };
            if outcome.status == HookStatus::Ok
                && let Ok(rel) = hooks::checked_hook_path(target)
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
                hooks::apply_copy(&self.project.main_root, &self.dir, &copy)
            } else {
                HookOutcome::skipped(HookKind::Copy, format!("copy {target}"), "--no-hooks")
            };
            // What .worktreeinclude names is ignored already.
            if configured
                && outcome.status == HookStatus::Ok
                && let Ok(rel) = hooks::checked_hook_path(&target)
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
            reason: failed.map(|e| format!("{e} (`--no-submodules` skips this)")),
        };
        self.report(reporter, outcome);
    }

    /// The task's ports, then its env file (with them filled in).
    fn ports_and_env(&mut self, cfg: &atsf::WorktreeHooks, reporter: &dyn HookReporter) {
        if !self.task.hooks {
            return;
        }
        if let Some((outcome, ports)) = super::taskenv::ports(cfg, &self.thread, &self.dir) {
            self.ports = ports;
            self.report(reporter, outcome);
        }
        let values = super::taskenv::Placeholders {
            ports: self.ports.clone(),
            branch: self.plan.branch.clone(),
            thread_id: self.plan.id.clone(),
            worktree: self.dir.to_string_lossy().into_owned(),
        };
        if let Some((outcome, written)) = super::taskenv::env_file(cfg, &values, &self.dir) {
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
        let result = exclude::exclude_file(&self.repo.git, &self.dir)
            .and_then(|file| exclude::add(&file, &added));
        match result {
            Ok(()) => self.excludes.extend(added),
            Err(e) => self.problems.push(format!(
                "the hook {what} could not be kept out of git status: {e}"
            )),
        }
    }

    fn commands(
        &mut self,
        cfg: &atsf::WorktreeHooks,
        reporter: &dyn HookReporter,
        ask_trust: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
    ) {
        let commands = cfg.post_setup_commands.clone().unwrap_or_default();
        if commands.is_empty() {
            return;
        }
        let trusted = self.task.hooks && self.trusted(&commands, ask_trust);
        let env = CommandEnv {
            worktree: self.dir.clone(),
            repo_root: self.project.main_root.clone(),
            thread_id: self.plan.id.clone(),
            branch: self.plan.branch.clone(),
            ports: self.ports.clone(),
        };
        let logs = self.thread.dir().join("logs");
        let watch = Watch::start();
        let mut stop_reason: Option<String> = None;
        for (i, cmd) in commands.iter().enumerate() {
            let label = cmd.label.clone().unwrap_or_else(|| cmd.command.clone());
            if let Some(signal) = watch.received().filter(|_| stop_reason.is_none()) {
                stop_reason = Some(format!(
                    "grove was interrupted ({})",
                    hooks::interrupt::signal_name(signal)
                ));
            }
            let outcome = if !self.task.hooks {
                HookOutcome::skipped(HookKind::Command, label, "--no-hooks")
            } else if !trusted {
                HookOutcome::skipped(
                    HookKind::Command,
                    label,
                    format!(
                        "not trusted: review .agent/config.json, then run `grove trust` in {} or pass --trust",
                        self.project.main_root.display()
                    ),
                )
            } else if let Some(why) = &stop_reason {
                HookOutcome::skipped(HookKind::Command, label, why.clone())
            } else {
                match crate::fsutil::real_dir(self.thread.dir(), &logs) {
                    Err(e) => HookOutcome {
                        reason: Some(format!("cannot create its log directory: {e}")),
                        status: HookStatus::Failed,
                        ..HookOutcome::skipped(HookKind::Command, label, "")
                    },
                    Ok(()) => {
                        let log = logs.join(format!("post-setup-{}.log", i + 1));
                        let outcome = hooks::run_command(cmd, &env, &log, reporter, Some(&watch));
                        if outcome.is_failure() && !cmd.continue_on_error.unwrap_or(false) {
                            stop_reason =
                                Some(format!("an earlier command ({}) failed", outcome.label));
                        }
                        outcome
                    }
                }
            };
            self.report(reporter, outcome);
        }
        self.interrupted = watch.received();
    }

    /// Whether the command list may run: already trusted, trusted now by
    /// `--trust`, or trusted by the user's answer. A trust store that cannot
    /// be read means "not trusted", with a problem recorded.
    fn trusted(
        &mut self,
        commands: &[atsf::PostSetupCommand],
        ask: &dyn Fn(&[atsf::PostSetupCommand]) -> bool,
    ) -> bool {
        let root = &self.project.main_root;
        let hash = hooks::commands_hash(commands);
        let store = match TrustStore::open() {
            Ok(s) => s,
            Err(e) => {
                self.problems.push(e.to_string());
                return false;
            }
        };
        match store.is_trusted(root, &hash) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => self.problems.push(format!(
                "{e}; the commands count as not trusted (`grove trust` rewrites the trust store)"
            )),
        }
        if !(self.task.trust || ask(commands)) {
            return false;
        }
        match store.trust(root, &hash) {
            Ok(Some(saved)) => self.problems.push(format!(
                "the unreadable trust store was kept as {}",
                saved.display()
            )),
            Ok(None) => {}
            Err(e) => self
                .problems
                .push(format!("the commands run, but trust was not saved: {e}")),
        }
        true
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
                HookOutcome::skipped(HookKind::InitialPrompt, "initial prompt", "--no-hooks")
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

    /// Hook outcomes, exclude entries and problems into `thread.json`.
    fn record(&mut self) -> Option<ThreadMeta> {
        let hooks_json = serde_json::to_value(&self.outcomes).unwrap_or(Value::Null);
        let excludes = json!(self.excludes);
        let problems = self.problems.clone();
        let result = self.thread.update_meta(|m| {
            if let Some(Value::Object(grove)) = m.metadata_mut().get_mut("grove") {
                grove.insert("hooks".into(), hooks_json);
                grove.insert("excludes".into(), excludes);
                if !problems.is_empty() {
                    grove.insert("problems".into(), json!(problems));
                }
            }
        });
        match result {
            Ok(meta) => Some(meta),
            Err(e) => {
                self.problems
                    .push(format!("the hook outcomes were not recorded: {e}"));
                None
            }
        }
    }

    /// The cache, from the start: a later `rm -rf` cannot lose the thread.
    /// Returns whether it was written.
    fn cache(&mut self) -> bool {
        let record = CacheRecord {
            repo_root: self.project.main_root.to_string_lossy().into_owned(),
            worktree_path: self.dir.to_string_lossy().into_owned(),
            branch: self.plan.branch.clone(),
            state: CacheState::Live,
            cached_at: atsf::now_timestamp(),
        };
        match cache::save(&self.project.main_root, &self.thread, &record, false) {
            Ok(_) => true,
            Err(e) => {
                self.problems.push(format!(
                    "the thread is not in grove's cache yet (the next `grove list` retries): {e}"
                ));
                false
            }
        }
    }
}
