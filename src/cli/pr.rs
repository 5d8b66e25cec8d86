//! `grove pr`

use std::path::Path;

use grove::discovery;
use grove::graph::Graph;
use grove::project::Project;

use super::{Output, SecretFlags};

/// Write a pull request's description from a task's thread: what was asked,
/// what each turn did, forks and handoffs (decisions and approaches left
/// behind), the test runs the agent made, and the branch's changes. Printed
/// as Markdown; a description holding a secret is refused, as `grove push`
/// refuses one, unless --redact or --allow-secrets.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    #[command(flatten)]
    secrets: SecretFlags,

    /// Print {threadId, title, agent, branch, asked, turns, decisions,
    /// tests, changes, markdown} as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let thread = discovery::find_thread(&project, args.thread.as_deref().unwrap_or("."))?;
    let meta = thread.meta()?;
    // Titles and archival of related threads need a look at every thread;
    // a thread without relationships does not pay for it.
    let graph = if meta.relationships().is_empty() {
        None
    } else {
        let found = discovery::discover(
            &project,
            discovery::Options {
                all_repos: true,
                statuses: false,
                details: false,
            },
        )?;
        super::warn_skipped(out, &found.errors);
        Some(Graph::build(&found.threads))
    };
    let repo = project.repo();
    let description = grove::pr::describe(&thread, graph.as_ref(), repo.as_ref())?;
    let markdown = description.markdown();
    let (redacted, _) = grove::secrets::redact_text(&markdown);
    // The JSON holds every prompt whole, the Markdown the later ones' first
    // lines: all of it is looked at.
    let (_, secrets) = grove::secrets::redact_text(&description.all_text());
    let markdown = match args.secrets.policy() {
        grove::secrets::Policy::Allow => markdown,
        grove::secrets::Policy::Redact => redacted,
        grove::secrets::Policy::Refuse if secrets > 0 => {
            out.error(&format!(
                "the description of thread {} holds {secrets} secret(s) (see `grove scan {}`); \
                 pass --redact to replace them, or --allow-secrets to print them",
                meta.thread_id, meta.thread_id
            ));
            return Ok(super::exit::ERROR);
        }
        grove::secrets::Policy::Refuse => markdown,
    };
    if args.json {
        let mut value = serde_json::to_value(&description)?;
        if args.secrets.policy() == grove::secrets::Policy::Redact {
            redact_strings(&mut value);
        }
        value["markdown"] = serde_json::Value::String(markdown);
        out.json(&value)?;
    } else {
        out.line(markdown.trim_end())?;
    }
    Ok(super::exit::SUCCESS)
}

/// Every string in `value` with its secrets replaced.
fn redact_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => *s = grove::secrets::redact_text(s).0,
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(redact_strings),
        _ => {}
    }
}
