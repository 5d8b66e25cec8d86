//! `grove env`

use std::path::Path;

use grove::project::Project;
use grove::shellquote;
use grove::worktree::taskenv::{Placeholders, refused_for_shell};

use super::Output;

/// Print a task's environment as `export` lines for a shell: GROVE_THREAD_ID,
/// GROVE_WORKTREE, GROVE_BRANCH, its ports (GROVE_PORT, GROVE_PORT_1…) and
/// the values of worktreeHooks.env with them filled in.
///
/// `eval "$(grove env 1a2b)"` sets them in the current shell (fish:
/// `grove env 1a2b --shell fish | source`). A key of worktreeHooks.env that
/// is not a variable name, or that would change what the shell runs (PATH,
/// PROMPT_COMMAND, LD_PRELOAD…), is an error naming it.
#[derive(clap::Args)]
pub struct Args {
    /// The task or thread: its id or a unique prefix, its branch, its
    /// worktree's path, or a word of its title. Default: the task whose
    /// worktree holds the current directory.
    #[arg(add = super::complete::threads())]
    thread: Option<String>,

    /// The shell the lines are for: values are quoted for it.
    #[arg(long, value_enum, default_value_t = Shell::Sh)]
    shell: Shell,

    /// Print them as one JSON object instead.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let project = Project::discover(cwd)?;
    let found = super::resolve(out, &project, args.thread())?;
    let ports = grove::ports::of(&found.meta);
    let worktree = found
        .worktree
        .as_ref()
        .map(|w| w.to_string_lossy().into_owned())
        .unwrap_or_default();
    let branch = found.branch.clone().unwrap_or_default();
    let mut vars = vec![
        ("GROVE_THREAD_ID".to_string(), found.meta.thread_id.clone()),
        ("GROVE_WORKTREE".to_string(), worktree.clone()),
        ("GROVE_BRANCH".to_string(), branch.clone()),
    ];
    vars.extend(grove::ports::env(&ports));
    let config = grove::store::Store::for_project(&found.repo_root).config()?;
    if let Some(env) = config.and_then(|c| c.worktree_hooks?.env) {
        let values = Placeholders {
            ports,
            branch,
            thread_id: found.meta.thread_id.clone(),
            worktree,
        };
        if let Some(why) = env.keys().find_map(|k| refused_for_shell(k)) {
            anyhow::bail!(
                "worktreeHooks.env in {}: {why}; rename or remove the key",
                grove::store::Store::for_project(&found.repo_root)
                    .config_path()
                    .display()
            );
        }
        vars.extend(values.values(&env));
    }
    if args.json {
        let map: serde_json::Map<String, serde_json::Value> = vars
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::from(v)))
            .collect();
        out.json(&serde_json::Value::Object(map))?;
    } else {
        for (k, v) in vars {
            out.line(&args.shell.set(&k, &v))?;
        }
    }
    Ok(super::exit::SUCCESS)
}

/// The shells `grove env` writes for.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Shell {
    /// POSIX sh, also read by bash and zsh.
    Sh,
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    /// The line exporting `name` with `value`, which the shell reads back
    /// exactly (`name` is a checked variable name).
    fn set(self, name: &str, value: &str) -> String {
        match self {
            Shell::Sh | Shell::Bash | Shell::Zsh => {
                format!("export {name}={}", shellquote::posix(value))
            }
            Shell::Fish => format!("set -gx {name} {}", shellquote::fish(value)),
        }
    }
}

impl Args {
    /// THREAD, or the task the current directory is in.
    fn thread(&self) -> &str {
        self.thread.as_deref().unwrap_or(".")
    }
}
