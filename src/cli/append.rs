//! `grove append`

use std::path::Path;

use grove::atsf::{ContentBlock, Message, Role, anthropic};
use grove::discovery;
use grove::project::Project;
use grove::store::AppendOptions;
use serde_json::Value;

use super::{Output, UsageError};

/// Append a message to a thread's messages.jsonl.
///
/// With --role and --text, appends one text message. With --stdin, reads
/// message objects (JSON; one, or several one after another as JSON Lines)
/// from standard input, the way an agent's hook sends them: `id` and
/// `timestamp` are filled in when missing, required fields are checked, and
/// unknown fields are kept. Inline base64 images are stored as assets.
#[derive(clap::Args)]
pub struct Args {
    /// Thread id or a unique prefix of it.
    #[arg(add = super::complete::threads())]
    thread: String,

    /// Role of the message.
    #[arg(long, value_enum, requires = "text", conflicts_with = "stdin")]
    role: Option<RoleArg>,

    /// Text of the message (with --role).
    #[arg(long, requires = "role", conflicts_with = "stdin")]
    text: Option<String>,

    /// Read message objects (JSON) from standard input.
    #[arg(long)]
    stdin: bool,

    /// Do not fsync messages.jsonl after each line (faster bulk loads; a crash may lose the last lines).
    #[arg(long)]
    no_fsync: bool,

    /// Print each appended message's id and index as a JSON object (one per line).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(super) enum RoleArg {
    User,
    Agent,
    System,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::User => Role::User,
            RoleArg::Agent => Role::Agent,
            RoleArg::System => Role::System,
        }
    }
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    if args.role.is_none() && !args.stdin {
        return Err(UsageError(
            "say what to append: --role user|agent|system --text TEXT for one message, \
             or --stdin to read message objects (JSON) from standard input"
                .into(),
        )
        .into());
    }
    let project = Project::discover(cwd)?;
    let thread = discovery::find_thread(&project, &args.thread)?;
    let options = AppendOptions {
        fsync: !args.no_fsync,
    };
    let messages = match (args.role, args.text) {
        (Some(role), Some(text)) => vec![Message::new(role.into(), vec![ContentBlock::text(text)])],
        _ => read_stdin(&thread)?,
    };
    // One lock for all: every message was checked first, so an invalid one
    // anywhere means nothing is written.
    let appended = thread
        .lock()
        .and_then(|lock| lock.append_all(messages, options))
        .map_err(|e| match e {
            // A message the log cannot take (an id it holds) is bad input.
            grove::Error::InvalidMessage(why) => {
                anyhow::Error::from(UsageError(format!("{why}; nothing was appended")))
            }
            e => discovery::with_cache_hint(e, &project, &thread).into(),
        })?;
    for a in &appended {
        if let Some(torn) = &a.torn {
            out.warn(&format!(
                "set aside {} bytes of an incomplete last line in {}",
                torn.bytes,
                torn.saved_to.display()
            ));
        }
        if let Some(e) = &a.meta_error {
            out.warn(&format!(
                "the message is in the log, but thread.json was not updated ({e}); the next append or `grove repair` recounts"
            ));
        }
        if args.json {
            out.line(&serde_json::to_string(&serde_json::json!({
                "threadId": thread.id(),
                "messageId": a.message.id,
                "index": a.index,
            }))?)?;
        } else {
            out.line(&a.message.id)?;
        }
    }
    Ok(super::exit::SUCCESS)
}

/// Every message object on standard input, each checked before any is
/// written: the first invalid one is a usage error naming its position.
/// Anthropic-shaped messages are converted ([`grove::atsf::anthropic`]);
/// their tool results complete the calls they answer.
fn read_stdin(thread: &grove::store::Thread) -> anyhow::Result<Vec<Message>> {
    let stdin = std::io::stdin().lock();
    let mut messages: Vec<Message> = Vec::new();
    let mut calls: Option<CallIndex> = None;
    for (n, value) in serde_json::Deserializer::from_reader(stdin)
        .into_iter::<Value>()
        .enumerate()
    {
        let position = n + 1;
        let invalid = |e: String| {
            UsageError(format!(
                "standard input, message #{position}: {e}; nothing was appended"
            ))
        };
        let value = value.map_err(|e| invalid(format!("not valid JSON: {e}")))?;
        let (value, results) = if anthropic::is_anthropic(&value) {
            let c = anthropic::convert(value).map_err(invalid)?;
            (c.message, c.results)
        } else {
            (Some(value), Vec::new())
        };
        if !results.is_empty() {
            let index = calls.get_or_insert_with(|| CallIndex::of(thread));
            index.add(&messages);
            for r in &results {
                let completion = index.complete(r).map_err(invalid)?;
                messages.push(completion);
            }
        }
        let Some(value) = value else { continue };
        let message = message_from_json(value).map_err(invalid)?;
        grove::store::validate_message(&message).map_err(|e| invalid(e.to_string()))?;
        // Images are decoded now too (stored later): bad base64 is found
        // before anything is written.
        grove::store::take_inline_images(&mut message.clone())
            .map_err(|e| invalid(e.to_string()))?;
        grove::atsf::normalize_timestamp(&message.timestamp).map_err(|e| invalid(e.to_string()))?;
        messages.push(message);
    }
    if messages.is_empty() {
        return Err(UsageError("standard input held no message object".into()).into());
    }
    Ok(messages)
}

/// The tool calls a tool result may answer: the thread's, then those of the
/// messages read before it.
struct CallIndex {
    calls: std::collections::HashMap<String, (String, grove::atsf::ToolCall)>,
    /// Message ids there are (a result recorded twice is refused).
    ids: std::collections::HashSet<String>,
    seen: usize,
}

impl CallIndex {
    fn of(thread: &grove::store::Thread) -> CallIndex {
        let mut index = CallIndex {
            calls: Default::default(),
            ids: Default::default(),
            seen: 0,
        };
        if let Ok(messages) = thread.messages() {
            for m in messages.flatten() {
                index.add_one(&m);
            }
        }
        index
    }

    fn add(&mut self, batch: &[Message]) {
        for m in &batch[self.seen..] {
            self.add_one(m);
        }
        self.seen = batch.len();
    }

    fn add_one(&mut self, m: &Message) {
        self.ids.insert(m.id.clone());
        let of = m.completes().unwrap_or(&m.id).to_string();
        for c in m.tool_calls.iter().flatten() {
            self.calls
                .insert(c.tool_call_id.clone(), (of.clone(), c.clone()));
        }
    }

    /// The completion message recording `r` as the result of its call.
    fn complete(&self, r: &anthropic::ToolResult) -> Result<Message, String> {
        let (of, call) = self.calls.get(&r.tool_call_id).ok_or_else(|| {
            format!(
                "a tool_result for {:?}, a call this thread does not have (append the tool_use first)",
                r.tool_call_id
            )
        })?;
        let mut done = call.clone();
        done.status = if r.is_error {
            grove::atsf::ToolStatus::Failed
        } else {
            grove::atsf::ToolStatus::Completed
        };
        done.output = Some(r.output.clone());
        let completion = grove::atsf::completion(of, vec![done], grove::atsf::now_timestamp());
        if self.ids.contains(&completion.id) {
            return Err(format!(
                "the result of {:?} is recorded already",
                r.tool_call_id
            ));
        }
        Ok(completion)
    }
}

/// Turns a JSON object into a message, filling `id` and `timestamp` when missing.
fn message_from_json(value: Value) -> Result<Message, String> {
    let Value::Object(mut map) = value else {
        return Err(format!("expected a JSON object, found {value}"));
    };
    if !map.contains_key("id") {
        map.insert("id".into(), Value::from(uuid::Uuid::new_v4().to_string()));
    }
    if !map.contains_key("timestamp") {
        map.insert(
            "timestamp".into(),
            Value::from(grove::atsf::now_timestamp()),
        );
    }
    if !map.contains_key("content") {
        return Err("missing required field `content` (an array of content blocks)".into());
    }
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("field `{path}`: {inner}")
        }
    })
}
