//! Two copies of one thread's `thread.json` made one, the same on every
//! machine (the logs: [`super::logs`]).
//!
//! `thread.json` merges field by field: relationships and tags as a union,
//! `metadata.grove.share` false when either side says so, `v` the
//! larger plus one, stats recounted from the merged log, fields grove does
//! not know kept; when both sides set a plain field differently, the side
//! with the newer `updatedAt` wins and the other value is recorded under
//! `metadata.grove.syncConflicts`.

use serde_json::{Map, Value};

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
    crate::atsf::grove::ThreadSectionMut::of(metadata).add_sync_conflicts(conflicts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
