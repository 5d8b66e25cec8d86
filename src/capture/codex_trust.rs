//! Codex's trust in grove's capture hooks, recorded in the user's Codex
//! config when the user asks for it (`grove capture install --trust-agent`).
//!
//! Codex 0.169 runs a project's hook only once the user trusted that
//! hook's exact definition: `[hooks.state."<file>:<event>:<group>:<handler>"]
//! trusted_hash = "sha256:…"` in `$CODEX_HOME/config.toml`, where the hash is
//! SHA-256 of a normalized identity — `{"event_name", "matcher"?, "hooks":
//! [{"type": "command", "command", "timeout", "async"}]}` as compact JSON
//! with sorted keys (what Codex's `hooks/list` calls `currentHash`). A hook
//! whose state is missing or names another hash is skipped without a word
//! (the TUI asks "Hooks need review").
//!
//! grove trusts only its own entries, as it wrote them: a handler that is
//! exactly grove's command with grove's timeout, in a group with no matcher
//! and nothing else. The config is edited as text: one block appended, which
//! uninstall takes out again, so the file comes back byte for byte; an
//! entry Codex already has for one of those keys is left alone (and said
//! so), and a config that would not parse afterwards is not written.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// One hook of grove's, as Codex keys and hashes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `<hooks file>:<event_label>:<group>:<handler>`.
    pub key: String,
    /// `sha256:<hex>`.
    pub hash: String,
}

/// Codex's label of a hook event in keys and hashes: `PreToolUse` is
/// `pre_tool_use`.
pub fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The hash Codex trusts a command hook by (its `currentHash`).
pub fn hook_hash(event: &str, matcher: Option<&str>, command: &str, timeout: u64) -> String {
    use sha2::Digest;
    let mut identity = serde_json::Map::new();
    identity.insert("event_name".into(), Value::from(event_label(event)));
    if let Some(m) = matcher {
        identity.insert("matcher".into(), Value::from(m));
    }
    let handler = serde_json::json!({
        "type": "command",
        "command": command,
        "timeout": timeout.max(1),
        "async": false,
    });
    identity.insert("hooks".into(), Value::Array(vec![handler]));
    let text = canonical(&Value::Object(identity)).to_string();
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `value` with every object's keys sorted (Codex hashes it so).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// grove's entries in a hooks file's parsed `hooks` table: each handler
/// that is exactly grove's `command` in a group of its own shape.
fn entries_of(hooks: &Value, file: &Path, command: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let Some(events) = hooks.as_object() else {
        return out;
    };
    for event in super::hookfile::events(crate::agent::Native::Codex) {
        let Some(groups) = events.get(*event).and_then(Value::as_array) else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let Some(group) = group.as_object() else {
                continue;
            };
            if group.keys().any(|k| k != "hooks") {
                continue;
            }
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                let timeout = super::hookfile::timeout(crate::agent::Native::Codex, event);
                if is_groves(handler, command, timeout) {
                    out.push(Entry {
                        key: format!("{}:{}:{g}:{h}", file.display(), event_label(event)),
                        hash: hook_hash(event, None, command, timeout),
                    });
                }
            }
        }
    }
    out
}

/// A handler exactly as grove writes it.
fn is_groves(handler: &Value, command: &str, timeout: u64) -> bool {
    let Some(h) = handler.as_object() else {
        return false;
    };
    h.len() == 3
        && h.get("type").and_then(Value::as_str) == Some("command")
        && h.get("command").and_then(Value::as_str) == Some(command)
        && h.get("timeout").and_then(Value::as_u64) == Some(timeout)
}

/// grove's entries in the text of a `hooks.json` (`file`) or a
/// `config.toml` with `[hooks]` tables.
pub fn entries(text: &str, file: &Path, command: &str) -> Vec<Entry> {
    let hooks = if file.extension().is_some_and(|e| e == "toml") {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| t.get("hooks").cloned())
            .and_then(|h| serde_json::to_value(h).ok())
    } else {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.get("hooks").cloned())
    };
    hooks.map_or_else(Vec::new, |h| entries_of(&h, file, command))
}

/// What [`trust`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trusted {
    /// The Codex config.
    pub file: PathBuf,
    /// The keys trusted now, or already trusted for grove's hook.
    pub trusted: Vec<String>,
    /// The keys left alone, with why.
    pub refused: Vec<Refused>,
    /// The config was written.
    pub written: bool,
}

/// A hook of grove's that [`trust`] left untrusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// Its key.
    pub key: String,
    /// Why, for a person.
    pub reason: String,
}

/// What grove appended to a Codex config for one hooks file, kept in
/// grove's data directory so that uninstall takes out exactly that.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    config: PathBuf,
    hooks_file: PathBuf,
    created_file: bool,
    /// The text appended (with the blank line before it).
    appended: String,
    entries: Vec<Entry>,
}

/// Where the lock and record of grove's trust for `hooks_file` in `config`
/// are.
struct Keys {
    lock: PathBuf,
    record: PathBuf,
}

impl Keys {
    fn of(config: &Path, hooks_file: &Path) -> Result<Keys> {
        let mut id = config.as_os_str().as_encoded_bytes().to_vec();
        id.push(0);
        id.extend_from_slice(hooks_file.as_os_str().as_encoded_bytes());
        let hash = xxhash_rust::xxh3::xxh3_64(&id);
        let config_hash = xxhash_rust::xxh3::xxh3_64(config.as_os_str().as_encoded_bytes());
        let data = crate::home::data_dir()?;
        Ok(Keys {
            // One lock per config: two repositories' installs edit it too.
            lock: data
                .join("locks")
                .join(format!("codex-config-{config_hash:016x}.lock")),
            record: data
                .join("hook-installs")
                .join(format!("codex-trust-{hash:016x}.json")),
        })
    }

    fn record(&self, config: &Path, hooks_file: &Path) -> Option<Record> {
        let bytes = crate::fsutil::read_opt(&self.record).ok()??;
        serde_json::from_slice::<Record>(&bytes)
            .ok()
            .filter(|r| r.config == config && r.hooks_file == hooks_file)
    }

    fn save(&self, record: &Record) -> Result<()> {
        super::save_record(&self.record, "the Codex trust", record)
    }

    fn forget(&self) -> Result<()> {
        super::forget_record(&self.record)
    }
}

/// The user's Codex config: `$CODEX_HOME/config.toml` (`~/.codex/`).
pub fn codex_config() -> Option<PathBuf> {
    super::transcripts::codex_home().map(|h| h.join("config.toml"))
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The block that trusts `entries`, for `hooks_file`.
fn block(hooks_file: &Path, entries: &[Entry]) -> String {
    let mut out = format!(
        "# Added by grove: Codex runs grove's capture hooks in {} \
         (`grove capture uninstall` takes this out).\n",
        hooks_file.display().to_string().replace('\n', " ")
    );
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&table_text(e));
    }
    out
}

/// The state Codex's config `table` has for `key`: its trusted hash and
/// whether it is there at all.
fn state(table: &toml::Table, key: &str) -> Option<Option<String>> {
    let entry = table.get("hooks")?.get("state")?.get(key)?;
    Some(
        entry
            .get("trusted_hash")
            .and_then(|h| h.as_str())
            .map(str::to_string)
            .filter(|_| entry.get("enabled").and_then(|e| e.as_bool()) != Some(false)),
    )
}

/// The config's text: `None` when missing; an error saying why grove
/// leaves it alone.
fn read_config(config: &Path) -> std::result::Result<Option<String>, String> {
    let bytes = match crate::fsutil::read_opt(config) {
        Ok(b) => b,
        Err(Error::Symlink { .. }) => {
            return Err(format!(
                "{} is a symbolic link; grove does not write through links",
                config.display()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", config.display()))?;
    toml::from_str::<toml::Table>(&text)
        .map_err(|e| format!("{} is not valid TOML ({e})", config.display()))?;
    Ok(Some(text))
}

/// Records in the Codex `config` that grove's `entries` (in `hooks_file`)
/// are trusted; see the module's documentation.
pub fn trust(config: &Path, hooks_file: &Path, entries: &[Entry]) -> Result<Trusted> {
    let mut report = Trusted {
        file: config.to_path_buf(),
        ..Trusted::default()
    };
    let refuse_all = |mut report: Trusted, why: &str| {
        report.refused = entries
            .iter()
            .map(|e| Refused {
                key: e.key.clone(),
                reason: why.to_string(),
            })
            .collect();
        report
    };
    if let Some(dir) = config.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    let keys = Keys::of(config, hooks_file)?;
    let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
    let current = match read_config(config) {
        Ok(t) => t,
        Err(why) => return Ok(refuse_all(report, &why)),
    };
    let record = keys.record(config, hooks_file);
    let text = current.clone().unwrap_or_default();
    // grove's earlier block goes first (what it trusted is decided again);
    // entries of it Codex rewrote stay recorded, to be taken out later.
    let (base, kept) = match &record {
        Some(r) => match Some(&r.appended)
            .filter(|a| !a.is_empty())
            .and_then(|a| text.rfind(a.as_str()))
        {
            Some(at) => {
                let mut base = text.clone();
                base.replace_range(at..at + r.appended.len(), "");
                (base, Vec::new())
            }
            None => (text.clone(), r.entries.clone()),
        },
        None => (text.clone(), Vec::new()),
    };
    let table = toml::from_str::<toml::Table>(&base).unwrap_or_default();
    let mut added = Vec::new();
    for e in entries {
        match state(&table, &e.key) {
            None => added.push(e.clone()),
            Some(Some(h)) if h == e.hash => report.trusted.push(e.key.clone()),
            Some(_) => report.refused.push(Refused {
                key: e.key.clone(),
                reason: "Codex's config already has a state for this hook (another hash, or \
                         disabled); grove leaves it: trust the hook in Codex's /hooks screen"
                    .into(),
            }),
        }
    }
    let appended = if added.is_empty() {
        String::new()
    } else {
        let sep = match base.as_str() {
            "" => "",
            b if b.ends_with("\n\n") => "",
            b if b.ends_with('\n') => "\n",
            _ => "\n\n",
        };
        format!("{sep}{}", block(hooks_file, &added))
    };
    let new_text = format!("{base}{appended}");
    if let Err(why) = check(&new_text, &added) {
        return Ok(refuse_all(report, &why));
    }
    report.trusted.extend(added.iter().map(|e| e.key.clone()));
    if new_text != text {
        let written = super::textedit::write_text(config, current.as_deref(), &new_text)?;
        if !written {
            return Err(Error::Refused(format!(
                "{} changed while grove edited it; nothing was written — run the command again",
                config.display()
            )));
        }
        report.written = true;
    }
    let mut recorded = kept;
    recorded.extend(added);
    if recorded.is_empty() {
        keys.forget()?;
    } else {
        keys.save(&Record {
            config: config.to_path_buf(),
            hooks_file: hooks_file.to_path_buf(),
            created_file: current.is_none() || record.is_some_and(|r| r.created_file),
            appended,
            entries: recorded,
        })?;
    }
    Ok(report)
}

/// Whether `text` parses and trusts each of `added` as intended.
fn check(text: &str, added: &[Entry]) -> std::result::Result<(), String> {
    let table = toml::from_str::<toml::Table>(text).map_err(|e| {
        format!(
            "the Codex config would not be valid TOML with grove's entries ({e}); grove leaves it"
        )
    })?;
    for e in added {
        if state(&table, &e.key) != Some(Some(e.hash.clone())) {
            return Err(format!(
                "the Codex config's [hooks] would not hold grove's trust for {} as written; \
                 grove leaves it",
                e.key
            ));
        }
    }
    Ok(())
}

/// What [`untrust`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Untrusted {
    /// The Codex config.
    pub file: PathBuf,
    /// The keys whose trust grove took out.
    pub removed: Vec<String>,
    /// What grove could not take out, and why.
    pub problem: Option<String>,
}

/// Takes out of the Codex `config` what [`trust`] added for `hooks_file`:
/// the file is then as it was before, byte for byte, with what Codex or
/// the user changed meanwhile.
pub fn untrust(config: &Path, hooks_file: &Path) -> Result<Untrusted> {
    let mut report = Untrusted {
        file: config.to_path_buf(),
        ..Untrusted::default()
    };
    let keys = Keys::of(config, hooks_file)?;
    let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
    let Some(record) = keys.record(config, hooks_file) else {
        return Ok(report);
    };
    let text = match read_config(config) {
        Ok(Some(t)) => t,
        Ok(None) => return keys.forget().map(|()| report),
        Err(why) => {
            report.problem = Some(why);
            return Ok(report);
        }
    };
    let (stripped, left) = strip(&text, hooks_file, &record);
    report.removed = record
        .entries
        .iter()
        .filter(|e| !left.contains(&e.key))
        .map(|e| e.key.clone())
        .collect();
    if !left.is_empty() {
        report.problem = Some(format!(
            "{} changed grove's trust entries for {}; grove left them: {}",
            config.display(),
            left.join(", "),
            "remove them by hand if you want them gone"
        ));
    }
    if stripped != text {
        let done = if stripped.is_empty() && record.created_file {
            super::textedit::remove_text(config, &text)?
        } else {
            super::textedit::write_text(config, Some(&text), &stripped)?
        };
        if !done {
            return Err(Error::Refused(format!(
                "{} changed while grove edited it; nothing was written — run the command again",
                config.display()
            )));
        }
    }
    keys.forget()?;
    Ok(report)
}

/// One of grove's tables, as it writes it.
fn table_text(e: &Entry) -> String {
    format!(
        "[hooks.state.{}]\ntrusted_hash = {}\n",
        toml_string(&e.key),
        toml_string(&e.hash)
    )
}

/// `text` without grove's block for `record`: the appended text when it is
/// still there as written, and each other table of grove's found as
/// written. Returns the keys whose table was not found.
fn strip(text: &str, hooks_file: &Path, record: &Record) -> (String, Vec<String>) {
    let mut out = text.to_string();
    let whole = !record.appended.is_empty()
        && match out.rfind(&record.appended) {
            Some(at) => {
                out.replace_range(at..at + record.appended.len(), "");
                true
            }
            None => false,
        };
    if !whole {
        let header = block(hooks_file, &[]);
        if let Some(at) = out.find(&header) {
            out.replace_range(at..at + header.len(), "");
        }
    }
    let mut left = Vec::new();
    for e in &record.entries {
        let table = table_text(e);
        if whole && record.appended.contains(&table) {
            continue;
        }
        match out.find(&table) {
            Some(at) => {
                // With the blank line grove put before it.
                let start = if out[..at].ends_with("\n\n") {
                    at - 1
                } else {
                    at
                };
                out.replace_range(start..at + table.len(), "");
            }
            None => left.push(e.key.clone()),
        }
    }
    (out, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_labels_are_codexs() {
        assert_eq!(event_label("PreToolUse"), "pre_tool_use");
        assert_eq!(event_label("Stop"), "stop");
        assert_eq!(event_label("SessionEnd"), "session_end");
    }

    #[test]
    fn the_hash_is_the_one_codex_0_169_reports() {
        // `codex app-server` `hooks/list` `currentHash` for these hooks.
        assert_eq!(
            hook_hash("PreToolUse", Some("*"), "/usr/bin/grove capture codex", 15),
            "sha256:48dcf8ad527646e2f7e946a6a86ebbc4fb44897d38effb78243d32b1a882c75f"
        );
        assert_eq!(
            hook_hash("SessionStart", None, "/usr/bin/grove capture codex", 15),
            "sha256:31ae962301856c9f8afa22beeac0b46ca5926944a0dfe76b6ad4f971384b9420"
        );
        assert_eq!(
            hook_hash("Stop", None, "/usr/bin/grove capture codex", 15),
            "sha256:c2fdf2a7d3309d670bc797ac243d4f6364d41ecc997e393c29a32bbd706f9f49"
        );
    }

    #[test]
    fn only_groves_handlers_as_grove_writes_them_are_entries() {
        let cmd = "/g capture codex";
        let text = serde_json::json!({"hooks": {
            "Stop": [
                {"hooks": [{"type": "command", "command": "say"}]},
                {"hooks": [{"type": "command", "command": cmd, "timeout": 15}]}
            ],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd, "timeout": 15}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": cmd, "timeout": 15, "async": true}]}],
            "Elsewhere": [{"hooks": [{"type": "command", "command": cmd, "timeout": 15}]}]
        }})
        .to_string();
        let found = entries(&text, Path::new("/r/.codex/hooks.json"), cmd);
        assert_eq!(
            found,
            vec![Entry {
                key: "/r/.codex/hooks.json:stop:1:0".into(),
                hash: hook_hash("Stop", None, cmd, 15),
            }]
        );
        let toml = format!(
            "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"{cmd}\"\ntimeout = 15\n"
        );
        assert_eq!(
            entries(&toml, Path::new("/r/.codex/config.toml"), cmd)[0].key,
            "/r/.codex/config.toml:stop:0:0"
        );
    }

    #[test]
    fn keys_are_quoted_for_toml() {
        assert_eq!(toml_string("a\"b\\c\u{1}é"), "\"a\\\"b\\\\c\\u0001é\"");
    }
}
