//! What a worktree's submodules hold that exists nowhere else.
//!
//! A linked worktree's submodules keep their git directories under the
//! worktree's own (`.git/worktrees/<name>/modules/…`, nested ones under
//! their parent's `modules/`), and removing the worktree removes them:
//! their stashes, their local branches and whatever their checkouts hold
//! go with it. Every git directory there is looked at — a submodule
//! deinitialised in the worktree keeps its git directory, and what is in
//! it — and so is each submodule with its git directory inside its
//! checkout (`.git` a directory: added from an existing clone).
//!
//! A repository without submodules pays for a read of the worktree's
//! `.git` file and a look for `modules/` and `.gitmodules`, which are not
//! there: no git process.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::Repo;
use crate::error::Result;
use crate::git::cmd::Running;

/// The `git status` of a submodule's checkout: every untracked file; the
/// changes of the submodules inside it are left to their own look (a
/// nested submodule moved to another commit still shows).
const STATUS_OF_A_SUBMODULE: [&str; 6] = [
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=all",
    "--ignore-submodules=dirty",
    "--no-renames",
];

/// How many unsaved commits a submodule's walk counts at most.
const COMMITS_COUNTED: usize = 1000;

/// One submodule of the worktree: its git directory and its checkout.
struct Submodule {
    /// Its path in the worktree (its module name when it has no checkout).
    name: String,
    git_dir: PathBuf,
    /// `None`: deinitialised, only its git directory is left.
    checkout: Option<PathBuf>,
}

/// Reasons `rm` refuses for what the worktree's submodules (nested ones
/// too) hold that is saved nowhere else: uncommitted or untracked files,
/// stashes, commits on none of their remotes.
pub(super) fn unsaved_reasons(repo: &Repo, wt: &Path) -> Result<Vec<String>> {
    let Some(wt_git_dir) = worktree_git_dir(repo, wt)? else {
        return Ok(Vec::new());
    };
    let submodules = submodules_of(wt, wt_git_dir)?;
    // Each checkout's status runs while the git directories are read.
    let statuses = submodules
        .iter()
        .map(|s| match &s.checkout {
            Some(dir) => repo.git.start(dir, &STATUS_OF_A_SUBMODULE, true).map(Some),
            None => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    let mut reasons = Vec::new();
    for submodule in &submodules {
        reasons.extend(git_dir_reasons(submodule)?);
    }
    for (submodule, status) in submodules.iter().zip(statuses) {
        if let Some(status) = status {
            reasons.extend(checkout_reason(submodule, status)?);
        }
    }
    Ok(reasons)
}

/// Every submodule of the worktree at `wt` (its git directory
/// `wt_git_dir`), nested ones included, found by their git directories and
/// by the `.gitmodules` of each checkout.
fn submodules_of(wt: &Path, wt_git_dir: PathBuf) -> Result<Vec<Submodule>> {
    let modules_root = wt_git_dir.join("modules");
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut todo = vec![(Some(wt.to_path_buf()), wt_git_dir)];
    while let Some((checkout, git_dir)) = todo.pop() {
        let mut here = Vec::new();
        let mut git_dirs = Vec::new();
        module_git_dirs(&git_dir.join("modules"), &mut git_dirs);
        for sub_git_dir in git_dirs {
            let sub_checkout = checkout_of(&sub_git_dir)?;
            let name = match &sub_checkout {
                Some(dir) => relative_name(dir, wt),
                None => module_name(&sub_git_dir, &modules_root),
            };
            here.push(Submodule {
                name,
                git_dir: sub_git_dir,
                checkout: sub_checkout,
            });
        }
        if let Some(checkout) = &checkout {
            for (dir, sub_git_dir) in embedded_git_dirs(checkout)? {
                here.push(Submodule {
                    name: relative_name(&dir, wt),
                    git_dir: sub_git_dir,
                    checkout: Some(dir),
                });
            }
        }
        // A git directory found both ways is one submodule.
        for submodule in here {
            if seen.insert(canonical(&submodule.git_dir)) {
                todo.push((submodule.checkout.clone(), submodule.git_dir.clone()));
                found.push(submodule);
            }
        }
    }
    Ok(found)
}

/// The git directory of the linked worktree at `wt` (`.git/worktrees/<id>`),
/// which goes with it: where its `.git` file points, or — the worktree's
/// directory deleted behind git's back — the one whose `gitdir` names
/// `wt`. `None` for a main checkout (`.git` a directory, which stays).
pub(super) fn worktree_git_dir(repo: &Repo, wt: &Path) -> Result<Option<PathBuf>> {
    match std::fs::symlink_metadata(wt.join(".git")) {
        Ok(meta) if meta.is_dir() => Ok(None),
        Ok(_) => Ok(git_dir_of(wt)),
        Err(_) => admin_dir_naming(&repo.common_dir()?, wt),
    }
}

/// The `worktrees/<id>` of the common git directory whose `gitdir` file
/// names `<wt>/.git` (compared as written, `.` and `..` resolved: `wt` may
/// be gone).
fn admin_dir_naming(common_dir: &Path, wt: &Path) -> Result<Option<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(common_dir.join("worktrees")) else {
        return Ok(None);
    };
    let wanted = lexically_normal(&wt.join(".git"));
    for entry in entries.flatten() {
        let admin = entry.path();
        let Ok(text) = std::fs::read_to_string(admin.join("gitdir")) else {
            continue;
        };
        if lexically_normal(&admin.join(text.trim_end())) == wanted {
            return Ok(Some(admin));
        }
    }
    Ok(None)
}

/// `path` with `.` dropped and `..` taking the component before it away,
/// without asking the file system.
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The git directory of the checkout at `dir`: `.git` itself, or where the
/// `gitdir:` line of a `.git` file points (relative to `dir` when it is
/// relative).
fn git_dir_of(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir: ")?;
    Some(dir.join(target.trim_end()))
}

/// The git directories under a `modules` directory: a submodule named
/// `a/b` has its own at `modules/a/b`, so every directory is looked into
/// until one is a git directory (its nested submodules' are in its own
/// `modules/`, looked at in their turn).
fn module_git_dirs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if is_git_dir(&path) {
            found.push(path);
        } else {
            module_git_dirs(&path, found);
        }
    }
}

/// Whether `dir` is a git directory (as git tells one: a `HEAD` and an
/// `objects` directory).
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir()
}

/// The checkout of the submodule whose git directory is `git_dir`, when it
/// is there: its `core.worktree` (relative to `git_dir`), with a `.git` in
/// it. (libgit2 refuses to open a repository whose work tree is gone, so
/// the setting is read from the file.)
fn checkout_of(git_dir: &Path) -> Result<Option<PathBuf>> {
    let config_file = git_dir.join("config");
    if !config_file.is_file() {
        return Ok(None);
    }
    // libgit2 reads a single value from a snapshot only.
    let config = git2::Config::open(&config_file)?.snapshot()?;
    let Ok(worktree) = config.get_bytes("core.worktree") else {
        return Ok(None);
    };
    let dir = git_dir.join(super::carry::path_from_bytes(worktree));
    Ok(std::fs::symlink_metadata(dir.join(".git"))
        .is_ok()
        .then_some(dir))
}

/// The submodules of the checkout at `dir` (per its `.gitmodules`) whose
/// git directory is inside their checkout: (checkout, git directory).
fn embedded_git_dirs(dir: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let gitmodules = dir.join(".gitmodules");
    if !gitmodules.is_file() {
        return Ok(Vec::new());
    }
    let config = git2::Config::open(&gitmodules)?;
    let mut found = Vec::new();
    let mut entries = config.entries(Some(r"^submodule\..*\.path$"))?;
    while let Some(entry) = entries.next() {
        let path = super::carry::path_from_bytes(entry?.value_bytes());
        // Only what is inside the checkout goes with it.
        let inside = path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            continue;
        }
        let checkout = dir.join(path);
        let dot_git = checkout.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
            found.push((checkout, dot_git));
        }
    }
    Ok(found)
}

/// `dir` as a path relative to the worktree `wt` (`lib/inner`).
fn relative_name(dir: &Path, wt: &Path) -> String {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = canonical(dir);
    dir.strip_prefix(canonical(wt))
        .unwrap_or(&dir)
        .display()
        .to_string()
}

/// The name of a submodule without a checkout, from where its git
/// directory is (`lib/modules/inner` is `lib/inner`).
fn module_name(git_dir: &Path, modules_root: &Path) -> String {
    let Ok(rel) = git_dir.strip_prefix(modules_root) else {
        return format!("{} (not checked out)", git_dir.display());
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|c| c != "modules")
        .collect();
    format!("{} (not checked out)", parts.join("/"))
}

/// What the git directory of `submodule` holds that is saved nowhere else:
/// stashes, and commits of its HEAD and local branches on none of its
/// remote-tracking branches or tags.
fn git_dir_reasons(submodule: &Submodule) -> Result<Vec<String>> {
    // Opened bare: only its refs and objects are read (and a deinitialised
    // submodule's work tree is gone).
    let git = git2::Repository::open_bare(&submodule.git_dir)?;
    let mut reasons = Vec::new();
    let stashes = stashes(&git)?;
    if !stashes.is_empty() {
        reasons.push(format!(
            "{} stash entr{} in submodule {}: {}",
            stashes.len(),
            if stashes.len() == 1 { "y" } else { "ies" },
            submodule.name,
            super::list_some(&stashes, 3)
        ));
    }
    let (commits, more) = unpushed_commits(&git)?;
    if !commits.is_empty() {
        reasons.push(format!(
            "{}{} commit(s) in submodule {} are on none of its remotes: {}",
            if more { "more than " } else { "" },
            commits.len(),
            submodule.name,
            super::list_some(&commits, 3)
        ));
    }
    Ok(reasons)
}

/// The stash entries (`stash@{0}: On main: idea`), newest first.
fn stashes(git: &git2::Repository) -> Result<Vec<String>> {
    if git.find_reference("refs/stash").is_err() {
        return Ok(Vec::new());
    }
    let log = git.reflog("refs/stash")?;
    if log.is_empty() {
        // A stash ref without its log still holds one entry.
        return Ok(vec!["stash@{0}".to_string()]);
    }
    Ok(log
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            format!(
                "stash@{{{i}}}: {}",
                String::from_utf8_lossy(entry.message_bytes().unwrap_or_default())
            )
        })
        .collect())
}

/// The commits of HEAD and the local branches that no remote-tracking
/// branch or tag has (`abc1234 subject`, newest first; at most
/// [`COMMITS_COUNTED`], and whether there are more).
fn unpushed_commits(git: &git2::Repository) -> Result<(Vec<String>, bool)> {
    let mut walk = git.revwalk()?;
    // An unborn HEAD has no commits to lose.
    if git.head().is_ok() {
        walk.push_head()?;
    }
    walk.push_glob("heads")?;
    walk.hide_glob("remotes")?;
    walk.hide_glob("tags")?;
    let mut commits = Vec::new();
    for oid in walk {
        if commits.len() == COMMITS_COUNTED {
            return Ok((commits, true));
        }
        let commit = git.find_commit(oid?)?;
        let short = commit.as_object().short_id()?;
        commits.push(format!(
            "{} {}",
            short.as_str().unwrap_or_default(),
            String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
        ));
    }
    Ok((commits, false))
}

/// Uncommitted or untracked files of the submodule's checkout, from its
/// `git status` (started as `status`).
fn checkout_reason(submodule: &Submodule, status: Running) -> Result<Option<String>> {
    let out = status.bytes()?;
    let files: Vec<String> = out
        .split(|&b| b == 0)
        .filter(|e| e.len() > 3)
        .map(|e| String::from_utf8_lossy(&e[3..]).into_owned())
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "uncommitted changes in submodule {}: {}",
        submodule.name,
        super::list_some(&files, 5)
    )))
}
