//! `grove show`

use std::io::Write;
use std::path::Path;

use grove::Error;
use grove::atsf::{ContentBlock, Message, Role, ThreadMeta, ToolStatus};

use super::Output;
use super::output::{Style, human_time};

/// Show a thread: its metadata and conversation.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it.
    thread: String,

    /// Show the agent's thinking (dimmed); hidden by default.
    #[arg(long)]
    thinking: bool,

    /// Show tool inputs and outputs in full instead of their first lines.
    #[arg(long)]
    full: bool,

    /// Print {"thread": ..., "messages": [...], "errors": [...]} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let thread = super::resolve_thread(cwd, &args.thread)?;
    let meta = thread.meta()?;
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
        write_header(&mut w, style, &meta, thread.dir())?;
        for (index, item) in messages.enumerate() {
            match item {
                Ok(m) => write_message(&mut w, style, index, &m, &args)?,
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

fn write_header(
    w: &mut impl Write,
    s: Style,
    meta: &ThreadMeta,
    dir: &Path,
) -> std::io::Result<()> {
    writeln!(w, "{}", s.bold(&meta.title))?;
    writeln!(w, "{} {}", s.dim("id:     "), meta.thread_id)?;
    writeln!(
        w,
        "{} {} ({})",
        s.dim("agent:  "),
        meta.agent.name,
        meta.agent.id
    )?;
    writeln!(
        w,
        "{} {}   {} {}",
        s.dim("created:"),
        human_time(&meta.created_at),
        s.dim("updated:"),
        human_time(&meta.updated_at)
    )?;
    if let Some(branch) = &meta.context.git_branch {
        let commit = meta.context.git_commit.as_deref().unwrap_or("");
        writeln!(
            w,
            "{} {} {}",
            s.dim("branch: "),
            branch,
            &commit[..commit.len().min(12)]
        )?;
    }
    if let Some(wt) = &meta.context.worktree {
        writeln!(w, "{} {}", s.dim("worktree:"), wt.path)?;
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
    writeln!(w, "{} {}", s.dim("dir:    "), dir.display())?;
    Ok(())
}

fn role_label(s: Style, role: Role) -> String {
    match role {
        Role::User => s.cyan(&s.bold("user")),
        Role::Agent => s.green(&s.bold("agent")),
        Role::System => s.magenta(&s.bold("system")),
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
        .map(|x| format!(" · {x}"))
        .unwrap_or_default();
    writeln!(
        w,
        "── #{index} {} · {}{}",
        role_label(s, m.role),
        s.dim(&human_time(&m.timestamp)),
        s.dim(&model)
    )?;
    for block in &m.content {
        match block {
            ContentBlock::Text { text, .. } => writeln!(w, "{text}")?,
            ContentBlock::Thinking { text, .. } => {
                if args.thinking {
                    for line in text.lines() {
                        writeln!(w, "{}", s.dim(&format!("│ {line}")))?;
                    }
                } else {
                    writeln!(w, "{}", s.dim("[thinking hidden; --thinking shows it]"))?;
                }
            }
            ContentBlock::Image(img) => {
                let name = img.asset_ref.as_deref().unwrap_or("inline data");
                let mime = img.mime_type.as_deref().unwrap_or("unknown type");
                writeln!(w, "{}", s.dim(&format!("[image: {name}, {mime}]")))?;
            }
            ContentBlock::Unknown(_) => {
                writeln!(w, "{}", s.dim(&format!("[{} block]", block.type_name())))?;
            }
        }
    }
    for call in m.tool_calls.iter().flatten() {
        let status = match call.status {
            ToolStatus::Completed => s.green(call.status.as_str()),
            ToolStatus::Failed => s.red(call.status.as_str()),
            ToolStatus::Pending | ToolStatus::Running => s.yellow(call.status.as_str()),
        };
        let title = call
            .title
            .as_deref()
            .map(|t| format!(" {t}"))
            .unwrap_or_default();
        writeln!(w, "  ⚙ {}{} [{}]", s.bold(&call.name), title, status)?;
        for (label, value) in [("in ", &call.input), ("out", &call.output)] {
            if let Some(v) = value {
                write_excerpt(w, s, label, v, args.full)?;
            }
        }
        if let Some(diff) = &call.diff {
            writeln!(w, "    {} {}", s.dim("diff"), diff.path)?;
        }
    }
    if let Some(reason) = &m.stop_reason {
        writeln!(w, "{}", s.dim(&format!("[stop: {reason}]")))?;
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
        writeln!(w, "    {} {}", s.dim(prefix), line)?;
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
