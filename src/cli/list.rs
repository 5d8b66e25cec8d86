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
    /// Also list other repositories' cached threads.
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
enum SortKey {
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
        return watch(&args, &project, out);
    }
    let (text, warnings, note) = render(&args, &project, out)?;
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
fn watch(args: &Args, project: &Project, out: &Output) -> anyhow::Result<u8> {
    use std::io::IsTerminal;
    let terminal = std::io::stdout().is_terminal();
    let mut last = None;
    loop {
        let (mut text, _, note) = render(args, project, out)?;
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
    out: &Output,
) -> anyhow::Result<(String, Vec<String>, Option<String>)> {
    let found = discovery::discover(
        project,
        Options {
            all_repos: args.all,
            statuses: true,
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
        let rows = threads.iter().map(|f| row_json(f));
        if args.watch {
            serde_json::Serializer::new(&mut w).collect_seq(rows)?;
        } else {
            serde_json::Serializer::pretty(&mut w).collect_seq(rows)?;
        }
        w.write_all(b"\n")?;
    } else if threads.is_empty() {
        let hidden = all_threads.iter().filter(|f| f.meta.is_archived()).count();
        return Ok((String::new(), warnings, Some(empty_note(args, hidden))));
    } else {
        write_table(&mut w, args, &threads, out)?;
    }
    Ok((String::from_utf8(w)?, warnings, None))
}

/// The threads `args` asks for, in its order, at most `--limit`.
fn select<'a>(args: &Args, all: &'a [Found]) -> Vec<&'a Found> {
    let mut threads: Vec<&Found> = all
        .iter()
        .filter(|f| {
            (args.archived || !f.meta.is_archived())
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

/// One `--json` row.
fn row_json(f: &Found) -> serde_json::Value {
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
        "backgroundSetup": grove::worktree::background::runs(f.meta.grove()),
    })
}

/// ` (setup running)`, ` (setup failed)`: how the task's background setup
/// stands, when it is not all done well.
fn setup_mark(f: &Found) -> Option<String> {
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
fn empty_note(args: &Args, hidden: usize) -> String {
    if !args.tags.is_empty() {
        "grove: no thread has these tags".to_string()
    } else if !args.states.is_empty() {
        "grove: no task's agent is in that state".to_string()
    } else if hidden > 0 {
        format!("grove: only archived threads ({hidden}); `grove list --archived` shows them")
    } else {
        "grove: no threads yet; `grove new \"title\"` starts one".to_string()
    }
}

/// The table's column widths, fitted to the terminal.
struct Columns {
    id: usize,
    /// With `--all`, the repository column (and its gap).
    repo: usize,
    branch: usize,
    /// Some task has an agent state: the agent column is shown.
    agent: bool,
    /// Room for the title, tags and marks (none: not cut).
    title: Option<usize>,
}

impl Columns {
    fn fit(args: &Args, threads: &[&Found], ids: &[String]) -> Columns {
        use super::table::display_width;
        let agent = threads.iter().any(|f| state::current(&f.meta).is_some());
        // A longer id (one that is the start of another's) is cut.
        let id = ids
            .iter()
            .map(|i| display_width(i))
            .max()
            .unwrap_or(8)
            .min(ID_COLS);
        let repo = if args.all {
            let widest = threads.iter().map(|f| display_width(&repo_name(f))).max();
            widest.unwrap_or(0).min(REPO_COLS) + 2
        } else {
            0
        };
        let branch = threads
            .iter()
            .map(|f| display_width(f.branch.as_deref().unwrap_or("-")))
            .max()
            .unwrap_or(1)
            .min(BRANCH_COLS);
        // id, status, agent, age, message count, each with its gap.
        let fixed = id + 2 + repo + 7 + 2 + if agent { 14 } else { 0 } + 4 + 2 + 10 + 2;
        let width = super::table::width();
        // A narrow terminal narrows the branch column before the title's.
        let branch = match width {
            Some(w) => branch.min((w.saturating_sub(fixed) / 3).max(8)),
            None => branch,
        };
        Columns {
            id,
            repo,
            branch,
            agent,
            title: width.map(|w| w.saturating_sub(fixed + branch + 2).max(12)),
        }
    }
}

/// With `--all`, the repository a row is of.
fn repo_name(f: &Found) -> String {
    f.repo_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn write_table(
    w: &mut Vec<u8>,
    args: &Args,
    threads: &[&Found],
    out: &Output,
) -> anyhow::Result<()> {
    let ids: Vec<&str> = threads.iter().map(|f| f.meta.thread_id.as_str()).collect();
    let ids = super::table::unique_prefixes(&ids);
    let cols = Columns::fit(args, threads, &ids);
    for (f, id) in threads.iter().zip(&ids) {
        write_row(w, out.style(), f, id, &cols)?;
    }
    Ok(())
}

/// One task's row, then its checkpoint summary and next steps.
fn write_row(
    w: &mut Vec<u8>,
    s: super::output::Style,
    f: &Found,
    id: &str,
    cols: &Columns,
) -> anyhow::Result<()> {
    use super::table::{fit, pad};
    let status = match f.status.as_str() {
        st @ ("dirty" | "missing") => s.yellow(&format!("{st:<7}")),
        st @ "merged" => s.green(&format!("{st:<7}")),
        st @ "removed" => s.dim(&format!("{st:<7}")),
        st => format!("{st:<7}"),
    };
    let agent = match state::current(&f.meta) {
        Some(st) => {
            let cell = format!("{:<7} {:>4}  ", st.state.as_str(), age(&st.since));
            match st.state {
                AgentState::Waiting => s.yellow(&cell),
                AgentState::Working => s.green(&cell),
                _ => s.dim(&cell),
            }
        }
        None if cols.agent => " ".repeat(14),
        None => String::new(),
    };
    let repo = if cols.repo > 0 {
        pad(&fit(&s.text(&repo_name(f)), cols.repo - 2), cols.repo)
    } else {
        String::new()
    };
    let mut marks = String::new();
    if f.meta.is_archived() {
        marks.push_str(" (archived)");
    }
    if f.locked.is_some() {
        marks.push_str(" (locked)");
    }
    if let Some(setup) = setup_mark(f) {
        marks.push_str(&setup);
    }
    let tags: String = f
        .meta
        .tags()
        .iter()
        .map(|t| format!(" #{}", s.text(t)))
        .collect();
    let title = s.text(&f.meta.title);
    let (title, tags, marks) = match cols.title {
        Some(room) => fit_title(&title, &tags, &marks, room),
        None => (title.to_string(), tags, marks),
    };
    writeln!(
        w,
        "{}  {}{}  {}{}  {:>5} msgs  {}  {}{}{}",
        // An id too long for its column (a subagent's) is cut: it is
        // reached through its session's thread.
        s.yellow(&pad(&fit(&s.text(id), cols.id), cols.id)),
        s.cyan(&repo),
        status,
        agent,
        // How long ago, as the agent column says it: narrow and plain.
        s.dim(&format!("{:>4}", age(&f.meta.updated_at))),
        f.meta.stats.message_count,
        pad(
            &fit(&s.text(f.branch.as_deref().unwrap_or("-")), cols.branch),
            cols.branch
        ),
        title,
        s.cyan(&tags),
        s.dim(&marks)
    )?;
    if let Some(summary) = &f.meta.conversation_summary {
        let line = summary.lines().next().unwrap_or("");
        let short: String = line.chars().take(100).collect();
        writeln!(w, "{:10}{}", "", s.dim(&format!("↳ {}", s.text(&short))))?;
    }
    let next: Vec<String> = f
        .meta
        .next_steps
        .iter()
        .flatten()
        .map(grove::atsf::Note::text)
        .collect();
    if !next.is_empty() {
        writeln!(
            w,
            "{:10}{}",
            "",
            s.dim(&format!("next: {}", s.text(&next.join("; "))))
        )?;
    }
    Ok(())
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

/// The repository column's widest (`--all`).
const REPO_COLS: usize = 16;

/// The id column's widest.
const ID_COLS: usize = 16;

/// The branch column's widest.
const BRANCH_COLS: usize = 28;

/// The title, tags and marks in `room` columns: the marks kept, then the
/// tags, the title cut first.
fn fit_title(title: &str, tags: &str, marks: &str, room: usize) -> (String, String, String) {
    use super::table::{display_width, fit};
    let marks_w = display_width(marks);
    let tags_w = display_width(tags);
    if display_width(title) + tags_w + marks_w <= room {
        return (title.to_string(), tags.to_string(), marks.to_string());
    }
    let tags = if tags_w + marks_w + 8 <= room {
        tags.to_string()
    } else {
        String::new()
    };
    let left = room.saturating_sub(display_width(&tags) + marks_w).max(1);
    (fit(title, left), tags, marks.to_string())
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
