//! `grove push` / `grove pull`: threads travel through a bare remote made
//! here, between two clones that stand for two machines.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::*;

/// A bare remote and two clones of it, `a` and `b`.
pub(crate) fn machines() -> (Sandbox, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let remote = sb.path().join("remote.git");
    let remote_s = remote.to_str().unwrap();
    sb.git(&sb.path(), &["init", "-q", "--bare", remote_s]);
    let a = sb.repo("a");
    sb.git(&a, &["remote", "add", "origin", remote_s]);
    sb.git(&a, &["push", "-q", "-u", "origin", "main"]);
    let b = sb.path().join("b");
    sb.git(&sb.path(), &["clone", "-q", remote_s, b.to_str().unwrap()]);
    (sb, a, b)
}

fn msg(id: &str, ts: &str, text: &str) -> String {
    serde_json::json!({
        "id": id, "role": "user", "timestamp": ts,
        "content": [{"type": "text", "text": text}]
    })
    .to_string()
}

/// The thread's directory as `list` has it.
fn thread_dir(sb: &Sandbox, repo: &Path, id: &str) -> PathBuf {
    PathBuf::from(row_of(sb, repo, id)["threadDir"].as_str().unwrap())
}

/// thread.json, messages.jsonl and the assets of a thread, as bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![
        (
            "thread.json".to_string(),
            std::fs::read(dir.join("thread.json")).unwrap(),
        ),
        (
            "messages.jsonl".to_string(),
            std::fs::read(dir.join("messages.jsonl")).unwrap(),
        ),
    ];
    if let Ok(assets) = std::fs::read_dir(dir.join("assets")) {
        let mut names: Vec<_> = assets.map(|e| e.unwrap().file_name()).collect();
        names.sort();
        for n in names {
            let path = dir.join("assets").join(&n);
            out.push((
                n.to_string_lossy().into_owned(),
                std::fs::read(path).unwrap(),
            ));
        }
    }
    out
}

fn message_ids(dir: &Path) -> Vec<String> {
    message_lines(dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_pushed_thread_arrives_byte_for_byte_and_is_found_as_remote() {
    let (sb, a, b) = machines();
    let id = new_thread(&sb, &a, "Fix the login bug");
    append_stdin(
        &sb,
        &a,
        &id,
        &msg("m1", "2025-03-01T10:00:00.000Z", "the cookie expires"),
    );
    let asset = thread_dir(&sb, &a, &id).join("assets");
    std::fs::create_dir_all(&asset).unwrap();
    std::fs::write(asset.join("0123abcd.png"), b"\x89PNG fake").unwrap();
    let pushed = json(&ok(sb.grove(&a).args(["push", &id, "--json"])));
    assert_eq!(pushed["remote"], "origin");
    assert_eq!(pushed["pushed"][0]["threadId"], id.as_str());
    // Stored as a ref of the remote, no branch touched.
    let remote = sb.path().join("remote.git");
    let refs = sb.git(
        &remote,
        &["for-each-ref", "--sort=refname", "--format=%(refname)"],
    );
    assert_eq!(refs, format!("refs/grove/threads/{id}\nrefs/heads/main"));

    let pulled = json(&ok(sb.grove(&b).args(["pull", "--json"])));
    assert_eq!(pulled["threads"][0]["outcome"], "new");
    assert_eq!(pulled["threads"][0]["newMessages"], 1);
    let row = row_of(&sb, &b, &id);
    assert_eq!(row["status"], "remote");
    assert_eq!(
        files(&thread_dir(&sb, &b, &id)),
        files(&thread_dir(&sb, &a, &id))
    );
    let shown = ok(sb.grove(&b).args(["show", &id]));
    assert!(shown.contains("the cookie expires"), "{shown}");
    let found = json(&ok(sb.grove(&b).args(["search", "cookie", "--json"])));
    assert_eq!(found[0]["threadId"], id.as_str());
    // Nothing new: both say so.
    let again = json(&ok(sb.grove(&a).args(["push", &id, "--json"])));
    assert_eq!(again["pushed"][0]["unchanged"], true);
    let again = json(&ok(sb.grove(&b).args(["pull", "--json"])));
    assert_eq!(again["threads"][0]["outcome"], "unchanged");
}

/// Both machines append; they push and pull in `order`; both end with the
/// same bytes and every message once.
fn diverge_and_sync(b_pushes_first: bool) {
    let (sb, a, b) = machines();
    let id = new_thread(&sb, &a, "Shared");
    append_stdin(
        &sb,
        &a,
        &id,
        &msg("m1", "2025-03-01T10:00:00.000Z", "start"),
    );
    ok(sb.grove(&a).args(["push", &id]));
    ok(sb.grove(&b).args(["pull"]));
    // B's message is older than A's second one: the merge puts it first.
    append_stdin(
        &sb,
        &a,
        &id,
        &msg("a2", "2025-03-01T10:05:00.000Z", "from a"),
    );
    append_stdin(
        &sb,
        &b,
        &id,
        &msg("b2", "2025-03-01T10:03:00.000Z", "from b"),
    );
    append_stdin(
        &sb,
        &b,
        &id,
        &msg("b3", "2025-03-01T10:07:00.000Z", "more from b"),
    );
    let (first, second) = if b_pushes_first { (&b, &a) } else { (&a, &b) };
    ok(sb.grove(first).args(["push", &id]));
    // The remote moved: fetched, merged, pushed again.
    let pushed = json(&ok(sb.grove(second).args(["push", &id, "--json"])));
    assert_eq!(pushed["pushed"][0]["merged"], true, "{pushed}");
    ok(sb.grove(first).args(["pull"]));
    ok(sb.grove(second).args(["pull"]));
    let (da, db) = (thread_dir(&sb, &a, &id), thread_dir(&sb, &b, &id));
    assert_eq!(message_ids(&da), ["m1", "b2", "a2", "b3"]);
    assert_eq!(files(&da), files(&db), "the same bytes on both machines");
    let unique: BTreeSet<String> = message_ids(&da).into_iter().collect();
    assert_eq!(unique.len(), 4, "every message exactly once");
    // The thread is still whole for grove: stats recounted, appends go on.
    assert_eq!(row_of(&sb, &a, &id)["stats"]["messageCount"], 4);
    append_stdin(
        &sb,
        &a,
        &id,
        &msg("a4", "2025-03-01T10:09:00.000Z", "after"),
    );
    assert_eq!(message_ids(&da).len(), 5);
}

#[test]
fn diverged_copies_converge_when_a_pushes_first() {
    diverge_and_sync(false);
}

#[test]
fn diverged_copies_converge_when_b_pushes_first() {
    diverge_and_sync(true);
}

#[test]
fn secrets_and_unshared_threads_stay_home() {
    let (sb, a, b) = machines();
    let secret = new_thread(&sb, &a, "Deploy");
    let token = format!("{}_{}", "ghp", "R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7");
    append_stdin(
        &sb,
        &a,
        &secret,
        &msg(
            "m1",
            "2025-03-01T10:00:00.000Z",
            &format!("GH_TOKEN={token}"),
        ),
    );
    let private = new_thread(&sb, &a, "Private");
    let meta_path = thread_dir(&sb, &a, &private).join("thread.json");
    let mut meta = read_json(&meta_path);
    meta["metadata"] = serde_json::json!({"grove": {"share": false}});
    std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();

    // A tag the user's config keeps home.
    let tagged = new_thread(&sb, &a, "Tagged");
    let tagged_meta = thread_dir(&sb, &a, &tagged).join("thread.json");
    let mut meta = read_json(&tagged_meta);
    meta["metadata"] = serde_json::json!({"tags": ["client-x"]});
    std::fs::write(&tagged_meta, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let config = sb.path().join("grove.toml");
    std::fs::write(&config, "push-exclude-tags = [\"client-x\"]\n").unwrap();

    let out = run(sb
        .grove(&a)
        .env("GROVE_CONFIG", &config)
        .args(["push", "--all", "--json"]));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a refused thread fails the push"
    );
    let report = json(&String::from_utf8_lossy(&out.stdout));
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 3, "{report}");
    assert!(
        [&secret, &private, &tagged]
            .iter()
            .all(|t| skipped.contains(&t.as_str()))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("share is false") && stderr.contains("--redact"),
        "{stderr}"
    );
    assert!(stderr.contains("push-exclude-tags"), "{stderr}");
    // Only what is kept home on purpose: not a failure.
    let out = run(sb
        .grove(&a)
        .env("GROVE_CONFIG", &config)
        .args(["push", &private, &tagged]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    ok(sb.grove(&a).args(["push", &secret, "--redact"]));
    ok(sb.grove(&b).args(["pull"]));
    let there = String::from_utf8(files(&thread_dir(&sb, &b, &secret))[1].1.clone()).unwrap();
    assert!(
        there.contains("[REDACTED:github-token]") && !there.contains(&token),
        "{there}"
    );
    let here = String::from_utf8(files(&thread_dir(&sb, &a, &secret))[1].1.clone()).unwrap();
    assert!(here.contains(&token), "the local thread is untouched");
    assert!(
        json(&ok(sb.grove(&b).args(["list", "--json"])))
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["threadId"] != private.as_str() && r["threadId"] != tagged.as_str()),
        "the unshared threads never left"
    );
}

/// Another machine's task: `switch` makes a worktree for it here, on its
/// branch as that machine pushed it, and the thread moves in.
#[test]
fn switch_makes_a_worktree_here_for_another_machines_task() {
    let (sb, a, b) = machines();
    let task = new_task(&sb, &a, &["Port the parser", "--no-hooks"]);
    let id = task["threadId"].as_str().unwrap().to_string();
    let branch = task["branch"].as_str().unwrap().to_string();
    let wt_a = PathBuf::from(task["worktreePath"].as_str().unwrap());
    std::fs::write(wt_a.join("parser.rs"), "fn parse() {}\n").unwrap();
    sb.git(&wt_a, &["add", "parser.rs"]);
    sb.git(&wt_a, &["commit", "-q", "-m", "parser"]);
    sb.git(&wt_a, &["push", "-q", "origin", &branch]);
    append_stdin(
        &sb,
        &wt_a,
        &id,
        &msg("m1", "2025-03-01T10:00:00.000Z", "ported"),
    );
    ok(sb.grove(&a).args(["push", &id]));

    // A's worktree goes: its recorded path now exists on no machine.
    ok(sb.grove(&a).args(["rm", "--force", &id]));
    sb.git(&b, &["fetch", "-q", "origin"]);
    ok(sb.grove(&b).args(["pull"]));
    assert_eq!(row_of(&sb, &b, &id)["status"], "remote");
    let shown = ok(sb.grove(&b).args(["show", &id]));
    assert!(
        shown.contains(&format!("{} (not found on this machine)", wt_a.display())),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("here:     {}", b.display())),
        "{shown}"
    );
    // Other grove commands find it where it is.
    ok(sb.grove(&b).args(["fork", &id, "--no-worktree"]));
    let made = json(&ok(sb.grove(&b).args([
        "switch",
        &id,
        "--no-hooks",
        "--json",
    ])));
    assert_eq!(made["revived"], true);
    let wt_b = PathBuf::from(made["worktreePath"].as_str().unwrap());
    assert!(wt_b.join("parser.rs").is_file(), "on the pushed branch");
    assert_ne!(wt_b, wt_a);
    let row = row_of(&sb, &b, &id);
    assert_eq!(row["status"], "live");
    assert_eq!(message_ids(&thread_dir(&sb, &b, &id)), ["m1"]);
}

/// A GitHub token of the documented shape, built here so that no scanner
/// takes this file for a leak.
fn token(n: usize) -> String {
    let body = "R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7Kq4Xw9Zs3Pm";
    format!("{}_{}", "ghp", &body[n % 8..n % 8 + 36])
}

/// Every place of the bare `remote` that holds `needle`: a ref's name, or
/// the bytes of an object (commit messages, tree entry names, blobs).
fn copies_in_remote(remote: &Path, needle: &str) -> Vec<String> {
    let repo = git2::Repository::open_bare(remote).unwrap();
    let mut found: Vec<String> = repo
        .references()
        .unwrap()
        .filter_map(|r| r.unwrap().name().ok().map(str::to_string))
        .filter(|name| name.contains(needle))
        .collect();
    let odb = repo.odb().unwrap();
    odb.foreach(|oid| {
        let object = odb.read(*oid).unwrap();
        if memchr::memmem::find(object.data(), needle.as_bytes()).is_some() {
            found.push(format!("{} {oid}", object.kind()));
        }
        true
    })
    .unwrap();
    found
}

#[test]
fn push_redact_sends_no_copy_of_a_secret_in_the_title_not_even_in_the_commit_message() {
    let (sb, a, b) = machines();
    let token = token(0);
    let id = new_thread(&sb, &a, &format!("Deploy with {token}"));
    append_stdin(
        &sb,
        &a,
        &id,
        &msg("m1", "2025-03-01T10:00:00.000Z", "deployed"),
    );
    fails_with(sb.grove(&a).args(["push", &id]), 1);
    ok(sb.grove(&a).args(["push", &id, "--redact"]));
    let remote = sb.path().join("remote.git");
    assert_eq!(copies_in_remote(&remote, &token), Vec::<String>::new());
    let message = sb.git(
        &remote,
        &["log", "--format=%B", &format!("refs/grove/threads/{id}")],
    );
    assert!(
        message.contains(&format!("grove: thread {id}"))
            && message.contains("Deploy with [REDACTED:github-token]"),
        "{message}"
    );
    ok(sb.grove(&b).args(["pull"]));
    ok(sb.grove(&b).args(["scan", &id]));
}

#[test]
fn push_redact_sends_no_copy_of_a_secret_used_as_a_key() {
    let (sb, a, b) = machines();
    let token = token(1);
    let id = new_thread(&sb, &a, "Deploy");
    let line = serde_json::json!({
        "id": "m1", "role": "agent", "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "text", "text": "the env, by name"}],
        "metadata": {token.clone(): "GH_TOKEN"}
    });
    append_stdin(&sb, &a, &id, &line.to_string());
    fails_with(sb.grove(&a).args(["push", &id]), 1);
    let pushed = json(&ok(sb.grove(&a).args(["push", &id, "--redact", "--json"])));
    assert_eq!(pushed["pushed"][0]["redacted"], 1, "{pushed}");
    let remote = sb.path().join("remote.git");
    assert_eq!(copies_in_remote(&remote, &token), Vec::<String>::new());
    ok(sb.grove(&b).args(["pull"]));
    let there = message_lines(&thread_dir(&sb, &b, &id));
    assert_eq!(
        there[0]["metadata"]["[REDACTED:github-token]"], "GH_TOKEN",
        "{there:?}"
    );
}

#[test]
fn an_asset_named_with_a_secret_is_found_and_leaves_under_its_redacted_name() {
    let (sb, a, b) = machines();
    let token = token(2);
    let id = new_thread(&sb, &a, "Screenshots");
    let name = format!("{token}.png");
    let assets = thread_dir(&sb, &a, &id).join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    std::fs::write(assets.join(&name), b"\x89PNG fake").unwrap();
    let line = serde_json::json!({
        "id": "m1", "role": "user", "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "image", "assetRef": name, "mimeType": "image/png"}]
    });
    // Written as it is: `append` would store the image under its own name.
    let log = thread_dir(&sb, &a, &id).join("messages.jsonl");
    std::fs::write(&log, format!("{line}\n")).unwrap();
    let scanned = json(&String::from_utf8_lossy(
        &run(sb.grove(&a).args(["scan", &id, "--json"])).stdout,
    ));
    let files: BTreeSet<&str> = scanned
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        BTreeSet::from(["assets", "messages.jsonl"]),
        "{scanned}"
    );
    fails_with(sb.grove(&a).args(["push", &id]), 1);
    ok(sb.grove(&a).args(["push", &id, "--redact"]));
    let remote = sb.path().join("remote.git");
    assert_eq!(copies_in_remote(&remote, &token), Vec::<String>::new());
    ok(sb.grove(&b).args(["pull"]));
    let there = thread_dir(&sb, &b, &id);
    let asset_ref = message_lines(&there)[0]["content"][0]["assetRef"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(asset_ref, "[REDACTED:github-token].png");
    assert_eq!(
        std::fs::read(there.join("assets").join(&asset_ref)).unwrap(),
        b"\x89PNG fake",
        "the reference still leads to the image"
    );
}

#[test]
fn a_thread_whose_id_is_a_secret_is_refused_even_with_redact() {
    let (sb, a, _b) = machines();
    let token = token(3);
    let made = new_thread(&sb, &a, "Imported");
    // A thread brought in from elsewhere under an id that is a secret.
    let threads = thread_dir(&sb, &a, &made).parent().unwrap().to_path_buf();
    let dir = threads.join(&token);
    std::fs::rename(threads.join(&made), &dir).unwrap();
    let meta_path = dir.join("thread.json");
    let mut meta = read_json(&meta_path);
    meta["threadId"] = serde_json::Value::String(token.clone());
    std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();

    fails_with(sb.grove(&a).args(["scan", &token]), 1);
    let err = fails_with(sb.grove(&a).args(["push", &token, "--redact"]), 1);
    assert!(
        err.contains("id") && err.contains("--allow-secrets"),
        "{err}"
    );
    let err = fails_with(
        sb.grove(&a)
            .args(["export", &token, "-f", "md", "--redact"]),
        1,
    );
    assert!(err.contains("--allow-secrets"), "{err}");
    let remote = sb.path().join("remote.git");
    assert_eq!(copies_in_remote(&remote, &token), Vec::<String>::new());
}
