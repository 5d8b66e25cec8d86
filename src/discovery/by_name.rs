//! A task named the way a person names it, when the name is no thread id:
//! its worktree's path (`.` included: the task the current directory is
//! in), its branch, or a word of its title.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::project::Project;

use super::{Found, Status};

/// The one thread of `threads` that `query` names by branch, worktree path
/// or title word, in that order of precedence: `Ok(None)` when it names none, an
/// error listing the candidates when it names several.
pub(super) fn pick(project: &Project, query: &str, threads: &[Found]) -> Result<Option<usize>> {
    let on_branch: Vec<usize> = indices(threads, |f| {
        f.branch
            .as_deref()
            .is_some_and(|b| b == query || b.strip_prefix("refs/heads/") == Some(query))
    });
    if let Some(dir) = as_path(project, query).filter(|_| on_branch.is_empty()) {
        return by_path(&dir, threads).map(Some).ok_or_else(|| {
            Error::Other(format!(
                "{} is not in a task's worktree; name the task by its id, branch or a word of \
                 its title (`grove list` shows them)",
                dir.display()
            ))
        });
    }
    if let Some(i) = task_of(threads, &on_branch) {
        return Ok(Some(i));
    }
    let mut titled = indices(threads, |f| has_word(&f.meta.title, query));
    // A word shared with removed tasks names the one still at work.
    let at_work = |&i: &usize| !matches!(threads[i].status, Status::Removed | Status::Remote);
    if titled.len() > 1 && titled.iter().filter(|i| at_work(i)).count() == 1 {
        titled.retain(at_work);
    }
    match titled.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(Error::AmbiguousThread {
            query: query.to_string(),
            candidates: many.iter().map(|&i| describe(&threads[i])).collect(),
        }),
    }
}

/// `query` as a directory, when it names an existing one (`.` and `..`
/// included): canonical, a relative one taken from the current directory.
/// A branch may look like a path (`grove/fix-login`); it is one only when
/// the directory is there.
fn as_path(project: &Project, query: &str) -> Option<PathBuf> {
    if query.is_empty() {
        return None;
    }
    let path = Path::new(query);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        project.cwd.join(path)
    };
    joined
        .is_dir()
        .then(|| std::fs::canonicalize(&joined).unwrap_or(joined))
}

/// The task whose worktree holds `dir` (the innermost, when worktrees
/// nest).
fn by_path(dir: &Path, threads: &[Found]) -> Option<usize> {
    let holding = |f: &Found| {
        let wt = f.worktree.as_deref()?;
        let wt = std::fs::canonicalize(wt).unwrap_or_else(|_| wt.to_path_buf());
        dir.starts_with(&wt).then(|| wt.components().count())
    };
    let depth = threads
        .iter()
        .filter(|f| f.status != Status::Local)
        .filter_map(holding)
        .max()?;
    let inner = indices(threads, |f| {
        f.status != Status::Local && holding(f) == Some(depth)
    });
    task_of(threads, &inner)
}

/// Of threads sharing one worktree (a task's own and the forks or imports
/// made in it), the task's: the one made first.
fn task_of(threads: &[Found], among: &[usize]) -> Option<usize> {
    among.iter().copied().min_by(|&a, &b| {
        let key = |i: usize| (threads[i].from_cache, threads[i].meta.created_at.clone());
        key(a).cmp(&key(b))
    })
}

fn indices(threads: &[Found], wanted: impl Fn(&Found) -> bool) -> Vec<usize> {
    threads
        .iter()
        .enumerate()
        .filter(|(_, f)| wanted(f))
        .map(|(i, _)| i)
        .collect()
}

/// Whether `title` holds `word` as a whole word, ignoring case.
fn has_word(title: &str, word: &str) -> bool {
    let word = word.to_lowercase();
    !word.is_empty()
        && title
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
            .any(|w| w == word)
}

/// A candidate as an ambiguous name lists it: id, branch and title.
fn describe(f: &Found) -> String {
    let branch = f
        .branch
        .as_deref()
        .map(|b| format!(" [{b}]"))
        .unwrap_or_default();
    format!("{}{branch} {:?}", f.thread.id(), f.meta.title)
}

#[cfg(test)]
mod tests {
    use super::has_word;

    #[test]
    fn a_title_word_is_a_whole_word_in_any_case() {
        assert!(has_word("Fix the login bug", "login"));
        assert!(has_word("Fix the LOGIN bug", "Login"));
        assert!(has_word("Tidy the parser (part 2)", "parser"));
        assert!(!has_word("Fix the login bug", "log"));
        assert!(!has_word("Fix the login bug", ""));
    }
}
