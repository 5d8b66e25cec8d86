//! `grove import`

use std::path::{Path, PathBuf};

use grove::import::{self, Summary, amp, claude, codex, dagent, hq, sage};
use grove::project::Project;
use grove::store::Store;

use super::Output;

/// Bring other agent tools' conversations into ATSF threads. The source is
/// only read; importing it again appends only what is new (thread ids come
/// from the source's session ids), so an agent hook can run it every turn.
#[derive(clap::Args)]
pub struct Args {
    /// The source format.
    #[arg(value_enum)]
    format: FormatArg,

    /// Session files or directories (for claude: a session .jsonl or a
    /// ~/.claude/projects/<project> directory).
    #[arg(required = true)]
    paths: Vec<PathBuf>,

    /// Append the imported conversation to this existing thread (one session only).
    #[arg(long, value_name = "THREAD", conflicts_with = "worktree")]
    into: Option<String>,

    /// Put the threads in this worktree's .agent/ (default: the worktree the
    /// session ran in, when it is one of this repository's, else this project).
    #[arg(long, value_name = "PATH")]
    worktree: Option<PathBuf>,

    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    /// Claude Code session transcripts.
    Claude,
    /// OpenAI Codex CLI rollout files (~/.codex/sessions/…/rollout-*.jsonl).
    Codex,
    /// dagent's .dagent/ directory (current and legacy layouts).
    Dagent,
    /// Sage Agent sessions (.sage/sessions/<id>/).
    Sage,
    /// HQ thread checkpoints (workspace/threads/<id>.json).
    Hq,
    /// Amp thread JSON files.
    Amp,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let mut summary = Summary::default();
    let threads = read_sources(&args, cwd, &mut summary)?;
    let failed = match &args.into {
        Some(query) => {
            import_into(&project, query, threads, &mut summary)?;
            0
        }
        None => write_threads(&project, &args, cwd, threads, &mut summary),
    };
    report(&summary, args.json, out)?;
    if failed > 0 {
        out.warn(&format!(
            "{failed} thread(s) could not be imported (see above); the others were"
        ));
        return Ok(super::exit::ERROR);
    }
    Ok(super::exit::SUCCESS)
}

/// Reads every source. A file that cannot be read is reported (by name)
/// and the others still import.
fn read_sources(
    args: &Args,
    cwd: &Path,
    summary: &mut Summary,
) -> anyhow::Result<Vec<import::ImportedThread>> {
    let mut threads = Vec::new();
    for path in &args.paths {
        let path = cwd.join(path);
        let files: Vec<PathBuf> = match args.format {
            FormatArg::Claude => {
                claude::check_source(&path)?;
                claude::sources(&path)?
            }
            // A workspace, its threads/ directory, or one file.
            FormatArg::Hq => {
                let dir = if path.join("workspace/threads").is_dir() {
                    path.join("workspace/threads")
                } else {
                    path.clone()
                };
                import::json_files(&dir)?
            }
            FormatArg::Codex => codex::sources(&path)?,
            FormatArg::Sage => sage::sessions(&path)?,
            FormatArg::Amp => import::json_files(&path)?,
            FormatArg::Dagent => vec![path.clone()],
        };
        for file in files {
            let read = match args.format {
                FormatArg::Claude => claude::import_file(&file, summary),
                FormatArg::Hq => hq::import_file(&file, summary).map(Vec::from_iter),
                FormatArg::Codex => codex::import_file(&file, summary).map(Vec::from_iter),
                FormatArg::Sage => sage::import_session(&file, summary),
                FormatArg::Amp => amp::import_file(&file, summary).map(Vec::from_iter),
                FormatArg::Dagent => dagent::import_dir(&file, summary),
            };
            match read {
                Ok(found) => threads.extend(found),
                Err(e) => summary
                    .errors
                    .push(format!("{}: skipped: {e}", file.display())),
            }
        }
    }
    Ok(threads)
}

/// `--into THREAD`: one session's messages appended to an existing thread.
fn import_into(
    project: &Project,
    query: &str,
    threads: Vec<import::ImportedThread>,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let target = grove::discovery::find_thread(project, query)?;
    let mains: Vec<_> = threads
        .iter()
        .filter(|t| t.meta.main_thread_id.is_none() && t.meta.origin_thread_id.is_none())
        .collect();
    if mains.len() != 1 {
        return Err(super::UsageError(format!(
            "--into takes one session; {} were given",
            mains.len()
        ))
        .into());
    }
    let mut one = mains[0].clone();
    one.meta.thread_id = target.id().to_string();
    one.meta.relationships = None;
    let store = Store::at(
        target
            .dir()
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new(".")),
    );
    summary.threads.push(import::write(&store, one)?);
    Ok(())
}

/// Writes each thread where it belongs. One that cannot be written is
/// reported with the source file and line it came from, and the others go
/// on. Returns how many failed.
fn write_threads(
    project: &Project,
    args: &Args,
    cwd: &Path,
    threads: Vec<import::ImportedThread>,
    summary: &mut Summary,
) -> usize {
    let worktrees = worktree_roots(project);
    let mut failed = 0;
    for t in threads {
        let root = match &args.worktree {
            Some(w) => cwd.join(w),
            None => home_of(&t.meta.context.working_dir, &worktrees, project),
        };
        let meta = t.meta.clone();
        match import::write(&Store::for_project(&root), t) {
            Ok(outcome) => {
                if let Ok(thread) = Store::for_project(&root).thread(&outcome.thread_id)
                    && let Err(e) = grove::discovery::cache_if_in_worktree(project, &thread)
                {
                    summary.errors.push(format!(
                        "thread {} is not in grove's cache yet (the next `grove list` retries): {e}",
                        outcome.thread_id
                    ));
                }
                summary.threads.push(outcome)
            }
            Err(e) => {
                failed += 1;
                let needle = match &e {
                    grove::Error::InvalidThreadId { .. } => meta
                        .metadata
                        .as_ref()
                        .and_then(|m| m.get("import")?.get("sourceId")?.as_str())
                        .unwrap_or("")
                        .to_string(),
                    grove::Error::InvalidMessage(text) => text
                        .split("(id \"")
                        .nth(1)
                        .and_then(|rest| rest.split('"').next())
                        .unwrap_or("")
                        .to_string(),
                    _ => String::new(),
                };
                let place = import::locate(&meta, &needle)
                    .unwrap_or_else(|| format!("thread {}", meta.thread_id));
                summary.errors.push(format!("{place}: not imported: {e}"));
            }
        }
    }
    failed
}

fn report(summary: &Summary, json: bool, out: &Output) -> anyhow::Result<()> {
    for e in &summary.errors {
        out.warn(e);
    }
    if json {
        return out.json(summary);
    }
    for t in &summary.threads {
        out.line(&format!(
            "{}  {} {:>4} new / {:>4} messages  {}",
            t.thread_id,
            if t.created { "created" } else { "updated" },
            t.messages_added,
            t.message_count,
            t.title
        ))?;
    }
    for (kind, c) in &summary.records {
        out.status(&format!(
            "grove: {kind}: {} mapped, {} joined, {} kept raw, {} skipped{}",
            c.mapped,
            c.joined,
            c.raw,
            c.skipped,
            if c.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.reasons.join("; "))
            }
        ));
    }
    Ok(())
}

/// Roots of the repository's worktrees (the main one included).
fn worktree_roots(project: &Project) -> Vec<PathBuf> {
    if project.git.is_none() {
        return Vec::new();
    }
    grove::worktree::Repo::new(&project.main_root)
        .and_then(|r| r.worktrees())
        .map(|w| w.into_iter().filter(|e| !e.bare).map(|e| e.path).collect())
        .unwrap_or_default()
}

/// The worktree a session ran in, when it is one of this repository's.
fn home_of(cwd: &str, worktrees: &[PathBuf], project: &Project) -> PathBuf {
    let cwd = Path::new(cwd);
    worktrees
        .iter()
        .filter(|w| cwd.starts_with(w))
        .max_by_key(|w| w.as_os_str().len())
        .cloned()
        .unwrap_or_else(|| project.root.clone())
}
