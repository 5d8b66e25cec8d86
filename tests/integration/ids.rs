//! Thread ids: validation before any path is built, prefixes, ambiguity.

use grove::store::{Store, validate_thread_id};

use crate::support::*;

#[test]
fn hostile_ids_are_refused_before_any_file_is_touched() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    new_thread(&sb, &repo, "t");
    // A file a traversal would reach, to prove nothing beyond the store is touched.
    std::fs::write(repo.join(".agent/x"), "bystander").unwrap();
    let before = snapshot(&sb.path());
    for id in ["../x", "a/b", ".", "..", "", "..\\x", ".hidden", "a\tb"] {
        for args in [
            vec!["append", id, "--role", "user", "--text", "boom"],
            vec!["show", id],
            vec!["repair", id],
        ] {
            let out = run(sb.grove(&repo).args(&args));
            assert!(!out.status.success(), "{args:?} must fail");
            let err = String::from_utf8_lossy(&out.stderr);
            // `.` and `..` name directories (the task they are in): here
            // none is a task's.
            let why = match id {
                "." | ".." => "is not in a task's worktree",
                _ => "invalid thread id",
            };
            assert!(err.contains(why), "{args:?}: {err}");
        }
    }
    assert_eq!(snapshot(&sb.path()), before, "nothing changed on disk");
}

#[test]
fn library_refuses_unsafe_ids_including_nul_and_long_ones() {
    for id in ["../x", "a/b", ".", "", "a\0b", "\n", "a\\b", ".x"] {
        assert!(validate_thread_id(id).is_err(), "{id:?}");
    }
    assert!(validate_thread_id(&"a".repeat(256)).is_err());
    assert!(validate_thread_id(&"a".repeat(255)).is_ok());
    for id in [
        "T-5f1e2d3c-0000-4000-8000-000000000000",
        "2025-02-14-fix-auth",
        "a1b2",
    ] {
        assert!(validate_thread_id(id).is_ok(), "{id:?}");
    }

    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let store = Store::for_project(&dir);
    let mut meta = grove::threads::new_meta("t", "x", Default::default());
    meta.thread_id = "../escape".into();
    assert!(store.create_thread(&meta).is_err());
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "nothing created"
    );
    assert!(!sb.path().join("escape").exists());
}

#[test]
fn any_unique_string_id_and_unique_prefixes_resolve() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let store = Store::for_project(&dir);
    for id in ["T-abc-1", "T-abc-2", "2025-02-14-fix"] {
        let mut meta = grove::threads::new_meta(id, "x", Default::default());
        meta.thread_id = id.into();
        store.create_thread(&meta).unwrap();
    }
    let out = json(&ok(sb.grove(&dir).args(["show", "2025", "--json"])));
    assert_eq!(out["thread"]["threadId"], "2025-02-14-fix");
    let out = json(&ok(sb.grove(&dir).args(["show", "T-abc-2", "--json"])));
    assert_eq!(out["thread"]["threadId"], "T-abc-2");

    let err = fails_with(sb.grove(&dir).args(["show", "T-abc"]), 1);
    assert!(
        err.contains("ambiguous") && err.contains("T-abc-1") && err.contains("T-abc-2"),
        "{err}"
    );
    let err = fails_with(sb.grove(&dir).args(["show", "zzz"]), 1);
    assert!(err.contains("no thread matches"), "{err}");

    // Creating a thread whose id exists is refused.
    let mut meta = grove::threads::new_meta("dup", "x", Default::default());
    meta.thread_id = "T-abc-1".into();
    assert!(matches!(
        store.create_thread(&meta),
        Err(grove::Error::ThreadExists { .. })
    ));
}

#[test]
fn new_thread_ids_are_uuid_v4() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let stdout = ok(sb.grove(&repo).args(["new", "--no-worktree", "t"]));
    let id = uuid::Uuid::parse_str(stdout.trim()).expect("a UUID on stdout");
    assert_eq!(id.get_version_num(), 4);
}

#[test]
fn a_full_id_resolves_without_git_and_prefixes_search_everywhere() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let wt_task = new_task(&sb, &repo, &["in a worktree"]);
    let wt_id = wt_task["threadId"].as_str().unwrap().to_string();
    let local = new_thread(&sb, &repo, "local");
    // With git gone from PATH, a full local id still resolves (no worktree walk)…
    let mut cmd = sb.grove(&repo);
    cmd.env("PATH", "/nonexistent");
    ok(cmd.args(["append", &local, "--role", "user", "--text", "fast"]));
    // …while a prefix of a worktree thread is found through discovery.
    ok(sb
        .grove(&repo)
        .args(["append", &wt_id[..8], "--role", "user", "--text", "found"]));
    assert_eq!(row_of(&sb, &repo, &wt_id)["stats"]["messageCount"], 1);
    assert_eq!(row_of(&sb, &repo, &local)["stats"]["messageCount"], 1);
}
