//! `grove import claude`: exact counts on real transcripts, idempotent and
//! incremental re-import, branches, sidechains, unknown and malformed records.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::*;

fn import(sb: &Sandbox, dir: &Path, args: &[&str]) -> serde_json::Value {
    import_as(sb, dir, "claude", args)
}

/// `grove import FORMAT ARGS --json`: its summary. Exit 4 (something not
/// imported as it was) is accepted: several fixtures hold a malformed line
/// on purpose.
fn import_as(sb: &Sandbox, dir: &Path, format: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["import", format];
    all.extend_from_slice(args);
    all.push("--json");
    let out = run(sb.grove(dir).args(&all));
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8_lossy(&out.stdout))
}

fn claude_fixtures(sb: &Sandbox, name: &str) -> PathBuf {
    let to = sb.path().join(format!("src-{name}"));
    copy_tree(&fixtures().join("claude").join(name), &to);
    to
}

/// Every message of a thread (show --json).
fn messages(sb: &Sandbox, dir: &Path, id: &str) -> Vec<serde_json::Value> {
    json(&ok(sb.grove(dir).args(["show", id, "--json"])))["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn real_claude_transcripts_import_with_exact_counts_and_subagent_threads() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = claude_fixtures(&sb, "project");
    let before = snapshot(&src);
    let out = import(&sb, &dir, &[src.to_str().unwrap()]);
    assert_eq!(snapshot(&src), before, "the source is only read");
    assert!(out["errors"].as_array().unwrap().is_empty());
    let records = &out["records"];
    assert_eq!(records["assistant"]["mapped"], 15 + 28 + 1 + 262);
    assert_eq!(
        records["user"]["joined"],
        12 + 21 + 167,
        "every tool result joined"
    );
    // Its leafUuid is not in the file: a summary of another session.
    assert_eq!(records["summary"]["skipped"], 1);
    assert_eq!(records["summary"]["mapped"], 0);

    let rows = list_rows(&sb, &dir);
    assert_eq!(
        rows.len(),
        3 + 2 + 5 + 1,
        "mains, sidechains, the subagent file"
    );
    // Per session: messages and tool calls, main and subagent threads.
    let mut per: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for r in &rows {
        let id = r["threadId"].as_str().unwrap();
        let session = id[7..15].to_string();
        let e = per.entry(session).or_default();
        if r["mainThreadID"].is_null() {
            e.0 += r["stats"]["messageCount"].as_u64().unwrap();
        } else if !id.contains("-agent-") {
            e.1 += r["stats"]["messageCount"].as_u64().unwrap();
            assert_eq!(r["mainThreadID"], format!("claude-{}", &id[7..43]));
        }
        e.2 += r["stats"]["toolCallCount"].as_u64().unwrap();
    }
    assert_eq!(per["1af7fc5e"], (17, 0, 12));
    assert_eq!(per["5c0375b4"], (18, 14, 21));
    // (No message for the other session's summary.)
    assert_eq!(per["fe5e1c67"], (21, 249, 167));
    let agent = rows
        .iter()
        .find(|r| {
            r["threadId"]
                .as_str()
                .unwrap()
                .ends_with("-agent-test-hash-123")
        })
        .unwrap();
    assert_eq!(
        agent["mainThreadID"],
        "claude-5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    );
    assert_eq!(agent["stats"]["messageCount"], 2);
    // The other session's summary does not name this one: its first prompt does.
    let fe = row_of(&sb, &dir, "claude-fe5e1c67-53e7-4862-81ae-d0e013e3270b");
    assert!(!fe["title"].as_str().unwrap().is_empty());
    assert_ne!(
        fe["title"],
        "Empty Repo Setup: CLAUDE.md Foundation Created"
    );
    let mut failed = 0;
    for r in &rows {
        for m in messages(&sb, &dir, r["threadId"].as_str().unwrap()) {
            for call in m["toolCalls"].as_array().into_iter().flatten() {
                match call["status"].as_str() {
                    Some("completed") => {}
                    Some("failed") => failed += 1,
                    other => panic!("no result joined: {other:?} {call}"),
                }
                assert!(call["output"].is_string());
            }
            assert!(m["timestamp"].as_str().unwrap().ends_with('Z'));
        }
    }
    assert_eq!(failed, 27, "the tool results marked is_error");
}

#[test]
fn real_claude_transcripts_token_totals_count_each_reply_once_at_its_final_usage() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = claude_fixtures(&sb, "project");
    import(&sb, &dir, &[src.to_str().unwrap()]);
    // Computed from the files: Claude Code 1.0.x writes a reply as one
    // record per block, the first ones with the output counted so far; a
    // reply's usage is its last record's.
    let mut replies: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut files = vec![];
    for e in std::fs::read_dir(&src).unwrap() {
        files.push(e.unwrap().path());
    }
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
    {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let Ok(r) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if r["type"] == "assistant" && r["message"]["usage"].is_object() {
                let id = r["message"]["id"].as_str().unwrap().to_string();
                replies.insert(id, r["message"]["usage"].clone());
            }
        }
    }
    let keys = [
        ("input", "input_tokens"),
        ("output", "output_tokens"),
        ("cacheRead", "cache_read_input_tokens"),
        ("cacheCreation", "cache_creation_input_tokens"),
    ];
    let rows = list_rows(&sb, &dir);
    for (named, raw) in keys {
        let want: u64 = replies.values().map(|u| u[raw].as_u64().unwrap_or(0)).sum();
        let got: u64 = rows
            .iter()
            .map(|r| r["stats"]["tokens"][named].as_u64().unwrap_or(0))
            .sum();
        assert!(want > 0, "{raw} in the fixtures");
        assert_eq!(got, want, "{named}");
    }
}

#[test]
fn importing_again_adds_nothing_and_a_grown_source_adds_only_new_records() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let full = fixtures().join("claude/project/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let src = sb
        .dir("src")
        .join("1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    // The first turn only (the first records up to a completed tool result).
    std::fs::write(&src, lines[..6].join("\n") + "\n").unwrap();
    let first = import(&sb, &dir, &[src.to_str().unwrap()]);
    let id = "claude-1af7fc5e-8455-4414-9ccd-011d40f70b2a";
    let count_first = first["threads"][0]["messageCount"].as_u64().unwrap();
    assert!(count_first > 0);

    let agent_dir = dir.join(".agent");
    let before = snapshot(&agent_dir);
    let again = import(&sb, &dir, &[src.to_str().unwrap()]);
    assert_eq!(again["threads"][0]["created"], false);
    assert_eq!(again["threads"][0]["messagesAdded"], 0);
    assert_eq!(snapshot(&agent_dir), before, "nothing rewritten");

    std::fs::write(&src, text.clone()).unwrap();
    let grown = import(&sb, &dir, &[src.to_str().unwrap()]);
    assert_eq!(grown["threads"][0]["messageCount"], 17);
    assert_eq!(
        grown["threads"][0]["messagesAdded"].as_u64().unwrap(),
        17 - count_first
    );
    // Same messages as importing the whole file at once.
    let fresh = sb.dir("fresh");
    import(&sb, &fresh, &[full.to_str().unwrap()]);
    let ids = |d: &Path| -> Vec<serde_json::Value> {
        messages(&sb, d, id)
            .iter()
            .map(|m| m["id"].clone())
            .collect()
    };
    assert_eq!(ids(&dir), ids(&fresh));
    let meta = read_json(&agent_dir.join("threads").join(id).join("thread.json"));
    assert_eq!(
        meta["stats"]["toolCallCount"], 12,
        "stats exact after appends"
    );
}

#[test]
fn branches_become_forks_and_unknown_records_survive() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = claude_fixtures(&sb, "branching");
    let out = run(sb
        .grove(&repo)
        .args(["import", "claude", src.to_str().unwrap(), "--json"]));
    assert_eq!(
        out.status.code(),
        Some(4),
        "a malformed line is something not imported"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("7b1e0c2a-0000-4000-8000-000000000001.jsonl:9:"),
        "malformed line named with file and line: {stderr}"
    );
    let summary = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(summary["records"]["malformed"]["skipped"], 1);
    // Bookkeeping records travel with a message, none is a message of its own.
    for kind in ["file-history-snapshot", "progress", "queue-operation"] {
        assert_eq!(summary["records"][kind]["joined"], 1, "{kind}");
        assert_eq!(summary["records"][kind]["raw"], 0, "{kind}");
    }
    let main_id = "claude-7b1e0c2a-0000-4000-8000-000000000001";
    let fork_id = format!("{main_id}-fork-u4");
    assert_eq!(summary["threads"].as_array().unwrap().len(), 2);

    // The conversation is the newest branch.
    let main = messages(&sb, &repo, main_id);
    let texts: Vec<String> = main
        .iter()
        .map(|m| {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .find_map(|b| b["text"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert!(texts.contains(&"Thanks, commit it.".to_string()));
    assert!(!texts.contains(&"Patch the cookie.".to_string()));
    // The summary (its leaf is this session's) names the thread; no message.
    assert_eq!(main[0]["id"], "u1");
    assert!(!texts.iter().any(|t| t.contains("Fix the login redirect")));
    let a1 = main.iter().find(|m| m["id"] == "a1").unwrap();
    assert_eq!(a1["content"][0]["type"], "thinking");
    assert_eq!(a1["content"][0]["text"], "Probably the middleware.");
    assert_eq!(a1["toolCalls"][0]["status"], "completed");
    assert_eq!(
        a1["toolCalls"][0]["toolUseResult"]["file"]["filePath"],
        "/work/demo/middleware.ts"
    );
    assert_eq!(a1["tokens"]["input"], 10);
    let u5 = main.iter().find(|m| m["id"] == "u5").unwrap();
    assert!(
        u5["content"][1]["assetRef"]
            .as_str()
            .unwrap()
            .starts_with("sha256-")
    );
    let a5 = main.iter().find(|m| m["id"] == "a5").unwrap();
    assert_eq!(
        a5["content"][1]["type"], "server_tool_use",
        "unknown block kept"
    );
    // The snapshot taken at u2 travels on the next message.
    let a2 = main.iter().find(|m| m["id"] == "a2").unwrap();
    assert_eq!(a2["claudeRecords"][0]["type"], "file-history-snapshot");
    assert_eq!(a2["claudeRecords"][0]["messageId"], "u2");
    assert!(main.iter().any(|m| m["content"][0]["text"]
        == "Conversation compacted (auto, 150000 tokens before)"
        && m["role"] == "system"));
    let meta = read_json(
        &repo
            .join(".agent/threads")
            .join(main_id)
            .join("thread.json"),
    );
    assert_eq!(meta["context"]["workingDir"], "/work/demo");
    assert_eq!(meta["context"]["gitBranch"], "feature/login");
    assert_eq!(meta["metadata"]["import"]["format"], "claude");
    assert_eq!(meta["title"], "Fix the login redirect");
    // The last record has no message after it yet: it waits on the thread.
    assert_eq!(
        meta["metadata"]["import"]["waiting"][0]["type"],
        "queue-operation"
    );

    // The older branch is a fork, linked on both sides at the branch point.
    let fork = messages(&sb, &repo, &fork_id);
    assert!(
        fork.iter()
            .any(|m| m["content"][0]["text"] == "Patch the cookie.")
    );
    let a3 = fork.iter().find(|m| m["id"] == "a3").unwrap();
    assert_eq!(a3["toolCalls"][0]["status"], "failed");
    // A fork does not go on: its trailing records join its last message.
    assert_eq!(
        fork.last().unwrap()["claudeRecordsAfter"][0]["type"],
        "progress"
    );
    let a2_index = main.iter().position(|m| m["id"] == "a2").unwrap() as u64;
    let fork_meta = read_json(
        &repo
            .join(".agent/threads")
            .join(&fork_id)
            .join("thread.json"),
    );
    assert_eq!(fork_meta["originThreadID"], main_id);
    assert_eq!(fork_meta["forkPointIndex"], a2_index);
    assert_eq!(fork_meta["relationships"][0]["role"], "child");
    assert_eq!(meta["relationships"][0]["threadID"], fork_id.as_str());
    assert_eq!(meta["relationships"][0]["role"], "parent");
    assert_eq!(meta["relationships"][0]["messageIndex"], a2_index);

    // Imported threads are threads like any other.
    let tree = ok(sb.grove(&repo).args(["list", "--tree"]));
    assert!(tree.contains(&format!("fork@{a2_index}")), "{tree}");
}

#[test]
fn a_session_lands_next_to_the_worktree_it_ran_in_or_into_a_chosen_thread() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let task = new_task(&sb, &repo, &["Task"]);
    let wt = task["worktreePath"].as_str().unwrap();
    let text = std::fs::read_to_string(
        fixtures().join("claude/branching/7b1e0c2a-0000-4000-8000-000000000001.jsonl"),
    )
    .unwrap()
    .replace("/work/demo", wt);
    let src = sb
        .dir("src")
        .join("7b1e0c2a-0000-4000-8000-000000000001.jsonl");
    std::fs::write(&src, text).unwrap();
    let out = import(&sb, &repo, &[src.to_str().unwrap()]);
    let dir = out["threads"][0]["threadDir"].as_str().unwrap();
    assert!(dir.starts_with(&format!("{wt}/.agent/threads/")), "{dir}");
    assert_eq!(
        sb.git(Path::new(wt), &["status", "--porcelain", "-uall"]),
        "",
        "imported threads are not the user's changes"
    );

    // --into: the session's messages go into an existing thread, once.
    let target = new_thread(&sb, &repo, "Hand-made");
    let into = import(&sb, &repo, &[src.to_str().unwrap(), "--into", &target]);
    let added = into["threads"][0]["messagesAdded"].as_u64().unwrap();
    assert_eq!(added, 7, "the conversation's messages, bookkeeping on them");
    let again = import(&sb, &repo, &[src.to_str().unwrap(), "--into", &target]);
    assert_eq!(again["threads"][0]["messagesAdded"], 0);
    assert_eq!(messages(&sb, &repo, &target).len(), 7);
    assert_eq!(
        row_of(&sb, &repo, &target)["title"],
        "Hand-made",
        "the thread keeps its title"
    );
}

#[test]
fn hq_checkpoints_import_with_their_git_state_and_refresh_when_updated() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = sb.path().join("hq");
    copy_tree(&fixtures().join("hq"), &src);
    let out = run(sb
        .grove(&dir)
        .args(["import", "hq", src.to_str().unwrap(), "--json"]));
    assert_eq!(
        out.status.code(),
        Some(4),
        "a malformed line is something not imported"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("T-broken.json:"));
    let summary = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(summary["threads"].as_array().unwrap().len(), 42);
    assert_eq!(summary["records"]["checkpoint"]["skipped"], 1);
    assert_eq!(
        summary["records"]["checkpoint"]["mapped"].as_u64().unwrap()
            + summary["records"]["auto-checkpoint"]["mapped"]
                .as_u64()
                .unwrap(),
        42
    );

    let id = "hq-T-20260123-143052-mrr-report";
    let row = row_of(&sb, &dir, id);
    assert_eq!(row["title"], "MRR Report Jan 2026");
    assert_eq!(
        row["tags"],
        serde_json::json!(["finance", "{company-1}", "mrr"])
    );
    assert_eq!(
        row["conversationSummary"],
        "Generated MRR report showing $45,230 current MRR with 3.2% growth"
    );
    assert_eq!(row["git"]["initialCommit"], "abc1234");
    assert_eq!(
        row["git"]["commitsMade"][0],
        "def5678: feat: add MRR calculation"
    );
    assert_eq!(row["git"]["remoteUrl"], "git@github.com:user/repo.git");
    assert_eq!(
        row["git"]["knowledge_repos"]["knowledge-ralph"]["commit"],
        "abc1234"
    );
    let meta = read_json(&dir.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(
        meta["filesTouched"][0],
        "workspace/reports/finance/2026-01-23-mrr.md"
    );
    assert_eq!(meta["metadata"]["hq"]["worker"]["skill"], "mrr");
    // `~` is the home directory: workingDir is absolute.
    assert_eq!(
        meta["context"]["workingDir"],
        sb.path()
            .join("home/Documents/HQ/repos/private/{company-1}")
            .to_str()
            .unwrap()
    );
    assert_eq!(meta["context"]["relativeDir"], "repos/private/{company-1}");
    let auto = row_of(&sb, &dir, "hq-T-20260123-143052-auto-mrr-commit");
    assert_eq!(auto["tags"], serde_json::json!(["auto-checkpoint"]));
    assert_eq!(auto["git"]["currentCommit"], "def5678");
    assert!(auto["git"]["initialCommit"].is_null());
    let tagged = json(&ok(sb.grove(&dir).args(["list", "--tag", "t1", "--json"])));
    assert_eq!(tagged.as_array().unwrap().len(), 10);

    // Again: nothing. Updated later: one more message, fresh git state.
    let before = snapshot(&dir.join(".agent"));
    let again = run(sb
        .grove(&dir)
        .args(["import", "hq", src.to_str().unwrap(), "--json"]));
    assert_eq!(
        again.status.code(),
        Some(4),
        "T-broken.json is still malformed"
    );
    assert_eq!(
        snapshot(&dir.join(".agent")),
        before,
        "re-import changes nothing"
    );
    let file = src.join("workspace/threads/T-20260123-143052-mrr-report.json");
    let mut cp = read_json(&file);
    cp["updated_at"] = serde_json::json!("2026-01-23T15:00:00.000Z");
    cp["git"]["current_commit"] = serde_json::json!("0a0a0a0");
    cp["git"]["commits_made"] =
        serde_json::json!(["def5678: feat: add MRR calculation", "0a0a0a0: docs"]);
    cp["next_steps"] = serde_json::json!(["send to CFO"]);
    std::fs::write(&file, serde_json::to_vec(&cp).unwrap()).unwrap();
    let updated = import_as(&sb, &dir, "hq", &[file.to_str().unwrap()]);
    assert_eq!(updated["threads"][0]["messagesAdded"], 1);
    let row = row_of(&sb, &dir, id);
    assert_eq!(row["stats"]["messageCount"], 2);
    assert_eq!(row["git"]["currentCommit"], "0a0a0a0");
    assert_eq!(row["git"]["commitsMade"].as_array().unwrap().len(), 2);
    assert_eq!(row["nextSteps"], serde_json::json!(["send to CFO"]));
}

#[test]
fn amp_threads_keep_their_ids_relationships_and_message_indices() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = sb.path().join("amp");
    copy_tree(&fixtures().join("amp"), &src);
    let out = import_as(&sb, &dir, "amp", &[src.to_str().unwrap()]);
    assert_eq!(out["threads"].as_array().unwrap().len(), 2);
    let parent = "T-5928a90d-d53b-488f-a829-4e36442142ee";
    let child = "T-7f1e2d3c-0000-4000-8000-00000000abcd";
    let msgs = messages(&sb, &dir, parent);
    assert_eq!(
        msgs.len(),
        6,
        "one message per Amp message: indices line up"
    );
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "agent", "user", "agent", "user", "system"]);
    assert_eq!(msgs[1]["content"][0]["type"], "thinking");
    assert_eq!(msgs[1]["toolCalls"][0]["status"], "completed");
    assert!(
        msgs[1]["toolCalls"][0]["output"]
            .as_str()
            .unwrap()
            .contains("db fixture")
    );
    assert_eq!(msgs[3]["toolCalls"][0]["status"], "failed");
    assert_eq!(
        msgs[2]["content"][0]["type"], "tool_result",
        "kept as it was"
    );
    assert_eq!(
        msgs[5]["content"][0]["type"], "summary",
        "unknown block kept"
    );
    assert_eq!(msgs[0]["timestamp"], "2026-01-24T00:01:57.500Z");
    assert_eq!(out["records"]["user"]["joined"], 2);

    let meta = read_json(&dir.join(".agent/threads").join(parent).join("thread.json"));
    assert_eq!(meta["relationships"][0]["threadID"], child);
    assert_eq!(
        meta["relationships"][0]["createdAt"],
        "2026-01-24T00:03:20.000Z"
    );
    assert_eq!(meta["metadata"]["amp"]["agentMode"], "smart");
    assert_eq!(
        meta["metadata"]["amp"]["env"]["initial"]["tags"][0],
        "model:claude-sonnet-4"
    );
    assert_eq!(meta["stats"]["toolCallCount"], 2);
    let child_meta = read_json(&dir.join(".agent/threads").join(child).join("thread.json"));
    assert_eq!(child_meta["originThreadID"], parent);
    assert_eq!(child_meta["forkPointIndex"], 3);
    let tree = json(&ok(sb
        .grove(&dir)
        .args(["show", child, "--tree", "--json"])));
    assert_eq!(tree["edges"][0]["from"], parent);

    // Again: nothing changes.
    let before = snapshot(&dir.join(".agent"));
    import_as(&sb, &dir, "amp", &[src.to_str().unwrap()]);
    assert_eq!(snapshot(&dir.join(".agent")), before);

    // A grown thread: only the new message is appended (an image becomes an asset).
    let file = src.join(format!("{parent}.json"));
    let mut thread = read_json(&file);
    thread["messages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
            {"role":"user","messageId":6,"content":[{"type":"text","text":"Ship it."},
              {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],
             "meta":{"sentAt":1769213100000u64}}
        ));
    std::fs::write(&file, serde_json::to_vec(&thread).unwrap()).unwrap();
    let grown = import_as(&sb, &dir, "amp", &[file.to_str().unwrap()]);
    assert_eq!(grown["threads"][0]["messagesAdded"], 1);
    let all = messages(&sb, &dir, parent);
    assert_eq!(all.len(), 7);
    assert!(
        all[6]["content"][1]["assetRef"]
            .as_str()
            .unwrap()
            .starts_with("sha256-")
    );
}

#[test]
fn sage_sessions_import_with_branches_sidechains_snapshots_and_todos() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = sb.path().join("sage");
    copy_tree(&fixtures().join("sage"), &src);
    let sage_dir = src.join(".sage");
    let before = snapshot(&sage_dir);
    let out = run(sb
        .grove(&dir)
        .args(["import", "sage", sage_dir.to_str().unwrap(), "--json"]));
    assert_eq!(
        out.status.code(),
        Some(4),
        "a malformed line is something not imported"
    );
    assert_eq!(snapshot(&sage_dir), before, "source only read");
    assert!(String::from_utf8_lossy(&out.stderr).contains("session-gen/messages.jsonl:11:"));
    let summary = json(&String::from_utf8(out.stdout).unwrap());
    let ids: Vec<&str> = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "sage-session-123",
            "sage-session-gen",
            "sage-session-gen-fork-ab",
            "sage-session-gen-side-s0"
        ]
    );
    assert_eq!(summary["records"]["tool_result"]["joined"], 1 + 12 + 1);
    assert_eq!(summary["records"]["file_history_snapshot"]["raw"], 4);

    // The seed's example: title from metadata.json, tool call joined, usage, todos.
    let m = messages(&sb, &dir, "sage-session-123");
    assert_eq!(m.len(), 3);
    assert_eq!(
        row_of(&sb, &dir, "sage-session-123")["title"],
        "Weather website"
    );
    assert_eq!(m[1]["role"], "agent");
    let call = &m[1]["toolCalls"][0];
    assert_eq!(call["status"], "completed");
    assert_eq!(call["output"], "Directory created successfully");
    assert_eq!(call["input"], r#"{"command":"mkdir -p weather_app"}"#);
    assert_eq!(m[1]["tokens"]["input"], 1500);
    assert_eq!(m[1]["sage"]["todos"][1]["status"], "in_progress");
    assert_eq!(m[0]["sage"]["thinkingMetadata"]["level"], "high");
    assert_eq!(
        m[2]["sageRecord"]["snapshot"]["trackedFiles"]["weather_app/index.html"]["contentHash"],
        "abc123",
        "the snapshot follows the message it belongs to"
    );
    let meta = read_json(&dir.join(".agent/threads/sage-session-123/thread.json"));
    assert_eq!(
        meta["context"]["workingDir"],
        "/Users/lifcc/Desktop/code/AI/agent/sage"
    );
    assert_eq!(meta["metadata"]["sage"]["model"], "sage-default");

    // The generated session: the failed call, the fork, the subagent thread.
    let gen_rows = |id: &str| row_of(&sb, &dir, id)["stats"].clone();
    assert_eq!(gen_rows("sage-session-gen")["messageCount"], 27);
    assert_eq!(gen_rows("sage-session-gen")["toolCallCount"], 12);
    let main = messages(&sb, &dir, "sage-session-gen");
    let failed = main.iter().find(|m| m["id"] == "a5").unwrap();
    assert_eq!(failed["toolCalls"][0]["status"], "failed");
    assert_eq!(failed["toolCalls"][0]["output"], "permission denied");
    let fork = read_json(&dir.join(".agent/threads/sage-session-gen-fork-ab/thread.json"));
    let a2 = main.iter().position(|m| m["id"] == "a2").unwrap() as u64;
    assert_eq!(fork["forkPointIndex"], a2);
    assert_eq!(fork["stats"]["messageCount"], 8);
    let side = read_json(&dir.join(".agent/threads/sage-session-gen-side-s0/thread.json"));
    assert_eq!(side["mainThreadID"], "sage-session-gen");
    assert_eq!(side["stats"]["messageCount"], 3);
    assert_eq!(side["stats"]["toolCallCount"], 1);

    // Again: nothing changes.
    let agent = snapshot(&dir.join(".agent"));
    import_as(&sb, &dir, "sage", &[sage_dir.to_str().unwrap()]);
    assert_eq!(snapshot(&dir.join(".agent")), agent);
}

#[test]
fn dagent_current_and_legacy_layouts_import_with_the_seeds_mappings() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = sb.path().join("dagent");
    copy_tree(&fixtures().join("dagent"), &src);
    let before = snapshot(&src);
    let out = run(sb.grove(&dir).args([
        "import",
        "dagent",
        src.join("current").to_str().unwrap(),
        src.join("legacy").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(
        out.status.code(),
        Some(4),
        "a malformed line is something not imported"
    );
    assert_eq!(snapshot(&src), before, "nothing under .dagent/ written");
    assert!(String::from_utf8_lossy(&out.stderr).contains("node-2/session.json:1:"));
    let summary = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(
        summary["records"]["legacy chat.json"]["skipped"], 1,
        "migrated: not twice"
    );
    assert_eq!(summary["records"]["chat message"]["mapped"], 32);

    // Current layout: checkpoint first, then chat.json, seed fields kept.
    let pm = "dagent-auth-feature-pm-feature-auth-feature";
    let m = messages(&sb, &dir, pm);
    assert_eq!(m.len(), 3);
    assert_eq!(m[0]["role"], "system");
    let text = m[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Decisions:\n- Using JWT for session tokens"),
        "{text}"
    );
    assert_eq!(
        m[0]["dagentCheckpoint"]["compactionInfo"]["messagesCompacted"],
        40
    );
    assert_eq!(
        (m[1]["id"].as_str(), m[1]["role"].as_str()),
        (Some("msg-uuid-1"), Some("user"))
    );
    assert_eq!(m[2]["role"], "agent");
    assert_eq!(m[2]["tokens"]["input"], 500);
    assert_eq!(m[2]["dagent"]["metadata"]["agentType"], "pm");
    let row = row_of(&sb, &dir, pm);
    assert_eq!(row["title"], "User Authentication: pm session");
    assert_eq!(row["nextSteps"][0], "Designing authentication flow");
    assert_eq!(row["nextSteps"].as_array().unwrap().len(), 3);
    let meta = read_json(&dir.join(".agent/threads").join(pm).join("thread.json"));
    assert_eq!(meta["metadata"]["dagent"]["context"]["taskId"], "task-123");
    assert_eq!(
        meta["metadata"]["dagent"]["session"]["stats"]["totalCompactions"],
        2
    );
    assert_eq!(meta["context"]["workingDir"], "/path/to/project");
    assert_eq!(meta["createdAt"], "2026-01-17T10:00:00.000Z");
    assert_eq!(
        row_of(
            &sb,
            &dir,
            "dagent-auth-feature-dev-task-auth-feature-task-123-in_dev"
        )["stats"]["messageCount"],
        30
    );

    // Legacy chat.json: entries[].type → role, text → content, timestamp kept.
    let chat = messages(&sb, &dir, "dagent-login-chat");
    let roles: Vec<&str> = chat.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "agent", "system"]);
    assert_eq!(chat[0]["content"][0]["text"], "Create a login feature");
    assert_eq!(chat[0]["timestamp"], "2026-01-15T10:00:00.000Z");
    assert_eq!(chat[2]["dagent"]["type"], "note", "unknown entry kept raw");
    // Legacy node session.json: direction → role, Unix ms → ISO.
    let node = messages(&sb, &dir, "dagent-login-node-node-1");
    let roles: Vec<&str> = node.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["agent", "user", "agent"]);
    assert_eq!(node[0]["timestamp"], "2024-01-17T10:40:00.000Z");
    assert_eq!(node[0]["dagent"]["type"], "progress");

    // Again: nothing changes.
    let before = snapshot(&dir.join(".agent"));
    let both = [src.join("current"), src.join("legacy")];
    import_as(
        &sb,
        &dir,
        "dagent",
        &[both[0].to_str().unwrap(), both[1].to_str().unwrap()],
    );
    assert_eq!(snapshot(&dir.join(".agent")), before);

    // After a compaction: a new checkpoint and new chat messages are added, nothing else.
    let s = src.join("current/.dagent/features/auth-feature/sessions/pm-feature-auth-feature");
    let mut cp = read_json(&s.join("checkpoint.json"));
    cp["updatedAt"] = serde_json::json!("2026-01-17T13:00:00.000Z");
    std::fs::write(s.join("checkpoint.json"), serde_json::to_vec(&cp).unwrap()).unwrap();
    std::fs::write(
        s.join("chat.json"),
        r#"{"messages":[{"id":"msg-uuid-3","role":"user","content":"Next?","timestamp":"2026-01-17T13:01:00.000Z"}]}"#,
    )
    .unwrap();
    let again = import_as(
        &sb,
        &dir,
        "dagent",
        &[src.join("current").to_str().unwrap()],
    );
    let pm_out = again["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["threadId"] == pm)
        .unwrap()
        .clone();
    assert_eq!(pm_out["messagesAdded"], 2);
    assert_eq!(messages(&sb, &dir, pm).len(), 5);
}

#[test]
fn codex_rollouts_import_tool_calls_reasoning_and_grow_incrementally() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let src = sb.path().join("codex");
    copy_tree(&fixtures().join("codex/sessions"), &src.join("sessions"));
    // Sessions that ended long ago (a session written to in the last hour
    // may still be running: its last reply would wait for its usage).
    for day in std::fs::read_dir(src.join("sessions/2025/10/29")).unwrap() {
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(day.unwrap().path())
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
    }
    let out = run(sb
        .grove(&dir)
        .args(["import", "codex", src.to_str().unwrap(), "--json"]));
    assert_eq!(
        out.status.code(),
        Some(4),
        "a malformed line is something not imported"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(".jsonl:13:"));
    let summary = json(&String::from_utf8(out.stdout).unwrap());
    let r = &summary["records"];
    assert_eq!(r["function_call"]["mapped"], 2);
    assert_eq!(r["function_call_output"]["joined"], 2);
    assert_eq!(r["custom_tool_call_output"]["joined"], 1);
    assert_eq!(r["event_msg user_message"]["skipped"], 1);
    assert_eq!(r["event_msg token_count"]["mapped"], 1, "token figures");
    assert_eq!(
        r["event_msg task_complete"]["joined"], 1,
        "travels on a message"
    );
    assert_eq!(r["web_search_call"]["mapped"], 1, "a tool call");

    let id = "codex-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5";
    let m = messages(&sb, &dir, id);
    assert_eq!(m.len(), 9);
    assert_eq!(m[0]["role"], "system", "injected environment context");
    assert_eq!(
        m[1]["content"][0]["text"],
        "Fix the failing test in calc.py"
    );
    assert_eq!(m[2]["content"][0]["type"], "thinking");
    assert_eq!(m[2]["content"][0]["text"], "**Running the tests**");
    assert_eq!(m[2]["content"][0]["encryptedContent"], "gAAAAB-opaque");
    let calls: Vec<(String, String)> = m
        .iter()
        .flat_map(|x| x["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("shell".to_string(), "failed".to_string()),
            ("apply_patch".to_string(), "completed".to_string()),
            ("shell".to_string(), "completed".to_string()),
            ("web_search".to_string(), "completed".to_string())
        ]
    );
    assert_eq!(m[3]["toolCalls"][0]["output"], "1 failed, 3 passed");
    assert_eq!(m[6]["model"], "gpt-5-codex");
    assert_eq!(
        m[7]["content"][0]["text"],
        "Conversation compacted: User asked to fix calc.py; fixed add(); tests pass."
    );
    assert_eq!(m[7]["codexRecords"][0]["payload"]["type"], "task_complete");
    let meta = read_json(&dir.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(meta["context"]["gitBranch"], "main");
    assert_eq!(
        meta["context"]["remoteUrl"],
        "git@github.com:example/calc.git"
    );
    assert_eq!(meta["metadata"]["codex"]["turnContext"]["effort"], "high");
    assert_eq!(meta["stats"]["toolCallCount"], 4);
    let fork = read_json(
        &dir.join(".agent/threads/codex-019a2d80-0000-7000-8000-00000000f0f0/thread.json"),
    );
    assert_eq!(fork["originThreadID"], id);

    // Again: nothing. Grown: only the new lines.
    let before = snapshot(&dir.join(".agent"));
    import_as(&sb, &dir, "codex", &[src.to_str().unwrap()]);
    assert_eq!(snapshot(&dir.join(".agent")), before);
    let file = std::fs::read_dir(src.join("sessions/2025/10/29"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("019a2d7a"))
        .unwrap();
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"timestamp":"2025-10-29T01:20:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks"}]}}"#);
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let grown = import_as(&sb, &dir, "codex", &[file.to_str().unwrap()]);
    assert_eq!(grown["threads"][0]["messagesAdded"], 1);
    assert_eq!(grown["sources"][0]["read"], "tail");
    assert_eq!(messages(&sb, &dir, id).len(), 10);
}

#[test]
fn a_source_without_a_working_directory_gets_the_project_it_was_imported_into() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let source = fixtures().join("amp/T-7f1e2d3c-0000-4000-8000-00000000abcd.json");
    ok(sb
        .grove(&repo)
        .args(["import", "amp", source.to_str().unwrap()]));
    let dir = repo.join(".agent/threads/T-7f1e2d3c-0000-4000-8000-00000000abcd");
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(
        meta["context"]["workingDir"],
        repo.to_str().unwrap(),
        "{meta}"
    );
    assert_eq!(
        meta["metadata"]["import"]["sourceWorkingDir"],
        serde_json::Value::Null,
        "the source gave none, and it says so: {meta}"
    );
    assert!(meta["metadata"]["import"].get("sourceWorkingDir").is_some());
    ok(sb.grove(&repo).args(["validate", dir.to_str().unwrap()]));
    // validate catches an empty one.
    let mut bad = meta.clone();
    bad["context"]["workingDir"] = serde_json::Value::from("");
    std::fs::write(
        dir.join("thread.json"),
        serde_json::to_vec_pretty(&bad).unwrap(),
    )
    .unwrap();
    let out = run(sb.grove(&repo).args(["validate", dir.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("`context.workingDir` is empty"), "{said}");
}

/// The threads of `repo` by id, as `thread.json` values.
fn threads_by_id(repo: &Path) -> BTreeMap<String, serde_json::Value> {
    std::fs::read_dir(repo.join(".agent/threads"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let meta = read_json(&p.join("thread.json"));
            (meta["threadId"].as_str().unwrap().to_string(), meta)
        })
        .collect()
}

#[test]
fn opencode_1_18_sessions_import_from_its_database_and_its_exports() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let db = fixtures().join("opencode/1.18/opencode.db");
    let summary = import_as(&sb, &repo, "opencode", &[db.to_str().unwrap()]);
    assert_eq!(summary["threads"].as_array().unwrap().len(), 4, "{summary}");
    let threads = threads_by_id(&repo);
    let first = "opencode-ses_df07be418ffefMd9hDJw4Z9ZNj";
    let sub = &threads["opencode-ses_df07aa8f3ffe7ZFgfwPPJuPtqX"];
    assert_eq!(
        sub["mainThreadID"],
        "opencode-ses_df07ab4e1ffeI5ovfpl8J2LSpQ"
    );
    assert_eq!(threads[first]["agent"]["version"], "1.18.33");
    // Every prompt, reply, reasoning and tool call of the recording.
    let log = message_lines(&repo.join(".agent/threads").join(first));
    let users: Vec<&str> = log
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        [
            "\"Run a shell command, read two files and write notes\"",
            "\"And a plain question\"",
            "\"One more, a minute later\""
        ]
    );
    let calls: Vec<(String, String)> = log
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("bash".into(), "completed".into()),
            ("read".into(), "failed".into()),
            ("read".into(), "completed".into()),
            ("write".into(), "completed".into()),
        ]
    );
    let thinking = log
        .iter()
        .filter(|m| {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["type"] == "thinking")
        })
        .count();
    assert_eq!(thinking, 6, "each reply's reasoning");
    assert_eq!(log.last().unwrap()["tokens"]["cache"]["read"], 400);
    ok(sb
        .grove(&repo)
        .args(["validate", repo.join(".agent/threads").to_str().unwrap()]));

    // Again, and from `opencode export`: not a byte changes.
    let before = snapshot(&repo.join(".agent/threads"));
    import_as(&sb, &repo, "opencode", &[db.to_str().unwrap()]);
    let export = fixtures().join("opencode/1.18/export.json");
    let again = import_as(&sb, &repo, "opencode", &[export.to_str().unwrap()]);
    assert_eq!(again["threads"][0]["threadId"], first);
    assert_eq!(snapshot(&repo.join(".agent/threads")), before);

    // An export alone makes the same thread.
    let other = sb.repo("other");
    import_as(&sb, &other, "opencode", &[export.to_str().unwrap()]);
    let exported = message_lines(&other.join(".agent/threads").join(first));
    assert_eq!(exported.len(), log.len());
}

#[test]
fn opencode_s_database_is_read_while_opencode_holds_it_open() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let data = sb.dir("opencode");
    std::fs::copy(
        fixtures().join("opencode/1.18/opencode.db"),
        data.join("opencode.db"),
    )
    .unwrap();
    // A writer in WAL mode with an open write transaction, as OpenCode is
    // while a turn runs.
    let writer = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys,time\n\
             c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL')\n\
             c.execute('BEGIN IMMEDIATE'); c.execute(\"UPDATE session SET title=title\")\n\
             print('held', flush=True); time.sleep(3); c.commit()",
            data.join("opencode.db").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = writer;
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(writer.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    // The data directory is found by its opencode.db.
    let summary = import_as(&sb, &repo, "opencode", &[data.to_str().unwrap()]);
    assert_eq!(summary["threads"].as_array().unwrap().len(), 4, "{summary}");
    writer.wait().unwrap();
}

/// `(name, status)` of every tool call in a thread's log.
fn calls_of(log: &[serde_json::Value]) -> Vec<(String, String)> {
    log.iter()
        .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn gemini_0_61_sessions_import_as_gemini_means_them() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let resumed = fixtures().join("gemini/0.61/resumed/chats");
    import_as(&sb, &repo, "gemini", &[resumed.to_str().unwrap()]);
    let threads = threads_by_id(&repo);
    // One thread for the session, whichever of its two files is read: the
    // resume's leftover (context only) neither renames nor re-dates it.
    assert_eq!(threads.len(), 1, "{:?}", threads.keys());
    let id = "gemini-1a37dea9-3a52-480b-8975-a5a4cb4ed399";
    let meta = &threads[id];
    assert_eq!(
        meta["title"],
        "Run a shell command, read two files and write notes"
    );
    assert_eq!(
        meta["createdAt"], "2026-11-24T21:53:20.691Z",
        "its first record"
    );
    assert!(meta["metadata"]["gemini"].get("$set").is_none(), "{meta}");
    let log = message_lines(&repo.join(".agent/threads").join(id));
    let roles: Vec<&str> = log.iter().map(|m| m["role"].as_str().unwrap()).collect();
    // The session's context, three prompts, six replies: no tool result
    // became a user message.
    assert_eq!(
        roles,
        [
            "system", "user", "agent", "agent", "agent", "agent", "user", "agent", "user", "agent"
        ]
    );
    assert_eq!(
        calls_of(&log),
        [
            ("run_shell_command".into(), "completed".into()),
            ("read_file".into(), "failed".into()),
            ("read_file".into(), "completed".into()),
            ("write_file".into(), "completed".into()),
        ]
    );
    let out = run(sb
        .grove(&repo)
        .args(["validate", repo.join(".agent/threads").to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The subagent's chat is found and linked to its parent.
    let later = fixtures().join("gemini/0.61/later/chats");
    import_as(&sb, &repo, "gemini", &[later.to_str().unwrap()]);
    let threads = threads_by_id(&repo);
    let sub = &threads["gemini-43ac7af6-6aa8-44f3-8cc0-394305f4dd36"];
    assert_eq!(
        sub["mainThreadID"],
        "gemini-42733a2f-a6f9-492a-9100-15c781f42206"
    );
    assert_eq!(sub["context"]["workingDir"], "/tmp/gm-rec.jWI9/proj");
    // Again: not a byte changes.
    let before = snapshot(&repo.join(".agent/threads"));
    import_as(
        &sb,
        &repo,
        "gemini",
        &[resumed.to_str().unwrap(), later.to_str().unwrap()],
    );
    assert_eq!(snapshot(&repo.join(".agent/threads")), before);
}

#[test]
fn gemini_imported_after_every_line_ends_with_every_tool_call_complete() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let source =
        fixtures().join("gemini/0.61/resumed/chats/session-2026-11-24T21-53-1a37dea9.jsonl");
    let chats = sb.dir("gemini/tmp/app/chats");
    let growing = chats.join("session-2026-11-24T21-53-1a37dea9.jsonl");
    let mut written = String::new();
    // As a capture after each line Gemini writes would (the file is live).
    for line in std::fs::read_to_string(&source).unwrap().lines() {
        written.push_str(line);
        written.push('\n');
        std::fs::write(&growing, &written).unwrap();
        import_as(&sb, &repo, "gemini", &[growing.to_str().unwrap()]);
    }
    let log =
        message_lines(&repo.join(".agent/threads/gemini-1a37dea9-3a52-480b-8975-a5a4cb4ed399"));
    assert_eq!(
        calls_of(&log),
        [
            ("run_shell_command".into(), "completed".into()),
            ("read_file".into(), "failed".into()),
            ("read_file".into(), "completed".into()),
            ("write_file".into(), "completed".into()),
        ]
    );
    assert_eq!(log.len(), 10);
}

#[test]
fn gemini_rewinds_and_replaced_conversations_keep_what_they_dropped() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    let chats = sb.dir("gemini/tmp/app/chats");
    let file = chats.join("session-2026-11-24T10-00-aaaaaaaa.jsonl");
    let line = |id: &str, kind: &str, text: &str| {
        serde_json::json!({"id": id, "timestamp": "2026-11-24T10:00:00.000Z", "type": kind,
            "content": [{"text": text}]})
        .to_string()
    };
    let lines = [
        serde_json::json!({"sessionId": "aaaaaaaa-0000-4000-8000-000000000001",
            "startTime": "2026-11-24T10:00:00.000Z", "kind": "main"})
        .to_string(),
        line("u1", "user", "first"),
        line("g1", "gemini", "reply"),
        line("u2", "user", "second"),
        serde_json::json!({"$rewindTo": "u2"}).to_string(),
        line("u3", "user", "instead"),
        line("g3", "gemini", "better"),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    import_as(&sb, &repo, "gemini", &[file.to_str().unwrap()]);
    let dir = repo.join(".agent/threads/gemini-aaaaaaaa-0000-4000-8000-000000000001");
    let texts: Vec<String> = message_lines(&dir)
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["first", "reply", "instead", "better"]);
    let meta = read_json(&dir.join("thread.json"));
    assert_eq!(
        meta["metadata"]["gemini"]["superseded"][0]["id"], "u2",
        "{meta}"
    );
}

#[test]
fn gemini_and_opencode_without_a_path_read_the_agents_own_store_for_this_project() {
    let sb = Sandbox::new();
    let repo = sb.repo("app");
    // Gemini: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/`, this project's and
    // another's.
    let tmp = sb.path().join("gemini-home/.gemini/tmp");
    for (name, root) in [("app", repo.clone()), ("elsewhere", sb.dir("elsewhere"))] {
        let dir = tmp.join(name);
        copy_tree(
            &fixtures().join("gemini/0.61/later/chats"),
            &dir.join("chats"),
        );
        std::fs::write(dir.join(".project_root"), root.to_str().unwrap()).unwrap();
    }
    let out = run(sb
        .grove(&repo)
        .env("GEMINI_CLI_HOME", sb.path().join("gemini-home"))
        .args(["import", "gemini", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = json(&String::from_utf8_lossy(&out.stdout));
    let sources: Vec<&str> = summary["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert!(
        sources.iter().all(|p| p.contains("/tmp/app/")),
        "{sources:?}"
    );
    assert_eq!(summary["threads"].as_array().unwrap().len(), 3, "{summary}");

    // OpenCode: `$XDG_DATA_HOME/opencode/opencode.db`, holding sessions of
    // several projects: this project's only.
    let data = sb.dir("data/opencode");
    let db = data.join("opencode.db");
    std::fs::copy(fixtures().join("opencode/1.18/opencode.db"), &db).unwrap();
    let moved = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\n\
             c.execute(\"UPDATE session SET directory=? WHERE id='ses_df07a9ac1ffeXahCwu9z6TR9h5'\", (sys.argv[2],))\n\
             c.commit()",
            db.to_str().unwrap(),
            repo.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(moved.success());
    let out = run(sb
        .grove(&repo)
        .env("XDG_DATA_HOME", sb.path().join("data"))
        .args(["import", "opencode", "--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = json(&String::from_utf8_lossy(&out.stdout));
    let ids: Vec<&str> = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["threadId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["opencode-ses_df07a9ac1ffeXahCwu9z6TR9h5"],
        "{summary}"
    );

    // A format without a store of its own still wants a path.
    let err = fails_with(sb.grove(&repo).args(["import", "hq"]), 2);
    assert!(err.contains("give the path"), "{err}");
}

/// A Codex rollout whose second turn was interrupted: the reply, then
/// `turn_aborted`, then the `token_count` of that reply; a later
/// `token_count` whose running totals are all zero. The record shapes are
/// Codex's (`event_msg` payloads as Codex 0.1xx writes them).
const CODEX_ABORTED: &[&str] = &[
    r#"{"timestamp":"2026-03-05T09:00:00.000Z","type":"session_meta","payload":{"id":"019cab00-0000-7000-8000-0000000000ab","timestamp":"2026-03-05T09:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.125.0"}}"#,
    r#"{"timestamp":"2026-03-05T09:00:01.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5.5"}}"#,
    r#"{"timestamp":"2026-03-05T09:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"First"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:03.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reply A"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:04.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":2,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":2,"total_tokens":110}}}}"#,
    r#"{"timestamp":"2026-03-05T09:00:05.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"Reply A"}}"#,
    r#"{"timestamp":"2026-03-05T09:00:06.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Second"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:07.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reply B"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:08.000Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t2","reason":"interrupted"}}"#,
    r#"{"timestamp":"2026-03-05T09:00:08.100Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":100,"output_tokens":30,"reasoning_output_tokens":5,"total_tokens":280},"last_token_usage":{"input_tokens":150,"cached_input_tokens":60,"output_tokens":20,"reasoning_output_tokens":3,"total_tokens":170}}}}"#,
    r#"{"timestamp":"2026-03-05T09:00:09.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Third"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:10.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reply C"}]}}"#,
    r#"{"timestamp":"2026-03-05T09:00:11.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":0},"last_token_usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":0}}}}"#,
    r#"{"timestamp":"2026-03-05T09:00:12.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t3","last_agent_message":"Reply C"}}"#,
];

/// The tokens of the message whose text is `text`.
fn tokens_of(messages: &[serde_json::Value], text: &str) -> serde_json::Value {
    messages
        .iter()
        .find(|m| m["content"].to_string().contains(text))
        .unwrap_or_else(|| panic!("no message {text:?}: {messages:#?}"))["tokens"]
        .clone()
}

/// Imports [`CODEX_ABORTED`] as `grove import codex` does — whole, or
/// after each line as a live capture reads it — and checks where the
/// tokens went.
fn codex_aborted_turn_tokens(line_by_line: bool) {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let file = sb
        .path()
        .join("src/rollout-2026-03-05T09-00-00-019cab00-0000-7000-8000-0000000000ab.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let upto: Vec<usize> = if line_by_line {
        (1..=CODEX_ABORTED.len()).collect()
    } else {
        vec![CODEX_ABORTED.len()]
    };
    for n in upto {
        std::fs::write(&file, CODEX_ABORTED[..n].join("\n") + "\n").unwrap();
        import_as(&sb, &dir, "codex", &[file.to_str().unwrap()]);
    }
    let id = "codex-019cab00-0000-7000-8000-0000000000ab";
    let m = messages(&sb, &dir, id);
    let named = |input: u64, output: u64, cached: u64, reasoning: u64| {
        serde_json::json!({"input": input, "output": output,
            "cacheRead": cached, "reasoning": reasoning})
    };
    let pick = |t: serde_json::Value| {
        serde_json::json!({"input": t["input"], "output": t["output"],
            "cacheRead": t["cacheRead"], "reasoning": t["reasoning"]})
    };
    assert_eq!(pick(tokens_of(&m, "Reply A")), named(100, 10, 40, 2));
    assert_eq!(
        pick(tokens_of(&m, "Reply B")),
        named(150, 20, 60, 3),
        "the token_count after turn_aborted counts the reply before it"
    );
    assert!(
        tokens_of(&m, "Turn aborted").is_null(),
        "the notice counts no tokens"
    );
    assert!(
        tokens_of(&m, "Reply C").is_null(),
        "all-zero totals count nothing"
    );
    let meta = read_json(&dir.join(".agent/threads").join(id).join("thread.json"));
    assert_eq!(
        pick(meta["stats"]["tokens"].clone()),
        named(250, 30, 100, 5),
        "{meta:#}"
    );
    assert_eq!(
        pick(meta["metadata"]["import"]["tokens"].clone()),
        named(250, 30, 100, 5),
        "the session's totals never go back: {meta:#}"
    );
}

#[test]
fn codex_tokens_after_an_aborted_turn_go_to_its_reply_and_totals_never_go_back() {
    codex_aborted_turn_tokens(false);
}

#[test]
fn codex_tokens_after_an_aborted_turn_read_line_by_line_go_to_its_reply() {
    codex_aborted_turn_tokens(true);
}
