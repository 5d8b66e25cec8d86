//! `grove export`: jsonl round-trips, Markdown and HTML show every message;
//! the HTML page is checked in a real headless Chromium.

use std::path::Path;

use crate::support::*;

const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0, 5, 0, 1, 0xff, 0x5f, 0x86, 0xe7, 0x0b, 0, 0,
    0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A thread with text, markup, backticks, thinking, tool calls and an image.
fn rich_thread(sb: &Sandbox, dir: &Path) -> (String, Vec<&'static str>) {
    use base64::Engine;
    let id = new_thread(sb, dir, "Export <me> & \"friends\"");
    let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
    let lines = [
        r#"{"id":"u1","role":"user","timestamp":"2025-03-01T10:00:00.000Z","content":[{"type":"text","text":"Why does <script>alert('x')</script> run?"}]}"#.to_string(),
        r#"{"id":"a1","role":"agent","timestamp":"2025-03-01T10:00:05.000Z","model":"sonnet","content":[{"type":"thinking","text":"secret reasoning here"},{"type":"text","text":"Look at this fence: ```rust``` and `x`"}],"toolCalls":[{"toolCallId":"t1","name":"read_file","status":"completed","input":"{\"path\":\"src/app.ts\"}","output":"line one\nline two"},{"toolCallId":"t2","name":"bash","status":"failed","input":"npm test","output":"exit 1"}]}"#.to_string(),
        format!(r#"{{"id":"u2","role":"user","timestamp":"2025-03-01T10:01:00.000Z","content":[{{"type":"text","text":"Screenshot attached"}},{{"type":"image","mimeType":"image/png","data":"{b64}"}}]}}"#),
        r#"{"id":"s1","role":"system","timestamp":"2025-03-01T10:02:00.000Z","content":[{"type":"text","text":"Context compacted."},{"type":"hologram","depth":3}]}"#.to_string(),
    ];
    append_stdin(sb, dir, &id, &lines.join("\n"));
    let texts = vec![
        "Why does <script>alert('x')</script> run?",
        "Look at this fence: ```rust``` and `x`",
        "Screenshot attached",
        "Context compacted.",
    ];
    (id, texts)
}

#[test]
fn jsonl_export_round_trips_every_message() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let (id, _) = rich_thread(&sb, &dir);
    let thread_dir = dir.join(".agent/threads").join(&id);
    let exported = ok(sb.grove(&dir).args(["export", &id, "--format", "jsonl"]));
    assert_eq!(
        exported.as_bytes(),
        std::fs::read(thread_dir.join("messages.jsonl")).unwrap()
    );
    // Fed back into a new thread, the messages are the same.
    let copy = new_thread(&sb, &dir, "Copy");
    append_stdin(&sb, &dir, &copy, &exported);
    let messages =
        |id: &str| json(&ok(sb.grove(&dir).args(["show", id, "--json"])))["messages"].clone();
    assert_eq!(messages(&copy), messages(&id));
    assert_eq!(messages(&id).as_array().unwrap().len(), 4);
}

#[test]
fn markdown_export_shows_every_message_with_tools_folded() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let (id, texts) = rich_thread(&sb, &dir);
    let md = ok(sb.grove(&dir).args(["export", &id, "--format", "md"]));
    assert!(md.starts_with("# Export <me> & \"friends\"\n"), "{md}");
    for (i, t) in texts.iter().enumerate() {
        assert!(md.contains(t), "message {i} missing: {t}\n{md}");
        assert!(md.contains(&format!("### #{i} · ")), "{md}");
    }
    assert!(md.contains("<details><summary>Tool: read_file (completed)</summary>"));
    assert!(md.contains("<details><summary>Tool: bash (failed)</summary>"));
    assert!(md.contains("<details><summary>Thinking</summary>"));
    // Output containing ``` is fenced with a longer fence.
    assert!(md.contains("line one\nline two"));
    assert!(md.contains("*[hologram block]*"));
    assert!(md.contains("*[image: sha256-"));
}

#[test]
#[cfg_attr(skip_browser, ignore = "GROVE_SKIP_BROWSER=1: needs chromium")]
fn html_export_renders_every_message_in_a_headless_browser() {
    let sb = Sandbox::new();
    if !has_browser() {
        return;
    }
    let dir = sb.dir("p");
    let (id, texts) = rich_thread(&sb, &dir);
    let page = dir.join("thread.html");
    let out = json(&ok(sb.grove(&dir).args([
        "export",
        &id,
        "--format",
        "html",
        "-o",
        "thread.html",
        "--json",
    ])));
    assert_eq!(out["messages"], 4);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external resource"
    );
    assert!(html.contains("Content-Security-Policy"));

    let dom = browser_dom(&sb, &page);
    // The browser built the page: every message is a section, in order, with its text.
    let sections = dom.matches("<section class=\"message").count();
    assert_eq!(sections, 4, "{dom}");
    for (i, t) in texts.iter().enumerate() {
        let escaped = t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let at = dom.find(&format!("id=\"m-{i}\"")).expect("section id");
        assert!(
            dom[at..].contains(&escaped),
            "message {i} not rendered: {t}"
        );
    }
    assert!(!dom.contains("<script>"), "content is text, never markup");
    assert!(dom.contains("<title>Export &lt;me&gt; &amp; \"friends\"</title>"));
    // Tool calls collapsible, thinking hidden by default (no `open`).
    assert_eq!(dom.matches("<details class=\"tool").count(), 2);
    assert!(dom.contains("<details class=\"thinking\"><summary>"));
    assert!(!dom.contains("<details class=\"thinking\" open"));
    // The image is embedded.
    assert!(dom.contains("src=\"data:image/png;base64,"));
}

/// A thread whose tool call was recorded pending, then completed by a later
/// completion message (`completesMessage`).
fn completed_later(sb: &Sandbox, dir: &Path) -> String {
    let id = new_thread(sb, dir, "Late result");
    let lines = [
        r#"{"id":"u1","role":"user","timestamp":"2025-03-01T10:00:00.000Z","content":[{"type":"text","text":"Count the lines"}]}"#,
        r#"{"id":"a1","role":"agent","timestamp":"2025-03-01T10:00:05.000Z","content":[{"type":"text","text":"Counting."}],"toolCalls":[{"toolCallId":"t1","name":"wc_lines","status":"pending","input":"wc -l src/app.ts"}]}"#,
        r#"{"id":"a1~done~t1","role":"agent","timestamp":"2025-03-01T10:00:09.000Z","content":[],"toolCalls":[{"toolCallId":"t1","name":"wc_lines","status":"completed","input":"wc -l src/app.ts","output":"42 src/app.ts"}],"completesMessage":"a1"}"#,
        r#"{"id":"a2","role":"agent","timestamp":"2025-03-01T10:00:10.000Z","content":[{"type":"text","text":"It has 42 lines."}]}"#,
    ];
    append_stdin(sb, dir, &id, &lines.join("\n"));
    id
}

#[test]
fn a_call_completed_later_appears_once_with_its_result_in_show_and_exports() {
    let sb = Sandbox::new();
    let dir = sb.dir("p");
    let id = completed_later(&sb, &dir);
    let shown = ok(sb.grove(&dir).args(["show", &id]));
    let md = ok(sb.grove(&dir).args(["export", &id, "--format", "md"]));
    let html = ok(sb.grove(&dir).args(["export", &id, "--format", "html"]));
    for (what, text) in [("show", &shown), ("markdown", &md), ("html", &html)] {
        assert_eq!(
            text.matches("wc_lines").count(),
            1,
            "{what}: the call once\n{text}"
        );
        assert!(text.contains("completed"), "{what}: final status\n{text}");
        assert!(!text.contains("pending"), "{what}: not pending\n{text}");
        assert!(text.contains("42 src/app.ts"), "{what}: the output\n{text}");
        assert!(text.contains("It has 42 lines."), "{what}\n{text}");
    }
}
