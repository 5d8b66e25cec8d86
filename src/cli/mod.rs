//! The `grove` command line: argument parsing, dispatch, and the one place
//! where errors become messages and exit codes.

mod append;
mod archive;
mod blame;
mod capture;
mod checkpoint;
mod completions;
mod config;
mod delete;
mod env;
mod export;
mod fork;
mod gc;
mod handoff;
mod import;
mod init;
mod launch;
mod list;
mod man;
mod mention;
mod merge;
mod new;
mod path;
mod pr;
mod pull;
mod push;
mod rename;
mod repair;
mod resume;
mod review;
mod rm;
mod scan;
mod search;
mod setup;
mod shell_init;
mod show;
mod switch;
mod trust;
mod ui;
mod validate;
mod why;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use lazy::Lazy;
use ui::{complete, lazy, output, progress, table, tree};

pub use output::Output;

/// Exit codes, documented in the README.
pub mod exit {
    pub const SUCCESS: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    /// `grove new --strict`: a hook failed or timed out (the worktree is kept).
    pub const HOOK_FAILED: u8 = 3;
    /// `grove import`: something was not imported as it was (the rest was);
    /// `grove capture install`: some events got no hook.
    pub const PARTIAL: u8 = 4;
    /// `grove merge`: the task's branch conflicts with the target.
    pub const CONFLICT: u8 = 5;
    /// `grove merge`: a test command failed.
    pub const TEST_FAILED: u8 = 6;
}

#[derive(Parser)]
#[command(
    name = "grove",
    version,
    about = "Start AI agent tasks in isolated git worktrees and keep their conversations next to the code",
    long_about = None,
    after_help = "Exit codes: 0 success, 1 error, 2 usage error, 3 a hook failed (new --strict), 4 an import or a capture install left something out (merge: landed, task not removed), 5 merge conflict, 6 merge test failed.\nThreads are stored in the Agent Thread Storage Format v1.1 under .agent/threads/."
)]
struct Cli {
    /// Run as if grove was started in DIR (like `git -C`).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    directory: Option<PathBuf>,

    /// Print errors only (no progress, status lines or warnings).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,

    /// Also print each git command grove runs, on stderr.
    #[arg(short, long, global = true)]
    verbose: bool,

    /// When to colour output: auto (terminal and no NO_COLOR), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: output::ColorChoice,

    /// Threads for the parallel walks (search, statuses, listing, copying
    /// and deleting trees); 0 or unset: one per core this process may use.
    /// Also GROVE_JOBS.
    #[arg(short = 'j', long, global = true, value_name = "N")]
    jobs: Option<usize>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Init(Lazy<init::Args>),
    New(Lazy<new::Args>),
    Append(Lazy<append::Args>),
    Show(Lazy<show::Args>),
    List(Lazy<list::Args>),
    Repair(Lazy<repair::Args>),
    Rm(Lazy<rm::Args>),
    Merge(Lazy<merge::Args>),
    Path(Lazy<path::Args>),
    Rename(Lazy<rename::Args>),
    Gc(Lazy<gc::Args>),
    Trust(Lazy<trust::Args>),
    Fork(Lazy<fork::Args>),
    Handoff(Lazy<handoff::Args>),
    Mention(Lazy<mention::Args>),
    Archive(Lazy<archive::Args>),
    /// Show an archived thread in `grove list` again.
    Unarchive(Lazy<archive::Args>),
    Delete(Lazy<delete::Args>),
    Checkpoint(Lazy<checkpoint::Args>),
    Export(Lazy<export::Args>),
    Search(Lazy<search::Args>),
    Blame(Lazy<blame::Args>),
    Why(Lazy<why::Args>),
    Scan(Lazy<scan::Args>),
    Pr(Lazy<pr::Args>),
    Review(Lazy<review::Args>),
    Push(Lazy<push::Args>),
    Pull(Lazy<pull::Args>),
    Import(Lazy<import::Args>),
    Validate(Lazy<validate::Args>),
    Launch(Lazy<launch::Args>),
    Capture(Lazy<capture::Args>),
    Resume(Lazy<resume::Args>),
    Env(Lazy<env::Args>),
    Completions(Lazy<completions::Args>),
    Man(Lazy<man::Args>),
    Switch(Lazy<switch::Args>),
    ShellInit(Lazy<shell_init::Args>),
    Config(Lazy<config::Args>),
    Setup(Lazy<setup::Args>),
    /// grove's own background deleter (see `grove rm --background`).
    #[command(name = "__delete-trash", hide = true)]
    DeleteTrash {
        dir: PathBuf,
    },
    /// grove's own waiter for a background setup command.
    #[command(name = "__setup-wait", hide = true)]
    SetupWait {
        job: String,
    },
}

/// What to do with secrets in a thread that leaves the machine.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct SecretFlags {
    /// Send a copy with each secret `grove scan` finds replaced by
    /// `[REDACTED:<rule>]` (the thread itself is not changed).
    #[arg(long, conflicts_with = "allow_secrets")]
    redact: bool,

    /// Send threads that hold secrets as they are.
    #[arg(long)]
    allow_secrets: bool,
}

impl SecretFlags {
    pub fn policy(self) -> grove::secrets::Policy {
        use grove::secrets::Policy;
        match (self.redact, self.allow_secrets) {
            (true, _) => Policy::Redact,
            (_, true) => Policy::Allow,
            _ => Policy::Refuse,
        }
    }
}

/// When a removed worktree's files are deleted.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Deletion {
    /// Delete the worktree's files before returning (the default off a
    /// terminal: scripts get a finished removal).
    #[arg(long, conflicts_with = "background")]
    foreground: bool,

    /// Return once the worktree is set aside and unregistered; a grove
    /// process of its own deletes the files (the default on a terminal).
    /// An interrupted deletion is finished by the next grove command.
    #[arg(long)]
    background: bool,
}

impl Deletion {
    /// Whether to delete in the background.
    pub fn background(self) -> bool {
        use std::io::IsTerminal;
        self.background || (!self.foreground && std::io::stderr().is_terminal())
    }
}

/// `argv` with the user's default flags for its subcommand (config.toml
/// `[flags]`) put right after the subcommand: flags typed later win.
fn with_user_flags(mut argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Ok(user) = grove::userconfig::get() else {
        return argv;
    };
    if user.flags.is_empty() {
        return argv;
    }
    let Some(i) = subcommand_position(&argv) else {
        return argv;
    };
    let command = argv[i].to_string_lossy().into_owned();
    if let Some(flags) = user.flags.get(&command) {
        for (n, flag) in flags.iter().enumerate() {
            argv.insert(i + 1 + n, flag.into());
        }
    }
    argv
}

/// Where the subcommand is in `argv`: the first word that is not a global
/// option (or its value).
fn subcommand_position(argv: &[std::ffi::OsString]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let word = argv[i].to_string_lossy();
        match word.as_ref() {
            "-C" | "--color" | "-j" | "--jobs" => i += 2,
            w if w.starts_with('-') => i += 1,
            _ => return Some(i),
        }
    }
    None
}

/// The subcommand `argv` names, if any.
fn subcommand_word(argv: &[std::ffi::OsString]) -> Option<&std::ffi::OsStr> {
    subcommand_position(argv).map(|i| argv[i].as_os_str())
}

/// A mistake in how grove was called, reported with exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// grove's command-line definition (for completions and manual pages).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

pub fn main() -> ExitCode {
    // A completion request from the shell code of `grove completions`:
    // answered, and grove exits.
    clap_complete::CompleteEnv::with_factory(command)
        .var(completions::VAR)
        .complete();
    let argv = with_user_flags(std::env::args_os().collect());
    lazy::define_only_what_runs(&argv);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let out = Output::new(cli.color).quiet(cli.quiet);
    // A config.toml that cannot be read stops grove, as git does, naming
    // the file and line.
    if let Err(e) = grove::userconfig::get() {
        out.error(&e.to_string());
        return ExitCode::from(exit::ERROR);
    }
    match (cli.jobs, grove::parallel::jobs_from_env()) {
        (Some(jobs), _) => grove::parallel::set_jobs(jobs),
        (None, Ok(jobs)) => grove::parallel::set_jobs(jobs.unwrap_or(0)),
        (None, Err(e)) => {
            out.error(&e);
            return ExitCode::from(exit::USAGE);
        }
    }
    grove::git::cmd::set_verbose(cli.verbose);
    // The library's refusals name what would help; here, as flags.
    grove::set_hint_words(hint_words);
    if let Ok(exe) = std::env::current_exe() {
        grove::trash::set_background_deleter(exe.clone());
        grove::worktree::background::set_waiter(exe);
    }
    let result = run(cli, &out);
    // Deletions a killed grove left half done are finished by whichever
    // grove runs next.
    grove::trash::finish_abandoned();
    // Every step done: this run's intent journal goes.
    grove::intent::close();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => report(&out, &err),
    }
}

fn run(cli: Cli, out: &Output) -> anyhow::Result<u8> {
    let cwd = match cli.directory {
        Some(dir) => dir,
        None => current_dir(out)?,
    };
    match cli.command {
        Command::Init(Lazy(args)) => init::run(args, &cwd, out),
        Command::New(Lazy(args)) => new::run(args, &cwd, out),
        Command::Append(Lazy(args)) => append::run(args, &cwd, out),
        Command::Show(Lazy(args)) => show::run(args, &cwd, out),
        Command::List(Lazy(args)) => list::run(args, &cwd, out),
        Command::Repair(Lazy(args)) => repair::run(args, &cwd, out),
        Command::Rm(Lazy(args)) => rm::run(args, &cwd, out),
        Command::Merge(Lazy(args)) => merge::run(args, &cwd, out),
        Command::Path(Lazy(args)) => path::run(args, &cwd, out),
        Command::Rename(Lazy(args)) => rename::run(args, &cwd, out),
        Command::Gc(Lazy(args)) => gc::run(args, &cwd, out),
        Command::Trust(Lazy(args)) => trust::run(args, &cwd, out),
        Command::Fork(Lazy(args)) => fork::run(args, &cwd, out),
        Command::Handoff(Lazy(args)) => handoff::run(args, &cwd, out),
        Command::Mention(Lazy(args)) => mention::run(args, &cwd, out),
        Command::Archive(Lazy(args)) => archive::run(args, true, &cwd, out),
        Command::Unarchive(Lazy(args)) => archive::run(args, false, &cwd, out),
        Command::Delete(Lazy(args)) => delete::run(args, &cwd, out),
        Command::Checkpoint(Lazy(args)) => checkpoint::run(args, &cwd, out),
        Command::Export(Lazy(args)) => export::run(args, &cwd, out),
        Command::Search(Lazy(args)) => search::run(args, &cwd, out),
        Command::Blame(Lazy(args)) => blame::run(args, &cwd, out),
        Command::Why(Lazy(args)) => why::run(args, &cwd, out),
        Command::Scan(Lazy(args)) => scan::run(args, &cwd, out),
        Command::Pr(Lazy(args)) => pr::run(args, &cwd, out),
        Command::Review(Lazy(args)) => review::run(args, &cwd, out),
        Command::Push(Lazy(args)) => push::run(args, &cwd, out),
        Command::Pull(Lazy(args)) => pull::run(args, &cwd, out),
        Command::Import(Lazy(args)) => import::run(args, &cwd, out),
        Command::Validate(Lazy(args)) => validate::run(args, &cwd, out),
        Command::Launch(Lazy(args)) => launch::run(args, &cwd, out),
        Command::Capture(Lazy(args)) => capture::run(args, &cwd, out),
        Command::Resume(Lazy(args)) => resume::run(args, &cwd, out),
        Command::Env(Lazy(args)) => env::run(args, &cwd, out),
        Command::Completions(Lazy(args)) => completions::run(args, &cwd, out),
        Command::Man(Lazy(args)) => man::run(args, &cwd, out),
        Command::Switch(Lazy(args)) => switch::run(args, &cwd, out),
        Command::ShellInit(Lazy(args)) => shell_init::run(args, &cwd, out),
        Command::Config(Lazy(args)) => config::run(args, &cwd, out),
        Command::Setup(Lazy(args)) => setup::run(args, &cwd, out),
        Command::SetupWait { job } => grove::worktree::background::wait_handed_over(&job)
            .map(|()| exit::SUCCESS)
            .map_err(Into::into),
        Command::DeleteTrash { dir } => grove::trash::delete_handed_over(&dir)
            .map(|()| exit::SUCCESS)
            .map_err(Into::into),
    }
}

/// The directory grove runs in. One deleted under the shell (a task's
/// worktree removed while the shell was in it) is taken as the repository
/// whose task it was, as the cache records it, else as the nearest
/// directory above it that is still there — so every command works from it.
fn current_dir(out: &Output) -> anyhow::Result<PathBuf> {
    let err = match std::env::current_dir() {
        Ok(dir) => return Ok(dir),
        Err(e) => e,
    };
    let pwd = std::env::var_os("PWD")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let Some(pwd) = pwd else {
        anyhow::bail!("cannot read the current directory: {err}; cd to a directory that exists");
    };
    let instead = grove::cache::repo_of_removed_worktree(&pwd)
        .or_else(|| pwd.ancestors().find(|a| a.is_dir()).map(PathBuf::from))
        .ok_or_else(|| anyhow::anyhow!("cannot read the current directory: {err}"))?;
    out.warn(&format!(
        "the current directory {} is gone; working in {}",
        output::escape_line(&pwd.display().to_string()),
        output::escape_line(&instead.display().to_string())
    ));
    Ok(instead)
}

/// Renders an error chain on stderr and picks the exit code. A closed stdout
/// (`grove list | head`) is not an error.
fn report(out: &Output, err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| cause.downcast_ref::<serde_json::Error>()?.io_error_kind());
        if kind == Some(std::io::ErrorKind::BrokenPipe) {
            return ExitCode::from(exit::SUCCESS);
        }
    }
    out.error(&error_text(err));
    ExitCode::from(exit_code_of(err))
}

/// An error and its causes, one line each.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut chain = err.chain();
    let mut message = chain.next().map(|e| e.to_string()).unwrap_or_default();
    for cause in chain {
        message.push_str(&format!("\n  caused by: {cause}"));
    }
    message
}

/// A library hint as the command line's flag or command.
pub fn hint_words(hint: grove::Hint) -> String {
    match hint {
        grove::Hint::Force => "--force",
        grove::Hint::Reap => "--reap",
        grove::Hint::Purge => "--purge",
        grove::Hint::Redact => "--redact",
        grove::Hint::AllowSecrets => "--allow-secrets",
        grove::Hint::RemoveForce => "grove rm --force",
        grove::Hint::Remove => "grove rm",
        grove::Hint::Scan => "grove scan",
        grove::Hint::Trust => "--trust",
        grove::Hint::NoHooks => "--no-hooks",
        grove::Hint::NoSubmodules => "--no-submodules",
    }
    .to_string()
}

/// The exit code an error ends grove with.
pub fn exit_code_of(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some() {
        exit::USAGE
    } else {
        exit::ERROR
    }
}

/// Finds THREAD (an id or prefix, a branch, a path, a title word) with
/// everything it belongs to (status,
/// worktree, repository); what could not be read on the way is warned about.
pub fn resolve(
    out: &Output,
    project: &grove::project::Project,
    query: &str,
) -> anyhow::Result<grove::discovery::Found> {
    let (found, errors) = grove::discovery::resolve_reporting(project, query)?;
    warn_skipped(out, &errors);
    Ok(found)
}

/// One warning per thread, store or cache entry that could not be read.
pub fn warn_skipped(out: &Output, errors: &[grove::Error]) {
    for e in errors {
        out.warn(&format!("skipped: {e}"));
    }
}
