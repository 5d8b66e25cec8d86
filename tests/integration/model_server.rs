//! A scripted model server for the real agents' tests: the Anthropic
//! Messages API (Claude Code) or the OpenAI Responses API (Codex), streaming,
//! on 127.0.0.1 at an ephemeral port.
//!
//! A script is a list of turns: the prompt that opens the turn, the tool
//! calls the model makes in it one after the other (run a shell command,
//! write a file), and its final text. The server keeps no conversation state:
//! each request carries the conversation, so the step to answer is found in
//! it — the last user prompt names the turn, and the tool results after it
//! say how many of the turn's calls were made. Every request is logged, so a
//! test can assert what the model received.
//!
//! Bounded: at most [`MAX_REQUESTS`] requests (later ones get a 503) and
//! [`LIFETIME`] of life; it stops when dropped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Requests a server answers before it answers only 503.
pub const MAX_REQUESTS: u64 = 200;
/// How long a server lives at most.
pub const LIFETIME: Duration = Duration::from_secs(300);
/// How long a kept-alive connection may stay idle.
const IDLE: Duration = Duration::from_secs(30);

/// Which vendor's API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/messages?beta=true` (Claude Code).
    Anthropic,
    /// `POST /v1/responses` (Codex).
    OpenAi,
}

/// A tool call the model makes.
#[derive(Debug, Clone)]
pub enum Action {
    /// Run a shell command (Claude Code's `Bash`, Codex's `exec_command`).
    Shell(String),
    /// Write a new file, relative to the agent's directory (Claude Code's
    /// `Write`, Codex's `apply_patch` adding the file).
    WriteFile { path: String, content: String },
}

/// One turn of a script.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The user prompt that opens the turn (matched as a substring of the
    /// last user text the request carries).
    pub prompt: String,
    /// What the model thinks before it acts (a signed `thinking` block, a
    /// `reasoning` item with encrypted content), in the turn's first answer.
    pub thinking: String,
    /// The tool calls, one per answer, in order.
    pub actions: Vec<Action>,
    /// The final text.
    pub reply: String,
}

/// The signature of every thinking block the server sends.
pub const SIGNATURE: &str = "c2NyaXB0ZWQtbW9kZWwtc2lnbmF0dXJl";
/// The encrypted content of every reasoning item the server sends.
pub const ENCRYPTED: &str = "c2NyaXB0ZWQtcmVhc29uaW5n";

/// The usage answer number `n` reports: input, output, cache read (OpenAI:
/// cached), cache creation (OpenAI: reasoning). Each answer's differs, so a
/// usage counted twice or left out shows in any sum.
pub fn usage(n: u64) -> [u64; 4] {
    [119 + n, 16 + n, 79 + n, 29 + n]
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub raw: String,
    /// How the server answered (status code).
    pub status: u16,
    /// The usage the answer reported (see [`usage`]), for a model call.
    pub usage: Option<[u64; 4]>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this asked the model for an answer.
    pub fn is_model_call(&self) -> bool {
        let route = self.path.split('?').next().unwrap_or("");
        self.method == "POST" && matches!(route, "/v1/messages" | "/v1/responses")
    }
}

/// Called before the server answers a model call, with the call's number
/// (from 0) and its body: a test holds the answer there until it saw what it
/// waits for (the agent waits for the model meanwhile, and runs no hook).
pub type Gate = Box<dyn Fn(u64, &Value) + Send + Sync>;

struct Shared {
    api: Api,
    turns: Vec<Turn>,
    log: Mutex<Vec<Request>>,
    count: AtomicU64,
    calls: AtomicU64,
    gate: Option<Gate>,
    stop: AtomicBool,
    started: Instant,
}

/// A running scripted model server.
pub struct ModelServer {
    port: u16,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Starts a server speaking `api` that plays `turns`.
    pub fn start(api: Api, turns: Vec<Turn>) -> ModelServer {
        ModelServer::start_with(api, turns, None)
    }

    /// [`ModelServer::start`], running `gate` before each model call is
    /// answered.
    pub fn start_gated(
        api: Api,
        turns: Vec<Turn>,
        gate: impl Fn(u64, &Value) + Send + Sync + 'static,
    ) -> ModelServer {
        ModelServer::start_with(api, turns, Some(Box::new(gate)))
    }

    fn start_with(api: Api, turns: Vec<Turn>, gate: Option<Gate>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            api,
            turns,
            log: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            gate,
            stop: AtomicBool::new(false),
            started: Instant::now(),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || {
            while !s.stop.load(Ordering::SeqCst) && s.started.elapsed() < LIFETIME {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || serve(stream, &s));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        ModelServer {
            port,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().unwrap().clone()
    }

    /// The requests that asked the model for an answer.
    pub fn model_calls(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(Request::is_model_call)
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Serves the requests of one connection (kept alive) until it closes, idles
/// or the server stops.
fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(IDLE));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while !shared.stop.load(Ordering::SeqCst) {
        let Some((method, path, headers, body)) = read_request(&mut reader) else {
            return;
        };
        let n = shared.count.fetch_add(1, Ordering::SeqCst) + 1;
        let raw = String::from_utf8_lossy(&body).into_owned();
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let route = path.split('?').next().unwrap_or("");
        if method == "POST"
            && matches!(route, "/v1/messages" | "/v1/responses")
            && n <= MAX_REQUESTS
        {
            let call = shared.calls.fetch_add(1, Ordering::SeqCst);
            if let Some(gate) = &shared.gate {
                gate(call, &json);
            }
        }
        let (status, content_type, answer) = if n > MAX_REQUESTS {
            (503, "application/json", error(shared.api, "overloaded"))
        } else {
            answer(shared, n, &method, &path, &json)
        };
        let mut request = Request {
            method,
            path,
            headers,
            body: json,
            raw,
            status,
            usage: None,
        };
        if request.is_model_call() && status == 200 {
            request.usage = Some(usage(n));
        }
        shared.log.lock().unwrap().push(request);
        let reason = match status {
            200 => "OK",
            404 => "Not Found",
            _ => "Error",
        };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: keep-alive\r\n\r\n",
            answer.len()
        );
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(&answer).is_err()
            || writer.flush().is_err()
        {
            return;
        }
    }
}

type Parsed = (String, String, Vec<(String, String)>, Vec<u8>);

/// One HTTP/1.1 request: its method, target, headers and body (by
/// `content-length` or chunked).
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Parsed> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body = vec![0; len];
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, headers, body))
}

fn error(api: Api, message: &str) -> Vec<u8> {
    match api {
        Api::Anthropic => {
            json!({"type": "error", "error": {"type": "not_found_error", "message": message}})
        }
        Api::OpenAi => {
            json!({"error": {"type": "invalid_request_error", "message": message, "code": null, "param": null}})
        }
    }
    .to_string()
    .into_bytes()
}

/// The answer to request number `n`: status, content type, body.
fn answer(
    shared: &Shared,
    n: u64,
    method: &str,
    path: &str,
    body: &Value,
) -> (u16, &'static str, Vec<u8>) {
    let route = path.split('?').next().unwrap_or(path);
    match (shared.api, method, route) {
        (Api::Anthropic, "POST", "/v1/messages/count_tokens") => (
            200,
            "application/json",
            json!({"input_tokens": usage(n)[0]})
                .to_string()
                .into_bytes(),
        ),
        (Api::Anthropic, "POST", "/v1/messages") => {
            let step = anthropic_step(&shared.turns, body);
            let message = anthropic_message(n, body, &step);
            if body["stream"] == true {
                (200, "text/event-stream", anthropic_events(&message))
            } else {
                (200, "application/json", message.to_string().into_bytes())
            }
        }
        (Api::OpenAi, "POST", "/v1/responses") => {
            let step = openai_step(&shared.turns, body);
            (200, "text/event-stream", openai_events(n, body, &step))
        }
        _ => (
            404,
            "application/json",
            error(shared.api, &format!("{method} {path}: no such route")),
        ),
    }
}

/// What the model answers with: a thinking part (in a turn's first answer),
/// then one tool call, or the final text.
#[derive(Debug, Clone)]
struct Step {
    /// Tool call ids are `<turn>_<call>`, unique in a conversation.
    id: String,
    thinking: Option<String>,
    action: Option<Action>,
    text: Option<String>,
}

/// The step that follows a conversation whose last prompt is `prompt` and
/// that has `done` tool results after it.
fn step_of(turns: &[Turn], prompt: Option<&str>, done: usize) -> Step {
    let found = prompt.and_then(|p| {
        turns
            .iter()
            .enumerate()
            .rev()
            .find(|(_, t)| p.contains(t.prompt.as_str()))
    });
    let Some((i, turn)) = found else {
        // Not a scripted turn (a side request of the agent): plain text.
        return Step {
            id: "side".into(),
            thinking: None,
            action: None,
            text: Some("(the scripted model has no step for this request)".into()),
        };
    };
    Step {
        id: format!("{i}_{done}"),
        thinking: (done == 0 && !turn.thinking.is_empty()).then(|| turn.thinking.clone()),
        action: turn.actions.get(done).cloned(),
        text: (done >= turn.actions.len()).then(|| turn.reply.clone()),
    }
}

/// Anthropic: the last user message with text (not only tool results) names
/// the turn; the tool results in the messages after it count the calls made.
fn anthropic_step(turns: &[Turn], body: &Value) -> Step {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let blocks = |m: &Value| -> Vec<Value> {
        match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        }
    };
    let mut prompt = None;
    let mut done = 0;
    for m in &messages {
        if m["role"] != "user" {
            continue;
        }
        let b = blocks(m);
        let results = b.iter().filter(|x| x["type"] == "tool_result").count();
        let texts: Vec<&str> = b
            .iter()
            .filter(|x| x["type"] == "text")
            .filter_map(|x| x["text"].as_str())
            .collect();
        let prompted = texts
            .iter()
            .any(|t| turns.iter().any(|turn| t.contains(turn.prompt.as_str())));
        if prompted && results == 0 {
            prompt = Some(texts.join("\n"));
            done = 0;
        } else {
            done += results;
        }
    }
    step_of(turns, prompt.as_deref(), done)
}

fn anthropic_message(n: u64, request: &Value, step: &Step) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &step.thinking {
        content.push(json!({"type": "thinking", "thinking": t, "signature": SIGNATURE}));
    }
    if let Some(t) = &step.text {
        content.push(json!({"type": "text", "text": t}));
    }
    if let Some(a) = &step.action {
        let (name, input) = match a {
            Action::Shell(cmd) => (
                "Bash",
                json!({"command": cmd, "description": format!("Run {cmd}")}),
            ),
            Action::WriteFile { path, content } => {
                ("Write", json!({"file_path": path, "content": content}))
            }
        };
        content.push(json!({"type": "tool_use", "id": format!("toolu_{:02}_{}", n, step.id), "name": name, "input": input}));
    }
    json!({
        "id": format!("msg_scripted_{n:04}"),
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": if step.action.is_some() { "tool_use" } else { "end_turn" },
        "stop_sequence": null,
        "usage": {
            "input_tokens": usage(n)[0],
            "output_tokens": usage(n)[1],
            "cache_read_input_tokens": usage(n)[2],
            "cache_creation_input_tokens": usage(n)[3],
        },
    })
}

fn sse(events: &[(&str, Value)]) -> Vec<u8> {
    let mut out = String::new();
    for (name, data) in events {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    out.into_bytes()
}

/// The Messages API's stream of `message`: `message_start`, each block's
/// start, deltas (`thinking_delta` + `signature_delta`, `text_delta`,
/// `input_json_delta`) and stop, `message_delta` with the stop reason and
/// usage, `message_stop`.
fn anthropic_events(message: &Value) -> Vec<u8> {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": start}),
    )];
    for (index, block) in message["content"].as_array().unwrap().iter().enumerate() {
        let (empty, deltas) = match block["type"].as_str().unwrap() {
            "thinking" => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ],
            ),
            "text" => (
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": block["text"]})],
            ),
            _ => {
                // Tool input streams as JSON text, here in two pieces.
                let input = block["input"].to_string();
                let half = input.len() / 2;
                let half = (0..=half)
                    .rev()
                    .find(|i| input.is_char_boundary(*i))
                    .unwrap();
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    vec![
                        json!({"type": "input_json_delta", "partial_json": &input[..half]}),
                        json!({"type": "input_json_delta", "partial_json": &input[half..]}),
                    ],
                )
            }
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        ));
        for d in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": d}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
            "usage": message["usage"],
        }),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    sse(&events)
}

/// How Codex's TUI asks the model for a task's title, in a thread of its
/// own whose request quotes the user's prompt.
pub const TITLE_REQUEST: &str = "Generate a concise, single-line task title";

/// Whether an OpenAI request is Codex's TUI asking for a task's title.
pub fn is_title_request(body: &Value) -> bool {
    body["input"].as_array().into_iter().flatten().any(|i| {
        i["role"] == "user"
            && i["content"].as_array().into_iter().flatten().any(|c| {
                c["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(TITLE_REQUEST))
            })
    })
}

/// OpenAI: the last `message` input item of role `user` whose text names a
/// turn; the tool outputs after it count the calls made. A title request
/// gets a title.
fn openai_step(turns: &[Turn], body: &Value) -> Step {
    if is_title_request(body) {
        return Step {
            id: "title".into(),
            thinking: None,
            action: None,
            text: Some("Leave a note".into()),
        };
    }
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let mut prompt = None;
    let mut done = 0;
    for item in &input {
        match item["type"].as_str() {
            Some("message") if item["role"] == "user" => {
                let text: Vec<&str> = item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str())
                    .collect();
                let text = text.join("\n");
                if turns.iter().any(|t| text.contains(t.prompt.as_str())) {
                    prompt = Some(text);
                    done = 0;
                }
            }
            Some("function_call_output" | "custom_tool_call_output") => done += 1,
            _ => {}
        }
    }
    step_of(turns, prompt.as_deref(), done)
}

/// The Responses API's stream: `response.created`, `response.in_progress`,
/// each output item added, its deltas and done, `response.completed` with
/// the output and the usage (cached and reasoning tokens).
fn openai_events(n: u64, request: &Value, step: &Step) -> Vec<u8> {
    let id = format!("resp_scripted_{n:04}");
    let base = json!({
        "id": id, "object": "response", "created_at": 1_790_000_000 + n,
        "model": request["model"], "status": "in_progress", "output": [],
    });
    let mut events: Vec<(&str, Value)> = vec![
        (
            "response.created",
            json!({"type": "response.created", "sequence_number": 0, "response": base}),
        ),
        (
            "response.in_progress",
            json!({"type": "response.in_progress", "sequence_number": 1, "response": base}),
        ),
    ];
    let mut output = Vec::new();
    if let Some(t) = &step.thinking {
        output.push(json!({
            "type": "reasoning", "id": format!("rs_scripted_{n:04}"),
            "summary": [{"type": "summary_text", "text": t}],
            "encrypted_content": ENCRYPTED,
        }));
    }
    if let Some(a) = &step.action {
        let call_id = format!("call_scripted_{}", step.id);
        output.push(match a {
            Action::Shell(cmd) => json!({
                "type": "function_call", "id": format!("fc_scripted_{n:04}"), "status": "completed",
                "call_id": call_id, "name": "exec_command",
                "arguments": json!({"cmd": cmd}).to_string(),
            }),
            Action::WriteFile { path, content } => {
                let mut patch = format!("*** Begin Patch\n*** Add File: {path}\n");
                for line in content.lines() {
                    patch.push_str(&format!("+{line}\n"));
                }
                patch.push_str("*** End Patch\n");
                json!({
                    "type": "custom_tool_call", "id": format!("ctc_scripted_{n:04}"), "status": "completed",
                    "call_id": call_id, "name": "apply_patch", "input": patch,
                })
            }
        });
    }
    if let Some(t) = &step.text {
        output.push(json!({
            "type": "message", "id": format!("msg_scripted_{n:04}"), "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": t, "annotations": []}],
        }));
    }
    for (index, item) in output.iter().enumerate() {
        let mut added = item.clone();
        if item["type"] == "message" {
            added["content"] = json!([]);
            added["status"] = json!("in_progress");
        }
        events.push((
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        ));
        match item["type"].as_str() {
            Some("message") => events.push((
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "output_index": index,
                       "item_id": item["id"], "content_index": 0, "delta": item["content"][0]["text"]}),
            )),
            Some("reasoning") => events.push((
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.delta", "output_index": index,
                       "item_id": item["id"], "summary_index": 0, "delta": item["summary"][0]["text"]}),
            )),
            Some("function_call") => events.push((
                "response.function_call_arguments.delta",
                json!({"type": "response.function_call_arguments.delta", "output_index": index,
                       "item_id": item["id"], "delta": item["arguments"]}),
            )),
            _ => {}
        }
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    let mut done = base.clone();
    done["status"] = json!("completed");
    done["output"] = Value::Array(output);
    let [input, output, cached, reasoning] = usage(n);
    done["usage"] = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output,
    });
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": done}),
    ));
    let mut numbered = Vec::new();
    for (i, (name, mut data)) in events.into_iter().enumerate() {
        data["sequence_number"] = json!(i);
        numbered.push((name, data));
    }
    sse(&numbered)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request on a new connection; the status and the body.
    fn post(server: &ModelServer, path: &str, body: &Value) -> (u16, String) {
        let mut s = TcpStream::connect(server.url().trim_start_matches("http://")).unwrap();
        let body = body.to_string();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(s);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut len = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0; len];
        reader.read_exact(&mut answer).unwrap();
        (
            status.split_whitespace().nth(1).unwrap().parse().unwrap(),
            String::from_utf8(answer).unwrap(),
        )
    }

    fn script() -> Vec<Turn> {
        vec![Turn {
            prompt: "Go".into(),
            thinking: "Hmm.".into(),
            actions: vec![
                Action::Shell("true".into()),
                Action::WriteFile {
                    path: "a.txt".into(),
                    content: "x\n".into(),
                },
            ],
            reply: "Done.".into(),
        }]
    }

    #[test]
    fn the_anthropic_server_plays_the_script_from_the_conversation_it_receives() {
        let server = ModelServer::start(Api::Anthropic, script());
        let user = |content: Value| json!({"role": "user", "content": content});
        let mut messages = vec![user(
            json!([{"type": "text", "text": "<system-reminder/>"}, {"type": "text", "text": "Go"}]),
        )];
        let (status, first) = post(
            &server,
            "/v1/messages?beta=true",
            &json!({"model": "m", "stream": true, "messages": messages}),
        );
        assert_eq!(status, 200);
        for part in [
            "event: message_start",
            "\"thinking_delta\"",
            "\"signature_delta\"",
            "\"name\":\"Bash\"",
            "input_json_delta",
            "\"stop_reason\":\"tool_use\"",
            "\"cache_read_input_tokens\":80",
            "event: message_stop",
        ] {
            assert!(first.contains(part), "{part} in {first}");
        }
        messages.push(json!({"role": "assistant", "content": []}));
        messages.push(user(
            json!([{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]),
        ));
        let (_, second) = post(
            &server,
            "/v1/messages?beta=true",
            &json!({"model": "m", "stream": true, "messages": messages}),
        );
        assert!(second.contains("\"name\":\"Write\""), "{second}");
        assert!(!second.contains("thinking"), "thinking opens the turn only");
        messages.push(json!({"role": "assistant", "content": []}));
        messages.push(user(
            json!([{"type": "tool_result", "tool_use_id": "u", "content": "ok"}]),
        ));
        let (_, last) = post(
            &server,
            "/v1/messages",
            &json!({"model": "m", "stream": false, "messages": messages}),
        );
        let last: Value = serde_json::from_str(&last).unwrap();
        assert_eq!(last["content"], json!([{"type": "text", "text": "Done."}]));
        assert_eq!(last["stop_reason"], "end_turn");
        let (status, _) = post(&server, "/v1/models", &json!({}));
        assert_eq!(status, 404);
        let log = server.requests();
        assert_eq!(log.len(), 4);
        assert_eq!(server.model_calls().len(), 3);
        assert_eq!(log[3].status, 404);
        assert_eq!(log[1].body["messages"][2]["content"][0]["content"], "ok");
    }

    #[test]
    fn the_openai_server_plays_the_script_and_stops_answering_past_its_bound() {
        let server = ModelServer::start(Api::OpenAi, script());
        let mut input = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]}),
        ];
        let (_, first) = post(
            &server,
            "/v1/responses",
            &json!({"model": "m", "input": input}),
        );
        for part in [
            "event: response.created",
            "\"encrypted_content\"",
            "\"name\":\"exec_command\"",
            "\"cached_tokens\":80",
            "\"reasoning_tokens\":30",
            "event: response.completed",
        ] {
            assert!(first.contains(part), "{part} in {first}");
        }
        input.push(json!({"type": "function_call_output", "call_id": "c", "output": "ok"}));
        let (_, second) = post(
            &server,
            "/v1/responses",
            &json!({"model": "m", "input": input}),
        );
        assert!(second.contains("\"name\":\"apply_patch\""), "{second}");
        assert!(second.contains("*** Add File: a.txt\\n+x\\n"), "{second}");
        input.push(json!({"type": "custom_tool_call_output", "call_id": "d", "output": "ok"}));
        let (_, last) = post(
            &server,
            "/v1/responses",
            &json!({"model": "m", "input": input}),
        );
        assert!(last.contains("\"text\":\"Done.\""), "{last}");
        // Codex's request for a title quotes the prompt: it gets a title.
        let title = json!([{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("{TITLE_REQUEST} ...\nGo")}
        ]}]);
        let (_, named) = post(
            &server,
            "/v1/responses",
            &json!({"model": "m", "input": title}),
        );
        assert!(named.contains("\"text\":\"Leave a note\""), "{named}");
        assert!(!named.contains("exec_command"), "{named}");
        // Bounded: past MAX_REQUESTS every request gets a 503.
        for _ in 4..MAX_REQUESTS {
            post(&server, "/nowhere", &json!({}));
        }
        let (status, _) = post(
            &server,
            "/v1/responses",
            &json!({"model": "m", "input": input}),
        );
        assert_eq!(status, 503);
    }
}
