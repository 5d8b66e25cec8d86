//! The prefilter never costs a hit: searching with it finds exactly what
//! parsing every line finds, on logs written by differently escaping
//! encoders.

use proptest::prelude::*;

use super::prefilter::Prefilter;
use super::*;

/// Characters that exercise escapes, folding and UTF-8 widths.
const ALPHABET: &[char] = &[
    'a', 'b', 'k', 'K', 's', 'S', 'x', '-', '1', ' ', '\u{17f}', '\u{212a}', '/', '"', '\\', '<',
    '&', '\'', 'é', 'É', '😀', '\t', '\n',
];

/// How encoders differ in what they escape beyond what JSON requires.
#[derive(Debug, Clone, Copy)]
enum Encoder {
    /// serde_json, JavaScript: only `"`, `\` and controls.
    Minimal,
    /// Python's `ensure_ascii`: every non-ASCII character as `\u`.
    AsciiOnly,
    /// PHP: `/` as `\/`, non-ASCII as `\u`.
    Slashes,
    /// Go: `<>&` as `\u`.
    HtmlSafe,
    /// Any legal choice, character by character.
    Mixed(u64),
}

/// One JSON string as `encoder` writes it.
fn encode(text: &str, encoder: Encoder) -> String {
    let mut out = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        let (u, slash, html, other) = match encoder {
            Encoder::Minimal => (false, false, false, false),
            Encoder::AsciiOnly => (true, false, false, false),
            Encoder::Slashes => (true, true, false, false),
            Encoder::HtmlSafe => (false, false, true, false),
            Encoder::Mixed(bits) => {
                let e = bits >> (i % 64) & 1 == 1;
                (e, e, e, e)
            }
        };
        match c {
            '"' => out.push_str(if other { "\\u0022" } else { "\\\"" }),
            '\\' => out.push_str(if other { "\\u005C" } else { "\\\\" }),
            '\n' => out.push_str(if other { "\\u000a" } else { "\\n" }),
            '\t' => out.push_str(if other { "\\u0009" } else { "\\t" }),
            '/' if slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\'' if html => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if !c.is_ascii() && u => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn encoder() -> impl Strategy<Value = Encoder> {
    prop_oneof![
        Just(Encoder::Minimal),
        Just(Encoder::AsciiOnly),
        Just(Encoder::Slashes),
        Just(Encoder::HtmlSafe),
        any::<u64>().prop_map(Encoder::Mixed),
    ]
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(ALPHABET), 0..10)
        .prop_map(|cs| cs.into_iter().collect())
}

/// A log of messages with text and a tool call, each written by its own
/// encoder; now and then a blank or malformed line.
fn log() -> impl Strategy<Value = (String, Vec<String>)> {
    let message = (text(), text(), encoder(), 0..4u8);
    proptest::collection::vec(message, 1..8).prop_map(|messages| {
        let mut log = String::new();
        let mut texts = Vec::new();
        for (i, (said, output, encoder, extra)) in messages.into_iter().enumerate() {
            let role = if i % 2 == 0 { "user" } else { "agent" };
            log.push_str(&format!(
                r#"{{"id":"m{i}","role":"{role}","timestamp":"2025-03-01T10:00:00.000Z","content":[{{"type":"text","text":{}}}],"toolCalls":[{{"toolCallId":"t{i}","name":"read","status":"completed","output":{}}}]}}"#,
                encode(&said, encoder),
                encode(&output, encoder),
            ));
            log.push('\n');
            match extra {
                0 => log.push_str(["\n", "  \n", "\t\r\n"][i % 3]),
                1 => log.push_str(&format!("{{\"id\":\"bad{i}\",\"text\":{}\n", encode(&said, encoder))),
                _ => {}
            }
            texts.push(said);
            texts.push(output);
        }
        (log, texts)
    })
}

/// A query: part of a text or letters of the alphabet, as a literal, a
/// case-insensitive literal, or one of a few regex shapes around it.
fn query(texts: &[String], pick: (usize, usize, usize), how: u8, shape: u8) -> Option<Query> {
    let chars: Vec<char> = texts[pick.0 % texts.len()].chars().collect();
    let part: String = if chars.is_empty() {
        ALPHABET[pick.1 % ALPHABET.len()].to_string()
    } else {
        let from = pick.1 % chars.len();
        let len = 1 + pick.2 % 4;
        chars[from..(from + len).min(chars.len())].iter().collect()
    };
    let ignore_case = how % 2 == 1;
    let (pattern, regex) = match how / 2 {
        0 => (part, false),
        _ => {
            let e = regex::escape(&part);
            let p = match shape % 5 {
                0 => e,
                1 => format!("{e}."),
                2 => format!(r"\b{e}"),
                3 => format!("(?:{e}|xK)"),
                _ => format!("[ab]{e}"),
            };
            (p, true)
        }
    };
    Query::new(&pattern, regex, ignore_case, None).ok()
}

fn hits(log: &str, query: &Query) -> Vec<String> {
    let mut found = Vec::new();
    scan::scan_log(
        log.as_bytes(),
        std::path::Path::new("m.jsonl"),
        query,
        &mut |e| {
            found.push(match e {
                Event::Hit(h) => format!("{} {} {:?} {:?}", h.index, h.field, h.line, h.matches),
                Event::Malformed(e) => format!("malformed {e}"),
                other => format!("{other:?}"),
            });
            true
        },
    )
    .expect("read from memory");
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_prefilter_finds_every_hit_that_parsing_every_line_finds(
        (log, texts) in log(),
        pick in (any::<usize>(), any::<usize>(), any::<usize>()),
        how in 0..4u8,
        shape in 0..5u8,
    ) {
        let Some(query) = query(&texts, pick, how, shape) else { return Ok(()) };
        let everything = Query { prefilter: Prefilter::every_line(), ..query.clone() };
        let all = hits(&log, &everything);
        let fast: Vec<String> = hits(&log, &query);
        // Malformed lines are reported only when they are candidates.
        let all_hits: Vec<&String> = all.iter().filter(|h| !h.starts_with("malformed")).collect();
        let fast_hits: Vec<&String> = fast.iter().filter(|h| !h.starts_with("malformed")).collect();
        prop_assert_eq!(fast_hits, all_hits, "query {:?} on\n{}", query, log);
    }
}
