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

/// One column of a table, as [`fit_widths`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Its widest cell (header included).
    pub natural: usize,
    /// The narrowest it may be cut to (`natural`: never cut).
    pub min: usize,
    /// Dropped, when the row does not fit, before every column of a lower
    /// rank; `0`: never dropped.
    pub drop: u8,
    /// Widened, from `min` toward `natural`, before every column of a
    /// higher rank.
    pub grow: u8,
}

/// Each column's width in a row of `width` columns (`None`: dropped), with
/// `gap` columns between two columns. Off a terminal (`width` `None`)
/// every column is whole. Columns are dropped, highest `drop` first, until
/// the narrowest row fits; the room left widens the cut columns, lowest
/// `grow` first. A width too small even for the columns never dropped cuts
/// those that can be cut down to one column each.
pub fn fit_widths(specs: &[Spec], width: Option<usize>, gap: usize) -> Vec<Option<usize>> {
    let Some(width) = width else {
        return specs.iter().map(|c| Some(c.natural)).collect();
    };
    let mut shown: Vec<bool> = vec![true; specs.len()];
    let total = |shown: &[bool], w: &dyn Fn(&Spec) -> usize| -> usize {
        let cols: Vec<usize> = specs
            .iter()
            .zip(shown)
            .filter(|(_, s)| **s)
            .map(|(c, _)| w(c))
            .collect();
        cols.iter().sum::<usize>() + gap * cols.len().saturating_sub(1)
    };
    while total(&shown, &|c| c.min) > width {
        let victim = (0..specs.len())
            .filter(|&i| shown[i] && specs[i].drop > 0)
            .max_by_key(|&i| (specs[i].drop, i));
        match victim {
            Some(i) => shown[i] = false,
            None => break,
        }
    }
    let mut widths: Vec<usize> = specs.iter().map(|c| c.min).collect();
    let used = total(&shown, &|c| c.min);
    if used > width {
        shrink_to(specs, &shown, &mut widths, used - width);
    } else {
        grow_into(specs, &shown, &mut widths, width - used);
    }
    widths
        .into_iter()
        .zip(shown)
        .map(|(w, s)| s.then_some(w))
        .collect()
}

/// Widens the shown cut columns into `room`, lowest `grow` first.
fn grow_into(specs: &[Spec], shown: &[bool], widths: &mut [usize], mut room: usize) {
    let mut order: Vec<usize> = (0..specs.len()).filter(|&i| shown[i]).collect();
    order.sort_by_key(|&i| (specs[i].grow, i));
    for i in order {
        let more = (specs[i].natural - widths[i]).min(room);
        widths[i] += more;
        room -= more;
    }
}

/// Narrows the shown columns that can be cut by `over` columns in all,
/// the last to widen first, none below one column.
fn shrink_to(specs: &[Spec], shown: &[bool], widths: &mut [usize], mut over: usize) {
    let mut order: Vec<usize> = (0..specs.len())
        .filter(|&i| shown[i] && specs[i].min < specs[i].natural)
        .collect();
    order.sort_by_key(|&i| std::cmp::Reverse((specs[i].grow, i)));
    for i in order {
        let less = (widths[i] - 1).min(over);
        widths[i] -= less;
        over -= less;
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

    fn spec(natural: usize, min: usize, drop: u8, grow: u8) -> Spec {
        Spec {
            natural,
            min,
            drop,
            grow,
        }
    }

    #[test]
    fn columns_drop_then_cut_columns_grow_and_the_row_fits() {
        // id, count (dropped first), branch (cut, dropped next), title (cut).
        let specs = [
            spec(8, 8, 0, 0),
            spec(4, 4, 2, 0),
            spec(20, 8, 1, 2),
            spec(30, 12, 0, 1),
        ];
        let whole = fit_widths(&specs, None, 2);
        assert_eq!(whole, [Some(8), Some(4), Some(20), Some(30)]);
        assert_eq!(fit_widths(&specs, Some(100), 2), whole);
        // 8+4+8+12 + 6 = 38 fits at 40: the title widens first.
        assert_eq!(
            fit_widths(&specs, Some(40), 2),
            [Some(8), Some(4), Some(8), Some(14)]
        );
        // At 36 the count goes; at 28 the branch too.
        assert_eq!(
            fit_widths(&specs, Some(36), 2),
            [Some(8), None, Some(8), Some(16)]
        );
        assert_eq!(
            fit_widths(&specs, Some(28), 2),
            [Some(8), None, None, Some(18)]
        );
        // Narrower than the columns never dropped: the title is cut further.
        assert_eq!(
            fit_widths(&specs, Some(15), 2),
            [Some(8), None, None, Some(5)]
        );
        for width in 11..120 {
            let widths = fit_widths(&specs, Some(width), 2);
            let shown: Vec<usize> = widths.iter().flatten().copied().collect();
            let total = shown.iter().sum::<usize>() + 2 * (shown.len() - 1);
            assert!(total <= width, "{width}: {widths:?}");
        }
    }

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
