//! Which hook calls mark a boundary of the agent's turn, and the snapshot
//! each takes (see [`crate::snapshot`]).
//!
//! A prompt submitted (Claude Code's and Codex's `UserPromptSubmit`, Gemini
//! CLI's `BeforeAgent`, OpenCode's session turning busy), a tool run
//! (`PostToolUse` and a failed tool's `PostToolUseFailure`, `AfterTool`,
//! OpenCode's `tool.execute.after`) and the turn's end (`Stop`,
//! `AfterAgent`, OpenCode's `session.idle`). After a tool the snapshot is
//! skipped only for tools known to read alone: the names of the tools that
//! write differ between agents and their versions (Codex's shell is
//! `Bash`, `shell`, `exec_command`; an MCP server's tool may write), and a
//! write missed would be put on the next call's account, where a needless
//! snapshot costs a few milliseconds.

use crate::error::Result;
use crate::project::Project;
use crate::snapshot::{self, At, Moment, Record};
use crate::store::Thread;

/// Tools that only read (compared without case), across the agents.
const READ_ONLY: &[&str] = &[
    // Claude Code
    "read",
    "glob",
    "grep",
    "ls",
    "webfetch",
    "websearch",
    "todowrite",
    "todoread",
    "exitplanmode",
    "askuserquestion",
    "bashoutput",
    // Codex
    "view_image",
    "update_plan",
    "web_search",
    // Gemini CLI
    "read_file",
    "read_many_files",
    "list_directory",
    "search_file_content",
    "google_web_search",
    "web_fetch",
    "write_todos",
    // OpenCode
    "list",
    "todo",
];

/// The boundary a hook of `event` marks, for the tool `tool` it names.
/// A subagent's (`own` false) prompts and ends are not its task's turn:
/// only its tool calls count.
pub fn boundary(event: &str, tool: Option<&str>, own: bool) -> Option<At> {
    let at = match event {
        "UserPromptSubmit" | "BeforeAgent" | "session.status.busy" => At::Prompt,
        "PostToolUse" | "PostToolUseFailure" | "AfterTool" | "tool.execute.after" => {
            if tool.is_some_and(|t| READ_ONLY.contains(&t.to_ascii_lowercase().as_str())) {
                return None;
            }
            At::ToolCall
        }
        "Stop" | "AfterAgent" | "session.idle" => At::TurnEnd,
        _ => return None,
    };
    (own || at == At::ToolCall).then_some(at)
}

/// What of a hook call decides its snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Hook<'a> {
    pub event: &'a str,
    /// The tool a tool event names.
    pub tool: Option<&'a str>,
    /// The call a tool event names.
    pub tool_call_id: Option<&'a str>,
    /// The session captured.
    pub session: Option<&'a str>,
    /// The event is the task's own session's, not a subagent's.
    pub own: bool,
}

/// Takes the snapshot a hook call marks, if it marks one, and records it
/// on `thread` for the next captured message.
pub fn on_hook(project: &Project, thread: &Thread, hook: &Hook<'_>) -> Result<Option<Record>> {
    let Some(at) = boundary(hook.event, hook.tool, hook.own) else {
        return Ok(None);
    };
    // Outside a repository there is nothing to snapshot into; a user may
    // have turned snapshots off (an unreadable config stopped grove earlier).
    let off = crate::userconfig::get().is_ok_and(|c| c.turn_snapshots == Some(false));
    if project.git.is_none() || off {
        return Ok(None);
    }
    let for_call = |v: Option<&str>| v.filter(|_| at == At::ToolCall).map(str::to_string);
    let moment = Moment {
        tool_call_id: for_call(hook.tool_call_id),
        tool: for_call(hook.tool),
        session_id: hook.session.map(str::to_string),
    };
    let record = snapshot::take(&project.root, thread, at, &moment)?;
    snapshot::pend(thread, &record)?;
    Ok(Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_of_every_agent_and_tools_that_only_read_are_skipped() {
        assert_eq!(boundary("UserPromptSubmit", None, true), Some(At::Prompt));
        assert_eq!(boundary("BeforeAgent", None, true), Some(At::Prompt));
        assert_eq!(
            boundary("PostToolUse", Some("Edit"), true),
            Some(At::ToolCall)
        );
        assert_eq!(
            boundary("PostToolUse", Some("apply_patch"), true),
            Some(At::ToolCall)
        );
        assert_eq!(boundary("PostToolUse", Some("Read"), true), None);
        assert_eq!(boundary("AfterTool", Some("read_file"), true), None);
        assert_eq!(
            boundary("tool.execute.after", None, false),
            Some(At::ToolCall),
            "a subagent's tool call is the task's too"
        );
        assert_eq!(boundary("Stop", None, true), Some(At::TurnEnd));
        assert_eq!(boundary("session.idle", None, false), None);
        assert_eq!(boundary("PreToolUse", Some("Edit"), true), None);
        assert_eq!(boundary("SessionStart", None, true), None);
    }
}
