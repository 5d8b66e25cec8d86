//! `grove repair`

use std::path::Path;

use grove::discovery;
use grove::project::Project;
use serde_json::json;

use super::Output;

/// Repair a thread: bring back from grove's cache what the thread lost (a
/// deleted or shortened messages.jsonl, assets), set aside an incomplete last
/// line, recompute stats from messages.jsonl, and report malformed lines
/// (they are kept, not deleted).
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it.
    #[arg(add = super::complete::threads())]
    thread: String,

    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let thread = discovery::find_thread(&project, &args.thread)?;
    let cache = discovery::cache_copy_for(&project, &thread);
    let report = thread.repair_from(cache.as_deref())?;
    if let Some(r) = &report.restored {
        if let Some(saved) = &r.diverged_saved_to {
            out.warn(&format!(
                "the log was not a part of grove's cached copy; it was kept as {}",
                saved.display()
            ));
        }
        out.status(&format!(
            "grove: restored {} bytes of the log and {} other file(s) from {}",
            r.bytes,
            r.files,
            r.from.display()
        ));
    }
    let bad: Vec<String> = report.bad_lines.iter().map(ToString::to_string).collect();
    if args.json {
        out.json(&json!({
            "threadId": thread.id(),
            "tornTail": report.torn.as_ref().map(|t| json!({"savedTo": t.saved_to, "bytes": t.bytes})),
            "badLines": bad,
            "statsBefore": report.stats_before,
            "statsAfter": report.stats_after,
            "rewroteThreadJson": report.rewrote_meta,
            "restored": report.restored.as_ref().map(|r| json!({
                "from": r.from,
                "bytes": r.bytes,
                "files": r.files,
                "divergedSavedTo": r.diverged_saved_to,
            })),
        }))?;
        return Ok(super::exit::SUCCESS);
    }
    if let Some(t) = &report.torn {
        out.status(&format!(
            "grove: set aside {} bytes of an incomplete last line in {}",
            t.bytes,
            t.saved_to.display()
        ));
    }
    for line in &bad {
        out.warn(&format!("malformed line kept in place: {line}"));
    }
    let (b, a) = (&report.stats_before, &report.stats_after);
    if report.rewrote_meta {
        out.status(&format!(
            "grove: stats updated: {} → {} messages, {} → {} tool calls",
            b.message_count, a.message_count, b.tool_call_count, a.tool_call_count
        ));
    } else {
        out.status("grove: stats already matched messages.jsonl");
    }
    out.line(&format!(
        "{} messages ({} user, {} agent), {} tool calls, {} malformed lines",
        a.message_count,
        a.user_message_count,
        a.agent_message_count,
        a.tool_call_count,
        bad.len()
    ))?;
    Ok(super::exit::SUCCESS)
}
