//! `grove search`

use std::io::Write;
use std::path::Path;

use grove::atsf::Role;
use grove::discovery::{self, Found, Options};
use grove::project::Project;
use grove::search::{self, Event, Query};

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
                    details: false,
                },
            )?;
            for e in &d.errors {
                out.warn(&format!("skipped a thread: {e}"));
            }
            d.threads
        }
    };
    let threads: Vec<_> = found.iter().map(|f| f.thread.clone()).collect();
    let mut p = Printer {
        w: std::io::BufWriter::with_capacity(256 * 1024, std::io::stdout()),
        json: args.json,
        style: out.style(),
        count: 0,
    };
    p.open()?;
    let mut current = None;
    search::search_in_order(&threads, &query, |i, event| {
        let f = &found[i];
        // The title first: a thread can be found by its name.
        if current != Some(i) {
            current = Some(i);
            let in_title = match query.has_role() {
                true => Vec::new(),
                false => query.find_in(&f.meta.title),
            };
            if !in_title.is_empty() {
                p.title_hit(f, &in_title)?;
            }
        }
        match event {
            Event::Hit(hit) => p.hit(f, &hit)?,
            Event::Malformed(e) => out.warn(&format!("skipped a malformed line: {e}")),
            Event::Failed(e) => out.warn(&format!("could not search {}: {e}", f.meta.thread_id)),
            Event::Done => {}
        }
        Ok(())
    })?;
    p.close()?;
    let count = p.count;
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

/// Hits as they are found: a JSON array written element by element, or one
/// line each.
struct Printer<W: Write> {
    w: W,
    json: bool,
    style: Style,
    count: usize,
}

impl<W: Write> Printer<W> {
    fn open(&mut self) -> std::io::Result<()> {
        if self.json {
            self.w.write_all(b"[")?;
        }
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        if self.json {
            self.w.write_all(b"\n]\n")?;
        }
        self.w.flush()
    }

    /// One JSON element, written straight from borrowed fields (a common
    /// word has a hit in every message: building a map for each was most
    /// of the search's time).
    fn emit_json(&mut self, row: &Row<'_>) -> std::io::Result<()> {
        if self.count > 0 {
            self.w.write_all(b",")?;
        }
        self.w.write_all(b"\n")?;
        serde_json::to_writer(&mut self.w, row)?;
        self.count += 1;
        Ok(())
    }

    fn emit_line(&mut self, line: &str) -> std::io::Result<()> {
        writeln!(self.w, "{line}")?;
        self.count += 1;
        Ok(())
    }

    fn title_hit(&mut self, f: &Found, matches: &[(usize, usize)]) -> std::io::Result<()> {
        if self.json {
            return self.emit_json(&Row {
                field: "title",
                index: None,
                line: &f.meta.title,
                matches,
                role: None,
                thread_dir: f.thread.dir(),
                thread_id: &f.meta.thread_id,
                timestamp: &f.meta.updated_at,
                title: &f.meta.title,
            });
        }
        let s = self.style;
        let line = format!(
            "{}  title  {}",
            s.yellow(&s.text(super::output::short_id(&f.meta.thread_id))),
            highlight(s, &f.meta.title, matches)
        );
        self.emit_line(&line)
    }

    fn hit(&mut self, f: &Found, hit: &search::Hit) -> std::io::Result<()> {
        if self.json {
            return self.emit_json(&Row {
                field: hit.field,
                index: Some(hit.index),
                line: &hit.line,
                matches: &hit.matches,
                role: Some(&hit.role),
                thread_dir: f.thread.dir(),
                thread_id: &f.meta.thread_id,
                timestamp: &hit.timestamp,
                title: &f.meta.title,
            });
        }
        let s = self.style;
        let line = format!(
            "{}  #{:<4} {:<6} {}  {}",
            s.yellow(&s.text(super::output::short_id(&f.meta.thread_id))),
            hit.index,
            hit.role.as_str(),
            s.dim(&s.text(&human_time(&hit.timestamp))),
            highlight(s, &hit.line, &hit.matches)
        );
        self.emit_line(&line)
    }
}

/// One hit as `--json` prints it (keys in alphabetical order, as they
/// always were).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    field: &'a str,
    index: Option<u64>,
    line: &'a str,
    matches: &'a [(usize, usize)],
    role: Option<&'a grove::atsf::Role>,
    thread_dir: &'a Path,
    thread_id: &'a str,
    timestamp: &'a str,
    title: &'a str,
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
