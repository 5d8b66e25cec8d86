//! git's own blame, read from `git blame --porcelain`: for each line, the
//! commit that last changed it (git's answer, rename and move detection
//! and all, taken as it is).
//!
//! The format: a header `<commit> <line in it> <line now> [<lines>]`, the
//! commit's details (`author …`, `summary …`, `filename …`) the first time
//! it appears, then the line itself after a tab.

/// One line of the blamed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blamed {
    /// The commit git gives; `None` for a line not committed yet.
    pub commit: Option<String>,
    /// 1-based line number in the file now.
    pub line: usize,
    /// The line's text, without its newline (invalid UTF-8 replaced).
    pub content: String,
}

/// The lines of `git blame --porcelain`'s output, in order. A header
/// without its line (git cut short) ends the list.
pub fn parse(out: &[u8]) -> Vec<Blamed> {
    let mut lines = Vec::new();
    let mut current: Option<(String, usize)> = None;
    for raw in out.split(|&b| b == b'\n') {
        if let Some(content) = raw.strip_prefix(b"\t") {
            if let Some((commit, line)) = current.take() {
                lines.push(Blamed {
                    commit: (!commit.bytes().all(|b| b == b'0')).then_some(commit),
                    line,
                    content: String::from_utf8_lossy(content).into_owned(),
                });
            }
            continue;
        }
        if let Some(header) = header(raw) {
            current = Some(header);
        }
    }
    lines
}

/// `<commit> <orig> <final> [<n>]`: the commit and the line's number now.
fn header(raw: &[u8]) -> Option<(String, usize)> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut words = text.split(' ');
    let commit = words.next()?;
    if !crate::attribution::objects::is_object_id(commit) {
        return None;
    }
    let _orig: usize = words.next()?.parse().ok()?;
    let line: usize = words.next()?.parse().ok()?;
    Some((commit.to_string(), line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_with_repeated_commits_and_uncommitted_ones() {
        let a = "a".repeat(40);
        let zero = "0".repeat(40);
        let out = format!(
            "{a} 1 1 2\nauthor X\nsummary first\nfilename f.txt\n\tone\n{a} 2 2\n\ttwo\n\
             {zero} 3 3 1\nauthor Not Committed Yet\nfilename f.txt\n\tthree\tand a tab\n"
        );
        let got = parse(out.as_bytes());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].commit.as_deref(), Some(a.as_str()));
        assert_eq!((got[1].line, got[1].content.as_str()), (2, "two"));
        assert_eq!(got[2].commit, None);
        assert_eq!(got[2].content, "three\tand a tab");
    }
}
