//! `grove scan`, and the secret gate of `grove export`: fake keys found,
//! masked, refused, redacted in the copy that leaves; none found in the
//! real recordings of the fixtures.

use std::path::Path;

use crate::support::*;

/// A GitHub token of the documented shape, built here so that no scanner
/// takes this file for a leak.
fn token() -> String {
    format!("{}_{}", "ghp", "R7mQ2xV9kLp4Tz8Wn3Yb6Hc1Jd5Fs0Ga2Ue7")
}

fn thread_with_secret(sb: &Sandbox, dir: &Path) -> (String, String) {
    let id = new_thread(sb, dir, "Deploy");
    let line = serde_json::json!({
        "id": "m1", "role": "agent", "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "text", "text": "Exported the env"}],
        "toolCalls": [{"toolCallId": "t1", "name": "bash", "status": "completed",
            "input": "cat .env", "output": format!("{{\"GH_TOKEN\": \"{}\"}}", token())}]
    });
    let clean = serde_json::json!({
        "id": "m0", "role": "user", "timestamp": "2025-03-01T09:59:00.000Z",
        "content": [{"type": "text", "text": "Set up the deploy"}]
    });
    append_stdin(sb, dir, &id, &format!("{clean}\n{line}"));
    let log = dir.join(".agent/threads").join(&id).join("messages.jsonl");
    (id, std::fs::read_to_string(log).unwrap())
}

#[test]
fn scan_names_thread_file_line_and_rule_with_the_secret_masked() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let clean = new_thread(&sb, &dir, "Clean");
    let (id, _) = thread_with_secret(&sb, &dir);
    let out = run(sb.grove(&dir).args(["scan"]));
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        format!("{id}:messages.jsonl:2: github-token ghp_… (40 chars)")
    );
    assert!(!stdout.contains(&token()), "masked");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 secret(s) in 1 of 2 thread(s)"),
        "{stderr}"
    );
    let found = json(&String::from_utf8_lossy(
        &run(sb.grove(&dir).args(["scan", &id, "--json"])).stdout,
    ));
    assert_eq!(found[0]["rule"], "github-token");
    assert_eq!(found[0]["line"], 2);
    // A clean thread: exit 0.
    ok(sb.grove(&dir).args(["scan", &clean]));
}

#[test]
fn export_refuses_secrets_unless_redacted_or_allowed_and_never_changes_the_thread() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let (id, log) = thread_with_secret(&sb, &dir);
    let err = fails_with(sb.grove(&dir).args(["export", &id, "-f", "jsonl"]), 1);
    assert!(
        err.contains("1 secret(s)") && err.contains("--redact") && err.contains("grove scan"),
        "{err}"
    );
    let redacted = ok(sb.grove(&dir).args(["export", &id, "-f", "md", "--redact"]));
    assert!(!redacted.contains(&token()), "{redacted}");
    assert!(redacted.contains("[REDACTED:github-token]"), "{redacted}");
    assert!(redacted.contains("Set up the deploy"), "the rest is there");
    let allowed = ok(sb
        .grove(&dir)
        .args(["export", &id, "-f", "jsonl", "--allow-secrets"]));
    assert!(allowed.contains(&token()));
    let now = std::fs::read_to_string(dir.join(".agent/threads").join(&id).join("messages.jsonl"));
    assert_eq!(now.unwrap(), log, "the thread itself is untouched");
}

/// Every string of every JSON and JSONL file of the fixtures (real
/// recordings of Claude Code, Codex, Gemini, Amp, HQ… with their ids,
/// hashes, paths and tool output): the rules must find nothing there.
#[test]
fn the_rules_find_nothing_in_the_real_recordings_of_the_fixtures() {
    let mut files = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl")
            {
                files.push(path);
            }
        }
    }
    let (mut strings, mut found) = (0usize, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let docs: Vec<serde_json::Value> = match serde_json::from_str(&text) {
            Ok(doc) => vec![doc],
            Err(_) => text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        for doc in &docs {
            visit(doc, &mut |s| {
                strings += 1;
                for span in grove::secrets::find(s) {
                    found.push(format!(
                        "{}: {} {:?}",
                        file.display(),
                        span.rule,
                        &s[span.start..span.end]
                    ));
                }
            });
        }
    }
    assert!(
        files.len() > 40 && strings > 10_000,
        "{} files, {strings} strings",
        files.len()
    );
    assert_eq!(found, Vec::<String>::new());
}

fn visit(value: &serde_json::Value, f: &mut dyn FnMut(&str)) {
    match value {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| visit(v, f)),
        // Keys too: the scan reads them as it reads values.
        serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| {
            f(k);
            visit(v, f);
        }),
        _ => {}
    }
}

/// A second token, and `s` with every character a `\uXXXX` escape.
fn other_token() -> String {
    format!("{}_{}", "ghp", "Wn3Yb6Hc1Jd5Fs0Ga2Ue7R7mQ2xV9kLp4Tz8")
}

fn all_escaped(s: &str) -> String {
    s.encode_utf16().map(|u| format!("\\u{u:04x}")).collect()
}

/// Appends `lines` to the thread's log as they are (`append` would parse
/// and rewrite them).
fn write_raw(dir: &Path, id: &str, lines: &[String]) {
    use std::io::Write;
    let log = dir.join(".agent/threads").join(id).join("messages.jsonl");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

#[test]
fn export_redact_leaves_no_secret_used_as_a_key() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Deploy");
    let line = serde_json::json!({
        "id": "m1", "role": "agent", "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "text", "text": "the env, by name"}],
        "metadata": {token(): "GH_TOKEN"},
        "toolCalls": [{"toolCallId": "t1", "name": "bash", "status": "completed",
            "input": "echo", "rawInput": {token(): "echo"}, "output": "ok"}]
    });
    append_stdin(&sb, &dir, &id, &line.to_string());
    let found = json(&String::from_utf8_lossy(
        &run(sb.grove(&dir).args(["scan", &id, "--json"])).stdout,
    ));
    assert_eq!(found.as_array().map(Vec::len), Some(2), "{found}");
    for format in ["jsonl", "md", "html"] {
        let out = ok(sb
            .grove(&dir)
            .args(["export", &id, "-f", format, "--redact"]));
        assert!(!out.contains(&token()), "{format}: {out}");
    }
    let jsonl = ok(sb
        .grove(&dir)
        .args(["export", &id, "-f", "jsonl", "--redact"]));
    assert!(jsonl.contains("[REDACTED:github-token]"), "{jsonl}");
}

#[test]
fn scan_finds_secrets_behind_a_duplicate_key_and_below_serdes_depth_and_export_redacts_them() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Deploy");
    let head = r#"{"id":"m1","role":"agent","timestamp":"2025-03-01T10:00:00.000Z","content":[{"type":"text","text":"hi"}]"#;
    let duplicate = format!(
        r#"{head},"note":{{"text":"{}","text":"nothing"}}}}"#,
        token()
    );
    let deep = format!(
        r#"{},"deep":{}"{}"{}}}"#,
        head.replace("m1", "m2"),
        "[".repeat(200),
        all_escaped(&other_token()),
        "]".repeat(200)
    );
    write_raw(&dir, &id, &[duplicate, deep]);
    let out = run(sb.grove(&dir).args(["scan", &id]));
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            format!("{id}:messages.jsonl:1: github-token ghp_… (40 chars)"),
            format!("{id}:messages.jsonl:2: github-token ghp_… (40 chars)"),
        ]
    );
    let jsonl = ok(sb
        .grove(&dir)
        .args(["export", &id, "-f", "jsonl", "--redact"]));
    for hidden in [token(), other_token(), all_escaped(&other_token())] {
        assert!(!jsonl.contains(&hidden), "{jsonl}");
    }
    assert_eq!(
        jsonl.matches("[REDACTED:github-token]").count(),
        2,
        "{jsonl}"
    );
}

#[test]
fn ordinary_settings_and_documented_example_keys_are_not_secrets() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Configure");
    let env = [
        "SECRET_MANAGER_REGION=eu-west-1".to_string(),
        "API_KEY_HEADER=X-Api-Key".to_string(),
        "PASSWORD_RESET_URL=https://accounts.acme.io/reset".to_string(),
        "TOKEN_TTL_SECONDS=86400000".to_string(),
        // AWS's documented examples, built so no scanner stops at this file.
        format!("AWS_ACCESS_KEY_ID={}IA{}", "AK", "IOSFODNN7EXAMPLE"),
        format!(
            "AWS_SECRET_ACCESS_KEY={}/{}/{}",
            "wJalrXUtnFEMI", "K7MDENG", "bPxRfiCYEXAMPLEKEY"
        ),
    ]
    .join("\n");
    let line = serde_json::json!({
        "id": "m1", "role": "agent", "timestamp": "2025-03-01T10:00:00.000Z",
        "content": [{"type": "text", "text": format!("Your settings:\n{env}")}],
        "toolCalls": [{"toolCallId": "t1", "name": "bash", "status": "completed",
            "input": "cat .env", "output": env}]
    });
    append_stdin(&sb, &dir, &id, &line.to_string());
    let out = ok(sb.grove(&dir).args(["scan", &id]));
    assert_eq!(out, "", "nothing found");
    ok(sb.grove(&dir).args(["export", &id, "-f", "jsonl"]));
}

#[test]
fn a_session_exported_with_redact_carries_no_secret_in_its_working_directory() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = new_thread(&sb, &dir, "Deploy");
    append_stdin(
        &sb,
        &dir,
        &id,
        &serde_json::json!({
            "id": "m1", "role": "user", "timestamp": "2025-03-01T10:00:00.000Z",
            "content": [{"type": "text", "text": "deploy it"}]
        })
        .to_string(),
    );
    let meta_path = dir.join(".agent/threads").join(&id).join("thread.json");
    let mut meta = read_json(&meta_path);
    meta["context"]["workingDir"] = serde_json::Value::String(format!("/srv/{}/app", token()));
    std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    for format in ["claude", "codex"] {
        let out = sb.path().join(format!("session-{format}.jsonl"));
        fails_with(
            sb.grove(&dir)
                .args(["export", &id, "-f", format, "-o", out.to_str().unwrap()]),
            1,
        );
        ok(sb.grove(&dir).args([
            "export",
            &id,
            "-f",
            format,
            "--redact",
            "-o",
            out.to_str().unwrap(),
        ]));
        let session = std::fs::read_to_string(&out).unwrap();
        assert!(!session.contains(&token()), "{format}: {session}");
        assert!(
            session.contains("[REDACTED:github-token]"),
            "{format}: {session}"
        );
    }
}
