//! One self-contained HTML page: styles inline, images from `assets/`
//! embedded as `data:` URLs, tool calls in collapsible `<details>`, thinking
//! collapsed by default. A Content-Security-Policy forbids every request but
//! those `data:` images, so opening the page contacts nothing.

use std::io::Write;
use std::path::PathBuf;

use base64::Engine;

use super::{Renderer, asset_path, tool_summary};
use crate::atsf::{ContentBlock, Message, ThreadMeta};

pub(super) struct Html {
    assets: PathBuf,
    /// Asset files that were refused (a symbolic link), named by path.
    refused: Vec<crate::Error>,
    /// Turn diffs and the person's edits still to write, each before the
    /// message index it goes before (`u64::MAX`: at the end), in order.
    changes: Vec<(u64, Change)>,
}

/// One entry of the review, as the page shows it.
struct Change {
    heading: String,
    files: Vec<String>,
    commits: Vec<String>,
    diff: Option<String>,
}

impl Html {
    pub(super) fn new(assets: PathBuf, review: Option<&crate::review::Review>) -> Self {
        let mut turn = 0;
        let changes = review
            .map(|r| r.placed())
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, e)| !e.files.is_empty())
            .map(|(before, e)| {
                let heading = if e.kind == "person" {
                    "The person's edits".to_string()
                } else {
                    turn += 1;
                    format!("Changes of turn {turn}")
                };
                let change = Change {
                    heading,
                    files: e.files.clone(),
                    commits: e.commits.clone(),
                    diff: e.diff.clone(),
                };
                (before.unwrap_or(u64::MAX), change)
            })
            .collect();
        Html {
            assets,
            refused: Vec::new(),
            changes,
        }
    }

    /// Writes the changes that go before message `index`.
    fn changes_before(&mut self, out: &mut dyn Write, index: u64) -> std::io::Result<()> {
        let due = self
            .changes
            .iter()
            .take_while(|(at, _)| *at <= index)
            .count();
        for (_, c) in self.changes.drain(..due) {
            writeln!(
                out,
                "<details class=\"change\" open><summary>{} · {}</summary>",
                esc(&c.heading),
                esc(&c.files.join(", "))
            )?;
            for commit in &c.commits {
                writeln!(out, "<p class=\"commit\">commit {}</p>", esc(commit))?;
            }
            if let Some(diff) = &c.diff {
                writeln!(out, "<pre class=\"diff\">{}</pre>", esc(diff))?;
            }
            writeln!(out, "</details>")?;
        }
        Ok(())
    }
}

/// `text` with the five HTML-significant characters escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font:15px/1.5 system-ui,sans-serif;max-width:920px;margin:2em auto;padding:0 1em;color:#1d1d1f;background:#fff}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;color:#555}
header dt{font-weight:600}
.message{border-top:1px solid #ddd;padding:.6em 0}
.message h2{font-size:.95em;margin:.2em 0 .5em;color:#555}
.role-user h2 .role{color:#0a58ca}.role-agent h2 .role{color:#1a7f37}.role-system h2 .role{color:#8250df}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:.6em;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere}
details{margin:.4em 0;border:1px solid #e5e5e5;border-radius:6px;padding:.3em .6em}
details.thinking{color:#666;font-style:italic}
summary{cursor:pointer;font-weight:600}
.status-failed{color:#cf222e}.status-completed{color:#1a7f37}
img{max-width:100%}
details.change{border-color:#9a6700}.diff{font-size:.9em}
@media (prefers-color-scheme:dark){body{background:#111;color:#ddd}pre{background:#1c1c1c}header dl,.message h2{color:#aaa}}
";

impl Renderer for Html {
    fn header(&mut self, out: &mut dyn Write, meta: &ThreadMeta) -> std::io::Result<()> {
        writeln!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n\
             <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n\
             <title>{}</title><style>{STYLE}</style></head><body>",
            esc(&meta.title)
        )?;
        writeln!(out, "<header><h1>{}</h1><dl>", esc(&meta.title))?;
        let mut row = |k: &str, v: &str| writeln!(out, "<dt>{k}</dt><dd>{}</dd>", esc(v));
        row("Thread", &meta.thread_id)?;
        row("Agent", &format!("{} ({})", meta.agent.name, meta.agent.id))?;
        row("Created", &meta.created_at)?;
        row("Updated", &meta.updated_at)?;
        if let Some(branch) = &meta.context.git_branch {
            row("Branch", branch)?;
        }
        let st = &meta.stats;
        row(
            "Messages",
            &format!(
                "{} ({} user, {} agent), {} tool calls",
                st.message_count, st.user_message_count, st.agent_message_count, st.tool_call_count
            ),
        )?;
        if let Some(summary) = &meta.conversation_summary {
            row("Summary", summary)?;
        }
        writeln!(out, "</dl></header><main>")
    }

    fn message(&mut self, out: &mut dyn Write, index: u64, m: &Message) -> std::io::Result<()> {
        self.changes_before(out, index)?;
        let role = m.role.as_str();
        writeln!(
            out,
            "<section class=\"message role-{role}\" id=\"m-{index}\" data-index=\"{index}\">\
             <h2>#{index} · <span class=\"role\">{role}</span> · <time>{}</time>{}</h2>",
            esc(&m.timestamp),
            m.model
                .as_deref()
                .map(|x| format!(" · {}", esc(x)))
                .unwrap_or_default()
        )?;
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => {
                    writeln!(out, "<div class=\"text\">{}</div>", esc(text))?
                }
                ContentBlock::Thinking { text, .. } => writeln!(
                    out,
                    "<details class=\"thinking\"><summary>Thinking</summary><div class=\"text\">{}</div></details>",
                    esc(text)
                )?,
                ContentBlock::Image(img) => self.image(out, img)?,
                ContentBlock::Unknown(_) => writeln!(
                    out,
                    "<p class=\"unknown\"><em>[{} block]</em></p>",
                    esc(block.type_name())
                )?,
            }
        }
        for call in m.tool_calls.iter().flatten() {
            writeln!(
                out,
                "<details class=\"tool status-{}\"><summary>Tool: {}</summary>",
                call.status.as_str(),
                esc(&tool_summary(call))
            )?;
            if let Some(input) = &call.input {
                writeln!(out, "<h3>Input</h3><pre>{}</pre>", esc(input))?;
            }
            if let Some(output) = &call.output {
                writeln!(out, "<h3>Output</h3><pre>{}</pre>", esc(output))?;
            }
            if let Some(diff) = &call.diff {
                writeln!(out, "<h3>Changed {}</h3>", esc(&diff.path))?;
            }
            writeln!(out, "</details>")?;
        }
        writeln!(out, "</section>")
    }

    fn refused(&mut self) -> Vec<crate::Error> {
        std::mem::take(&mut self.refused)
    }

    fn footer(&mut self, out: &mut dyn Write, _meta: &ThreadMeta) -> std::io::Result<()> {
        self.changes_before(out, u64::MAX)?;
        writeln!(
            out,
            "</main><footer><p><small>Exported by grove from an ATSF v1.1 thread.</small></p></footer></body></html>"
        )
    }
}

impl Html {
    fn image(&mut self, out: &mut dyn Write, img: &crate::atsf::ImageBlock) -> std::io::Result<()> {
        let mime = img
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream");
        let bytes = match img
            .asset_ref
            .as_deref()
            .and_then(|r| asset_path(&self.assets, r))
            .map(|p| crate::fsutil::read(&p))
        {
            Some(Ok(bytes)) => Some(bytes),
            // Never embedded: a linked asset could be any file of the machine.
            Some(Err(e @ crate::Error::Symlink { .. })) => {
                self.refused.push(e);
                return writeln!(
                    out,
                    "<p><em>[image {} refused: it is a symbolic link]</em></p>",
                    esc(img.asset_ref.as_deref().unwrap_or(""))
                );
            }
            _ => None,
        };
        match bytes {
            Some(bytes) if mime.starts_with("image/") => writeln!(
                out,
                "<p><img alt=\"{}\" src=\"data:{};base64,{}\"></p>",
                esc(img.asset_ref.as_deref().unwrap_or("image")),
                esc(mime),
                base64::engine::general_purpose::STANDARD.encode(bytes)
            ),
            _ => writeln!(
                out,
                "<p><em>[image {} not found in assets/]</em></p>",
                esc(img.asset_ref.as_deref().unwrap_or("without a reference"))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            super::esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }
}
