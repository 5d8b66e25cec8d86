//! A corpus of realistic fake secrets, one of each kind (built at run time
//! so that no scanner mistakes this file for a leak), found in plain text,
//! in JSON-escaped tool output and in an image's metadata, and redacted.

use super::*;
use serde_json::Value;

/// `n` characters of a fixed pseudo-random alphanumeric stream.
fn random(seed: u64, n: usize) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ALNUM[(x >> 33) as usize % ALNUM.len()] as char
        })
        .collect()
}

/// (rule, text holding one secret of that kind).
fn corpus() -> Vec<(&'static str, String)> {
    let upper = |s: String| s.to_ascii_uppercase();
    vec![
        (
            "private-key",
            format!(
                "key:\n-----BEGIN OPENSSH {k}-----\n{}\n{}\n-----END OPENSSH {k}-----\n",
                random(1, 70),
                random(2, 40),
                k = "PRIVATE KEY"
            ),
        ),
        (
            "aws-access-key-id",
            format!("id {}IA{}", "AK", upper(random(3, 16))),
        ),
        (
            "aws-secret-access-key",
            format!(
                "aws_secret_access_key = {}/{}",
                random(4, 20),
                random(5, 19)
            ),
        ),
        ("gcp-api-key", format!("key={}za{}", "AI", random(6, 35))),
        (
            "azure-storage-key",
            format!(
                "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={}==",
                random(7, 86)
            ),
        ),
        (
            "github-token",
            format!("GH_TOKEN is {}_{}", "ghp", random(8, 36)),
        ),
        ("gitlab-token", format!("use {}-{}", "glpat", random(9, 20))),
        (
            "slack-token",
            format!(
                "{}-{}-{}-{}",
                "xoxb",
                "2048163975",
                "4120359186724",
                random(10, 24)
            ),
        ),
        (
            "slack-webhook",
            format!(
                "curl https://hooks.slack.com/{}/T0{}/B0{}/{}",
                "services",
                upper(random(11, 8)),
                upper(random(12, 8)),
                random(13, 24)
            ),
        ),
        (
            "discord-webhook",
            format!(
                "https://discord.com/api/{}/112233445566778899/{}",
                "webhooks",
                random(14, 60)
            ),
        ),
        (
            "telegram-bot-token",
            format!("bot {}:AA{}", "5123456789", random(15, 33)),
        ),
        (
            "anthropic-api-key",
            format!("ANTHROPIC={}-ant-api03-{}", "sk", random(16, 93)),
        ),
        (
            "openai-api-key",
            format!("{}-proj-{}T3BlbkFJ{}", "sk", random(17, 24), random(18, 24)),
        ),
        ("stripe-key", format!("{}_live_{}", "sk", random(19, 24))),
        (
            "npm-token",
            format!(
                "//registry.npmjs.org/:_authToken={}_{}",
                "npm",
                random(20, 36)
            ),
        ),
        (
            "pypi-token",
            format!("password = {}-AgEIcHlwaS5vcmc{}", "pypi", random(21, 60)),
        ),
        (
            "jwt",
            format!(
                "Authorization: Bearer eyJ{}.eyJ{}.{}",
                random(22, 20),
                random(23, 30),
                random(24, 43)
            ),
        ),
        (
            "database-url-password",
            format!(
                "DATABASE_URL=postgres://app:{}@db.internal:5432/app",
                random(25, 14)
            ),
        ),
        (
            "env-secret",
            format!("export SESSION_SECRET={}\n", random(26, 32).to_lowercase()),
        ),
        (
            "generic-secret",
            format!("client_secret: \"{}\"", random(27, 40)),
        ),
    ]
}

#[test]
fn each_kind_is_found_in_plain_text_by_its_rule() {
    let names: Vec<&str> = rule_names().collect();
    let corpus = corpus();
    assert_eq!(corpus.len(), names.len(), "one sample per rule");
    for (rule, text) in corpus {
        let found = find(&text);
        assert_eq!(
            found.iter().map(|s| s.rule).collect::<Vec<_>>(),
            vec![rule],
            "{text:?}"
        );
        let (redacted, n) = redact_text(&text);
        assert_eq!(n, 1);
        assert!(
            redacted.contains(&format!("[REDACTED:{rule}]")),
            "{redacted}"
        );
        assert!(find(&redacted).is_empty(), "{redacted}");
    }
}

fn thread_with(lines: &[String]) -> (tempfile::TempDir, Thread) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::for_project(dir.path());
    let meta = crate::threads::new_meta("Deploy", "test", Default::default());
    let thread = store.create_thread(&meta).expect("thread");
    std::fs::write(thread.messages_path(), lines.join("\n") + "\n").expect("log");
    (dir, thread)
}

fn message(id: &str, content: Value, extra: Value) -> String {
    let mut m = serde_json::json!({
        "id": id, "role": "agent", "timestamp": "2025-03-01T10:00:00.000Z", "content": content,
    });
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), extra) {
        m.extend(extra);
    }
    m.to_string()
}

#[test]
fn secrets_are_found_in_text_escaped_tool_output_and_image_metadata_and_redacted_in_the_copy() {
    let corpus = corpus();
    let mut lines = vec![message(
        "clean",
        serde_json::json!([{"type": "text", "text": "nothing here"}]),
        Value::Null,
    )];
    for (i, (_, text)) in corpus.iter().enumerate() {
        // Plain text; the same inside a tool's JSON output (escaped twice in
        // the log); and in an image block's metadata.
        let tool_output = serde_json::json!({"stdout": text}).to_string();
        lines.push(message(
            &format!("m{i}"),
            serde_json::json!([
                {"type": "text", "text": format!("look: {text}")},
                {"type": "image", "assetRef": "assets/a.png", "mimeType": "image/png",
                 "metadata": {"caption": text}},
            ]),
            serde_json::json!({"toolCalls": [{"toolCallId": "t", "name": "bash", "status": "completed",
                "input": "cat .env", "output": tool_output}]}),
        ));
    }
    let (_dir, thread) = thread_with(&lines);
    let findings = scan_thread(&thread).expect("scan");
    for (i, (rule, _)) in corpus.iter().enumerate() {
        let on_line: Vec<&Finding> = findings.iter().filter(|f| f.line == i as u64 + 2).collect();
        assert_eq!(
            on_line.len(),
            3,
            "{rule}: text, tool output, image metadata: {on_line:?}"
        );
        // A `.env` line quoted mid-sentence is no longer at a line's start:
        // the generic rule (a secret name, then a random value) finds it.
        let by_its_rule =
            |f: &&Finding| f.rule == *rule || (*rule == "env-secret" && f.rule == "generic-secret");
        assert!(
            on_line
                .iter()
                .all(|f| by_its_rule(f) && f.file == "messages.jsonl"),
            "{rule}: {on_line:?}"
        );
        assert!(
            on_line
                .iter()
                .all(|f| !f.masked.contains(&corpus[i].1[8..]))
        );
    }
    assert_eq!(findings.len(), 3 * corpus.len());

    let out = tempfile::tempdir().expect("tempdir");
    let (copy, replaced) = redacted_copy(&thread, out.path()).expect("copy");
    assert_eq!(replaced, 3 * corpus.len());
    assert_eq!(scan_thread(&copy).expect("scan copy"), Vec::new());
    let original = std::fs::read_to_string(thread.messages_path()).expect("log");
    let redacted = std::fs::read_to_string(copy.messages_path()).expect("copy log");
    assert_eq!(
        original.lines().next(),
        redacted.lines().next(),
        "a clean line keeps its bytes"
    );
    assert_eq!(original.lines().count(), redacted.lines().count());
    for line in redacted.lines() {
        crate::atsf::parse_message_line(Path::new("m"), 1, line.as_bytes())
            .expect("still a message");
    }
    assert!(redacted.contains("[REDACTED:github-token]"));
    assert_eq!(
        std::fs::read_to_string(thread.messages_path()).expect("log"),
        original,
        "untouched"
    );
}

#[test]
fn a_secret_in_thread_json_is_found_on_its_line() {
    let (_dir, thread) = thread_with(&[]);
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(thread.meta_path()).unwrap()).unwrap();
    let token = format!("{}_{}", "ghp", random(40, 36));
    meta["title"] = Value::String(format!("Deploy with {token}"));
    std::fs::write(
        thread.meta_path(),
        serde_json::to_vec_pretty(&meta).unwrap(),
    )
    .unwrap();
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(findings.len(), 1);
    assert_eq!(
        (findings[0].file, findings[0].rule),
        ("thread.json", "github-token")
    );
    let text = std::fs::read_to_string(thread.meta_path()).unwrap();
    let line = text.lines().position(|l| l.contains(&token)).unwrap() as u64 + 1;
    assert_eq!(findings[0].line, line);
}

/// A GitHub token of the documented shape, from the pseudo-random stream.
fn github_token(seed: u64) -> String {
    format!("{}_{}", "ghp", random(seed, 36))
}

/// A message line with `rest` spliced in after its content: raw JSON text,
/// to write what serde would never write (duplicate keys, deep nesting).
fn raw_message(id: &str, rest: &str) -> String {
    format!(
        r#"{{"id":"{id}","role":"agent","timestamp":"2025-03-01T10:00:00.000Z","content":[{{"type":"text","text":"hi"}}]{rest}}}"#
    )
}

/// `s` with every character as a `\uXXXX` escape (what any JSON reader
/// decodes back to `s`, and no text search of the bytes finds).
fn all_escaped(s: &str) -> String {
    s.encode_utf16().map(|u| format!("\\u{u:04x}")).collect()
}

/// The copy of `thread` redacted, its log's bytes, and how many secrets it
/// says it replaced; the copy must hold no secret for the scanner either.
fn redacted_log(thread: &Thread) -> (String, usize) {
    let out = tempfile::tempdir().expect("tempdir");
    let (copy, replaced) = redacted_copy(thread, out.path()).expect("copy");
    assert_eq!(scan_thread(&copy).expect("scan copy"), Vec::new());
    let log = std::fs::read_to_string(copy.messages_path()).expect("copy log");
    (log, replaced)
}

#[test]
fn a_secret_used_as_an_object_key_is_found_and_redacted_in_the_copy() {
    let token = github_token(50);
    let mut metadata = serde_json::Map::new();
    metadata.insert(token.clone(), Value::String("deploy".into()));
    let line = message(
        "m1",
        serde_json::json!([{"type": "text", "text": "hi"}]),
        serde_json::json!({"metadata": metadata}),
    );
    let (_dir, thread) = thread_with(&[line]);
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].rule, "github-token");
    let (log, replaced) = redacted_log(&thread);
    assert_eq!(replaced, 1);
    assert!(!log.contains(&token), "{log}");
    assert!(log.contains("[REDACTED:github-token]"), "{log}");
    crate::atsf::parse_message_line(Path::new("m"), 1, log.trim_end().as_bytes())
        .expect("still a message");
}

#[test]
fn a_secret_hidden_by_a_duplicate_key_is_found_and_redacted_in_the_copy() {
    let token = github_token(51);
    // serde keeps the last `text`; other readers keep the first.
    let line = raw_message(
        "m1",
        &format!(r#","note":{{"text":"{token}","text":"nothing here"}}"#),
    );
    let (_dir, thread) = thread_with(&[line]);
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(
        findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        ["github-token"]
    );
    let (log, replaced) = redacted_log(&thread);
    assert_eq!(replaced, 1);
    assert!(!log.contains(&token), "{log}");
    assert!(
        log.contains("nothing here"),
        "the other value is kept: {log}"
    );
}

#[test]
fn an_escaped_secret_nested_deeper_than_serde_reads_is_found_and_redacted() {
    let token = github_token(52);
    let depth = 200;
    let line = raw_message(
        "m1",
        &format!(
            r#","deep":{}"{}"{}"#,
            "[".repeat(depth),
            all_escaped(&token),
            "]".repeat(depth)
        ),
    );
    assert!(
        serde_json::from_str::<Value>(&line).is_err(),
        "too deep for serde"
    );
    let (_dir, thread) = thread_with(std::slice::from_ref(&line));
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(
        findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        ["github-token"]
    );
    let (log, replaced) = redacted_log(&thread);
    assert_eq!(replaced, 1);
    assert_eq!(
        log.trim_end(),
        line.replace(&all_escaped(&token), "[REDACTED:github-token]"),
        "only the secret's bytes change"
    );
}

#[test]
fn a_secret_split_across_escapes_is_found_and_only_its_bytes_are_redacted() {
    let token = github_token(53);
    // Every third character escaped, after a surrogate pair (an emoji) and
    // a lone surrogate that serde refuses and other readers take.
    let split: String = token
        .chars()
        .enumerate()
        .map(|(i, c)| match i % 3 {
            0 => all_escaped(&c.to_string()),
            _ => c.to_string(),
        })
        .collect();
    let text = format!(r"\ud83d\ude00 \ud800 key: {split} \u00e9\/ end");
    let line = raw_message("m1", &format!(r#","note":"{text}""#));
    let (_dir, thread) = thread_with(std::slice::from_ref(&line));
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(
        findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        ["github-token"]
    );
    assert!(findings[0].masked.starts_with("ghp_"), "{findings:?}");
    let (log, _) = redacted_log(&thread);
    assert_eq!(
        log.trim_end(),
        line.replace(&split, "[REDACTED:github-token]"),
        "the escapes around it keep their bytes"
    );
}

#[test]
fn a_secret_written_raw_in_a_line_that_is_not_json_is_found_and_redacted() {
    let token = github_token(54);
    let escaped = all_escaped(&github_token(55));
    let line = format!(r#"{{"broken": "{token}", "also": "{escaped}""#);
    let (_dir, thread) = thread_with(&[line]);
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(findings.len(), 2, "{findings:?}");
    let (log, replaced) = redacted_log(&thread);
    assert_eq!(replaced, 2);
    assert!(!log.contains(&token) && !log.contains(&escaped), "{log}");
}

#[test]
fn a_secret_key_in_thread_json_is_found_and_redacted_in_the_copy() {
    let (_dir, thread) = thread_with(&[]);
    let token = github_token(56);
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(thread.meta_path()).expect("meta")).expect("json");
    meta["metadata"] = serde_json::json!({ token.clone(): {"grove": true} });
    std::fs::write(
        thread.meta_path(),
        serde_json::to_vec_pretty(&meta).expect("json"),
    )
    .expect("write");
    let findings = scan_thread(&thread).expect("scan");
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].file, "thread.json");
    let out = tempfile::tempdir().expect("tempdir");
    let (copy, _) = redacted_copy(&thread, out.path()).expect("copy");
    let meta = std::fs::read_to_string(copy.meta_path()).expect("copy meta");
    assert!(!meta.contains(&token), "{meta}");
    copy.meta().expect("the copy's thread.json still reads");
}

#[test]
fn values_that_are_not_random_or_are_documented_examples_are_not_secrets() {
    // AWS's documented example keys, built here so no scanner stops at them.
    let example_id = format!("{}IA{}", "AK", "IOSFODNN7EXAMPLE");
    let example_secret = format!("{}/{}/{}", "wJalrXUtnFEMI", "K7MDENG", "bPxRfiCYEXAMPLEKEY");
    for text in [
        "SECRET_MANAGER_REGION=eu-west-1".to_string(),
        "API_KEY_HEADER=X-Api-Key".to_string(),
        "PASSWORD_RESET_URL=https://app.example.org/account/reset?step=2".to_string(),
        "PASSWORD_RESET_URL=https://accounts.acme.io/reset".to_string(),
        "TOKEN_TTL_SECONDS=86400000".to_string(),
        "export SECRET_KEY_FILE=config/master.key".to_string(),
        format!("AWS_ACCESS_KEY_ID={example_id}"),
        format!("AWS_SECRET_ACCESS_KEY={example_secret}"),
        format!("aws_secret_access_key = {example_secret}"),
        format!("the docs use {example_id} and {example_secret}"),
    ] {
        assert_eq!(find(&text), Vec::new(), "{text}");
    }
}

#[test]
fn random_values_next_to_the_same_names_are_still_secrets() {
    for (text, rule) in [
        (
            format!("SECRET_MANAGER_KEY={}", random(60, 24)),
            "env-secret",
        ),
        (format!("DB_PASSWORD={}9x", random(61, 10)), "env-secret"),
        (
            format!("API_KEY={}-{}", random(62, 12), random(63, 12)),
            "env-secret",
        ),
        (
            format!(
                "AWS_ACCESS_KEY_ID={}IA{}",
                "AK",
                random(64, 16).to_uppercase()
            ),
            "aws-access-key-id",
        ),
    ] {
        assert_eq!(
            find(&text).iter().map(|s| s.rule).collect::<Vec<_>>(),
            [rule],
            "{text}"
        );
    }
}
