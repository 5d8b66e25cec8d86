//! grove's hooks in the text of an agent's hooks file (Claude Code's
//! `settings.local.json`, Codex's `hooks.json`, Gemini CLI's
//! `settings.json`: all `{"hooks": {"<Event>": [{"matcher"?, "hooks":
//! [{"type": "command", "command", "timeout"}]}]}}`).
//!
//! [`add`] appends one group per event, running grove, and says which
//! containers it created; [`strip`] takes grove's groups out again, and a
//! container only when [`add`] created it. The edits are made on the text
//! ([`super::jsontext`]), so `strip(add(text))` is `text`, byte for byte,
//! and so are the parts of it the user changed in between.

use serde::{Deserialize, Serialize};

use super::jsontext::{self, Child, Kind, Node, Out, Style};
use crate::agent::Native;

/// What [`add`] created, beyond grove's own groups: the containers
/// [`strip`] may take out once they hold nothing but grove's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// The `hooks` member itself.
    pub hooks: bool,
    /// Event members added to a `hooks` that was there.
    pub events: Vec<String>,
}

/// What [`add`] did.
#[derive(Debug)]
pub struct Added {
    /// The new text.
    pub text: String,
    pub created: Created,
    /// The events that got grove's hook.
    pub installed: Vec<String>,
    /// The events that did not, with why.
    pub skipped: Vec<(String, String)>,
}

/// The events each agent's hooks are installed for.
pub fn events(native: Native) -> &'static [&'static str] {
    match native {
        Native::Claude => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            // A failing tool fires this instead of PostToolUse (Claude Code
            // 2.1.331): without it the failure's result waits for the next hook.
            "PostToolUseFailure",
            "Notification",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ],
        Native::Codex => &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
            // `codex exec` ends with it (Codex 0.169): the session is over.
            "SessionEnd",
        ],
        // Gemini CLI 0.61 waits for each hook: not those it runs at every
        // model call or streamed chunk (`BeforeModel`, `AfterModel`,
        // `PreCompress`), which would slow every turn.
        Native::Gemini => &[
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "Notification",
            "SessionEnd",
        ],
        // The events grove's OpenCode plugin passes on.
        Native::OpenCode => OPENCODE_EVENTS,
    }
}

/// The timeout grove gives its hook of `event` (seconds): the agent's own
/// bound where it has one. Codex 0.169 clamps a `SessionEnd` hook to 3 s (and
/// says so); its trust hash is of the clamped definition, so a longer one
/// written would never count as trusted.
pub fn timeout(native: Native, event: &str) -> u64 {
    match (native, event) {
        (Native::Codex, "SessionEnd") => 3,
        // Gemini counts in milliseconds.
        (Native::Gemini, _) => HOOK_TIMEOUT_SECS * 1000,
        _ => HOOK_TIMEOUT_SECS,
    }
}

/// The name Gemini CLI shows for grove's hook (in its warning about a
/// project's hooks, and in `/hooks`).
pub const GEMINI_HOOK_NAME: &str = "grove-capture";

/// Events whose hooks take a tool-name matcher.
fn takes_matcher(native: Native, event: &str) -> bool {
    native == Native::Claude && matches!(event, "PreToolUse" | "PostToolUse" | "PostToolUseFailure")
}

/// Whether `command` is one of grove's capture hooks.
pub fn is_grove_hook(command: &str, native: Native) -> bool {
    command.contains(&format!(" capture {}", native.format())) && command.contains("grove")
}

/// Adds a group running `command` to every event of `native` in `text` (a
/// JSON object holding none of grove's hooks). `file` names it in reasons.
pub fn add(text: &str, native: Native, command: &str, file: &str) -> Added {
    let mut added = Added {
        text: text.to_string(),
        created: Created::default(),
        installed: Vec::new(),
        skipped: Vec::new(),
    };
    let Some(root) = jsontext::parse(text) else {
        skip_all(
            &mut added,
            native,
            format!("{file} could not be read as JSON"),
        );
        return added;
    };
    let style = Style::of(text, &root);
    let group = |event: &str| group(native, event, command);
    match root.get("hooks") {
        None => {
            let table = Out::Object(
                events(native)
                    .iter()
                    .map(|e| (e.to_string(), Out::Array(vec![group(e)])))
                    .collect(),
            );
            insert(
                &mut added.text,
                &root,
                &style,
                Child::Member("hooks", &table),
            );
            added.created.hooks = true;
            added.installed = events(native).iter().map(|e| e.to_string()).collect();
        }
        Some(hooks) if !matches!(hooks.value.kind, Kind::Object(_)) => {
            let what = describe(text, &hooks.value);
            skip_all(
                &mut added,
                native,
                format!(
                    "\"hooks\" in {file} is not an object (it is {what}), so it holds no hook \
                     grove could add to; grove leaves it alone"
                ),
            );
        }
        Some(_) => {
            for event in events(native) {
                add_event(&mut added, &style, event, &group(event), file);
            }
        }
    }
    added
}

/// Adds `group` to `event`'s list in the `hooks` object of `added.text`.
fn add_event(added: &mut Added, style: &Style, event: &str, group: &Out, file: &str) {
    // Parsed again for each event: every insertion moves what follows it.
    let Some(root) = jsontext::parse(&added.text) else {
        added
            .skipped
            .push((event.into(), format!("{file} could not be read as JSON")));
        return;
    };
    let Some(hooks) = root.get("hooks") else {
        return;
    };
    match hooks.value.get(event) {
        None => {
            let list = Out::Array(vec![group.clone()]);
            insert(
                &mut added.text,
                &hooks.value,
                style,
                Child::Member(event, &list),
            );
            added.created.events.push(event.into());
        }
        Some(m) if matches!(m.value.kind, Kind::Array(_)) => {
            insert(&mut added.text, &m.value, style, Child::Element(group));
        }
        Some(m) => {
            let what = describe(&added.text, &m.value);
            added.skipped.push((
                event.into(),
                format!(
                    "\"hooks\".\"{event}\" in {file} is not a list of hook groups (it is {what}); \
                     grove leaves it alone"
                ),
            ));
            return;
        }
    }
    added.installed.push(event.into());
}

fn skip_all(added: &mut Added, native: Native, reason: String) {
    added.skipped = events(native)
        .iter()
        .map(|e| (e.to_string(), reason.clone()))
        .collect();
}

fn insert(text: &mut String, container: &Node, style: &Style, child: Child<'_>) {
    let (at, what) = jsontext::append(text, container, style, child);
    text.insert_str(at, &what);
}

/// One group running `command` for `event`.
fn group(native: Native, event: &str, command: &str) -> Out {
    let mut group = Vec::new();
    if takes_matcher(native, event) {
        group.push(("matcher".to_string(), Out::Str("*".into())));
    }
    let mut hook = Vec::new();
    if native == Native::Gemini {
        hook.push(("name".into(), Out::Str(GEMINI_HOOK_NAME.into())));
    }
    hook.extend([
        ("type".into(), Out::Str("command".into())),
        ("command".into(), Out::Str(command.into())),
        ("timeout".into(), Out::Int(timeout(native, event))),
    ]);
    let hook = Out::Object(hook);
    group.push(("hooks".into(), Out::Array(vec![hook])));
    Out::Object(group)
}

/// What a JSON value is, for a person: "an array", "a string".
fn describe(text: &str, node: &Node) -> &'static str {
    match &node.kind {
        Kind::Object(_) => "an object",
        Kind::Array(_) => "an array",
        Kind::String(_) => "a string",
        Kind::Scalar => match text.get(node.start..node.end) {
            Some("true" | "false") => "a boolean",
            Some("null") => "null",
            _ => "a number",
        },
    }
}

/// `text` without grove's hooks for `native`. A group holding only grove's
/// hooks goes; from a group holding the user's too, only grove's entries go.
/// An event list, or the `hooks` object, left with nothing but grove's goes
/// as a whole when `created` says [`add`] created it (with no record of
/// that, when it held anything: an install by an older grove).
pub fn strip(text: &str, native: Native, created: Option<&Created>) -> String {
    let mut text = text.to_string();
    // One removal at a time, parsed again after each: a removal moves what
    // follows it, and there are at most a few of grove's groups per event.
    while let Some(range) =
        jsontext::parse(&text).and_then(|root| next_removal(&root, native, created))
    {
        text.replace_range(range, "");
    }
    text
}

/// The next span of grove's to delete from the document `root`.
fn next_removal(
    root: &Node,
    native: Native,
    created: Option<&Created>,
) -> Option<std::ops::Range<usize>> {
    let made_hooks = created.is_none_or(|c| c.hooks);
    for (i, member) in root.members().iter().enumerate() {
        if member.key != "hooks" {
            continue;
        }
        let table = &member.value;
        let events = table.members();
        if made_hooks && !events.is_empty() && events.iter().all(|e| only_grove(&e.value, native)) {
            return jsontext::removal(root, i);
        }
        for (j, event) in events.iter().enumerate() {
            let made_event = made_hooks || created.is_some_and(|c| c.events.contains(&event.key));
            if made_event && only_grove(&event.value, native) {
                return jsontext::removal(table, j);
            }
            for (k, group) in event.value.elements().iter().enumerate() {
                if is_grove_group(group, native) {
                    return jsontext::removal(&event.value, k);
                }
                let Some(entries) = group.get("hooks") else {
                    continue;
                };
                if let Some(l) = entries
                    .value
                    .elements()
                    .iter()
                    .position(|e| is_grove_entry(e, native))
                {
                    return jsontext::removal(&entries.value, l);
                }
            }
        }
    }
    None
}

/// A non-empty list of groups, every one of them grove's.
fn only_grove(list: &Node, native: Native) -> bool {
    let groups = list.elements();
    !groups.is_empty() && groups.iter().all(|g| is_grove_group(g, native))
}

/// A group whose hooks are all grove's (and there is one at least).
fn is_grove_group(group: &Node, native: Native) -> bool {
    group.get("hooks").is_some_and(|h| {
        let entries = h.value.elements();
        !entries.is_empty() && entries.iter().all(|e| is_grove_entry(e, native))
    })
}

fn is_grove_entry(entry: &Node, native: Native) -> bool {
    entry
        .get("command")
        .and_then(|c| c.value.as_str())
        .is_some_and(|c| is_grove_hook(c, native))
}

/// The events of `text` with at least one of grove's hooks for `native`.
pub fn grove_events(text: &str, native: Native) -> Vec<String> {
    let Some(root) = jsontext::parse(text) else {
        return Vec::new();
    };
    let Some(table) = root.get("hooks") else {
        return Vec::new();
    };
    table
        .value
        .members()
        .iter()
        .filter(|e| {
            e.value.elements().iter().any(|g| {
                g.get("hooks")
                    .is_some_and(|h| h.value.elements().iter().any(|e| is_grove_entry(e, native)))
            })
        })
        .map(|e| e.key.clone())
        .collect()
}

/// Whether `text` is an object with no member.
pub fn is_empty_object(text: &str) -> bool {
    jsontext::parse(text).is_some_and(|r| matches!(&r.kind, Kind::Object(m) if m.is_empty()))
}

/// How long an agent lets one capture hook run (seconds). Capture itself
/// gives up waiting well before.
pub const HOOK_TIMEOUT_SECS: u64 = 15;

/// The events the plugin passes on (`session.status` as
/// `session.status.<busy|idle|retry>`).
pub const OPENCODE_EVENTS: &[&str] = &[
    "session.created",
    "session.status",
    "message.updated",
    "tool.execute.after",
    "session.idle",
    "session.error",
    "permission.asked",
];

#[cfg(test)]
mod tests {
    use super::*;

    const GROVE: &str = "/old/grove capture claude --thread x";

    #[test]
    fn strip_takes_out_what_add_put_in_and_keeps_the_users_hooks() {
        let text = "{\"permissions\": {\"allow\": [\"Bash(ls)\"]},\n \"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n ], \"Notification\": []}}";
        let added = add(text, Native::Claude, GROVE, "f");
        assert_eq!(added.installed.len(), 9);
        assert!(added.skipped.is_empty());
        assert!(!added.created.hooks);
        assert_eq!(added.created.events.len(), 7, "{:?}", added.created);
        let value: serde_json::Value = serde_json::from_str(&added.text).unwrap();
        let stop = value["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop[0]["hooks"][0]["command"], "say done");
        assert_eq!(stop[1]["hooks"][0]["command"], GROVE);
        assert_eq!(value["hooks"]["PreToolUse"][0]["matcher"], "*");
        assert_eq!(value["hooks"]["Notification"][0]["hooks"][0]["timeout"], 15);
        assert_eq!(
            grove_events(&added.text, Native::Claude).len(),
            9,
            "{}",
            added.text
        );
        assert_eq!(
            strip(&added.text, Native::Claude, Some(&added.created)),
            text
        );
        assert!(grove_events(text, Native::Claude).is_empty());
    }

    #[test]
    fn without_a_record_what_holds_only_groves_hooks_goes() {
        // As an older grove wrote it: pretty, sorted, grove's groups last.
        let old = serde_json::json!({
            "hooks": {
                "Stop": [
                    {"hooks": [{"type": "command", "command": "say done"}]},
                    {"hooks": [{"type": "command", "command": GROVE, "timeout": 15}]}
                ],
                "SessionStart": [{"hooks": [{"type": "command", "command": GROVE}]}],
                "PreCompact": [],
                "PostToolUse": [{"matcher": "*", "hooks": [
                    {"type": "command", "command": "lint"},
                    {"type": "command", "command": GROVE}
                ]}]
            },
            "model": "opus"
        });
        let text = serde_json::to_string_pretty(&old).unwrap();
        let stripped = strip(&text, Native::Claude, None);
        let value: serde_json::Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
                    "PreCompact": [],
                    "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "lint"}]}]
                },
                "model": "opus"
            })
        );
        let only_grove =
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": \"grove capture claude\"}]}]}}";
        assert!(is_empty_object(&strip(only_grove, Native::Claude, None)));
    }

    #[test]
    fn a_container_the_user_had_stays_even_when_empty() {
        let text = "{\"hooks\": {}, \"x\": {\"hooks\": 1}}";
        let added = add(text, Native::Codex, "grove capture codex --thread t", "f");
        assert_eq!(added.created.events.len(), 7);
        assert_eq!(
            strip(&added.text, Native::Codex, Some(&added.created)),
            text
        );
        // Without the record, an empty `hooks` cannot be told from one grove
        // made: it goes.
        assert_eq!(
            strip(&added.text, Native::Codex, None),
            "{\"x\": {\"hooks\": 1}}"
        );
    }

    #[test]
    fn what_is_not_a_hook_table_is_named_and_left_alone() {
        let added = add("{\"hooks\": [1]}", Native::Claude, GROVE, "f");
        assert!(added.installed.is_empty());
        assert_eq!(added.skipped.len(), 9);
        assert!(
            added.skipped[0].1.contains("an array"),
            "{:?}",
            added.skipped
        );
        assert_eq!(added.text, "{\"hooks\": [1]}");

        let added = add("{\"hooks\": {\"Stop\": null}}", Native::Claude, GROVE, "f");
        assert_eq!(added.installed.len(), 8);
        assert_eq!(added.skipped.len(), 1);
        assert_eq!(added.skipped[0].0, "Stop");
        assert!(added.skipped[0].1.contains("null"));
    }
}
