//! Which lines of a raw log may hold a match, found without parsing them.
//!
//! Every query is first run over the raw bytes of `messages.jsonl`, as
//! `rg` runs it, and only the lines it finds are parsed and searched for
//! real. The prefilter may find lines that do not match (they are parsed
//! and dropped) but must never miss one that does. What makes that hard is
//! JSON's escapes: the text `say "hi"` is `say \"hi\"` in the log, and an
//! encoder may write any character as `\uXXXX` (Python writes every
//! non-ASCII one so, Go writes `<>&` so) or `/` as `\/`.
//!
//! - A literal is looked for in its escaped form (as serde writes it).
//! - A case-insensitive literal likewise, through a byte regex with
//!   Unicode case folding over the raw UTF-8.
//! - A regular expression gives the literals every match must start (or
//!   end) with (`regex-syntax`'s extractor, as the regex crate and ripgrep
//!   use it), looked for in their escaped form. A regex with no such
//!   literals (`\w+`) has no prefilter: every line is parsed.
//!
//! When a query holds a character an encoder may write another way, lines
//! holding a `\u` or `\/` escape are candidates too.

use memchr::memmem;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
use regex_syntax::hir::{Class, HirKind};

/// Finds the candidate lines of a region of a log.
#[derive(Debug, Clone)]
pub(super) struct Prefilter {
    finder: Finder,
    /// Whether the finder alone finds every matching line; when not,
    /// lines holding an escape an encoder may use are candidates too.
    exact: bool,
}

#[derive(Debug, Clone)]
enum Finder {
    Literal(Box<memmem::Finder<'static>>),
    Bytes(regex::bytes::Regex),
    /// A case-folded literal with a run that has no case: the run is
    /// looked for, the regex confirmed only around it.
    Anchored(Box<(Anchor, regex::bytes::Regex)>),
    /// No literal to look for: every line is a candidate.
    EveryLine,
}

/// Escapes that stand for a character some encoder writes otherwise.
const OTHER_ESCAPES: [&[u8]; 2] = [b"\\u", b"\\/"];

impl Prefilter {
    /// For a case-sensitive literal.
    pub(super) fn literal(text: &str) -> Prefilter {
        let escaped = crate::atsf::json_escaped(text.as_bytes());
        Prefilter {
            finder: Finder::Literal(Box::new(memmem::Finder::new(&escaped).into_owned())),
            exact: text.bytes().all(is_plain),
        }
    }

    /// For a literal matched with Unicode case folding.
    pub(super) fn folded_literal(text: &str) -> Prefilter {
        // Escaping only adds ASCII: the escaped form is still UTF-8, and a
        // Unicode folding regex over the raw bytes folds it as `-i` does.
        let escaped =
            String::from_utf8_lossy(&crate::atsf::json_escaped(text.as_bytes())).into_owned();
        let pattern = format!("(?i){}", regex_syntax::escape(&escaped));
        let ascii = text.chars().all(|c| c.is_ascii() && !folds_beyond_ascii(c));
        let finder = match regex::bytes::RegexBuilder::new(&pattern).build() {
            Ok(re) => match Anchor::in_pattern(escaped.as_bytes()) {
                Some(anchor) => Finder::Anchored(Box::new((anchor, re))),
                None => Finder::Bytes(re),
            },
            Err(_) => Finder::EveryLine,
        };
        Prefilter {
            finder,
            // `k` also matches the Kelvin sign, which an encoder may write
            // as `\u212a`: such letters are not plain.
            exact: ascii && text.bytes().all(is_plain),
        }
    }

    /// None: every line is parsed.
    pub(super) fn every_line() -> Prefilter {
        Prefilter {
            finder: Finder::EveryLine,
            exact: true,
        }
    }

    /// For a regular expression (already known to compile).
    pub(super) fn regex(pattern: &str, ignore_case: bool) -> Prefilter {
        let every_line = Prefilter::every_line();
        let Ok(hir) = regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .build()
            .parse(pattern)
        else {
            return every_line;
        };
        let Some(literals) = required_literals(&hir) else {
            return every_line;
        };
        let mut exact = true;
        let alternatives: Vec<String> = literals
            .iter()
            .map(|l| {
                exact &= l.iter().all(|&b| is_plain(b));
                bytes_pattern(&crate::atsf::json_escaped(l))
            })
            .collect();
        match regex::bytes::RegexBuilder::new(&alternatives.join("|"))
            .unicode(false)
            .build()
        {
            Ok(re) => Prefilter {
                finder: Finder::Bytes(re),
                exact,
            },
            Err(_) => every_line,
        }
    }

    /// Whether every line is a candidate.
    pub(super) fn takes_every_line(&self) -> bool {
        matches!(self.finder, Finder::EveryLine)
    }

    /// Offsets in `region` that lie on candidate lines, in order (several
    /// may fall on one line). Not called when every line is a candidate.
    pub(super) fn candidates(&self, region: &[u8], out: &mut Vec<usize>) {
        out.clear();
        match &self.finder {
            Finder::Literal(f) => out.extend(f.find_iter(region)),
            Finder::Bytes(re) => out.extend(re.find_iter(region).map(|m| m.start())),
            Finder::Anchored(anchored) => {
                let (anchor, re) = &**anchored;
                out.extend(
                    anchor
                        .run
                        .find_iter(region)
                        .filter(|&at| re.is_match(&region[anchor.around(at, region)])),
                )
            }
            Finder::EveryLine => {}
        }
        if !self.exact {
            for escape in OTHER_ESCAPES {
                out.extend(memmem::find_iter(region, escape));
            }
            out.sort_unstable();
        }
    }
}

/// The longest run of a case-folded literal's escaped bytes that no case
/// folding changes (ASCII other than letters: digits, punctuation, spaces)
/// — in the log exactly as in the pattern, so memchr's search finds where a
/// match may be far faster than a folding regex scans every byte. Folding
/// changes letters only, and a letter's fold may take up to 3 bytes where
/// the pattern has 1: the window the regex confirms allows for that.
#[derive(Debug, Clone)]
struct Anchor {
    run: memmem::Finder<'static>,
    /// Bytes of the pattern before the run, and after it.
    before: usize,
    after: usize,
}

/// A run shorter than this is too common to look for first.
const ANCHOR_MIN: usize = 4;

impl Anchor {
    fn in_pattern(escaped: &[u8]) -> Option<Anchor> {
        let caseless = |b: &u8| b.is_ascii() && !b.is_ascii_alphabetic();
        let (mut best, mut start) = ((0, 0), None);
        for (i, b) in escaped.iter().enumerate().chain([(escaped.len(), &b'a')]) {
            match (caseless(b) && i < escaped.len(), start) {
                (true, None) => start = Some(i),
                (false, Some(from)) => {
                    if i - from > best.1 - best.0 {
                        best = (from, i);
                    }
                    start = None;
                }
                _ => {}
            }
        }
        let (from, to) = best;
        (to - from >= ANCHOR_MIN).then(|| Anchor {
            run: memmem::Finder::new(&escaped[from..to]).into_owned(),
            before: from,
            after: escaped.len() - to,
        })
    }

    /// The bytes around a run found at `at` in `region` that a match
    /// through it lies in: on its line only.
    fn around(&self, at: usize, region: &[u8]) -> std::ops::Range<usize> {
        const WIDEST_FOLD: usize = 4;
        let from = at.saturating_sub(self.before * WIDEST_FOLD);
        let to = (at + self.run.needle().len() + self.after * WIDEST_FOLD).min(region.len());
        let from = memchr::memrchr(b'\n', &region[from..at]).map_or(from, |nl| from + nl + 1);
        let to = memchr::memchr(b'\n', &region[at..to]).map_or(to, |nl| at + nl);
        from..to
    }
}

/// Literals one of which every match of `hir` contains: its prefixes or
/// suffixes, whichever are longer; `None` when neither is a usable set.
fn required_literals(hir: &regex_syntax::hir::Hir) -> Option<Vec<Vec<u8>>> {
    let usable = |seq: Seq| -> Option<(usize, Vec<Vec<u8>>)> {
        let shortest = seq.min_literal_len()?;
        if shortest == 0 {
            return None; // a match may start (or end) with anything
        }
        let literals = seq.literals()?;
        Some((
            shortest,
            literals.iter().map(|l| l.as_bytes().to_vec()).collect(),
        ))
    };
    let prefixes = usable(Extractor::new().extract(hir));
    let suffixes = usable(Extractor::new().kind(ExtractKind::Suffix).extract(hir));
    match (prefixes, suffixes) {
        (Some(p), Some(s)) => Some(if s.0 > p.0 { s.1 } else { p.1 }),
        (p, s) => p.or(s).map(|(_, l)| l),
    }
}

/// A byte regex (Unicode mode off) matching exactly `bytes`, which may
/// end inside a UTF-8 sequence (the extractor cuts long literals).
fn bytes_pattern(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else if b.is_ascii() {
            out.push_str(&regex_syntax::escape(&(b as char).to_string()));
        } else {
            // Unicode mode is off inside: the byte itself.
            out.push_str(&format!("(?-u:\\x{b:02X})"));
        }
    }
    out
}

/// Whether every encoder writes this byte as itself: printable ASCII
/// other than the characters some escape (`"` and `\` are escaped the one
/// way serde does, `<>&'` become `\u` in some, `/` becomes `\/`).
fn is_plain(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && !b"<>&'\"\\/".contains(&b)
}

/// Whether case folding maps `c` to a character outside ASCII (`k` to the
/// Kelvin sign, `s` to the long s).
fn folds_beyond_ascii(c: char) -> bool {
    let Ok(hir) = regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .build()
        .parse(&regex_syntax::escape(&c.to_string()))
    else {
        return true;
    };
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => class.ranges().iter().any(|r| !r.end().is_ascii()),
        HirKind::Literal(lit) => !lit.0.is_ascii(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_found(p: &Prefilter, log: &str) -> Vec<usize> {
        if p.takes_every_line() {
            return (0..log.lines().count()).collect();
        }
        let mut at = Vec::new();
        p.candidates(log.as_bytes(), &mut at);
        let mut lines: Vec<usize> = at
            .iter()
            .map(|&a| log.as_bytes()[..a].iter().filter(|&&b| b == b'\n').count())
            .collect();
        lines.dedup();
        lines
    }

    #[test]
    fn a_plain_literal_is_exact_and_others_take_escaped_lines() {
        let log = "{\"t\":\"login bug\"}\n{\"t\":\"caf\\u00e9\"}\n{\"t\":\"src\\/a\"}\n";
        assert_eq!(lines_found(&Prefilter::literal("login"), log), vec![0]);
        assert_eq!(lines_found(&Prefilter::literal("café"), log), vec![1, 2]);
        assert_eq!(lines_found(&Prefilter::literal("src/a"), log), vec![1, 2]);
        assert!(!Prefilter::literal("say \"hi\"").exact);
        assert!(!Prefilter::literal("<div>").exact);
    }

    #[test]
    fn folding_finds_every_case_and_the_letters_that_fold_beyond_ascii_are_not_exact() {
        let log = "{\"t\":\"LOGIN Bug\"}\n{\"t\":\"l\\u006fgin\"}\n{\"t\":\"CAFÉ\"}\n";
        let p = Prefilter::folded_literal("login");
        assert!(p.exact);
        assert_eq!(lines_found(&p, log), vec![0]);
        assert_eq!(
            lines_found(&Prefilter::folded_literal("café"), log),
            vec![1, 2]
        );
        assert!(
            !Prefilter::folded_literal("ask").exact,
            "k folds to the Kelvin sign"
        );
        assert!(
            !Prefilter::folded_literal("s").exact,
            "s folds to the long s"
        );
        assert!(Prefilter::folded_literal("zanzibar-4711").exact);
    }

    #[test]
    fn a_folded_literal_with_a_caseless_run_is_looked_for_by_it_and_confirmed_around_it() {
        let p = Prefilter::folded_literal("Zanzibar-4711 ok");
        assert!(matches!(p.finder, Finder::Anchored(_)), "{p:?}");
        // Every case, the Kelvin sign and the long s among them (3 and 2
        // bytes where the pattern has 1), at the start of a line and at its
        // end; a line with the run but not the rest is not a candidate.
        let log = "ZANZIBAR-4711 OK\n\
                   {\"t\":\"no zanzibar-4712 ok\"}\n\
                   {\"t\":\"see zanzibar-4711 o\u{212a}\"}\n\
                   {\"t\":\"-4711 ok, but not zanzibar\"}\n\
                   {\"t\":\"zan\u{17f}ibar-4711 ok\"}\n\
                   zanzibar-4711 Ok";
        assert_eq!(lines_found(&p, log), vec![0, 2, 5]);
        // A folding regex over the same log finds the same lines.
        let q = Prefilter {
            finder: match &p.finder {
                Finder::Anchored(a) => Finder::Bytes(a.1.clone()),
                _ => unreachable!(),
            },
            exact: p.exact,
        };
        assert_eq!(lines_found(&p, log), lines_found(&q, log));
    }

    #[test]
    fn the_anchor_is_the_longest_caseless_run_and_short_ones_are_none() {
        let run = |s: &str| {
            Anchor::in_pattern(s.as_bytes())
                .map(|a| String::from_utf8(a.run.needle().to_vec()).unwrap())
        };
        assert_eq!(run("zanzibar-4711"), Some("-4711".into()));
        assert_eq!(run("2025-03 fix 10"), Some("2025-03 ".into()));
        assert_eq!(run("ab 1 cd"), None);
        assert_eq!(run("login"), None);
        assert_eq!(run("1234"), Some("1234".into()));
    }

    #[test]
    fn a_regex_is_prefiltered_by_the_literals_its_matches_need() {
        let log = "{\"t\":\"E42 failed\"}\n{\"t\":\"fine\"}\n{\"t\":\"error E7\"}\n";
        let p = Prefilter::regex(r"E\d{2}\b", false);
        assert!(!p.takes_every_line());
        assert_eq!(lines_found(&p, log), vec![0, 2]);
        // Suffixes when the prefixes say nothing.
        let p = Prefilter::regex(r"\w+ failed", false);
        assert_eq!(lines_found(&p, log), vec![0]);
        assert!(Prefilter::regex(r"\w+", false).takes_every_line());
        assert!(Prefilter::regex(r"a?", false).takes_every_line());
        // A quote in the regex is looked for escaped.
        let p = Prefilter::regex(r#"said "(hi|ho)""#, false);
        let log = "{\"t\":\"she said \\\"ho\\\"\"}\n{\"t\":\"said ho\"}\n";
        assert_eq!(lines_found(&p, log), vec![0]);
        // Case folding inside the regex.
        let p = Prefilter::regex(r"(?i)fail(ed|s)", false);
        assert_eq!(lines_found(&p, "{\"t\":\"FAILED\"}\n"), vec![0]);
    }

    #[test]
    fn escapes_are_those_serde_writes() {
        assert_eq!(
            crate::atsf::json_escaped(b"a\"b\\c\nd\x01"),
            b"a\\\"b\\\\c\\nd\\u0001".to_vec()
        );
        let json = serde_json::to_string("a\"b\\c\nd\x01\x1f\t").unwrap();
        assert_eq!(
            crate::atsf::json_escaped("a\"b\\c\nd\x01\x1f\t".as_bytes()),
            json.as_bytes()[1..json.len() - 1].to_vec()
        );
    }
}
