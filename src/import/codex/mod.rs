//! OpenAI Codex CLI and Desktop rollout files
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): one line per record,
//! `{timestamp, type, payload}`. How each record maps: see [`items`].
//!
//! Message ids are `<thread>-L<line>`: rollouts are append-only, so a grown
//! file imports only its new lines. A first import reads the file twice,
//! holding one record at a time (once to find where each call's output is,
//! once to write); later imports read only the lines after the last one
//! taken.

mod items;
mod output;
pub(crate) use output::exit_code_in;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use self::items::{At, Carried, Outputs, Reader};
use super::lines::{Line, Lines, Reread};
use super::stream::set_waiting;
use super::{Resumable, Resume, Sink, is_live};
use crate::atsf::{self, Context};
use crate::error::{Error, IoContext, Result};

/// Codex, as a [`super::Format`].
pub struct Codex;

impl super::Format for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn about(&self) -> &'static str {
        "OpenAI Codex CLI and Desktop rollout files"
    }
    fn layout(&self) -> &'static str {
        "a rollout-*.jsonl, or a directory searched for them (~/.codex/sessions)"
    }
    fn sources(&self, path: &Path) -> Result<Vec<PathBuf>> {
        sources(path)
    }
    fn resumable(&self) -> Resumable {
        Resumable::Lines
    }
    fn import(
        &self,
        source: &Path,
        from: Option<&Resume>,
        out: &mut Sink,
    ) -> Result<Option<Resume>> {
        import_file(source, from, out)
    }
}

/// Rollout files under `path` (itself if a file), recursively, sorted:
/// in a directory, only `rollout-*.jsonl` files count.
pub fn sources(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ctx("listing", &dir)? {
            let p = entry.ctx("listing", &dir)?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "jsonl")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What the next import of a rollout needs (kept in its cursor).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    session: String,
    /// `session_meta`'s payload, but its instructions.
    meta: Map<String, Value>,
    created: String,
    #[serde(flatten)]
    carried: Carried,
}

/// Where outputs are in the whole file, read again by offset.
struct FileOutputs {
    at: HashMap<String, (u64, usize)>,
    calls: HashSet<String>,
    reread: Reread,
}

impl Outputs for FileOutputs {
    fn output(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>> {
        let Some(&(offset, len)) = self.at.get(id) else {
            return Ok(None);
        };
        Ok(self.reread.object(offset, len)?.map(|r| (r, offset)))
    }
    fn has_call(&self, id: &str) -> bool {
        self.calls.contains(id)
    }
}

/// The outputs among the new lines, in memory.
struct TailOutputs<'a> {
    records: &'a [(Line, Map<String, Value>)],
    at: HashMap<String, usize>,
    calls: HashSet<String>,
}

impl Outputs for TailOutputs<'_> {
    fn output(&mut self, id: &str) -> Result<Option<(Map<String, Value>, u64)>> {
        Ok(self
            .at
            .get(id)
            .map(|&i| (self.records[i].1.clone(), self.records[i].0.offset)))
    }
    fn has_call(&self, id: &str) -> bool {
        self.calls.contains(id)
    }
}

/// What a line is to the first pass: a call, an output, a response item.
enum Seen {
    Call(String),
    Sink(String),
    Response,
    Other,
}

fn seen(raw: &Map<String, Value>) -> Seen {
    if raw.get("type").and_then(Value::as_str) != Some("response_item") {
        return Seen::Other;
    }
    let p = raw.get("payload");
    let s = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_str);
    let id = s("call_id").or_else(|| s("id")).unwrap_or("").to_string();
    match s("type") {
        Some("function_call" | "custom_tool_call" | "local_shell_call") => Seen::Call(id),
        Some("function_call_output" | "custom_tool_call_output") => Seen::Sink(id),
        Some("message") => Seen::Response,
        _ => Seen::Other,
    }
}

/// Imports a rollout: the lines after `from` when given, else all of it.
fn import_file(path: &Path, from: Option<&Resume>, out: &mut Sink) -> Result<Option<Resume>> {
    let live = is_live(path);
    match from {
        None => import_whole(path, out, live),
        Some(from) => import_tail(path, from, out, live),
    }
}

/// What a pass over the lines found.
#[derive(Default)]
struct Pass {
    meta: Option<Map<String, Value>>,
    first_time: Option<String>,
    responses: bool,
    calls: HashSet<String>,
    outputs: HashMap<String, (u64, usize)>,
    /// (offset, length, number) of each record line (a whole file).
    lines: Vec<(u64, usize, u64)>,
    /// The records themselves (new lines only).
    records: Vec<(Line, Map<String, Value>)>,
    /// Where the lines taken end: (offset, number of the next line).
    end: (u64, u64),
}

impl Pass {
    /// Reads the lines from `offset` (line `line`): the records themselves
    /// when `keep`, else where each one is.
    fn read(
        path: &Path,
        offset: u64,
        line: u64,
        live: bool,
        keep: bool,
        out: &mut Sink,
    ) -> Result<Pass> {
        let mut pass = Pass {
            end: (offset, line.max(1)),
            ..Pass::default()
        };
        let mut lines = Lines::open(path, offset, line)?;
        while let Some(l) = lines.next_line()? {
            if l.is_blank() {
                if l.terminated {
                    pass.end = (l.end(), l.number + 1);
                }
                continue;
            }
            match l.object() {
                Ok(raw) => {
                    pass.take(&l, &raw);
                    pass.end = (l.end(), l.number + 1);
                    if keep {
                        pass.records.push((l, raw));
                    } else {
                        pass.lines.push((l.offset, l.bytes.len(), l.number));
                    }
                    continue;
                }
                // The last line of a running session may still be written.
                Err(_) if !l.terminated && live => break,
                Err(e) => {
                    out.problem(Some(l.number), &e);
                    out.summary()
                        .skip("malformed", "a line that is not a JSON object".into());
                }
            }
            pass.end = (l.end(), l.number + 1);
        }
        Ok(pass)
    }

    fn take(&mut self, l: &Line, raw: &Map<String, Value>) {
        if self.first_time.is_none() {
            self.first_time = raw
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(|t| atsf::normalize_timestamp(t).ok());
        }
        if self.meta.is_none() && raw.get("type").and_then(Value::as_str) == Some("session_meta") {
            self.meta = raw.get("payload").and_then(Value::as_object).cloned();
        }
        match seen(raw) {
            Seen::Call(id) => {
                self.calls.insert(id);
            }
            Seen::Sink(id) => {
                self.outputs.entry(id).or_insert((l.offset, l.bytes.len()));
            }
            Seen::Response => self.responses = true,
            Seen::Other => {}
        }
    }

    /// The line number of the record at `offset`.
    fn line_at(&self, offset: u64) -> u64 {
        self.records
            .iter()
            .find(|(l, _)| l.offset == offset)
            .map(|(l, _)| l.number)
            .or_else(|| {
                self.lines
                    .iter()
                    .find(|(o, _, _)| *o == offset)
                    .map(|(_, _, n)| *n)
            })
            .unwrap_or(self.end.1)
    }
}

/// A whole rollout: where the outputs are first, then every record.
fn import_whole(path: &Path, out: &mut Sink, live: bool) -> Result<Option<Resume>> {
    let pass = Pass::read(path, 0, 1, live, false, out)?;
    if pass.lines.is_empty() {
        return Ok(None);
    }
    let mut meta = pass.meta.clone().unwrap_or_default();
    meta.remove("instructions");
    let session = meta
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let state = State {
        session,
        meta,
        created: pass.first_time.clone().unwrap_or_else(atsf::now_timestamp),
        carried: Carried {
            responses: pass.responses,
            ..Carried::default()
        },
    };
    let (handle, mut reader) = start(path, out, &state, pass.meta.as_ref(), live)?;
    let mut outputs = FileOutputs {
        at: pass.outputs.clone(),
        calls: pass.calls.clone(),
        reread: Reread::open(path)?,
    };
    let mut again = Reread::open(path)?;
    for &(offset, len, line) in &pass.lines {
        if let Some(raw) = again.object(offset, len)? {
            reader.record(out, &At { line, offset }, raw, &mut outputs)?;
        }
    }
    finish(out, handle, reader, &pass, state)
}

/// The lines after the last import, in memory.
fn import_tail(path: &Path, from: &Resume, out: &mut Sink, live: bool) -> Result<Option<Resume>> {
    let mut state: State = serde_json::from_value(from.state.clone())
        .map_err(|e| Error::Restart(format!("the cursor's state does not read: {e}")))?;
    let pass = Pass::read(path, from.offset, from.line, live, true, out)?;
    if pass.records.is_empty() {
        return Ok(Some(Resume {
            offset: pass.end.0,
            line: pass.end.1,
            state: from.state.clone(),
        }));
    }
    state.carried.responses |= pass.responses;
    let (handle, mut reader) = start(path, out, &state, None, live)?;
    let mut outputs = TailOutputs {
        records: &pass.records,
        at: HashMap::new(),
        calls: pass.calls.clone(),
    };
    for (i, (_, raw)) in pass.records.iter().enumerate() {
        if let Seen::Sink(id) = seen(raw) {
            outputs.at.entry(id).or_insert(i);
        }
    }
    for (l, raw) in &pass.records {
        let at = At {
            line: l.number,
            offset: l.offset,
        };
        reader.record(out, &at, raw.clone(), &mut outputs)?;
    }
    finish(out, handle, reader, &pass, state)
}

/// Begins the rollout's thread. `full_meta` is `session_meta` whole (with
/// its instructions), when read.
fn start(
    path: &Path,
    out: &mut Sink,
    state: &State,
    full_meta: Option<&Map<String, Value>>,
    live: bool,
) -> Result<(super::ThreadHandle, Reader)> {
    let thread_id = format!("codex-{}", state.session);
    let payload = full_meta.unwrap_or(&state.meta);
    let meta = thread_meta(&thread_id, &state.session, payload, &state.created, path);
    let handle = out.begin(meta)?;
    let reader = Reader::new(handle, &thread_id, live, state.carried.clone());
    Ok((handle, reader))
}

/// Ends the thread and says where the next import starts.
fn finish(
    out: &mut Sink,
    handle: super::ThreadHandle,
    reader: Reader,
    pass: &Pass,
    state: State,
) -> Result<Option<Resume>> {
    let (unconsumed, waiting, carried) = reader.end(out);
    let cut = unconsumed.unwrap_or(pass.end.0);
    out.set_offset(cut);
    if let Some(m) = out.meta_mut(handle) {
        m.title = carried.first_prompt.clone().unwrap_or_else(|| {
            format!(
                "Codex session {}",
                state.session.chars().take(8).collect::<String>()
            )
        });
        set_waiting(m, waiting);
        if let Some(tc) = &carried.turn_context
            && let Some(Value::Object(c)) = m.metadata_mut().get_mut("codex")
        {
            c.insert("turnContext".into(), tc.clone());
        }
        if let Some(totals) = carried.thread_totals()
            && let Some(Value::Object(i)) = m.metadata_mut().get_mut("import")
        {
            // The session's totals as Codex last gave them, in the named
            // counts of a message's tokens.
            let named = atsf::Tokens::from_counts(totals);
            i.insert(
                "tokens".into(),
                serde_json::to_value(named).unwrap_or(Value::Null),
            );
        }
    }
    out.finish(handle)?;
    Ok(Some(Resume {
        offset: cut,
        line: pass.line_at(cut),
        state: serde_json::to_value(State { carried, ..state }).unwrap_or(Value::Null),
    }))
}

fn thread_meta(
    id: &str,
    session: &str,
    payload: &Map<String, Value>,
    created: &str,
    path: &Path,
) -> atsf::ThreadMeta {
    let s = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let git = payload.get("git").and_then(Value::as_object);
    let mut meta = crate::threads::new_meta(
        "",
        "codex",
        Context {
            working_dir: s(payload, "cwd").unwrap_or_default(),
            git_branch: git.and_then(|g| s(g, "branch")),
            git_commit: git.and_then(|g| s(g, "commit_hash")),
            ..Context::default()
        },
    );
    meta.thread_id = id.to_string();
    meta.agent.version = s(payload, "cli_version");
    if let Some(url) = git.and_then(|g| s(g, "repository_url")) {
        meta.context
            .extra
            .insert("remoteUrl".into(), Value::from(url));
    }
    meta.origin_thread_id = s(payload, "forked_from_id").map(|p| format!("codex-{p}"));
    meta.created_at = created.to_string();
    meta.updated_at = created.to_string();
    meta.metadata_mut()
        .insert("codex".into(), Value::Object(payload.clone()));
    meta.metadata_mut().insert(
        "import".into(),
        json!({"format": "codex", "source": path, "sourceId": session}),
    );
    meta
}
