//! One `git push` of grove's refs, and which of them the remote rejected.

use crate::error::{Error, Result};
use crate::git::Repo;

/// Pushes each `<prefix><id>` to the same name on `remote`; returns the ids
/// whose ref git rejected (the remote moved it). `what` names the refs in
/// the error when the push failed as a whole.
pub(super) fn push_ids(
    repo: &Repo,
    remote: &str,
    prefix: &str,
    ids: &[&str],
    what: &str,
) -> Result<Vec<String>> {
    let specs: Vec<String> = ids
        .iter()
        .map(|id| format!("{prefix}{id}:{prefix}{id}"))
        .collect();
    let mut args = vec!["push", "--porcelain", remote];
    args.extend(specs.iter().map(String::as_str));
    let out = repo.git.output(&repo.main_root, &args)?;
    // `--porcelain`: one `<flag>\t<from>:<to>\t<summary>` line per ref.
    let rejected: Vec<String> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with('!'))
        .filter_map(|l| l.split('\t').nth(1))
        .filter_map(|spec| spec.split(':').next()?.strip_prefix(prefix))
        .map(str::to_string)
        .collect();
    if !out.success && rejected.is_empty() {
        return Err(Error::Git(format!(
            "`git push {remote}`{what} failed: {}",
            if out.stderr.is_empty() {
                "no message"
            } else {
                &out.stderr
            }
        )));
    }
    Ok(rejected)
}
