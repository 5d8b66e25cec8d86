//! Every example in hooks-examples/ applies to a real repository.

use std::path::{Path, PathBuf};

use crate::support::*;

fn example(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("hooks-examples")
        .join(name)
        .join("config.json");
    read_json(&path)
}

/// Replaces each command with one that records it ran, so the test needs no
/// npm, cargo registry or network; the rest of the example is applied as is.
fn with_recorded_commands(mut config: serde_json::Value) -> (serde_json::Value, Vec<String>) {
    let mut originals = Vec::new();
    if let Some(cmds) = config["worktreeHooks"]["postSetupCommands"].as_array_mut() {
        for (i, c) in cmds.iter_mut().enumerate() {
            originals.push(c["command"].as_str().unwrap().to_string());
            c["command"] = serde_json::json!(format!("echo ran > ran-{i}.txt"));
        }
    }
    (config, originals)
}

fn apply(
    name: &str,
    prepare: impl Fn(&Path),
) -> (Sandbox, serde_json::Value, PathBuf, Vec<String>) {
    let sb = Sandbox::new();
    let repo = sb.repo("proj");
    prepare(&repo);
    let (config, originals) = with_recorded_commands(example(name));
    write_config(&repo, config);
    let v = new_task(&sb, &repo, &["example", "--trust"]);
    let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
    assert_eq!(
        sb.git(&wt, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    (sb, v, wt, originals)
}

fn statuses(v: &serde_json::Value) -> Vec<(String, String)> {
    v["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["label"].as_str().unwrap().to_string(),
                h["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn node_example() {
    let (_sb, v, wt, cmds) = apply("node", |repo| {
        std::fs::write(repo.join(".env.local"), "API=1").unwrap();
        std::fs::create_dir_all(repo.join("node_modules/left-pad")).unwrap();
        std::fs::write(repo.join(".gitignore"), ".env.local\nnode_modules/\n").unwrap();
    });
    assert!(cmds[0].starts_with("npm ci"));
    assert!(wt.join(".env.local").is_file());
    assert!(wt.join("node_modules/left-pad").is_dir());
    assert!(wt.join("ran-0.txt").is_file());
    assert!(
        statuses(&v).iter().all(|(_, s)| s == "ok"),
        "{:?}",
        statuses(&v)
    );
    let first = message_lines(&PathBuf::from(v["threadDir"].as_str().unwrap()));
    assert!(
        first[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("CONTRIBUTING.md")
    );
}

#[test]
fn rust_example() {
    let (_sb, v, wt, cmds) = apply("rust", |repo| {
        std::fs::create_dir_all(repo.join("target/debug")).unwrap();
        std::fs::write(repo.join(".gitignore"), "/target\n").unwrap();
    });
    assert_eq!(cmds[0], "cargo fetch");
    assert!(
        std::fs::symlink_metadata(wt.join("target"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(wt.join("target/debug").is_dir());
    assert!(statuses(&v).iter().all(|(_, s)| s == "ok"));
}

#[test]
fn python_example() {
    let (_sb, v, wt, cmds) = apply("python", |repo| {
        std::fs::write(repo.join(".env"), "X=1").unwrap();
        std::fs::write(repo.join(".gitignore"), ".env\n").unwrap();
    });
    assert!(cmds[0].contains("venv"));
    assert!(wt.join(".env").is_file());
    assert!(wt.join("ran-0.txt").is_file());
    assert!(statuses(&v).iter().all(|(_, s)| s == "ok"));
}

#[test]
fn platform_example() {
    let (_sb, v, wt, _) = apply("platform", |_| {});
    let s = statuses(&v);
    let here = grove::hooks::current_platform();
    let unix = here == "linux" || here == "darwin";
    assert_eq!(s[0].1, if unix { "ok" } else { "skipped" });
    assert_eq!(s[1].1, if unix { "skipped" } else { "ok" });
    assert_eq!(wt.join("ran-0.txt").is_file(), unix);
}
