//! Editing a JSON document as text, so that everything grove does not add
//! or take out stays byte for byte as its author wrote it: key order,
//! indentation, line endings, number spellings (`1.50`), escapes.
//!
//! A parse gives each value's byte span. An edit appends a child to an
//! object or array, or removes one, and the two are exact inverses: the
//! child is appended after the last one with the separator the container
//! already uses, and removing it deletes exactly that separator and child.
//! The text must be valid JSON (checked with `serde_json` first); the
//! parser only finds the spans.

use std::ops::Range;

/// A value of the document and where it is.
#[derive(Debug)]
pub struct Node {
    /// The byte offset of its first character.
    pub start: usize,
    /// The byte offset just past its last character.
    pub end: usize,
    /// What it is (with its children).
    pub kind: Kind,
}

/// What a [`Node`] is.
#[derive(Debug)]
pub enum Kind {
    /// Its members, in the order of the text.
    Object(Vec<Member>),
    /// Its elements.
    Array(Vec<Node>),
    /// A string, decoded.
    String(String),
    /// A number, `true`, `false` or `null`.
    Scalar,
}

/// One `"key": value` of an object.
#[derive(Debug)]
pub struct Member {
    /// The key, decoded.
    pub key: String,
    /// Where its key's opening quote is.
    pub key_start: usize,
    /// Just past its key's closing quote.
    pub key_end: usize,
    pub value: Node,
}

impl Node {
    /// The members of an object (none for anything else).
    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(m) => m,
            _ => &[],
        }
    }

    /// The elements of an array (none for anything else).
    pub fn elements(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(e) => e,
            _ => &[],
        }
    }

    /// The last member named `key`: the one a JSON reader keeps.
    pub fn get(&self, key: &str) -> Option<&Member> {
        self.members().iter().rev().find(|m| m.key == key)
    }

    /// The decoded string, when it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    /// The spans of its children: members from key to value, or elements.
    fn child_spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(m) => m.iter().map(|m| (m.key_start, m.value.end)).collect(),
            Kind::Array(e) => e.iter().map(|e| (e.start, e.end)).collect(),
            _ => Vec::new(),
        }
    }
}

/// How deep a document may nest (serde_json refuses deeper ones anyway).
const MAX_DEPTH: usize = 256;

/// The spans of the JSON document `text`; `None` when it is not JSON.
pub fn parse(text: &str) -> Option<Node> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let root = p.value(0)?;
    p.skip_ws();
    (p.pos == p.bytes.len()).then_some(root)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        let start = self.pos;
        let kind = match self.peek()? {
            b'{' => Kind::Object(self.object(depth)?),
            b'[' => Kind::Array(self.array(depth)?),
            b'"' => Kind::String(self.string()?),
            _ => self.scalar()?,
        };
        Some(Node {
            start,
            end: self.pos,
            kind,
        })
    }

    fn object(&mut self, depth: usize) -> Option<Vec<Member>> {
        self.eat(b'{')?;
        let mut members = Vec::new();
        if self.eat(b'}').is_some() {
            return Some(members);
        }
        loop {
            self.skip_ws();
            let key_start = self.pos;
            let key = self.string()?;
            let key_end = self.pos;
            self.eat(b':')?;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_start,
                key_end,
                value,
            });
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(members);
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Vec<Node>> {
        self.eat(b'[')?;
        let mut elements = Vec::new();
        if self.eat(b']').is_some() {
            return Some(elements);
        }
        loop {
            elements.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(elements);
                }
                _ => return None,
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        (self.peek()? == b'"').then_some(())?;
        self.pos += 1;
        loop {
            match self.peek()? {
                // Every escape's next byte is ASCII, so this stays on a
                // character boundary.
                b'\\' => self.pos += 2,
                b'"' => break,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        serde_json::from_str(self.text.get(start..self.pos)?).ok()
    }

    fn scalar(&mut self) -> Option<Kind> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
        {
            self.pos += 1;
        }
        (self.pos > start).then_some(Kind::Scalar)
    }
}

/// The bytes to delete so that child `index` of `container` (a member or an
/// element) leaves it, with the separator that joined it: the exact
/// inverse of [`append`] for its last child.
pub fn removal(container: &Node, index: usize) -> Option<Range<usize>> {
    let spans = container.child_spans();
    let (start, end) = *spans.get(index)?;
    Some(if spans.len() == 1 {
        // The only child: from the bracket on, so the whitespace that
        // followed it (before the closing bracket) is what was there
        // before it was added.
        container.start + 1..end
    } else if index > 0 {
        spans[index - 1].1..end
    } else {
        start..spans[1].0
    })
}

/// How the document is laid out, for what grove adds to look like the rest.
#[derive(Debug, Clone)]
pub struct Style {
    newline: &'static str,
    unit: String,
    colon: String,
}

impl Style {
    /// The style of `text` (two spaces and `\n` when it shows none).
    pub fn of(text: &str, root: &Node) -> Style {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = text
            .split('\n')
            .skip(1)
            .map(|line| {
                let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
                &line[..indent]
            })
            .find(|indent| !indent.is_empty())
            .map(|indent| {
                if indent.starts_with('\t') {
                    "\t".to_string()
                } else {
                    indent.to_string()
                }
            })
            .unwrap_or_else(|| "  ".to_string());
        let colon = first_colon(text, root).unwrap_or_else(|| ": ".to_string());
        Style {
            newline,
            unit,
            colon,
        }
    }
}

/// What is between the first key of the document and its value (`": "`).
fn first_colon(text: &str, node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Object(members) => members
            .first()
            .and_then(|m| text.get(m.key_end..m.value.start))
            .map(str::to_string),
        Kind::Array(elements) => elements.iter().find_map(|e| first_colon(text, e)),
        _ => None,
    }
}

/// A value grove writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Str(String),
    Int(u64),
    /// Members in the order they are written.
    Object(Vec<(String, Out)>),
    Array(Vec<Out>),
}

/// What goes into a container: a member of an object, or an element of an
/// array.
#[derive(Debug, Clone)]
pub enum Child<'a> {
    Member(&'a str, &'a Out),
    Element(&'a Out),
}

/// Where to insert what so that `child` becomes the last child of
/// `container` (an object or an array of `text`), laid out like its
/// siblings: on a line of its own, indented as they are, when they are on
/// lines of their own; inline otherwise.
pub fn append(text: &str, container: &Node, style: &Style, child: Child<'_>) -> (usize, String) {
    let spans = container.child_spans();
    let spaced = style.colon.contains(char::is_whitespace);
    let comma = if spaced { ", " } else { "," };
    let (at, lead) = match spans.as_slice() {
        [] => {
            let inner = text
                .get(container.start + 1..container.end - 1)
                .unwrap_or("");
            let lead = match inner.rfind('\n') {
                Some(nl) => format!("{}{}{}", style.newline, &inner[nl + 1..], style.unit),
                None if inner.is_empty() => String::new(),
                None => " ".to_string(),
            };
            (container.start + 1, lead)
        }
        [only] => {
            let before = text.get(container.start + 1..only.0).unwrap_or("");
            let lead = if before.contains('\n') {
                format!(",{before}")
            } else {
                comma.to_string()
            };
            (only.1, lead)
        }
        [.., previous, last] => (last.1, text.get(previous.1..last.0).unwrap_or(comma).into()),
    };
    let layout = match lead.rfind('\n') {
        Some(nl) => Layout::Lines(lead[nl + 1..].to_string()),
        None => Layout::Inline(comma),
    };
    let mut out = lead;
    if let Child::Member(key, _) = child {
        out.push_str(&quote(key));
        out.push_str(&style.colon);
    }
    let (Child::Member(_, value) | Child::Element(value)) = child;
    render(value, style, &layout, &mut out);
    (at, out)
}

/// How a new value is laid out.
#[derive(Debug, Clone)]
enum Layout {
    /// Over lines, its first line indented by this.
    Lines(String),
    /// On one line, this between things.
    Inline(&'static str),
}

fn quote(s: &str) -> String {
    // Serializing a `str` cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

fn render(value: &Out, style: &Style, layout: &Layout, out: &mut String) {
    let (open, close, children): (char, char, Vec<(Option<&str>, &Out)>) = match value {
        Out::Str(s) => return out.push_str(&quote(s)),
        Out::Int(n) => return out.push_str(&n.to_string()),
        Out::Object(m) => (
            '{',
            '}',
            m.iter().map(|(k, v)| (Some(k.as_str()), v)).collect(),
        ),
        Out::Array(e) => ('[', ']', e.iter().map(|v| (None, v)).collect()),
    };
    out.push(open);
    let inner = match layout {
        Layout::Lines(indent) => Layout::Lines(format!("{indent}{}", style.unit)),
        other => other.clone(),
    };
    for (i, (key, child)) in children.iter().enumerate() {
        match &inner {
            Layout::Lines(indent) => {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(style.newline);
                out.push_str(indent);
            }
            Layout::Inline(comma) if i > 0 => out.push_str(comma),
            Layout::Inline(_) => {}
        }
        if let Some(key) = key {
            out.push_str(&quote(key));
            out.push_str(&style.colon);
        }
        render(child, style, &inner, out);
    }
    if let (Layout::Lines(indent), false) = (layout, children.is_empty()) {
        out.push_str(style.newline);
        out.push_str(indent);
    }
    out.push(close);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Out {
        Out::Object(vec![
            ("matcher".into(), Out::Str("*".into())),
            ("timeout".into(), Out::Int(15)),
        ])
    }

    /// Appends `hook()` to the container at `path` (member keys or element
    /// indexes) of `text`, checks removing it gives `text` back, and
    /// returns the text with it.
    fn round_trip(text: &str, path: &[&str]) -> String {
        let root = parse(text).unwrap();
        let mut node = &root;
        for step in path {
            node = match step.parse::<usize>() {
                Ok(i) => &node.elements()[i],
                Err(_) => &node.get(step).unwrap().value,
            };
        }
        let style = Style::of(text, &root);
        let value = hook();
        let child = match node.kind {
            Kind::Object(_) => Child::Member("new", &value),
            _ => Child::Element(&value),
        };
        let (at, insert) = append(text, node, &style, child);
        let mut added = text.to_string();
        added.insert_str(at, &insert);
        let parsed: serde_json::Value = serde_json::from_str(&added).expect(&added);
        assert!(parsed.is_object() || parsed.is_array(), "{added}");

        let again = parse(&added).unwrap();
        let mut node = &again;
        for step in path {
            node = match step.parse::<usize>() {
                Ok(i) => &node.elements()[i],
                Err(_) => &node.get(step).unwrap().value,
            };
        }
        let last = node.child_spans().len() - 1;
        let range = removal(node, last).unwrap();
        let mut removed = added.clone();
        removed.replace_range(range, "");
        assert_eq!(removed, text, "removing what was added from\n{added}");
        added
    }

    #[test]
    fn appending_then_removing_gives_the_text_back() {
        for (text, path) in [
            ("{}", &[][..]),
            ("{ }", &[]),
            ("{\n}\n", &[]),
            ("{\"a\":1}", &[]),
            ("{\"a\": 1.50}", &[]),
            ("{\r\n    \"a\" : [ ]\r\n}", &[]),
            ("{\r\n    \"a\" : [ ]\r\n}", &["a"]),
            ("{\n\t\"a\": [\n\t\t1,\n\t\t2\n\t]\n}", &["a"]),
            ("{\n\t\"a\": [\n\t]\n}", &["a"]),
            ("[1 , 2]", &[]),
            ("[{\"x\": {}}]", &["0", "x"]),
            ("{\"k\\u00e9\": \"\\ud83d\\ude00\", \"b\": []}", &["b"]),
        ] {
            round_trip(text, path);
        }
    }

    #[test]
    fn what_is_appended_looks_like_its_siblings() {
        assert_eq!(
            round_trip("{\n\t\"a\": [\n\t\t1\n\t]\n}", &["a"]),
            "{\n\t\"a\": [\n\t\t1,\n\t\t{\n\t\t\t\"matcher\": \"*\",\n\t\t\t\"timeout\": 15\n\t\t}\n\t]\n}"
        );
        assert_eq!(
            round_trip("{\"a\":1}", &[]),
            "{\"a\":1,\"new\":{\"matcher\":\"*\",\"timeout\":15}}"
        );
        assert_eq!(
            round_trip("{\n}\n", &[]),
            "{\n  \"new\": {\n    \"matcher\": \"*\",\n    \"timeout\": 15\n  }\n}\n"
        );
        assert_eq!(
            round_trip("[ ]", &[]),
            "[ {\"matcher\": \"*\", \"timeout\": 15} ]"
        );
    }

    #[test]
    fn removing_a_child_in_the_middle_or_first_keeps_the_rest_valid() {
        for (text, index, want) in [
            ("[1, 2, 3]", 1, "[1, 3]"),
            ("[1, 2, 3]", 0, "[2, 3]"),
            ("{\"a\": 1 ,\n \"b\": 2}", 0, "{\"b\": 2}"),
            ("[ 1 ]", 0, "[ ]"),
        ] {
            let root = parse(text).unwrap();
            let mut out = text.to_string();
            out.replace_range(removal(&root, index).unwrap(), "");
            assert_eq!(out, want);
        }
    }

    /// Any JSON value, its object keys in any order.
    fn value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\\u{e9}\u{1f600} ]{0,6}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z]{1,4}", inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `value` written as people write JSON: minified, two or four spaces,
    /// tabs, CRLF.
    fn written(value: &serde_json::Value, style: usize) -> String {
        use serde::Serialize;
        let indent: &[u8] = match style % 4 {
            0 => return value.to_string(),
            1 => b"  ",
            2 => b"    ",
            _ => b"\t",
        };
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        value.serialize(&mut ser).unwrap();
        let text = String::from_utf8(out).unwrap();
        if style >= 4 {
            text.replace('\n', "\r\n")
        } else {
            text
        }
    }

    /// The paths of every object and array of `node`.
    fn containers(node: &Node, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        match &node.kind {
            Kind::Object(members) => {
                out.push(path.clone());
                for m in members {
                    let mut p = path.clone();
                    p.push(m.key.clone());
                    containers(&m.value, p, out);
                }
            }
            Kind::Array(elements) => {
                out.push(path.clone());
                for (i, e) in elements.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(i.to_string());
                    containers(e, p, out);
                }
            }
            _ => {}
        }
    }

    proptest::proptest! {
        #[test]
        fn any_append_is_undone_by_its_removal(
            value in value(),
            style in 0..8usize,
            pick in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let text = written(&value, style);
            let mut paths = Vec::new();
            containers(&parse(&text).unwrap(), Vec::new(), &mut paths);
            // Keys are letters: a step of digits is an index.
            if !paths.is_empty() {
                let path: Vec<&str> = pick.get(&paths).iter().map(String::as_str).collect();
                round_trip(&text, &path);
            }
        }
    }

    #[test]
    fn spans_and_keys_are_found_through_escapes() {
        let text = "{\"h\\u006fok\\\"s\" : [\"a\\\\\", 1e5, null]}";
        let root = parse(text).unwrap();
        let member = root.get("ho\u{6f}k\"s").unwrap();
        let elements = member.value.elements();
        assert_eq!(elements.len(), 3);
        assert_eq!(elements[0].as_str(), Some("a\\"));
        assert_eq!(&text[elements[1].start..elements[1].end], "1e5");
        assert!(parse("{\"a\": 1} x").is_none());
        assert!(parse("{\"a\": ").is_none());
    }
}
