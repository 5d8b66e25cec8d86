//! Questions about a repository's branches and worktrees, answered with
//! libgit2 where it can open the repository and the git binary otherwise.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::git::cmd::Git;

/// One entry of `git worktree list --porcelain -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeEntry {
    pub path: PathBuf,
    pub head: Option<String>,
    /// Short branch name; `None` when detached.
    pub branch: Option<String>,
    pub bare: bool,
    /// `Some(reason)` when locked (the reason may be empty).
    pub locked: Option<String>,
    pub prunable: bool,
}

/// A repository, addressed by its main working tree.
#[derive(Debug, Clone)]
pub struct Repo {
    pub git: Git,
    pub main_root: PathBuf,
}

impl Repo {
    /// The repository whose main working tree is `main_root`.
    pub fn new(main_root: &Path) -> Result<Self> {
        Ok(Repo {
            git: Git::find()?,
            main_root: main_root.to_path_buf(),
        })
    }

    /// Every worktree git knows, the main one first: read from git's own
    /// files when libgit2 can open the repository (no process to start),
    /// else from `git worktree list`.
    ///
    /// While another git adds a worktree, its `worktrees/<name>/commondir`
    /// is briefly empty and `git worktree list` fails reading it: that
    /// failure is retried a few times before it is reported.
    pub fn worktrees(&self) -> Result<Vec<WorktreeEntry>> {
        if let Some(entries) = self.git2().and_then(|repo| super::listing::read(&repo)) {
            return Ok(entries);
        }
        self.worktrees_from_git()
    }

    /// [`Repo::worktrees`] as `git worktree list --porcelain -z` prints it.
    pub fn worktrees_from_git(&self) -> Result<Vec<WorktreeEntry>> {
        let args = ["worktree", "list", "--porcelain", "-z"];
        let mut attempt = 0;
        loop {
            let out = self.git.output(&self.main_root, &args)?;
            if out.success {
                return Ok(parse_worktree_list(&out.stdout));
            }
            attempt += 1;
            if attempt >= 5 || !out.stderr.contains("failed to read") {
                return Err(crate::Error::Git(format!(
                    "`git {}` failed: {}",
                    args.join(" "),
                    out.stderr
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
        }
    }

    /// The repository's common git directory (`.git` of the main worktree).
    pub fn common_dir(&self) -> Result<PathBuf> {
        if let Some(repo) = self.git2() {
            return Ok(repo.commondir().to_path_buf());
        }
        let out = self.git.run(
            &self.main_root,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        Ok(PathBuf::from(out))
    }

    /// Removes the lock files a git process killed while updating
    /// `refs/heads/<branch>` can leave — the ref's own and `packed-refs.lock`
    /// (every ref deletion takes it) — which git never removes itself and
    /// which make every later deletion fail. Called only for the branch of
    /// a grove run that is gone; a lock younger than a second may belong to
    /// a git still running and is refused, to be retried.
    pub fn clear_stale_ref_locks(&self, branch: &str) -> Result<()> {
        let common = self.common_dir()?;
        for lock in [
            common.join("refs/heads").join(format!("{branch}.lock")),
            common.join("packed-refs.lock"),
        ] {
            let Ok(meta) = std::fs::symlink_metadata(&lock) else {
                continue;
            };
            let age = meta
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .unwrap_or_default();
            if age < std::time::Duration::from_secs(1) {
                return Err(crate::Error::Refused(format!(
                    "{} is held by a git process; run `grove gc` again in a moment",
                    lock.display()
                )));
            }
            std::fs::remove_file(&lock).map_err(|e| crate::Error::io("removing", &lock, e))?;
        }
        Ok(())
    }

    /// The bare directory behind a bare repository whose main working tree
    /// a worktree stands in for (see [`crate::git::discover`]); `None` for
    /// any other repository. What grove recorded while no worktree of the
    /// user's existed, and the bare directory itself stood in, is keyed by it.
    pub fn bare_dir_behind(&self) -> Option<PathBuf> {
        let common = self.common_dir().ok()?;
        let common = common.canonicalize().unwrap_or(common);
        if common == self.main_root {
            return None;
        }
        let bare = git2::Repository::open_bare(&common).ok()?.is_bare();
        bare.then_some(common)
    }

    /// Makes git forget the worktree at `path`, whose directory is gone:
    /// removes what git keeps for it in `<git dir>/worktrees/<name>/` — the
    /// entry whose `gitdir` names it, or, when git was killed before writing
    /// that file, the entry named after the directory. Never `git worktree
    /// prune`, which forgets every worktree whose directory is gone, with
    /// what their git directories alone hold (submodules' stashes, the
    /// worktree's own refs) unchecked. A half-made entry (no `commondir`
    /// yet) makes every `git worktree list` fail, and git's own prune
    /// leaves it alone while it is locked ("initializing").
    pub fn forget_worktree(&self, path: &Path) -> Result<()> {
        let admin = self.common_dir()?.join("worktrees");
        let Ok(entries) = std::fs::read_dir(&admin) else {
            return Ok(());
        };
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ours = path.join(".git");
        for entry in entries.flatten() {
            let dir = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let matches = match std::fs::read_to_string(dir.join("gitdir")) {
                Ok(gitdir) => Path::new(gitdir.trim()) == ours,
                // git appends a number when the name is taken: thread-ab12cd34 → thread-ab12cd341.
                Err(_) => name
                    .strip_prefix(&base)
                    .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit())),
            };
            if matches {
                crate::trash::remove_now(&dir)?;
            }
        }
        Ok(())
    }

    /// libgit2's handle, when it can open the repository.
    fn git2(&self) -> Option<std::rc::Rc<git2::Repository>> {
        crate::git::open(&self.main_root)
    }

    /// Full commit id of `rev`, or `None` if it does not name a commit.
    pub fn resolve_commit(&self, rev: &str) -> Result<Option<String>> {
        if let Some(repo) = self.git2() {
            // A revision libgit2 does not understand is asked of git below.
            if let Ok(obj) = repo.revparse_single(rev)
                && let Ok(commit) = obj.peel_to_commit()
            {
                return Ok(Some(commit.id().to_string()));
            }
        }
        let spec = format!("{rev}^{{commit}}");
        let out = self.git.output(
            &self.main_root,
            &["rev-parse", "-q", "--verify", "--end-of-options", &spec],
        )?;
        Ok(out.success.then(|| out.stdout.trim().to_string()))
    }

    /// Whether `refs/heads/<branch>` exists.
    pub fn branch_exists(&self, branch: &str) -> Result<bool> {
        let r = format!("refs/heads/{branch}");
        if let Some(repo) = self.git2() {
            return Ok(repo.find_reference(&r).is_ok());
        }
        self.git
            .check(&self.main_root, &["show-ref", "-q", "--verify", &r])
    }

    /// Whether `branch` is a valid branch name (`git check-ref-format --branch`).
    pub fn valid_branch_name(&self, branch: &str) -> Result<bool> {
        if branch.starts_with('-') {
            return Ok(false);
        }
        if let Ok(valid) = git2::Branch::name_is_valid(branch) {
            return Ok(valid);
        }
        self.git
            .check(&self.main_root, &["check-ref-format", "--branch", branch])
    }

    /// The remote URL of `origin` (or the first remote), if any.
    pub fn remote_url(&self) -> Result<Option<String>> {
        if let Some(repo) = self.git2()
            && let Ok(names) = repo.remotes()
        {
            let names: Vec<&str> = names.iter().flatten().flatten().collect();
            let Some(name) = names.iter().find(|n| **n == "origin").or(names.first()) else {
                return Ok(None);
            };
            return Ok(repo
                .find_remote(name)
                .ok()
                .and_then(|r| r.url().ok().map(str::to_string)));
        }
        let remotes = self.git.output(&self.main_root, &["remote"])?;
        let names: Vec<&str> = remotes.stdout.lines().collect();
        let Some(name) = names.iter().find(|n| **n == "origin").or(names.first()) else {
            return Ok(None);
        };
        let url = self
            .git
            .output(&self.main_root, &["remote", "get-url", name])?;
        Ok(url.success.then(|| url.stdout.trim().to_string()))
    }

    /// Refs that stand for "the default branch": the local default branch and
    /// its remote-tracking counterpart, those that exist.
    pub fn default_branch_refs(&self) -> Result<Vec<String>> {
        if let Some(git) = self.git2() {
            return Ok(default_branch_refs_git2(&git));
        }
        let mut name = None;
        let origin_head = self.git.output(
            &self.main_root,
            &["symbolic-ref", "-q", "refs/remotes/origin/HEAD"],
        )?;
        if origin_head.success {
            name = origin_head
                .stdout
                .trim()
                .strip_prefix("refs/remotes/origin/")
                .map(str::to_string);
        }
        if name.is_none() {
            let configured = self
                .git
                .output(&self.main_root, &["config", "init.defaultBranch"])?;
            for candidate in [configured.stdout.trim(), "main", "master"] {
                if !candidate.is_empty() && self.branch_exists(candidate)? {
                    name = Some(candidate.to_string());
                    break;
                }
            }
        }
        let Some(name) = name else {
            return Ok(Vec::new());
        };
        let mut refs = Vec::new();
        for r in [
            format!("refs/heads/{name}"),
            format!("refs/remotes/origin/{name}"),
        ] {
            if self
                .git
                .check(&self.main_root, &["show-ref", "-q", "--verify", &r])?
            {
                refs.push(r);
            }
        }
        Ok(refs)
    }

    /// Whether `commit` is contained in one of `refs`.
    pub fn is_integrated(&self, commit: &str, refs: &[String]) -> Result<bool> {
        for r in refs {
            if self
                .git
                .check(&self.main_root, &["merge-base", "--is-ancestor", commit, r])?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// How `tip` is integrated into the default branch (its local branch or
    /// its remote-tracking one), if it is: by ancestry, a merge, a squash or
    /// a rebase (see [`super::integrated`]).
    pub fn integration(&self, tip: &str) -> Result<Option<super::Integration>> {
        let refs = self.default_branch_refs()?;
        let git = self.git2();
        let oid = git2::Oid::from_str(tip).ok();
        if let (Some(git), Some(oid)) = (git, oid) {
            let checker = super::integrated::Checker::open(&self.main_root);
            let found = checker.check(&git, oid, &refs);
            checker.save();
            return found;
        }
        // libgit2 cannot open this repository: ancestry, through git.
        for r in &refs {
            if self.is_integrated(tip, std::slice::from_ref(r))? {
                return Ok(Some(super::Integration {
                    reason: super::Reason::Ancestor,
                    target: r.clone(),
                }));
            }
        }
        Ok(None)
    }

    /// The upstream of `branch` (`origin/x`), if one is configured and exists.
    pub fn upstream(&self, branch: &str) -> Result<Option<String>> {
        let r = format!("refs/heads/{branch}");
        let out = self.git.run(
            &self.main_root,
            &["for-each-ref", "--format=%(upstream)", &r],
        )?;
        let upstream = out.trim().to_string();
        if upstream.is_empty() {
            return Ok(None);
        }
        let exists = self
            .git
            .check(&self.main_root, &["show-ref", "-q", "--verify", &upstream])?;
        Ok(exists.then_some(upstream))
    }

    /// Commits reachable from `branch` that are neither on its upstream nor
    /// integrated into the default branch: work that exists nowhere else.
    pub fn unsaved_commits(&self, branch: &str) -> Result<Vec<String>> {
        if let Some(repo) = self.git2()
            && let Some(commits) = unsaved_commits_git2(&repo, branch)
        {
            return Ok(commits);
        }
        let tip = format!("refs/heads/{branch}");
        let mut args = vec![
            "rev-list".to_string(),
            "--oneline".into(),
            tip,
            "--not".into(),
        ];
        args.extend(self.upstream(branch)?);
        args.extend(self.default_branch_refs()?);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.git.run(&self.main_root, &refs)?;
        Ok(out.lines().map(str::to_string).collect())
    }
}

/// [`Repo::unsaved_commits`] with libgit2 (`<short id> <subject>`, newest
/// first, as `git rev-list --oneline` prints them); `None` when libgit2
/// cannot answer, and git is asked.
fn unsaved_commits_git2(repo: &git2::Repository, branch: &str) -> Option<Vec<String>> {
    let local = repo.find_branch(branch, git2::BranchType::Local).ok()?;
    let tip = local.get().target()?;
    let mut walk = repo.revwalk().ok()?;
    walk.set_sorting(git2::Sort::TIME).ok()?;
    walk.push(tip).ok()?;
    let upstream = local.upstream().ok().and_then(|u| u.get().target());
    let defaults = default_branch_refs_git2(repo)
        .into_iter()
        .filter_map(|r| repo.refname_to_id(&r).ok());
    for oid in upstream.into_iter().chain(defaults) {
        walk.hide(oid).ok()?;
    }
    walk.map(|oid| {
        let commit = repo.find_commit(oid.ok()?).ok()?;
        let short = commit.as_object().short_id().ok()?;
        Some(format!(
            "{} {}",
            short.as_str().ok()?,
            commit.summary().ok().flatten().unwrap_or_default()
        ))
    })
    .collect()
}

/// [`Repo::default_branch_refs`] with libgit2: no subprocess.
fn default_branch_refs_git2(git: &git2::Repository) -> Vec<String> {
    let exists = |r: &str| git.find_reference(r).is_ok();
    let mut name = git
        .find_reference("refs/remotes/origin/HEAD")
        .ok()
        .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string))
        .and_then(|t| t.strip_prefix("refs/remotes/origin/").map(str::to_string));
    if name.is_none() {
        let configured = git
            .config()
            .ok()
            .and_then(|c| c.get_string("init.defaultBranch").ok())
            .unwrap_or_default();
        name = [configured.as_str(), "main", "master"]
            .into_iter()
            .find(|c| !c.is_empty() && exists(&format!("refs/heads/{c}")))
            .map(str::to_string);
    }
    let Some(name) = name else { return Vec::new() };
    [
        format!("refs/heads/{name}"),
        format!("refs/remotes/origin/{name}"),
    ]
    .into_iter()
    .filter(|r| exists(r))
    .collect()
}

/// Parses `git worktree list --porcelain -z`.
pub fn parse_worktree_list(out: &str) -> Vec<WorktreeEntry> {
    let mut entries = Vec::new();
    let mut current: Option<WorktreeEntry> = None;
    for field in out.split('\0') {
        if field.is_empty() {
            if let Some(e) = current.take() {
                entries.push(e);
            }
            continue;
        }
        let (key, value) = field.split_once(' ').unwrap_or((field, ""));
        if key == "worktree" {
            if let Some(e) = current.take() {
                entries.push(e);
            }
            current = Some(WorktreeEntry {
                path: PathBuf::from(value),
                head: None,
                branch: None,
                bare: false,
                locked: None,
                prunable: false,
            });
            continue;
        }
        let Some(e) = current.as_mut() else { continue };
        match key {
            // An unborn branch's HEAD is all zeros: no commit.
            "HEAD" if value.bytes().all(|b| b == b'0') => e.head = None,
            "HEAD" => e.head = Some(value.to_string()),
            "branch" => {
                e.branch = Some(
                    value
                        .strip_prefix("refs/heads/")
                        .unwrap_or(value)
                        .to_string(),
                )
            }
            "bare" => e.bare = true,
            "locked" => e.locked = Some(value.to_string()),
            "prunable" => e.prunable = true,
            _ => {}
        }
    }
    if let Some(e) = current {
        entries.push(e);
    }
    entries
}

/// Whether the worktree at `path` has uncommitted changes: modified, staged,
/// or untracked files that are not ignored — grove's own files (threads,
/// its `.agent/.grove/` area) aside.
///
/// Asked of `git status`, not libgit2: libgit2 re-hashes the whole index
/// (SHA-1 with collision detection) and copies every entry each time it
/// opens one, which on a 5,000-file worktree costs more than git's whole
/// status (measured in `benches/worktree.rs`, figures in the README). The
/// status never takes the index lock (`GIT_OPTIONAL_LOCKS=0`), so an agent
/// committing in that worktree at the same moment is never refused.
pub fn is_dirty(path: &Path) -> Result<bool> {
    dirty(path, true)
}

/// [`is_dirty`] for one of many worktrees checked at once, one per core:
/// git's own threads (`core.preloadIndex`) would only compete with the
/// other checks (measured: 0.62x instead of 0.70x a serial `git status`
/// loop over 100 worktrees on 2 cores).
pub(crate) fn is_dirty_among_many(path: &Path) -> Result<bool> {
    dirty(path, false)
}

/// What `git status` shows in a worktree (grove's own files aside): how
/// many tracked files changed (staged or not) and how many are untracked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    pub tracked: usize,
    pub untracked: usize,
}

impl StatusCounts {
    /// Whether anything is uncommitted.
    pub fn any(self) -> bool {
        self.tracked + self.untracked > 0
    }
}

/// [`is_dirty_among_many`], counted: the same `git status`, read to its end
/// instead of stopping at the first entry (the parse costs nothing beside
/// git's run).
pub(crate) fn status_counts_among_many(path: &Path) -> Result<StatusCounts> {
    status_counts(path, false, false)
}

fn dirty(path: &Path, preload: bool) -> Result<bool> {
    Ok(status_counts(path, preload, true)?.any())
}

/// The worktree's uncommitted entries, grove's own aside; `first_only`
/// stops at the first one (all a yes/no question needs).
fn status_counts(path: &Path, preload: bool, first_only: bool) -> Result<StatusCounts> {
    let git = Git::find()?;
    let status = |untracked: &str, pathspec: &[&str]| -> Result<Vec<u8>> {
        let mut args = vec![
            "-c",
            if preload {
                "core.preloadIndex=true"
            } else {
                "core.preloadIndex=false"
            },
            "status",
            "--porcelain=v2",
            "-z",
            "--no-renames",
            // The user's config must not hide work from a removal check.
            "--ignore-submodules=none",
            untracked,
        ];
        args.extend(pathspec);
        git.bytes(path, &args, None, true)
    };
    let out = status("--untracked-files=normal", &[])?;
    let mut counts = StatusCounts::default();
    let mut collapsed_agent = false;
    for (kind, entry) in status_entries(&out) {
        if crate::store::is_grove_path(entry.strip_suffix(b"/").unwrap_or(entry)) {
            continue;
        }
        if entry == b".agent/" {
            collapsed_agent = true;
            continue;
        }
        counts.add(kind);
        if first_only {
            return Ok(counts);
        }
    }
    if !collapsed_agent || (first_only && counts.any()) {
        return Ok(counts);
    }
    // A wholly untracked `.agent/` is one line: look inside it.
    let out = status("--untracked-files=all", &["--", ".agent"])?;
    for (kind, entry) in status_entries(&out) {
        if !crate::store::is_grove_path(entry) {
            counts.add(kind);
            if first_only {
                break;
            }
        }
    }
    Ok(counts)
}

impl StatusCounts {
    fn add(&mut self, kind: u8) {
        if kind == b'?' {
            self.untracked += 1;
        } else {
            self.tracked += 1;
        }
    }
}

/// The kind (`1`, `2`, `u`, `?`, `!`) and path of each `git status
/// --porcelain=v2 -z` entry (a rename's original path skipped).
fn status_entries(out: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    std::iter::from_fn(move || {
        loop {
            let entry = fields.next()?;
            // Fields before the path: ordinary 8, rename 9, unmerged 10.
            let skip = match entry.first()? {
                b'1' => 8,
                b'2' => 9,
                b'u' => 10,
                b'?' | b'!' => 1,
                _ => continue,
            };
            if entry[0] == b'2' {
                fields.next();
            }
            let path = entry.splitn(skip + 1, |&b| b == b' ').nth(skip)?;
            return Some((entry[0], path));
        }
    })
}
