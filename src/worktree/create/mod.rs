//! `grove new`: branch, worktree, thread, hooks — in that order.
//!
//! The steps read as a pipeline, one file each: [`plan`] checks everything
//! that can be checked before anything is made; [`checkout`] makes the
//! branch and worktree under one rollback guard and an intent recorded
//! first; [`seed`] puts `.agent` and the thread inside; the guard is then
//! disarmed. From there on nothing fails the task: [`setup`] applies
//! submodules, links, copies, ports and env, commands and the first
//! messages, and [`record`] writes what happened and the cache, every
//! problem recorded instead of returned, so the worktree's path is always
//! printed once the thread exists.

mod checkout;
mod plan;
mod record;
mod seed;
mod setup;

use checkout::{Made, add_worktree};
use plan::{Plan, plan};
use record::record_made_branch;
use seed::make_thread;
use setup::Finish;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::carry::{self, Carried, Changes};
use super::{Repo, exclude};
use crate::atsf::{self, Config, Context, ThreadMeta, WorktreeInfo};
use crate::cache::{self, CacheRecord, CacheState};
use crate::error::{Error, IoContext, Result};
use crate::intent::{self, Action, Step};
use crate::project::Project;
use crate::setup::{CommandEnv, HookKind, HookOutcome, HookReporter, HookStatus};
use crate::store::{Store, Thread};

pub use crate::setting::DEFAULT_BRANCH_PREFIX;

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

/// Creates the task. `ask_trust` is called with the command lists the trust
/// covers when one is not yet trusted (and `--trust` was not given); it
/// returns the user's answer.
pub fn create(
    project: &Project,
    task: &NewTask,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&crate::setup::TrustAsked) -> bool,
) -> Result<CreatedTask> {
    create_with(project, task, reporter, ask_trust, &EmptyThread)
}

/// [`create`], with the thread made by `maker` (a fork or a handoff brings
/// its conversation).
pub fn create_with(
    project: &Project,
    task: &NewTask,
    reporter: &dyn HookReporter,
    ask_trust: &dyn Fn(&crate::setup::TrustAsked) -> bool,
    maker: &dyn MakeThread,
) -> Result<CreatedTask> {
    let repo = repo_of(project)?;
    let config = project.main_store().config()?;
    let hooks = config
        .as_ref()
        .and_then(|c| c.worktree_hooks.clone())
        .unwrap_or_default();
    let plan = plan(project, &repo, task, config.as_ref())?;
    // Undone on any failure until the thread exists.
    let mut made = add_worktree(&repo, &plan)?;
    // The branch's record is written while the thread is made: both wait
    // for the disk, and waiting side by side costs one wait.
    let (thread, owned) = std::thread::scope(|scope| {
        let owned = scope.spawn(|| record_made_branch(project, &plan));
        let thread = make_thread(project, &repo, &plan, &made, maker);
        let owned = owned
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (thread, owned)
    });
    let (thread, meta, excludes) = match thread {
        Ok(made_thread) => made_thread,
        Err(e) => {
            // The branch goes with the rollback: so does its record.
            if owned.is_ok() && plan.create_branch {
                let _ = super::ownership::forget(&project.main_root, &plan.id);
            }
            return Err(e);
        }
    };
    made.keep();
    let mut setup = Finish::new(project, &repo, task, &plan, &made.dir, thread, excludes);
    setup.branch_recorded(owned);
    setup.run(&hooks, reporter, ask_trust, maker);
    let meta = setup.record_all(meta);
    Ok(setup.created(meta, made.carried))
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
