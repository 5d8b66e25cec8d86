//! `grove append`

use std::path::Path;

use grove::atsf::{ContentBlock, Message, Role};
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
        _ => read_stdin()?,
    };
    // One lock for all: every message was checked first, so an invalid one
    // anywhere means nothing is written.
    let appended = thread
        .lock()
        .and_then(|lock| lock.append_all(messages, options))
        .map_err(|e| discovery::with_cache_hint(e, &project, &thread))?;
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
fn read_stdin() -> anyhow::Result<Vec<Message>> {
    let stdin = std::io::stdin().lock();
    let mut messages = Vec::new();
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
