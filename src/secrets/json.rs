//! JSON read the way any reader could read it, not the way serde does:
//! every string token of the bytes (keys and values, every copy of a
//! duplicate key, at any depth) with its escapes decoded, and where each
//! decoded character lies in the bytes — so a secret is found whatever
//! reader meets it, and replaced in the bytes themselves.
//!
//! Nothing here recurses: a line nested deeper than serde's limit is read
//! like any other.

use std::borrow::Cow;
use std::ops::Range;

/// The contents (between the quotes) of every string token of `bytes`,
/// in order. Exact for JSON; for other text, whatever a quote opens up
/// to the next unescaped quote (or the end) is taken for a string too.
pub(super) fn strings(bytes: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let open = pos + memchr::memchr(b'"', bytes.get(pos..)?)?;
        let start = open + 1;
        let end = string_end(bytes, start);
        pos = end + 1;
        Some(start..end)
    })
}

/// Where the string whose contents start at `start` ends: its closing
/// quote, or the end of `bytes` when it is never closed.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(at) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
        i += at;
        if bytes[i] == b'"' {
            return i;
        }
        i += 2; // the backslash and the character it escapes
        if i >= bytes.len() {
            break;
        }
    }
    bytes.len()
}

/// The text of a string token's contents, escapes decoded: `\uXXXX`
/// (surrogate pairs joined, a lone surrogate as U+FFFD, which is how
/// readers that accept one show it), the one-letter escapes, and an
/// unknown escape as the character it escapes (what lenient readers do).
/// Bytes that are not UTF-8 become U+FFFD.
pub(super) fn decode(contents: &[u8]) -> Cow<'_, str> {
    if !contents.contains(&b'\\')
        && let Ok(text) = std::str::from_utf8(contents)
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(contents.len());
    for (_, c) in units(contents) {
        out.push(c);
    }
    Cow::Owned(out)
}

/// The bytes of `contents` that decode to each of `spans` of [`decode`]'s
/// text (in order, not overlapping): whole escapes, so replacing them
/// keeps the string valid. One walk, however many spans.
pub(super) fn raw_ranges(contents: &[u8], spans: &[Range<usize>]) -> Vec<Range<usize>> {
    if !contents.contains(&b'\\') && std::str::from_utf8(contents).is_ok() {
        return spans.to_vec();
    }
    let mut out = Vec::with_capacity(spans.len());
    let mut pending = spans.iter().peekable();
    let mut start = None;
    let mut decoded = 0;
    for (raw, c) in units(contents) {
        while let Some(span) = pending.peek() {
            match start {
                Some(from) if decoded >= span.end => {
                    out.push(from..raw.start);
                    start = None;
                    pending.next();
                }
                None if decoded == span.start => {
                    start = Some(raw.start);
                    break;
                }
                _ => break,
            }
        }
        decoded += c.len_utf8();
    }
    if let (Some(from), Some(_)) = (start, pending.peek()) {
        out.push(from..contents.len());
    }
    out
}

/// Each decoded character of `contents` with the bytes it comes from.
fn units(contents: &[u8]) -> impl Iterator<Item = (Range<usize>, char)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let start = i;
        let (len, c) = unit_at(contents, i)?;
        i += len;
        Some((start..i, c))
    })
}

/// The character at `i` of a string's contents and how many bytes it takes.
fn unit_at(contents: &[u8], i: usize) -> Option<(usize, char)> {
    let first = *contents.get(i)?;
    if first != b'\\' {
        return Some(utf8_char_at(contents, i));
    }
    let Some(&escaped) = contents.get(i + 1) else {
        return Some((1, '\\'));
    };
    let c = match escaped {
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return Some(unicode_escape_at(contents, i)),
        _ => {
            let (len, c) = utf8_char_at(contents, i + 1);
            return Some((len + 1, c));
        }
    };
    Some((2, c))
}

/// `\uXXXX` at `i` (joined with a following low surrogate escape when it
/// is a high one); a malformed one is the letter `u`.
fn unicode_escape_at(contents: &[u8], i: usize) -> (usize, char) {
    let Some(unit) = hex4(contents, i + 2) else {
        return (2, 'u');
    };
    if (0xD800..0xDC00).contains(&unit)
        && contents.get(i + 6..i + 8) == Some(b"\\u")
        && let Some(low) = hex4(contents, i + 8).filter(|l| (0xDC00..0xE000).contains(l))
    {
        let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        return (12, char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    (
        6,
        char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER),
    )
}

fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// The UTF-8 character at `i`, or U+FFFD for one byte that starts none.
fn utf8_char_at(bytes: &[u8], i: usize) -> (usize, char) {
    let end = (i + 4).min(bytes.len());
    let valid = match std::str::from_utf8(&bytes[i..end]) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[i..i + e.valid_up_to()]).unwrap_or_default(),
    };
    match valid.chars().next() {
        Some(c) => (c.len_utf8(), c),
        None => (1, char::REPLACEMENT_CHARACTER),
    }
}

/// Whether `bytes` are one JSON value (surrounded by whitespace), by the
/// grammar alone: any depth, duplicate keys and lone surrogates accepted
/// (readers differ there, and every reading is scanned anyway).
pub(super) fn is_json(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() && Grammar::default().accepts(bytes)
}

/// What may come next in a JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Expect {
    #[default]
    Value,
    /// Just after `[`.
    ValueOrClose,
    /// Just after `{`.
    KeyOrClose,
    /// After `,` in an object.
    Key,
    Colon,
    /// After a value.
    CommaOrClose,
}

/// A JSON checker with its own stack of open containers (no recursion).
#[derive(Default)]
struct Grammar {
    open: Vec<u8>,
    expect: Expect,
}

impl Grammar {
    fn accepts(mut self, bytes: &[u8]) -> bool {
        let mut i = 0;
        loop {
            while bytes.get(i).is_some_and(|b| b" \t\r\n".contains(b)) {
                i += 1;
            }
            let Some(&b) = bytes.get(i) else {
                return self.open.is_empty() && self.expect == Expect::CommaOrClose;
            };
            match self.step(bytes, i, b) {
                Some(next) => i = next,
                None => return false,
            }
        }
    }

    /// Takes the token at `i` (its first byte `b`): where the next starts,
    /// or `None` when it may not come here.
    fn step(&mut self, bytes: &[u8], i: usize, b: u8) -> Option<usize> {
        use Expect::*;
        match (self.expect, b) {
            (ValueOrClose, b']') | (KeyOrClose, b'}') => self.close(b, i),
            (Value | ValueOrClose, _) => self.value(bytes, i, b),
            (KeyOrClose | Key, b'"') => {
                self.expect = Colon;
                valid_string_end(bytes, i + 1)
            }
            (Colon, b':') => {
                self.expect = Value;
                Some(i + 1)
            }
            (CommaOrClose, b',') => {
                self.expect = match self.open.last()? {
                    b'[' => Value,
                    _ => Key,
                };
                Some(i + 1)
            }
            (CommaOrClose, b']' | b'}') => self.close(b, i),
            _ => None,
        }
    }

    fn value(&mut self, bytes: &[u8], i: usize, b: u8) -> Option<usize> {
        let next = match b {
            b'[' | b'{' => {
                self.open.push(b);
                self.expect = if b == b'[' {
                    Expect::ValueOrClose
                } else {
                    Expect::KeyOrClose
                };
                return Some(i + 1);
            }
            b'"' => valid_string_end(bytes, i + 1)?,
            b'-' | b'0'..=b'9' => number_end(bytes, i)?,
            b't' => literal_end(bytes, i, b"true")?,
            b'f' => literal_end(bytes, i, b"false")?,
            b'n' => literal_end(bytes, i, b"null")?,
            _ => return None,
        };
        self.expect = Expect::CommaOrClose;
        Some(next)
    }

    fn close(&mut self, b: u8, i: usize) -> Option<usize> {
        let wanted = if b == b']' { b'[' } else { b'{' };
        (self.open.pop()? == wanted).then_some(())?;
        self.expect = Expect::CommaOrClose;
        Some(i + 1)
    }
}

/// Past the closing quote of a string whose contents start at `start`,
/// if it is a valid JSON string (no raw control character, known escapes).
fn valid_string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        match *bytes.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => match *bytes.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    hex4(bytes, i + 2)?;
                    i += 6;
                }
                _ => return None,
            },
            0..0x20 => return None,
            _ => i += 1,
        }
    }
}

/// Past the number at `i`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn number_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    let digits = |from: usize| {
        let n = bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (n > 0).then_some(from + n)
    };
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match bytes.get(i)? {
        b'0' => i + 1,
        _ => digits(i)?,
    };
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(i)?;
    }
    Some(i)
}

fn literal_end(bytes: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (bytes.get(i..i + word.len())? == word).then_some(i + word.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded_strings(bytes: &[u8]) -> Vec<String> {
        strings(bytes)
            .map(|r| decode(&bytes[r]).into_owned())
            .collect()
    }

    #[test]
    fn every_string_token_is_read_keys_and_duplicates_included() {
        let line = br#"{"a":"x","a":"y\"z","b":[{"c\u0041":"\ud83d\ude00"}]}"#;
        assert_eq!(
            decoded_strings(line),
            ["a", "x", "a", "y\"z", "b", "cA", "\u{1F600}"]
        );
    }

    #[test]
    fn escapes_decode_as_lenient_readers_do() {
        assert_eq!(decode(br"\ud800x"), "\u{FFFD}x", "a lone surrogate");
        assert_eq!(decode(br"\q\u12"), "qu12", "unknown and cut-short escapes");
        assert_eq!(decode(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(decode(br"\/\t\\"), "/\t\\");
    }

    #[test]
    fn decoded_ranges_map_back_to_whole_escapes() {
        let raw = br"\u00e9ab\ud83d\ude00cd\n";
        let text = decode(raw);
        let ab = text.find("ab").unwrap();
        let emoji = text.find('\u{1F600}').unwrap();
        let cd = text.find("cd").unwrap();
        let ranges = raw_ranges(raw, &[ab..ab + 2, emoji..emoji + 4, cd..text.len()]);
        let bytes: Vec<&[u8]> = ranges.into_iter().map(|r| &raw[r]).collect();
        assert_eq!(bytes, [&b"ab"[..], br"\ud83d\ude00", br"cd\n"]);
        // Spans side by side: each ends where the next starts.
        let ranges = raw_ranges(raw, &[0..ab, ab..ab + 2]);
        assert_eq!(ranges, [0..6, 6..8]);
    }

    #[test]
    fn the_grammar_takes_any_depth_and_refuses_what_is_not_json() {
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(is_json(deep.as_bytes()));
        for ok in [
            r#" {"a": [1, -2.5e+3, true, false, null, "\ud800"], "a": {}} "#,
            "0",
            r#""s""#,
        ] {
            assert!(is_json(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            "{",
            "[1,]",
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            "[1] 2",
            "01",
            r#"["\q"]"#,
            "[\"a\tb\"]",
            "GH_TOKEN=x",
            "[}",
        ] {
            assert!(!is_json(bad.as_bytes()), "{bad}");
        }
    }
}
