//! A Claude Code transcript of any size, its records shaped like the real
//! 2.1 fixtures: prompts, replies split over several records with one
//! usage, tool calls with their results and `toolUseResult`, progress and
//! file-history records.

use std::io::Write;
use std::path::Path;

pub const SESSION: &str = "b3c1a2d4-0000-4000-8000-00000000be0c";

/// Writes a transcript of about `bytes`; returns the uuid of its last record.
pub fn transcript(path: &Path, bytes: usize) -> (String, usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("transcript"));
    let mut written = 0;
    let mut parent: Option<String> = None;
    let mut n = 0usize;
    let body = "The coupon path subtracts the amount without a floor, so a large coupon makes the total negative. ";
    let file = "export function total(items, coupon) {\n  return sum(items) - coupon.amount;\n}\n"
        .repeat(40);
    while written < bytes {
        for line in turn(n, &mut parent, body, &file) {
            writeln!(out, "{line}").expect("write");
            written += line.len() + 1;
        }
        n += 1;
    }
    out.flush().expect("flush");
    (parent.unwrap_or_default(), n)
}

pub fn common(kind: &str, uuid: &str, parent: &Option<String>, t: usize) -> serde_json::Value {
    serde_json::json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/dev/projects/shop", "sessionId": SESSION, "version": "2.1.39",
        "gitBranch": "fix-cart", "type": kind, "uuid": uuid,
        "timestamp": format!("2026-02-12T{:02}:{:02}:{:02}.000Z", (t / 3600) % 24, (t / 60) % 60, t % 60),
    })
}

/// One turn: a prompt, a reply in three records (one API message), a
/// progress record, the tool result, a file-history snapshot.
pub fn turn(n: usize, parent: &mut Option<String>, body: &str, file: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut push =
        |mut v: serde_json::Value, extra: serde_json::Value, parent: &mut Option<String>| {
            if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
                o.extend(e);
            }
            *parent = v["uuid"].as_str().map(str::to_string);
            lines.push(v.to_string());
        };
    let id = |k: &str| format!("{k}-{n:08}");
    let t = n * 7;
    push(
        common("user", &id("u"), parent, t),
        serde_json::json!({"message": {"role": "user", "content": format!("Turn {n}: {body}")}}),
        parent,
    );
    let usage = serde_json::json!({"input_tokens": 3, "cache_creation_input_tokens": 15005,
        "cache_read_input_tokens": 11442, "output_tokens": 9, "service_tier": "standard"});
    let mid = format!("msg_{n:016}");
    for (k, content) in [
        (
            "a1",
            serde_json::json!([{"type": "thinking", "thinking": body, "signature": "EqQBCkYIBxgCKkB3"}]),
        ),
        ("a2", serde_json::json!([{"type": "text", "text": body}])),
        (
            "a3",
            serde_json::json!([{"type": "tool_use", "id": format!("toolu_{n:010}"), "name": "Read",
            "input": {"file_path": "/home/dev/projects/shop/src/cart.ts"}}]),
        ),
    ] {
        push(
            common("assistant", &id(k), parent, t + 1),
            serde_json::json!({"message": {"model": "claude-opus-4-6", "id": mid, "type": "message",
                "role": "assistant", "content": content, "stop_reason": null, "usage": usage},
                "requestId": format!("req_{n:012}")}),
            parent,
        );
    }
    let call_parent = parent.clone();
    push(
        common("progress", &id("p"), parent, t + 2),
        serde_json::json!({"data": {"type": "hook_progress", "hookEvent": "PreToolUse",
            "hookName": "PreToolUse:Read", "command": "guard.sh"},
            "toolUseID": format!("toolu_{n:010}"), "parentToolUseID": format!("toolu_{n:010}")}),
        parent,
    );
    let mut result_parent = call_parent;
    push(
        common("user", &id("r"), &result_parent, t + 3),
        serde_json::json!({"message": {"role": "user", "content": [{"tool_use_id": format!("toolu_{n:010}"),
            "type": "tool_result", "content": file}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/home/dev/projects/shop/src/cart.ts",
                "content": file, "numLines": 120, "startLine": 1, "totalLines": 120}},
            "sourceToolAssistantUUID": id("a3")}),
        &mut result_parent,
    );
    *parent = result_parent;
    lines.push(
        serde_json::json!({"type": "file-history-snapshot", "messageId": id("u"),
            "snapshot": {"messageId": id("u"), "trackedFileBackups": {}, "timestamp": "2026-02-12T10:00:00.000Z"},
            "isSnapshotUpdate": false})
        .to_string(),
    );
    lines
}

/// Writes a Claude Code 1.0 transcript of about `bytes`: each turn a
/// prompt, a reply calling `Task`, the subagent's sidechain written inline
/// (`isSidechain: true`, its own chain from a root without parent: a
/// prompt, replies reading files and their results, a closing reply), then the
/// `Task` result and a closing reply in the conversation. Returns the uuid
/// of the conversation's last record and the turns written.
pub fn transcript_1_0(path: &Path, bytes: usize) -> (String, usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("transcript"));
    let mut written = 0;
    let mut parent: Option<String> = None;
    let mut n = 0usize;
    let body = "The coupon path subtracts the amount without a floor, so a large coupon makes the total negative. ";
    let file = "export function total(items, coupon) {\n  return sum(items) - coupon.amount;\n}\n"
        .repeat(40);
    while written < bytes {
        for line in turn_1_0(n, &mut parent, body, &file) {
            writeln!(out, "{line}").expect("write");
            written += line.len() + 1;
        }
        n += 1;
    }
    out.flush().expect("flush");
    (parent.unwrap_or_default(), n)
}

/// A record of a 1.0 transcript: `side` says whether it is a sidechain's.
pub fn common_1_0(
    kind: &str,
    uuid: &str,
    parent: &Option<String>,
    t: usize,
    side: bool,
) -> serde_json::Value {
    let mut v = common(kind, uuid, parent, t);
    v["isSidechain"] = side.into();
    v["version"] = "1.0.108".into();
    v
}

/// How many files a subagent reads: its sidechain is about 5/6 of a turn.
const SIDE_READS: usize = 8;

/// One 1.0 turn (see [`transcript_1_0`]).
fn turn_1_0(n: usize, parent: &mut Option<String>, body: &str, file: &str) -> Vec<String> {
    let id = |k: &str| format!("{k}-{n:08}");
    let t = n * 7;
    let text = |s: String| serde_json::json!([{"type": "text", "text": s}]);
    let reply = |content: serde_json::Value, m: &str| {
        serde_json::json!({"model": "claude-sonnet-4-20250514", "id": format!("msg_{m}_{n:012}"),
            "type": "message", "role": "assistant", "content": content, "stop_reason": null,
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 11442, "output_tokens": 9}})
    };
    let result = |call: &str, content: &str| serde_json::json!({"role": "user", "content": [{"tool_use_id": call, "type": "tool_result", "content": content}]});
    let mut lines = Vec::new();
    let mut push = |kind: &str, k: &str, parent: &mut Option<String>, side: bool, message| {
        let mut v = common_1_0(kind, &id(k), parent, t, side);
        v["message"] = message;
        *parent = Some(id(k));
        lines.push(v.to_string());
    };
    let task = format!("toolu_task_{n:08}");
    let read = format!("toolu_read_{n:08}");
    push(
        "user",
        "u",
        parent,
        false,
        serde_json::json!({"role": "user", "content": format!("Turn {n}: {body}")}),
    );
    let task_use = serde_json::json!([{"type": "tool_use", "id": task, "name": "Task",
        "input": {"description": "Look at the cart", "prompt": format!("Find the bug in turn {n}")}}]);
    push("assistant", "a", parent, false, reply(task_use, "a"));
    let mut side = None;
    push(
        "user",
        "s0",
        &mut side,
        true,
        serde_json::json!({"role": "user", "content": format!("Find the bug in turn {n}")}),
    );
    for k in 0..SIDE_READS {
        let read = format!("{read}_{k}");
        let read_use = serde_json::json!([{"type": "tool_use", "id": read, "name": "Read",
            "input": {"file_path": "/home/dev/projects/shop/src/cart.ts"}}]);
        push(
            "assistant",
            &format!("s1-{k}"),
            &mut side,
            true,
            reply(read_use, &format!("s1_{k}")),
        );
        push(
            "user",
            &format!("s2-{k}"),
            &mut side,
            true,
            result(&read, file),
        );
    }
    push(
        "assistant",
        "s3",
        &mut side,
        true,
        reply(text(body.to_string()), "s3"),
    );
    push("user", "r", parent, false, result(&task, body));
    push(
        "assistant",
        "z",
        parent,
        false,
        reply(text(format!("Done with turn {n}.")), "z"),
    );
    lines
}
