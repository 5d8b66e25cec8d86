//! OpenCode's capture: a plugin of grove's that runs `grove capture
//! opencode` at OpenCode's events, named in the project's config.
//!
//! OpenCode 1.18 loads plugins from a config's `plugin` list (a module's
//! path) and from `.opencode/plugins/`. A `.opencode/` directory in a
//! worktree makes OpenCode install its plugin package (`@opencode-ai/plugin`,
//! from npm) into it at each start until it has one — a `node_modules/` per
//! task, and, offline, a start that waits over a minute — so grove writes
//! no `.opencode/`. Its plugin is one file of grove's data directory
//! (`<data dir>/opencode/grove-capture.js`, the same for every task), and
//! the worktree's `opencode.json` names it, grove's entry added to the
//! file's text like Claude Code's hooks ([`super::jsontext`]): uninstall
//! takes out exactly that entry (and the `plugin` list or the file when
//! install made them), so the file is then byte for byte what it was, with
//! whatever the user changed meanwhile. OpenCode reads both `opencode.json`
//! and `opencode.jsonc` and joins their plugins: when the repository tracks
//! one (a tracked file grove changed would carry this machine's paths into
//! the next commit), grove's entry goes into the other, made for it.
//! What grove adds is kept out of `git status` by the repository's
//! `info/exclude` (a `.gitignore` of grove's at a worktree's root could
//! stand in the way of one the repository adds later).
//!
//! The plugin never waits for grove: at each event it starts `grove capture
//! opencode` in the background (its own process group), with the hook's JSON
//! on stdin (`session_id`, `hook_event_name`, `cwd`, the event's
//! `timestamp`: the captures run in parallel, and an event's may end after a
//! later one's), and returns. The
//! session's records are read from OpenCode's database
//! ([`crate::import::opencode`]). The thread is the one grove launched
//! OpenCode for (`GROVE_THREAD`), else the worktree's claim, recorded here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::jsontext::{self, Child, Kind, Out, Style};
use super::report::{Installed, Removed};
use crate::agent::Native;
use crate::error::{Error, Result};

pub use super::hookfile::OPENCODE_EVENTS as EVENTS;

/// The plugin's file name.
const FILE_NAME: &str = "grove-capture.js";

/// The config files OpenCode reads at a project's root, in the order grove
/// chooses among them.
const CONFIGS: [&str; 2] = ["opencode.json", "opencode.jsonc"];

/// Where grove's plugin is: `<data dir>/opencode/grove-capture.js`.
pub fn plugin_path() -> Result<PathBuf> {
    Ok(crate::home::data_dir()?.join("opencode").join(FILE_NAME))
}

/// Whether a `plugin` entry of a config names grove's plugin (wherever
/// grove's data directory was).
fn is_grove_entry(entry: &str) -> bool {
    let path = Path::new(entry.strip_prefix("file://").unwrap_or(entry));
    path.file_name().is_some_and(|n| n == FILE_NAME)
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "opencode")
}

/// The plugin's source: it runs `grove` at each event of [`EVENTS`].
fn plugin_source(grove: &Path) -> String {
    let grove = serde_json::to_string(&grove.to_string_lossy()).unwrap_or_else(|_| "\"\"".into());
    format!(
        r#"// Written by grove: records OpenCode's sessions in grove tasks' threads.
// Named in a task's opencode.json by `grove capture install`; `grove capture
// uninstall` takes it out. It never waits for grove: each event starts
// `grove capture opencode` in the background and returns.
import {{ spawn }} from "node:child_process";

const GROVE = {grove};
const PASSED = new Set(["session.created", "message.updated", "session.idle", "session.error", "permission.asked"]);
// message.updated comes at every change of a reply: one capture in this
// time is enough (the capture that runs watches the session a while).
const QUIET_MS = 250;

export const GroveCapture = async ({{ directory }}) => {{
  const last = new Map();
  const send = (session, event, tool) => {{
    try {{
      const now = Date.now();
      if (event === "message.updated" && now - (last.get(session) ?? 0) < QUIET_MS) return;
      last.set(session, now);
      const child = spawn(GROVE, ["capture", "opencode"], {{
        cwd: directory,
        detached: true,
        stdio: ["pipe", "ignore", "ignore"],
        env: process.env,
      }});
      child.on("error", () => {{}});
      child.stdin.on("error", () => {{}});
      child.stdin.end(JSON.stringify({{
        session_id: session,
        hook_event_name: event,
        cwd: directory,
        timestamp: new Date(now).toISOString(),
        ...(tool || {{}}),
      }}));
      child.unref();
    }} catch {{}}
  }};
  return {{
    event: async ({{ event }}) => {{
      try {{
        const p = (event && event.properties) || {{}};
        let name = event && event.type;
        if (name === "session.status") name = "session.status." + ((p.status && p.status.type) || "unknown");
        else if (!PASSED.has(name)) return;
        const session = p.sessionID || (p.info && (p.info.sessionID || p.info.id));
        if (typeof session === "string" && session) send(session, name);
      }} catch {{}}
    }},
    "tool.execute.after": async (input) => {{
      try {{
        if (input && typeof input.sessionID === "string") send(input.sessionID, "tool.execute.after", {{
          tool_name: typeof input.tool === "string" ? input.tool : undefined,
          tool_use_id: typeof input.callID === "string" ? input.callID : undefined,
        }});
      }} catch {{}}
    }},
  }};
}};
"#
    )
}

/// Writes the plugin for `grove` unless it is there already; whether it
/// wrote.
fn write_plugin(grove: &Path) -> Result<bool> {
    let path = plugin_path()?;
    let text = plugin_source(grove);
    if crate::fsutil::read_opt(&path)?.as_deref() == Some(text.as_bytes()) {
        return Ok(false);
    }
    let data = crate::home::data_dir()?;
    if let Some(dir) = path.parent() {
        crate::fsutil::real_dir(&data, dir)?;
    }
    crate::fsutil::write_atomic(&path, text.as_bytes())?;
    Ok(true)
}

/// What install made, kept in grove's data directory so that uninstall
/// takes out exactly that.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    file: PathBuf,
    created_file: bool,
    /// The `plugin` list itself.
    created_list: bool,
    /// The `info/exclude` pattern install added.
    exclude: Option<String>,
}

/// Where the lock and record of a config file are.
struct Keys {
    lock: PathBuf,
    record: PathBuf,
}

impl Keys {
    fn of(file: &Path) -> Result<Keys> {
        let dir = file.parent().unwrap_or(Path::new("."));
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let canonical = dir.join(file.file_name().unwrap_or_default());
        let hash = xxhash_rust::xxh3::xxh3_64(canonical.as_os_str().as_encoded_bytes());
        let data = crate::home::data_dir()?;
        Ok(Keys {
            lock: data.join("locks").join(format!("hooks-{hash:016x}.lock")),
            record: data
                .join("hook-installs")
                .join(format!("opencode-{hash:016x}.json")),
        })
    }

    fn record(&self, file: &Path) -> Option<Record> {
        let bytes = crate::fsutil::read_opt(&self.record).ok()??;
        serde_json::from_slice::<Record>(&bytes)
            .ok()
            .filter(|r| r.file == file)
    }

    fn save(&self, record: &Record) -> Result<()> {
        super::save_record(&self.record, "the plugin installed", record)
    }

    fn forget(&self) -> Result<()> {
        super::forget_record(&self.record)
    }
}

/// A config file at the worktree's root, as grove found it.
enum Config {
    Missing,
    Text(String),
    /// Not one grove edits: why.
    Refused(String),
}

fn read_config(worktree: &Path, file: &Path) -> Result<Config> {
    if super::textedit::tracked(worktree, file) {
        return Ok(Config::Refused(format!(
            "{} is tracked by the repository",
            file.display()
        )));
    }
    if let Some(reason) = super::textedit::link_refusal(worktree, file) {
        return Ok(Config::Refused(reason));
    }
    let Some(bytes) = crate::fsutil::read_opt(file)? else {
        return Ok(Config::Missing);
    };
    let refused = |why: &str| {
        Ok(Config::Refused(format!(
            "{} is {why} (grove edits strict JSON only)",
            file.display()
        )))
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return refused("not UTF-8");
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.is_object() => Ok(Config::Text(text)),
        Ok(_) => refused("not a JSON object"),
        Err(_) => refused("not strict JSON (comments, trailing commas)"),
    }
}

/// The config file grove's entry goes into: the first of [`CONFIGS`] grove
/// may edit, else one that is not there yet (made for it); `Err` says why
/// none will do.
fn choose(worktree: &Path) -> Result<std::result::Result<(PathBuf, Config), String>> {
    let mut missing = None;
    let mut reasons = Vec::new();
    for name in CONFIGS {
        let file = worktree.join(name);
        match read_config(worktree, &file)? {
            Config::Text(t) => return Ok(Ok((file, Config::Text(t)))),
            Config::Missing => {
                if missing.is_none() {
                    missing = Some(file);
                }
            }
            Config::Refused(why) => reasons.push(why),
        }
    }
    Ok(match missing {
        Some(file) => Ok((file, Config::Missing)),
        None => Err(reasons.join("; ")),
    })
}

/// `text` with `entry` added to its `plugin` list (made when missing);
/// whether the list was made. `Err`: why grove leaves the file alone.
fn add_entry(text: &str, entry: &str) -> std::result::Result<(String, bool), String> {
    let root = jsontext::parse(text).ok_or("it could not be read as JSON")?;
    let style = Style::of(text, &root);
    let value = Out::Str(entry.to_string());
    let (at, what, created) = match root.get("plugin") {
        None => {
            let list = Out::Array(vec![value]);
            let (at, what) = jsontext::append(text, &root, &style, Child::Member("plugin", &list));
            (at, what, true)
        }
        Some(m) if matches!(m.value.kind, Kind::Array(_)) => {
            if m.value
                .elements()
                .iter()
                .any(|e| e.as_str().is_some_and(|s| s == entry))
            {
                return Ok((text.to_string(), false));
            }
            let (at, what) = jsontext::append(text, &m.value, &style, Child::Element(&value));
            (at, what, false)
        }
        Some(_) => return Err("its \"plugin\" is not a list".into()),
    };
    let mut out = text.to_string();
    out.insert_str(at, &what);
    Ok((out, created))
}

/// `text` without grove's `plugin` entries (but `keep`); the list goes too
/// when `created_list` and nothing else is left in it.
fn strip_entries(text: &str, created_list: bool, keep: Option<&str>) -> String {
    let mut text = text.to_string();
    loop {
        let Some(root) = jsontext::parse(&text) else {
            return text;
        };
        let Some(i) = root.members().iter().rposition(|m| m.key == "plugin") else {
            return text;
        };
        let list = &root.members()[i].value;
        let grove: Vec<usize> = list
            .elements()
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.as_str()
                    .is_some_and(|s| is_grove_entry(s) && Some(s) != keep)
            })
            .map(|(j, _)| j)
            .collect();
        let range = if created_list && grove.len() == list.elements().len() && !grove.is_empty() {
            jsontext::removal(&root, i)
        } else {
            match grove.first() {
                Some(&j) => jsontext::removal(list, j),
                None => return text,
            }
        };
        match range {
            Some(r) => text.replace_range(r, ""),
            None => return text,
        }
    }
}

/// Whether `text` holds an entry of grove's.
fn has_entry(text: &str) -> bool {
    jsontext::parse(text)
        .and_then(|root| {
            let list = &root.get("plugin")?.value;
            Some(
                list.elements()
                    .iter()
                    .any(|e| e.as_str().is_some_and(is_grove_entry)),
            )
        })
        .unwrap_or(false)
}

/// Installs grove's plugin for OpenCode sessions in `worktree`, capturing
/// into `thread` (see the module's documentation).
pub fn install(worktree: &Path, thread: &str, grove: &Path) -> Result<Installed> {
    let plugin = plugin_path()?;
    let (file, config) = match choose(worktree)? {
        Ok(found) => found,
        Err(why) => {
            let file = worktree.join(CONFIGS[0]);
            return Ok(Installed::new(Native::OpenCode, file).refused(
                Native::OpenCode,
                &format!(
                    "{why}; grove names its plugin in neither, so OpenCode's turns are captured when \
                     the agent grove launched exits and at `grove list`/`grove show`"
                ),
            ));
        }
    };
    let mut report = Installed::new(Native::OpenCode, file.clone());
    if write_plugin(grove)? {
        report.files.push(plugin.clone());
    }
    let keys = Keys::of(&file)?;
    let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
    let entry = plugin.to_string_lossy().into_owned();
    let before = match &config {
        Config::Text(t) => Some(t.as_str()),
        _ => None,
    };
    let text = before.unwrap_or("{\n}\n");
    // An older entry (grove's data directory was elsewhere) goes.
    let stripped = strip_entries(text, false, Some(&entry));
    let (added, created_list) = match add_entry(&stripped, &entry) {
        Ok(done) => done,
        Err(why) => {
            return Ok(report.refused(
                Native::OpenCode,
                &format!("{}: {why}; grove leaves it alone", file.display()),
            ));
        }
    };
    if added != text {
        if !super::textedit::write_text(&file, before, &added)? {
            return Err(Error::Refused(format!(
                "{} changed while grove edited it; nothing was written — run the command again",
                file.display()
            )));
        }
        report.files.push(file.clone());
    }
    let carried = keys.record(&file).unwrap_or_default();
    let exclude = exclude(worktree, &file)?;
    keys.save(&Record {
        file: file.clone(),
        created_file: before.is_none() || carried.created_file,
        created_list: created_list || carried.created_list,
        exclude: exclude.or(carried.exclude),
    })?;
    let main = crate::project::Project::discover(worktree)?.main_root;
    super::ledger::claim(&main, worktree, thread, Native::OpenCode.agent_id(), false)?;
    report.installed = EVENTS.iter().map(|e| e.to_string()).collect();
    Ok(report)
}

/// Keeps `file` out of `git status` through the repository's exclude file;
/// the pattern, when this added it.
fn exclude(worktree: &Path, file: &Path) -> Result<Option<String>> {
    let git = crate::git::cmd::Git::find()?;
    let exclude = crate::worktree::exclude::exclude_file(&git, worktree)?;
    let relative = file.strip_prefix(worktree).unwrap_or(file);
    let pattern = crate::worktree::exclude::pattern_for(relative)?;
    let listed = crate::fsutil::read_opt(&exclude)
        .ok()
        .flatten()
        .is_some_and(|b| String::from_utf8_lossy(&b).lines().any(|l| l == pattern));
    if listed {
        return Ok(None);
    }
    crate::worktree::exclude::add(&exclude, std::slice::from_ref(&pattern))?;
    Ok(Some(pattern))
}

/// Takes grove's plugin out of `worktree`'s config (and what install made
/// with it), and `thread`'s claim on the worktree.
pub fn uninstall(worktree: &Path, thread: &str) -> Result<Removed> {
    let mut report = Removed::new(Native::OpenCode, worktree.join(CONFIGS[0]));
    let main = crate::project::Project::discover(worktree)?.main_root;
    super::ledger::unclaim(&main, worktree, thread, Native::OpenCode.agent_id())?;
    for name in CONFIGS {
        let file = worktree.join(name);
        let keys = Keys::of(&file)?;
        let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
        let record = keys.record(&file);
        let text = match read_config(worktree, &file)? {
            Config::Text(t) => t,
            Config::Missing => {
                if let Some(r) = &record {
                    unexclude(worktree, r)?;
                    keys.forget()?;
                }
                continue;
            }
            Config::Refused(why) => {
                if record.is_some() {
                    report.problem = Some(why);
                }
                continue;
            }
        };
        let created_list = record.as_ref().is_none_or(|r| r.created_list);
        let stripped = strip_entries(&text, created_list, None);
        if stripped == text {
            continue;
        }
        let delete = record.as_ref().is_some_and(|r| r.created_file) && holds_nothing(&stripped);
        let done = if delete {
            super::textedit::remove_text(&file, &text)?
        } else {
            super::textedit::write_text(&file, Some(&text), &stripped)?
        };
        if !done {
            report.problem = Some(format!(
                "{} changed while grove edited it; run the command again",
                file.display()
            ));
            continue;
        }
        report.file = file.clone();
        report.files.push(file.clone());
        report.removed = EVENTS.iter().map(|e| e.to_string()).collect();
        if let Some(r) = &record {
            unexclude(worktree, r)?;
            keys.forget()?;
        }
    }
    Ok(report)
}

/// Whether a config holds nothing but what OpenCode adds to one on its own
/// (its `$schema`).
fn holds_nothing(text: &str) -> bool {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(text) else {
        return false;
    };
    map.iter().all(|(k, v)| {
        k == "$schema"
            && v.as_str()
                .is_some_and(|s| s.starts_with("https://opencode.ai/"))
    })
}

/// Takes out the exclude pattern install added for `record`'s file.
fn unexclude(worktree: &Path, record: &Record) -> Result<()> {
    let Some(pattern) = &record.exclude else {
        return Ok(());
    };
    let git = crate::git::cmd::Git::find()?;
    let exclude = crate::worktree::exclude::exclude_file(&git, worktree)?;
    crate::worktree::exclude::remove(&exclude, std::slice::from_ref(pattern))
}

/// Whether `worktree`'s config names grove's plugin.
pub fn installed(worktree: &Path) -> bool {
    CONFIGS.iter().any(|name| {
        crate::fsutil::read(&worktree.join(name))
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .is_some_and(|t| has_entry(&t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "/home/me/.local/share/grove/opencode/grove-capture.js";

    #[test]
    fn the_entry_comes_out_as_it_went_in() {
        for text in [
            "{\n  \"model\": \"a/b\"\n}\n",
            "{\"plugin\": [\"opencode-x\"], \"model\": \"a/b\"}",
            "{}",
        ] {
            let (added, created) = add_entry(text, ENTRY).unwrap();
            let v: serde_json::Value = serde_json::from_str(&added).unwrap();
            let list = v["plugin"].as_array().unwrap();
            assert_eq!(list.last().unwrap(), ENTRY, "{added}");
            assert!(has_entry(&added));
            assert_eq!(strip_entries(&added, created, None), text, "{added}");
            assert_eq!(strip_entries(&added, created, Some(ENTRY)), added);
        }
        assert!(add_entry("{\"plugin\": 3}", ENTRY).is_err());
        // A list the user had stays, even empty.
        let (added, created) = add_entry("{\"plugin\": []}", ENTRY).unwrap();
        assert!(!created);
        assert_eq!(strip_entries(&added, created, None), "{\"plugin\": []}");
    }

    #[test]
    fn only_grove_s_plugin_is_grove_s() {
        assert!(is_grove_entry(ENTRY));
        assert!(is_grove_entry(&format!("file://{ENTRY}")));
        assert!(!is_grove_entry("/x/plugins/grove-capture.js"));
        assert!(!is_grove_entry("opencode-grove"));
    }
}
