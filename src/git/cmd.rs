//! Every run of the `git` binary goes through here.
//!
//! Mutations (worktree add/remove, branch create/delete) use the real git so
//! the user's config, hooks, LFS and sparse checkout behave as for
//! `git worktree add`. Variables a calling git may have exported
//! (`GIT_DIR`, `GIT_WORK_TREE`, …) are removed so grove never acts on the
//! wrong repository when it runs inside a git hook.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// `-v`: each git command is printed on stderr before it runs.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns the printing of git commands (`grove -v`) on or off.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn trace(dir: &Path, args: &[&str]) {
    if VERBOSE.load(std::sync::atomic::Ordering::Relaxed) {
        let words: Vec<String> = args.iter().map(|a| quote(a)).collect();
        eprintln!("grove: run git {} (in {})", words.join(" "), dir.display());
    }
}

/// A word as a shell would need it to read it back, control characters
/// escaped for the terminal.
fn quote(word: &str) -> String {
    crate::shellquote::posix(word).escape_debug().to_string()
}

const SCRUBBED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
];

/// The git binary found on `PATH`.
#[derive(Debug, Clone)]
pub struct Git {
    program: PathBuf,
}

/// A finished git command.
#[derive(Debug)]
pub struct GitOutput {
    pub success: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Git {
    /// Finds `git` on `PATH` (looked up again only when `PATH` changed).
    pub fn find() -> Result<Self> {
        type Found = Option<(Option<std::ffi::OsString>, PathBuf)>;
        static FOUND: std::sync::Mutex<Found> = std::sync::Mutex::new(None);
        let path = std::env::var_os("PATH");
        let mut found = FOUND
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((on, program)) = &*found
            && *on == path
        {
            return Ok(Git {
                program: program.clone(),
            });
        }
        let program = which::which("git")
            .map_err(|_| Error::Git("the git binary was not found on PATH; install git".into()))?;
        *found = Some((path, program.clone()));
        Ok(Git { program })
    }

    /// Runs `git -C dir args…` and returns its output whatever the exit code.
    pub fn output(&self, dir: &Path, args: &[&str]) -> Result<GitOutput> {
        self.output_with_env(dir, args, &[])
    }

    /// [`Git::output`] with `env` set for git (`GIT_LFS_SKIP_SMUDGE=1`).
    pub fn output_with_env(
        &self,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<GitOutput> {
        // std's `output` reads both pipes from this thread (duct starts a
        // thread for each): most of grove's git commands are short, and
        // two threads each were a tenth of what one cost.
        let mut cmd = self.command(dir, args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| could_not_run(args, e))?;
        Ok(GitOutput::from(out))
    }

    /// Runs git with `input` on stdin and returns stdout as bytes (patches
    /// are not UTF-8), failing with git's message on a non-zero exit.
    /// `read_only` sets `GIT_OPTIONAL_LOCKS=0`, so git does not take the
    /// index lock or refresh the index of a worktree it only reads.
    pub fn bytes(
        &self,
        dir: &Path,
        args: &[&str],
        input: Option<&[u8]>,
        read_only: bool,
    ) -> Result<Vec<u8>> {
        let mut running = self.start_piped(dir, args, input.is_some(), read_only)?;
        // The input is written from a thread of its own while this one
        // reads the output: git may fill its output pipe before it has read
        // all of its input.
        let writer = match (input, running.child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || {
                    use std::io::Write;
                    // git exiting before reading all of it is its answer.
                    let _ = stdin.write_all(&bytes);
                }))
            }
            _ => None,
        };
        let out = running.bytes();
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        out
    }

    /// Runs git with its standard output going to `out` (a file: what git
    /// prints is never held in memory) and, when given, its standard input
    /// read from `input`; fails with git's message on a non-zero exit.
    pub fn with_files(
        &self,
        dir: &Path,
        args: &[&str],
        input: Option<std::fs::File>,
        out: std::fs::File,
    ) -> Result<()> {
        use std::process::Stdio;
        let mut cmd = self.command(dir, args);
        cmd.stdin(input.map_or_else(Stdio::null, Stdio::from))
            .stdout(Stdio::from(out))
            .stderr(Stdio::piped());
        let done = cmd.output().map_err(|e| could_not_run(args, e))?;
        if !done.status.success() {
            return Err(Error::Git(format!(
                "`git {}` failed in {}: {}",
                args.join(" "),
                dir.display(),
                String::from_utf8_lossy(&done.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Starts `git -C dir args…` and returns at once, for the caller to do
    /// other work while git runs and collect its answer with
    /// [`Running::output`] or [`Running::bytes`] — without a thread to wait
    /// on it. (git's output is read then: what it prints beyond what a pipe
    /// holds waits for that.) `read_only` as for [`Git::bytes`].
    pub fn start(&self, dir: &Path, args: &[&str], read_only: bool) -> Result<Running> {
        self.start_piped(dir, args, false, read_only)
    }

    fn start_piped(
        &self,
        dir: &Path,
        args: &[&str],
        stdin: bool,
        read_only: bool,
    ) -> Result<Running> {
        use std::process::Stdio;
        let mut cmd = self.command(dir, args);
        cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if read_only {
            cmd.env("GIT_OPTIONAL_LOCKS", "0");
        }
        let child = cmd.spawn().map_err(|e| could_not_run(args, e))?;
        Ok(Running {
            child,
            args: args.iter().map(|a| a.to_string()).collect(),
            dir: dir.to_path_buf(),
        })
    }

    /// git with `args` in `dir`, the variables that would point it
    /// elsewhere removed (see [`SCRUBBED`]); traced with `-v`.
    // The one place a git command is made.
    #[allow(clippy::disallowed_methods)]
    fn command(&self, dir: &Path, args: &[&str]) -> std::process::Command {
        trace(dir, args);
        let mut cmd = std::process::Command::new(&self.program);
        cmd.args(args).current_dir(dir);
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs git and fails with git's own message when it exits non-zero.
    /// Returns stdout with the trailing newline removed.
    pub fn run(&self, dir: &Path, args: &[&str]) -> Result<String> {
        self.run_with_env(dir, args, &[])
    }

    /// [`Git::run`] with `env` set for git (`GIT_INDEX_FILE` naming an
    /// index of grove's own, not the user's).
    pub fn run_with_env(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
        let out = self.output_with_env(dir, args, env)?;
        if !out.success {
            return Err(Error::Git(format!(
                "`git {}` failed: {}",
                args.join(" "),
                if out.stderr.is_empty() {
                    "no message"
                } else {
                    &out.stderr
                }
            )));
        }
        Ok(out.stdout.trim_end_matches(['\n', '\r']).to_string())
    }

    /// Whether git exits 0 (for predicates like `merge-base --is-ancestor`).
    pub fn check(&self, dir: &Path, args: &[&str]) -> Result<bool> {
        Ok(self.output(dir, args)?.success)
    }
}

/// A git command started by [`Git::start`].
#[derive(Debug)]
pub struct Running {
    child: std::process::Child,
    args: Vec<String>,
    dir: PathBuf,
}

impl Running {
    /// Waits for git and returns its output whatever the exit code.
    pub fn output(self) -> Result<GitOutput> {
        Ok(GitOutput::from(self.wait()?.0))
    }

    /// Waits for git and returns stdout as bytes, failing with git's
    /// message on a non-zero exit.
    pub fn bytes(self) -> Result<Vec<u8>> {
        let (out, args, dir) = self.wait()?;
        if !out.status.success() {
            return Err(Error::Git(format!(
                "`git {}` failed in {}: {}",
                args.join(" "),
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    }

    fn wait(self) -> Result<(std::process::Output, Vec<String>, PathBuf)> {
        let out = self.child.wait_with_output().map_err(|e| {
            let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
            could_not_run(&args, e)
        })?;
        Ok((out, self.args, self.dir))
    }
}

impl From<std::process::Output> for GitOutput {
    fn from(out: std::process::Output) -> Self {
        GitOutput {
            success: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
    }
}

fn could_not_run(args: &[&str], e: std::io::Error) -> Error {
    Error::Git(format!("could not run git {}: {e}", args.join(" ")))
}
