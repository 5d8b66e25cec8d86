//! `grove list`'s table: a header, then a row per thread — the current
//! task marked `@`, then id, status, agent state, last activity,
//! uncommitted lines, ahead/behind the default branch, messages, branch,
//! last commit and title — fitted to the width by dropping the least
//! useful columns first, never by wrapping.

use std::io::Write;
use std::path::Path;

use grove::capture::state::{self, AgentState};
use grove::discovery::{Found, Status};

use super::super::output::Style;
use super::super::table::{Spec, display_width, fit, fit_widths, pad, unique_prefixes};
use super::{SortKey, age, repo_name};

/// Columns between two columns.
const GAP: usize = 2;

/// The id column's widest.
const ID_COLS: usize = 16;

/// The title's narrowest before other columns are dropped: a title cut
/// shorter says too little (the row then drops the branch, the commit…).
const TITLE_MIN: usize = 20;

/// The repository column's widest (`--all`).
const REPO_COLS: usize = 16;

/// How a cell is coloured once cut and padded.
#[derive(Clone, Copy)]
enum Paint {
    Plain,
    Yellow,
    Green,
    Cyan,
    Dim,
    /// `+3 -1 ?2`, `↑2 ↓1`: each word by its sign.
    Signs,
    /// `3h Fix the bug`: the age dim.
    Commit,
}

/// A column: its header, its cells, and how it fits.
struct Column {
    header: String,
    cells: Vec<String>,
    paint: Vec<Paint>,
    right: bool,
    /// The narrowest it may be cut to, when below its widest cell.
    min: usize,
    drop: u8,
    grow: u8,
    /// Shown even when every cell is empty.
    always: bool,
}

impl Column {
    fn new(header: &str, drop: u8) -> Column {
        Column {
            header: header.to_string(),
            cells: Vec::new(),
            paint: Vec::new(),
            right: false,
            min: usize::MAX,
            drop,
            grow: u8::MAX,
            always: false,
        }
    }

    fn always(mut self) -> Column {
        self.always = true;
        self
    }

    /// Cut down to `min` columns, widened before the columns of a higher
    /// `grow`.
    fn cut(mut self, min: usize, grow: u8) -> Column {
        self.min = min;
        self.grow = grow;
        self
    }

    fn right(mut self) -> Column {
        self.right = true;
        self
    }

    fn push(&mut self, text: String, paint: Paint) {
        self.cells.push(text);
        self.paint.push(paint);
    }

    fn spec(&self) -> Spec {
        let natural = self
            .cells
            .iter()
            .map(|c| display_width(c))
            .chain([display_width(&self.header)])
            .max()
            .unwrap_or(0);
        Spec {
            natural,
            min: self.min.min(natural),
            drop: self.drop,
            grow: self.grow,
        }
    }

    /// Whether any row has something to show in it.
    fn has_content(&self) -> bool {
        self.cells.iter().any(|c| !c.is_empty())
    }
}

/// What the table shows besides the threads.
pub(super) struct Context<'a> {
    pub sort: SortKey,
    /// `--all`: the repository column.
    pub all: bool,
    /// The directory grove runs in: its task is marked.
    pub cwd: &'a Path,
    pub width: Option<usize>,
}

/// The table of `threads`, header first.
pub(super) fn write(
    w: &mut Vec<u8>,
    s: Style,
    threads: &[&Found],
    ctx: &Context<'_>,
) -> anyhow::Result<()> {
    let columns = columns(s, threads, ctx);
    let titles = titles(s, threads);
    let mut specs: Vec<Spec> = columns.iter().map(Column::spec).collect();
    specs.push(titles.spec());
    let widths = fit_widths(&specs, ctx.width, GAP);
    let (widths, title_width) = widths.split_at(columns.len());
    let title_width = title_width[0].unwrap_or(0);
    let header = s.dim(&fit(&titles.header, title_width.max(1)));
    write_line(w, s, &columns, widths, None, &header)?;
    for (row, f) in threads.iter().enumerate() {
        let title = titles.cell(s, row, title_width, ctx.width.is_some());
        write_line(w, s, &columns, widths, Some(row), &title)?;
        write_notes(w, s, f, ctx.width)?;
    }
    Ok(())
}

/// One line — the header's (`row` `None`) or a row's: each shown column's
/// cell cut and padded, then the title, already fitted.
fn write_line(
    w: &mut Vec<u8>,
    s: Style,
    columns: &[Column],
    widths: &[Option<usize>],
    row: Option<usize>,
    title: &str,
) -> anyhow::Result<()> {
    let mut out = String::new();
    for (col, width) in columns.iter().zip(widths) {
        let Some(width) = *width else { continue };
        let (text, paint) = match row {
            None => (col.header.as_str(), Paint::Dim),
            Some(r) => (col.cells[r].as_str(), col.paint[r]),
        };
        let cut = fit(text, width);
        let padded = if col.right {
            format!(
                "{}{cut}",
                " ".repeat(width.saturating_sub(display_width(&cut)))
            )
        } else {
            pad(&cut, width)
        };
        out.push_str(&paint_cell(s, paint, &padded));
        out.push_str(&" ".repeat(GAP));
    }
    out.push_str(title);
    writeln!(w, "{}", out.trim_end())?;
    Ok(())
}

fn paint_cell(s: Style, paint: Paint, text: &str) -> String {
    match paint {
        Paint::Plain => text.to_string(),
        Paint::Yellow => s.yellow(text),
        Paint::Green => s.green(text),
        Paint::Cyan => s.cyan(text),
        Paint::Dim => s.dim(text),
        Paint::Signs => paint_words(text, |word| match word.chars().next() {
            Some('+' | '↑') => s.green(word),
            Some('-' | '↓') => s.red(word),
            Some('?') => s.dim(word),
            _ => word.to_string(),
        }),
        Paint::Commit => match text.split_once(' ') {
            Some((age, rest)) if !age.is_empty() => format!("{} {rest}", s.dim(age)),
            _ => text.to_string(),
        },
    }
}

/// `text` with each space-separated word painted by `paint`, the spaces
/// (padding included) kept.
fn paint_words(text: &str, paint: impl Fn(&str) -> String) -> String {
    text.split(' ')
        .map(|word| {
            if word.is_empty() {
                String::new()
            } else {
                paint(word)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every column but the title's, those no row fills left out.
fn columns(s: Style, threads: &[&Found], ctx: &Context<'_>) -> Vec<Column> {
    let ids: Vec<&str> = threads.iter().map(|f| f.meta.thread_id.as_str()).collect();
    let ids = unique_prefixes(&ids);
    let current = current_worktree(threads, ctx.cwd);
    let target = threads
        .iter()
        .find_map(|f| f.details.as_ref()?.divergence.as_ref())
        .map(|d| short_ref(&d.target).to_string())
        .unwrap_or_else(|| "main".into());
    let mut marker = Column::new("", 0);
    // An id too long for its column (a subagent's) is cut: it is reached
    // through its session's thread.
    let mut id = Column::new("ID", 0).cut(8, 0).always();
    let mut repo = Column::new("REPO", 5).cut(4, 3);
    let mut status = Column::new("STATUS", 0).always();
    let mut agent = Column::new("AGENT", 2);
    let mut activity = Column::new(
        if ctx.sort == SortKey::Created {
            "CREATED"
        } else {
            "AGE"
        },
        1,
    )
    .right()
    .always();
    let mut changes = Column::new("HEAD±", 3).right();
    let mut divergence = Column::new(&format!("{target}↕"), 4).right();
    let mut messages = Column::new("MSGS", 8).right().always();
    let mut branch = Column::new("BRANCH", 7).cut(8, 4).always();
    let mut commit = Column::new("COMMIT", 6).cut(12, 2);
    for (f, short) in threads.iter().zip(&ids) {
        let here = current.is_some() && f.worktree.as_deref() == current;
        marker.push(if here { "@" } else { "" }.into(), Paint::Green);
        id.push(fit(&s.text(short), ID_COLS), Paint::Yellow);
        repo.push(
            if ctx.all {
                fit(&s.text(&repo_name(f)), REPO_COLS)
            } else {
                String::new()
            },
            Paint::Cyan,
        );
        status.push(f.status.as_str().into(), status_paint(f.status));
        let (state, paint) = agent_cell(f);
        agent.push(state, paint);
        activity.push(age_of(f, ctx.sort), Paint::Dim);
        changes.push(changes_cell(f), Paint::Signs);
        divergence.push(divergence_cell(f), Paint::Signs);
        messages.push(f.meta.stats.message_count.to_string(), Paint::Plain);
        branch.push(
            s.text(f.branch.as_deref().unwrap_or("-")).into_owned(),
            Paint::Plain,
        );
        commit.push(commit_cell(s, f), Paint::Commit);
    }
    [
        marker, id, repo, status, agent, activity, changes, divergence, messages, branch, commit,
    ]
    .into_iter()
    .filter(|c| c.always || c.has_content())
    .collect()
}

/// The worktree holding `cwd`, among the live ones listed (the deepest,
/// when one holds another). Git gives worktree paths resolved, so `cwd` is
/// resolved once and the paths compared as they are.
pub(super) fn current_worktree<'a>(threads: &[&'a Found], cwd: &Path) -> Option<&'a Path> {
    let resolved = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    threads
        .iter()
        // Found in a worktree that exists (no `stat` per row, as
        // `live_worktree` makes).
        .filter(|f| {
            !f.from_cache && matches!(f.status, Status::Live | Status::Dirty | Status::Merged)
        })
        .filter_map(|f| f.worktree.as_deref())
        .filter(|wt| resolved.starts_with(wt) || cwd.starts_with(wt))
        .max_by_key(|wt| wt.as_os_str().len())
}

fn status_paint(status: Status) -> Paint {
    match status {
        Status::Dirty | Status::Missing => Paint::Yellow,
        Status::Merged => Paint::Green,
        Status::Removed => Paint::Dim,
        _ => Paint::Plain,
    }
}

/// `working 2m`: the agent's state and since when.
fn agent_cell(f: &Found) -> (String, Paint) {
    let Some(st) = state::current(&f.meta) else {
        return (String::new(), Paint::Plain);
    };
    let paint = match st.state {
        AgentState::Waiting => Paint::Yellow,
        AgentState::Working => Paint::Green,
        _ => Paint::Dim,
    };
    (format!("{} {}", st.state.as_str(), age(&st.since)), paint)
}

/// How long ago the thread's sort key was: its last activity (what the
/// rows are ordered by), or its creation with `--sort created`.
fn age_of(f: &Found, sort: SortKey) -> String {
    match sort {
        SortKey::Created => age(&f.meta.created_at),
        _ => grove::discovery::last_activity(f)
            .map(|t| age(&t.to_string()))
            .unwrap_or_else(|| age(&f.meta.updated_at)),
    }
}

/// `+12 -3 ?2`: uncommitted lines added and removed, untracked files.
fn changes_cell(f: &Found) -> String {
    let Some(u) = f.details.as_ref().and_then(|d| d.uncommitted) else {
        return String::new();
    };
    let mut words = Vec::new();
    if u.added > 0 || u.removed > 0 || u.files > 0 {
        words.push(format!("+{} -{}", u.added, u.removed));
    }
    if u.untracked > 0 {
        words.push(format!("?{}", u.untracked));
    }
    words.join(" ")
}

/// `↑2 ↓1`: commits ahead of and behind the default branch, zeros left out.
fn divergence_cell(f: &Found) -> String {
    let Some(d) = f.details.as_ref().and_then(|d| d.divergence.as_ref()) else {
        return String::new();
    };
    let mut words = Vec::new();
    if d.ahead > 0 {
        words.push(format!("↑{}", d.ahead));
    }
    if d.behind > 0 {
        words.push(format!("↓{}", d.behind));
    }
    words.join(" ")
}

/// `3h Fix the redirect`: how long ago the branch's commit was made, and
/// its subject.
fn commit_cell(s: Style, f: &Found) -> String {
    match f.details.as_ref().and_then(|d| d.head.as_ref()) {
        Some(c) => format!("{} {}", age(&c.time), s.text(&c.subject)),
        None => String::new(),
    }
}

/// `refs/heads/main` → `main`.
fn short_ref(target: &str) -> &str {
    target
        .strip_prefix("refs/heads/")
        .or_else(|| target.strip_prefix("refs/remotes/"))
        .unwrap_or(target)
}

/// The title column: each row's title, tags and marks, cut together.
struct Titles {
    header: String,
    parts: Vec<(String, String, String)>,
}

fn titles(s: Style, threads: &[&Found]) -> Titles {
    let parts = threads
        .iter()
        .map(|f| {
            let mut marks = String::new();
            if f.meta.is_archived() {
                marks.push_str(" (archived)");
            }
            if f.locked.is_some() {
                marks.push_str(" (locked)");
            }
            if let Some(setup) = super::setup_mark(f) {
                marks.push_str(&setup);
            }
            let tags: String = f
                .meta
                .tags()
                .iter()
                .map(|t| format!(" #{}", s.text(t)))
                .collect();
            (s.text(&f.meta.title).into_owned(), tags, marks)
        })
        .collect();
    Titles {
        header: "TITLE".into(),
        parts,
    }
}

impl Titles {
    fn spec(&self) -> Spec {
        let natural = self
            .parts
            .iter()
            .map(|(t, g, m)| display_width(t) + display_width(g) + display_width(m))
            .chain([display_width(&self.header)])
            .max()
            .unwrap_or(0);
        Spec {
            natural,
            min: natural.min(TITLE_MIN),
            drop: 0,
            grow: 1,
        }
    }

    /// Row `row`'s title in `room` columns (whole off a terminal).
    fn cell(&self, s: Style, row: usize, room: usize, cut: bool) -> String {
        let (title, tags, marks) = &self.parts[row];
        let (title, tags, marks) = if cut {
            fit_title(title, tags, marks, room)
        } else {
            (title.clone(), tags.clone(), marks.clone())
        };
        format!("{title}{}{}", s.cyan(&tags), s.dim(&marks))
    }
}

/// The title, tags and marks in `room` columns: the marks kept, then the
/// tags, the title cut first; the marks too when nothing else is left.
fn fit_title(title: &str, tags: &str, marks: &str, room: usize) -> (String, String, String) {
    let marks_w = display_width(marks);
    let tags_w = display_width(tags);
    if display_width(title) + tags_w + marks_w <= room {
        return (title.to_string(), tags.to_string(), marks.to_string());
    }
    if marks_w + 1 > room {
        return (fit(title, room), String::new(), String::new());
    }
    let tags = if tags_w + marks_w + 8 <= room {
        tags.to_string()
    } else {
        String::new()
    };
    let left = room - display_width(&tags) - marks_w;
    (fit(title, left), tags, marks.to_string())
}

/// The summary and next steps of the last checkpoint, under the row, cut
/// to the width.
fn write_notes(w: &mut Vec<u8>, s: Style, f: &Found, width: Option<usize>) -> anyhow::Result<()> {
    // No indent where it would leave too little room.
    let indent = if width.is_none_or(|w| w >= 40) { 10 } else { 0 };
    let room = width.map_or(usize::MAX, |w| w.saturating_sub(indent).max(1));
    if let Some(summary) = &f.meta.conversation_summary {
        let line = summary.lines().next().unwrap_or("");
        let short: String = line.chars().take(100).collect();
        let note = fit(&format!("↳ {}", s.text(&short)), room);
        writeln!(w, "{:indent$}{}", "", s.dim(&note))?;
    }
    let next: Vec<String> = f
        .meta
        .next_steps
        .iter()
        .flatten()
        .map(grove::atsf::Note::text)
        .collect();
    if !next.is_empty() {
        let note = fit(&format!("next: {}", s.text(&next.join("; "))), room);
        writeln!(w, "{:indent$}{}", "", s.dim(&note))?;
    }
    Ok(())
}
