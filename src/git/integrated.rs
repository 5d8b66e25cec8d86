//! Whether a branch's work is already in the default branch, however it got
//! there: fast-forward, merge commit, squash merge, rebase merge.
//!
//! The tests run cheapest first and stop at the first that says yes:
//! 1. `ancestor` — the branch tip is the target or one of its ancestors;
//! 2. `no-changes` — the branch changes nothing against the merge base;
//! 3. `trees-match` — the branch tip's tree is the target's;
//! 4. `merge-adds-nothing` — merging the branch into the target (in memory,
//!    libgit2) gives the target's tree;
//! 5. `squash-patch-id` — the branch's whole change since the merge base has
//!    the patch-id of one target commit since the merge base (a squash
//!    merge, even when the target changed the same lines later);
//! 6. `rebase-patch-ids` — every branch commit's patch-id is among the target
//!    commits' since the merge base (a rebase merge), and every merge commit
//!    on the branch is the automatic merge of its parents (one that is not
//!    carries a change no patch-id stands for).
//!
//! Patch-ids here count whitespace (as `git patch-id --verbatim`): a change
//! of indentation is a change. Steps 5 and 6 look at most
//! [`PATCH_ID_LIMIT`] commits on each side; a branch with more is not
//! integrated by step 6 (its older commits go unread). A branch with a
//! commit after its integrated point is not integrated: that commit is
//! found by none of the tests. Verdicts depend only on the two
//! commits, so they are kept by (branch commit, target commit) in grove's
//! data directory and a `list` computes each once.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// How many commits the patch-id tests read on each side at most.
pub const PATCH_ID_LIMIT: usize = 500;

/// How many verdicts the cache keeps per repository.
const CACHE_LIMIT: usize = 4096;

/// Why a branch counts as integrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    Ancestor,
    NoChanges,
    TreesMatch,
    MergeAddsNothing,
    SquashPatchId,
    RebasePatchIds,
}

impl Reason {
    /// Its name: `squash-patch-id`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Ancestor => "ancestor",
            Reason::NoChanges => "no-changes",
            Reason::TreesMatch => "trees-match",
            Reason::MergeAddsNothing => "merge-adds-nothing",
            Reason::SquashPatchId => "squash-patch-id",
            Reason::RebasePatchIds => "rebase-patch-ids",
        }
    }
}

/// A branch found integrated: why, and into which ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    pub reason: Reason,
    /// The ref it is integrated into (`refs/heads/main`, `refs/remotes/origin/main`).
    pub target: String,
}

impl std::fmt::Display for Integration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self
            .target
            .strip_prefix("refs/heads/")
            .or_else(|| self.target.strip_prefix("refs/remotes/"))
            .unwrap_or(&self.target);
        write!(f, "{} into {short}", self.reason.as_str())
    }
}

/// Checks branches of one repository, with the verdicts cache.
pub struct Checker {
    path: Option<PathBuf>,
    /// An older grove's file, its verdicts not to be trusted.
    outdated: Option<PathBuf>,
    known: Mutex<BTreeMap<String, Option<Reason>>>,
    added: Mutex<BTreeMap<String, Option<Reason>>>,
}

impl Checker {
    /// A checker for the repository at `main_root`, its cache read.
    pub fn open(main_root: &Path) -> Checker {
        let path = cache_path(main_root).ok();
        let known = path.as_deref().map(read_cache).unwrap_or_default();
        Checker {
            path,
            outdated: unversioned_cache_path(main_root).ok(),
            known: Mutex::new(known),
            added: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether `tip` is integrated into one of `targets` (ref names; those
    /// that do not resolve are passed over).
    pub fn check(
        &self,
        git: &Repository,
        tip: Oid,
        targets: &[String],
    ) -> Result<Option<Integration>> {
        let resolved: Vec<(String, Oid)> = targets
            .iter()
            .filter_map(|r| Some((r.clone(), git.refname_to_id(r).ok()?)))
            .collect();
        // The cheap test on every target first.
        for (name, target) in &resolved {
            if *target == tip || git.graph_descendant_of(*target, tip).map_err(git_err)? {
                return Ok(Some(Integration {
                    reason: Reason::Ancestor,
                    target: name.clone(),
                }));
            }
        }
        for (name, target) in &resolved {
            let key = format!("{tip}:{target}");
            let cached = lock(&self.known).get(&key).copied();
            let verdict = match cached {
                Some(v) => v,
                None => {
                    let v = verdict(git, tip, *target)?;
                    lock(&self.known).insert(key.clone(), v);
                    lock(&self.added).insert(key, v);
                    v
                }
            };
            if let Some(reason) = verdict {
                return Ok(Some(Integration {
                    reason,
                    target: name.clone(),
                }));
            }
        }
        Ok(None)
    }

    /// Writes the verdicts found since [`Checker::open`] to the cache (best
    /// effort: a cache that cannot be written only costs time).
    pub fn save(&self) {
        let added = std::mem::take(&mut *lock(&self.added));
        let Some(path) = &self.path else { return };
        if added.is_empty() {
            return;
        }
        let _ = save_cache(path, added);
        if let Some(outdated) = &self.outdated {
            let _ = std::fs::remove_file(outdated);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn git_err(e: git2::Error) -> Error {
    Error::Git(e.message().to_string())
}

/// The tests after `ancestor`, for one target.
fn verdict(git: &Repository, tip: Oid, target: Oid) -> Result<Option<Reason>> {
    let Ok(base) = git.merge_base(tip, target) else {
        return Ok(None);
    };
    let tree = |oid: Oid| -> Result<Oid> { Ok(git.find_commit(oid).map_err(git_err)?.tree_id()) };
    let tip_tree = tree(tip)?;
    if tip_tree == tree(base)? {
        return Ok(Some(Reason::NoChanges));
    }
    let target_tree = tree(target)?;
    if tip_tree == target_tree {
        return Ok(Some(Reason::TreesMatch));
    }
    if merge_adds_nothing(git, tip, target, target_tree)? {
        return Ok(Some(Reason::MergeAddsNothing));
    }
    let upstream = patch_ids_since(git, target, base)?;
    if upstream.is_empty() {
        return Ok(None);
    }
    let whole = patch_id(git, Some(tree(base)?), tip_tree)?;
    if whole.is_some_and(|id| upstream.contains(&id)) {
        return Ok(Some(Reason::SquashPatchId));
    }
    let Some(mine) = branch_patch_ids(git, tip, target, base)? else {
        return Ok(None);
    };
    if !mine.is_empty() && mine.iter().all(|id| upstream.contains(id)) {
        return Ok(Some(Reason::RebasePatchIds));
    }
    Ok(None)
}

fn merge_adds_nothing(git: &Repository, tip: Oid, target: Oid, target_tree: Oid) -> Result<bool> {
    let ours = git.find_commit(target).map_err(git_err)?;
    let theirs = git.find_commit(tip).map_err(git_err)?;
    let mut index = git.merge_commits(&ours, &theirs, None).map_err(git_err)?;
    if index.has_conflicts() {
        return Ok(false);
    }
    let merged = index.write_tree_to(git).map_err(git_err)?;
    Ok(merged == target_tree)
}

/// The patch-ids of the non-merge commits on `from` since `base` (at most
/// [`PATCH_ID_LIMIT`] commits read): the target's side, where a commit
/// missed only makes a branch look less integrated.
fn patch_ids_since(git: &Repository, from: Oid, base: Oid) -> Result<HashSet<PatchId>> {
    let mut walk = git.revwalk().map_err(git_err)?;
    walk.push(from).map_err(git_err)?;
    walk.hide(base).map_err(git_err)?;
    let mut ids = HashSet::new();
    for oid in walk.take(PATCH_ID_LIMIT) {
        let commit = git.find_commit(oid.map_err(git_err)?).map_err(git_err)?;
        if commit.parent_count() != 1 {
            continue;
        }
        let parent = commit.parent(0).map_err(git_err)?;
        if let Some(id) = patch_id(git, Some(parent.tree_id()), commit.tree_id())? {
            ids.insert(id);
        }
    }
    Ok(ids)
}

/// The patch-ids of the branch's commits that are not on the target (since
/// `base`); `None` when a commit carries a change that no patch-id stands
/// for, or when there are more than [`PATCH_ID_LIMIT`] to read (the ones
/// left unread could be anything).
///
/// A merge commit's own change is what its tree adds to the automatic
/// merge of its parents: a conflict resolution, or a fix written into the
/// merge ("evil merge"). The default branch holding the patch-ids of the
/// merged commits does not hold that, so such a merge — or one whose
/// automatic result cannot be made here (a conflict, an octopus) — leaves
/// the branch not integrated by this test.
fn branch_patch_ids(
    git: &Repository,
    tip: Oid,
    target: Oid,
    base: Oid,
) -> Result<Option<HashSet<PatchId>>> {
    let mut walk = git.revwalk().map_err(git_err)?;
    walk.push(tip).map_err(git_err)?;
    walk.hide(base).map_err(git_err)?;
    // What the target has is integrated, merges included.
    walk.hide(target).map_err(git_err)?;
    let mut ids = HashSet::new();
    for (read, oid) in walk.enumerate() {
        if read == PATCH_ID_LIMIT {
            return Ok(None);
        }
        let commit = git.find_commit(oid.map_err(git_err)?).map_err(git_err)?;
        let change = match commit.parent_count() {
            0 => patch_id(git, None, commit.tree_id())?,
            1 => {
                let parent = commit.parent(0).map_err(git_err)?;
                patch_id(git, Some(parent.tree_id()), commit.tree_id())?
            }
            _ if is_automatic_merge(git, &commit) => None,
            _ => return Ok(None),
        };
        ids.extend(change);
    }
    Ok(Some(ids))
}

/// Whether the merge `commit` has exactly the tree git's automatic merge
/// of its two parents gives (libgit2's merge, in memory). A merge that
/// cannot be made again here — conflicting, more than two parents, no
/// result — is not: what it holds is known only from its own tree.
fn is_automatic_merge(git: &Repository, commit: &git2::Commit<'_>) -> bool {
    if commit.parent_count() != 2 {
        return false;
    }
    let remade = || -> std::result::Result<Option<Oid>, git2::Error> {
        let mut index = git.merge_commits(&commit.parent(0)?, &commit.parent(1)?, None)?;
        if index.has_conflicts() {
            return Ok(None);
        }
        index.write_tree_to(git).map(Some)
    };
    matches!(remade(), Ok(Some(tree)) if tree == commit.tree_id())
}

/// A patch-id: what identifies a change wherever it is applied.
type PatchId = [u8; 32];

/// The patch-id of the change from tree `old` to tree `new` (`None` for
/// no change). Unlike libgit2's (and `git patch-id --stable`), which drop
/// whitespace, every byte of every line counts, as `git patch-id
/// --verbatim` does: moving a Python line into a block is a change of
/// whitespace only, and it is not the change of a commit that strips the
/// line's trailing blanks. Line numbers are left out, so the id of a change
/// is the same wherever in the file it lands.
fn patch_id(git: &Repository, old: Option<Oid>, new: Oid) -> Result<Option<PatchId>> {
    let old = old.map(|o| git.find_tree(o)).transpose().map_err(git_err)?;
    let new = git.find_tree(new).map_err(git_err)?;
    let diff = git
        .diff_tree_to_tree(old.as_ref(), Some(&new), None)
        .map_err(git_err)?;
    if diff.deltas().len() == 0 {
        return Ok(None);
    }
    let mut hasher = Sha256::new();
    for idx in 0..diff.deltas().len() {
        hash_file_change(&diff, idx, &mut hasher)?;
    }
    Ok(Some(hasher.finalize().into()))
}

/// Feeds file `idx` of `diff` to `hasher`: its paths and modes, then the
/// lines of its hunks as they are (each field length-prefixed, so no two
/// changes feed the same bytes). A binary file or a submodule has no lines
/// to compare: its old and new object ids stand for its content.
fn hash_file_change(diff: &git2::Diff<'_>, idx: usize, hasher: &mut Sha256) -> Result<()> {
    let Some(delta) = diff.get_delta(idx) else {
        return Ok(());
    };
    let field = |hasher: &mut Sha256, bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for file in [delta.old_file(), delta.new_file()] {
        field(hasher, file.path_bytes().unwrap_or_default());
        field(hasher, &u32::from(file.mode()).to_le_bytes());
    }
    let patch = git2::Patch::from_diff(diff, idx).map_err(git_err)?;
    let gitlink = [delta.old_file(), delta.new_file()]
        .iter()
        .any(|f| f.mode() == git2::FileMode::Commit);
    let lines = patch.filter(|p| !gitlink && !p.delta().flags().is_binary());
    let Some(patch) = lines else {
        field(hasher, b"objects");
        field(hasher, delta.old_file().id().as_bytes());
        field(hasher, delta.new_file().id().as_bytes());
        return Ok(());
    };
    for hunk in 0..patch.num_hunks() {
        field(hasher, b"hunk");
        let count = patch.num_lines_in_hunk(hunk).map_err(git_err)?;
        for line in 0..count {
            let line = patch.line_in_hunk(hunk, line).map_err(git_err)?;
            field(hasher, &u32::from(line.origin()).to_le_bytes());
            field(hasher, line.content());
        }
    }
    Ok(())
}

/// The version of the rules the cached verdicts were found by: a verdict
/// found by other rules may be wrong by these (version 1 took whitespace
/// for nothing and merge commits for no change), so each version keeps its
/// own file.
const RULES_VERSION: u32 = 2;

fn cache_path(main_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::data_dir()?.join("integration").join(format!(
        "{}.v{RULES_VERSION}.json",
        crate::home::repo_key(main_root)
    )))
}

/// The file of version 1, which named no version; it is deleted when the
/// new one is written.
fn unversioned_cache_path(main_root: &Path) -> Result<PathBuf> {
    Ok(crate::home::data_dir()?
        .join("integration")
        .join(format!("{}.json", crate::home::repo_key(main_root))))
}

fn read_cache(path: &Path) -> BTreeMap<String, Option<Reason>> {
    crate::fsutil::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Merges `added` into the cache file under its lock, keeping it bounded.
fn save_cache(path: &Path, added: BTreeMap<String, Option<Reason>>) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::Other(format!("{} has no directory", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    let _lock = crate::fsutil::FileLock::acquire(&crate::fsutil::lock_path_for(path))?;
    let mut all = read_cache(path);
    all.extend(added);
    while all.len() > CACHE_LIMIT {
        let Some(first) = all.keys().next().cloned() else {
            break;
        };
        all.remove(&first);
    }
    let bytes = serde_json::to_vec(&all).map_err(|e| Error::Other(e.to_string()))?;
    crate::fsutil::write_atomic(path, &bytes)
}
