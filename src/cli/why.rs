//! `grove why`

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use grove::attribution::{Author, Excerpt, Why};
use grove::project::Project;

use super::Output;
use super::output::{Style, human_time};

/// The conversation behind a line: the prompt of the turn that wrote it, the
/// agent's words and reasoning around the tool call, the call and its
/// input, the task and its branch.
#[derive(clap::Args)]
pub struct Args {
    /// FILE:LINE, the line numbered from 1.
    #[arg(value_name = "FILE:LINE")]
    at: String,

    /// Print {path, line (as blame --json gives it), task, prompt, agent,
    /// toolCall} (null where there is nothing to show).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let (file, line) = parse(&args.at)?;
    let project = Project::discover(cwd)?;
    objects_unverified();
    let why = grove::attribution::why(&project, &file, line)
        .with_context(|| format!("reading line {line} of {}", file.display()))?;
    if args.json {
        out.json(&why)?;
    } else {
        print(out.style(), &why)?;
    }
    Ok(super::exit::SUCCESS)
}

/// Objects read without hashing each again: git itself only checks the
/// hashes of objects it receives or is asked to check (`fsck`), and
/// libgit2's check of every snapshot's tree and blob was a sixth of
/// `blame`'s time. Only `blame` and `why` read so many objects.
pub fn objects_unverified() {
    git2::opts::strict_hash_verification(false);
}

/// `FILE:LINE`.
fn parse(at: &str) -> anyhow::Result<(PathBuf, usize)> {
    let parsed = at
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f, l.parse::<usize>().ok().filter(|n| *n > 0)?)))
        .filter(|(f, _)| !f.is_empty());
    let Some((file, line)) = parsed else {
        return Err(super::UsageError(format!(
            "{at:?}: expected FILE:LINE, the line numbered from 1"
        ))
        .into());
    };
    Ok((PathBuf::from(file), line))
}

fn print(s: Style, why: &Why) -> anyhow::Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    let l = &why.line;
    writeln!(
        w,
        "{}:{}  {}",
        s.text(&why.path),
        l.line,
        s.text(&l.content)
    )?;
    let who = match l.author {
        Author::Agent => s.cyan(l.author.as_str()),
        Author::Person => s.dim(l.author.as_str()),
    };
    let commit = l.commit.as_deref().unwrap_or("not committed yet");
    writeln!(
        w,
        "{who} · {} · {} · {commit}",
        l.basis.as_str(),
        l.reason.as_str()
    )?;
    if let Some(t) = &why.task {
        writeln!(
            w,
            "{} {} ({}{})",
            s.bold("task"),
            s.text(&t.title),
            s.text(&t.thread_id),
            t.branch
                .as_deref()
                .map(|b| format!(", branch {}", s.text(b)))
                .unwrap_or_default()
        )?;
    }
    if let Some(p) = &why.prompt {
        excerpt(&mut w, s, "prompt", p)?;
    }
    for a in &why.agent {
        excerpt(&mut w, s, "agent", a)?;
    }
    if let Some(c) = &why.tool_call {
        writeln!(
            w,
            "\n{} {} {} ({})",
            s.bold("tool call"),
            s.text(&c.name),
            s.dim(&s.text(&c.tool_call_id)),
            s.text(&c.status)
        )?;
        if let Some(input) = &c.input {
            writeln!(w, "{}", s.block(input))?;
        }
    }
    w.flush()?;
    Ok(())
}

fn excerpt(w: &mut impl Write, s: Style, label: &str, e: &Excerpt) -> std::io::Result<()> {
    writeln!(
        w,
        "\n{} #{} · {}",
        s.bold(label),
        e.index,
        s.dim(&s.text(&human_time(&e.timestamp)))
    )?;
    if let Some(r) = &e.reasoning {
        for line in r.lines() {
            writeln!(w, "{}", s.dim(&format!("│ {}", s.text(line))))?;
        }
    }
    if !e.text.is_empty() {
        writeln!(w, "{}", s.block(&e.text))?;
    }
    Ok(())
}
