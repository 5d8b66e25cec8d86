//! A pull request's description written from a task's thread: what was
//! asked, what each turn did, the forks and handoffs along the way (the
//! decisions and the approaches left behind), how it was tested, and what
//! the branch changes — for a reviewer who was not in the conversation.
//!
//! Everything comes from the thread and the repository; nothing is made
//! up. A turn is a person's prompt and what the agent did until the next
//! one; its summary is the first paragraph of the agent's last text.

use serde::Serialize;

use crate::atsf::{RelationKind, RelationRole, Role, ThreadMeta, ToolStatus};
use crate::error::Result;
use crate::git::Repo;
use crate::graph::Graph;
use crate::store::Thread;

/// The longest summary a turn gets, in characters.
const SUMMARY_CHARS: usize = 400;

/// A pull request's description, as data.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    pub thread_id: String,
    pub title: String,
    pub agent: String,
    pub branch: Option<String>,
    /// Every prompt of the person, in order.
    pub asked: Vec<String>,
    pub turns: Vec<Turn>,
    pub decisions: Vec<Decision>,
    pub tests: Vec<TestRun>,
    /// `git diff --stat` of the branch against the commit it started from.
    pub changes: Option<String>,
}

/// One turn: its prompt's first line and what the agent said it did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Index of the prompt's message.
    pub index: u64,
    pub prompt: String,
    /// The first paragraph of the agent's last text in the turn.
    pub summary: Option<String>,
    /// Tool calls the agent made in the turn.
    pub tool_calls: usize,
}

/// A fork or handoff of the thread, either way.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `fork` or `handoff`.
    pub kind: String,
    /// Whether this thread came from the other (`from`) or led to it (`to`).
    pub direction: String,
    pub thread_id: String,
    pub title: Option<String>,
    pub message_index: Option<u64>,
    pub comment: Option<String>,
    /// The other thread was archived: an approach left behind.
    pub archived: bool,
}

/// A test command the agent ran, and how it ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestRun {
    pub index: u64,
    pub command: String,
    pub status: String,
}

/// The description of `thread`'s task. `graph` names related threads (and
/// tells which were archived); `repo` gives the branch's changes.
pub fn describe(
    thread: &Thread,
    graph: Option<&Graph>,
    repo: Option<&Repo>,
) -> Result<Description> {
    let meta = thread.meta()?;
    let mut turns: Vec<Turn> = Vec::new();
    let mut asked = Vec::new();
    let mut tests = Vec::new();
    for (index, message) in (0u64..).zip(thread.messages()?) {
        let message = message?;
        let text = message.text();
        if message.role == Role::User && !text.trim().is_empty() {
            asked.push(text.trim().to_string());
            turns.push(Turn {
                index,
                prompt: first_line(&text),
                summary: None,
                tool_calls: 0,
            });
            continue;
        }
        let Some(turn) = turns.last_mut() else {
            continue;
        };
        if message.role == Role::Agent && !text.trim().is_empty() {
            turn.summary = Some(summary(&text));
        }
        turn.tool_calls += message.tool_call_count();
        for call in message.tool_calls.iter().flatten() {
            if let Some(command) = call.input.as_deref().and_then(test_command) {
                tests.push(TestRun {
                    index,
                    command,
                    status: match &call.status {
                        ToolStatus::Completed => "passed".into(),
                        ToolStatus::Failed => "failed".into(),
                        other => other.as_str().to_string(),
                    },
                });
            }
        }
    }
    Ok(Description {
        thread_id: meta.thread_id.clone(),
        title: meta.title.clone(),
        agent: meta.agent.id.clone(),
        branch: meta.context.git_branch.clone(),
        asked,
        turns,
        decisions: decisions(&meta, graph),
        tests,
        changes: repo.and_then(|r| changes(r, &meta)),
    })
}

fn decisions(meta: &ThreadMeta, graph: Option<&Graph>) -> Vec<Decision> {
    meta.relationships()
        .iter()
        .filter(|r| matches!(r.kind, RelationKind::Fork | RelationKind::Handoff))
        .map(|r| {
            let node = graph.and_then(|g| g.node(&r.thread_id));
            Decision {
                kind: r.kind.as_str().to_string(),
                // This thread's role: a child came from the other thread.
                direction: match r.role {
                    RelationRole::Child => "from".into(),
                    RelationRole::Parent => "to".into(),
                },
                thread_id: r.thread_id.clone(),
                title: node.and_then(|n| n.title.clone()),
                message_index: r.message_index,
                comment: r.comment.clone(),
                archived: node.is_some_and(|n| n.archived),
            }
        })
        .collect()
}

/// What the branch changes since the commit the task started from.
fn changes(repo: &Repo, meta: &ThreadMeta) -> Option<String> {
    let branch = meta.context.git_branch.as_deref()?;
    let base = meta.context.base_commit()?;
    // Names from a thread are checked before git sees them.
    if !crate::git::is_object_id(base) || branch.starts_with('-') {
        return None;
    }
    let range = format!("{base}...refs/heads/{branch}");
    let out = repo
        .git
        .output(
            &repo.main_root,
            &["diff", "--stat", "--end-of-options", &range],
        )
        .ok()?;
    let stat = out.stdout.trim_end();
    (out.success && !stat.is_empty()).then(|| stat.to_string())
}

/// The command of a tool call's input when it runs a test suite.
fn test_command(input: &str) -> Option<String> {
    const RUNNERS: [&str; 18] = [
        "cargo test",
        "cargo nextest",
        "npm test",
        "npm run test",
        "pnpm test",
        "yarn test",
        "pytest",
        "python -m pytest",
        "go test",
        "make test",
        "make check",
        "jest",
        "vitest",
        "mvn test",
        "gradle test",
        "rspec",
        "dotnet test",
        "phpunit",
    ];
    // A shell tool's input is JSON with the command in it, or the command.
    let command = serde_json::from_str::<serde_json::Value>(input)
        .ok()
        .and_then(|v| {
            ["command", "cmd"].iter().find_map(|k| match &v[*k] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Array(a) => Some(
                    a.iter()
                        .filter_map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            })
        })
        .unwrap_or_else(|| input.to_string());
    let line = first_line(&command);
    // The runner starts a command: at the start, after a separator, or
    // after what runs a command (`bash -lc`, `npx`, `uv run`…); and it is a
    // word of its own (`cat pytest.ini` runs no test).
    let starts_command = |before: &str| {
        let before = before.trim_end();
        before.is_empty()
            || before.ends_with(['&', ';', '|', '('])
            || ["-c", "-lc", "npx", "run", "exec", "time", "env"]
                .iter()
                .any(|w| before.ends_with(w))
    };
    RUNNERS
        .iter()
        .any(|r| {
            line.match_indices(r).any(|(at, _)| {
                let after = line[at + r.len()..].chars().next();
                starts_command(&line[..at]) && after.is_none_or(char::is_whitespace)
            })
        })
        .then_some(line)
}

fn first_line(text: &str) -> String {
    text.trim()
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The first paragraph of `text`, at most [`SUMMARY_CHARS`] characters.
fn summary(text: &str) -> String {
    let paragraph = text.trim().split("\n\n").next().unwrap_or_default().trim();
    match paragraph.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &paragraph[..cut]),
        None => paragraph.to_string(),
    }
}

impl Description {
    /// Every text the description holds, whole (the Markdown shortens some):
    /// what a scan for secrets must read.
    pub fn all_text(&self) -> String {
        let mut all = vec![self.markdown()];
        all.extend(self.asked.iter().cloned());
        all.extend(self.decisions.iter().filter_map(|d| d.comment.clone()));
        all.join("\n")
    }

    /// The description in Markdown, as a pull request's body takes it.
    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n\n## What was asked\n\n", self.title);
        match self.asked.split_first() {
            Some((first, rest)) => {
                md.push_str(&quote(first));
                if !rest.is_empty() {
                    md.push_str("\nThen:\n");
                    for later in rest {
                        md.push_str(&format!("- {}\n", first_line(later)));
                    }
                }
            }
            None => md.push_str("No prompt was recorded.\n"),
        }
        md.push_str("\n## What was done\n\n");
        if self.turns.is_empty() {
            md.push_str("No turn was recorded.\n");
        }
        for (n, turn) in self.turns.iter().enumerate() {
            let summary = turn.summary.as_deref().unwrap_or("(no reply recorded)");
            md.push_str(&format!("{}. {summary}\n", n + 1));
        }
        md.push_str("\n## Decisions and approaches left behind\n\n");
        if self.decisions.is_empty() {
            md.push_str("No fork or handoff.\n");
        }
        for d in &self.decisions {
            let name = d.title.as_deref().unwrap_or(&d.thread_id);
            let what = match (d.kind.as_str(), d.direction.as_str()) {
                ("fork", "to") => "Forked into",
                ("fork", _) => "Forked from",
                ("handoff", "to") => "Handed off to",
                _ => "Handed off from",
            };
            let mut line = format!("- {what} \"{name}\" (thread {})", short(&d.thread_id));
            if let Some(i) = d.message_index {
                line.push_str(&format!(" at message {i}"));
            }
            if d.archived {
                line.push_str(", archived: an approach left behind");
            }
            if let Some(c) = d.comment.as_deref().filter(|c| !c.trim().is_empty()) {
                line.push_str(&format!(": {}", first_line(c)));
            }
            md.push_str(&line);
            md.push('\n');
        }
        md.push_str("\n## How it was tested\n\n");
        if self.tests.is_empty() {
            md.push_str("No test run was recorded in the conversation.\n");
        }
        for t in &self.tests {
            md.push_str(&format!(
                "- `{}`: {} (message {})\n",
                t.command.replace('`', "'"),
                t.status,
                t.index
            ));
        }
        if let Some(stat) = &self.changes {
            md.push_str(&format!("\n## Changes\n\n```\n{stat}\n```\n"));
        }
        md.push_str(&format!(
            "\n---\nWritten by grove from thread {} ({}{}).\n",
            self.thread_id,
            self.agent,
            self.branch
                .as_deref()
                .map(|b| format!(", branch {b}"))
                .unwrap_or_default()
        ));
        md
    }
}

fn quote(text: &str) -> String {
    text.trim().lines().map(|l| format!("> {l}\n")).collect()
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_commands_are_found_in_shell_inputs_and_others_are_not() {
        let found = |i: &str| test_command(i);
        assert_eq!(
            found(r#"{"command":"cd app && cargo test -q"}"#).as_deref(),
            Some("cd app && cargo test -q")
        );
        assert_eq!(
            found(r#"{"command":["bash","-lc","npm test"]}"#).as_deref(),
            Some("bash -lc npm test")
        );
        assert_eq!(found("pytest tests/").as_deref(), Some("pytest tests/"));
        assert_eq!(found(r#"{"command":"cat pytest.ini"}"#), None);
        assert_eq!(found(r#"{"file_path":"src/main.rs"}"#), None);
        assert_eq!(found("echo go testing"), None);
        assert_eq!(found("echo running pytest later"), None);
        assert_eq!(
            found("uv run pytest -x").as_deref(),
            Some("uv run pytest -x")
        );
    }

    #[test]
    fn a_summary_is_the_first_paragraph_and_is_cut_on_a_character() {
        assert_eq!(summary("Fixed it.\n\nDetails follow."), "Fixed it.");
        let long = "é".repeat(SUMMARY_CHARS + 5);
        let s = summary(&long);
        assert_eq!(s.chars().count(), SUMMARY_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
