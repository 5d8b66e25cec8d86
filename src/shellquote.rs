//! Words written so that a shell reads them back exactly: for a command
//! shown before it runs (the trust question) and for `grove env`'s lines,
//! which a shell evaluates.

/// Whether `v` reads back as itself without quotes in every shell grove
/// writes for (no globbing, expansion, word splitting or comment).
fn plain(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+,=".contains(&b))
}

/// `v` for a POSIX shell (sh, bash, zsh): bare when plain, else in single
/// quotes, inside which nothing is special but the quote itself.
pub fn posix(v: &str) -> String {
    if plain(v) {
        return v.to_string();
    }
    format!("'{}'", v.replace('\'', r"'\''"))
}

/// `v` for fish: bare when plain, else in single quotes, inside which fish
/// gives `\\` and `\'` their meaning.
pub fn fish(v: &str) -> String {
    if plain(v) {
        return v.to_string();
    }
    format!("'{}'", v.replace('\\', r"\\").replace('\'', r"\'"))
}

/// A command line as a POSIX shell would have to be given it: each word
/// quoted as needed, so `["sh", "-c", "a | b"]` shows as `sh -c 'a | b'`
/// and never reads as other words.
pub fn command_line(words: &[String]) -> String {
    words.iter().map(|w| posix(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_read_back_as_they_were() {
        assert_eq!(posix("3000"), "3000");
        assert_eq!(posix(""), "''");
        assert_eq!(posix("a'b $(x)"), r"'a'\''b $(x)'");
        assert_eq!(fish(r"a'b\ $x"), r"'a\'b\\ $x'");
        assert_eq!(
            command_line(&["sh".into(), "-c".into(), "a | b".into()]),
            "sh -c 'a | b'"
        );
    }
}
