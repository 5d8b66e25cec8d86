//! Which lines of one text are lines of another: git's diff (libgit2's, in
//! process, no repository needed) between them, read as a map from each
//! new line to the old line it kept, if any.

/// The lines of `text` as git counts them: each ends at a newline, and a
/// last one without a newline is a line too.
pub fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

/// For each line of `new`, the index of the line of `old` it is unchanged
/// from; `None` for a line `new` added or changed. Texts git takes for
/// binary have no line in common.
pub fn kept(old: &[u8], new: &[u8]) -> Vec<Option<usize>> {
    let count = lines(new).len();
    if old == new {
        return (0..count).map(Some).collect();
    }
    let mut map = vec![None; count];
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
        let old = b"a\nb\nc\nd\n";
        let new = b"a\nX\nc\nY\nZ\n";
        assert_eq!(kept(old, new), [Some(0), None, Some(2), None, None]);
        assert_eq!(kept(b"a\nb\n", b"new\na\nb\n"), [None, Some(0), Some(1)]);
        assert_eq!(kept(b"a\nb\nc\n", b"a\nc\n"), [Some(0), Some(2)]);
        assert_eq!(kept(b"", b"x\ny"), [None, None]);
        assert_eq!(kept(b"x\ny", b"x\ny\n"), [Some(0), None]);
        assert_eq!(kept(b"same\n", b"same\n"), [Some(0)]);
    }
}
