//! `grove export`

use std::io::Write;
use std::path::{Path, PathBuf};

use grove::agent::Native;
use grove::export::{self, Format};
use grove::launch::resume;
use grove::secrets::Policy;

use super::Output;

/// Write a thread out for people: Markdown to paste into an issue, a single
/// self-contained HTML page (images embedded, tool calls collapsible,
/// thinking folded), or the raw ATSF message log (jsonl). Or for an agent:
/// a Claude Code session, a Codex rollout, a Gemini CLI chat or an OpenCode
/// session (claude, codex, gemini, opencode), written into the agent's own
/// store so `claude --resume ID` / `codex resume ID` / `gemini --resume ID`
/// / `opencode --session ID` continue it (what `grove resume` does, without
/// starting the agent; OpenCode's through `opencode import`).
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// md, html, jsonl; claude, codex, gemini or opencode (the agent's
    /// session format).
    #[arg(long, short = 'f', value_enum)]
    format: FormatArg,

    /// Write to FILE (replaced atomically) instead of stdout. For an
    /// agent's format: instead of the agent's store (`-` is stdout), and an
    /// existing FILE is never replaced.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// With -o (or an agent's format): print {threadId, format, path, messages,
    /// skipped} as JSON.
    #[arg(long)]
    json: bool,

    /// A thread holding secrets (see `grove scan`) is refused unless one of
    /// these says what to do; claude and codex written into the agent's own
    /// directory stay on this machine and are not checked.
    #[command(flatten)]
    secrets: super::SecretFlags,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    Md,
    Html,
    Jsonl,
    Claude,
    Codex,
    Gemini,
    Opencode,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let native = match args.format {
        FormatArg::Claude => Some(Native::Claude),
        FormatArg::Codex => Some(Native::Codex),
        FormatArg::Gemini => Some(Native::Gemini),
        FormatArg::Opencode => Some(Native::OpenCode),
        _ => None,
    };
    if let Some(native) = native {
        return run_native(&args, native, cwd, out);
    }
    if args.json && args.output.is_none() {
        return Err(super::UsageError(
            "--json needs -o FILE for md, html and jsonl (stdout holds the export)".into(),
        )
        .into());
    }
    let project = grove::project::Project::discover(cwd)?;
    let original = grove::discovery::find_thread(&project, args.thread())?;
    let leaving = leaving(&original, args.secrets, out)?;
    let thread = &leaving.thread;
    let review = match args.format {
        FormatArg::Html => match turn_changes(&project, thread, args.secrets, out)? {
            Ok(review) => review,
            Err(code) => return Ok(code),
        },
        _ => None,
    };
    let format = match args.format {
        FormatArg::Md => Format::Markdown,
        FormatArg::Html => Format::Html,
        FormatArg::Jsonl
        | FormatArg::Claude
        | FormatArg::Codex
        | FormatArg::Gemini
        | FormatArg::Opencode => Format::Jsonl,
    };
    let done = match &args.output {
        Some(path) => {
            let path = cwd.join(path);
            refuse_thread_file(&path)?;
            // Built aside and renamed: FILE is whole or untouched.
            let mut tmp = grove::fsutil::temp_file_beside(&path)?;
            let mut w = std::io::BufWriter::new(tmp.as_file_mut());
            let done = export::export_reviewed(thread, format, review.as_ref(), &mut w)?;
            w.flush()?;
            drop(w);
            tmp.persist(&path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
            out.status(&format!(
                "grove: exported {} message(s) to {}",
                done.messages,
                path.display()
            ));
            if args.json {
                out.json(&serde_json::json!({
                    "threadId": thread.id(),
                    "format": format_name(format),
                    "path": path,
                    "messages": done.messages,
                    "skipped": done.skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
                }))?;
            }
            done
        }
        None => {
            let stdout = std::io::stdout().lock();
            let mut w = std::io::BufWriter::with_capacity(256 * 1024, stdout);
            let done = export::export_reviewed(thread, format, review.as_ref(), &mut w)?;
            w.flush()?;
            done
        }
    };
    for e in &done.skipped {
        out.warn(&format!("skipped: {e}"));
    }
    Ok(super::exit::SUCCESS)
}

/// A thread as a session of `native`: into the agent's directory (recorded
/// on the thread, like `grove resume` does), to `-o FILE`, or to stdout.
fn run_native(args: &Args, native: Native, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = grove::project::Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    // Into the agent's own directory, the session stays on this machine.
    let leaving = match args.output {
        Some(_) => Some(leaving(&found.thread, args.secrets, out)?),
        None => None,
    };
    let thread = leaving.as_ref().map_or(&found.thread, |l| &l.thread);
    // The session's cwd: where the agent resumes it.
    let run_in = found
        .live_worktree()
        .map(Path::to_path_buf)
        .or_else(|| found.worktree.clone())
        .unwrap_or_else(|| {
            let recorded = PathBuf::from(&found.meta.context.working_dir);
            if recorded.is_absolute() {
                recorded
            } else {
                project.root.clone()
            }
        });
    let run_in = match &leaving {
        Some(_) if args.secrets.policy() != Policy::Allow => redacted_path(run_in),
        _ => run_in,
    };
    let session = resume::new_session_id(native);
    let (path, report) = match args.output.as_deref() {
        None => {
            let written = resume::write_session(thread, native, &run_in, None)?;
            (Some(written.path), written.report)
        }
        Some(p) if p == Path::new("-") => {
            let stdout = std::io::stdout().lock();
            let mut w = std::io::BufWriter::with_capacity(256 * 1024, stdout);
            let report = export::write_session(thread, native, &session, &run_in, &mut w)?;
            w.flush()?;
            (None, report)
        }
        Some(p) => {
            let path = cwd.join(p);
            refuse_thread_file(&path)?;
            let report = resume::write_new(&path, |w| {
                export::write_session(thread, native, &session, &run_in, w)
            })?;
            (Some(path), report)
        }
    };
    for s in &report.skipped {
        out.warn(&format!("left out: {s}"));
    }
    let Some(path) = path else {
        return Ok(super::exit::SUCCESS);
    };
    out.status(&format!(
        "grove: exported {} message(s) as {} session {}",
        report.messages,
        native.agent_id(),
        report.session_id
    ));
    if args.json {
        out.json(&serde_json::json!({
            "threadId": thread.id(),
            "format": native.format(),
            "sessionId": report.session_id,
            "path": path,
            "cwd": run_in,
            "messages": report.messages,
            "skipped": report.skipped,
        }))?;
    } else {
        out.line(&path.display().to_string())?;
    }
    Ok(super::exit::SUCCESS)
}

/// The session's working directory as it may leave with it: a secret in
/// the path (a worktree named after a title, a recorded directory) is
/// redacted as the thread's are; a path without one keeps its bytes.
fn redacted_path(path: PathBuf) -> PathBuf {
    match grove::secrets::redact_text(&path.to_string_lossy()) {
        (_, 0) => path,
        (redacted, _) => PathBuf::from(redacted),
    }
}

/// `-o` never writes over a file of a thread — anything under a
/// `.agent/threads/` or grove's cache — wherever links lead: replacing a
/// `messages.jsonl` with its own export would lose the conversation.
fn refuse_thread_file(path: &Path) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| super::UsageError(format!("-o {} names no file", path.display())))?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = parent
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("cannot write in {}: {e}", parent.display()))?;
    let mut target = dir.join(name);
    if let Ok(resolved) = target.canonicalize() {
        target = resolved;
    }
    let names: Vec<&std::ffi::OsStr> = target.iter().collect();
    let in_threads = names
        .windows(2)
        .any(|w| w[0] == grove::atsf::AGENT_DIR && w[1] == grove::atsf::THREADS_DIR);
    let in_cache = grove::home::cache_root()
        .ok()
        .and_then(|c| c.canonicalize().ok())
        .is_some_and(|c| target.starts_with(c));
    if in_threads || in_cache {
        return Err(grove::Error::Refused(format!(
            "not writing the export to {}: it is inside a thread's files, and would replace them; \
             choose a path outside .agent/threads/ and grove's cache",
            target.display()
        ))
        .into());
    }
    Ok(())
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Markdown => "md",
        Format::Html => "html",
        Format::Jsonl => "jsonl",
    }
}

/// Each turn's changes for the HTML page (see `grove review`), with the
/// secrets policy applied to the diffs as to the thread: `Err(code)` when a
/// diff holds a secret and nothing allows it.
fn turn_changes(
    project: &grove::project::Project,
    thread: &grove::store::Thread,
    flags: super::SecretFlags,
    out: &Output,
) -> anyhow::Result<Result<Option<grove::review::Review>, u8>> {
    let Some(repo) = project.repo() else {
        return Ok(Ok(None));
    };
    let mut review = grove::review::review(thread, Some(&repo))?;
    let secrets = review.secrets();
    if secrets == 0 {
        return Ok(Ok(Some(review)));
    }
    match flags.policy() {
        Policy::Allow => {
            out.warn(&format!(
                "{secrets} secret(s) in the turns' diffs written as they are (--allow-secrets)"
            ));
        }
        Policy::Redact => {
            review.redact();
            out.status(&format!(
                "grove: {secrets} secret(s) redacted in the turns' diffs"
            ));
        }
        Policy::Refuse => {
            out.error(&format!(
                "not exporting thread {}: the turns' diffs hold {secrets} secret(s); pass \
                 --redact to replace them, or --allow-secrets to write them",
                thread.id()
            ));
            return Ok(Err(super::exit::ERROR));
        }
    }
    Ok(Ok(Some(review)))
}

/// The thread as it may leave the machine: checked for secrets, and
/// redacted, refused or let through as the flags say.
fn leaving(
    thread: &grove::store::Thread,
    flags: super::SecretFlags,
    out: &Output,
) -> anyhow::Result<grove::secrets::Leaving> {
    let leaving = grove::secrets::prepare_to_leave(thread, flags.policy())?;
    if leaving.redacted {
        out.status(&format!(
            "grove: {} secret(s) redacted in what is written",
            leaving.findings.len()
        ));
    } else if !leaving.findings.is_empty() {
        out.warn(&format!(
            "{} secret(s) written as they are (--allow-secrets)",
            leaving.findings.len()
        ));
    }
    Ok(leaving)
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
