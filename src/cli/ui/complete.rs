//! Completing thread ids: what the shell offers after `grove show ` — the
//! ids (and unique prefixes) of this repository's threads, with their
//! titles as descriptions where the shell shows them.

use std::ffi::OsStr;

use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

/// The completer of a THREAD argument.
pub fn threads() -> ArgValueCompleter {
    ArgValueCompleter::new(thread_candidates)
}

fn thread_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let Ok(project) = grove::project::Project::discover(&cwd) else {
        return Vec::new();
    };
    // Statuses are not needed, and cost a `git status` per worktree.
    let options = grove::discovery::Options {
        all_repos: false,
        statuses: false,
        details: false,
    };
    let Ok(found) = grove::discovery::discover(&project, options) else {
        return Vec::new();
    };
    found
        .threads
        .iter()
        .filter(|f| f.meta.thread_id.starts_with(prefix))
        .map(|f| {
            let title = super::output::escape_line(&f.meta.title).to_string();
            CompletionCandidate::new(f.meta.thread_id.clone()).help(Some(title.into()))
        })
        .collect()
}
