//! OpenCode's SQLite database (1.18 and later):
//! `~/.local/share/opencode/opencode.db`, `session`, `message` and `part`
//! rows whose `data` column holds the records the older `storage/` files
//! held (less the ids, which are columns now).
//!
//! Opened read only and read in one transaction: OpenCode may be writing
//! (WAL) meanwhile, and grove sees one consistent state and never blocks it
//! for long (a busy database is waited for a few seconds).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value, json};

use super::Session;
use crate::error::{Error, Result};
use crate::import::Summary;

/// How long a read waits for OpenCode to finish a write.
const BUSY: Duration = Duration::from_secs(5);

/// Whether `path` is an SQLite database (by its header).
pub(super) fn is_database(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

fn sql_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Other(format!(
        "reading OpenCode's database {}: {e}",
        path.display()
    ))
}

/// The database at `path`, opened read only, waiting [`BUSY`] for a write.
fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| sql_error(path, e))?;
    conn.busy_timeout(BUSY).map_err(|e| sql_error(path, e))?;
    Ok(conn)
}

/// The ids of session `root` and of its subagents' sessions, at any depth.
const TREE: &str = "WITH RECURSIVE tree(id) AS (SELECT id FROM session WHERE id = ?1 \
     UNION SELECT s.id FROM session s JOIN tree t ON s.parent_id = t.id)";

/// Every session of the database at `path` (only session `only` and its
/// subagents' when given), oldest first, with its messages and their parts.
pub(super) fn sessions(
    path: &Path,
    only: Option<&str>,
    summary: &mut Summary,
) -> Result<Vec<Session>> {
    let mut conn = open(path)?;
    let read = conn.transaction().map_err(|e| sql_error(path, e))?;
    let infos = session_rows(&read, path, only)?;
    let mut out = Vec::with_capacity(infos.len());
    for info in infos {
        let Some(id) = info.get("id").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let mut parts = part_rows(&read, path, &id, summary)?;
        let messages = message_rows(&read, path, &id, summary)?
            .into_iter()
            .map(|m| {
                let own = m
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|mid| parts.remove(mid))
                    .unwrap_or_default();
                (m, own)
            })
            .collect();
        let updated = info
            .get("time")
            .and_then(|t| t.get("updated"))
            .and_then(Value::as_i64);
        out.push(Session {
            info,
            messages,
            live: updated.is_some_and(recent),
        });
    }
    Ok(out)
}

/// Whether a time in milliseconds is within the last hour (as a session
/// file's modification time is for the older storage).
fn recent(millis: i64) -> bool {
    let now = jiff::Timestamp::now().as_millisecond();
    now - millis < 3_600_000
}

/// The `session` rows (of the tree of `only`, when given) as the records
/// `opencode export` gives.
fn session_rows(
    conn: &Connection,
    path: &Path,
    only: Option<&str>,
) -> Result<Vec<Map<String, Value>>> {
    let sql = match only {
        Some(_) => format!(
            "{TREE} SELECT * FROM session WHERE id IN (SELECT id FROM tree) ORDER BY time_created, id"
        ),
        None => "SELECT * FROM session WHERE ?1 IS NULL ORDER BY time_created, id".to_string(),
    };
    let mut stmt = conn.prepare(&sql).map_err(|e| sql_error(path, e))?;
    let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let rows = stmt
        .query_map([only], |row| {
            let mut columns = HashMap::new();
            for (i, name) in names.iter().enumerate() {
                columns.insert(name.clone(), json_of(row.get_ref(i)?));
            }
            Ok(columns)
        })
        .map_err(|e| sql_error(path, e))?;
    let mut out = Vec::new();
    for row in rows {
        out.push(session_record(row.map_err(|e| sql_error(path, e))?));
    }
    Ok(out)
}

/// A column's value as JSON; text holding a JSON object or array (`model`,
/// `permission`, `revert`…) is parsed.
fn json_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) => {
            let text = String::from_utf8_lossy(t);
            match text.trim_start().chars().next() {
                Some('{' | '[') => serde_json::from_str(&text).unwrap_or(Value::from(text)),
                _ => Value::from(text),
            }
        }
        ValueRef::Blob(b) => Value::from(base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            b,
        )),
    }
}

/// A session row's columns in the shape of a session record: `tokens_*`
/// into `tokens`, `summary_*` into `summary`, `time_*` into `time`,
/// `project_id` → `projectID`, `parent_id` → `parentID`, and the rest under
/// their names. Empty columns are left out.
fn session_record(mut columns: HashMap<String, Value>) -> Map<String, Value> {
    let mut take = |name: &str| columns.remove(name).filter(|v| !v.is_null());
    let mut info = Map::new();
    let put = |info: &mut Map<String, Value>, key: &str, v: Option<Value>| {
        if let Some(v) = v {
            info.insert(key.to_string(), v);
        }
    };
    for (column, key) in [
        ("id", "id"),
        ("slug", "slug"),
        ("project_id", "projectID"),
        ("workspace_id", "workspaceID"),
        ("parent_id", "parentID"),
        ("directory", "directory"),
        ("path", "path"),
        ("title", "title"),
        ("version", "version"),
        ("agent", "agent"),
        ("model", "model"),
        ("cost", "cost"),
        ("permission", "permission"),
        ("revert", "revert"),
        ("metadata", "metadata"),
    ] {
        let v = take(column);
        put(&mut info, key, v);
    }
    let mut cache = Map::new();
    put(&mut cache, "read", take("tokens_cache_read"));
    put(&mut cache, "write", take("tokens_cache_write"));
    let mut tokens = Map::new();
    put(&mut tokens, "input", take("tokens_input"));
    put(&mut tokens, "output", take("tokens_output"));
    put(&mut tokens, "reasoning", take("tokens_reasoning"));
    if !cache.is_empty() {
        tokens.insert("cache".into(), Value::Object(cache));
    }
    if !tokens.is_empty() {
        info.insert("tokens".into(), Value::Object(tokens));
    }
    let mut summary = Map::new();
    for (column, key) in [
        ("summary_additions", "additions"),
        ("summary_deletions", "deletions"),
        ("summary_files", "files"),
        ("summary_diffs", "diffs"),
    ] {
        let v = take(column);
        put(&mut summary, key, v);
    }
    if !summary.is_empty() {
        info.insert("summary".into(), Value::Object(summary));
    }
    if let Some(url) = take("share_url") {
        info.insert("share".into(), json!({ "url": url }));
    }
    let mut time = Map::new();
    for (column, key) in [
        ("time_created", "created"),
        ("time_updated", "updated"),
        ("time_compacting", "compacting"),
        ("time_archived", "archived"),
    ] {
        let v = take(column);
        put(&mut time, key, v);
    }
    info.insert("time".into(), Value::Object(time));
    // Columns of a later version, as they are.
    let mut rest: Vec<(String, Value)> =
        columns.into_iter().filter(|(_, v)| !v.is_null()).collect();
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    info.extend(rest);
    info
}

/// The messages of session `session`, in the order they were made, each
/// its `data` record with its `id` and `sessionID`.
fn message_rows(
    conn: &Connection,
    path: &Path,
    session: &str,
    summary: &mut Summary,
) -> Result<Vec<Map<String, Value>>> {
    let mut stmt = conn
        .prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")
        .map_err(|e| sql_error(path, e))?;
    let rows = stmt
        .query_map([session], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(|e| sql_error(path, e))?;
    let mut out = Vec::new();
    for row in rows {
        let (id, data) = row.map_err(|e| sql_error(path, e))?;
        let Some(mut record) = record_of(path, "message", &id, &data, summary) else {
            continue;
        };
        record.insert("id".into(), Value::from(id));
        record.insert("sessionID".into(), Value::from(session));
        out.push(record);
    }
    Ok(out)
}

/// The parts of session `session`, by message, each in the order it was
/// made (OpenCode's ids grow with time).
fn part_rows(
    conn: &Connection,
    path: &Path,
    session: &str,
    summary: &mut Summary,
) -> Result<HashMap<String, Vec<Map<String, Value>>>> {
    let mut stmt = conn
        .prepare("SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY id")
        .map_err(|e| sql_error(path, e))?;
    let rows = stmt
        .query_map([session], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .map_err(|e| sql_error(path, e))?;
    let mut out: HashMap<String, Vec<Map<String, Value>>> = HashMap::new();
    for row in rows {
        let (id, message, data) = row.map_err(|e| sql_error(path, e))?;
        let Some(mut record) = record_of(path, "part", &id, &data, summary) else {
            continue;
        };
        record.insert("id".into(), Value::from(id));
        record.insert("messageID".into(), Value::from(message.clone()));
        record.insert("sessionID".into(), Value::from(session));
        out.entry(message).or_default().push(record);
    }
    Ok(out)
}

/// A row's `data` as a JSON object; anything else is named in the summary
/// and left out.
fn record_of(
    path: &Path,
    kind: &str,
    id: &str,
    data: &str,
    summary: &mut Summary,
) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(o)) => Some(o),
        Ok(_) => {
            summary.errors.push(format!(
                "{}: {kind} {id}: its data is not a JSON object",
                path.display()
            ));
            summary.skip(kind, "data not an object".into());
            None
        }
        Err(e) => {
            summary.errors.push(format!(
                "{}: {kind} {id}: its data is not JSON: {e}",
                path.display()
            ));
            summary.skip(kind, "data not JSON".into());
            None
        }
    }
}

/// A number that changes whenever session `id` or a subagent session of it
/// changes in the database at `path` (a row added, updated or grown): how
/// far a capture read, as a file's length is for the agents that write
/// files. `None` when the database has no such session.
pub(super) fn progress(path: &Path, id: &str) -> Result<Option<u64>> {
    let conn = open(path)?;
    let sql = format!(
        "{TREE} SELECT \
           (SELECT count(*) || ':' || coalesce(max(time_updated), 0) FROM session \
              WHERE id IN (SELECT id FROM tree)), \
           (SELECT count(*) || ':' || coalesce(max(time_updated), 0) FROM message \
              WHERE session_id IN (SELECT id FROM tree)), \
           (SELECT count(*) || ':' || coalesce(max(time_updated), 0) || ':' \
              || coalesce(sum(length(data)), 0) FROM part WHERE session_id IN (SELECT id FROM tree))"
    );
    let (sessions, messages, parts): (String, String, String) = conn
        .query_row(&sql, [id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(|e| sql_error(path, e))?;
    if sessions.starts_with("0:") {
        return Ok(None);
    }
    let key = format!("{sessions}|{messages}|{parts}");
    // Never 0: a session captured is told from one never read by it.
    Ok(Some(xxhash_rust::xxh3::xxh3_64(key.as_bytes()) | 1))
}

/// The sessions (not subagents') run in `dir` and changed since `since`
/// (milliseconds since the epoch), oldest first.
pub(super) fn sessions_in(path: &Path, dir: &Path, since: i64) -> Result<Vec<String>> {
    let conn = open(path)?;
    let mut names = vec![dir.to_string_lossy().into_owned()];
    if let Ok(real) = std::fs::canonicalize(dir) {
        names.push(real.to_string_lossy().into_owned());
    }
    let mut stmt = conn
        .prepare(
            "SELECT id FROM session WHERE parent_id IS NULL AND directory IN (?1, ?2) \
             AND time_updated >= ?3 ORDER BY time_created, id",
        )
        .map_err(|e| sql_error(path, e))?;
    let second = names.get(1).unwrap_or(&names[0]).clone();
    let rows = stmt
        .query_map(rusqlite::params![names[0], second, since], |r| {
            r.get::<_, String>(0)
        })
        .map_err(|e| sql_error(path, e))?;
    rows.map(|r| r.map_err(|e| sql_error(path, e))).collect()
}

/// Whether session `session` of the database at `path` holds message `id`.
pub(super) fn has_message(path: &Path, session: &str, id: &str) -> Result<bool> {
    let conn = open(path)?;
    conn.query_row(
        "SELECT count(*) FROM message WHERE id = ?1 AND session_id = ?2",
        [id, session],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(|e| sql_error(path, e))
}

/// The session at the top of `id`'s parents (a subagent's session is its
/// parent's); `None` when the database has no session `id`.
pub(super) fn root_of(path: &Path, id: &str) -> Result<Option<String>> {
    let conn = open(path)?;
    let sql = "WITH RECURSIVE up(id, parent, depth) AS (\
         SELECT id, parent_id, 0 FROM session WHERE id = ?1 \
         UNION SELECT s.id, s.parent_id, up.depth + 1 FROM session s JOIN up ON s.id = up.parent \
         WHERE up.depth < 64) \
         SELECT id FROM up WHERE parent IS NULL ORDER BY depth DESC LIMIT 1";
    match conn.query_row(sql, [id], |r| r.get::<_, String>(0)) {
        Ok(root) => Ok(Some(root)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(sql_error(path, e)),
    }
}
