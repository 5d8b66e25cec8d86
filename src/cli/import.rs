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
    let mut threads = Vec::new();
    for path in &args.paths {
        let path = cwd.join(path);
        match args.format {
            FormatArg::Claude => {
                claude::check_source(&path)?;
                for file in claude::sources(&path)? {
                    threads.extend(claude::import_file(&file, &mut summary)?);
                }
            }
            FormatArg::Hq => {
                // A workspace, its threads/ directory, or one file.
                let dir = if path.join("workspace/threads").is_dir() {
                    path.join("workspace/threads")
                } else {
                    path.clone()
                };
                for file in import::json_files(&dir)? {
                    threads.extend(hq::import_file(&file, &mut summary)?);
                }
            }
            FormatArg::Codex => {
                for file in codex::sources(&path)? {
                    threads.extend(codex::import_file(&file, &mut summary)?);
                }
            }
            FormatArg::Dagent => {
                threads.extend(dagent::import_dir(&path, &mut summary)?);
            }
            FormatArg::Sage => {
                for session in sage::sessions(&path)? {
                    threads.extend(sage::import_session(&session, &mut summary)?);
                }
            }
            FormatArg::Amp => {
                for file in import::json_files(&path)? {
                    threads.extend(amp::import_file(&file, &mut summary)?);
                }
            }
        }
    }
    if let Some(query) = &args.into {
        let target = grove::discovery::find_thread(&project, query)?;
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
    } else {
        let worktrees = worktree_roots(&project);
        for t in threads {
            let root = match &args.worktree {
                Some(w) => cwd.join(w),
                None => home_of(&t.meta.context.working_dir, &worktrees, &project),
            };
            let id = t.meta.thread_id.clone();
            summary
                .threads
                .push(import::write(&Store::for_project(&root), t)?);
            if root != project.main_root && worktrees.contains(&root) {
                keep_out_of_status(&root, &id)?;
            }
        }
    }
    for e in &summary.errors {
        out.warn(e);
    }
    if args.json {
        out.json(&summary)?;
    } else {
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
    }
    Ok(super::exit::SUCCESS)
}

/// Lists a thread imported into a linked worktree in grove's `info/exclude`
/// block, as `grove new` does for its own, so `git status` stays clean.
fn keep_out_of_status(worktree: &Path, id: &str) -> anyhow::Result<()> {
    use grove::worktree::exclude;
    let git = grove::gitcmd::Git::find()?;
    let file = exclude::exclude_file(&git, worktree)?;
    let rel = Path::new(grove::atsf::AGENT_DIR)
        .join(grove::atsf::THREADS_DIR)
        .join(id);
    exclude::add(&file, &[format!("{}/", exclude::pattern_for(&rel))])?;
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
