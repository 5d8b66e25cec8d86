//! Tables that fit: the width to fit (the terminal's, or `COLUMNS`), text
//! cut with `…` by display width (never wrapped), and ids shown by their
//! shortest unique prefix, which can be pasted back as the thread's name.

use std::io::IsTerminal;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width rows must fit in: `COLUMNS` when set (tests pin it), else the
/// terminal's; `None` off a terminal (piped output is never cut).
pub fn width() -> Option<usize> {
    if let Some(cols) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(cols);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size().map(|(w, _)| usize::from(w.0))
}

/// The display width of `s`.
pub fn display_width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut to at most `max` columns, ending in `…` when cut.
pub fn fit(s: &str, max: usize) -> String {
    if display_width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `s` padded with spaces to `cols` display columns.
pub fn pad(s: &str, cols: usize) -> String {
    let w = display_width(s);
    if w >= cols {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(cols - w))
    }
}

/// Each id's shortest prefix that names it among `ids` — no other id shares
/// it but those extending the id itself (its subagents), as
/// `store::resolve_prefix` reads it — at least 8 characters (a UUID's first
/// group), the whole id when shorter.
pub fn unique_prefixes(ids: &[&str]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let chars: Vec<char> = id.chars().collect();
            let mut n = chars.len().min(8);
            while n < chars.len() {
                let prefix: String = chars[..n].iter().collect();
                let shared = ids.iter().any(|other| {
                    other != id && other.starts_with(&prefix) && !other.starts_with(*id)
                });
                if !shared {
                    break;
                }
                n += 1;
            }
            chars[..n].iter().collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_by_display_width_and_prefixes_stay_unique() {
        assert_eq!(fit("Fix the login bug", 8), "Fix the…");
        assert_eq!(fit("短い題名です", 5), "短い…");
        assert_eq!(fit("short", 10), "short");
        let ids = [
            "claude-cb88ae13-898d-4076-aeb5-bc37191c5d2e",
            "claude-cb88ae99-0000-4000-8000-000000000000",
            "3f2a1b4c-0000-4000-8000-000000000000",
            "T-1",
            "claude-cb88ae13-898d-4076-aeb5-bc37191c5d2e-agent-a1",
        ];
        assert_eq!(
            unique_prefixes(&ids),
            [
                "claude-cb88ae1",
                "claude-cb88ae9",
                "3f2a1b4c",
                "T-1",
                "claude-cb88ae13-898d-4076-aeb5-bc37191c5d2e-",
            ]
        );
    }
}
