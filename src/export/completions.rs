//! Tool calls whose results came later: an import that saw a call before
//! its result records the result as a completion message (see
//! [`crate::atsf::COMPLETES_KEY`]), the call's line never rewritten. What
//! people read — `show`, the Markdown and HTML exports — shows each call
//! once, in the message that made it, with its final status and output.
//!
//! The log is streamed twice: a first pass keeps only the completions'
//! calls, the second folds them into the messages they complete.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};

use crate::atsf::{self, COMPLETES_KEY, Message, ToolCall};
use crate::error::{Error, IoContext, Result};
use crate::store::Thread;

/// The completions of a thread, by the id of the message they complete.
#[derive(Debug, Default)]
pub struct Completions {
    done: HashMap<String, Vec<ToolCall>>,
    /// The messages whose calls were folded: their completions are not
    /// shown on their own.
    folded: HashSet<String>,
}

impl Completions {
    /// The completion messages of `thread` (malformed lines are left to the
    /// pass that shows the messages, which reports them). Only the lines
    /// naming the field are parsed: this pass costs a read, not a parse.
    pub fn of(thread: &Thread) -> Result<Completions> {
        thread.guard()?;
        let mut completions = Completions::default();
        let path = thread.messages_path();
        let Some(file) = crate::fsutil::open_read_opt(&path)? else {
            return Ok(completions);
        };
        let needle = format!("\"{COMPLETES_KEY}\"");
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let reader = BufReader::with_capacity(256 * 1024, file);
        for (number, line) in reader.split(b'\n').enumerate() {
            let line = line.ctx("reading", &path)?;
            if finder.find(&line).is_none() {
                continue;
            }
            match atsf::parse_message_line(&path, number as u64 + 1, &line) {
                Ok(m) => completions.add(m),
                Err(Error::Parse { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(completions)
    }

    fn add(&mut self, m: Message) {
        if let Some(of) = m.completes() {
            self.done
                .entry(of.to_string())
                .or_default()
                .extend(m.tool_calls.into_iter().flatten());
        }
    }

    /// `m` as people read it: its calls in their final state. `None` for a
    /// completion already folded into the message it completes (one naming
    /// a message not met before is shown as it is: its result is not lost).
    pub fn shown(&mut self, mut m: Message) -> Option<Message> {
        if let Some(of) = m.completes() {
            return (!self.folded.contains(of)).then_some(m);
        }
        if let Some(later) = self.done.get(&m.id) {
            fold_calls(m.tool_calls.iter_mut().flatten(), later);
            self.folded.insert(m.id.clone());
        }
        Some(m)
    }
}

/// Brings each of `calls` to the state of its last completion in `later`:
/// status, output (kept when the completion has none), fields, duration.
pub(crate) fn fold_calls<'a>(calls: impl Iterator<Item = &'a mut ToolCall>, later: &[ToolCall]) {
    for c in calls {
        let Some(last) = later
            .iter()
            .rev()
            .find(|l| l.tool_call_id == c.tool_call_id)
        else {
            continue;
        };
        c.status = last.status.clone();
        c.output = last.output.clone().or(c.output.take());
        for (k, v) in &last.extra {
            c.extra.insert(k.clone(), v.clone());
        }
        if last.duration.is_some() {
            c.duration = last.duration.clone();
        }
    }
}
