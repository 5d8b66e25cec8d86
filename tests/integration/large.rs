//! Large repositories: submodules initialised as in the main checkout,
//! sparse-checkout patterns inherited from the worktree grove runs in, Git
//! LFS downloads skipped with `--no-lfs`.

use std::path::{Path, PathBuf};

use crate::support::*;

fn wt_of(task: &serde_json::Value) -> PathBuf {
    PathBuf::from(task["worktreePath"].as_str().unwrap())
}

#[test]
fn submodules_the_main_checkout_has_initialised_are_initialised_in_the_task() {
    let sb = Sandbox::new();
    let lib = sb.repo("lib");
    let repo = sb.repo("app");
    // Local paths as submodule URLs need this in the user's config (git's
    // default refuses them); the sandbox's gitconfig is the user's.
    let config = sb.path().join("gitconfig");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[protocol \"file\"]\n\tallow = always\n");
    std::fs::write(&config, text).unwrap();
    sb.git(
        &repo,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
    );
    sb.git(&repo, &["commit", "-qm", "add lib"]);
    let task = new_task(&sb, &repo, &["with"]);
    let wt = wt_of(&task);
    assert_eq!(
        std::fs::read_to_string(wt.join("lib/README.md")).unwrap(),
        "# test\n"
    );
    let hook = task["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| {
            h["label"]
                .as_str()
                .unwrap()
                .starts_with("git submodule update")
        })
        .cloned()
        .unwrap();
    assert_eq!(hook["status"], "ok", "{hook}");
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");

    let task = new_task(&sb, &repo, &["without", "--no-submodules"]);
    let wt = wt_of(&task);
    assert!(!wt.join("lib/README.md").exists());
    assert!(wt.join("lib").is_dir());
}

fn sparse_repo(sb: &Sandbox) -> PathBuf {
    let repo = sb.repo("big");
    for (dir, file) in [("a", "x"), ("b", "y"), ("c", "z")] {
        std::fs::create_dir_all(repo.join(dir)).unwrap();
        std::fs::write(repo.join(dir).join(file), dir).unwrap();
    }
    sb.git(&repo, &["add", "."]);
    sb.git(&repo, &["commit", "-qm", "dirs"]);
    repo
}

#[test]
fn the_sparse_checkout_of_the_worktree_grove_runs_in_is_inherited() {
    let sb = Sandbox::new();
    let repo = sparse_repo(&sb);
    sb.git(&repo, &["sparse-checkout", "set", "a"]);
    let wt = wt_of(&new_task(&sb, &repo, &["sparse"]));
    assert!(wt.join("a/x").is_file());
    assert!(!wt.join("b").exists() && !wt.join("c").exists());
    assert_eq!(sb.git(&wt, &["sparse-checkout", "list"]), "a");

    // From a task worktree with patterns of its own: those.
    sb.git(&wt, &["sparse-checkout", "set", "b"]);
    let from_task = wt_of(&new_task(&sb, &wt, &["from the task"]));
    assert!(from_task.join("b/y").is_file());
    assert!(!from_task.join("a").exists());
    assert_eq!(sb.git(&from_task, &["sparse-checkout", "list"]), "b");
}

fn has_lfs() -> bool {
    std::process::Command::new("git")
        .args(["lfs", "version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[cfg_attr(skip_lfs, ignore = "GROVE_SKIP_LFS=1: needs git-lfs")]
fn no_lfs_checks_lfs_files_out_as_pointers() {
    if !needs(
        "git-lfs",
        has_lfs(),
        "GROVE_SKIP_LFS",
        "`apt-get install git-lfs`",
    ) {
        return;
    }
    let sb = Sandbox::new();
    let repo = sb.repo("media");
    sb.git(&repo, &["lfs", "install", "--local"]);
    sb.git(&repo, &["lfs", "track", "*.bin"]);
    std::fs::write(repo.join("model.bin"), "the real weights\n").unwrap();
    sb.git(&repo, &["add", ".gitattributes", "model.bin"]);
    sb.git(&repo, &["commit", "-qm", "model"]);
    let read = |wt: &Path| std::fs::read_to_string(wt.join("model.bin")).unwrap();

    let wt = wt_of(&new_task(&sb, &repo, &["with lfs"]));
    assert_eq!(read(&wt), "the real weights\n");
    let wt = wt_of(&new_task(&sb, &repo, &["pointers", "--no-lfs"]));
    assert!(
        read(&wt).starts_with("version https://git-lfs.github.com/spec/v1"),
        "{}",
        read(&wt)
    );
    assert_eq!(sb.git(&wt, &["status", "--porcelain"]), "");

    // Or for every task of the repository, from its config.
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "grove": {"lfs": false}}),
    );
    let wt = wt_of(&new_task(&sb, &repo, &["configured"]));
    assert!(read(&wt).starts_with("version https://git-lfs"));
}
