//! A thread as git objects: a tree (`thread.json`, `messages.jsonl`,
//! `assets/`) written with git's own plumbing, and read back from a
//! commit. What comes from a commit is someone else's data: names are
//! checked before anything is written from it.

use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::gitcmd::Git;
use crate::store::Thread;

/// A thread's files as read from a commit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadFiles {
    pub meta: Vec<u8>,
    pub log: Vec<u8>,
    /// Asset file names (checked: plain names) and contents.
    pub assets: Vec<(String, Vec<u8>)>,
}

/// Writes `thread`'s files as git objects in the repository at `root`:
/// the id of their tree. Only the log's complete lines are taken.
pub fn write_tree(git: &Git, root: &Path, thread: &Thread) -> Result<String> {
    let meta = crate::fsutil::read(&thread.meta_path())?;
    let log =
        complete_lines(&crate::fsutil::read_opt(&thread.messages_path())?.unwrap_or_default());
    let mut entries = vec![
        blob_entry(crate::atsf::THREAD_FILE, &hash(git, root, &meta)?),
        blob_entry(crate::atsf::MESSAGES_FILE, &hash(git, root, &log)?),
    ];
    let assets = asset_files(&thread.assets_dir())?;
    if !assets.is_empty() {
        let mut asset_entries = Vec::new();
        for (name, path) in &assets {
            let bytes = std::fs::read(path).ctx("reading", path)?;
            asset_entries.push(blob_entry(name, &hash(git, root, &bytes)?));
        }
        let tree = mktree(git, root, &asset_entries)?;
        entries.push(format!("040000 tree {tree}\t{}", crate::atsf::ASSETS_DIR));
    }
    mktree(git, root, &entries)
}

/// The thread files of `commit` (read through libgit2).
pub fn read_commit(root: &Path, commit: &str) -> Result<ThreadFiles> {
    let repo = git2::Repository::open(root).map_err(|e| Error::Git(e.to_string()))?;
    let oid = git2::Oid::from_str(commit).map_err(|e| Error::Git(e.to_string()))?;
    let tree = repo
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(|e| Error::Git(format!("reading commit {commit}: {e}")))?;
    let blob = |name: &str| -> Result<Vec<u8>> {
        let Some(entry) = tree.get_name(name) else {
            return Ok(Vec::new());
        };
        let blob = repo
            .find_blob(entry.id())
            .map_err(|e| Error::Git(format!("reading {name} of {commit}: {e}")))?;
        Ok(blob.content().to_vec())
    };
    let mut files = ThreadFiles {
        meta: blob(crate::atsf::THREAD_FILE)?,
        log: blob(crate::atsf::MESSAGES_FILE)?,
        assets: Vec::new(),
    };
    if let Some(entry) = tree.get_name(crate::atsf::ASSETS_DIR) {
        let assets = repo
            .find_tree(entry.id())
            .map_err(|e| Error::Git(format!("reading the assets of {commit}: {e}")))?;
        for a in assets.iter() {
            let Some(name) = a.name().ok().filter(|n| plain_name(n)) else {
                continue; // a name that could leave the directory: never written
            };
            if let Ok(blob) = repo.find_blob(a.id()) {
                files
                    .assets
                    .push((name.to_string(), blob.content().to_vec()));
            }
        }
    }
    Ok(files)
}

/// Whether `name` is a plain file name: no separator, not `.`/`..`, no
/// control character.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// The bytes up to the last newline.
pub fn complete_lines(bytes: &[u8]) -> Vec<u8> {
    match memchr::memrchr(b'\n', bytes) {
        Some(end) => bytes[..=end].to_vec(),
        None => Vec::new(),
    }
}

fn asset_files(dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Regular files only (a link is not followed out of the thread).
        if plain_name(&name) && entry.file_type().is_ok_and(|t| t.is_file()) {
            out.push((name, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn hash(git: &Git, root: &Path, bytes: &[u8]) -> Result<String> {
    let out = git.bytes(root, &["hash-object", "-w", "--stdin"], Some(bytes), false)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

fn blob_entry(name: &str, oid: &str) -> String {
    format!("100644 blob {oid}\t{name}")
}

fn mktree(git: &Git, root: &Path, entries: &[String]) -> Result<String> {
    let mut input = Vec::new();
    for e in entries {
        input.extend_from_slice(e.as_bytes());
        input.push(0);
    }
    let out = git.bytes(root, &["mktree", "-z"], Some(&input), false)?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}
