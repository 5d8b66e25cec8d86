//! Keys of `config.json` that look like a known key misspelt
//! (`postSetupComands`, `branchprefix`): named with the likely key. Unknown
//! keys are still kept as they are (round trip); this only says so.

use serde_json::{Map, Value};

const TOP: &[&str] = &[
    "specVersion",
    "createdBy",
    "defaults",
    "agentSettings",
    "worktreeHooks",
    "grove",
];
const DEFAULTS: &[&str] = &["agentId", "interactionMode", "useWorktree"];
const HOOKS: &[&str] = &[
    "symlinks",
    "postSetupCommands",
    "initialPrompt",
    "copies",
    "ports",
    "env",
    "envFile",
    "preRemoveCommands",
    "preMergeCommands",
];
const COMMAND: &[&str] = &[
    "command",
    "label",
    "timeout",
    "continueOnError",
    "platforms",
    "background",
];
const LINK: &[&str] = &["source", "target"];
const GROVE: &[&str] = &[
    "branchPrefix",
    "branchTemplate",
    "agents",
    "notify",
    "submodules",
    "lfs",
];

/// One misspelt key: where, what it says, and the likely key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearMiss {
    /// Its path, `worktreeHooks.postSetupComands`.
    pub at: String,
    pub likely: String,
}

impl std::fmt::Display for NearMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not a key grove knows; did you mean `{}`? (it is kept as it is, and unused)",
            self.at, self.likely
        )
    }
}

/// The keys of a `config.json` object that are near a known key.
pub fn near_misses(config: &Value) -> Vec<NearMiss> {
    let mut out = Vec::new();
    let Some(top) = config.as_object() else {
        return out;
    };
    check(top, "", TOP, &mut out);
    if let Some(d) = top.get("defaults").and_then(Value::as_object) {
        check(d, "defaults.", DEFAULTS, &mut out);
    }
    if let Some(g) = top.get("grove").and_then(Value::as_object) {
        check(g, "grove.", GROVE, &mut out);
    }
    if let Some(h) = top.get("worktreeHooks").and_then(Value::as_object) {
        check(h, "worktreeHooks.", HOOKS, &mut out);
        for (list, known) in [
            ("postSetupCommands", COMMAND),
            ("preRemoveCommands", COMMAND),
            ("preMergeCommands", COMMAND),
            ("symlinks", LINK),
            ("copies", LINK),
        ] {
            for (i, item) in h
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let Some(o) = item.as_object() {
                    check(o, &format!("worktreeHooks.{list}[{i}]."), known, &mut out);
                }
            }
        }
    }
    out
}

fn check(o: &Map<String, Value>, at: &str, known: &[&str], out: &mut Vec<NearMiss>) {
    for key in o.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        if let Some(likely) = known.iter().find(|k| near(key, k)) {
            out.push(NearMiss {
                at: format!("{at}{key}"),
                likely: likely.to_string(),
            });
        }
    }
}

/// The same but for case, or at most two edits apart (one for short keys).
fn near(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    let limit = if b.len() <= 5 { 1 } else { 2 };
    distance(&a.to_ascii_lowercase(), &b.to_ascii_lowercase()) <= limit
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            row.push((prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_keys_are_named_with_the_likely_one() {
        let config = serde_json::json!({"specVersion": "1.1",
            "worktreeHooks": {"postSetupComands": [], "symlinks": [{"sorce": "a"}]},
            "grove": {"branchprefix": "x/", "somethingElse": 1}});
        let found: Vec<(String, String)> = near_misses(&config)
            .into_iter()
            .map(|n| (n.at, n.likely))
            .collect();
        assert_eq!(
            found,
            [
                ("grove.branchprefix".to_string(), "branchPrefix".to_string()),
                (
                    "worktreeHooks.postSetupComands".into(),
                    "postSetupCommands".into()
                ),
                ("worktreeHooks.symlinks[0].sorce".into(), "source".into()),
            ]
        );
    }
}
