//! The file a question is about, as a path inside the repository.
//!
//! A repository can hold a symbolic link to anywhere (`notes -> /etc`), so a
//! path that goes through one is refused rather than followed, and a path
//! that leaves the repository (`../x`, `/etc/passwd`) is refused too: grove
//! reads the repository's own files only.

use std::path::{Component, Path, PathBuf};

use super::AttributionError;

/// `file` (relative to `cwd`, or absolute) as a path relative to `root`
/// with `/` between its parts; refused when it leaves `root`, goes through
/// a symbolic link inside it, or is no regular file.
pub fn resolve(root: &Path, cwd: &Path, file: &Path) -> Result<String, AttributionError> {
    let asked = normal(&cwd.join(file));
    let inside = match asked.strip_prefix(root) {
        Ok(rel) => rel.to_path_buf(),
        // A link above the repository (`/tmp` to `/private/tmp`) is the
        // machine's layout, not the repository's: its parent's real path
        // decides.
        Err(_) => real_parent(&asked)
            .and_then(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
            .ok_or_else(|| AttributionError::Outside {
                path: asked.clone(),
                root: root.to_path_buf(),
            })?,
    };
    let not_a_file = |reason: &str| AttributionError::NotAFile {
        path: asked.clone(),
        reason: reason.to_string(),
    };
    if inside.as_os_str().is_empty() {
        return Err(not_a_file("it is the repository's root"));
    }
    let mut at = root.to_path_buf();
    let mut parts = Vec::new();
    for part in inside.components() {
        let Component::Normal(name) = part else {
            return Err(not_a_file("its path is not plain"));
        };
        if parts.is_empty() && name == ".git" {
            return Err(not_a_file("it is git's own"));
        }
        at.push(name);
        let meta = std::fs::symlink_metadata(&at).map_err(|e| not_a_file(&e.to_string()))?;
        if meta.file_type().is_symlink() {
            return Err(AttributionError::Symlink {
                path: asked.clone(),
                link: at,
            });
        }
        let Some(name) = name.to_str() else {
            return Err(not_a_file("its name is not UTF-8"));
        };
        parts.push(name.to_string());
    }
    if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_file()) {
        return Err(not_a_file("it is not a regular file"));
    }
    Ok(parts.join("/"))
}

/// `path` with `.` and `..` taken out as written (no link followed).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with its directory's real path (links resolved), when that
/// directory exists.
fn real_parent(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    Some(path.parent()?.canonicalize().ok()?.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_leaving_the_repository_or_through_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a\n").unwrap();
        std::fs::write(base.join("secret"), "s\n").unwrap();
        assert_eq!(
            resolve(&root, &root.join("src"), Path::new("a.rs")).unwrap(),
            "src/a.rs"
        );
        assert_eq!(
            resolve(&root, &root, Path::new("./src/../src/a.rs")).unwrap(),
            "src/a.rs"
        );
        assert!(matches!(
            resolve(&root, &root, Path::new("../secret")),
            Err(AttributionError::Outside { .. })
        ));
        assert!(matches!(
            resolve(&root, &root, &base.join("secret")),
            Err(AttributionError::Outside { .. })
        ));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&base, root.join("up")).unwrap();
            std::os::unix::fs::symlink(base.join("secret"), root.join("s")).unwrap();
            assert!(matches!(
                resolve(&root, &root, Path::new("up/secret")),
                Err(AttributionError::Symlink { .. })
            ));
            assert!(matches!(
                resolve(&root, &root, Path::new("s")),
                Err(AttributionError::Symlink { .. })
            ));
        }
        assert!(matches!(
            resolve(&root, &root, Path::new("src")),
            Err(AttributionError::NotAFile { .. })
        ));
        assert!(matches!(
            resolve(&root, &root, Path::new("missing.rs")),
            Err(AttributionError::NotAFile { .. })
        ));
    }
}
