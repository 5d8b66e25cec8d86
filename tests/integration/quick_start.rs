//! The README's quick start, followed as written: its code block is read
//! from README.md and run line by line in bash, with the built grove first
//! on `PATH`, in a fresh repository at `path/to/your/repo` — so the test
//! fails when the README drifts from what grove does.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

/// The lines of the first ```sh block under `## Quick start`.
fn quick_start_lines() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split_once("\n## Quick start\n")
        .expect("README.md has a `## Quick start` section")
        .1;
    let block = section
        .split_once("```sh\n")
        .expect("the quick start has a ```sh block")
        .1
        .split_once("\n```")
        .unwrap()
        .0;
    block.lines().map(str::to_string).collect()
}

/// The marker printed after each line, with the shell's directory.
const MARK: &str = "::quick-start::";

#[test]
#[cfg_attr(skip_shells, ignore = "GROVE_SKIP_SHELLS=1: needs bash")]
fn the_readme_quick_start_runs_as_written() {
    let lines = quick_start_lines();
    for command in [
        "cargo install --path .",
        "eval \"$(grove shell-init bash)\"",
        "cd path/to/your/repo",
        "grove new ",
        "grove list",
        "grove switch ",
        "grove rm ",
        "grove merge ",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(command)),
            "the quick start shows `{command}`: {lines:#?}"
        );
    }
    if !needs(
        "bash",
        which("bash").is_some(),
        "GROVE_SKIP_SHELLS",
        "`apt-get install bash`",
    ) {
        return;
    }
    let sb = Sandbox::new();
    let repo = sb.repo("path/to/your/repo");
    let mut script = String::new();
    let mut ran = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        // The test's grove is the one just built, first on PATH (below).
        if line.starts_with("cargo install ") {
            continue;
        }
        script.push_str(line);
        script.push_str(&format!(
            "\nrc=$?; if [ $rc -ne 0 ]; then echo 'quick start line {n} failed ('$rc'): {}' >&2; exit 1; fi\n\
             echo \"{MARK}{n} $PWD\"\n",
            line.replace('\'', "'\\''")
        ));
        ran.push(n);
    }

    let bin = sb.path().join("grove-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(GROVE, bin.join("grove")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = Command::new("bash");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-c", &script])
        .env("PATH", path)
        .current_dir(sb.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");

    // Where the shell was after each line.
    let cwd: std::collections::HashMap<usize, PathBuf> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix(MARK))
        .map(|l| {
            let (n, dir) = l.split_once(' ').unwrap();
            (n.parse().unwrap(), PathBuf::from(dir))
        })
        .collect();
    assert_eq!(
        cwd.keys().count(),
        ran.len(),
        "every line ran: {stdout}\n{stderr}"
    );
    let after = |start: &str| -> &PathBuf {
        let n = lines.iter().position(|l| l.starts_with(start)).unwrap();
        &cwd[&n]
    };
    let worktrees = sb.grove_home().join("worktrees");
    let login = after("grove new \"Fix the login bug\"");
    let parser = after("grove new \"Try a faster parser\"");
    assert_eq!(after("cd "), &repo);
    assert!(
        login.starts_with(&worktrees),
        "new moved the shell: {login:?}"
    );
    assert!(parser.starts_with(&worktrees), "{parser:?}");
    assert_ne!(login, parser);
    assert_eq!(
        after("grove switch "),
        login,
        "switch moved the shell back into the login task"
    );
    assert!(
        stdout.contains("Fix the login bug") && stdout.contains("Try a faster parser"),
        "grove list shows both tasks: {stdout}"
    );
    assert!(!parser.exists(), "rm removed the parser task's worktree");
    assert!(!login.exists(), "merge removed the login task's worktree");
    assert_eq!(
        sb.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "Fix the login bug",
        "merge landed the work on the default branch"
    );
}

/// `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
