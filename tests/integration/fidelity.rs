//! Import fidelity: a record grove cannot fully use costs only itself, a
//! path with nothing importable says what was expected, every format goes
//! through the one importer interface.

use std::path::Path;

use crate::support::*;

fn rollout(dir: &Path, n: usize, image_url: serde_json::Value) {
    let id = format!("019a0000-0000-7000-8000-00000000000{n}");
    let lines = [
        serde_json::json!({"timestamp": "2025-10-29T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": id, "cwd": "/tmp/w", "cli_version": "0.98.0"}}),
        serde_json::json!({"timestamp": "2025-10-29T00:00:01.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": format!("prompt {n}")},
                {"type": "input_image", "image_url": image_url}]}}),
        serde_json::json!({"timestamp": "2025-10-29T00:00:02.000Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": format!("answer {n}")}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(
        dir.join(format!("rollout-2025-10-29T00-00-0{n}-{id}.jsonl")),
        text,
    )
    .unwrap();
}

#[test]
fn an_image_grove_cannot_store_is_a_placeholder_and_every_rollout_still_imports() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let src = sb.dir("sessions");
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let urls = [
        serde_json::json!(png),
        serde_json::json!(png),
        serde_json::Value::Null,
        serde_json::json!("https://example.com/shot.png"),
        serde_json::json!("data:image/png;base64,<redacted>"),
        serde_json::json!(png),
    ];
    for (n, url) in urls.into_iter().enumerate() {
        rollout(&src, n + 1, url);
    }
    let out = run(sb.grove(&repo).args(["import", "codex"]).arg(&src));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "something was kept as a placeholder: {err}"
    );
    for n in [3, 4, 5] {
        let file = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(&format!("000{n}.jsonl")))
            .unwrap();
        assert!(
            err.contains(&file.display().to_string()),
            "names the file of rollout {n}: {err}"
        );
    }
    let rows = list_rows(&sb, &repo);
    assert_eq!(rows.len(), 6, "every rollout imported: {rows:?}");
    let text_of = |n: usize| {
        let id = format!("codex-019a0000-0000-7000-8000-00000000000{n}");
        let shown = json(&ok(sb.grove(&repo).args(["show", &id, "--json"])));
        shown["messages"][0]["content"].clone()
    };
    assert_eq!(text_of(1)[1]["type"], "image");
    assert!(text_of(1)[1]["assetRef"].is_string());
    assert_eq!(text_of(3)[1]["type"], "text");
    assert_eq!(
        text_of(4)[1]["text"],
        "[image: https://example.com/shot.png]"
    );
    assert_eq!(
        text_of(5)[1]["unimported"]["data"],
        "data:image/png;base64,<redacted>"
    );
    // The human summary is printed even so.
    assert!(err.contains("6 thread(s) imported: 6 created"), "{err}");
}

#[test]
fn a_path_with_nothing_importable_says_what_layout_was_expected() {
    let sb = Sandbox::new();
    let repo = sb.repo("r");
    let empty = sb.dir("empty");
    let err = fails_with(sb.grove(&repo).args(["import", "claude"]).arg(&empty), 1);
    assert!(err.contains("nothing to import as claude"), "{err}");
    assert!(err.contains(".jsonl"), "names the layout: {err}");

    // A Codex directory given to `import claude`.
    let codex = sb.path().join("codex");
    copy_tree(&fixtures().join("codex"), &codex);
    let err = fails_with(sb.grove(&repo).args(["import", "claude"]).arg(&codex), 1);
    assert!(err.contains("nothing to import as claude"), "{err}");

    // HQ's workspace directory instead of the HQ root: its checkpoints are found.
    let hq = sb.path().join("hq");
    copy_tree(&fixtures().join("hq"), &hq);
    let out = run(sb
        .grove(&repo)
        .args(["import", "hq"])
        .arg(hq.join("workspace")));
    // (the fixture holds one malformed checkpoint on purpose: exit 4)
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let imported = list_rows(&sb, &repo).len();
    assert!(imported > 0);
    // A directory of something else entirely.
    let other = sb.dir("other");
    std::fs::write(other.join("notes.txt"), "hello").unwrap();
    for format in ["codex", "hq", "amp", "sage", "dagent"] {
        let err = fails_with(sb.grove(&repo).args(["import", format]).arg(&other), 1);
        assert!(
            err.contains(&format!("nothing to import as {format}")) && err.contains("expected"),
            "{format}: {err}"
        );
    }
    assert_eq!(
        list_rows(&sb, &repo).len(),
        imported,
        "nothing more was written"
    );
}
