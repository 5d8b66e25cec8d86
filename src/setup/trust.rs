//! Trust for `postSetupCommands`: they come from a file in the repository,
//! so they run only after the user has trusted that exact list for that
//! repository. Symlinks need no trust.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::atsf::PostSetupCommand;
use crate::error::{Error, Result};

/// A hash of the command list as written in `config.json` (every field,
/// in order): a changed list is a different list, and asks again.
pub fn commands_hash(commands: &[PostSetupCommand]) -> String {
    let bytes = serde_json::to_vec(commands).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The hash `preRemoveCommands` are trusted by: trusting the setup
/// commands does not trust a teardown list, even an identical one.
pub fn teardown_hash(commands: &[PostSetupCommand]) -> String {
    let bytes = serde_json::to_vec(&serde_json::json!({ "preRemoveCommands": commands }))
        .unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What the trust question at `new` asks about: every command list the
/// answer trusts, each by its own hash, so the question lists them all.
#[derive(Debug, Clone, Copy)]
pub struct TrustAsked<'a> {
    /// `postSetupCommands`, run in the new worktree.
    pub setup: &'a [PostSetupCommand],
    /// `preRemoveCommands`, run in it before it is removed.
    pub teardown: &'a [PostSetupCommand],
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    /// Repository root → hashes of trusted command lists.
    #[serde(default)]
    repositories: BTreeMap<String, Vec<String>>,
}

/// `<data dir>/trust.json`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The trust file in grove's data directory.
    pub fn open() -> Result<Self> {
        Ok(TrustStore {
            path: crate::home::data_dir()?.join("trust.json"),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<TrustFile> {
        match crate::fsutil::open_read_opt(&self.path)? {
            None => Ok(TrustFile::default()),
            Some(file) => serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| {
                Error::parse(&self.path, format!("the trust store cannot be read: {e}"))
            }),
        }
    }

    /// Whether `hash` is trusted for the repository at `repo_root`. An
    /// unreadable trust store is an error the caller turns into "not
    /// trusted" with a warning: commands never run on a guess.
    pub fn is_trusted(&self, repo_root: &Path, hash: &str) -> Result<bool> {
        let file = self.load()?;
        Ok(file
            .repositories
            .get(&repo_root.to_string_lossy().into_owned())
            .is_some_and(|list| list.iter().any(|h| h == hash)))
    }

    /// Records `hash` as trusted for `repo_root`, under the trust store's
    /// lock. The file is private to its owner (0600). An unreadable trust
    /// store is kept aside (its path is returned) and a new one started:
    /// nothing is lost.
    pub fn trust(&self, repo_root: &Path, hash: &str) -> Result<Option<PathBuf>> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        }
        let _lock = crate::fsutil::FileLock::acquire(&crate::fsutil::lock_path_for(&self.path))?;
        let (mut file, saved) = match self.load() {
            Ok(file) => (file, None),
            Err(Error::Parse { .. }) => (TrustFile::default(), Some(self.keep_aside()?)),
            Err(e) => return Err(e),
        };
        let list = file
            .repositories
            .entry(repo_root.to_string_lossy().into_owned())
            .or_default();
        if !list.iter().any(|h| h == hash) {
            list.push(hash.to_string());
        }
        let bytes = crate::atsf::to_pretty(&file)?;
        crate::fsutil::write_atomic_private(&self.path, &bytes)?;
        Ok(saved)
    }

    /// Renames an unreadable trust store to `trust.json.unreadable-<time>`.
    fn keep_aside(&self) -> Result<PathBuf> {
        let stamp = jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%SZ")
            .to_string();
        let aside = self
            .path
            .with_file_name(format!("trust.json.unreadable-{stamp}"));
        std::fs::rename(&self.path, &aside)
            .map_err(|e| Error::io("moving aside", &self.path, e))?;
        Ok(aside)
    }
}
