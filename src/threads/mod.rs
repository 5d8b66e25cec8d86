//! Building new threads: their metadata envelope and first messages.

pub mod sessions;

use crate::atsf::{self, Agent, Context, Extra, Stats, ThreadMeta};
use crate::store::new_thread_id;

/// Agent id used when neither the command nor `defaults.agentId` names one.
pub const UNKNOWN_AGENT: &str = "unknown";

/// A `thread.json` for a new thread with a fresh UUID v4 id, created now.
pub fn new_meta(title: &str, agent_id: &str, context: Context) -> ThreadMeta {
    let now = atsf::now_timestamp();
    ThreadMeta {
        spec_version: atsf::SPEC_VERSION.to_string(),
        thread_id: new_thread_id(),
        title: title.to_string(),
        created_at: now.clone(),
        updated_at: now,
        agent: Agent {
            id: agent_id.to_string(),
            name: agent_display_name(agent_id),
            version: None,
            protocol: None,
            protocol_version: None,
            extra: Extra::new(),
        },
        context,
        stats: Stats::default(),
        metadata: Some(Extra::new()),
        v: None,
        archived: None,
        relationships: None,
        origin_thread_id: None,
        fork_point_index: None,
        main_thread_id: None,
        git: None,
        conversation_summary: None,
        files_touched: None,
        next_steps: None,
        extra: Extra::new(),
    }
}

/// A human-readable name for well-known agent ids; the id itself otherwise.
pub fn agent_display_name(id: &str) -> String {
    match id {
        "claude-code" => "Claude Code",
        "codex" | "codex-cli" => "Codex CLI",
        "amp" => "Amp",
        "gemini-cli" => "Gemini CLI",
        "copilot" => "GitHub Copilot",
        "cursor" => "Cursor",
        "aider" => "Aider",
        "opencode" => "opencode",
        _ => id,
    }
    .to_string()
}

/// A title from the first line of a prompt, cut at a word boundary near 72 characters.
///
/// ```
/// assert_eq!(grove::threads::title_from_prompt("Fix the bug\nmore"), "Fix the bug");
/// ```
pub fn title_from_prompt(prompt: &str) -> String {
    const MAX: usize = 72;
    let first = prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if first.chars().count() <= MAX {
        return first.to_string();
    }
    let cut: String = first.chars().take(MAX).collect();
    let cut = match cut.rfind(' ') {
        Some(pos) if pos > MAX / 2 => &cut[..pos],
        _ => &cut,
    };
    format!("{}…", cut.trim_end())
}

/// Creates a thread in `store` and appends `prompts` as its first user
/// messages, in order. Returns the thread and its final metadata.
pub fn start(
    store: &crate::store::Store,
    meta: &ThreadMeta,
    prompts: &[String],
) -> crate::Result<(crate::store::Thread, ThreadMeta)> {
    use crate::atsf::{ContentBlock, Message, Role};
    let thread = store.create_thread(meta)?;
    for prompt in prompts {
        let message = Message::new(Role::User, vec![ContentBlock::text(prompt.clone())]);
        thread.append(message, crate::store::AppendOptions::default())?;
    }
    let meta = thread.meta()?;
    Ok((thread, meta))
}
