//! A thread as git objects: a tree (`thread.json`, `messages.jsonl`,
//! `assets/`) written with git's own plumbing, and read back from a
//! commit. What comes from a commit is someone else's data: names are
//! checked before anything is written from it, and nothing but
//! `thread.json` (of a bounded size) is ever held in memory — logs and
//! assets go between git and files as streams, whatever their size.

use crate::store::ThreadFiles;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::git::cmd::Git;
use crate::store::Thread;

/// The most `thread.json` a pull reads (it is read whole; a log or an
/// asset of any size is streamed to disk by git instead).
pub const MAX_META: u64 = 16 << 20;

/// Writes `thread`'s files as git objects in the repository at `root`:
/// the id of their tree. Only the log's complete lines are taken.
pub fn write_tree(git: &Git, root: &Path, thread: &Thread) -> Result<String> {
    let meta = crate::fsutil::read(&thread.meta_path())?;
    let mut entries = vec![
        blob_entry(crate::atsf::THREAD_FILE, &hash(git, root, &meta)?),
        blob_entry(crate::atsf::MESSAGES_FILE, &hash_log(git, root, thread)?),
    ];
    let assets = asset_files(&thread.assets_dir())?;
    if !assets.is_empty() {
        let mut asset_entries = Vec::new();
        for (name, path) in &assets {
            let file = crate::fsutil::open_read(path)?;
            asset_entries.push(blob_entry(name, &hash_file(git, root, file, path)?));
        }
        let tree = mktree(git, root, &asset_entries)?;
        entries.push(format!("040000 tree {tree}\t{}", crate::atsf::ASSETS_DIR));
    }
    mktree(git, root, &entries)
}

/// Writes the thread files of `commit` (of the repository at `root`) into a
/// new staging directory inside `dir`: names and sizes read through
/// libgit2, `thread.json` whole (at most [`MAX_META`]), the log and the
/// assets streamed by `git cat-file` — a pull never holds a log in memory.
pub fn read_commit(git: &Git, root: &Path, commit: &str, dir: &Path) -> Result<ThreadFiles> {
    let repo = git2::Repository::open(root).map_err(|e| Error::Git(e.to_string()))?;
    let oid = git2::Oid::from_str(commit).map_err(|e| Error::Git(e.to_string()))?;
    let tree = repo
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(|e| Error::Git(format!("reading commit {commit}: {e}")))?;
    std::fs::create_dir_all(dir).ctx("creating", dir)?;
    let staging = tempfile::Builder::new()
        .prefix(crate::fsutil::TMP_PREFIX)
        .tempdir_in(dir)
        .ctx("creating a staging directory in", dir)?;
    let blob_of = |name: &str| -> Result<Option<git2::Oid>> {
        match tree.get_name(name) {
            None => Ok(None),
            Some(e) if e.kind() == Some(git2::ObjectType::Blob) => Ok(Some(e.id())),
            Some(_) => Err(Error::Other(format!(
                "{name} of commit {commit} is not a file; not brought in"
            ))),
        }
    };
    let meta = match blob_of(crate::atsf::THREAD_FILE)? {
        Some(id) => read_small_blob(&repo, id, commit)?,
        None => Vec::new(),
    };
    let log = staging.path().join(crate::atsf::MESSAGES_FILE);
    match blob_of(crate::atsf::MESSAGES_FILE)? {
        Some(id) => stream_blob(git, root, &id.to_string(), &log)?,
        None => drop(crate::fsutil::create_new(&log)?),
    }
    let mut assets = Vec::new();
    if let Some(entry) = tree.get_name(crate::atsf::ASSETS_DIR) {
        let listed = repo
            .find_tree(entry.id())
            .map_err(|e| Error::Git(format!("reading the assets of {commit}: {e}")))?;
        let to = staging.path().join(crate::atsf::ASSETS_DIR);
        std::fs::create_dir(&to).ctx("creating", &to)?;
        for a in listed.iter() {
            let Some(name) = a.name().ok().filter(|n| plain_name(n)) else {
                continue; // a name that could leave the directory: never written
            };
            if a.kind() != Some(git2::ObjectType::Blob) {
                continue;
            }
            let path = to.join(name);
            stream_blob(git, root, &a.id().to_string(), &path)?;
            assets.push((name.to_string(), path));
        }
    }
    Ok(ThreadFiles {
        staging,
        meta,
        log,
        assets,
    })
}

/// The `thread.json` blob `id`, refused above [`MAX_META`] before it is
/// read.
fn read_small_blob(repo: &git2::Repository, id: git2::Oid, commit: &str) -> Result<Vec<u8>> {
    let failed = |e: git2::Error| Error::Git(format!("reading thread.json of {commit}: {e}"));
    let (size, _) = repo
        .odb()
        .and_then(|odb| odb.read_header(id))
        .map_err(failed)?;
    if size as u64 > MAX_META {
        return Err(Error::Refused(format!(
            "the thread.json of commit {commit} is {} MiB, over the {} MiB a thread.json may be; not brought in",
            size >> 20,
            MAX_META >> 20
        )));
    }
    Ok(repo.find_blob(id).map_err(failed)?.content().to_vec())
}

/// Writes blob `oid` to the new file `path`, streamed by git.
fn stream_blob(git: &Git, root: &Path, oid: &str, path: &Path) -> Result<()> {
    let file = crate::fsutil::create_new(path)?;
    git.with_files(root, &["cat-file", "blob", oid], None, file)
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

fn asset_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
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

/// The blob of the log's complete lines, the file given to git as it is: a
/// torn last line (a write in progress) is left out through a copy of the
/// rest.
fn hash_log(git: &Git, root: &Path, thread: &Thread) -> Result<String> {
    let path = thread.messages_path();
    let Some(mut file) = crate::fsutil::open_read_opt(&path)? else {
        return hash(git, root, b"");
    };
    let len = file.metadata().ctx("reading metadata of", &path)?.len();
    let complete = crate::store::complete_len(&file, &path, len)?;
    file.rewind().ctx("reading", &path)?;
    if complete == len {
        return hash_file(git, root, file, &path);
    }
    let mut copy = tempfile::tempfile().ctx("creating a temporary file for", &path)?;
    std::io::copy(&mut (&mut file).take(complete), &mut copy).ctx("copying", &path)?;
    copy.rewind().ctx("copying", &path)?;
    hash_file(git, root, copy, &path)
}

/// Stores the content of `file` (read by git, never by grove) as a blob.
fn hash_file(git: &Git, root: &Path, file: std::fs::File, path: &Path) -> Result<String> {
    let mut out = tempfile::tempfile().ctx("creating a temporary file for", path)?;
    let written = out.try_clone().ctx("reading", path)?;
    git.with_files(root, &["hash-object", "-w", "--stdin"], Some(file), written)?;
    let mut oid = String::new();
    out.rewind().ctx("reading", path)?;
    out.read_to_string(&mut oid).ctx("reading", path)?;
    Ok(oid.trim().to_string())
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
