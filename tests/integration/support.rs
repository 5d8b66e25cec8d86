//! Shared test helpers: hermetic temporary repositories and the built binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

pub const GROVE: &str = env!("CARGO_BIN_EXE_grove");

/// A temporary sandbox: a HOME, a GROVE_HOME and a git config of its own, so
/// nothing of the machine's setup leaks in or is touched.
pub struct Sandbox {
    pub tmp: TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("grove-test-")
            .tempdir()
            .expect("tempdir");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            tmp.path().join("gitconfig"),
            "[user]\n\tname = Grove Test\n\temail = test@grove.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .unwrap();
        Sandbox { tmp }
    }

    pub fn path(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap()
    }

    pub fn grove_home(&self) -> PathBuf {
        self.path().join("grove-home")
    }

    /// The cache entry of thread `id`, whichever repository it belongs to.
    pub fn cache_entry(&self, id: &str) -> PathBuf {
        let root = self.grove_home().join("cache");
        for repo in std::fs::read_dir(&root).unwrap() {
            let candidate = repo.unwrap().path().join(id);
            if candidate.is_dir() {
                return candidate;
            }
        }
        panic!("{id} not in {}", root.display());
    }

    /// Applies the hermetic environment to `cmd`.
    pub fn env(&self, cmd: &mut Command) {
        let root = self.path();
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_COMMON_DIR",
            "NO_COLOR",
            "GROVE_THREAD",
            "STUB_PROMPTS",
            "STUB_EXIT",
            "STUB_HOOK_COPIES",
            "XDG_CONFIG_HOME",
            "GROVE_CONFIG",
        ] {
            cmd.env_remove(var);
        }
        // The agents' own homes are the sandbox's too.
        cmd.env("CLAUDE_CONFIG_DIR", root.join("claude"))
            .env("CODEX_HOME", root.join("codex"))
            .env("STUB_LOG", root.join("stub.log"));
        cmd.env("HOME", root.join("home"))
            .env("GROVE_HOME", root.join("grove-home"))
            .env("GIT_CONFIG_GLOBAL", root.join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
            .env("LANG", "C")
            .env("LC_ALL", "C")
            .env("TERM", "dumb");
    }

    /// `grove` with the sandbox environment, started in `dir`.
    pub fn grove(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(GROVE);
        self.env(&mut cmd);
        cmd.current_dir(dir).stdin(Stdio::null());
        cmd
    }

    /// The stub agents (`claude`, `codex`; see tests/stubs) in the sandbox's
    /// `bin/`, which [`Sandbox::agent_path`] puts first on `PATH`.
    pub fn install_stubs(&self) -> PathBuf {
        let bin = self.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let stubs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stubs");
        for name in ["claude", "codex"] {
            let to = bin.join(name);
            std::fs::copy(stubs.join(name), &to).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        bin
    }

    /// `PATH` with the sandbox's `bin/` first.
    pub fn agent_path(&self) -> std::ffi::OsString {
        let mut paths = vec![self.path().join("bin")];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(paths).unwrap()
    }

    /// `grove` with the stub agents first on `PATH`.
    pub fn grove_with_agents(&self, dir: &Path) -> Command {
        let mut cmd = self.grove(dir);
        cmd.env("PATH", self.agent_path());
        cmd
    }

    /// A stub agent run by hand in `dir` (not by grove).
    pub fn agent(&self, name: &str, dir: &Path) -> Command {
        let mut cmd = Command::new(self.path().join("bin").join(name));
        self.env(&mut cmd);
        cmd.env("PATH", self.agent_path())
            .current_dir(dir)
            .stdin(Stdio::null());
        cmd
    }

    /// The stub agents' runs so far (tests/stubs: `STUB_LOG`).
    pub fn stub_runs(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.path().join("stub.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `git` with the sandbox environment, started in `dir`.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        self.env(&mut cmd);
        let out = cmd.args(args).current_dir(dir).output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    }

    /// A new repository `name` with one commit (README.md), on branch main.
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "-q"]);
        std::fs::write(dir.join("README.md"), "# test\n").unwrap();
        self.git(&dir, &["add", "."]);
        self.git(&dir, &["commit", "-q", "-m", "initial"]);
        dir
    }

    /// A plain directory `name` (no repository).
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

/// Runs `cmd`, returning its output (never panics on a failing status).
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("spawn grove")
}

/// Runs `cmd` and asserts it succeeded; returns stdout.
#[track_caller]
pub fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "command failed ({:?})\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `cmd` and asserts it exited with `code`; returns stderr.
#[track_caller]
pub fn fails_with(cmd: &mut Command, code: i32) -> String {
    let out = run(cmd);
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit {code}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// Runs `cmd` with `input` on stdin; returns the output.
pub fn run_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Parses stdout as JSON.
pub fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Copies a directory tree (fixtures are copied, never used in place).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Every file under `dir` with its bytes, for before/after comparisons.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            } else {
                out.push((e.path(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}

/// Creates a thread with `grove new --no-worktree` in `dir`; returns its id.
pub fn new_thread(sb: &Sandbox, dir: &Path, title: &str) -> String {
    let out = ok(sb
        .grove(dir)
        .args(["new", "--no-worktree", title, "--json"]));
    json(&out)["threadId"].as_str().unwrap().to_string()
}

/// The lines of a thread's messages.jsonl parsed as JSON.
pub fn message_lines(thread_dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(thread_dir.join("messages.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Writes `.agent/config.json` in `repo` from a JSON value.
pub fn write_config(repo: &Path, config: serde_json::Value) {
    std::fs::create_dir_all(repo.join(".agent")).unwrap();
    std::fs::write(
        repo.join(".agent/config.json"),
        serde_json::to_vec_pretty(&config).unwrap(),
    )
    .unwrap();
}

/// `grove new ARGS --json` in `repo`; returns the JSON answer.
#[track_caller]
pub fn new_task(sb: &Sandbox, repo: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    all.push("--json");
    json(&ok(sb.grove(repo).args(&all)))
}

/// `git worktree list --porcelain` paths.
pub fn worktree_paths(sb: &Sandbox, repo: &Path) -> Vec<PathBuf> {
    sb.git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .collect()
}

/// Branch names of `repo`.
pub fn branches(sb: &Sandbox, repo: &Path) -> Vec<String> {
    sb.git(repo, &["branch", "--format=%(refname:short)"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// `grove list --json` rows.
pub fn list_rows(sb: &Sandbox, dir: &Path) -> Vec<serde_json::Value> {
    json(&ok(sb.grove(dir).args(["list", "--json"])))
        .as_array()
        .unwrap()
        .clone()
}

/// The row of `id` in `grove list --json --all` (`--all`: a removed
/// task's row too).
pub fn row_of(sb: &Sandbox, dir: &Path, id: &str) -> serde_json::Value {
    json(&ok(sb.grove(dir).args(["list", "--json", "--all"])))
        .as_array()
        .unwrap()
        .clone()
        .into_iter()
        .find(|r| r["threadId"] == id)
        .unwrap_or_else(|| panic!("{id} not listed"))
}

/// `grove append ID --stdin` with `input`; asserts success.
#[track_caller]
pub fn append_stdin(sb: &Sandbox, dir: &Path, id: &str, input: &str) {
    let out = run_with_stdin(
        sb.grove(dir).args(["append", id, "--stdin"]),
        input.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A tool a test needs and cannot run without: missing, the test fails
/// saying how to install it — unless `skip_var` is set to 1
/// (`GROVE_SKIP_BROWSER=1`, `GROVE_SKIP_LFS=1`, `GROVE_SKIP_SHELLS=1`,
/// `GROVE_SKIP_REAL_AGENTS=1`). Under `cargo test` such a test is then not
/// run at all: build.rs sets `cfg(skip_browser)` and the like, and the test's
/// `#[cfg_attr(skip_…, ignore = "…")]` lists it as ignored, with the reason.
/// Here, the variable set when the binary is run by hand skips the test with
/// a notice. Returns whether the test goes on.
pub fn needs(tool: &str, present: bool, skip_var: &str, install: &str) -> bool {
    if present {
        return true;
    }
    assert!(
        std::env::var(skip_var).is_ok_and(|v| v == "1"),
        "{tool} is needed by this test and is not installed: {install} \
         (or set {skip_var}=1 to skip the tests that need it)"
    );
    eprintln!("SKIPPED ({skip_var}=1): {tool} is not installed");
    false
}

/// The real agents' npm packages and the versions the tests are verified
/// with, as pinned in `tests/real-agents/package.json` (the one place).
pub fn real_agent_pins() -> Vec<(String, String)> {
    let pins: serde_json::Value =
        serde_json::from_str(include_str!("../real-agents/package.json")).unwrap();
    pins["dependencies"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

/// Where `.ci/real-agents` installs the real agents:
/// `$GROVE_REAL_AGENTS`, else `${XDG_CACHE_HOME:-$HOME/.cache}/grove/real-agents`.
pub fn real_agents_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GROVE_REAL_AGENTS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    cache.join("grove/real-agents")
}

/// What is wrong with the installed real agents, if anything: missing, or
/// not the pinned version.
fn real_agents_problem() -> Option<String> {
    let dir = real_agents_dir();
    for (package, version) in real_agent_pins() {
        let manifest = dir.join("node_modules").join(&package).join("package.json");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            return Some(format!("{package} is not in {}", dir.display()));
        };
        let found: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if found["version"] != version.as_str() {
            return Some(format!(
                "{package} in {} is {}, the tests are pinned to {version}",
                dir.display(),
                found["version"]
            ));
        }
    }
    for bin in ["claude", "codex"] {
        if !dir.join("node_modules/.bin").join(bin).exists() {
            return Some(format!(
                "{bin} is not in {}/node_modules/.bin",
                dir.display()
            ));
        }
    }
    None
}

/// The real program `name` (`gemini`, `opencode`) of tests/real-agents,
/// installed by `.ci/real-agents` at its pinned version; `None` (the test
/// skips) only when it is missing and `GROVE_SKIP_REAL_AGENTS=1`, else a
/// missing one fails the test saying how to install it.
pub fn real_program(name: &str) -> Option<PathBuf> {
    let dir = real_agents_dir();
    let path = match name {
        // The Linux x64 build the opencode-ai launcher would run.
        "opencode" => dir.join("node_modules/opencode-linux-x64/bin/opencode"),
        other => dir.join("node_modules/.bin").join(other),
    };
    let problem = real_agents_problem()
        .or_else(|| (!path.exists()).then(|| format!("{} is missing", path.display())));
    needs(
        &format!("the real {name} ({})", problem.as_deref().unwrap_or("")),
        problem.is_none(),
        "GROVE_SKIP_REAL_AGENTS",
        "run `bash .ci/real-agents` (npm installs the versions pinned in tests/real-agents)",
    )
    .then_some(path)
}

/// A scripted model server of the fixtures (`fixtures/<agent>/…/scripted.py`,
/// python3) on 127.0.0.1, on a port of its choosing; stopped when dropped.
pub struct ScriptedServer {
    child: std::process::Child,
    pub port: u16,
}

impl ScriptedServer {
    pub fn start(script: &Path, cwd_for_paths: &Path) -> ScriptedServer {
        Self::start_with(script, cwd_for_paths, None)
    }

    /// With `gate`: each model turn's request is written to
    /// `<gate>/<n>.json` and answered once `<gate>/<n>.go` exists.
    pub fn start_with(script: &Path, cwd_for_paths: &Path, gate: Option<&Path>) -> ScriptedServer {
        let mut cmd = Command::new("python3");
        if let Some(gate) = gate {
            cmd.env("GATE_DIR", gate);
        }
        let mut child = cmd
            .arg(script)
            .arg("0")
            .env("FIXTURE_CWD", cwd_for_paths)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the scripted server");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line
            .trim()
            .strip_prefix("port=")
            .and_then(|p| p.parse().ok())
            .expect("the server says its port");
        ScriptedServer { child, port }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sandbox {
    /// The real `claude` and `codex` (tests/real-agents, installed by
    /// `.ci/real-agents`) in the sandbox's `bin/`, which
    /// [`Sandbox::agent_path`] puts first on `PATH`. Missing or not at the
    /// pinned version, the test fails saying how to install them, unless
    /// `GROVE_SKIP_REAL_AGENTS=1` (then this returns false: skip).
    pub fn install_real_agents(&self) -> bool {
        let problem = real_agents_problem();
        if !needs(
            &format!(
                "the real Claude Code and Codex ({})",
                problem.as_deref().unwrap_or("")
            ),
            problem.is_none(),
            "GROVE_SKIP_REAL_AGENTS",
            "run `bash .ci/real-agents` (npm installs the versions pinned in tests/real-agents)",
        ) {
            return false;
        }
        let bin = self.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["claude", "codex"] {
            let real = real_agents_dir().join("node_modules/.bin").join(name);
            #[cfg(unix)]
            std::os::unix::fs::symlink(&real, bin.join(name)).unwrap();
        }
        true
    }
}

/// A captured `UserPromptSubmit`: the task's agent is `working`.
pub fn give_agent_state(sb: &Sandbox, wt: &Path, id: &str) {
    let transcript = sb.path().join("s1.jsonl");
    std::fs::copy(
        fixtures().join("claude/v2.1/cb88ae13-898d-4076-aeb5-bc37191c5d2e.jsonl"),
        &transcript,
    )
    .unwrap();
    let input = serde_json::json!({
        "session_id": "cb88ae13-898d-4076-aeb5-bc37191c5d2e",
        "transcript_path": transcript,
        "cwd": wt,
        "hook_event_name": "UserPromptSubmit",
    });
    let out = run_with_stdin(
        sb.grove(wt).args(["capture", "claude", "--thread", id]),
        input.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|p| p.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// Whether a headless browser is here (else the test fails saying how to
/// get one, or skips under GROVE_SKIP_BROWSER=1).
pub fn has_browser() -> bool {
    needs(
        "chromium",
        chromium().is_some(),
        "GROVE_SKIP_BROWSER",
        "`apt-get install chromium`",
    )
}

/// The DOM a headless Chromium builds of the page at `page` (checked with
/// [`has_browser`] first).
pub fn browser_dom(sb: &Sandbox, page: &Path) -> String {
    let browser = chromium().expect("chromium");
    let profile = sb.dir("chromium-profile");
    let rendered = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .env("HOME", sb.path().join("home"))
        .output()
        .expect("run chromium");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    String::from_utf8_lossy(&rendered.stdout).into_owned()
}

/// Runs the stub Claude Code in `wt`: session `session`, resumed when
/// `resume`, one turn per prompt.
pub fn claude_turns<S: AsRef<str> + serde::Serialize>(
    sb: &Sandbox,
    wt: &Path,
    session: &str,
    resume: bool,
    prompts: &[S],
) {
    let (first, rest) = prompts.split_first().unwrap();
    let mut cmd = sb.agent("claude", wt);
    cmd.args([if resume { "--resume" } else { "--session-id" }, session])
        .arg(first.as_ref())
        .env("STUB_PROMPTS", serde_json::to_string(rest).unwrap());
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
