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
    assert!(cmds[0].starts_with("npm install"));
    assert!(wt.join(".env.local").is_file());
    let nm = std::fs::symlink_metadata(wt.join("node_modules")).unwrap();
    assert!(
        nm.is_dir() && wt.join("node_modules/left-pad").is_dir(),
        "node_modules is the worktree's own, copied from the main checkout's"
    );
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
        std::fs::symlink_metadata(wt.join("target")).is_err(),
        "the build directory is the worktree's own"
    );
    assert!(wt.join("ran-0.txt").is_file());
    assert!(statuses(&v).iter().all(|(_, s)| s == "ok"));
}

/// Package managers on `PATH` that do what the real ones do to the files:
/// `npm install` brings `node_modules` in line with `package-lock.json` in
/// place (installs what is missing, removes what the lock does not name,
/// through a link too); `npm ci` empties it first; `cargo fetch` fills `$CARGO_HOME`; `python3 -m
/// venv` makes `.venv` and its `python -m pip install -r` installs there.
fn stub_package_managers(sb: &Sandbox) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = sb.path().join("stub-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let npm = r#"#!/bin/sh
set -e
[ "$1" = ci ] || [ "$1" = install ] || { echo "stub npm: only ci and install" >&2; exit 1; }
[ -f package-lock.json ] || { echo "npm $1 needs package-lock.json" >&2; exit 1; }
mkdir -p node_modules
[ "$1" = ci ] && find node_modules -mindepth 1 -delete
locked=$(sed -n 's/.*"node_modules\/\([^"]*\)".*/\1/p' package-lock.json)
for dir in node_modules/*; do
  [ -e "$dir" ] || continue
  echo "$locked" | grep -qx "${dir#node_modules/}" || rm -rf "$dir"
done
for pkg in $locked; do
  [ -d "node_modules/$pkg" ] || { mkdir -p "node_modules/$pkg" && echo installed > "node_modules/$pkg/index.js"; }
done
echo '{}' > node_modules/.package-lock.json
"#;
    let cargo = r#"#!/bin/sh
set -e
[ "$1" = fetch ] || exit 1
[ -f Cargo.toml ] || { echo "could not find Cargo.toml" >&2; exit 101; }
mkdir -p "${CARGO_HOME:-$HOME/.cargo}/registry" && touch "${CARGO_HOME:-$HOME/.cargo}/registry/fetched"
"#;
    let python = r#"#!/bin/sh
set -e
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin" "$3/lib/site-packages"
  cp "$0" "$3/bin/python"
  echo "home = $(dirname "$0")" > "$3/pyvenv.cfg"
elif [ "$1" = -m ] && [ "$2" = pip ]; then
  req=""; while [ $# -gt 0 ]; do [ "$1" = -r ] && req="$2"; shift; done
  here=$(dirname "$(dirname "$0")")
  for p in $(cat "$req"); do mkdir -p "$here/lib/site-packages/$p"; done
else
  exit 2
fi
"#;
    for (name, body) in [("npm", npm), ("cargo", cargo), ("python3", python)] {
        let path = bin.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

#[test]
fn examples_with_real_package_manager_behaviour_never_touch_the_main_checkout() {
    for name in ["node", "rust", "python", "platform"] {
        let sb = Sandbox::new();
        let repo = sb.repo("proj");
        std::fs::write(
            repo.join(".gitignore"),
            "node_modules/\n.env*\n/target\n.venv/\n",
        )
        .unwrap();
        std::fs::write(
            repo.join("package.json"),
            r#"{"name":"p","dependencies":{"left-pad":"1"}}"#,
        )
        .unwrap();
        std::fs::write(
            repo.join("package-lock.json"),
            r#"{"packages":{"":{},"node_modules/left-pad":{"version":"1.3.0"}}}"#,
        )
        .unwrap();
        std::fs::write(repo.join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
        std::fs::write(repo.join("requirements.txt"), "requests\n").unwrap();
        std::fs::create_dir_all(repo.join("scripts")).unwrap();
        std::fs::write(repo.join("scripts/run.sh"), "echo hi").unwrap();
        sb.git(&repo, &["add", "."]);
        sb.git(&repo, &["commit", "-qm", "project"]);
        // What only the main checkout has: installed packages, secrets, builds.
        for (path, body) in [
            ("node_modules/left-pad/index.js", "the main checkout's copy"),
            ("node_modules/only-here/index.js", "installed by hand"),
            (".env.local", "API=1"),
            (".env", "X=1"),
            ("target/debug/app", "built"),
            (".venv/lib/site-packages/numpy/x", "main env"),
        ] {
            std::fs::create_dir_all(repo.join(path).parent().unwrap()).unwrap();
            std::fs::write(repo.join(path), body).unwrap();
        }
        write_config(&repo, example(name));
        let main_before = snapshot_without_git(&repo);

        let bin = stub_package_managers(&sb);
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let out = ok(sb
            .grove(&repo)
            .env("PATH", path)
            .env("CARGO_HOME", sb.path().join("cargo-home"))
            .args(["new", name, "--trust", "--json"]));
        let v = json(&out);
        assert!(
            statuses(&v)
                .iter()
                .all(|(_, s)| s == "ok" || s == "skipped"),
            "{name}: {:?}",
            statuses(&v)
        );
        let after = snapshot_without_git(&repo);
        let changed: Vec<&PathBuf> = after
            .iter()
            .filter(|f| !main_before.contains(f))
            .chain(main_before.iter().filter(|f| !after.contains(f)))
            .map(|(p, _)| p)
            .collect();
        assert!(
            changed.is_empty(),
            "{name} changed the main checkout: {changed:?}"
        );
        let wt = PathBuf::from(v["worktreePath"].as_str().unwrap());
        if name == "node" {
            assert_eq!(
                std::fs::read_to_string(wt.join("node_modules/left-pad/index.js")).unwrap(),
                "the main checkout's copy",
                "copied, then kept by npm install: {v}"
            );
            assert!(
                !wt.join("node_modules/only-here").exists(),
                "pruned in the copy only"
            );
        }
        if name == "python" {
            assert!(wt.join(".venv/lib/site-packages/requests").is_dir());
        }
    }
}

/// Every file of `dir` with its bytes, `.git` and `.agent` aside (grove
/// writes its own files there).
fn snapshot_without_git(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| {
            let rel = p.strip_prefix(dir).unwrap();
            !rel.starts_with(".git") && !rel.starts_with(".agent")
        })
        .collect()
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
    let here = grove::setup::current_platform();
    let unix = here == "linux" || here == "darwin";
    assert_eq!(s[0].1, if unix { "ok" } else { "skipped" });
    assert_eq!(s[1].1, if unix { "skipped" } else { "ok" });
    assert_eq!(wt.join("ran-0.txt").is_file(), unix);
}
