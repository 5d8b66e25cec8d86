//! Two histories of one thread made one, the same on every machine.
//!
//! Logs are append-only, so two copies of a thread share a prefix and then
//! diverge. The merge keeps every message exactly once (by `id`): when one
//! log extends the other, the longer one as it is; otherwise the common
//! prefix, then every other message ordered by timestamp, then id. A
//! message both sides hold keeps this machine's bytes (after a redacted
//! push, the other side's may be the redacted copy).
//!
//! `thread.json` merges field by field: relationships and tags as a union,
//! `metadata.grove.share` false when either side says so, `v` the
//! larger plus one, stats recounted from the merged log, fields grove does
//! not know kept; when both sides set a plain field differently, the side
//! with the newer `updatedAt` wins and the other value is recorded under
//! `metadata.grove.syncConflicts`.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

/// One line of a log: its message id and timestamp (read loosely: a line
/// that is not a message keeps its bytes and sorts by them), and its bytes.
#[derive(Debug, Clone)]
struct Line<'a> {
    key: String,
    timestamp: String,
    bytes: &'a [u8],
}

fn lines(log: &[u8]) -> Vec<Line<'_>> {
    // Only complete lines: a last line without its newline is a write in
    // progress, as for every reader of the log.
    let complete = match memchr::memrchr(b'\n', log) {
        Some(end) => &log[..=end],
        None => &[][..],
    };
    complete
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|bytes| {
            let value: Option<Value> = serde_json::from_slice(bytes).ok();
            let field = |name: &str| {
                value
                    .as_ref()
                    .and_then(|v| v.get(name))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            Line {
                key: field("id")
                    .unwrap_or_else(|| format!("line:{}", String::from_utf8_lossy(bytes))),
                timestamp: field("timestamp").unwrap_or_default(),
                bytes,
            }
        })
        .collect()
}

/// How many messages (complete non-blank lines) a log holds.
pub fn count_lines(log: &[u8]) -> usize {
    lines(log).len()
}

/// The merged log: `ours` (this machine's) and `theirs`.
pub fn merge_logs(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (a, b) = (lines(ours), lines(theirs));
    let common = a.iter().zip(&b).take_while(|(x, y)| x.key == y.key).count();
    // One extends the other: the longer one, as it is.
    if common == b.len() {
        return join(&a);
    }
    // Every line of this machine's log stays, even two under one id (the
    // spec forbids them, grove refuses to write them, an older writer may
    // have): only theirs are left out when this log has their message.
    let mut seen: HashSet<&str> = a.iter().map(|l| l.key.as_str()).collect();
    let theirs_only = b[common..].iter().filter(|l| seen.insert(l.key.as_str()));
    if common == a.len() {
        // Theirs extends ours: our bytes for what we share, then theirs.
        return join(a.iter().chain(theirs_only));
    }
    let mut rest: Vec<&Line> = a[common..].iter().chain(theirs_only).collect();
    // Stable: lines of one time and id keep the order they had.
    rest.sort_by(|x, y| (&x.timestamp, &x.key).cmp(&(&y.timestamp, &y.key)));
    join(a[..common].iter().chain(rest))
}

fn join<'a>(lines: impl IntoIterator<Item = &'a Line<'a>>) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line.bytes);
        out.push(b'\n');
    }
    out
}

/// The merged `thread.json`, with `stats` (recounted from the merged log
/// by the caller). When the result says what one side already says, that
/// side is returned as it is (its `v` too), so that merging again changes
/// nothing and both machines end with the same bytes.
pub fn merge_meta(ours: &Value, theirs: &Value, stats: &Value) -> Value {
    let updated = |v: &Value| {
        v.get("updatedAt")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    // The newer side wins plain conflicts; on a tie, the larger bytes, so
    // both machines pick the same one.
    let ours_newer = (updated(ours), ours.to_string()) >= (updated(theirs), theirs.to_string());
    let (newer, older) = if ours_newer {
        (ours, theirs)
    } else {
        (theirs, ours)
    };
    let mut conflicts = Vec::new();
    let mut merged = merge_values(newer, older, "", &mut conflicts);
    let Value::Object(map) = &mut merged else {
        return newer.clone();
    };
    map.insert("stats".into(), stats.clone());
    if !conflicts.is_empty() {
        record_conflicts(map, conflicts);
    }
    let without_v = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("v");
        }
        v
    };
    let content = without_v(&merged);
    if content == without_v(theirs) {
        return theirs.clone();
    }
    if content == without_v(ours) {
        return ours.clone();
    }
    let version = |v: &Value| v.get("v").and_then(Value::as_u64).unwrap_or(0);
    if let Value::Object(map) = &mut merged {
        map.insert(
            "v".into(),
            Value::from(version(ours).max(version(theirs)) + 1),
        );
    }
    merged
}

/// `newer` with what only `older` has added; plain values that differ are
/// `newer`'s, noted in `conflicts` as (field, the value dropped).
fn merge_values(
    newer: &Value,
    older: &Value,
    path: &str,
    conflicts: &mut Vec<(String, Value)>,
) -> Value {
    match (newer, older) {
        (Value::Object(n), Value::Object(o)) => {
            let mut out = Map::new();
            for (k, v) in n {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let merged = match o.get(k) {
                    Some(ov) if is_ignored(&sub) => larger(v, ov),
                    Some(ov) => merge_values(v, ov, &sub, conflicts),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            for (k, v) in o {
                if !n.contains_key(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
        // A thread kept home stays home: tags are a union (a tag the user's
        // push-exclude-tags lists is never dropped) and `share: false` on
        // either side wins.
        (n, o) if path == SHARE => {
            if *n == Value::Bool(false) || *o == Value::Bool(false) {
                Value::Bool(false)
            } else {
                n.clone()
            }
        }
        (Value::Array(n), Value::Array(o)) if path == "relationships" || path == TAGS => {
            let mut out = n.clone();
            for item in o {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            }
            Value::Array(out)
        }
        (n, o) => {
            if n != o {
                conflicts.push((path.to_string(), o.clone()));
            }
            n.clone()
        }
    }
}

/// `metadata.grove.share`: `false` keeps the thread home.
const SHARE: &str = "metadata.grove.share";
/// `metadata.tags`: a tag can keep the thread home (`push-exclude-tags`).
const TAGS: &str = "metadata.tags";

/// Fields that are no conflict when they differ: the version and times
/// (the larger one is kept), the stats (recounted), and the conflict record
/// itself.
fn is_ignored(path: &str) -> bool {
    matches!(
        path,
        "v" | "updatedAt" | "stats" | "metadata.grove.syncConflicts"
    ) || path.starts_with("stats.")
}

/// The larger of two values by their JSON text (times compare as text);
/// objects are not compared (the newer side's is kept).
fn larger(newer: &Value, older: &Value) -> Value {
    if newer.is_object() || older.is_object() {
        return newer.clone();
    }
    let (n, o) = (newer.to_string(), older.to_string());
    if o > n { older.clone() } else { newer.clone() }
}

fn record_conflicts(map: &mut Map<String, Value>, conflicts: Vec<(String, Value)>) {
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(metadata) = metadata else {
        return;
    };
    let grove = metadata
        .entry("grove")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(grove) = grove else {
        return;
    };
    let mut recorded: BTreeMap<String, Value> = grove
        .get("syncConflicts")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    for (field, dropped) in conflicts {
        recorded.insert(field, dropped);
    }
    grove.insert(
        "syncConflicts".into(),
        Value::Object(recorded.into_iter().collect()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, ts: &str) -> String {
        json!({"id": id, "role": "user", "timestamp": ts, "content": [{"type": "text", "text": id}]})
            .to_string()
            + "\n"
    }

    fn log(msgs: &[(&str, &str)]) -> Vec<u8> {
        msgs.iter()
            .map(|(id, ts)| msg(id, ts))
            .collect::<String>()
            .into_bytes()
    }

    fn ids(log: &[u8]) -> Vec<String> {
        lines(log).into_iter().map(|l| l.key).collect()
    }

    #[test]
    fn a_log_that_extends_the_other_is_kept_as_it_is() {
        let short = log(&[("a", "2025-01-01T00:00:02Z"), ("b", "2025-01-01T00:00:01Z")]);
        let mut long = short.clone();
        long.extend(log(&[("c", "2025-01-01T00:00:00Z")]));
        assert_eq!(merge_logs(&short, &long), long);
        assert_eq!(merge_logs(&long, &short), long);
        assert_eq!(merge_logs(&long, &long), long);
    }

    #[test]
    fn diverged_logs_keep_the_common_prefix_then_every_other_message_once_by_time_and_id() {
        let base = [("a", "2025-01-01T00:00:00Z"), ("b", "2025-01-01T00:00:01Z")];
        let ours = log(&[
            base[0],
            base[1],
            ("x", "2025-01-01T00:00:05Z"),
            ("y", "2025-01-01T00:00:07Z"),
        ]);
        let theirs = log(&[
            base[0],
            base[1],
            ("p", "2025-01-01T00:00:06Z"),
            ("q", "2025-01-01T00:00:05Z"),
        ]);
        let merged = merge_logs(&ours, &theirs);
        assert_eq!(ids(&merged), ["a", "b", "q", "x", "p", "y"]);
        assert_eq!(
            merge_logs(&theirs, &ours),
            merged,
            "the same on both machines"
        );
        // Merging again changes nothing.
        assert_eq!(merge_logs(&merged, &theirs), merged);
        assert_eq!(merge_logs(&ours, &merged), merged);
    }

    #[test]
    fn no_line_of_this_machines_log_is_dropped_even_under_a_repeated_id() {
        let ours = [
            msg("a", "2025-01-01T00:00:00Z"),
            msg("x", "2025-01-01T00:00:01Z"),
            msg("x", "2025-01-01T00:00:02Z").replace("\"text\":\"x\"", "\"text\":\"x again\""),
        ]
        .concat()
        .into_bytes();
        let theirs = log(&[("a", "2025-01-01T00:00:00Z"), ("p", "2025-01-01T00:00:03Z")]);
        let merged = merge_logs(&ours, &theirs);
        assert_eq!(ids(&merged), ["a", "x", "x", "p"]);
        assert!(String::from_utf8_lossy(&merged).contains("x again"));
        // Theirs repeated is theirs: once.
        let theirs = [
            msg("a", "2025-01-01T00:00:00Z"),
            msg("q", "2025-01-01T00:00:04Z"),
            msg("q", "2025-01-01T00:00:04Z"),
        ]
        .concat();
        assert_eq!(
            ids(&merge_logs(
                &log(&[("a", "2025-01-01T00:00:00Z")]),
                theirs.as_bytes()
            )),
            ["a", "q"]
        );
    }

    #[test]
    fn a_torn_last_line_is_left_out() {
        let mut ours = log(&[("a", "2025-01-01T00:00:00Z")]);
        ours.extend_from_slice(b"{\"id\":\"half");
        assert_eq!(ids(&merge_logs(&ours, b"")), ["a"]);
    }

    #[test]
    fn what_keeps_a_thread_home_survives_any_merge() {
        let ours = json!({"threadId": "t", "updatedAt": "2025-01-01T00:00:00Z",
            "metadata": {"tags": ["private", "a"], "grove": {"share": false}}});
        let theirs = json!({"threadId": "t", "updatedAt": "2025-01-09T00:00:00Z",
            "metadata": {"tags": ["b"], "grove": {"share": true}}});
        let stats = json!({});
        for merged in [
            merge_meta(&ours, &theirs, &stats),
            merge_meta(&theirs, &ours, &stats),
        ] {
            assert_eq!(merged["metadata"]["tags"], json!(["b", "private", "a"]));
            assert_eq!(merged["metadata"]["grove"]["share"], false);
        }
    }

    #[test]
    fn metadata_merges_field_by_field_and_records_what_the_older_side_lost() {
        let ours = json!({
            "threadId": "t", "title": "Fix login", "v": 4, "updatedAt": "2025-01-02T00:00:00Z",
            "relationships": [{"type": "fork", "threadId": "a"}],
            "stats": {"messageCount": 3}, "mine": 1,
        });
        let theirs = json!({
            "threadId": "t", "title": "Fix the login bug", "v": 7, "updatedAt": "2025-01-03T00:00:00Z",
            "relationships": [{"type": "fork", "threadId": "a"}, {"type": "mention", "threadId": "b"}],
            "stats": {"messageCount": 5}, "theirs": {"x": true},
        });
        let stats = json!({"messageCount": 6});
        let merged = merge_meta(&ours, &theirs, &stats);
        assert_eq!(merged["title"], "Fix the login bug", "the newer side wins");
        assert_eq!(merged["stats"], stats);
        assert_eq!(merged["v"], 8);
        assert_eq!(merged["updatedAt"], "2025-01-03T00:00:00Z");
        assert_eq!(merged["relationships"].as_array().unwrap().len(), 2);
        assert_eq!(
            (merged["mine"].clone(), merged["theirs"]["x"].clone()),
            (json!(1), json!(true))
        );
        assert_eq!(
            merged["metadata"]["grove"]["syncConflicts"]["title"],
            "Fix login"
        );
        assert_eq!(
            merge_meta(&theirs, &ours, &stats),
            merged,
            "the same on both machines"
        );
        // Merging the result again with either side changes nothing.
        assert_eq!(merge_meta(&ours, &merged, &stats), merged);
        assert_eq!(merge_meta(&merged, &theirs, &stats), merged);
    }
}
