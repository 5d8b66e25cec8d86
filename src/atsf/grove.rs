//! grove's own sections: `metadata.grove` of a thread and `grove` of a
//! config, read and written through named fields instead of string lookups
//! spread over the code.
//!
//! The sections stay JSON objects in the files: a field this version does
//! not know, or a known field another writer gave another shape, is kept
//! as it is (a reader sees such a field as absent), so a thread or config
//! edited by a newer grove or by hand loses nothing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Extra;

/// The key of grove's section, in a thread's `metadata` and in a config.
pub const KEY: &str = "grove";

// The fields of a thread's `metadata.grove`.
const MAIN_ROOT: &str = "mainRoot";
const CREATED_BRANCH: &str = "createdBranch";
const EXCLUDES: &str = "excludes";
const HOOKS: &str = "hooks";
const PROBLEMS: &str = "problems";
const PORTS: &str = "ports";
const TEARDOWN: &str = "teardown";
const SHARE: &str = "share";
const SYNC_CONFLICTS: &str = "syncConflicts";
/// How many bytes of `messages.jsonl` the cached `stats` describe: an
/// append that finds another length (a crash between the line and
/// `thread.json`, or a writer that does not update stats) recounts instead
/// of trusting the cache; a shorter one is refused.
const STATS_LENGTH: &str = "statsLength";
const REVIVED_AT: &str = "revivedAt";
const BACKGROUND_SETUP: &str = "backgroundSetup";
/// Turn snapshots taken since capture last appended a message: the next
/// message it appends carries them (see `crate::snapshot`).
const PENDING_SNAPSHOTS: &str = "pendingSnapshots";

/// How a background setup command stands (`metadata.grove.backgroundSetup[].state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BackgroundState {
    Running,
    Ok,
    Failed,
    TimedOut,
    /// Ended by grove (`rm`, or `grove setup` starting it again).
    Killed,
}

impl BackgroundState {
    pub fn as_str(self) -> &'static str {
        match self {
            BackgroundState::Running => "running",
            BackgroundState::Ok => "ok",
            BackgroundState::Failed => "failed",
            BackgroundState::TimedOut => "timedOut",
            BackgroundState::Killed => "killed",
        }
    }
}

/// One background setup command, as recorded by the grove process that
/// waits for it (`grove __setup-wait`): what `list` and `show` show and
/// what `rm` kills.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundRun {
    /// Which command: its log's name (`post-setup-3`), stable across runs.
    pub key: String,
    pub label: String,
    pub state: BackgroundState,
    /// The command's shell, leader of its own process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The waiting grove process, leader of another group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiter_pid: Option<u32>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A thread's `metadata.grove`, read.
#[derive(Debug, Clone, Copy)]
pub struct ThreadSection<'a>(Option<&'a Map<String, Value>>);

impl<'a> ThreadSection<'a> {
    /// The section of `metadata` (none when missing or not an object).
    pub fn of(metadata: Option<&'a Extra>) -> Self {
        ThreadSection(metadata.and_then(|m| m.get(KEY)?.as_object()))
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0?.get(key)
    }

    /// The main checkout of the repository the task was made in.
    pub fn main_root(&self) -> Option<PathBuf> {
        self.get(MAIN_ROOT)?.as_str().map(PathBuf::from)
    }

    /// The TCP ports allocated to the task (`worktreeHooks.ports`).
    pub fn ports(&self) -> Vec<u16> {
        self.get(PORTS)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| u16::try_from(p.as_u64()?).ok())
            .collect()
    }

    /// `false` keeps the thread on this machine (`grove push` skips it).
    pub fn share(&self) -> Option<bool> {
        self.get(SHARE)?.as_bool()
    }

    /// The log length `stats` were last counted at.
    pub fn stats_length(&self) -> Option<u64> {
        self.get(STATS_LENGTH)?.as_u64()
    }

    /// The background setup commands of the task (entries of another
    /// shape are skipped).
    pub fn background_setup(&self) -> Vec<BackgroundRun> {
        self.get(BACKGROUND_SETUP)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect()
    }

    /// The turn snapshots waiting for the next captured message, as
    /// recorded (their shape is the snapshot module's).
    pub fn pending_snapshots(&self) -> Vec<Value> {
        self.get(PENDING_SNAPSHOTS)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The whole section, fields unknown to this version included.
    pub fn fields(&self) -> Map<String, Value> {
        self.0.cloned().unwrap_or_default()
    }
}

/// A thread's `metadata.grove`, to change: made when missing. A value
/// under the key that is not an object (someone else's) is kept, nested
/// under `previous`, rather than lost.
#[derive(Debug)]
pub struct ThreadSectionMut<'a>(&'a mut Map<String, Value>);

impl<'a> ThreadSectionMut<'a> {
    /// The section of `metadata`, made when missing.
    pub fn of(metadata: &'a mut Extra) -> Self {
        let entry = metadata
            .entry(KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            let previous = std::mem::take(entry);
            *entry = serde_json::json!({ "previous": previous });
        }
        match entry {
            Value::Object(map) => ThreadSectionMut(map),
            _ => unreachable!("made an object above"),
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_string(), value);
    }

    /// What `grove new` records of a task it made: the main checkout, whether
    /// it created the branch, the exclude entries it added.
    pub fn set_task(&mut self, main_root: &Path, created_branch: bool, excludes: &[String]) {
        self.set(
            MAIN_ROOT,
            Value::from(main_root.to_string_lossy().into_owned()),
        );
        self.set(CREATED_BRANCH, Value::Bool(created_branch));
        self.set_excludes(excludes);
    }

    /// The exclude entries the task's setup added.
    pub fn set_excludes(&mut self, excludes: &[String]) {
        self.set(EXCLUDES, serde_json::json!(excludes));
    }

    /// The outcome of each setup step (`worktreeHooks`).
    pub fn set_hooks(&mut self, outcomes: Value) {
        self.set(HOOKS, outcomes);
    }

    /// What went wrong in the setup, for `show` (nothing recorded when none).
    pub fn set_problems(&mut self, problems: &[String]) {
        if !problems.is_empty() {
            self.set(PROBLEMS, serde_json::json!(problems));
        }
    }

    /// The TCP ports allocated to the task.
    pub fn set_ports(&mut self, ports: &[u16]) {
        self.set(PORTS, serde_json::json!(ports));
    }

    /// The outcome of each `preRemoveCommands` command.
    pub fn set_teardown(&mut self, outcomes: Value) {
        self.set(TEARDOWN, outcomes);
    }

    /// The log length `stats` were counted at.
    pub fn set_stats_length(&mut self, len: u64) {
        self.set(STATS_LENGTH, Value::from(len));
    }

    /// When the task's removed worktree was made again.
    pub fn set_revived_at(&mut self, at: &str) {
        self.set(REVIVED_AT, Value::from(at));
    }

    /// Records `run` in place of the entry with its key (added when new);
    /// entries of another shape are kept.
    pub fn set_background_run(&mut self, run: &BackgroundRun) {
        let Ok(value) = serde_json::to_value(run) else {
            return;
        };
        let list = self
            .0
            .entry(BACKGROUND_SETUP)
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        let Value::Array(items) = list else { return };
        match items
            .iter_mut()
            .find(|v| v.get("key").and_then(Value::as_str) == Some(&run.key))
        {
            Some(slot) => *slot = value,
            None => items.push(value),
        }
    }

    /// The turn snapshots waiting for the next captured message; none
    /// removes the field.
    pub fn set_pending_snapshots(&mut self, pending: Vec<Value>) {
        if pending.is_empty() {
            self.0.remove(PENDING_SNAPSHOTS);
        } else {
            self.set(PENDING_SNAPSHOTS, Value::Array(pending));
        }
    }

    /// Takes every field of `fields` (a section read elsewhere) over this
    /// one's.
    pub fn take_fields(&mut self, fields: Map<String, Value>) {
        for (k, v) in fields {
            self.0.insert(k, v);
        }
    }

    /// The values a pull's merge dropped, by field (`syncConflicts`): the
    /// ones recorded before, with `conflicts` over them.
    pub fn add_sync_conflicts(&mut self, conflicts: Vec<(String, Value)>) {
        let mut recorded: std::collections::BTreeMap<String, Value> = self
            .0
            .get(SYNC_CONFLICTS)
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for (field, dropped) in conflicts {
            recorded.insert(field, dropped);
        }
        self.set(
            SYNC_CONFLICTS,
            Value::Object(recorded.into_iter().collect()),
        );
    }
}

/// A config's `grove` section (`.agent/config.json`, or grove's own), read.
#[derive(Debug, Clone, Copy)]
pub struct ConfigSection<'a>(Option<&'a Value>);

impl<'a> ConfigSection<'a> {
    /// The section of a config's fields (none when missing).
    pub fn of(config: &'a Extra) -> Self {
        ConfigSection(config.get(KEY))
    }

    /// The section as it is, when there is one.
    pub fn value(&self) -> Option<&'a Value> {
        self.0
    }

    /// `branchPrefix`: the prefix of the branches grove names.
    pub fn branch_prefix(&self) -> Option<&'a str> {
        self.0?.get("branchPrefix")?.as_str()
    }

    /// `branchTemplate`: how the branches grove names are made.
    pub fn branch_template(&self) -> Option<&'a str> {
        self.0?.get("branchTemplate")?.as_str()
    }

    /// A `true`/`false` switch of the section (`copyIgnored`, …), when set.
    pub fn switch(&self, key: &str) -> Option<bool> {
        self.0?.get(key)?.as_bool()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_grove_does_not_know_are_kept_and_a_foreign_value_nested() {
        let mut metadata: Extra =
            serde_json::from_str(r#"{"grove": {"future": [1, {"x": 2}], "share": "no"}}"#).unwrap();
        ThreadSectionMut::of(&mut metadata).set_ports(&[3000]);
        assert_eq!(
            serde_json::to_string(&metadata).unwrap(),
            r#"{"grove":{"future":[1,{"x":2}],"ports":[3000],"share":"no"}}"#
        );
        // A known field of another shape reads as absent, and stays.
        assert_eq!(ThreadSection::of(Some(&metadata)).share(), None);
        assert_eq!(ThreadSection::of(Some(&metadata)).ports(), [3000]);

        let mut foreign: Extra = serde_json::from_str(r#"{"grove": "theirs"}"#).unwrap();
        ThreadSectionMut::of(&mut foreign).set_stats_length(7);
        assert_eq!(
            serde_json::to_string(&foreign).unwrap(),
            r#"{"grove":{"previous":"theirs","statsLength":7}}"#
        );
        assert_eq!(ThreadSection::of(Some(&foreign)).stats_length(), Some(7));
    }

    #[test]
    fn a_background_run_replaces_its_own_entry_and_keeps_the_others() {
        let mut metadata: Extra = serde_json::from_str(
            r#"{"grove": {"backgroundSetup": [{"key": "user-setup-1", "label": "u",
                "state": "ok", "startedAt": "t", "future": 1}, "not a run"]}}"#,
        )
        .unwrap();
        let mut run = BackgroundRun {
            key: "post-setup-1".into(),
            label: "cargo fetch".into(),
            state: BackgroundState::Running,
            pid: Some(10),
            waiter_pid: Some(9),
            started_at: "t".into(),
            ended_at: None,
            exit_code: None,
            log_file: None,
            reason: None,
            extra: Extra::new(),
        };
        ThreadSectionMut::of(&mut metadata).set_background_run(&run);
        run.state = BackgroundState::Failed;
        run.exit_code = Some(2);
        ThreadSectionMut::of(&mut metadata).set_background_run(&run);
        let runs = ThreadSection::of(Some(&metadata)).background_setup();
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert_eq!(runs[0].extra["future"], 1, "unknown fields kept");
        assert_eq!(runs[1].state, BackgroundState::Failed);
        assert_eq!(runs[1].exit_code, Some(2));
        assert_eq!(metadata["grove"]["backgroundSetup"][1], "not a run");
    }

    #[test]
    fn conflicts_recorded_before_are_kept_under_new_ones() {
        let mut metadata: Extra =
            serde_json::from_str(r#"{"grove": {"syncConflicts": {"a": 1, "b": 2}}}"#).unwrap();
        ThreadSectionMut::of(&mut metadata).add_sync_conflicts(vec![("b".into(), Value::from(3))]);
        assert_eq!(
            metadata["grove"]["syncConflicts"],
            serde_json::json!({"a": 1, "b": 3})
        );
    }
}
