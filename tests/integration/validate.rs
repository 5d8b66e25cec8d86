//! `grove validate`: every rule names file, line and field; what grove and
//! its importers write passes.

use std::path::Path;

use crate::support::*;

fn validate(sb: &Sandbox, dir: &Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["validate", "--json"];
    all.extend_from_slice(args);
    let out = run(sb.grove(dir).args(&all));
    (
        out.status.code(),
        json(&String::from_utf8_lossy(&out.stdout)),
    )
}

fn rules(report: &serde_json::Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}:{}: {} [{}]",
                Path::new(p["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy(),
                p["line"]
                    .as_u64()
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
                p["rule"].as_str().unwrap(),
                p["severity"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn every_importer_writes_valid_atsf() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    for (format, path) in [
        ("claude", "claude/project"),
        ("claude", "claude/branching"),
        ("claude", "claude/v2.1"),
        ("codex", "codex"),
        ("amp", "amp"),
        ("hq", "hq"),
        ("hq", "hq/shapes"),
        ("sage", "sage/.sage/sessions"),
        ("dagent", "dagent/current"),
        ("dagent", "dagent/legacy"),
    ] {
        let src = sb.path().join(format!("src-{}", path.replace('/', "-")));
        copy_tree(&fixtures().join(path), &src);
        let out = run(sb.grove(&repo).args(["import", format]).arg(&src));
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ok(sb.grove(&repo).args(["new", "a task", "--no-worktree"]));
    let (code, report) = validate(&sb, &repo, &[]);
    let errors: Vec<String> = rules(&report)
        .into_iter()
        .filter(|r| r.ends_with("[error]"))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(code, Some(0));
    assert!(report["threads"].as_u64().unwrap() > 50);
    assert!(report["messages"].as_u64().unwrap() > 400);
}

#[test]
fn problems_are_named_by_file_line_and_field_and_exit_1() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let id = new_thread(&sb, &repo, "to break");
    let (code, report) = validate(&sb, &repo, &[]);
    assert_eq!(code, Some(0), "{report}");
    assert!(rules(&report).iter().all(|r| !r.ends_with("[error]")));

    let dir = repo.join(".agent/threads").join(&id);
    let lines = [
        r#"{"id":"m1","role":"user","timestamp":"2026-01-01T10:00:00.000Z","content":[{"type":"text","text":"ok"}]}"#,
        r#"{"id":"m1","role":"robot","timestamp":"yesterday","content":[{"type":"image","mimeType":"image/png"}]}"#,
        r#"{"id":"m3","role":"agent","timestamp":"2026-01-01T10:00:02+02:00","content":[],"toolCalls":[{"toolCallId":"t","name":"x","status":"done"}]}"#,
        r#"{"id":"m4","role":"agent","timestamp":"2026-01-01T10:00:03.000Z","content":[{"type":"image","assetRef":"sha256-0000000000000000.png"}],"completesMessage":"nope"}"#,
        r#"not json"#,
    ];
    std::fs::write(dir.join("messages.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut meta = read_json(&dir.join("thread.json"));
    meta["threadId"] = serde_json::json!("someone-else");
    meta["agent"] = serde_json::json!({"id": "x"});
    std::fs::write(dir.join("thread.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    std::fs::write(
        repo.join(".agent/config.json"),
        r#"{"specVersion":"2.0","agentSettings":{"claude-code":{"apiKey":"sk-123"}},"worktreeHooks":{"postSetupCommands":[{"label":"x","platforms":["amiga"],"background":"yes"}]}}"#,
    )
    .unwrap();
    let (code, report) = validate(&sb, &repo, &[]);
    assert_eq!(code, Some(1));
    let got = rules(&report);
    for want in [
        "messages.jsonl:2: `id` \"m1\" is used by an earlier message",
        "messages.jsonl:2: `role` \"robot\" is not one of",
        "messages.jsonl:2: `timestamp` \"yesterday\" is not an ISO 8601 timestamp in UTC",
        "messages.jsonl:2: `content[0].assetRef` is required",
        "messages.jsonl:3: `timestamp` \"2026-01-01T10:00:02+02:00\" is not an ISO 8601 timestamp in UTC",
        "messages.jsonl:3: `toolCalls[0].status` \"done\" is not one of",
        "messages.jsonl:4: `completesMessage` names \"nope\"",
        "messages.jsonl:5: not valid JSON",
        "messages.jsonl:: `assetRef` \"sha256-0000000000000000.png\" names no file in assets/",
        "thread.json:: `threadId` \"someone-else\" is not the directory's name",
        "thread.json:: `agent.name` is required",
        "config.json:: `specVersion` \"2.0\": a MAJOR version above 1",
        "config.json:: `agentSettings.claude-code.apiKey` looks like a secret",
        "config.json:: `worktreeHooks.postSetupCommands[0].command` is required",
        "config.json:: `worktreeHooks.postSetupCommands[0].platforms`: \"amiga\"",
        "config.json:: `worktreeHooks.postSetupCommands[0].background`",
    ] {
        assert!(
            got.iter()
                .any(|r| r.starts_with(want) && r.ends_with("[error]")),
            "missing {want:?} in {got:#?}"
        );
    }
    // Stale stats are a SHOULD: a warning.
    assert!(
        got.iter()
            .any(|r| r.contains("`stats.messageCount`") && r.ends_with("[warning]"))
    );
    // Human output: one `file:line: rule` per problem, on stdout.
    let out = run(sb.grove(&repo).args(["validate"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{}:2: `role`",
            dir.join("messages.jsonl").display()
        )),
        "{text}"
    );
    // A thread directory can be checked on its own.
    let (code, report) = validate(&sb, &repo, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert_eq!(report["threads"], 1);
}

#[test]
fn validate_knows_groves_other_extensions() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1",
            "worktreeHooks": {"copies": [{"target": "x"}], "ports": 2.5, "env": {"A": 1}, "envFile": 3},
            "grove": {"lfs": "no", "agents": {"a": {"command": [], "native": "gpt"}}}}),
    );
    let out = run(sb.grove(&repo).args(["validate"]));
    assert_eq!(out.status.code(), Some(1));
    let out = String::from_utf8_lossy(&out.stdout);
    for field in [
        "worktreeHooks.copies[0].source",
        "worktreeHooks.ports",
        "worktreeHooks.env.A",
        "worktreeHooks.envFile",
        "grove.lfs",
        "grove.agents.a.command",
        "grove.agents.a.native",
    ] {
        assert!(out.contains(field), "{field} in {out}");
    }
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1",
            "worktreeHooks": {"copies": [{"source": "node_modules"}], "ports": 2, "env": {"A": "{port}"}, "envFile": ".env.local",
                "preRemoveCommands": [{"command": "make down"}]},
            "grove": {"lfs": false, "submodules": true, "branchPrefix": "agent/", "notify": "true",
                "agents": {"a": {"command": ["a", "{prompt}"], "resume": ["a", "-r", "{sessionId}"], "native": "claude"}}}}),
    );
    let out = run(sb.grove(&repo).args(["validate"]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_misspelt_config_key_is_named_with_the_likely_one_and_kept() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    write_config(
        &repo,
        serde_json::json!({"specVersion": "1.1",
            "worktreeHooks": {"postSetupComands": [{"command": "true"}]},
            "grove": {"branchprefix": "agent/"}}),
    );
    let out = run(sb.grove(&repo).args(["new", "t", "--no-hooks"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`worktreeHooks.postSetupComands`") && err.contains("`postSetupCommands`"),
        "{err}"
    );
    assert!(
        err.contains("`grove.branchprefix`") && err.contains("`branchPrefix`"),
        "{err}"
    );
    let report = run(sb.grove(&repo).args(["validate"]));
    assert!(String::from_utf8_lossy(&report.stdout).contains("did you mean `postSetupCommands`"));
    // Kept as it is.
    let config = read_json(&repo.join(".agent/config.json"));
    assert_eq!(
        config["worktreeHooks"]["postSetupComands"][0]["command"],
        "true"
    );
}
