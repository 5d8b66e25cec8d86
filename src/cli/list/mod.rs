//! `grove list`

use std::io::Write;
use std::path::{Path, PathBuf};

use grove::capture::adopt;
use grove::capture::state::{self, AgentState};
use grove::discovery::{self, Found, Options, Status};
use grove::graph::Graph;
use grove::project::Project;
use serde_json::json;

use super::Output;

mod table;

/// List threads, newest first: the project's own, those of every worktree of
/// the repository, and cached ones whose worktree was removed.
///
/// Status: local (no worktree), live, dirty (uncommitted changes), merged
/// (branch integrated into the default branch), missing (worktree directory
/// gone), removed (kept in grove's cache). Agent: working, waiting (for
/// you), idle or exited, and since when, for tasks whose agent is captured.
/// Reads only thread.json files (and catches up captured sessions whose
/// transcript grew).
#[derive(clap::Args)]
pub struct Args {
    /// Every thread: removed tasks too, and other repositories' threads.
    #[arg(long)]
    all: bool,

    /// Include archived threads.
    #[arg(long)]
    archived: bool,

    /// Only threads tagged TAG (by `grove checkpoint --tag`); repeat to require several.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,

    /// Show forks, handoffs, subagents and mentions as a tree (JSON: nodes and edges).
    #[arg(long)]
    tree: bool,

    /// Only tasks whose agent is in STATE (working, waiting, idle, exited); repeat for several.
    #[arg(long = "state", value_name = "STATE", value_parser = parse_state)]
    states: Vec<AgentState>,

    /// Only threads with status STATUS (local, live, dirty, merged, missing,
    /// removed); repeat for several.
    #[arg(long = "status", value_name = "STATUS", value_parser = parse_status)]
    statuses: Vec<Status>,

    /// Only threads of agent AGENT (its id: claude-code, codex…).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,

    /// Show at most N threads (after filtering and sorting).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,

    /// Order: updated (the latest activity first: messages, checkpoints,
    /// creation, import), created (newest first) or title.
    #[arg(long, value_enum, default_value = "updated")]
    sort: SortKey,

    /// Redraw the table whenever it changes, until interrupted (JSON: one
    /// array per line).
    #[arg(long, conflicts_with = "tree")]
    watch: bool,

    /// Print a JSON array of threads.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SortKey {
    Updated,
    Created,
    Title,
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(s)
        .ok_or_else(|| format!("{s:?}: one of local, live, dirty, merged, missing, removed"))
}

fn parse_state(s: &str) -> Result<AgentState, String> {
    AgentState::parse(s).ok_or_else(|| format!("{s:?}: one of working, waiting, idle, exited"))
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    if args.watch {
        return watch(&args, &project, cwd, out);
    }
    let (text, warnings, note) = render(&args, &project, cwd, out)?;
    for w in &warnings {
        out.warn(w);
    }
    if let Some(note) = note {
        out.status(&note);
    }
    let mut w = std::io::stdout().lock();
    w.write_all(text.as_bytes())?;
    w.flush()?;
    Ok(super::exit::SUCCESS)
}

/// `--watch`: the table again whenever it changes. On a terminal the screen
/// is redrawn; piped, each new table follows the last.
fn watch(args: &Args, project: &Project, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    let mut last = None;
    loop {
        let (mut text, _, note) = render(args, project, cwd, out)?;
        if let Some(note) = note {
            text.push_str(&note);
            text.push('\n');
        }
        if last.as_ref() != Some(&text) {
            let mut w = std::io::stdout().lock();
            if terminal {
                w.write_all(b"\x1b[H\x1b[2J")?;
            } else if last.is_some() && !args.json {
                w.write_all(b"\n")?;
            }
            w.write_all(text.as_bytes())?;
            w.flush()?;
            last = Some(text);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The threads as text (a table, a tree, JSON), what to warn about, and a
/// note when no thread is shown.
fn render(
    args: &Args,
    project: &Project,
    cwd: &Path,
    out: &Output,
) -> anyhow::Result<(String, Vec<String>, Option<String>)> {
    let found = discovery::discover(
        project,
        Options {
            all_repos: args.all,
            statuses: true,
            // The tree shows no worktree's changes: not worth a diff.
            details: !args.tree,
        },
    )?;
    let mut warnings: Vec<String> = found
        .errors
        .iter()
        .map(|e| format!("skipped: {e}"))
        .collect();
    let mut all_threads = found.threads;
    warnings.extend(catch_up(&mut all_threads));
    let threads = select(args, &all_threads);
    let mut w: Vec<u8> = Vec::new();
    if args.tree {
        write_tree(&mut w, args, &all_threads, out)?;
    } else if args.json {
        // One row at a time: the rows of 10,000 threads are never all held
        // as JSON values at once.
        use serde::Serializer;
        let current = table::current_worktree(&threads, cwd);
        let rows = threads.iter().map(|f| row_json(f, current));
        if args.watch {
            serde_json::Serializer::new(&mut w).collect_seq(rows)?;
        } else {
            serde_json::Serializer::pretty(&mut w).collect_seq(rows)?;
        }
        w.write_all(b"\n")?;
    } else if threads.is_empty() {
        return Ok((
            String::new(),
            warnings,
            Some(empty_note(args, &all_threads)),
        ));
    } else {
        let ctx = table::Context {
            sort: args.sort,
            all: args.all,
            cwd,
            width: super::table::width(),
        };
        table::write(&mut w, out.style(), &threads, &ctx)?;
    }
    Ok((String::from_utf8(w)?, warnings, None))
}

/// The threads `args` asks for, in its order, at most `--limit`.
fn select<'a>(args: &Args, all: &'a [Found]) -> Vec<&'a Found> {
    let mut threads: Vec<&Found> = all
        .iter()
        .filter(|f| {
            (args.archived || !f.meta.is_archived())
                && shows_removed(args, f)
                && {
                    let tags = f.meta.tags();
                    args.tags.iter().all(|t| tags.contains(t))
                }
                && (args.states.is_empty()
                    || state::current(&f.meta).is_some_and(|s| args.states.contains(&s.state)))
                && (args.statuses.is_empty() || args.statuses.contains(&f.status))
                && args.agent.as_ref().is_none_or(|a| *a == f.meta.agent.id)
        })
        .collect();
    match args.sort {
        // Discovery lists by the latest activity already.
        SortKey::Updated => {}
        SortKey::Created => threads.sort_by_cached_key(|f| {
            std::cmp::Reverse(f.meta.created_at.parse::<jiff::Timestamp>().ok())
        }),
        SortKey::Title => threads.sort_by_cached_key(|f| f.meta.title.to_lowercase()),
    }
    if let Some(n) = args.limit {
        threads.truncate(n);
    }
    threads
}

/// Whether `f` is shown as far as removal goes: a removed task only with
/// `--all` or `--status removed`.
fn shows_removed(args: &Args, f: &Found) -> bool {
    f.status != Status::Removed || args.all || args.statuses.contains(&Status::Removed)
}

/// `--tree`: the whole graph, so a hidden thread in the middle of a family
/// is not shown as deleted; archived threads alone are left out.
fn write_tree(w: &mut Vec<u8>, args: &Args, all: &[Found], out: &Output) -> anyhow::Result<()> {
    let graph = Graph::build(all);
    if args.json {
        serde_json::to_writer_pretty(&mut *w, &graph)?;
        w.write_all(b"\n")?;
        return Ok(());
    }
    let roots: Vec<&str> = graph
        .roots()
        .into_iter()
        .filter(|n| n.exists)
        .filter(|n| args.archived || !n.archived || !graph.children_of(&n.thread_id).is_empty())
        .map(|n| n.thread_id.as_str())
        .collect();
    super::tree::write(w, out.style(), &graph, &roots, None, true)?;
    Ok(())
}

/// One `--json` row (its schema: `docs/schemas/list-row.schema.json`).
fn row_json(f: &Found, current: Option<&Path>) -> serde_json::Value {
    let details = f.details.as_ref();
    json!({
        "threadId": f.meta.thread_id,
        "title": f.meta.title,
        "status": f.status,
        "createdAt": f.meta.created_at,
        "updatedAt": f.meta.updated_at,
        "agent": f.meta.agent.id,
        "stats": f.meta.stats,
        "branch": f.branch,
        "worktreePath": f.worktree,
        "locked": f.locked.is_some(),
        "threadDir": f.thread.dir(),
        "repoRoot": f.repo_root,
        "archived": f.meta.is_archived(),
        "tags": f.meta.tags(),
        "originThreadID": f.meta.origin(),
        "mainThreadID": f.meta.main_thread_id,
        "relationships": f.meta.relationships(),
        "conversationSummary": f.meta.conversation_summary,
        "nextSteps": f.meta.next_steps,
        "git": f.meta.git,
        "agentState": state::current(&f.meta),
        "integrated": f.integration,
        "current": current.is_some() && f.worktree.as_deref() == current,
        "lastActivity": discovery::last_activity(f).map(|t| t.to_string()),
        "uncommitted": details.and_then(|d| d.uncommitted),
        "aheadBehind": details.and_then(|d| d.divergence.as_ref()),
        "lastCommit": details.and_then(|d| d.head.as_ref()),
        "backgroundSetup": grove::worktree::background::runs(f.meta.grove()),
    })
}

/// ` (setup running)`, ` (setup failed)`: how the task's background setup
/// stands, when it is not all done well.
pub(super) fn setup_mark(f: &Found) -> Option<String> {
    use grove::atsf::grove::BackgroundState;
    let runs = grove::worktree::background::runs(f.meta.grove());
    let worst = if runs.iter().any(|r| r.state == BackgroundState::Running) {
        "running"
    } else if runs.iter().any(|r| r.state != BackgroundState::Ok) {
        "failed"
    } else {
        return None;
    };
    Some(format!(" (setup {worst})"))
}

/// What to say when no row is shown.
fn empty_note(args: &Args, all: &[Found]) -> String {
    let archived = all.iter().filter(|f| f.meta.is_archived()).count();
    let removed = all.iter().filter(|f| !shows_removed(args, f)).count();
    if !args.tags.is_empty() {
        "grove: no thread has these tags".to_string()
    } else if !args.states.is_empty() {
        "grove: no task's agent is in that state".to_string()
    } else if removed > 0 {
        format!("grove: only removed tasks ({removed}); `grove list --all` shows them")
    } else if archived > 0 {
        format!("grove: only archived threads ({archived}); `grove list --archived` shows them")
    } else {
        "grove: no threads yet; `grove new \"title\"` starts one".to_string()
    }
}

/// With `--all`, the repository a row is of.
fn repo_name(f: &Found) -> String {
    f.repo_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Captures what the hooks missed for the listed tasks (a transcript that
/// grew since its last capture; a session of the task's agent run by hand
/// in its worktree, looked for once per worktree), and reads their
/// thread.json again.
fn catch_up(threads: &mut [Found]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut looked = std::collections::HashSet::new();
    let cache_root = grove::home::cache_root().unwrap_or_default();
    // Each repository's ledger listed once: most threads have no session
    // recorded, and nothing is opened for them.
    let mut captured: std::collections::HashMap<PathBuf, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    for f in threads.iter_mut() {
        if f.from_cache || f.thread.dir().starts_with(&cache_root) {
            continue;
        }
        if let Some((_, worktree)) = adopt::task_agent(&f.thread, &f.meta, &f.repo_root)
            && looked.insert(worktree)
        {
            match adopt::look(&f.thread, &f.meta, &f.repo_root) {
                Ok(a) => {
                    if a.sessions > 0
                        && let Some(ids) = captured.get_mut(&f.repo_root)
                    {
                        ids.insert(f.meta.thread_id.clone());
                    }
                    if a.sessions > 0
                        && let Ok(meta) = f.thread.meta()
                    {
                        f.meta = meta;
                        f.written = None;
                    }
                    warnings.extend(
                        a.problems
                            .into_iter()
                            .map(|e| format!("thread {}: capture: {e}", f.meta.thread_id)),
                    );
                }
                Err(e) => warnings.push(format!("thread {}: capture: {e}", f.meta.thread_id)),
            }
        }
        let has_sessions = captured
            .entry(f.repo_root.clone())
            .or_insert_with(|| grove::capture::ledger::threads_with_sessions(&f.repo_root))
            .contains(&f.meta.thread_id);
        if !has_sessions || !grove::capture::catchup::pending(&f.repo_root, &f.meta) {
            continue;
        }
        match grove::capture::catchup::catch_up(&f.thread, &f.repo_root) {
            Ok((_, errors)) => warnings.extend(
                errors
                    .into_iter()
                    .map(|e| format!("thread {}: capture: {e}", f.meta.thread_id)),
            ),
            Err(e) => warnings.push(format!("thread {}: capture: {e}", f.meta.thread_id)),
        }
        if let Ok(meta) = f.thread.meta() {
            f.meta = meta;
            f.written = None;
        }
    }
    warnings
}

/// How long ago `since` was, in one unit: `42s`, `5m`, `3h`, `2d`.
pub(super) fn age(since: &str) -> String {
    let Ok(t) = since.parse::<jiff::Timestamp>() else {
        return "?".into();
    };
    let secs = (jiff::Timestamp::now() - t).get_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}
