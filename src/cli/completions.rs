//! `grove completions`

use std::path::Path;

use clap_complete::env::Shells;

use super::Output;

/// Print the shell code that completes grove's subcommands, flags and
/// thread ids (with titles) — load it from your shell's startup file:
///
///   bash: echo 'source <(grove completions bash)' >> ~/.bashrc
///   zsh:  echo 'source <(grove completions zsh)' >> ~/.zshrc
///   fish: grove completions fish > ~/.config/fish/completions/grove.fish
///
/// The code asks grove itself at each completion, so it never goes stale.
#[derive(clap::Args)]
pub struct Args {
    /// bash, zsh, fish, powershell or elvish.
    #[arg(value_parser = ["bash", "zsh", "fish", "powershell", "elvish"])]
    shell: String,
}

/// The environment variable grove's completion requests come through.
pub const VAR: &str = "COMPLETE";

pub fn run(args: Args, _cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let shells = Shells::builtins();
    let shell = shells
        .completer(&args.shell)
        .ok_or_else(|| super::UsageError(format!("no completions for {}", args.shell)))?;
    // Completes the command `grove`, answered by this very binary.
    let completer = std::env::current_exe()
        .ok()
        .filter(|p| p.is_absolute())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| "grove".into());
    let mut buf = Vec::new();
    shell.write_registration(VAR, "grove", "grove", &completer, &mut buf)?;
    out.raw(&buf)?;
    Ok(super::exit::SUCCESS)
}
