//! `worktreeHooks.copies` and Claude Code's `.worktreeinclude`: ignored
//! files the worktree needs, copied (cloned where the file system can),
//! modes and inner links kept, never over an existing file, never outside.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// A repository with an ignored `node_modules` (a package, an executable,
/// a read-only file, a link in `.bin`), an ignored `.env` and a tracked
/// `.worktreeinclude` naming `.env`.
fn repo(sb: &Sandbox) -> PathBuf {
    let repo = sb.repo("app");
    std::fs::write(repo.join(".gitignore"), "node_modules/\n.env\nlocal/\n").unwrap();
    std::fs::write(repo.join(".worktreeinclude"), ".env\n").unwrap();
    sb.git(&repo, &["add", ".gitignore", ".worktreeinclude"]);
    sb.git(&repo, &["commit", "-qm", "ignores"]);
    let pkg = repo.join("node_modules/pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("index.js"), "#!/usr/bin/env node\n").unwrap();
    std::fs::set_permissions(pkg.join("index.js"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(pkg.join("LICENSE"), "MIT\n").unwrap();
    std::fs::set_permissions(pkg.join("LICENSE"), std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::create_dir_all(repo.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink("../pkg/index.js", repo.join("node_modules/.bin/pkg")).unwrap();
    std::fs::write(repo.join(".env"), "SECRET=local\n").unwrap();
    std::fs::create_dir_all(repo.join("local")).unwrap();
    std::fs::write(repo.join("local/settings.json"), "{}").unwrap();
    repo
}

#[test]
fn copies_and_worktreeinclude_bring_ignored_files_with_modes_and_links() {
    let sb = Sandbox::new();
    let repo = repo(&sb);
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"copies": [
            {"source": "node_modules"},
            {"source": "local/settings.json", "target": "config/settings.json"}]}}),
    );
    let task = new_task(&sb, &repo, &["t"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let hooks = task["hooks"].as_array().unwrap();
    let copies: Vec<_> = hooks.iter().filter(|h| h["kind"] == "copy").collect();
    assert_eq!(copies.len(), 3, "{hooks:?}");
    assert!(copies.iter().all(|h| h["status"] == "ok"), "{hooks:?}");

    let nm = wt.join("node_modules");
    assert!(
        std::fs::symlink_metadata(&nm).unwrap().is_dir(),
        "a copy, not a link"
    );
    assert_eq!(
        std::fs::read_to_string(nm.join("pkg/index.js")).unwrap(),
        "#!/usr/bin/env node\n"
    );
    assert_eq!(mode(&nm.join("pkg/index.js")), 0o755);
    assert_eq!(mode(&nm.join("pkg/LICENSE")), 0o444);
    assert_eq!(
        std::fs::read_link(nm.join(".bin/pkg")).unwrap(),
        PathBuf::from("../pkg/index.js"),
        "the link inside is copied as a link"
    );
    // Independent of the source.
    std::fs::write(nm.join("pkg/index.js"), "changed").unwrap();
    assert_eq!(
        std::fs::read_to_string(repo.join("node_modules/pkg/index.js")).unwrap(),
        "#!/usr/bin/env node\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("config/settings.json")).unwrap(),
        "{}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join(".env")).unwrap(),
        "SECRET=local\n",
        ".worktreeinclude"
    );
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain"]),
        "",
        "copies are not changes"
    );
}

#[test]
fn a_copy_never_leaves_its_roots_or_replaces_a_file() {
    let sb = Sandbox::new();
    let repo = repo(&sb);
    std::fs::write(sb.path().join("outside.txt"), "secret").unwrap();
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("docs/x.md"), "x").unwrap();
    std::os::unix::fs::symlink(sb.path(), repo.join("escape")).unwrap();
    write_config(
        &repo,
        json!({"specVersion": "1.1", "worktreeHooks": {"copies": [
            {"source": "../outside.txt"},
            {"source": "escape/outside.txt", "target": "o.txt"},
            {"source": ".env", "target": "../../stolen.env"},
            {"source": "docs/x.md", "target": "README.md"}]}}),
    );
    let task = new_task(&sb, &repo, &["t"]);
    let wt = PathBuf::from(task["worktreePath"].as_str().unwrap());
    let copies: Vec<_> = task["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "copy")
        .cloned()
        .collect();
    assert_eq!(copies[0]["status"], "failed", "{copies:?}");
    assert_eq!(copies[1]["status"], "failed", "{copies:?}");
    assert!(
        copies[1]["reason"].as_str().unwrap().contains("symlink"),
        "{copies:?}"
    );
    assert_eq!(copies[2]["status"], "failed", "{copies:?}");
    assert_eq!(copies[3]["status"], "skipped", "{copies:?}");
    assert!(!wt.join("o.txt").exists());
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# test\n"
    );
    assert!(!sb.path().join("stolen.env").exists());
}
