//! The rule table: what a secret looks like. One place, each rule with its
//! name (shown in findings and in `[REDACTED:<name>]`), its pattern, the
//! part of the match that is the secret, and an optional check that keeps
//! look-alikes out (placeholders, low-entropy words).
//!
//! The patterns follow the token formats the providers document (and that
//! gitleaks and GitHub secret scanning use); the generic rules want a
//! secret-sounding name next to the value.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// One kind of secret.
pub struct Rule {
    /// Shown in findings and redactions: `aws-access-key-id`.
    pub name: &'static str,
    pattern: &'static str,
    /// The capture group that is the secret (0: the whole match).
    group: usize,
    /// A further test of the secret, when the pattern alone is too loose.
    check: Option<fn(&str) -> bool>,
}

const RULES: &[Rule] = &[
    Rule {
        name: "private-key",
        // The whole block; a block cut short (no END line) up to where it stops.
        pattern: r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END[A-Z0-9 ]{0,30} PRIVATE KEY( BLOCK)?-----|\z)",
        group: 0,
        check: None,
    },
    Rule {
        name: "aws-access-key-id",
        pattern: r"\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b",
        group: 1,
        check: None,
    },
    Rule {
        name: "aws-secret-access-key",
        pattern: r#"(?i)aws.{0,20}?(?:secret|private).{0,20}?\\?['"]?\s*[:=]\s*\\?['"]?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        group: 1,
        check: Some(looks_random),
    },
    Rule {
        name: "gcp-api-key",
        pattern: r"\b(AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)",
        group: 1,
        check: None,
    },
    Rule {
        name: "azure-storage-key",
        pattern: r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        group: 1,
        check: None,
    },
    Rule {
        name: "github-token",
        pattern: r"\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b",
        group: 1,
        check: None,
    },
    Rule {
        name: "gitlab-token",
        pattern: r"\b(glpat-[A-Za-z0-9_\-]{20,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "slack-token",
        pattern: r"\b(xox[abposr]-[A-Za-z0-9\-]{10,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "slack-webhook",
        pattern: r"(https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "discord-webhook",
        pattern: r"(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "telegram-bot-token",
        pattern: r"\b(\d{8,10}:AA[A-Za-z0-9_\-]{33})(?:[^A-Za-z0-9_\-]|$)",
        group: 1,
        check: None,
    },
    Rule {
        name: "anthropic-api-key",
        pattern: r"\b(sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_\-]{32,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "openai-api-key",
        pattern: r"\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "stripe-key",
        pattern: r"\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "npm-token",
        pattern: r"\b(npm_[A-Za-z0-9]{36})\b",
        group: 1,
        check: None,
    },
    Rule {
        name: "pypi-token",
        pattern: r"\b(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "jwt",
        pattern: r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})",
        group: 1,
        check: None,
    },
    Rule {
        name: "database-url-password",
        pattern: r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|clickhouse)://[^\s:/@]+:([^\s@/]+)@",
        group: 1,
        check: Some(not_placeholder),
    },
    Rule {
        name: "env-secret",
        // `.env` style: a SECRET-sounding name assigned a value at a line's start.
        pattern: r#"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIALS?)[A-Z0-9_]*[ \t]*=[ \t]*["']?([^\s"'#]{8,})"#,
        group: 1,
        check: Some(not_a_setting),
    },
    Rule {
        name: "generic-secret",
        // A long random-looking value right after a key/token/secret name
        // (quotes may be escaped: JSON quoted inside a tool's output).
        pattern: r#"(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|credential|auth[_-]?key|access[_-]?key)[A-Za-z0-9_\-]{0,20}\\?["']?\s*[:=]\s*\\?["']?([A-Za-z0-9+/_\-.=]{20,})"#,
        group: 1,
        check: Some(looks_random),
    },
];

/// The rules, compiled once; a set to learn in one pass which apply.
pub(super) struct Compiled {
    pub set: RegexSet,
    pub rules: Vec<(&'static Rule, Regex)>,
}

pub(super) static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    // The patterns are constants, tested below: a failure is a bug here.
    let set = RegexSet::new(RULES.iter().map(|r| r.pattern)).expect("secret rules compile");
    let rules = RULES
        .iter()
        .map(|r| (r, Regex::new(r.pattern).expect("secret rule compiles")))
        .collect();
    Compiled { set, rules }
});

/// A secret found in a string: byte range and rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub rule: &'static str,
}

/// The secrets in `text`, in order, not overlapping (the first rule in
/// the table wins an overlap: a private key block over what is inside it).
pub fn find(text: &str) -> Vec<Span> {
    let compiled = &*COMPILED;
    let mut spans: Vec<Span> = Vec::new();
    for i in compiled.set.matches(text).iter() {
        let (rule, re) = &compiled.rules[i];
        for caps in re.captures_iter(text) {
            let Some(m) = caps.get(rule.group) else {
                continue;
            };
            if m.is_empty()
                || is_documented_example(m.as_str())
                || rule.check.is_some_and(|check| !check(m.as_str()))
            {
                continue;
            }
            let span = Span {
                start: m.start(),
                end: m.end(),
                rule: rule.name,
            };
            if !spans
                .iter()
                .any(|s| s.start < span.end && span.start < s.end)
            {
                spans.push(span);
            }
        }
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// The names of every rule, in table order.
pub fn names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
}

/// Not an obvious placeholder (`${DB_PASSWORD}`, `<password>`, `changeme`,
/// `xxxxxxxx`, `your-token-here`).
fn not_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let placeholder = value.starts_with(['$', '<', '{', '%', '*'])
        || [
            "changeme",
            "example",
            "placeholder",
            "your",
            "xxxx",
            "dummy",
            "redacted",
            "secret",
            "password",
            "passwd",
            "token",
        ]
        .iter()
        .any(|w| lower.contains(w))
        || value
            .chars()
            .all(|c| c == value.chars().next().unwrap_or(c));
    !placeholder
}

/// AWS's documentation marks its example keys with `EXAMPLE`
/// (`AKIAIOSFODNN7EXAMPLE`, `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`);
/// they are copied into configs and tests everywhere, and a real key
/// holding the word does not occur.
fn is_documented_example(secret: &str) -> bool {
    secret.contains("EXAMPLE")
}

/// A value assigned to a secret-sounding name that is a secret, not a
/// setting about secrets (`SECRET_MANAGER_REGION=eu-west-1`,
/// `API_KEY_HEADER=X-Api-Key`, `PASSWORD_RESET_URL=https://…`,
/// `TOKEN_TTL_SECONDS=86400000`): not a placeholder, and not made of
/// words and numbers.
fn not_a_setting(value: &str) -> bool {
    not_placeholder(value) && !is_words_and_numbers(value)
}

/// The longest run of letters taken for a word.
const LONGEST_WORD: usize = 20;

/// Whether `value` is words and numbers joined by punctuation: a region,
/// a header name, a URL or path of plain names, a duration — what people
/// write, not what a generator draws. A random secret mixes letters and
/// digits, or cases, within its runs.
fn is_words_and_numbers(value: &str) -> bool {
    value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .all(|part| is_number(part) || is_word(part) || is_word_with_number(part))
}

fn is_number(part: &str) -> bool {
    part.bytes().all(|b| b.is_ascii_digit())
}

/// Letters as words are written: `eu`, `API`, `Key`, `camelCase` (each
/// hump two letters at least), and not longer than a word.
fn is_word(part: &str) -> bool {
    if part.len() > LONGEST_WORD || !part.bytes().all(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let all_upper = part.bytes().all(|b| b.is_ascii_uppercase());
    all_upper || humps(part).all(|hump| hump.len() >= 2 || hump == part)
}

/// `part` cut before each capital that follows a small letter.
fn humps(part: &str) -> impl Iterator<Item = &str> {
    let bytes = part.as_bytes();
    let mut start = 0;
    let mut i = 1;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        while i < bytes.len()
            && !(bytes[i].is_ascii_uppercase() && bytes[i - 1].is_ascii_lowercase())
        {
            i += 1;
        }
        let hump = &part[start..i];
        start = i;
        i += 1;
        Some(hump)
    })
}

/// A word with a short number after it (`west1`, `v2`, `sha256`) or a
/// number with a short unit (`10s`, `500ms`, `64k`).
fn is_word_with_number(part: &str) -> bool {
    let letters = part.bytes().take_while(u8::is_ascii_alphabetic).count();
    let (word, digits) = part.split_at(letters);
    if !word.is_empty() && (1..=3).contains(&digits.len()) && is_number(digits) {
        return is_word(word);
    }
    let digits = part.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = part.split_at(digits);
    !number.is_empty()
        && (1..=3).contains(&unit.len())
        && unit.bytes().all(|b| b.is_ascii_lowercase())
}

/// Mixed letters and digits with the entropy of a random string, not
/// words, a path or a repeated pattern.
fn looks_random(value: &str) -> bool {
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_upper = value.bytes().any(|b| b.is_ascii_uppercase());
    let has_lower = value.bytes().any(|b| b.is_ascii_lowercase());
    not_a_setting(value)
        && has_digit
        && (has_upper || has_lower)
        && !value.contains("..")
        && shannon_entropy(value) >= 3.5
}

/// Bits per character of `value`'s own character distribution.
fn shannon_entropy(value: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in value.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = value.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles_and_has_a_unique_name() {
        assert_eq!(COMPILED.rules.len(), RULES.len());
        let mut names: Vec<_> = names().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }

    #[test]
    fn placeholders_and_words_are_not_secrets() {
        for text in [
            "DATABASE_PASSWORD=${DB_PASSWORD}",
            "API_KEY=<your-api-key>",
            "postgres://user:changeme@localhost/db",
            "token: \"0000000000000000000000000\"",
            "the secret = src/components/navigation/sidebar.tsx",
            "password: correcthorsebatterystaple",
            "input_tokens: 12345, output_tokens: 678",
            "commit 0ed0654b5c7a8726e1742215332ac3f4a1b2c3d4",
        ] {
            assert_eq!(find(text), Vec::new(), "{text}");
        }
    }
}
