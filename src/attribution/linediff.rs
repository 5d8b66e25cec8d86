//! Which lines of one text are lines of another: git's diff (libgit2's, in
//! process, no repository needed) between them, read as a map from each
//! new line to the old line it kept, if any.

/// The lines of `text` as git counts them: each ends at a newline, and a
/// last one without a newline is a line too.
pub fn lines(text: &[u8]) -> Vec<&[u8]> {
    // memchr finds the newlines many bytes at a time: a file's versions
    // are split once each, and a split byte by byte was a tenth of blame.
    let mut out = Vec::with_capacity(text.len() / 32 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text) {
        out.push(&text[start..=end]);
        start = end + 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// For each line of `new`, the index of the line of `old` it is unchanged
/// from; `None` for a line `new` added or changed. Texts git takes for
/// binary have no line in common.
///
/// The lines both texts begin and end with are matched first, as git's
/// own diff trims them: an agent's edit changes a few lines of a file, and
/// only those few are diffed, not the whole file each time.
pub fn kept(old: &[u8], new: &[u8]) -> Vec<Option<usize>> {
    let (a, b) = (lines(old), lines(new));
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut map: Vec<Option<usize>> = (0..head).map(Some).collect();
    let (a_mid, b_mid) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    map.extend(
        middle(
            a_mid.concat().as_slice(),
            b_mid.concat().as_slice(),
            b_mid.len(),
        )
        .into_iter()
        .map(|m| m.map(|i| i + head)),
    );
    map.extend((a.len() - tail..a.len()).map(Some));
    map
}

/// [`kept`] of two texts with no line in common at either end, by git's
/// diff; `count` is the number of lines of `new`.
fn middle(old: &[u8], new: &[u8], count: usize) -> Vec<Option<usize>> {
    let mut map = vec![None; count];
    if old.is_empty() || new.is_empty() {
        return map;
    }
    let mut options = git2::DiffOptions::new();
    options.context_lines(0).interhunk_lines(0);
    let Ok(patch) = git2::Patch::from_buffers(old, None, new, None, Some(&mut options)) else {
        return map;
    };
    if patch.delta().flags().is_binary() {
        return map;
    }
    let (mut o, mut n) = (0usize, 0usize);
    for h in 0..patch.num_hunks() {
        let Ok((hunk, _)) = patch.hunk(h) else {
            return vec![None; count];
        };
        // A side with no lines names the line before the change (0: the
        // start), one with lines its first line, counted from 1.
        let start = |at: u32, len: u32| (if len == 0 { at } else { at.saturating_sub(1) }) as usize;
        let old_start = start(hunk.old_start(), hunk.old_lines());
        let new_start = start(hunk.new_start(), hunk.new_lines());
        while n < new_start && n < count {
            map[n] = Some(o);
            n += 1;
            o += 1;
        }
        n = new_start + hunk.new_lines() as usize;
        o = old_start + hunk.old_lines() as usize;
    }
    while n < count {
        map[n] = Some(o);
        n += 1;
        o += 1;
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_lines_through_insertions_changes_and_deletions() {
        assert_eq!(lines(b"a\n\nb"), [&b"a\n"[..], b"\n", b"b"]);
        assert!(lines(b"").is_empty());
        let old = b"a\nb\nc\nd\n";
        let new = b"a\nX\nc\nY\nZ\n";
        assert_eq!(kept(old, new), [Some(0), None, Some(2), None, None]);
        assert_eq!(kept(b"a\nb\n", b"new\na\nb\n"), [None, Some(0), Some(1)]);
        assert_eq!(kept(b"a\nb\nc\n", b"a\nc\n"), [Some(0), Some(2)]);
        assert_eq!(kept(b"", b"x\ny"), [None, None]);
        assert_eq!(kept(b"x\ny", b"x\ny\n"), [Some(0), None]);
        assert_eq!(kept(b"same\n", b"same\n"), [Some(0)]);
        assert_eq!(
            kept(b"a\nb\nc\nb\nc\n", b"a\nb\nc\nX\nb\nc\n"),
            [Some(0), Some(1), Some(2), None, Some(3), Some(4)]
        );
        assert_eq!(kept(b"a\na\n", b"a\n"), [Some(0)]);
    }
}
