//! `grove append`

use std::path::Path;

use grove::atsf::{ContentBlock, Message, Role};
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
    thread: String,

    /// Role of the message.
    #[arg(long, value_enum, requires = "text", conflicts_with = "stdin")]
    role: Option<RoleArg>,

    /// Text of the message (with --role).
    #[arg(long, requires = "role", conflicts_with = "stdin")]
    text: Option<String>,

    /// Read message objects (JSON) from standard input.
    #[arg(long, required_unless_present = "role")]
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
    let thread = super::resolve_thread(cwd, &args.thread)?;
    let options = AppendOptions {
        fsync: !args.no_fsync,
    };
    let report = |appended: &grove::store::Appended| -> anyhow::Result<()> {
        if let Some(torn) = &appended.torn {
            out.warn(&format!(
                "set aside {} bytes of an incomplete last line in {}",
                torn.bytes,
                torn.saved_to.display()
            ));
        }
        if args.json {
            out.line(&serde_json::to_string(&serde_json::json!({
                "threadId": thread.id(),
                "messageId": appended.message.id,
                "index": appended.index,
            }))?)
        } else {
            out.line(&appended.message.id)
        }
    };

    if let (Some(role), Some(text)) = (args.role, args.text) {
        let message = Message::new(role.into(), vec![ContentBlock::text(text)]);
        let appended = thread.append(message, options)?;
        report(&appended)?;
        return Ok(super::exit::SUCCESS);
    }

    let stdin = std::io::stdin().lock();
    let mut count = 0usize;
    for (n, value) in serde_json::Deserializer::from_reader(stdin)
        .into_iter::<Value>()
        .enumerate()
    {
        let position = n + 1;
        let value = value.map_err(|e| {
            UsageError(format!(
                "standard input, message #{position}: not valid JSON: {e}"
            ))
        })?;
        let message = message_from_json(value)
            .map_err(|e| UsageError(format!("standard input, message #{position}: {e}")))?;
        let appended = thread.append(message, options)?;
        report(&appended)?;
        count += 1;
    }
    if count == 0 {
        return Err(UsageError("standard input held no message object".into()).into());
    }
    Ok(super::exit::SUCCESS)
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
