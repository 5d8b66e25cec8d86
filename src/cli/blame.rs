//! `grove blame`

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use grove::attribution::{Author, LineAnswer};
use grove::project::Project;

use super::Output;
use super::output::Style;

/// Each line of FILE like `git blame`: the commit, and who wrote it — the
/// agent (task, thread, message, tool call), exactly from turn snapshots or
/// inferred from tool calls, or a person (between turns, outside any task).
#[derive(clap::Args)]
pub struct Args {
    /// The file (relative to the current directory), inside the repository.
    file: PathBuf,

    /// Only lines START to END (1-based, inclusive), or line N.
    #[arg(short = 'L', value_name = "START,END")]
    lines: Option<String>,

    /// Print {path, lines: [{line, content, commit, author, basis, reason,
    /// threadId, title, branch, messageId, messageIndex, promptIndex,
    /// toolCallId, tool}]} (null where there is nothing to name).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let range = args.lines.as_deref().map(parse_range).transpose()?;
    let project = Project::discover(cwd)?;
    super::why::objects_unverified();
    let blame = grove::attribution::blame(&project, &args.file, range)
        .with_context(|| format!("blaming {}", args.file.display()))?;
    super::warn_skipped(out, &blame.skipped);
    if args.json {
        out.json(&Answer {
            path: &blame.path,
            lines: &blame.lines,
        })?;
    } else {
        print(out.style(), &blame.lines)?;
    }
    Ok(super::exit::SUCCESS)
}

/// What `--json` prints.
#[derive(serde::Serialize)]
struct Answer<'a> {
    path: &'a str,
    lines: &'a [LineAnswer],
}

/// `START,END` or `N`.
fn parse_range(text: &str) -> anyhow::Result<(usize, usize)> {
    let number = |s: &str| s.trim().parse::<usize>().ok().filter(|n| *n > 0);
    let range = match text.split_once(',') {
        Some((a, b)) => number(a).zip(number(b)),
        None => number(text).map(|n| (n, n)),
    };
    range.ok_or_else(|| {
        super::UsageError(format!(
            "-L {text:?}: expected START,END (line numbers from 1) or one line number"
        ))
        .into()
    })
}

/// One row per line: commit, author, thread, message, tool, basis, then
/// the line as `git blame` shows it.
fn print(style: Style, lines: &[LineAnswer]) -> anyhow::Result<()> {
    use unicode_width::UnicodeWidthStr;
    let rows: Vec<[String; 6]> = lines.iter().map(|l| columns(style, l)).collect();
    let mut widths = [0usize; 6];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let number_width = lines.last().map_or(1, |l| l.line.to_string().len());
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for (line, row) in lines.iter().zip(&rows) {
        let mut text = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            let painted = match (i, line.author) {
                (0, _) => style.yellow(cell),
                (1, Author::Agent) => style.cyan(cell),
                (1, Author::Person) => style.dim(cell),
                _ => cell.clone(),
            };
            text.push_str(&painted);
            text.push_str(&" ".repeat(width - cell.width() + 1));
        }
        writeln!(
            w,
            "{text}{:>number_width$}) {}",
            line.line,
            style.text(&line.content)
        )?;
    }
    w.flush()?;
    Ok(())
}

fn columns(style: Style, l: &LineAnswer) -> [String; 6] {
    let commit = l
        .commit
        .as_deref()
        .map_or("00000000".to_string(), |c| c.chars().take(8).collect());
    let named = |v: Option<&str>| v.map_or("-".to_string(), |t| style.text(t).into_owned());
    [
        commit,
        l.author.as_str().to_string(),
        named(l.thread_id.as_deref().map(super::output::short_id)),
        l.message_index.map_or("-".to_string(), |i| format!("#{i}")),
        named(l.tool.as_deref()),
        l.basis.as_str().to_string(),
    ]
}
