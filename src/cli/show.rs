//! `grove show`

use std::io::Write;
use std::path::Path;

use grove::Error;
use grove::atsf::{
    ContentBlock, Message, RelationKind, RelationRole, Role, ThreadMeta, ToolStatus,
};
use grove::discovery;
use grove::export::completions::Completions;
use grove::graph::Graph;
use grove::project::Project;

use super::Output;
use super::output::{Style, human_time};

/// Show a thread: its metadata and conversation.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Show the agent's thinking (dimmed); hidden by default.
    #[arg(long)]
    thinking: bool,

    /// Show tool inputs and outputs in full instead of their first lines.
    #[arg(long)]
    full: bool,

    /// Show the thread's family (forks, handoffs, subagents, mentions) as a
    /// tree instead of its messages; with --json, {"nodes", "edges"}.
    #[arg(long)]
    tree: bool,

    /// Keep printing messages as they are appended, until interrupted
    /// (with --json: one message per line, JSON Lines).
    #[arg(long, short = 'f', conflicts_with = "tree")]
    follow: bool,

    /// Print {"thread": ..., "messages": [...], "errors": [...]} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let thread = discovery::find_thread(&project, args.thread())?;
    catch_up(&thread, &project.main_root, out);
    let meta = thread.meta()?;
    // Titles and existence of related threads need a look at all threads;
    // a thread without relationships does not pay for it.
    let graph = if args.tree || !meta.relationships().is_empty() || meta.main_thread_id.is_some() {
        let found = discovery::discover(
            &project,
            discovery::Options {
                all_repos: true,
                statuses: args.tree,
                details: false,
            },
        )?;
        super::warn_skipped(out, &found.errors);
        Some(Graph::build(&found.threads))
    } else {
        None
    };
    if args.tree {
        let graph = graph.unwrap_or_default();
        let stdout = std::io::stdout().lock();
        let mut w = std::io::BufWriter::new(stdout);
        if args.json {
            // Only this thread's family.
            let family = graph.family_of(&meta.thread_id);
            serde_json::to_writer_pretty(&mut w, &family)?;
            w.write_all(b"\n")?;
        } else {
            let root = graph.root_of(&meta.thread_id).to_string();
            super::tree::write(
                &mut w,
                out.style(),
                &graph,
                &[root.as_str()],
                Some(&meta.thread_id),
                false,
            )?;
        }
        w.flush()?;
        return Ok(super::exit::SUCCESS);
    }
    if args.follow {
        return follow(&thread, &meta, graph.as_ref(), &project, &args, out);
    }
    let messages = thread.messages()?;
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, stdout);
    let mut errors = Vec::new();
    if args.json {
        // Streamed: a 100 MB log is never held in memory as a whole.
        w.write_all(b"{\"thread\":")?;
        serde_json::to_writer(&mut w, &meta)?;
        w.write_all(b",\"messages\":[")?;
        let mut first = true;
        for item in messages {
            match item {
                Ok(m) => {
                    if !first {
                        w.write_all(b",")?;
                    }
                    first = false;
                    serde_json::to_writer(&mut w, &m)?;
                }
                Err(e @ Error::Parse { .. }) => errors.push(e),
                Err(e) => return Err(e.into()),
            }
        }
        w.write_all(b"],\"errors\":")?;
        let errors_json: Vec<String> = errors.iter().map(ToString::to_string).collect();
        serde_json::to_writer(&mut w, &errors_json)?;
        w.write_all(b"}\n")?;
    } else {
        let style = out.style();
        write_header(&mut w, style, &meta, thread.dir(), &project.root)?;
        write_extensions(&mut w, style, &meta, graph.as_ref())?;
        // A call whose result came later is shown once, with its result.
        let mut completions = Completions::of(&thread)?;
        for (index, item) in messages.enumerate() {
            match item {
                Ok(m) => {
                    if let Some(m) = completions.shown(m) {
                        write_message(&mut w, style, index, &m, &args)?;
                    }
                }
                Err(e @ Error::Parse { .. }) => errors.push(e),
                Err(e) => return Err(e.into()),
            }
        }
    }
    w.flush()?;
    for e in &errors {
        out.warn(&format!("skipped a malformed line: {e}"));
    }
    Ok(super::exit::SUCCESS)
}

/// Brings in what a captured agent's transcript gained that the hooks did
/// not bring (an untrusted Codex project, a hook that could not run).
fn catch_up(thread: &grove::store::Thread, repo_root: &Path, out: &Output) -> bool {
    let Ok(meta) = thread.meta() else {
        return false;
    };
    // A session of the task's agent run by hand in its worktree.
    let adopted = match grove::capture::adopt::look(thread, &meta, repo_root) {
        Ok(a) => {
            for e in &a.problems {
                out.warn(&format!("capture: {e}"));
            }
            a
        }
        Err(e) => {
            out.warn(&format!("capture: {e}"));
            Default::default()
        }
    };
    let meta = if adopted.sessions > 0 {
        match thread.meta() {
            Ok(m) => m,
            Err(_) => return adopted.added > 0,
        }
    } else {
        meta
    };
    if !grove::capture::catchup::pending(repo_root, &meta) {
        return adopted.added > 0;
    }
    match grove::capture::catchup::catch_up(thread, repo_root) {
        Ok((n, errors)) => {
            for e in errors {
                out.warn(&format!("capture: {e}"));
            }
            adopted.added + n > 0
        }
        Err(e) => {
            out.warn(&format!("capture: {e}"));
            adopted.added > 0
        }
    }
}

/// `--follow`: the messages there are, then each one appended, within
/// [`FOLLOW_POLL`] of its line being complete. A line still being written
/// is waited for, never printed half.
fn follow(
    thread: &grove::store::Thread,
    meta: &ThreadMeta,
    graph: Option<&Graph>,
    project: &Project,
    args: &Args,
    out: &Output,
) -> anyhow::Result<u8> {
    use std::io::{Read, Seek};
    let checkout = &project.root;
    let path = thread.messages_path();
    let style = out.style();
    if !args.json {
        let mut w = std::io::stdout().lock();
        write_header(&mut w, style, meta, thread.dir(), checkout)?;
        write_extensions(&mut w, style, meta, graph)?;
        w.flush()?;
    }
    // The results already there are folded into their calls; one that
    // comes later, its call already shown, is shown as it comes.
    let mut completions = Completions::of(thread)?;
    let mut offset = 0u64;
    let mut pending: Vec<u8> = Vec::new();
    let mut index = 0usize;
    let mut line_no = 0u64;
    let mut last_capture = std::time::Instant::now();
    loop {
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(_) if !thread.dir().exists() => {
                out.status(&format!("grove: thread {} is gone", meta.thread_id));
                return Ok(super::exit::SUCCESS);
            }
            Err(_) => 0,
        };
        if len < offset {
            // Only a torn tail is ever cut (by a repair): it was never shown.
            offset = len;
            pending.clear();
        }
        if len > offset {
            let mut file = grove::fsutil::open_read(&path)?;
            file.seek(std::io::SeekFrom::Start(offset))?;
            let read = file.take(len - offset).read_to_end(&mut pending)?;
            offset += read as u64;
            let mut w = std::io::stdout().lock();
            while let Some(nl) = memchr::memchr(b'\n', &pending) {
                let line: Vec<u8> = pending.drain(..=nl).collect();
                line_no += 1;
                let bytes = &line[..line.len() - 1];
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match grove::atsf::parse_message_line(&path, line_no, bytes) {
                    Ok(m) if args.json => {
                        serde_json::to_writer(&mut w, &m)?;
                        w.write_all(b"\n")?;
                    }
                    Ok(m) => {
                        if let Some(m) = completions.shown(m) {
                            write_message(&mut w, style, index, &m, args)?;
                        }
                    }
                    Err(e) => out.warn(&format!("skipped a malformed line: {e}")),
                }
                index += 1;
            }
            w.flush()?;
        }
        // What the hooks did not bring, now and then.
        if last_capture.elapsed() >= std::time::Duration::from_millis(500) {
            last_capture = std::time::Instant::now();
            catch_up(thread, &project.main_root, out);
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// How often `--follow` looks for new lines.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(40);

/// `checkout`: the root of the checkout `show` runs in, where a path of
/// another machine is mapped through the thread's `relativeDir`.
fn write_header(
    w: &mut impl Write,
    s: Style,
    meta: &ThreadMeta,
    dir: &Path,
    checkout: &Path,
) -> std::io::Result<()> {
    writeln!(w, "{}", s.bold(&s.text(&meta.title)))?;
    writeln!(w, "{} {}", s.dim("id:     "), s.text(&meta.thread_id))?;
    writeln!(
        w,
        "{} {} ({})",
        s.dim("agent:  "),
        s.text(&meta.agent.name),
        s.text(&meta.agent.id)
    )?;
    writeln!(
        w,
        "{} {}   {} {}",
        s.dim("created:"),
        s.text(&human_time(&meta.created_at)),
        s.dim("updated:"),
        s.text(&human_time(&meta.updated_at))
    )?;
    if let Some(branch) = &meta.context.git_branch {
        let commit = meta.context.git_commit.as_deref().unwrap_or("");
        writeln!(
            w,
            "{} {} {}",
            s.dim("branch: "),
            s.text(branch),
            s.text(super::output::head(commit, 12))
        )?;
    }
    if let Some(wt) = &meta.context.worktree {
        // Kept as recorded: another machine's path (a pulled thread) or a
        // worktree since removed is said to be absent here.
        let absent = if Path::new(&wt.path).exists() {
            ""
        } else {
            " (not found on this machine)"
        };
        writeln!(
            w,
            "{} {}{}",
            s.dim("worktree:"),
            s.text(&wt.path),
            s.dim(absent)
        )?;
        if let (false, Some(rel)) = (absent.is_empty(), &meta.context.relative_dir) {
            let here = checkout.join(rel);
            writeln!(
                w,
                "{} {}",
                s.dim("here:    "),
                s.text(&here.display().to_string())
            )?;
        }
    }
    let st = &meta.stats;
    writeln!(
        w,
        "{} {} messages ({} user, {} agent), {} tool calls",
        s.dim("stats:  "),
        st.message_count,
        st.user_message_count,
        st.agent_message_count,
        st.tool_call_count
    )?;
    writeln!(
        w,
        "{} {}",
        s.dim("dir:    "),
        s.text(&dir.display().to_string())
    )?;
    Ok(())
}

/// Relationships, checkpoint and tags, when the thread has them.
fn write_extensions(
    w: &mut impl Write,
    s: Style,
    meta: &ThreadMeta,
    graph: Option<&Graph>,
) -> std::io::Result<()> {
    let name = |id: &str| -> String {
        let short = super::output::short_id(id);
        match graph.and_then(|g| g.node(id)) {
            Some(n) if n.exists => format!(
                "{} \"{}\"",
                s.text(short),
                s.text(n.title.as_deref().unwrap_or(""))
            ),
            _ => format!("{} {}", s.text(short), s.dim("(deleted)")),
        }
    };
    if meta.is_archived() {
        writeln!(w, "{} yes", s.dim("archived:"))?;
    }
    if let Some(main) = &meta.main_thread_id {
        writeln!(w, "{} {}", s.dim("subagent of:"), name(main))?;
    }
    for r in meta.relationships() {
        let relation = match (&r.kind, r.role) {
            (RelationKind::Fork, RelationRole::Child) => "forked from".to_string(),
            (RelationKind::Fork, RelationRole::Parent) => "forked to".to_string(),
            (RelationKind::Handoff, RelationRole::Child) => "handed off from".to_string(),
            (RelationKind::Handoff, RelationRole::Parent) => "handed off to".to_string(),
            (RelationKind::Mention, RelationRole::Child) => "mentions".to_string(),
            (RelationKind::Mention, RelationRole::Parent) => "mentioned by".to_string(),
            (kind, role) => format!("{} ({})", kind.as_str(), role.as_str()),
        };
        let at = r
            .message_index
            .map(|i| format!(" at #{i}"))
            .unwrap_or_default();
        let comment = r
            .comment
            .as_deref()
            .and_then(|c| c.lines().next())
            .map(|c| {
                s.dim(&format!(
                    " — {}",
                    s.text(&c.chars().take(80).collect::<String>())
                ))
            })
            .unwrap_or_default();
        writeln!(
            w,
            "{} {} {}{at}{comment}",
            s.dim("link:   "),
            s.magenta(&relation),
            name(&r.thread_id)
        )?;
    }
    let tags = meta.tags();
    if !tags.is_empty() {
        let tags: Vec<String> = tags.iter().map(|t| format!("#{t}")).collect();
        writeln!(
            w,
            "{} {}",
            s.dim("tags:   "),
            s.cyan(&s.text(&tags.join(" ")))
        )?;
    }
    if let Some(summary) = &meta.conversation_summary {
        writeln!(w, "{} {}", s.dim("summary:"), s.block(summary))?;
    }
    write_background_setup(w, s, meta)?;
    for step in meta.next_steps.iter().flatten() {
        writeln!(w, "{} {}", s.dim("next:   "), s.text(&step.text()))?;
    }
    if let Some(g) = &meta.git {
        let current = g.current_commit.as_deref().unwrap_or("");
        writeln!(
            w,
            "{} {} at {}, {} commit(s) since start{}{}",
            s.dim("checkpoint:"),
            s.text(&human_time(g.checkpointed_at.as_deref().unwrap_or(""))),
            s.text(super::output::head(current, 12)),
            g.commits_made.len(),
            if g.dirty { ", uncommitted changes" } else { "" },
            meta.files_touched
                .as_ref()
                .map(|f| format!(", {} file(s) touched", f.len()))
                .unwrap_or_default()
        )?;
        for c in &g.commits_made {
            writeln!(w, "            {}", s.text(c))?;
        }
    }
    Ok(())
}

/// One line per background setup command: how it stands, and its log.
fn write_background_setup(w: &mut impl Write, s: Style, meta: &ThreadMeta) -> std::io::Result<()> {
    use grove::atsf::grove::BackgroundState;
    for run in grove::worktree::background::runs(meta.grove()) {
        let state = match (run.state, run.exit_code) {
            (BackgroundState::Failed, Some(code)) => s.red(&format!("failed (exit code {code})")),
            (BackgroundState::Running, _) => s.yellow("running"),
            (BackgroundState::Ok, _) => s.green("ok"),
            (st, _) => s.red(st.as_str()),
        };
        let log = run
            .log_file
            .as_deref()
            .map(|l| s.dim(&format!(" — log {}", s.text(l))))
            .unwrap_or_default();
        writeln!(
            w,
            "{} {state} {}{log}",
            s.dim("setup:  "),
            s.text(&run.label)
        )?;
    }
    Ok(())
}

fn role_label(s: Style, role: &Role) -> String {
    match role {
        Role::User => s.cyan(&s.bold("user")),
        Role::Agent => s.green(&s.bold("agent")),
        Role::System => s.magenta(&s.bold("system")),
        // Another tool's role, shown as it is.
        Role::Other(other) => s.bold(&s.text(other)),
    }
}

fn write_message(
    w: &mut impl Write,
    s: Style,
    index: usize,
    m: &Message,
    args: &Args,
) -> std::io::Result<()> {
    writeln!(w)?;
    let model = m
        .model
        .as_deref()
        .map(|x| format!(" · {}", s.text(x)))
        .unwrap_or_default();
    writeln!(
        w,
        "── #{index} {} · {}{}",
        role_label(s, &m.role),
        s.dim(&s.text(&human_time(&m.timestamp))),
        s.dim(&model)
    )?;
    for block in &m.content {
        match block {
            ContentBlock::Text { text, .. } => writeln!(w, "{}", s.block(text))?,
            ContentBlock::Thinking { text, .. } => {
                if args.thinking {
                    for line in text.lines() {
                        writeln!(w, "{}", s.dim(&format!("│ {}", s.text(line))))?;
                    }
                } else {
                    writeln!(w, "{}", s.dim("[thinking hidden; --thinking shows it]"))?;
                }
            }
            ContentBlock::Image(img) => {
                let name = img.asset_ref.as_deref().unwrap_or("inline data");
                let mime = img.mime_type.as_deref().unwrap_or("unknown type");
                writeln!(
                    w,
                    "{}",
                    s.dim(&format!("[image: {}, {}]", s.text(name), s.text(mime)))
                )?;
            }
            ContentBlock::Unknown(_) => {
                writeln!(
                    w,
                    "{}",
                    s.dim(&format!("[{} block]", s.text(block.type_name())))
                )?;
            }
        }
    }
    for call in m.tool_calls.iter().flatten() {
        let status = match &call.status {
            ToolStatus::Completed => s.green(call.status.as_str()),
            ToolStatus::Failed => s.red(call.status.as_str()),
            ToolStatus::Pending | ToolStatus::Running => s.yellow(call.status.as_str()),
            // `in_progress` and the like: shown as written.
            ToolStatus::Other(other) => s.yellow(&s.text(other)),
        };
        let title = call
            .title
            .as_deref()
            .map(|t| format!(" {}", s.text(t)))
            .unwrap_or_default();
        writeln!(
            w,
            "  ⚙ {}{} [{}]",
            s.bold(&s.text(&call.name)),
            title,
            status
        )?;
        for (label, value) in [("in ", &call.input), ("out", &call.output)] {
            if let Some(v) = value {
                write_excerpt(w, s, label, v, args.full)?;
            }
        }
        if let Some(diff) = &call.diff {
            writeln!(w, "    {} {}", s.dim("diff"), s.text(&diff.path))?;
        }
    }
    if let Some(reason) = &m.stop_reason {
        writeln!(w, "{}", s.dim(&format!("[stop: {}]", s.text(reason))))?;
    }
    Ok(())
}

fn write_excerpt(
    w: &mut impl Write,
    s: Style,
    label: &str,
    text: &str,
    full: bool,
) -> std::io::Result<()> {
    const LINES: usize = 3;
    const WIDTH: usize = 160;
    let total = text.lines().count();
    let shown = if full { total } else { total.min(LINES) };
    for (i, line) in text.lines().take(shown).enumerate() {
        let line: String = if full {
            line.to_string()
        } else {
            line.chars().take(WIDTH).collect()
        };
        let prefix = if i == 0 { label } else { "   " };
        writeln!(w, "    {} {}", s.dim(prefix), s.text(&line))?;
    }
    if shown < total {
        writeln!(
            w,
            "    {}",
            s.dim(&format!("… {} more lines (--full)", total - shown))
        )?;
    }
    Ok(())
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
