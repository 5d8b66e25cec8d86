//! `grove setup`

use std::path::Path;

use grove::project::Project;

use super::{Output, progress::Reporter};

/// Run a task's setup commands again in its worktree: the repository's
/// postSetupCommands (foreground, then background) and your own
/// ([hooks] in config.toml) — after `grove trust`, or after a failure.
///
/// Background commands of an earlier run still running are killed first.
#[derive(clap::Args)]
pub struct Args {
    /// The task: its id or a unique prefix, its branch, its worktree's path,
    /// or a word of its title (default: the task the shell is in).
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Trust this repository's postSetupCommands as they are now, without asking.
    #[arg(long)]
    trust: bool,

    /// Print {threadId, worktreePath, hooks, killed, problems} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread.as_deref().unwrap_or("."))?;
    let reporter = Reporter::new(out.is_quiet() || args.json);
    let ran = grove::worktree::rerun_setup(
        &project,
        &found,
        args.trust,
        &super::new::ask_trust,
        &reporter,
    )?;
    drop(reporter);
    for run in &ran.killed {
        out.status(&format!(
            "grove: killed the background setup `{}` of the earlier run",
            super::output::escape_line(&run.label)
        ));
    }
    for p in &ran.problems {
        out.warn(p);
    }
    if args.json {
        out.json(&ran)?;
    } else if ran.hooks.is_empty() {
        out.status("grove: no setup command to run (postSetupCommands, [hooks] in config.toml)");
    }
    if let Some(signal) = ran.interrupted {
        return Ok(128u8.saturating_add(signal as u8));
    }
    let failed = ran.hooks.iter().any(|h| h.is_failure());
    Ok(if failed {
        super::exit::HOOK_FAILED
    } else {
        super::exit::SUCCESS
    })
}
