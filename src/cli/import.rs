//! `grove import`

use std::path::{Path, PathBuf};

use grove::import::{self, Destination, Summary};
use grove::project::Project;
use grove::store::Store;

use super::Output;

/// Bring other agent tools' conversations into ATSF threads. The source is
/// only read; importing it again appends only what is new (thread ids come
/// from the source's session ids), so an agent hook can run it every turn.
///
/// Exit codes: 0 when everything was imported; 4 when something was not
/// (a malformed line, a record kept as a placeholder, a session left out —
/// each named by file and line); 1 when nothing could be imported.
#[derive(clap::Args)]
pub struct Args {
    /// The source format.
    #[arg(value_parser = format_names())]
    format: String,

    /// Session files or directories, as the format lays them out; `-` reads
    /// one source from stdin. None: the agent's own store on this machine
    /// (claude, codex, gemini, opencode), this project's sessions only.
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

fn format_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        import::FORMATS
            .iter()
            .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about())),
    )
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let format = import::format(&args.format)
        .ok_or_else(|| super::UsageError(format!("no format {:?}", args.format)))?;
    let worktrees = worktree_roots(&project);
    let by_default = args.paths.is_empty();
    let destination = match (&args.into, &args.worktree) {
        (Some(query), _) => Destination::Into(grove::discovery::find_thread(&project, query)?),
        (None, Some(w)) => Destination::Root(cwd.join(w)),
        (None, None) => Destination::Route {
            default: project.root.clone(),
            worktrees: worktrees.clone(),
            only_these: by_default,
        },
    };
    if by_default {
        let mut roots = worktrees;
        roots.push(project.root.clone());
        let found = format.default_paths(&roots);
        if found.is_empty() {
            return Err(super::UsageError(format!(
                "give the path of what to import: grove finds no store of {} here by default \
                 ({})",
                format.name(),
                format.layout()
            ))
            .into());
        }
        let mut summary = import::run(format, &found, &destination)?;
        return finish(&project, &mut summary, args.json, out);
    }
    // `-`: the source comes on stdin (`amp threads export T-… | grove import amp -`).
    let stdin_copy = if args.paths.iter().any(|p| p.as_os_str() == "-") {
        Some(read_stdin()?)
    } else {
        None
    };
    let paths: Vec<PathBuf> = args
        .paths
        .iter()
        .map(|p| match &stdin_copy {
            Some((_, file)) if p.as_os_str() == "-" => file.clone(),
            _ => cwd.join(p),
        })
        .collect();
    let mut summary = import::run(format, &paths, &destination)?;
    drop(stdin_copy);
    finish(&project, &mut summary, args.json, out)
}

/// The threads cached, the summary reported, the exit code.
fn finish(
    project: &Project,
    summary: &mut import::Summary,
    json: bool,
    out: &Output,
) -> anyhow::Result<u8> {
    cache_worktree_threads(project, summary);
    report(summary, json, out)?;
    if !summary.complete() {
        out.warn(&format!(
            "{} thing(s) were not imported as they were (named above); the rest was",
            summary.errors.len()
        ));
        return Ok(super::exit::PARTIAL);
    }
    Ok(super::exit::SUCCESS)
}

/// Stdin, copied into a file of a temporary directory (kept while it lives).
fn read_stdin() -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    use std::io::Read;
    let dir = tempfile::Builder::new().prefix("grove-stdin-").tempdir()?;
    let file = dir.path().join("stdin");
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    std::fs::write(&file, bytes)?;
    Ok((dir, file))
}

/// Threads written into a linked worktree go to grove's cache at once.
fn cache_worktree_threads(project: &Project, summary: &mut Summary) {
    let mut problems = Vec::new();
    for t in &summary.threads {
        let Some(root) = t
            .thread_dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
        else {
            continue;
        };
        if let Ok(thread) = Store::for_project(root).thread(&t.thread_id)
            && let Err(e) = grove::discovery::cache_if_in_worktree(project, &thread)
        {
            problems.push(format!(
                "thread {} is not in grove's cache yet (the next `grove list` retries): {e}",
                t.thread_id
            ));
        }
    }
    summary.errors.extend(problems);
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
            "{}  {:<9} {:>4} new / {:>4} messages  {}",
            t.thread_id,
            match (t.created, t.messages_added) {
                (true, _) => "created",
                (false, 0) => "unchanged",
                (false, _) => "updated",
            },
            t.messages_added,
            t.message_count,
            t.title
        ))?;
    }
    let created = summary.threads.iter().filter(|t| t.created).count();
    let unchanged = summary
        .threads
        .iter()
        .filter(|t| !t.created && t.messages_added == 0)
        .count();
    let added: u64 = summary.threads.iter().map(|t| t.messages_added).sum();
    out.status(&format!(
        "grove: {} thread(s) imported: {created} created, {} updated, {unchanged} unchanged, {added} new message(s)",
        summary.threads.len(),
        summary.threads.len() - created - unchanged
    ));
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
