//! `grove search`

use std::io::Write;
use std::path::Path;

use grove::atsf::Role;
use grove::discovery::{self, Options};
use grove::project::Project;
use grove::search::{self, Query};

use super::Output;
use super::append::RoleArg;
use super::output::{Style, human_time};

/// Search the messages of every thread grove can find — the project's, its
/// worktrees', cached ones: text, thinking, tool names, inputs and outputs.
/// Prints thread, message index, role, time and the matching line.
/// Exits 1 when nothing matches (like grep).
#[derive(clap::Args)]
pub struct Args {
    /// Text to look for (a regular expression with --regex).
    query: String,

    /// QUERY is a regular expression (Rust regex syntax).
    #[arg(long, short = 'e')]
    regex: bool,

    /// Match case-insensitively.
    #[arg(long, short = 'i')]
    ignore_case: bool,

    /// Only messages of this role.
    #[arg(long, value_enum)]
    role: Option<RoleArg>,

    /// Only this thread (id or unique prefix).
    #[arg(long, value_name = "THREAD")]
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// Also other repositories' cached threads.
    #[arg(long)]
    all: bool,

    /// Print a JSON array of {threadId, title, threadDir, index, role, timestamp, field, line, matches}
    /// (a match in a title: field "title", index and role null).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let role: Option<Role> = args.role.map(Into::into);
    let query = Query::new(&args.query, args.regex, args.ignore_case, role)
        .map_err(|e| super::UsageError(e.to_string()))?;
    let project = Project::discover(cwd)?;
    let found = match &args.thread {
        Some(t) => vec![super::resolve(out, &project, t)?],
        None => {
            let d = discovery::discover(
                &project,
                Options {
                    all_repos: args.all,
                    statuses: false,
                },
            )?;
            for e in &d.errors {
                out.warn(&format!("skipped a thread: {e}"));
            }
            d.threads
        }
    };
    let threads: Vec<_> = found.iter().map(|f| f.thread.clone()).collect();
    let results = search::search_all(&threads, &query);
    let stdout = std::io::stdout().lock();
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, stdout);
    let style = out.style();
    let mut count = 0usize;
    if args.json {
        w.write_all(b"[")?;
    }
    for (f, result) in found.iter().zip(results) {
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                out.warn(&format!("could not search {}: {e}", f.meta.thread_id));
                continue;
            }
        };
        for e in &result.errors {
            out.warn(&format!("skipped a malformed line: {e}"));
        }
        // The title first: a thread can be found by its name.
        let in_title = if query.has_role() {
            Vec::new()
        } else {
            query.find_in(&f.meta.title)
        };
        if !in_title.is_empty() {
            if args.json {
                if count > 0 {
                    w.write_all(b",")?;
                }
                w.write_all(b"\n")?;
                serde_json::to_writer(
                    &mut w,
                    &serde_json::json!({
                        "threadId": f.meta.thread_id,
                        "title": f.meta.title,
                        "threadDir": f.thread.dir(),
                        "index": null,
                        "role": null,
                        "timestamp": f.meta.updated_at,
                        "field": "title",
                        "line": f.meta.title,
                        "matches": in_title,
                    }),
                )?;
            } else {
                writeln!(
                    w,
                    "{}  title  {}",
                    style.yellow(&style.text(super::output::short_id(&f.meta.thread_id))),
                    highlight(style, &f.meta.title, &in_title)
                )?;
            }
            count += 1;
        }
        for hit in &result.hits {
            if args.json {
                if count > 0 {
                    w.write_all(b",")?;
                }
                w.write_all(b"\n")?;
                serde_json::to_writer(
                    &mut w,
                    &serde_json::json!({
                        "threadId": f.meta.thread_id,
                        "title": f.meta.title,
                        "threadDir": f.thread.dir(),
                        "index": hit.index,
                        "role": hit.role,
                        "timestamp": hit.timestamp,
                        "field": hit.field,
                        "line": hit.line,
                        "matches": hit.matches,
                    }),
                )?;
            } else {
                let id = super::output::short_id(&f.meta.thread_id);
                writeln!(
                    w,
                    "{}  #{:<4} {:<6} {}  {}",
                    style.yellow(&style.text(id)),
                    hit.index,
                    hit.role.as_str(),
                    style.dim(&style.text(&human_time(&hit.timestamp))),
                    highlight(style, &hit.line, &hit.matches)
                )?;
            }
            count += 1;
        }
    }
    if args.json {
        w.write_all(b"\n]\n")?;
    }
    w.flush()?;
    if count == 0 {
        out.status(&format!(
            "grove: no match for {:?} in {} thread(s)",
            args.query,
            found.len()
        ));
        return Ok(super::exit::ERROR);
    }
    Ok(super::exit::SUCCESS)
}

/// The line (at most about 200 characters, around the first match) with
/// the matches in bold red.
fn highlight(s: Style, line: &str, matches: &[(usize, usize)]) -> String {
    const WIDTH: usize = 200;
    let (from, to) = if line.len() <= WIDTH {
        (0, line.len())
    } else {
        let first = matches.first().map_or(0, |m| m.0);
        let mut from = first.saturating_sub(WIDTH / 4);
        while !line.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (from + WIDTH).min(line.len());
        while !line.is_char_boundary(to) {
            to -= 1;
        }
        (from, to)
    };
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut pos = from;
    for &(a, b) in matches {
        if a < pos || b > to {
            continue;
        }
        out.push_str(&s.text(&line[pos..a]));
        out.push_str(&s.red(&s.bold(&s.text(&line[a..b]))));
        pos = b;
    }
    out.push_str(&s.text(&line[pos..to]));
    if to < line.len() {
        out.push('…');
    }
    out
}
