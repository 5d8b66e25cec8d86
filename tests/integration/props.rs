//! No panic on any input: property tests over the `thread.json`,
//! `config.json` and message-line parsers and every importer, with a fixed
//! budget of cases and a fixed seed (`GROVE_PROPTEST_SEED` picks another).
//!
//! Inputs are real records (the fixtures) put through random mutations —
//! values replaced by odd ones (control characters, multi-byte text cut
//! anywhere, huge numbers, wrong types), keys removed or added — so the
//! parsers' deep paths are reached, not only their first `{`.

use std::path::{Path, PathBuf};

use grove::atsf::{Config, ThreadMeta};
use grove::import;
use proptest::prelude::*;
use proptest::test_runner::{Config as Budget, RngSeed, TestRunner};
use serde_json::Value;

use crate::support::*;

fn runner(cases: u32) -> TestRunner {
    let seed = std::env::var("GROVE_PROPTEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e0e);
    TestRunner::new(Budget {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..Budget::default()
    })
}

/// Strings that break naive code: control and bidi characters, multi-byte
/// text (so a byte slice lands inside a character), empty, long.
fn odd_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9 ./_-]{0,12}",
        "[éàü€😀\\u{202e}\\u{1b}\\r\\n\\t\\u{0}-\\u{1f}\\u{80}-\\u{9f}a-z]{0,24}",
        "(é€){1,12}",
        Just(String::new()),
        Just("../../etc/passwd".to_string()),
        Just("x".repeat(5000)),
        any::<String>(),
    ]
}

const KEYS: &[&str] = &[
    "type",
    "id",
    "uuid",
    "parentUuid",
    "sessionId",
    "session_id",
    "timestamp",
    "role",
    "content",
    "message",
    "text",
    "thinking",
    "tool_use_id",
    "tool_use",
    "tool_result",
    "input",
    "output",
    "name",
    "isSidechain",
    "cwd",
    "gitBranch",
    "payload",
    "call_id",
    "arguments",
    "image_url",
    "source",
    "data",
    "media_type",
    "mimeType",
    "assetRef",
    "status",
    "threadId",
    "specVersion",
    "title",
    "createdAt",
    "updatedAt",
    "stats",
    "agent",
    "context",
    "messages",
    "thread_id",
    "git",
    "summary",
    "files_touched",
    "next_steps",
    "tags",
    "sentAt",
    "relationships",
    "v",
    "leafUuid",
    "toolCalls",
    "toolCallId",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(KEYS).prop_map(str::to_string),
        1 => odd_string(),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        odd_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One change to a JSON document.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, Value),
    Remove(usize),
    Cut(usize, usize),
    Insert(usize, String, Value),
    /// Every `step`-th string of the document garbled one way: multi-byte
    /// text put in front (so byte offsets land inside characters), control
    /// and bidi characters mixed in, or the string replaced by non-ASCII.
    Garble(u8, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        any::<usize>().prop_map(Mutation::Remove),
        (any::<usize>(), any::<usize>()).prop_map(|(at, n)| Mutation::Cut(at, n)),
        (any::<usize>(), key(), value()).prop_map(|(at, k, v)| Mutation::Insert(at, k, v)),
        (0u8..4, 1usize..4).prop_map(|(how, step)| Mutation::Garble(how, step)),
    ]
}

fn garble(v: &mut Value, how: u8, step: usize, seen: &mut usize) {
    match v {
        Value::String(s) => {
            *seen += 1;
            if seen.is_multiple_of(step) {
                *s = match how {
                    0 => format!("é{s}"),
                    1 => format!("\u{1b}[2J{s}\r\u{202e}\u{7}"),
                    2 => "€é".repeat(s.chars().count().clamp(1, 40)),
                    _ => s.chars().rev().collect(),
                };
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| garble(c, how, step, seen)),
        Value::Object(m) => m.values_mut().for_each(|c| garble(c, how, step, seen)),
        _ => {}
    }
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..6)
}

/// Every node of `v`, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(child, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn mutate(mut doc: Value, changes: &[Mutation]) -> Value {
    for change in changes {
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        let pick = |at: usize| all[at % all.len()].clone();
        match change {
            Mutation::Replace(at, v) => {
                if let Some(node) = doc.pointer_mut(&pick(*at)) {
                    *node = v.clone();
                }
            }
            Mutation::Remove(at) => {
                let p = pick(*at);
                if let Some((parent, last)) = p.rsplit_once('/')
                    && let Some(node) = doc.pointer_mut(parent)
                {
                    let last = last.replace("~1", "/").replace("~0", "~");
                    match node {
                        Value::Object(m) => {
                            m.remove(&last);
                        }
                        Value::Array(a) => {
                            if let Ok(i) = last.parse::<usize>()
                                && i < a.len()
                            {
                                a.remove(i);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Mutation::Cut(at, n) => {
                if let Some(Value::String(s)) = doc.pointer_mut(&pick(*at)) {
                    let chars: Vec<char> = s.chars().collect();
                    let keep = n % (chars.len() + 1);
                    *s = chars[..keep].iter().collect();
                }
            }
            Mutation::Insert(at, k, v) => {
                if let Some(Value::Object(m)) = doc.pointer_mut(&pick(*at)) {
                    m.insert(k.clone(), v.clone());
                }
            }
            Mutation::Garble(how, step) => garble(&mut doc, *how, *step, &mut 0),
        }
    }
    doc
}

fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

fn json_file(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(rel)).unwrap()).unwrap()
}

fn jsonl_file(rel: &str, max: usize) -> Vec<Value> {
    std::fs::read_to_string(fixture(rel))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .take(max)
        .collect()
}

/// What happens to one line of a JSON Lines file.
#[derive(Debug, Clone)]
enum LineChange {
    Mutate(usize, Vec<Mutation>),
    /// Every line garbled the same way.
    All(Vec<Mutation>),
    Drop(usize),
    Duplicate(usize),
}

/// Applies `changes` to the documents of a JSON Lines file.
fn mutate_lines(docs: &[Value], changes: &[LineChange]) -> String {
    let mut docs = docs.to_vec();
    for change in changes {
        if docs.is_empty() {
            break;
        }
        let n = docs.len();
        match change {
            LineChange::Mutate(which, list) => {
                docs[which % n] = mutate(docs[which % n].clone(), list)
            }
            LineChange::All(list) => {
                for d in docs.iter_mut() {
                    *d = mutate(d.clone(), list);
                }
            }
            LineChange::Drop(which) => {
                docs.remove(which % n);
            }
            LineChange::Duplicate(which) => {
                let d = docs[which % n].clone();
                docs.insert(which % n, d);
            }
        }
    }
    docs.iter().map(|d| format!("{d}\n")).collect()
}

fn line_change() -> impl Strategy<Value = LineChange> {
    prop_oneof![
        4 => (any::<usize>(), mutations()).prop_map(|(w, m)| LineChange::Mutate(w, m)),
        2 => (0u8..4, 1usize..3).prop_map(|(how, step)| LineChange::All(vec![Mutation::Garble(how, step)])),
        1 => any::<usize>().prop_map(LineChange::Drop),
        1 => any::<usize>().prop_map(LineChange::Duplicate),
    ]
}

fn line_changes() -> impl Strategy<Value = Vec<LineChange>> {
    proptest::collection::vec(line_change(), 1..6)
}

const THREAD: &str = "atsf/unknown-fields/.agent/threads/u-1/thread.json";

#[test]
fn thread_json_config_and_message_lines_never_panic() {
    let thread = json_file(THREAD);
    let config = json_file("atsf/unknown-fields/.agent/config.json");
    let messages = jsonl_file("atsf/unknown-fields/.agent/threads/u-1/messages.jsonl", 50);
    let path = Path::new("thread.json");
    runner(256)
        .run(
            &(mutations(), mutations(), line_changes(), any::<Vec<u8>>()),
            |(t, c, m, raw)| {
                let t = serde_json::to_vec(&mutate(thread.clone(), &t)).unwrap();
                if let Ok(meta) = grove::atsf::parse_json::<ThreadMeta>(path, &t) {
                    grove::atsf::to_pretty(&meta).unwrap();
                }
                let _ = grove::atsf::parse_json::<ThreadMeta>(path, &raw);
                let c = serde_json::to_vec(&mutate(config.clone(), &c)).unwrap();
                let _ = grove::atsf::parse_json::<Config>(path, &c);
                let _ = grove::atsf::parse_json::<Config>(path, &raw);
                for (i, line) in mutate_lines(&messages, &m).lines().enumerate() {
                    if let Ok(msg) =
                        grove::atsf::parse_message_line(path, i as u64 + 1, line.as_bytes())
                    {
                        grove::atsf::to_line(&msg).unwrap();
                    }
                }
                let _ = grove::atsf::parse_message_line(path, 1, &raw);
                Ok(())
            },
        )
        .unwrap();
}

/// `show` and `export` of mutated threads (their text reaches the terminal
/// code): a smaller budget, each case runs the binary.
#[test]
fn show_and_export_never_panic_on_mutated_threads() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let thread = json_file(THREAD);
    let messages = jsonl_file("atsf/unknown-fields/.agent/threads/u-1/messages.jsonl", 50);
    let dir = repo.join(".agent/threads/u-1");
    std::fs::create_dir_all(&dir).unwrap();
    runner(24)
        .run(&(mutations(), line_changes()), |(t, m)| {
            let mut meta = mutate(thread.clone(), &t);
            if let Some(o) = meta.as_object_mut() {
                o.insert("threadId".into(), "u-1".into());
            }
            std::fs::write(dir.join("thread.json"), meta.to_string()).unwrap();
            std::fs::write(dir.join("messages.jsonl"), mutate_lines(&messages, &m)).unwrap();
            for args in [
                vec!["--color", "always", "show", "u-1", "--thinking", "--full"],
                vec!["export", "u-1", "--format", "md"],
                vec!["export", "u-1", "--format", "html"],
                vec!["list"],
            ] {
                let out = run(sb.grove(&repo).args(&args));
                let err = String::from_utf8_lossy(&out.stderr);
                prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
                prop_assert!(out.status.code().is_some_and(|c| c <= 2), "{args:?}: {err}");
            }
            Ok(())
        })
        .unwrap();
}

/// Imports mutated copies of a format's fixture files (the paths under the
/// copy in `entries`) through the whole pipeline, writer included.
fn importer_never_panics(cases: u32, format: &str, files: &[(&str, &str)], entries: &[&str]) {
    let format = import::format(format).unwrap();
    let docs: Vec<(String, bool, Vec<Value>)> = files
        .iter()
        .map(|(from, _)| {
            let lines = from.ends_with(".jsonl");
            let docs = if lines {
                jsonl_file(from, 60)
            } else {
                vec![json_file(from)]
            };
            (from.to_string(), lines, docs)
        })
        .collect();
    runner(cases)
        .run(
            &proptest::collection::vec(line_changes(), files.len()),
            |changes| {
                let tmp = tempfile::tempdir().unwrap();
                for ((_, to), ((_, lines, originals), change)) in
                    files.iter().zip(docs.iter().zip(&changes))
                {
                    let path = tmp.path().join(to);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    let text = if *lines {
                        mutate_lines(originals, change)
                    } else {
                        let flat: Vec<Mutation> = change
                            .iter()
                            .flat_map(|c| match c {
                                LineChange::Mutate(_, m) | LineChange::All(m) => m.clone(),
                                _ => Vec::new(),
                            })
                            .collect();
                        mutate(originals[0].clone(), &flat).to_string()
                    };
                    std::fs::write(&path, text).unwrap();
                }
                let out = tmp.path().join("out");
                std::fs::create_dir_all(&out).unwrap();
                let paths: Vec<std::path::PathBuf> =
                    entries.iter().map(|e| tmp.path().join(e)).collect();
                let _ = import::run(format, &paths, &import::Destination::Root(out));
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn the_claude_and_sage_importers_never_panic() {
    importer_never_panics(
        96,
        "claude",
        &[
            (
                "claude/branching/7b1e0c2a-0000-4000-8000-000000000001.jsonl",
                "s.jsonl",
            ),
            (
                "claude/project/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
                "t.jsonl",
            ),
        ],
        &["s.jsonl", "t.jsonl"],
    );
    importer_never_panics(
        96,
        "sage",
        &[
            (
                "sage/.sage/sessions/session-123/messages.jsonl",
                "s/messages.jsonl",
            ),
            (
                "sage/.sage/sessions/session-123/metadata.json",
                "s/metadata.json",
            ),
            (
                "sage/.sage/sessions/session-123/snapshots.jsonl",
                "s/snapshots.jsonl",
            ),
        ],
        &["s"],
    );
}

#[test]
fn the_codex_amp_and_hq_importers_never_panic() {
    importer_never_panics(
        96,
        "codex",
        &[(
            "codex/sessions/2025/10/29/rollout-2025-10-29T00-59-38-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5.jsonl",
            "rollout-x.jsonl",
        )],
        &["rollout-x.jsonl"],
    );
    importer_never_panics(
        96,
        "amp",
        &[("amp/T-5928a90d-d53b-488f-a829-4e36442142ee.json", "t.json")],
        &["t.json"],
    );
    importer_never_panics(
        96,
        "hq",
        &[(
            "hq/workspace/threads/T-20260123-143052-mrr-report.json",
            "t.json",
        )],
        &["t.json"],
    );
}

#[test]
fn the_gemini_and_opencode_importers_never_panic() {
    importer_never_panics(
        64,
        "gemini",
        &[
            (
                "gemini/tmp/7d4a1c0e9b2f/chats/session-2025-10-18T14-57-0b9e2d41.json",
                "chats/session-a.json",
            ),
            (
                "gemini/tmp/7d4a1c0e9b2f/chats/session-2026-09-02T14-53-3e0b7a52.jsonl",
                "chats/session-b.jsonl",
            ),
            (
                "gemini/tmp/7d4a1c0e9b2f/checkpoint-release-notes.json",
                "checkpoint-c.json",
            ),
        ],
        &["chats", "checkpoint-c.json"],
    );
    let s = "opencode/storage";
    let ses = "ses_469cf929cffeBICghRNeI7BWy6";
    let m = "msg_b96306e9a001K2mN4pQ7rS8tU1";
    let files: Vec<(String, String)> = vec![
        (
            format!("{s}/session/4b0ea68d7af9a6031a7ffda7ad66e0cb83315750/{ses}.json"),
            format!("storage/session/p/{ses}.json"),
        ),
        (
            format!("{s}/message/{ses}/{m}.json"),
            format!("storage/message/{ses}/{m}.json"),
        ),
        (
            format!("{s}/part/{m}/prt_b96306e9a004ffffffffffffff.json"),
            format!("storage/part/{m}/p1.json"),
        ),
        (
            format!("{s}/part/{m}/prt_b96306e9a005gggggggggggggg.json"),
            format!("storage/part/{m}/p2.json"),
        ),
    ];
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    importer_never_panics(64, "opencode", &refs, &["storage"]);
}

#[test]
fn the_dagent_importer_never_panics() {
    let base = "dagent/current/.dagent/features/auth-feature";
    let legacy = "dagent/legacy/.dagent/features/login";
    let f = |p: &str| format!("{base}/{p}");
    let files: Vec<(String, String)> = vec![
        (f("feature.json"), "features/a/feature.json".into()),
        (f("chat.json"), "features/a/chat.json".into()),
        (
            f("sessions/pm-feature-auth-feature/session.json"),
            "features/a/sessions/pm/session.json".into(),
        ),
        (
            f("sessions/pm-feature-auth-feature/chat.json"),
            "features/a/sessions/pm/chat.json".into(),
        ),
        (
            f("sessions/pm-feature-auth-feature/checkpoint.json"),
            "features/a/sessions/pm/checkpoint.json".into(),
        ),
        (format!("{legacy}/chat.json"), "features/b/chat.json".into()),
        (
            format!("{legacy}/nodes/node-1/session.json"),
            "features/b/nodes/node-1/session.json".into(),
        ),
    ];
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    importer_never_panics(96, "dagent", &refs, &["features"]);
}
