//! Checking `.agent/` directories against the ATSF v1.1 spec (its MUST and
//! SHOULD rules) and grove's own extensions, so that any reader — grove,
//! OpenAgentManager, another tool — can read what is there.
//!
//! Files are read as plain JSON, not through grove's types: a check names
//! what is wrong with a file grove itself would refuse, by `file:line` and
//! field. Nothing is written.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::atsf::{self, Stats};
use crate::error::{IoContext, Result};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks a MUST of the spec, a required field, or one of grove's
    /// invariants: readers may refuse or misread it.
    Error,
    /// Goes against a SHOULD.
    Warning,
}

/// One thing wrong.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based, for JSON Lines files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub severity: Severity,
    /// What is wrong and, where the spec says it, the rule.
    pub rule: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.rule),
            None => write!(f, "{}: {}", self.file.display(), self.rule),
        }
    }
}

/// What was checked and what is wrong.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub agent_dirs: u64,
    pub threads: u64,
    pub messages: u64,
    pub problems: Vec<Problem>,
}

impl Report {
    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }

    fn error(&mut self, file: &Path, line: Option<u64>, rule: impl Into<String>) {
        self.push(file, line, Severity::Error, rule);
    }

    fn warn(&mut self, file: &Path, line: Option<u64>, rule: impl Into<String>) {
        self.push(file, line, Severity::Warning, rule);
    }

    fn push(
        &mut self,
        file: &Path,
        line: Option<u64>,
        severity: Severity,
        rule: impl Into<String>,
    ) {
        self.problems.push(Problem {
            file: file.to_path_buf(),
            line,
            severity,
            rule: rule.into(),
        });
    }
}

/// Checks `path`: an `.agent/` directory, a directory holding one, a
/// `threads/` directory, or one thread's directory.
pub fn check(path: &Path, report: &mut Report) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).ctx("reading", path)?;
    if !meta.is_dir() {
        return Err(crate::Error::Other(format!(
            "{} is not a directory: give an .agent/ directory, a project, or a thread directory",
            path.display()
        )));
    }
    if path.join(atsf::THREAD_FILE).exists() || path.join(atsf::MESSAGES_FILE).exists() {
        report.threads += 1;
        check_thread(path, report);
        return Ok(());
    }
    let agent = if path.join(atsf::AGENT_DIR).is_dir() {
        path.join(atsf::AGENT_DIR)
    } else if path.file_name().is_some_and(|n| n == atsf::THREADS_DIR) {
        for dir in thread_dirs(path)? {
            report.threads += 1;
            check_thread(&dir, report);
        }
        return Ok(());
    } else {
        path.to_path_buf()
    };
    check_agent_dir(&agent, report)
}

/// The directories under `threads` (grove's hidden staging excluded).
fn thread_dirs(threads: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(threads).ctx("listing", threads)? {
        let entry = entry.ctx("listing", threads)?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

fn check_agent_dir(agent: &Path, report: &mut Report) -> Result<()> {
    report.agent_dirs += 1;
    let config = agent.join(atsf::CONFIG_FILE);
    if config.exists() {
        check_config(&config, report);
    }
    if !agent.join(".gitignore").exists() {
        report.warn(
            &agent.join(".gitignore"),
            None,
            "missing: implementations SHOULD create .agent/.gitignore ignoring threads/*/messages.jsonl and threads/*/assets/",
        );
    }
    let threads = agent.join(atsf::THREADS_DIR);
    if threads.is_dir() {
        for dir in thread_dirs(&threads)? {
            report.threads += 1;
            check_thread(&dir, report);
        }
    }
    Ok(())
}

fn read_object(path: &Path, report: &mut Report) -> Option<Map<String, Value>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            report.error(path, None, format!("cannot be read: {e}"));
            return None;
        }
    };
    match serde_json::from_slice::<Value>(atsf::strip_bom(&bytes)) {
        Ok(Value::Object(o)) => Some(o),
        Ok(_) => {
            report.error(path, None, "not a JSON object");
            None
        }
        Err(e) => {
            report.error(path, Some(e.line() as u64), format!("not valid JSON: {e}"));
            None
        }
    }
}

/// Field checks on a JSON object, naming the field by its path.
struct Fields<'a> {
    file: &'a Path,
    line: Option<u64>,
    report: &'a mut Report,
}

impl Fields<'_> {
    fn error(&mut self, rule: impl Into<String>) {
        self.report.error(self.file, self.line, rule);
    }

    /// A required string (non-empty when `nonempty`).
    fn string(
        &mut self,
        o: &Map<String, Value>,
        at: &str,
        key: &str,
        required: bool,
    ) -> Option<String> {
        match o.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            None if !required => None,
            None => {
                self.error(format!("`{at}{key}` is required (a string)"));
                None
            }
            Some(other) => {
                self.error(format!("`{at}{key}` must be a string, not {}", kind(other)));
                None
            }
        }
    }

    fn number(
        &mut self,
        o: &Map<String, Value>,
        at: &str,
        key: &str,
        required: bool,
    ) -> Option<f64> {
        match o.get(key) {
            Some(Value::Number(n)) => n.as_f64(),
            None if !required => None,
            None => {
                self.error(format!("`{at}{key}` is required (a number)"));
                None
            }
            Some(other) => {
                self.error(format!("`{at}{key}` must be a number, not {}", kind(other)));
                None
            }
        }
    }

    fn count(&mut self, o: &Map<String, Value>, at: &str, key: &str) -> Option<u64> {
        match o.get(key) {
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            None => {
                self.error(format!("`{at}{key}` is required (a whole number)"));
                None
            }
            Some(other) => {
                self.error(format!("`{at}{key}` must be a whole number, not {other}"));
                None
            }
        }
    }

    fn boolean(&mut self, o: &Map<String, Value>, at: &str, key: &str) {
        if let Some(v) = o.get(key)
            && !v.is_boolean()
        {
            self.error(format!(
                "`{at}{key}` must be true or false, not {}",
                kind(v)
            ));
        }
    }

    fn object<'v>(
        &mut self,
        o: &'v Map<String, Value>,
        at: &str,
        key: &str,
        required: bool,
    ) -> Option<&'v Map<String, Value>> {
        match o.get(key) {
            Some(Value::Object(m)) => Some(m),
            None if !required => None,
            None => {
                self.error(format!("`{at}{key}` is required (an object)"));
                None
            }
            Some(other) => {
                self.error(format!(
                    "`{at}{key}` must be an object, not {}",
                    kind(other)
                ));
                None
            }
        }
    }

    fn array<'v>(
        &mut self,
        o: &'v Map<String, Value>,
        at: &str,
        key: &str,
        required: bool,
    ) -> Option<&'v Vec<Value>> {
        match o.get(key) {
            Some(Value::Array(a)) => Some(a),
            None if !required => None,
            None => {
                self.error(format!("`{at}{key}` is required (an array)"));
                None
            }
            Some(other) => {
                self.error(format!("`{at}{key}` must be an array, not {}", kind(other)));
                None
            }
        }
    }

    /// An ISO 8601 timestamp in UTC.
    fn timestamp(&mut self, o: &Map<String, Value>, at: &str, key: &str, required: bool) {
        let Some(t) = self.string(o, at, key, required) else {
            return;
        };
        let utc = t.ends_with('Z') || t.ends_with("+00:00");
        if t.parse::<jiff::Timestamp>().is_err() || !utc {
            self.error(format!(
                "`{at}{key}` {t:?} is not an ISO 8601 timestamp in UTC (like 2025-02-14T10:30:00.000Z)"
            ));
        }
    }

    fn version(&mut self, o: &Map<String, Value>) {
        let Some(v) = self.string(o, "", "specVersion", true) else {
            return;
        };
        match atsf::check_spec_version(self.file, &v) {
            Ok(()) => {}
            Err(crate::Error::UnsupportedVersion { .. }) => self.error(format!(
                "`specVersion` {v:?}: a MAJOR version above 1, which readers of ATSF 1.x MUST reject"
            )),
            Err(_) => self.error(format!(
                "`specVersion` {v:?} is not MAJOR.MINOR (like \"1.1\")"
            )),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_config(path: &Path, report: &mut Report) {
    let Some(o) = read_object(path, report) else {
        return;
    };
    let mut f = Fields {
        file: path,
        line: None,
        report,
    };
    f.version(&o);
    if let Some(by) = f.object(&o, "", "createdBy", false) {
        f.string(by, "createdBy.", "name", true);
        f.string(by, "createdBy.", "version", true);
    }
    if let Some(d) = f.object(&o, "", "defaults", false) {
        f.string(d, "defaults.", "agentId", false);
        f.string(d, "defaults.", "interactionMode", false);
        f.boolean(d, "defaults.", "useWorktree");
    }
    f.object(&o, "", "agentSettings", false);
    if let Some(h) = f.object(&o, "", "worktreeHooks", false) {
        // The spec's symlinks, and grove's copies of the same shape.
        for list in ["symlinks", "copies"] {
            for (i, s) in f
                .array(h, "worktreeHooks.", list, false)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("worktreeHooks.{list}[{i}].");
                match s {
                    Value::Object(s) => {
                        f.string(s, &at, "source", true);
                        f.string(s, &at, "target", false);
                    }
                    other => f.error(format!("`{at}` must be an object, not {}", kind(other))),
                }
            }
        }
        // The spec's postSetupCommands, and grove's preRemoveCommands and
        // preMergeCommands of the same shape.
        for list in ["postSetupCommands", "preRemoveCommands", "preMergeCommands"] {
            for (i, c) in f
                .array(h, "worktreeHooks.", list, false)
                .into_iter()
                .flatten()
                .enumerate()
            {
                command(&mut f, &format!("worktreeHooks.{list}[{i}]."), c);
            }
        }
        f.string(h, "worktreeHooks.", "initialPrompt", false);
        // grove's extensions.
        if let Some(n) = f.number(h, "worktreeHooks.", "ports", false)
            && (n < 0.0 || n.fract() != 0.0 || n > grove_max_ports())
        {
            f.error(format!(
                "`worktreeHooks.ports` must be a whole number from 0 to {}",
                grove_max_ports()
            ));
        }
        if let Some(env) = f.object(h, "worktreeHooks.", "env", false) {
            for (k, v) in env {
                if !v.is_string() {
                    f.error(format!(
                        "`worktreeHooks.env.{k}` must be a string, not {}",
                        kind(v)
                    ));
                }
            }
        }
        f.string(h, "worktreeHooks.", "envFile", false);
    }
    if let Some(g) = f.object(&o, "", crate::atsf::grove::KEY, false) {
        grove_section(&mut f, g);
    }
    for miss in crate::atsf::near_misses(&Value::Object(o.clone())) {
        f.report.warn(path, None, miss.to_string());
    }
    secrets(&Value::Object(o), "", &mut f);
}

/// grove's own section of `config.json`.
fn grove_section(f: &mut Fields, g: &Map<String, Value>) {
    f.string(g, "grove.", "branchPrefix", false);
    f.string(g, "grove.", "branchTemplate", false);
    f.string(g, "grove.", "notify", false);
    f.boolean(g, "grove.", "submodules");
    f.boolean(g, "grove.", "lfs");
    let Some(agents) = f.object(g, "grove.", "agents", false) else {
        return;
    };
    for (id, a) in agents {
        let at = format!("grove.agents.{id}.");
        let Value::Object(a) = a else {
            f.error(format!(
                "`grove.agents.{id}` must be an object, not {}",
                kind(a)
            ));
            continue;
        };
        for key in ["command", "resume"] {
            let Some(words) = f.array(a, &at, key, key == "command") else {
                continue;
            };
            if words.is_empty() || words.iter().any(|w| !w.is_string()) {
                f.error(format!("`{at}{key}` must be a non-empty array of strings"));
            }
        }
        if let Some(native) = a.get("native")
            && !matches!(native.as_str(), Some("claude" | "codex"))
        {
            f.error(format!(
                "`{at}native` must be \"claude\" or \"codex\", not {native}"
            ));
        }
    }
}

fn grove_max_ports() -> f64 {
    crate::ports::MAX_PER_TASK as f64
}

/// One command of `postSetupCommands` or `preRemoveCommands`.
fn command(f: &mut Fields, at: &str, c: &Value) {
    let Value::Object(c) = c else {
        f.error(format!("`{at}` must be an object, not {}", kind(c)));
        return;
    };
    f.string(c, at, "command", true);
    f.string(c, at, "label", false);
    if let Some(t) = f.number(c, at, "timeout", false)
        && t < 0.0
    {
        f.error(format!("`{at}timeout` must not be negative"));
    }
    f.boolean(c, at, "continueOnError");
    f.boolean(c, at, "background");
    for p in f.array(c, at, "platforms", false).into_iter().flatten() {
        if !matches!(p.as_str(), Some("win32" | "darwin" | "linux")) {
            f.error(format!(
                "`{at}platforms`: {p} is not one of \"win32\", \"darwin\", \"linux\""
            ));
        }
    }
}

/// `config.json` MUST NOT hold secrets: a non-empty string under a key
/// that names one.
fn secrets(v: &Value, at: &str, f: &mut Fields) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                let lower = k.to_ascii_lowercase().replace(['_', '-'], "");
                let named = [
                    "apikey",
                    "secret",
                    "token",
                    "password",
                    "accesskey",
                    "privatekey",
                ]
                .iter()
                .any(|s| lower.contains(s));
                if named && v.as_str().is_some_and(|s| !s.trim().is_empty()) {
                    f.error(format!(
                        "`{at}{k}` looks like a secret: config.json MUST NOT contain secrets (keep them in the application's own secure storage)"
                    ));
                }
                secrets(v, &format!("{at}{k}."), f);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                secrets(v, &format!("{at}[{i}]."), f);
            }
        }
        _ => {}
    }
}

/// What a thread's log holds, for the checks across files.
#[derive(Default)]
struct Log {
    stats: Stats,
    ids: HashSet<String>,
    assets: HashSet<String>,
    last_time: Option<String>,
}

fn check_thread(dir: &Path, report: &mut Report) {
    let meta_path = dir.join(atsf::THREAD_FILE);
    let log_path = dir.join(atsf::MESSAGES_FILE);
    let log = if log_path.exists() {
        check_log(&log_path, report)
    } else {
        Log::default()
    };
    let Some(o) = (if meta_path.exists() {
        read_object(&meta_path, report)
    } else {
        report.error(
            &meta_path,
            None,
            "missing: each thread directory contains exactly one thread.json",
        );
        None
    }) else {
        return;
    };
    check_meta(dir, &meta_path, &o, &log, report);
    check_assets(dir, &log, report);
}

fn check_meta(dir: &Path, path: &Path, o: &Map<String, Value>, log: &Log, report: &mut Report) {
    let mut f = Fields {
        file: path,
        line: None,
        report,
    };
    f.version(o);
    meta_identity(&mut f, dir, o);
    meta_context(&mut f, o);
    meta_stats(&mut f, o, log);
    meta_extensions(&mut f, o);
    meta_updated(&mut f, o, log);
}

/// Which thread it is: its id (the directory's name), title, agent, times.
fn meta_identity(f: &mut Fields, dir: &Path, o: &Map<String, Value>) {
    if let Some(id) = f.string(o, "", "threadId", true) {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() != Some(id.as_str()) {
            f.error(format!(
                "`threadId` {id:?} is not the directory's name {:?} (directory name = thread ID)",
                name.unwrap_or_default()
            ));
        }
    }
    f.string(o, "", "title", true);
    f.timestamp(o, "", "createdAt", true);
    f.timestamp(o, "", "updatedAt", true);
    if let Some(a) = f.object(o, "", "agent", true) {
        f.string(a, "agent.", "id", true);
        f.string(a, "agent.", "name", true);
        f.string(a, "agent.", "version", false);
        f.string(a, "agent.", "protocol", false);
        f.number(a, "agent.", "protocolVersion", false);
    }
}

/// Where it was made: `context` and its worktree.
fn meta_context(f: &mut Fields, o: &Map<String, Value>) {
    if let Some(c) = f.object(o, "", "context", true) {
        if let Some(w) = f.string(c, "context.", "workingDir", true) {
            if w.is_empty() {
                f.error(
                    "`context.workingDir` is empty (it is the absolute path the thread was created in)"
                        .to_string(),
                );
            } else if !Path::new(&w).is_absolute() && !w.starts_with('/') {
                f.error(format!(
                    "`context.workingDir` {w:?} is not absolute (an absolute path at creation time)"
                ));
            }
        }
        f.string(c, "context.", "relativeDir", false);
        f.string(c, "context.", "gitBranch", false);
        f.string(c, "context.", "gitCommit", false);
        if let Some(w) = f.object(c, "context.", "worktree", false) {
            f.string(w, "context.worktree.", "path", true);
            f.string(w, "context.worktree.", "branch", true);
        }
    }
}

/// `stats` as the log counts them (a mismatch is a warning).
fn meta_stats(f: &mut Fields, o: &Map<String, Value>, log: &Log) {
    let path = f.file;
    if let Some(s) = f.object(o, "", "stats", true) {
        let counts = [
            ("messageCount", log.stats.message_count),
            ("userMessageCount", log.stats.user_message_count),
            ("agentMessageCount", log.stats.agent_message_count),
            ("toolCallCount", log.stats.tool_call_count),
        ];
        for (key, actual) in counts {
            if let Some(n) = f.count(s, "stats.", key)
                && n != actual
            {
                f.report.warn(
                    path,
                    None,
                    format!(
                        "`stats.{key}` is {n} but messages.jsonl has {actual}: stats are derived from the log, cached for listing (`grove repair` recounts)"
                    ),
                );
            }
        }
    }
}

/// grove's extensions: origin, fork point, archive, version, relationships, git.
fn meta_extensions(f: &mut Fields, o: &Map<String, Value>) {
    let path = f.file;
    f.object(o, "", "metadata", false);
    // grove's extensions (seed 001, seed 003), spelled as Amp spells them.
    f.string(o, "", "originThreadID", false);
    f.string(o, "", "mainThreadID", false);
    // The index is the origin's (Amp's meaning): checked there, not here.
    if let Some(at) = o.get("forkPointIndex")
        && at.as_u64().is_none()
    {
        f.error("`forkPointIndex` must be a whole number (a message index of the origin thread)");
    }
    f.boolean(o, "", "archived");
    if let Some(v) = o.get("v")
        && v.as_u64().is_none()
    {
        f.error("`v` must be a whole number (the thread's version)");
    }
    for (i, r) in f
        .array(o, "", "relationships", false)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("relationships[{i}].");
        let Value::Object(r) = r else {
            f.error(format!("`{at}` must be an object"));
            continue;
        };
        f.string(r, &at, "threadID", true);
        if let Some(t) = f.string(r, &at, "type", true)
            && !matches!(t.as_str(), "fork" | "handoff" | "mention")
        {
            f.report.warn(
                path,
                None,
                format!("`{at}type` {t:?} is not fork, handoff or mention"),
            );
        }
        if let Some(role) = f.string(r, &at, "role", true)
            && !matches!(role.as_str(), "parent" | "child")
        {
            f.error(format!("`{at}role` {role:?} is not parent or child"));
        }
        if let Some(m) = r.get("messageIndex")
            && m.as_u64().is_none()
        {
            f.error(format!("`{at}messageIndex` must be a whole number"));
        }
    }
    if let Some(g) = f.object(o, "", "git", false) {
        f.string(g, "git.", "branch", false);
        f.string(g, "git.", "initialCommit", false);
        f.string(g, "git.", "currentCommit", false);
        f.array(g, "git.", "commitsMade", false);
        f.boolean(g, "git.", "dirty");
    }
}

/// `updatedAt` SHOULD be at least the last message's time.
fn meta_updated(f: &mut Fields, o: &Map<String, Value>, log: &Log) {
    let path = f.file;
    if let Some(last) = &log.last_time
        && let Some(updated) = o.get("updatedAt").and_then(Value::as_str)
        && let (Ok(u), Ok(l)) = (
            updated.parse::<jiff::Timestamp>(),
            last.parse::<jiff::Timestamp>(),
        )
        && u < l
    {
        f.report.warn(
            path,
            None,
            format!("`updatedAt` {updated} is before the last message ({last}): it SHOULD be the last message's time"),
        );
    }
}

/// Checks every line of a `messages.jsonl`.
fn check_log(path: &Path, report: &mut Report) -> Log {
    let mut log = Log::default();
    let file = match crate::fsutil::open_read(path) {
        Ok(f) => f,
        Err(e) => {
            report.error(path, None, format!("cannot be read: {e}"));
            return log;
        }
    };
    let mut reader = std::io::BufReader::with_capacity(256 * 1024, file);
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut completes: Vec<(u64, String)> = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                report.error(path, Some(number + 1), format!("cannot be read: {e}"));
                break;
            }
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            report.warn(
                path,
                Some(number),
                "a partial last line (an append in progress, or a crashed writer): readers ignore it",
            );
            break;
        }
        let text = atsf::strip_bom(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            report.error(
                path,
                Some(number),
                "an empty line: each line is one message",
            );
            continue;
        }
        let o = match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                report.error(
                    path,
                    Some(number),
                    "not a JSON object: each line is one message",
                );
                continue;
            }
            Err(e) => {
                report.error(path, Some(number), format!("not valid JSON: {e}"));
                continue;
            }
        };
        report.messages += 1;
        check_message(path, number, &o, &mut log, &mut completes, report);
    }
    for (line, of) in completes {
        if !log.ids.contains(&of) {
            report.error(
                path,
                Some(line),
                format!(
                    "`{}` names {of:?}, which is not a message of this thread",
                    atsf::COMPLETES_KEY
                ),
            );
        }
    }
    log
}

fn check_message(
    path: &Path,
    number: u64,
    o: &Map<String, Value>,
    log: &mut Log,
    completes: &mut Vec<(u64, String)>,
    report: &mut Report,
) {
    let mut f = Fields {
        file: path,
        line: Some(number),
        report,
    };
    let role = message_identity(&mut f, o, log);
    message_content(&mut f, o, log);
    let completion = o
        .get(atsf::COMPLETES_KEY)
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(of) = &completion {
        completes.push((number, of.clone()));
    }
    let calls = message_tool_calls(&mut f, o, log);
    f.string(o, "", "stopReason", false);
    f.string(o, "", "model", false);
    if let Some(t) = f.object(o, "", "tokens", false) {
        for key in atsf::Tokens::COUNTS {
            f.number(t, "tokens.", key, false);
        }
    }
    log.stats.message_count += 1;
    match role.as_deref() {
        Some("user") => log.stats.user_message_count += 1,
        Some("agent") => log.stats.agent_message_count += 1,
        _ => {}
    }
    if completion.is_none() {
        log.stats.tool_call_count += calls;
    }
}

/// Its id (unique in the log), role and time; the role.
fn message_identity(f: &mut Fields, o: &Map<String, Value>, log: &mut Log) -> Option<String> {
    if let Some(id) = f.string(o, "", "id", true) {
        if id.trim().is_empty() {
            f.error("`id` must not be empty");
        } else if !log.ids.insert(id.clone()) {
            f.error(format!(
                "`id` {id:?} is used by an earlier message: message ids are unique"
            ));
        }
    }
    let role = f.string(o, "", "role", true);
    if let Some(r) = &role
        && !matches!(r.as_str(), "user" | "agent" | "system")
    {
        f.error(format!(
            "`role` {r:?} is not one of \"user\", \"agent\", \"system\""
        ));
    }
    f.timestamp(o, "", "timestamp", true);
    if let Some(t) = o.get("timestamp").and_then(Value::as_str) {
        log.last_time = Some(t.to_string());
    }
    role
}

/// The content blocks; image assets are noted for the asset check.
fn message_content(f: &mut Fields, o: &Map<String, Value>, log: &mut Log) {
    let (path, number) = (f.file, f.line);
    for (i, b) in f
        .array(o, "", "content", true)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("content[{i}].");
        let Value::Object(b) = b else {
            f.error(format!(
                "`content[{i}]` must be an object (a content block)"
            ));
            continue;
        };
        match f.string(b, &at, "type", true).as_deref() {
            Some("text" | "thinking") => {
                f.string(b, &at, "text", true);
            }
            Some("image") => {
                if b.contains_key("data") {
                    f.report.warn(
                        path,
                        number,
                        format!("`{at}data`: inline image data SHOULD be stored as an asset and referenced by `assetRef`"),
                    );
                } else if let Some(name) = f.string(b, &at, "assetRef", true) {
                    log.assets.insert(name);
                }
                f.string(b, &at, "mimeType", false);
            }
            _ => {}
        }
    }
}

/// The tool calls; how many.
fn message_tool_calls(f: &mut Fields, o: &Map<String, Value>, log: &mut Log) -> u64 {
    let mut calls = 0;
    for (i, c) in f
        .array(o, "", "toolCalls", false)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("toolCalls[{i}].");
        let Value::Object(c) = c else {
            f.error(format!("`toolCalls[{i}]` must be an object"));
            continue;
        };
        calls += 1;
        f.string(c, &at, "toolCallId", true);
        f.string(c, &at, "name", true);
        f.string(c, &at, "title", false);
        if let Some(s) = f.string(c, &at, "status", true)
            && !matches!(s.as_str(), "pending" | "running" | "completed" | "failed")
        {
            f.error(format!(
                "`{at}status` {s:?} is not one of \"pending\", \"running\", \"completed\", \"failed\""
            ));
        }
        f.string(c, &at, "input", false);
        f.string(c, &at, "output", false);
        f.number(c, &at, "duration", false);
        if let Some(d) = f.object(c, &at, "diff", false) {
            let at = format!("{at}diff.");
            f.string(d, &at, "path", true);
            f.string(d, &at, "oldText", true);
            f.string(d, &at, "newText", true);
        }
        for b in c
            .get("outputContent")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = b.get("assetRef").and_then(Value::as_str) {
                log.assets.insert(name.to_string());
            }
        }
    }
    calls
}

/// Assets are content-addressed: `sha256-<first 16 hex>.<ext>` of their
/// bytes; every `assetRef` names one that is there.
fn check_assets(dir: &Path, log: &Log, report: &mut Report) {
    let assets = dir.join(atsf::ASSETS_DIR);
    let mut present = HashMap::new();
    if let Ok(entries) = std::fs::read_dir(&assets) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let ok_name = name
                .strip_prefix("sha256-")
                .and_then(|rest| rest.split_once('.'))
                .is_some_and(|(hex, ext)| {
                    hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && !ext.is_empty()
                });
            if !ok_name {
                report.error(
                    &path,
                    None,
                    "asset file names are sha256-<first 16 hex>.<ext>",
                );
                continue;
            }
            if let Ok(bytes) = std::fs::read(&path) {
                use sha2::Digest;
                let digest = sha2::Sha256::digest(&bytes);
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                if !name.starts_with(&format!("sha256-{hex}.")) {
                    report.error(
                        &path,
                        None,
                        format!("its bytes hash to sha256-{hex}: assets are content-addressed"),
                    );
                }
            }
            present.insert(name, path);
        }
    }
    let mut missing: Vec<&String> = log
        .assets
        .iter()
        .filter(|a| !present.contains_key(*a))
        .collect();
    missing.sort();
    for name in missing {
        report.error(
            &dir.join(atsf::MESSAGES_FILE),
            None,
            format!("`assetRef` {name:?} names no file in assets/"),
        );
    }
}
