//! `worktreeHooks.symlinks`: link shared files of the main repository into a worktree.

use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use super::{HookKind, HookOutcome, HookStatus};
use crate::atsf::SymlinkHook;

/// Checks that `input` is a relative path that stays inside its root
/// lexically, and returns it normalized (`.` removed, `a/../b` folded).
///
/// ```
/// use grove::setup::checked_relative;
/// assert_eq!(checked_relative("a/./b/../c").unwrap(), std::path::PathBuf::from("a/c"));
/// assert!(checked_relative("../x").is_err());
/// assert!(checked_relative("/etc/passwd").is_err());
/// ```
pub fn checked_relative(input: &str) -> Result<PathBuf, String> {
    if input.trim().is_empty() {
        return Err("the path is empty".into());
    }
    let path = Path::new(input);
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(c) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(format!("{input:?} leaves its root through `..`"));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{input:?} is absolute; give a path relative to the root"
                ));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(format!("{input:?} names the root itself"));
    }
    Ok(out)
}

/// Checks a `worktreeHooks.symlinks` path: [`checked_relative`], and none of
/// what could make it mean more than one path once written into
/// `info/exclude` or shown on a terminal — a control character (a newline
/// would start a rule of its own), a backslash, a trailing space, a leading
/// `!` or `#`.
///
/// ```
/// use grove::setup::checked_hook_path;
/// assert!(checked_hook_path(".env.local").is_ok());
/// assert!(checked_hook_path("x\nsrc").is_err());
/// assert!(checked_hook_path("!src").is_err());
/// assert!(checked_hook_path("a\\b").is_err());
/// assert!(checked_hook_path("node_modules ").is_err());
/// ```
pub fn checked_hook_path(input: &str) -> Result<PathBuf, String> {
    if let Some(c) = input.chars().find(|c| c.is_control()) {
        return Err(format!(
            "{input:?} holds the control character {c:?}; paths must be plain names"
        ));
    }
    if input.contains('\\') {
        return Err(format!(
            "{input:?} holds a backslash; separate directories with `/`"
        ));
    }
    if input.starts_with('!') || input.starts_with('#') {
        return Err(format!(
            "{input:?} starts with `{}`, which git reads as a rule, not a path",
            &input[..1]
        ));
    }
    if input
        .split('/')
        .any(|part| part.ends_with(' ') || part.starts_with(' '))
    {
        return Err(format!(
            "{input:?} has a name starting or ending with a space"
        ));
    }
    checked_relative(input)
}

/// Checks every existing prefix of `root/rel` resolves inside `root`, so no
/// existing symlink on the way leads out. `include_last` checks the final
/// component too.
fn stays_inside(root: &Path, rel: &Path, include_last: bool) -> Result<(), String> {
    let root_canon = root
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", root.display()))?;
    let components: Vec<_> = rel.components().collect();
    let upto = if include_last {
        components.len()
    } else {
        components.len().saturating_sub(1)
    };
    let mut current = root.to_path_buf();
    for component in &components[..upto] {
        current.push(component);
        if std::fs::symlink_metadata(&current).is_err() {
            break;
        }
        let resolved = current
            .canonicalize()
            .map_err(|e| format!("cannot resolve {}: {e}", current.display()))?;
        if !resolved.starts_with(&root_canon) {
            return Err(format!(
                "{} goes through a symlink that leaves {} (to {})",
                rel.display(),
                root.display(),
                resolved.display()
            ));
        }
    }
    Ok(())
}

/// Creates one symlink (a junction for a directory on Windows). Never
/// deletes or overwrites: an existing target makes the step `skipped`.
pub fn apply_symlink(main_root: &Path, worktree: &Path, hook: &SymlinkHook) -> HookOutcome {
    let target_str = hook.target.as_deref().unwrap_or(&hook.source);
    let label = format!("link {target_str} -> {}", hook.source);
    apply(
        HookKind::Symlink,
        label,
        main_root,
        worktree,
        hook,
        |source, target| {
            make_link(source, target).map_err(|e| format!("cannot create the link: {e}"))
        },
    )
}

/// Copies one file or directory (`worktreeHooks.copies`): clones where the
/// file system can, modes and the links inside kept ([`crate::copytree`]).
/// The same path rules as symlinks; an existing target is never replaced.
pub fn apply_copy(main_root: &Path, worktree: &Path, hook: &SymlinkHook) -> HookOutcome {
    let target_str = hook.target.as_deref().unwrap_or(&hook.source);
    let label = format!("copy {} -> {target_str}", hook.source);
    apply(
        HookKind::Copy,
        label,
        main_root,
        worktree,
        hook,
        |source, target| {
            crate::copytree::copy(source, target)
                .map(|_| ())
                .map_err(|e| {
                    // Whatever was made of a copy that failed midway goes.
                    let _ =
                        std::fs::remove_dir_all(target).or_else(|_| std::fs::remove_file(target));
                    format!("cannot copy: {e}")
                })
        },
    )
}

/// The checks every link and copy passes, then `make` from the source to
/// the target.
fn apply(
    kind: HookKind,
    label: String,
    main_root: &Path,
    worktree: &Path,
    hook: &SymlinkHook,
    make: impl FnOnce(&Path, &Path) -> Result<(), String>,
) -> HookOutcome {
    let start = Instant::now();
    let target_str = hook.target.as_deref().unwrap_or(&hook.source);
    let fail = |reason: String| HookOutcome {
        kind,
        label: label.clone(),
        status: HookStatus::Failed,
        exit_code: None,
        duration_ms: start.elapsed().as_millis() as u64,
        log_file: None,
        reason: Some(reason),
    };
    let source = match checked_hook_path(&hook.source) {
        Ok(p) => p,
        Err(e) => return fail(format!("source refused: {e}")),
    };
    let target = match checked_hook_path(target_str) {
        Ok(p) => p,
        Err(e) => return fail(format!("target refused: {e}")),
    };
    let source_abs = main_root.join(&source);
    if let Err(e) = stays_inside(main_root, &source, true) {
        return fail(format!("source refused: {e}"));
    }
    if std::fs::symlink_metadata(&source_abs).is_err() {
        return fail(format!(
            "source {} does not exist in {}",
            source.display(),
            main_root.display()
        ));
    }
    if let Err(e) = stays_inside(worktree, &target, false) {
        return fail(format!("target refused: {e}"));
    }
    let target_abs = worktree.join(&target);
    if std::fs::symlink_metadata(&target_abs).is_ok() {
        return HookOutcome {
            duration_ms: start.elapsed().as_millis() as u64,
            ..HookOutcome::skipped(
                kind,
                label.clone(),
                format!("{} already exists; left untouched", target.display()),
            )
        };
    }
    if let Some(parent) = target_abs.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return fail(format!("cannot create {}: {e}", parent.display()));
    }
    if let Err(e) = make(&source_abs, &target_abs) {
        return fail(e);
    }
    HookOutcome {
        kind,
        label,
        status: HookStatus::Ok,
        exit_code: None,
        duration_ms: start.elapsed().as_millis() as u64,
        log_file: None,
        reason: None,
    }
}

#[cfg(unix)]
fn make_link(source: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(source, target)
}

#[cfg(windows)]
fn make_link(source: &Path, target: &Path) -> std::io::Result<()> {
    // Junctions need no administrator rights (ATSF: SHOULD for directories).
    if source.is_dir() {
        junction::create(source, target)
    } else {
        std::os::windows::fs::symlink_file(source, target)
    }
}
