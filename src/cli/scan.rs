//! `grove scan`

use std::path::Path;

use grove::discovery::{self, Found, Options};
use grove::project::Project;
use grove::secrets::{self, Finding};

use super::Output;

/// Look for secrets in threads before they travel: cloud keys, tokens of
/// the big code hosts and chat tools, private key blocks, JWTs, database
/// URLs with passwords, `.env` assignments of secret names, long random
/// values next to key/token/secret. Looks at every string of thread.json
/// and of every message, keys and values, at any depth, escapes decoded
/// (text, tool inputs and outputs, metadata), and at the names of asset
/// files. Prints THREAD:FILE:LINE: RULE (FILE `assets`, line 0: an asset's
/// name) and the secret masked. Exits 1 when anything is found.
#[derive(clap::Args)]
pub struct Args {
    /// Threads (id or unique prefix); none: every thread of this repository.
    #[arg(value_name = "THREAD")]
    #[arg(add = super::complete::threads())]
    threads: Vec<String>,

    /// Also other repositories' cached threads.
    #[arg(long, conflicts_with = "threads")]
    all: bool,

    /// Print a JSON array of {threadId, file, line, rule, masked}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = threads(&args, &project, out)?;
    let mut findings: Vec<Finding> = Vec::new();
    let mut unreadable = 0;
    for f in &found {
        match secrets::scan_thread(&f.thread) {
            Ok(mut found) => findings.append(&mut found),
            Err(e) => {
                unreadable += 1;
                out.warn(&format!("could not scan {}: {e}", f.meta.thread_id));
            }
        }
    }
    if args.json {
        out.json(&findings)?;
    } else {
        let s = out.style();
        for f in &findings {
            out.line(&format!(
                "{}:{}:{}: {} {}",
                f.thread_id,
                f.file,
                f.line,
                s.red(f.rule),
                s.text(&f.masked)
            ))?;
        }
    }
    let threads_with: std::collections::BTreeSet<&str> =
        findings.iter().map(|f| f.thread_id.as_str()).collect();
    out.status(&format!(
        "grove: {} secret(s) in {} of {} thread(s){}",
        findings.len(),
        threads_with.len(),
        found.len(),
        if unreadable > 0 {
            format!(", {unreadable} could not be read")
        } else {
            String::new()
        }
    ));
    Ok(if findings.is_empty() && unreadable == 0 {
        super::exit::SUCCESS
    } else {
        super::exit::ERROR
    })
}

fn threads(args: &Args, project: &Project, out: &Output) -> anyhow::Result<Vec<Found>> {
    if !args.threads.is_empty() {
        return args
            .threads
            .iter()
            .map(|t| super::resolve(out, project, t))
            .collect();
    }
    let d = discovery::discover(
        project,
        Options {
            all_repos: args.all,
            statuses: false,
            details: false,
        },
    )?;
    super::warn_skipped(out, &d.errors);
    Ok(d.threads)
}
