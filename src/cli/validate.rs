//! `grove validate`

use std::path::{Path, PathBuf};

use grove::project::Project;
use grove::validate::{self, Report, Severity};

use super::Output;

/// Check .agent/ directories against the ATSF v1.1 spec's MUST and SHOULD
/// rules and grove's extensions: config.json, every thread.json, every line
/// of every messages.jsonl, and the assets they name. Prints one problem per
/// line as `file:line: rule`; nothing is changed.
///
/// Exit codes: 0 when nothing breaks a MUST (warnings, SHOULDs, may be
/// printed); 1 when something does.
#[derive(clap::Args)]
pub struct Args {
    /// .agent/ directories, projects holding one, or thread directories
    /// (default: this project's and its worktrees').
    paths: Vec<PathBuf>,

    /// Print {agentDirs, threads, messages, problems: [{file, line, severity, rule}]}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let paths = if args.paths.is_empty() {
        default_paths(cwd)?
    } else {
        args.paths.iter().map(|p| cwd.join(p)).collect()
    };
    let mut report = Report::default();
    for path in &paths {
        validate::check(path, &mut report)?;
    }
    if args.json {
        out.json(&report)?;
    } else {
        let style = out.style();
        for p in &report.problems {
            let label = match p.severity {
                Severity::Error => style.red("error"),
                Severity::Warning => style.yellow("warning"),
            };
            out.line(&format!("{}: {label}", style.text(&p.to_string())))?;
        }
        let errors = report
            .problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count();
        out.status(&format!(
            "grove: checked {} thread(s), {} message(s): {errors} error(s), {} warning(s)",
            report.threads,
            report.messages,
            report.problems.len() - errors
        ));
    }
    Ok(if report.has_errors() {
        super::exit::ERROR
    } else {
        super::exit::SUCCESS
    })
}

/// The project's `.agent/` and its worktrees'.
fn default_paths(cwd: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let project = Project::discover(cwd)?;
    let mut roots = vec![project.main_root.clone()];
    if project.git.is_some()
        && let Ok(worktrees) =
            grove::worktree::Repo::new(&project.main_root).and_then(|r| r.worktrees())
    {
        roots.extend(worktrees.into_iter().filter(|w| !w.bare).map(|w| w.path));
    }
    roots.sort();
    roots.dedup();
    Ok(roots
        .into_iter()
        .map(|r| r.join(grove::atsf::AGENT_DIR))
        .filter(|a| a.is_dir())
        .collect())
}
