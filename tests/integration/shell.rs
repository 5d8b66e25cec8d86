//! At home in the shell: completions for bash, zsh and fish (subcommands,
//! flags, thread ids with titles), manual pages. The shells are the real
//! ones, run non-interactively.

use std::path::Path;
use std::process::Command;

use crate::support::*;

/// The shell `name`; missing, the test fails unless GROVE_SKIP_SHELLS=1.
fn shell(name: &str) -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    needs(
        name,
        found.is_some(),
        "GROVE_SKIP_SHELLS",
        &format!("`apt-get install {name}`"),
    );
    found
}

/// Runs `script` in shell `sh` in `dir`, with grove first on PATH as `grove`.
fn in_shell(sb: &Sandbox, sh: &str, dir: &Path, script: &str) -> String {
    let bin = sb.path().join("grove-bin");
    if !bin.join("grove").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(GROVE, bin.join("grove")).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = Command::new(sh);
    sb.env(&mut cmd);
    let out = cmd
        .args(["-c", script])
        .env("PATH", path)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{sh} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[cfg_attr(skip_shells, ignore = "GROVE_SKIP_SHELLS=1: needs bash, zsh and fish")]
fn completions_offer_subcommands_flags_and_thread_ids_in_bash_zsh_and_fish() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let task = new_task(&sb, &repo, &["Fix the login bug"]);
    let id = task["threadId"].as_str().unwrap().to_string();

    if let Some(bash) = shell("bash") {
        let complete = |words: &str| {
            in_shell(
                &sb,
                &bash,
                &repo,
                &format!(
                    r#"source <(grove completions bash)
COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="{words}"; COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9
_clap_complete_grove grove "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#
                ),
            )
        };
        let subs = complete("grove sh");
        assert!(subs.lines().any(|l| l.trim() == "show"), "{subs}");
        let ids = complete(&format!("grove show {}", &id[..4]));
        assert!(ids.lines().any(|l| l.trim() == id), "{ids}");
        let flags = complete("grove rm --re");
        assert!(flags.lines().any(|l| l.trim() == "--reap"), "{flags}");
    }
    if let Some(fish) = shell("fish") {
        let out = in_shell(
            &sb,
            &fish,
            &repo,
            &format!(
                "grove completions fish | source; complete -C 'grove show {}'",
                &id[..4]
            ),
        );
        assert!(
            out.lines()
                .any(|l| l.starts_with(&id) && l.contains("Fix the login bug")),
            "the id with its title: {out}"
        );
    }
    if let Some(zsh) = shell("zsh") {
        let out = in_shell(
            &sb,
            &zsh,
            &repo,
            "autoload -U compinit && compinit -u && source <(grove completions zsh) && print -r -- ${_comps[grove]}",
        );
        assert!(
            !out.trim().is_empty(),
            "zsh registered a completion function"
        );
    }
}

#[test]
fn manual_pages_come_from_the_same_definitions() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let page = ok(sb.grove(&repo).args(["man"]));
    assert!(
        page.starts_with(".ie") || page.contains(".TH grove 1"),
        "{}",
        &page[..200.min(page.len())]
    );
    let dir = sb.path().join("man1");
    ok(sb.grove(&repo).args(["man", "--dir"]).arg(&dir));
    let new = std::fs::read_to_string(dir.join("grove-new.1")).unwrap();
    assert!(
        new.contains("\\-\\-launch") || new.contains("--launch"),
        "{new}"
    );
    assert!(dir.join("grove-resume.1").is_file());
    let pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        pages.iter().all(|p| !p.contains("__")),
        "no page for grove's internal commands: {pages:?}"
    );
    let main = std::fs::read_to_string(dir.join("grove.1")).unwrap();
    assert!(!main.contains("delete\\-trash"), "{main}");
}

#[test]
#[cfg_attr(skip_shells, ignore = "GROVE_SKIP_SHELLS=1: needs bash, zsh and fish")]
fn shell_init_leaves_bash_zsh_and_fish_in_the_worktree() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    for (sh, init) in [
        ("bash", "eval \"$(grove shell-init bash)\""),
        ("zsh", "eval \"$(grove shell-init zsh)\""),
        ("fish", "grove shell-init fish | source"),
    ] {
        let Some(path) = shell(sh) else { continue };
        let out = in_shell(
            &sb,
            &path,
            &repo,
            &format!("{init}; grove new 'task in {sh}' >/dev/null; pwd; grep -c . README.md"),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].contains("/thread-"),
            "{sh} is in the new worktree: {out}"
        );
        assert_eq!(lines[1], "1", "{sh}: the worktree's README");
        let id = list_rows(&sb, &repo)
            .into_iter()
            .find(|r| r["title"] == format!("task in {sh}"))
            .unwrap()["threadId"]
            .as_str()
            .unwrap()
            .to_string();
        // `path` and `switch` too; a failing command leaves it where it was.
        let out = in_shell(
            &sb,
            &path,
            &sb.path(),
            &format!(
                "{init}; grove path {id} >/dev/null; pwd; cd {}; grove path nosuchthread 2>/dev/null; pwd",
                sb.path().display()
            ),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains("/thread-"), "{sh}: {out}");
        assert_eq!(Path::new(lines[1]), sb.path(), "{sh}: {out}");
    }
}

#[test]
#[cfg_attr(skip_shells, ignore = "GROVE_SKIP_SHELLS=1: needs bash, zsh and fish")]
fn rm_of_the_worktree_the_shell_is_in_takes_the_shell_to_the_main_checkout() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    for (sh, init) in [
        ("bash", "eval \"$(grove shell-init bash)\""),
        ("zsh", "eval \"$(grove shell-init zsh)\""),
        ("fish", "grove shell-init fish | source"),
    ] {
        let Some(path) = shell(sh) else { continue };
        let task = new_task(&sb, &repo, &[&format!("leave from {sh}")]);
        let wt = std::path::PathBuf::from(task["worktreePath"].as_str().unwrap());
        std::fs::create_dir_all(wt.join("src")).unwrap();
        // A refused rm (uncommitted work) leaves the shell where it was.
        std::fs::write(wt.join("src/wip.txt"), "wip").unwrap();
        let out = in_shell(
            &sb,
            &path,
            &wt.join("src"),
            &format!(
                "{init}; grove rm 2>/dev/null; pwd; rm wip.txt; grove rm >/dev/null 2>&1; pwd"
            ),
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(Path::new(lines[0]), wt.join("src"), "{sh}: {out}");
        assert_eq!(
            std::fs::canonicalize(lines[1]).unwrap(),
            std::fs::canonicalize(&repo).unwrap(),
            "{sh} is in the main checkout: {out}"
        );
        assert!(!wt.exists(), "{sh}: removed");
    }
}

#[test]
fn every_command_works_from_a_current_directory_that_is_gone() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let gone = new_task(&sb, &repo, &["Gone task"]);
    let other = new_task(&sb, &repo, &["Other task"]);
    let gone_wt = std::path::PathBuf::from(gone["worktreePath"].as_str().unwrap());
    let other_wt = std::path::PathBuf::from(other["worktreePath"].as_str().unwrap());
    // A shell left in the worktree after it was removed from elsewhere:
    // the process starts in a directory that no longer exists.
    let script = format!(
        "cd {wt} && {grove} -C {repo} rm {id} >/dev/null 2>&1 && \
         {grove} switch other --json && {grove} list --json >/dev/null && {grove} path other",
        wt = gone_wt.display(),
        grove = GROVE,
        repo = repo.display(),
        id = gone["threadId"].as_str().unwrap(),
    );
    let mut cmd = Command::new("sh");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-c", &script])
        .current_dir(sb.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!gone_wt.exists());
    assert!(
        stderr.contains("is gone; working in"),
        "a warning says where grove works instead: {stderr}"
    );
    assert_eq!(
        Path::new(stdout.lines().last().unwrap()),
        other_wt,
        "{stdout}"
    );
}

#[test]
fn switch_revives_a_removed_task() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    // switch makes a removed task's worktree again, its thread restored.
    let task = new_task(&sb, &repo, &["removed", "--prompt", "keep me"]);
    let id = task["threadId"].as_str().unwrap();
    let wt = std::path::PathBuf::from(task["worktreePath"].as_str().unwrap());
    ok(sb.grove(&repo).args(["rm", id, "--keep-branch"]));
    let err = fails_with(sb.grove(&repo).args(["path", id]), 1);
    assert!(err.contains(&format!("grove switch {id}")), "{err}");
    let out = json(&ok(sb.grove(&repo).args(["switch", id, "--json"])));
    assert_eq!(out["revived"], true);
    assert_eq!(Path::new(out["worktreePath"].as_str().unwrap()), wt);
    let messages = message_lines(&wt.join(".agent/threads").join(id));
    assert_eq!(messages[0]["content"][0]["text"], "keep me");
    // Without THREAD off a terminal: a usage error.
    fails_with(sb.grove(&repo).args(["switch"]), 2);
}

#[test]
fn switch_without_a_thread_on_a_terminal_picks_from_a_fuzzy_list() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    new_task(&sb, &repo, &["Refactor the parser"]);
    let wanted = new_task(&sb, &repo, &["Fix the login bug"]);
    // A real terminal: script(1) gives grove a pty; typing narrows the list.
    let mut cmd = Command::new("script");
    sb.env(&mut cmd);
    let mut child = cmd
        .args(["-qfec", &format!("{GROVE} switch"), "/dev/null"])
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    use std::io::Write;
    stdin.write_all(b"login\r").unwrap();
    stdin.flush().unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    let wt = wanted["worktreePath"].as_str().unwrap();
    assert!(shown.contains(wt), "the picked task's path: {shown:?}");
    assert!(
        shown.contains("Refactor the parser"),
        "both listed: {shown:?}"
    );
}
