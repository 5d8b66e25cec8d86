//! Installing the agents' own project-scoped hooks in a worktree, so each
//! turn runs `grove capture claude|codex`.
//!
//! - Claude Code: `.claude/settings.local.json` (the per-user, never
//!   committed settings file), merged into what is there: grove adds one
//!   hook group per event after the user's, editing the text
//!   ([`super::hookfile`]), so the rest of the file keeps its bytes.
//! - Codex: `.codex/hooks.json` of the repository's **main** worktree, the
//!   same way, because Codex 0.169 reads a project's hooks there only (for a
//!   session in a linked worktree too, once that worktree has a `.codex/`
//!   directory, which grove makes, empty). One command for every task of the
//!   repository, naming no thread — the hook finds the thread from the
//!   session ([`super::ledger`]) or the worktree it runs in (the worktree's
//!   claim, recorded here) — so the user trusts it in Codex once per
//!   repository ([`super::codex_trust`]). When the repository tracks that
//!   file, grove writes its `[hooks]` tables into a `.codex/config.toml` of
//!   its own there if there is none, else nothing (capture then happens when
//!   the agent grove launched exits, and at `list` and `show`): a tracked
//!   file grove changed would carry this machine's path of grove into the
//!   repository's next commit.
//!
//! Uninstall takes out exactly what install added: the file is then what it
//! was before, byte for byte, with whatever the user changed meanwhile. What
//! install created around grove's groups (the file, its directory, an event
//! list, the `hooks` object) is recorded in grove's data directory, so that
//! uninstall takes it out too, and nothing the user had.
//!
//! A file the repository tracks, a symbolic link, a file that is not a JSON
//! object: never changed, and the report says so. Edits are made under a
//! lock, and a file that changed since grove read it is read again rather
//! than overwritten. What grove adds is kept out of `git status` by a
//! `.gitignore` in `.claude/` or `.codex/` that names only grove's file and
//! itself (written only when there is no `.gitignore` there; otherwise the
//! path goes into the repository's `info/exclude`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::hookfile::{self, Created};
use super::textedit::{link_refusal, remove_text, tracked, write_text};
use crate::agent::Native;
use crate::error::{Error, Result};

pub use super::hookfile::HOOK_TIMEOUT_SECS;
pub use super::report::{Installed, Removed, Skipped};

/// The command a hook runs: grove itself by its absolute path, quoted for
/// the shell the agent runs hooks with. Claude Code's and Gemini CLI's name
/// the thread (their settings file is the worktree's own); Codex's names
/// none: it is one command for every task of the repository, which the user
/// trusts in Codex once, and the hook finds the thread from the session and
/// its worktree. OpenCode's plugin runs `grove capture opencode` itself
/// (without a shell), one plugin for every task.
pub fn hook_command(grove: &Path, native: Native, thread: &str) -> String {
    let grove = shell_quote(&grove.to_string_lossy());
    match native {
        Native::Claude | Native::Gemini => format!(
            "{grove} capture {} --thread {}",
            native.format(),
            shell_quote(thread)
        ),
        Native::Codex | Native::OpenCode => format!("{grove} capture {}", native.format()),
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Installs `native`'s hooks for `worktree`, capturing into `thread`: Claude
/// Code's in the worktree, Codex's in the repository's main worktree (see
/// the module's documentation). A file grove will not change (tracked, a
/// link, not a JSON object) is not an error: the report says which events
/// got no hook, and why.
pub fn install(native: Native, worktree: &Path, thread: &str, grove: &Path) -> Result<Installed> {
    let command = hook_command(grove, native, thread);
    match native {
        Native::Claude | Native::Gemini => install_files(native, worktree, &command),
        Native::Codex => install_codex(worktree, thread, &command),
        Native::OpenCode => super::opencode::install(worktree, thread, grove),
    }
}

/// The main worktree of `worktree`'s repository: where Codex reads hooks.
fn main_root(worktree: &Path) -> Result<PathBuf> {
    Ok(crate::project::Project::discover(worktree)?.main_root)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
}

/// Codex: the repository's hooks in its main worktree, the worktree's
/// `.codex/` (without which Codex looks for no project hooks from there),
/// and the worktree's claim: its new sessions go into `thread`.
fn install_codex(worktree: &Path, thread: &str, command: &str) -> Result<Installed> {
    let main = main_root(worktree)?;
    let mut report = install_files(Native::Codex, &main, command)?;
    if report.installed.is_empty() {
        return Ok(report);
    }
    let created = match codex_dir(worktree, &main) {
        Ok(created) => created,
        Err(e) => {
            let reason = format!(
                "{e}; Codex looks for the repository's hooks from a worktree only when it has a \
                 .codex directory"
            );
            return Ok(report.refused(Native::Codex, &reason));
        }
    };
    if created {
        report.files.push(worktree.join(".codex"));
    }
    super::ledger::claim(&main, worktree, thread, Native::Codex.agent_id(), created)?;
    if !same_dir(worktree, &main) {
        // An older grove put them in the worktree, where Codex never ran
        // them.
        let legacy = uninstall_files(Native::Codex, worktree)?;
        report.files.extend(legacy.files);
    }
    Ok(report)
}

/// Makes `worktree`'s `.codex/` directory when it has none (not for the
/// main worktree, whose `.codex/` holds the hooks); whether grove made it.
fn codex_dir(worktree: &Path, main: &Path) -> Result<bool> {
    if same_dir(worktree, main) {
        return Ok(false);
    }
    let dir = worktree.join(native_dir(Native::Codex));
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(false),
        Ok(_) => Err(Error::Other(format!(
            "{} is not a directory; grove leaves it alone",
            dir.display()
        ))),
        Err(_) => {
            crate::fsutil::real_dir(worktree, &dir)?;
            Ok(true)
        }
    }
}

/// Installs `native`'s hooks running `command` in the agent's hooks file
/// under `root`.
fn install_files(native: Native, root: &Path, command: &str) -> Result<Installed> {
    let dir = root.join(native_dir(native));
    let json_file = dir.join(json_name(native));
    if !tracked(root, &json_file) {
        return install_json(native, root, &json_file, command);
    }
    let toml = dir.join("config.toml");
    if native == Native::Codex {
        return install_toml(native, root, &json_file, &toml, command);
    }
    Ok(Installed::new(native, json_file.clone()).refused(
        native,
        &format!(
            "{} is tracked by the repository; grove does not change it, so the turns are captured \
             when the agent grove launched exits and at `grove list`/`grove show`",
            json_file.display()
        ),
    ))
}

/// Records in the user's Codex config that grove's hooks in `report`'s
/// file are trusted (`--trust-agent`); `grove` is the grove they run.
pub fn trust_codex(report: &Installed, grove: &Path) -> Result<super::codex_trust::Trusted> {
    let config = super::codex_trust::codex_config()
        .ok_or_else(|| Error::Other("no home directory to find Codex's config in".into()))?;
    let text = crate::fsutil::read_opt(&report.file)?
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let command = hook_command(grove, Native::Codex, "");
    let entries = super::codex_trust::entries(&text, &report.file, &command);
    super::codex_trust::trust(&config, &report.file, &entries)
}

/// Codex, whose `hooks.json` the repository tracks: `[hooks]` tables in a
/// `config.toml` of grove's own, when there is none of the repository's.
fn install_toml(
    native: Native,
    worktree: &Path,
    json_file: &Path,
    toml: &Path,
    command: &str,
) -> Result<Installed> {
    let mut report = Installed::new(native, toml.to_path_buf());
    if let Err(e) = crate::fsutil::check_no_links_below(worktree, toml) {
        return Ok(report.refused(native, &e.to_string()));
    }
    let text = toml_hooks(native, command);
    let old = crate::fsutil::read_opt(toml)?;
    if old
        .as_ref()
        .is_some_and(|o| !o.starts_with(TOML_MARK.as_bytes()))
    {
        return Ok(report.refused(
            native,
            &format!(
                "{} and {} are the repository's own; grove changes neither, so Codex's turns are \
                 captured when the agent grove launched exits and at `grove list`/`grove show`",
                json_file.display(),
                toml.display()
            ),
        ));
    }
    report.installed = hookfile::events(native)
        .iter()
        .map(|e| e.to_string())
        .collect();
    if old.as_deref() != Some(text.as_bytes()) {
        let dir = parent(toml);
        crate::fsutil::real_dir(worktree, dir)?;
        crate::fsutil::write_atomic(toml, text.as_bytes())?;
        report.files.push(toml.to_path_buf());
    }
    let hidden = hide(worktree, parent(toml), toml)?;
    report.files.extend(hidden.written);
    Ok(report)
}

/// What a text grove makes a new file from: an empty object, laid out the
/// way grove writes one.
const BLANK: &str = "{\n}\n";

/// How many times grove reads the file again when it changed while grove
/// edited it.
const ATTEMPTS: usize = 5;

/// Claude Code's settings or Codex's `hooks.json`: grove's groups added to
/// what is there, as text.
fn install_json(native: Native, worktree: &Path, file: &Path, command: &str) -> Result<Installed> {
    if let Some(reason) = link_refusal(worktree, file) {
        return Ok(Installed::new(native, file.to_path_buf()).refused(native, &reason));
    }
    let dir = parent(file);
    let dir_existed = std::fs::symlink_metadata(dir).is_ok();
    crate::fsutil::real_dir(worktree, dir)?;
    let keys = Keys::of(file)?;
    let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
    for _ in 0..ATTEMPTS {
        let edit = Edit {
            native,
            worktree,
            file,
            keys: &keys,
        };
        if let Some(report) = edit.install(command, dir_existed)? {
            return Ok(report);
        }
    }
    Err(changing(file))
}

/// One read-modify-write of a hooks file, under its lock.
struct Edit<'a> {
    native: Native,
    worktree: &'a Path,
    file: &'a Path,
    keys: &'a Keys,
}

impl Edit<'_> {
    /// Puts grove's hooks in, running `command`; `None` when the file
    /// changed while grove worked on it.
    fn install(&self, command: &str, dir_existed: bool) -> Result<Option<Installed>> {
        let (native, file) = (self.native, self.file);
        let mut report = Installed::new(native, file.to_path_buf());
        let current = match read_settings(file)? {
            Settings::Refused(reason) => return Ok(Some(report.refused(native, &reason))),
            other => other,
        };
        let text = current.text();
        let old = self.keys.record()?;
        let stripped = hookfile::strip(text, native, old.as_ref().map(|r| &r.created));
        // A record speaks for the grove hooks it describes; with none of
        // them in the file any more, it describes nothing.
        let old = old.filter(|_| stripped != text);
        let added = hookfile::add(&stripped, native, command, &file.display().to_string());
        report.installed.clone_from(&added.installed);
        report.skipped = added
            .skipped
            .iter()
            .map(|(event, reason)| Skipped {
                event: event.clone(),
                reason: reason.clone(),
            })
            .collect();
        if added.installed.is_empty() {
            if !dir_existed {
                let _ = std::fs::remove_dir(parent(file));
            }
            return Ok(Some(report));
        }
        if added.text != text || current.is_missing() {
            if !write_text(file, current.existing(), &added.text)? {
                return Ok(None);
            }
            report.files.push(file.to_path_buf());
        }
        let hidden = hide(self.worktree, parent(file), file)?;
        report.files.extend(hidden.written);
        // grove's hooks with no record: an older grove's install, which
        // made the file when it holds nothing else.
        let legacy = old.is_none() && stripped != text && hookfile::is_empty_object(&stripped);
        let carried = old.unwrap_or_default();
        self.keys.save(&Record {
            file: self.keys.file.clone(),
            created_file: current.is_missing() || carried.created_file || legacy,
            created_dir: !dir_existed || carried.created_dir,
            created: added.created,
            ignore_line: hidden.ignore_line || carried.ignore_line,
            exclude: hidden.exclude.or(carried.exclude),
        })?;
        Ok(Some(report))
    }

    /// Takes grove's hooks out, and what install created with them;
    /// `false` when the file changed while grove worked on it.
    fn uninstall(&self, record: Option<&Record>, report: &mut Removed) -> Result<bool> {
        let (native, file) = (self.native, self.file);
        let text = match read_settings(file)? {
            Settings::Refused(reason) => {
                report.problem = Some(reason);
                return Ok(true);
            }
            // Gone already (or never there): what install created around
            // it goes all the same.
            Settings::Missing => return self.forget(record, true).map(|()| true),
            Settings::Text(t) => t,
        };
        let stripped = hookfile::strip(&text, native, record.map(|r| &r.created));
        if stripped == text {
            return self.forget(record, false).map(|()| true);
        }
        let delete = hookfile::is_empty_object(&stripped) && record.is_none_or(|r| r.created_file);
        let done = if delete {
            remove_text(file, &text)?
        } else {
            write_text(file, Some(&text), &stripped)?
        };
        if !done {
            return Ok(false);
        }
        report.removed = removed_events(native, &text, &stripped);
        report.files.push(file.to_path_buf());
        report
            .files
            .extend(unhide(self.worktree, parent(file), file, delete, record)?);
        self.forget(record, delete)?;
        Ok(true)
    }

    /// Drops the record; when the file is `gone`, also what install made
    /// around it (its `.gitignore` line, its directory when empty).
    fn forget(&self, record: Option<&Record>, gone: bool) -> Result<()> {
        let Some(record) = record else {
            return Ok(());
        };
        let dir = parent(self.file);
        unhide(self.worktree, dir, self.file, gone, Some(record))?;
        if gone && record.created_dir {
            // Only when empty: whatever else is there now is someone's.
            let _ = std::fs::remove_dir(dir);
        }
        self.keys.forget()
    }
}

fn changing(file: &Path) -> Error {
    Error::Refused(format!(
        "{} kept changing while grove edited it; nothing was written — run the command again",
        file.display()
    ))
}

/// Removes grove's hooks for `native` and `thread` from `worktree`: the
/// files hold what they held before the install, and what install created
/// (the file, its directory, a `.gitignore` line, an `info/exclude` entry)
/// goes when nothing else is in it. Codex's hooks serve every task of the
/// repository: they go (with the trust grove recorded for them) once no
/// other task's worktree is claimed; until then only `thread`'s claim goes.
pub fn uninstall(native: Native, worktree: &Path, thread: &str) -> Result<Removed> {
    match native {
        Native::Claude | Native::Gemini => uninstall_files(native, worktree),
        Native::Codex => uninstall_codex(worktree, thread),
        Native::OpenCode => super::opencode::uninstall(worktree, thread),
    }
}

fn uninstall_codex(worktree: &Path, thread: &str) -> Result<Removed> {
    let main = main_root(worktree)?;
    let agent = Native::Codex.agent_id();
    let mut report = Removed::new(
        Native::Codex,
        main.join(native_dir(Native::Codex))
            .join(json_name(Native::Codex)),
    );
    if let Some(claim) = super::ledger::unclaim(&main, worktree, thread, agent)?
        && claim.created_dir
    {
        let dir = worktree.join(native_dir(Native::Codex));
        // Only when empty: whatever is there now is someone's.
        if std::fs::remove_dir(&dir).is_ok() {
            report.files.push(dir);
        }
    }
    if !same_dir(worktree, &main) {
        // An older grove's, in the worktree itself.
        let legacy = uninstall_files(Native::Codex, worktree)?;
        if !legacy.removed.is_empty() {
            report.file = legacy.file.clone();
        }
        report.merge(legacy);
    }
    report.kept_for = live_claims(&main);
    if !report.kept_for.is_empty() {
        return Ok(report);
    }
    let files = uninstall_files(Native::Codex, &main)?;
    if !files.removed.is_empty() || files.problem.is_some() {
        report.file = files.file.clone();
    }
    report.merge(files);
    if let Some(config) = super::codex_trust::codex_config() {
        let dir = main.join(native_dir(Native::Codex));
        for file in [dir.join(json_name(Native::Codex)), dir.join("config.toml")] {
            let untrusted = super::codex_trust::untrust(&config, &file)?;
            if !untrusted.removed.is_empty() || untrusted.problem.is_some() {
                report.trust = Some(untrusted);
            }
        }
    }
    Ok(report)
}

/// The threads whose worktree is claimed for Codex, the worktree and the
/// thread still there.
fn live_claims(main: &Path) -> Vec<String> {
    super::ledger::claims(main, Native::Codex.agent_id())
        .into_iter()
        .filter(|c| {
            c.worktree.is_dir()
                && crate::store::Store::for_project(&c.worktree)
                    .thread(&c.thread)
                    .is_ok_and(|t| t.meta_path().is_file())
        })
        .map(|c| c.thread)
        .collect()
}

/// Removes grove's hooks for `native` from the agent's files under `root`.
fn uninstall_files(native: Native, root: &Path) -> Result<Removed> {
    let worktree = root;
    let dir = worktree.join(native_dir(native));
    let json_file = dir.join(json_name(native));
    let mut report = Removed::new(native, json_file.clone());
    if !tracked(worktree, &json_file) {
        uninstall_json(native, worktree, &json_file, &mut report)?;
    }
    let toml = dir.join("config.toml");
    if native == Native::Codex
        && crate::fsutil::check_no_links_below(worktree, &toml).is_ok()
        && crate::fsutil::read_opt(&toml)?.is_some_and(|t| t.starts_with(TOML_MARK.as_bytes()))
    {
        std::fs::remove_file(&toml).map_err(|e| Error::io("removing", &toml, e))?;
        if report.removed.is_empty() {
            report.file = toml.clone();
        }
        for event in hookfile::events(native) {
            if !report.removed.iter().any(|e| e == event) {
                report.removed.push(event.to_string());
            }
        }
        report.files.push(toml.clone());
        report
            .files
            .extend(unhide(worktree, &dir, &toml, true, None)?);
    }
    Ok(report)
}

fn uninstall_json(
    native: Native,
    worktree: &Path,
    file: &Path,
    report: &mut Removed,
) -> Result<()> {
    if let Some(reason) = link_refusal(worktree, file) {
        report.problem = Some(reason);
        return Ok(());
    }
    let keys = Keys::of(file)?;
    let _lock = crate::fsutil::FileLock::acquire(&keys.lock)?;
    let record = keys.record()?;
    let edit = Edit {
        native,
        worktree,
        file,
        keys: &keys,
    };
    for _ in 0..ATTEMPTS {
        if edit.uninstall(record.as_ref(), report)? {
            return Ok(());
        }
    }
    Err(changing(file))
}

/// The events that had grove's hook in `before` and have none in `after`,
/// grove's own first, in its order.
fn removed_events(native: Native, before: &str, after: &str) -> Vec<String> {
    let left = hookfile::grove_events(after, native);
    let mut removed: Vec<String> = hookfile::grove_events(before, native)
        .into_iter()
        .filter(|e| !left.contains(e))
        .collect();
    let order = hookfile::events(native);
    removed.sort_by_key(|e| order.iter().position(|o| o == e).unwrap_or(order.len()));
    removed
}

/// Whether grove's hooks for `native` serve `worktree` (Codex's are in the
/// main worktree).
pub fn installed(native: Native, worktree: &Path) -> bool {
    let root = match native {
        Native::Claude | Native::Gemini => worktree.to_path_buf(),
        Native::Codex => main_root(worktree).unwrap_or_else(|_| worktree.to_path_buf()),
        Native::OpenCode => return super::opencode::installed(worktree),
    };
    let dir = root.join(native_dir(native));
    let in_json = crate::fsutil::read(&dir.join(json_name(native)))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|t| !hookfile::grove_events(&t, native).is_empty());
    in_json
        || crate::fsutil::read(&dir.join("config.toml"))
            .is_ok_and(|t| t.starts_with(TOML_MARK.as_bytes()))
}

/// The directory of the agent's hooks file (OpenCode's plugin is named in
/// the worktree's own config: [`super::opencode`]).
fn native_dir(native: Native) -> &'static str {
    match native {
        Native::Claude => ".claude",
        Native::Codex => ".codex",
        Native::Gemini => ".gemini",
        Native::OpenCode => ".",
    }
}

fn json_name(native: Native) -> &'static str {
    match native {
        Native::Claude => "settings.local.json",
        Native::Codex => "hooks.json",
        Native::Gemini => "settings.json",
        Native::OpenCode => "opencode.json",
    }
}

fn parent(file: &Path) -> &Path {
    file.parent().unwrap_or(Path::new("."))
}

/// The agent's hooks file as grove found it.
enum Settings {
    Missing,
    Text(String),
    /// Not something grove edits: why.
    Refused(String),
}

impl Settings {
    /// The text to edit: a missing file is an empty object.
    fn text(&self) -> &str {
        match self {
            Settings::Text(t) => t,
            _ => BLANK,
        }
    }

    fn is_missing(&self) -> bool {
        matches!(self, Settings::Missing)
    }

    /// The text of a file that is there.
    fn existing(&self) -> Option<&str> {
        match self {
            Settings::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// Reads `file`: missing, the text of a JSON object, or why grove leaves it
/// alone.
fn read_settings(file: &Path) -> Result<Settings> {
    let bytes = match crate::fsutil::read_opt(file) {
        Ok(None) => return Ok(Settings::Missing),
        Ok(Some(b)) => b,
        Err(Error::Symlink { .. }) => {
            return Ok(Settings::Refused(format!(
                "{} is a symbolic link; grove does not write through links, so it leaves it alone",
                file.display()
            )));
        }
        Err(e) => return Err(e),
    };
    let refused = |why: String| {
        Ok(Settings::Refused(format!(
            "{} is {why}; grove leaves it alone — fix it, then run the command again",
            file.display()
        )))
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return refused("not valid JSON (not UTF-8)".into()),
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Err(e) => refused(format!("not valid JSON ({e})")),
        Ok(v) if !v.is_object() => refused("not a JSON object".into()),
        Ok(_) => Ok(Settings::Text(text)),
    }
}

/// What install created for one hooks file, kept in grove's data directory
/// (nothing of grove's in the user's `.claude/` but its hooks) so that
/// uninstall takes out exactly that.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// The hooks file (a record names its file: the key is a hash).
    file: PathBuf,
    created_file: bool,
    created_dir: bool,
    created: Created,
    /// grove's `.gitignore` got the file's line from an install.
    ignore_line: bool,
    /// The `info/exclude` pattern an install added.
    exclude: Option<String>,
}

/// Where the lock and the record of one hooks file are.
struct Keys {
    /// The file, by the canonical path of its directory: the same file
    /// reached by another spelling of its worktree's path shares its lock
    /// and record.
    file: PathBuf,
    lock: PathBuf,
    record: PathBuf,
}

impl Keys {
    fn of(file: &Path) -> Result<Keys> {
        let dir = std::fs::canonicalize(parent(file)).unwrap_or_else(|_| parent(file).into());
        let canonical = dir.join(file.file_name().unwrap_or_default());
        let hash = xxhash_rust::xxh3::xxh3_64(canonical.as_os_str().as_encoded_bytes());
        let data = crate::home::data_dir()?;
        Ok(Keys {
            file: canonical,
            lock: data.join("locks").join(format!("hooks-{hash:016x}.lock")),
            record: data.join("hook-installs").join(format!("{hash:016x}.json")),
        })
    }

    /// The record of the file, if there is one and it is about that file.
    fn record(&self) -> Result<Option<Record>> {
        let Some(bytes) = crate::fsutil::read_opt(&self.record)? else {
            return Ok(None);
        };
        // An unreadable record is as good as none: uninstall then takes
        // out whatever holds only grove's hooks.
        Ok(serde_json::from_slice::<Record>(&bytes)
            .ok()
            .filter(|r| r.file == self.file))
    }

    fn save(&self, record: &Record) -> Result<()> {
        super::save_record(&self.record, "the hooks installed", record)
    }

    fn forget(&self) -> Result<()> {
        super::forget_record(&self.record)
    }
}

const TOML_MARK: &str =
    "# Written by grove: Codex hooks that capture each turn into the task's thread";

fn toml_hooks(native: Native, command: &str) -> String {
    let mut out = format!("{TOML_MARK}\n# (`grove capture uninstall` removes this file).\n");
    let command = format!("\"{}\"", command.replace('\\', "\\\\").replace('"', "\\\""));
    for event in hookfile::events(native) {
        out.push_str(&format!(
            "\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {command}\ntimeout = {}\n",
            hookfile::timeout(native, event)
        ));
    }
    out
}

const IGNORE_MARK: &str = "# Created by grove: keeps its capture hooks out of git status.";

/// What [`hide`] did.
#[derive(Debug, Default)]
struct Hidden {
    /// Files written.
    written: Vec<PathBuf>,
    /// The file's line went into grove's `.gitignore`.
    ignore_line: bool,
    /// The `info/exclude` pattern added.
    exclude: Option<String>,
}

/// Keeps `file` (in `dir`) out of `git status`.
fn hide(worktree: &Path, dir: &Path, file: &Path) -> Result<Hidden> {
    let line = ignore_line(file);
    let ignore = dir.join(".gitignore");
    let mut hidden = Hidden::default();
    match crate::fsutil::read_opt(&ignore) {
        Ok(Some(bytes)) if bytes.starts_with(IGNORE_MARK.as_bytes()) => {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if !text.lines().any(|l| l == line) {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&line);
                text.push('\n');
                crate::fsutil::write_atomic(&ignore, text.as_bytes())?;
                hidden.written.push(ignore);
                hidden.ignore_line = true;
            }
        }
        Ok(None) => {
            let text = format!("{IGNORE_MARK}\n/.gitignore\n{line}\n");
            if crate::fsutil::write_new(&ignore, text.as_bytes())? {
                hidden.written.push(ignore);
                hidden.ignore_line = true;
            }
        }
        // The repository's own .gitignore there (or a link): the
        // repository's exclude file takes the path instead.
        _ => {
            let git = crate::git::cmd::Git::find()?;
            let exclude = crate::worktree::exclude::exclude_file(&git, worktree)?;
            let relative = file.strip_prefix(worktree).unwrap_or(file);
            let pattern = crate::worktree::exclude::pattern_for(relative)?;
            let listed = crate::fsutil::read_opt(&exclude)
                .ok()
                .flatten()
                .is_some_and(|b| String::from_utf8_lossy(&b).lines().any(|l| l == pattern));
            if !listed {
                crate::worktree::exclude::add(&exclude, std::slice::from_ref(&pattern))?;
                hidden.exclude = Some(pattern);
            }
        }
    }
    Ok(hidden)
}

/// The line of grove's `.gitignore` naming `file`.
fn ignore_line(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("/{name}")
}

/// Takes out what [`hide`] did for `file`: its line in grove's `.gitignore`
/// when the file is `gone` or an install added the line (the `.gitignore`
/// too, once none of the files it names is there), the `info/exclude`
/// entry an install added. Returns the files changed or removed.
fn unhide(
    worktree: &Path,
    dir: &Path,
    file: &Path,
    gone: bool,
    record: Option<&Record>,
) -> Result<Vec<PathBuf>> {
    let mut changed = Vec::new();
    let line = ignore_line(file);
    let ignore = dir.join(".gitignore");
    if (gone || record.is_some_and(|r| r.ignore_line))
        && let Ok(Some(bytes)) = crate::fsutil::read_opt(&ignore)
        && bytes.starts_with(IGNORE_MARK.as_bytes())
    {
        let text = String::from_utf8_lossy(&bytes);
        let kept: Vec<&str> = text.lines().filter(|l| *l != line).collect();
        let names_a_file = kept.iter().any(|l| {
            l.strip_prefix('/')
                .is_some_and(|name| name != ".gitignore" && dir.join(name).exists())
        });
        if !names_a_file {
            std::fs::remove_file(&ignore).map_err(|e| Error::io("removing", &ignore, e))?;
            changed.push(ignore);
        } else if kept.len() != text.lines().count() {
            let mut text = kept.join("\n");
            text.push('\n');
            crate::fsutil::write_atomic(&ignore, text.as_bytes())?;
            changed.push(ignore);
        }
    }
    if let Some(pattern) = record.and_then(|r| r.exclude.as_ref()) {
        let git = crate::git::cmd::Git::find()?;
        let exclude = crate::worktree::exclude::exclude_file(&git, worktree)?;
        crate::worktree::exclude::remove(&exclude, std::slice::from_ref(pattern))?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_commands_are_quoted_for_the_shell() {
        assert_eq!(
            hook_command(Path::new("/opt/my tools/grove"), Native::Claude, "abc"),
            "'/opt/my tools/grove' capture claude --thread abc"
        );
        // One command for every task: Codex trusts it once.
        assert_eq!(
            hook_command(Path::new("/opt/my tools/grove"), Native::Codex, "abc"),
            "'/opt/my tools/grove' capture codex"
        );
    }
}
