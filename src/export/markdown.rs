//! Markdown a person pastes into an issue: the conversation as text, tool
//! calls and thinking folded in `<details>`, code fences long enough for
//! whatever the content holds.

use std::io::Write;

use super::{Renderer, tool_summary};
use crate::atsf::{ContentBlock, Message, Role, ThreadMeta};

#[derive(Default)]
pub(super) struct Markdown;

/// A fence of backticks longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn code(out: &mut dyn Write, label: &str, text: &str) -> std::io::Result<()> {
    let f = fence(text);
    writeln!(
        out,
        "**{label}**\n\n{f}\n{}\n{f}\n",
        text.trim_end_matches('\n')
    )
}

fn role_name(role: &Role) -> &str {
    match role {
        Role::User => "User",
        Role::Agent => "Agent",
        Role::System => "System",
        Role::Other(other) => other,
    }
}

impl Renderer for Markdown {
    fn header(&mut self, out: &mut dyn Write, meta: &ThreadMeta) -> std::io::Result<()> {
        writeln!(out, "# {}\n", meta.title.trim())?;
        writeln!(out, "- **Thread:** `{}`", meta.thread_id)?;
        writeln!(
            out,
            "- **Agent:** {} (`{}`)",
            meta.agent.name, meta.agent.id
        )?;
        writeln!(
            out,
            "- **Created:** {} · **Updated:** {}",
            meta.created_at, meta.updated_at
        )?;
        if let Some(branch) = &meta.context.git_branch {
            let commit = meta.context.git_commit.as_deref().unwrap_or("");
            writeln!(
                out,
                "- **Branch:** `{branch}` at `{}`",
                commit.get(..12).unwrap_or(commit)
            )?;
        }
        let st = &meta.stats;
        writeln!(
            out,
            "- **Messages:** {} ({} user, {} agent), {} tool calls",
            st.message_count, st.user_message_count, st.agent_message_count, st.tool_call_count
        )?;
        if let Some(summary) = &meta.conversation_summary {
            writeln!(out, "- **Summary:** {summary}")?;
        }
        writeln!(out)
    }

    fn message(&mut self, out: &mut dyn Write, index: u64, m: &Message) -> std::io::Result<()> {
        let model = m
            .model
            .as_deref()
            .map(|x| format!(" · {x}"))
            .unwrap_or_default();
        writeln!(
            out,
            "---\n\n### #{index} · {} · {}{model}\n",
            role_name(&m.role),
            m.timestamp
        )?;
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => writeln!(out, "{}\n", text.trim_end())?,
                ContentBlock::Thinking { text, .. } => {
                    writeln!(out, "<details><summary>Thinking</summary>\n")?;
                    writeln!(out, "{}\n\n</details>\n", text.trim_end())?;
                }
                ContentBlock::Image(img) => writeln!(
                    out,
                    "*[image: {} ({})]*\n",
                    img.asset_ref.as_deref().unwrap_or("inline"),
                    img.mime_type.as_deref().unwrap_or("unknown type")
                )?,
                ContentBlock::Unknown(_) => writeln!(out, "*[{} block]*\n", block.type_name())?,
            }
        }
        for call in m.tool_calls.iter().flatten() {
            writeln!(
                out,
                "<details><summary>Tool: {}</summary>\n",
                tool_summary(call)
            )?;
            if let Some(input) = &call.input {
                code(out, "Input", input)?;
            }
            if let Some(output) = &call.output {
                code(out, "Output", output)?;
            }
            if let Some(diff) = &call.diff {
                writeln!(out, "**Changed** `{}`\n", diff.path)?;
            }
            writeln!(out, "</details>\n")?;
        }
        Ok(())
    }

    fn footer(&mut self, out: &mut dyn Write, _meta: &ThreadMeta) -> std::io::Result<()> {
        writeln!(out, "---\n\n*Exported by grove from an ATSF v1.1 thread.*")
    }
}

#[cfg(test)]
mod tests {
    use super::fence;

    #[test]
    fn fences_outgrow_the_content() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("a ```` b"), "`````");
    }
}
