//! `grove shell-init`

use std::path::Path;

use super::Output;

/// Print a shell function that wraps grove so `grove new`, `grove switch`
/// and `grove path` leave the shell inside the worktree. Add to your rc file:
///
///   bash: eval "$(grove shell-init bash)"
///   zsh:  eval "$(grove shell-init zsh)"
///   fish: grove shell-init fish | source
///
/// grove itself keeps its terminal (an agent started by `new --launch`
/// keeps it too): the path comes back through a file named in
/// GROVE_CD_FILE, not through stdout.
#[derive(clap::Args)]
pub struct Args {
    /// bash, zsh or fish.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

/// The variable naming the file the shell function reads the directory from.
pub const CD_FILE: &str = "GROVE_CD_FILE";

const POSIX: &str = r#"grove() {
    local __grove_cd __grove_rc
    __grove_cd="$(mktemp "${TMPDIR:-/tmp}/grove-cd.XXXXXX")" || { command grove "$@"; return; }
    GROVE_CD_FILE="$__grove_cd" command grove "$@"
    __grove_rc=$?
    if [ -s "$__grove_cd" ]; then
        cd -- "$(cat -- "$__grove_cd")" || __grove_rc=$?
    fi
    rm -f -- "$__grove_cd"
    return $__grove_rc
}
"#;

const FISH: &str = r#"function grove --wraps grove --description 'grove, landing in the worktree'
    set -l __grove_cd (mktemp (set -q TMPDIR; and echo $TMPDIR; or echo /tmp)/grove-cd.XXXXXX)
    or begin; command grove $argv; return $status; end
    GROVE_CD_FILE=$__grove_cd command grove $argv
    set -l __grove_rc $status
    if test -s $__grove_cd
        cd (cat $__grove_cd); or set __grove_rc $status
    end
    rm -f $__grove_cd
    return $__grove_rc
end
"#;

pub fn run(args: Args, _cwd: &Path, out: &Output) -> anyhow::Result<u8> {
    let code = if args.shell == "fish" { FISH } else { POSIX };
    out.raw(code.as_bytes())?;
    Ok(super::exit::SUCCESS)
}

/// Tells the shell function of `grove shell-init` to go to `dir` (when grove
/// runs under it). Best effort: a file that cannot be written leaves the
/// shell where it is.
pub fn cd_to(dir: &Path) {
    let Some(file) = std::env::var_os(CD_FILE).filter(|f| !f.is_empty()) else {
        return;
    };
    let file = Path::new(&file);
    // Only the file the function made: an existing, regular, empty file.
    let fits = std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file() && m.len() == 0);
    if fits && dir.is_dir() {
        let _ = std::fs::write(file, dir.as_os_str().as_encoded_bytes());
    }
}

/// A worktree about to be removed, and whether the shell is in it: then,
/// once it is gone, [`Leaving::done`] sends the shell to the main checkout
/// (as `new` and `switch` send it into a worktree) instead of leaving it in
/// a directory that no longer exists.
pub struct Leaving {
    inside: bool,
}

impl Leaving {
    /// Before removing `worktree`, with grove run from `cwd`.
    pub fn worktree(cwd: &Path, worktree: Option<&Path>) -> Leaving {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let here = canonical(cwd);
        let inside =
            worktree.is_some_and(|wt| here.starts_with(canonical(wt)) || cwd.starts_with(wt));
        Leaving { inside }
    }

    /// The worktree is gone: the shell goes to `main_root` if it was in it.
    pub fn done(&self, main_root: &Path) {
        if self.inside {
            cd_to(main_root);
        }
    }
}
