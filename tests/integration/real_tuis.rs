//! The real Claude Code and Codex as people use them: their interactive
//! programs (TUIs), in tmux, answering the questions they ask on the way,
//! started by grove (`grove new --launch`, `grove launch`, `grove resume`)
//! or by hand after `grove capture install`, offline against the scripted
//! model server. The tests check outcomes: what the model received, what is
//! in the thread and when (each record within a second of the agent writing
//! it, while the program stays open), what `grove list`, `grove show
//! --follow` and `grove resume` do, and that a session ends in grove when it
//! ends in the agent (Codex's TUI leaves its sessions to an app-server
//! daemon that outlives it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model_server::{Api, ModelServer};
use crate::real_agents::*;
use crate::support::*;

/// How long a screen, a thread or a state is waited for before a test fails.
const BOUND: Duration = Duration::from_secs(30);
/// How often it is looked at meanwhile.
const POLL: Duration = Duration::from_millis(50);
/// How long a question stands on the screen before it is answered.
const SETTLED: Duration = Duration::from_millis(300);

/// A program's terminal screen, in a tmux of its own (a socket of the
/// sandbox's, no configuration), stopped when dropped. The program runs
/// under `sh`, which keeps its exit code and the screen after it.
pub(crate) struct Tui {
    socket: PathBuf,
    exit: PathBuf,
}

impl Tui {
    /// Runs `cmd` (its program, arguments, directory and environment) on a
    /// 160x50 terminal.
    pub(crate) fn start(sb: &Sandbox, cmd: &Command) -> Tui {
        // A server of its own each: one just killed may still hold its socket.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::SeqCst);
        let script = sb.path().join(format!("tui-{n}.sh"));
        let exit = sb.path().join(format!("tui-{n}.exit"));
        let quote =
            |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
        let mut text = String::from("#!/bin/sh\n");
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => text.push_str(&format!("export {}={}\n", k.to_string_lossy(), quote(v))),
                None => text.push_str(&format!("unset {}\n", k.to_string_lossy())),
            }
        }
        text.push_str("export TERM=xterm-256color\n");
        text.push_str(&format!(
            "cd {}\n{}",
            quote(cmd.get_current_dir().unwrap().as_os_str()),
            quote(cmd.get_program())
        ));
        for a in cmd.get_args() {
            text.push_str(&format!(" {}", quote(a)));
        }
        text.push_str(&format!(
            "\necho $? > {}\nexec sleep 600\n",
            quote(exit.as_os_str())
        ));
        std::fs::write(&script, text).unwrap();
        let socket = sb.path().join(format!("tmux-{n}.sock"));
        let out = Command::new("tmux")
            .args(["-f", "/dev/null", "-S"])
            .arg(&socket)
            .args(["new-session", "-d", "-x", "160", "-y", "50", "sh"])
            .arg(&script)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tui { socket, exit }
    }

    pub(crate) fn screen(&self) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys"])
            .args(keys)
            .status()
            .unwrap();
    }

    /// Types `text` and presses Enter, as a person would (the Enter apart,
    /// so the program does not take it for part of a paste).
    pub(crate) fn type_line(&self, text: &str) {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["send-keys", "-l", text])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        self.keys(&["Enter"]);
    }

    /// The program's exit code, once it exited.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        std::fs::read_to_string(&self.exit)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The screen once `done` holds, answering what `answer` knows on the
    /// way as a person would: once a question has stood still on the
    /// screen for [`SETTLED`] (a key sent while a program draws its next
    /// question may land in that one), and once per question (keys are
    /// sent again only when the screen changed, or after a second). Fails
    /// after [`BOUND`].
    pub(crate) fn until(
        &self,
        done: impl Fn(&str) -> bool,
        answer: impl Fn(&str) -> Option<Vec<&'static str>>,
    ) -> String {
        let started = Instant::now();
        let mut last = String::new();
        let mut since = Instant::now();
        let mut answered: Option<(String, Instant)> = None;
        while started.elapsed() < BOUND {
            let screen = self.screen();
            if screen != last {
                last = screen;
                since = Instant::now();
            }
            if done(&last) {
                return last;
            }
            if since.elapsed() >= SETTLED
                && let Some(keys) = answer(&last)
            {
                let again = answered
                    .as_ref()
                    .is_none_or(|(s, at)| *s != last || at.elapsed() > Duration::from_secs(1));
                if again {
                    self.keys(&keys);
                    answered = Some((last.clone(), Instant::now()));
                }
            }
            std::thread::sleep(POLL);
        }
        panic!("the screen never got there:\n{last}");
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// Whether `program` is on `PATH`.
pub(crate) fn which(program: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(program).is_file())
}

/// Whether the real agents and tmux are there (see [`needs`]).
fn tui_ready(sb: &Sandbox) -> bool {
    sb.install_real_agents()
        && needs(
            "tmux",
            which("tmux"),
            "GROVE_SKIP_REAL_AGENTS",
            "apt-get install tmux",
        )
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_tui_takes_the_sessions_grove_writes_back_with_every_turn_complete() {
    let sb = Sandbox::new();
    if !sb.install_real_agents()
        || !needs(
            "tmux",
            which("tmux"),
            "GROVE_SKIP_REAL_AGENTS",
            "apt-get install tmux",
        )
    {
        return;
    }
    let openai = ModelServer::start(Api::OpenAi, scenario());
    let anthropic = ModelServer::start(Api::Anthropic, scenario());
    headless_agents(&sb);
    let repo = sb.repo("app");
    let prompt = &scenario()[0].prompt;
    // The project trusted, so Codex asks nothing about the folder.
    let trusted = format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.display()
    );
    let threads = [
        launch(&sb, &repo, "codex", prompt, |cmd| {
            codex_setup(&sb, &openai, cmd, &trusted)
        }),
        launch(&sb, &repo, "claude-code", prompt, |cmd| {
            claude_setup(&sb, &anthropic, cmd)
        }),
    ];
    // Codex's TUI runs sessions in an app-server daemon that outlives it:
    // stopped when the test ends, however it ends.
    let _daemon = CodexDaemon { sb: &sb };
    for (wt, id) in threads {
        let mut cmd = sb.grove_with_agents(&wt);
        cmd.args(["export", &id, "--format", "codex", "--json"]);
        codex_setup(&sb, &openai, &mut cmd, &trusted);
        let session = json(&ok(&mut cmd))["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        let mut cmd = sb.agent("codex", &wt);
        cmd.args(["resume", &session]);
        codex_setup(&sb, &openai, &mut cmd, &trusted);
        let tui = Tui::start(&sb, &cmd);
        let screen = tui.until(
            |s| {
                (s.contains("The note is in notes.txt.") && s.contains("Ask Codex"))
                    || s.contains("no longer configured")
                    || s.contains("Conversation interrupted")
            },
            // Codex's offer of a newer model: keep the configured one;
            // grove's capture hooks (installed in the repository when the
            // task was launched): trusted, as the README tells the user.
            |s| {
                (s.contains("Use existing model") || s.contains("Hooks need review"))
                    .then(|| vec!["Down", "Enter"])
            },
        );
        assert!(screen.contains(prompt.as_str()), "{screen}");
        assert!(screen.contains("The note is in notes.txt."), "{screen}");
        assert!(!screen.contains("no longer configured"), "{screen}");
        assert!(!screen.contains("Conversation interrupted"), "{screen}");
    }
}

/// Stops the sandbox's Codex app-server daemon when dropped.
pub(crate) struct CodexDaemon<'a> {
    pub sb: &'a Sandbox,
}

impl Drop for CodexDaemon<'_> {
    fn drop(&mut self) {
        // Its updater loop outlives `daemon stop`: ended too, when its pid
        // file (read first: stopping removes it) names a process of this
        // sandbox's Codex, and nothing else.
        let pid_file = self
            .sb
            .path()
            .join("codex/app-server-daemon/daemon-updater.pid");
        let updater = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["pid"].as_u64());
        let mut cmd = self.sb.agent("codex", &self.sb.path());
        cmd.args(["app-server", "daemon", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let _ = cmd.status();
        let Some(pid) = updater else {
            return;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let sandbox = self.sb.path().to_string_lossy().into_owned();
        if String::from_utf8_lossy(&cmdline).contains(&sandbox) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// `grove show THREAD --follow --json` running: the messages it printed,
/// each with when; stopped when dropped.
struct Follow {
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Follow {
    fn start(sb: &Sandbox, dir: &Path, id: &str) -> Follow {
        use std::io::BufRead;
        let mut cmd = sb.grove(dir);
        cmd.args(["show", id, "--follow", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("grove show --follow runs");
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push((Instant::now(), v));
                }
            }
        });
        Follow { child, lines }
    }

    /// When it printed `what`.
    fn printed(&self, what: &Awaited) -> Option<Instant> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .find(|(_, m)| is_awaited(m, what))
            .map(|(at, _)| *at)
    }

    /// The ids of the messages it printed, in order.
    fn ids(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m["id"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts that `follow` printed each record the gate saw within a second
/// of the thread holding it, and in the end every message of the thread,
/// once, in order.
#[track_caller]
fn assert_followed(follow: &Follow, seen: &[Seen], thread_dir: &Path) {
    for s in seen {
        let (_, held) = s.held.expect("the thread held it");
        let printed = wait_for(|| follow.printed(&s.what));
        assert!(
            printed.saturating_duration_since(held) < Duration::from_secs(1),
            "show --follow printed {:?} {:?} after the thread held it",
            s.what,
            printed.saturating_duration_since(held)
        );
    }
    let want: Vec<String> = message_lines(thread_dir)
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let started = Instant::now();
    while follow.ids() != want && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(POLL);
    }
    assert_eq!(follow.ids(), want, "show --follow printed the thread");
}

/// What `what` gives, polled until it gives something; fails after
/// [`BOUND`].
#[track_caller]
fn wait_for<T>(what: impl Fn() -> Option<T>) -> T {
    let started = Instant::now();
    while started.elapsed() < BOUND {
        if let Some(v) = what() {
            return v;
        }
        std::thread::sleep(POLL);
    }
    panic!("waited {BOUND:?} in vain");
}

/// The agent's state of thread `id` (`grove list`'s `agentState`) once it
/// is `state`.
#[track_caller]
fn wait_state(sb: &Sandbox, repo: &Path, id: &str, state: &str) -> Value {
    let started = Instant::now();
    let mut last = Value::Null;
    while started.elapsed() < BOUND {
        last = row_of(sb, repo, id)["agentState"].clone();
        if last["state"] == state {
            return last;
        }
        std::thread::sleep(POLL);
    }
    panic!("the agent never turned {state}: {last}");
}

/// The keys that choose `option` in the list on screen `s`, if it shows
/// one: Enter when the list's marker (`❯` Claude Code, `›` Codex) is on
/// it, else Down (the lists wrap around).
fn choose(s: &str, option: &str) -> Option<Vec<&'static str>> {
    let mut shown = false;
    for line in s.lines() {
        let line = line.trim();
        let marked = line.strip_prefix('❯').or_else(|| line.strip_prefix('›'));
        match marked {
            Some(rest) if rest.trim_start().starts_with(option) => return Some(vec!["Enter"]),
            _ if line.starts_with(option) => shown = true,
            _ => {}
        }
    }
    shown.then(|| vec!["Down"])
}

/// Claude Code 2.1.331's questions the first time it runs in a worktree,
/// answered as the README says: the workspace trust ("No, exit" comes
/// first) and the API key from the environment ("No" first).
fn claude_answers(s: &str) -> Option<Vec<&'static str>> {
    if s.contains("Quick safety check") {
        return choose(s, "Yes, I trust this folder");
    }
    if s.contains("Do you want to use this API key?") {
        return choose(s, "Yes");
    }
    None
}

/// Codex 0.169's questions the first time it runs in a repository,
/// answered as the README says: the folder trust, grove's hooks (trusted
/// all), and its offer of a newer model (the configured one kept).
fn codex_answers(s: &str) -> Option<Vec<&'static str>> {
    if s.contains("Trust this folder?") {
        return choose(s, "1. Trust and continue");
    }
    if s.contains("Hooks need review") {
        return choose(s, "2. Trust all and continue");
    }
    if s.contains("Use existing model") {
        return choose(s, "2. Use existing model");
    }
    None
}

/// The only task of `repo`: its worktree and thread id.
fn only_task(sb: &Sandbox, repo: &Path) -> (PathBuf, String) {
    let rows = list_rows(sb, repo);
    assert_eq!(rows.len(), 1, "{rows:?}");
    (
        PathBuf::from(rows[0]["worktreePath"].as_str().unwrap()),
        rows[0]["threadId"].as_str().unwrap().to_string(),
    )
}

/// The model calls of the agent's session (not Codex's requests for a
/// title).
fn session_calls(server: &ModelServer) -> Vec<crate::model_server::Request> {
    server
        .model_calls()
        .into_iter()
        .filter(|c| !crate::model_server::is_title_request(&c.body))
        .collect()
}

/// Asserts what the model received in the scenario's turn: the prompt,
/// then each tool's result (the failing one's as an error).
#[track_caller]
fn assert_model_got_the_turn(api: Api, calls: &[crate::model_server::Request]) {
    assert_eq!(calls.len(), 4, "one answer per step of the script");
    let prompt = &scenario()[0].prompt;
    let all = |c: &crate::model_server::Request| c.body.to_string();
    assert!(all(&calls[0]).contains(prompt.as_str()), "the prompt");
    match api {
        Api::Anthropic => {
            assert_eq!(
                result_text(&tool_result(&calls[1].body)["content"]),
                "grove-real-test"
            );
            assert_eq!(tool_result(&calls[2].body)["is_error"], true);
            assert!(result_text(&tool_result(&calls[3].body)["content"]).contains("notes.txt"));
        }
        Api::OpenAi => {
            let last = |n: usize| calls[n].body["input"].as_array().unwrap().last().cloned();
            let output = |n: usize| last(n).unwrap()["output"].to_string();
            assert!(output(1).contains("grove-real-test"), "{}", output(1));
            assert!(output(2).contains("Process exited with code 1"));
            assert!(output(3).contains("A notes.txt"));
        }
    }
}

/// Where `agent` (`claude`, `codex`) writes its transcripts in the sandbox.
fn transcripts(sb: &Sandbox, agent: &str) -> PathBuf {
    sb.path().join(match agent {
        "claude" => "claude/projects",
        _ => "codex/sessions",
    })
}

/// Asserts that the turn's last reply, which no request follows, reaches
/// the thread within a second of the agent writing it; what was seen.
#[track_caller]
fn reply_within_a_second(
    sb: &Sandbox,
    repo: &Path,
    thread_dir: &Path,
    agent: &str,
    reply: &str,
) -> Seen {
    let last = watch_for(sb, repo, thread_dir, Awaited::Reply(reply.to_string()));
    assert!(
        last.latency(&transcripts(sb, agent))
            .is_some_and(|l| l < Duration::from_secs(1)),
        "the reply reached the thread within 1 s of its write: {last:?}"
    );
    last
}

/// Asserts the thread after the scenario's turn: each record reached it
/// within a second of its write while the agent worked, `show --follow`
/// printed it, the conversation once in order, the usage the agent's own
/// files give.
#[track_caller]
fn assert_turn_captured(
    sb: &Sandbox,
    repo: &Path,
    thread_dir: &Path,
    seen: &Mutex<Vec<Seen>>,
    follow: &Follow,
    agent: &str,
) {
    let seen = seen.lock().unwrap();
    let transcripts = transcripts(sb, agent);
    assert_within_a_second(&seen, 4, &transcripts);
    let last = reply_within_a_second(sb, repo, thread_dir, agent, &scenario()[0].reply);
    assert_followed(follow, &seen, thread_dir);
    assert_followed(follow, std::slice::from_ref(&last), thread_dir);
    let (turn, usage) = match agent {
        "claude" => (
            CLAUDE_TURN,
            claude_transcript_usage(&agent_files(sb, "claude")),
        ),
        _ => (CODEX_TURN, codex_rollout_usage(&agent_files(sb, "codex"))),
    };
    assert_lines(
        &conversation(thread_dir),
        &expected(&scenario()[0].prompt, turn),
    );
    let id = thread_dir.file_name().unwrap().to_string_lossy();
    assert_tokens(thread_dir, &row_of(sb, repo, &id), usage);
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_tui_launched_by_grove_new_is_captured_as_it_goes_ends_with_it_and_resumes() {
    let sb = Arc::new(Sandbox::new());
    if !tui_ready(&sb) {
        return;
    }
    let started = Instant::now();
    let repo = sb.repo("app");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watch = Watch::of(sb.clone(), Api::Anthropic, repo.clone(), None, seen.clone());
    let thread: Arc<OnceLock<PathBuf>> = watch.thread.clone();
    let server = ModelServer::start_gated(Api::Anthropic, two_turns(), watch.gate());
    let prompt = scenario()[0].prompt.clone();
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args([
        "new",
        "Real agent task",
        "--prompt",
        &prompt,
        "--launch=claude-code",
    ]);
    claude_setup(&sb, &server, &mut cmd);
    let tui = Tui::start(&sb, &cmd);
    // The task is made before Claude Code asks anything; its question
    // names the hook file grove put in the worktree.
    let trust = tui.until(|s| s.contains("Quick safety check"), |_| None);
    assert!(
        trust.contains(
            "hooks that can run commands without asking, declared in .claude/settings.local.json"
        ),
        "{trust}"
    );
    let (wt, id) = only_task(&sb, &repo);
    let thread_dir = wt.join(".agent/threads").join(&id);
    thread.set(thread_dir.clone()).unwrap();
    let follow = Follow::start(&sb, &repo, &id);
    tui.until(|s| s.contains("The note is in notes.txt."), claude_answers);
    // The turn is over, Claude Code still open: waiting for the user.
    wait_state(&sb, &repo, &id, "waiting");
    assert_model_got_the_turn(Api::Anthropic, &server.model_calls());
    assert_turn_captured(&sb, &repo, &thread_dir, &seen, &follow, "claude");

    // Quit: the session ends (SessionEnd), and grove new with it.
    tui.type_line("/exit");
    assert_eq!(wait_for(|| tui.exit_code()), 0, "{}", tui.screen());
    let state = wait_state(&sb, &repo, &id, "exited");
    assert_eq!(state["exitCode"], 0, "{state}");
    drop(tui);

    // Resumed in Claude Code's TUI: it asks nothing again in this worktree,
    // the model gets the earlier turn, the new one lands.
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["resume", &id, "--prompt", "Now sum it up"]);
    claude_setup(&sb, &server, &mut cmd);
    let tui = Tui::start(&sb, &cmd);
    tui.until(
        |s| s.contains("All done: one note written."),
        |s| {
            assert!(claude_answers(s).is_none(), "asked again: {s}");
            None
        },
    );
    wait_state(&sb, &repo, &id, "waiting");
    let calls = server.model_calls();
    assert_eq!(calls.len(), 5, "one answer for the new turn");
    assert_in_order(
        &calls[4].body["messages"].to_string(),
        &[
            prompt.as_str(),
            "grove-real-test",
            "The note is in notes.txt.",
            "Now sum it up",
        ],
    );
    // The new prompt, awaited too (the earlier turn's records are in the
    // session grove wrote as well: measured above, from Claude's own).
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 5, "{seen:#?}");
    assert_within_a_second(&seen[4..], 1, &transcripts(&sb, "claude"));
    reply_within_a_second(&sb, &repo, &thread_dir, "claude", &two_turns()[1].reply);
    let mut want = expected(&prompt, CLAUDE_TURN);
    want.push("user: Now sum it up".into());
    want.push("agent: All done: one note written.".into());
    assert_lines(&conversation(&thread_dir), &want);
    tui.type_line("/exit");
    assert_eq!(wait_for(|| tui.exit_code()), 0);
    wait_state(&sb, &repo, &id, "exited");
    eprintln!("claude TUI through grove: {:?}", started.elapsed());
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn claude_tui_started_by_hand_after_capture_install_is_captured_as_it_goes() {
    let sb = Arc::new(Sandbox::new());
    if !tui_ready(&sb) {
        return;
    }
    let started = Instant::now();
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "claude-code");
    ok(sb.grove(&wt).args(["capture", "install"]));
    let thread_dir = wt.join(".agent/threads").join(&id);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watch = Watch::of(
        sb.clone(),
        Api::Anthropic,
        repo.clone(),
        Some(thread_dir.clone()),
        seen.clone(),
    );
    let server = ModelServer::start_gated(Api::Anthropic, two_turns(), watch.gate());
    let follow = Follow::start(&sb, &repo, &id);
    let mut cmd = sb.agent("claude", &wt);
    claude_setup(&sb, &server, &mut cmd);
    let tui = Tui::start(&sb, &cmd);
    let trust = tui.until(|s| s.contains("Quick safety check"), |_| None);
    assert!(trust.contains(".claude/settings.local.json"), "{trust}");
    // Ready for the prompt once the questions are answered.
    tui.until(|s| s.contains("shift+tab to cycle"), claude_answers);
    tui.type_line(&scenario()[0].prompt);
    tui.until(|s| s.contains("The note is in notes.txt."), |_| None);
    wait_state(&sb, &repo, &id, "waiting");
    assert_model_got_the_turn(Api::Anthropic, &server.model_calls());
    assert_turn_captured(&sb, &repo, &thread_dir, &seen, &follow, "claude");

    tui.type_line("/exit");
    assert_eq!(wait_for(|| tui.exit_code()), 0, "{}", tui.screen());
    let state = wait_state(&sb, &repo, &id, "exited");
    assert_eq!(state["event"], "SessionEnd", "{state}");
    eprintln!("claude TUI by hand: {:?}", started.elapsed());
}

/// What Codex 0.169 records once the user kept the configured model when
/// it offered a newer one.
const MODEL_OFFER_ANSWERED: &str = "\n[notice.model_migrations]\n\"gpt-5.5\" = \"gpt-6-sol\"\n";

/// Releases a pause when dropped, so a failing test does not hold the
/// model server (and itself) for the pause's bound.
struct Release(Arc<Pause>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.released.store(true, Ordering::SeqCst);
    }
}

/// `codex app-server daemon stop`, as a user stops the daemon that keeps
/// their sessions (it ends them: SessionEnd).
fn stop_codex_daemon(sb: &Sandbox) {
    let mut cmd = sb.agent("codex", &sb.path());
    cmd.args(["app-server", "daemon", "stop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    codex_env(&mut cmd);
    assert!(cmd.status().unwrap().success());
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_tui_launched_by_grove_runs_on_in_its_daemon_after_it_quits_until_the_session_ends() {
    let sb = Arc::new(Sandbox::new());
    if !tui_ready(&sb) {
        return;
    }
    let started = Instant::now();
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    let thread_dir = wt.join(".agent/threads").join(&id);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut watch = Watch::of(
        sb.clone(),
        Api::OpenAi,
        repo.clone(),
        Some(thread_dir.clone()),
        seen.clone(),
    );
    // The model holds its answer to the first tool's result until the
    // user has quit Codex, leaving the turn to run in the background.
    let pause = Arc::new(Pause {
        after: 2,
        ..Pause::default()
    });
    watch.pause = Some(pause.clone());
    let _release = Release(pause.clone());
    let server = ModelServer::start_gated(Api::OpenAi, two_turns(), watch.gate());
    codex_config(&sb, &server, "");
    let _daemon = CodexDaemon { sb: &sb };
    let follow = Follow::start(&sb, &repo, &id);
    let prompt = scenario()[0].prompt.clone();
    let mut cmd = sb.grove_with_agents(&wt);
    cmd.args(["launch", &id, "--prompt", &prompt]);
    codex_env(&mut cmd);
    let tui = Tui::start(&sb, &cmd);
    tui.until(|_| pause.reached.load(Ordering::SeqCst), codex_answers);
    tui.keys(&["C-c"]);
    let asked = tui.until(
        |s| tui.exit_code().is_some() || s.contains("Disconnected from this task"),
        |s| {
            s.contains("Task is still running")
                .then(|| choose(s, "2. Run in background"))
                .flatten()
        },
    );
    assert_eq!(wait_for(|| tui.exit_code()), 0, "{asked}");
    assert!(
        tui.screen()
            .contains("Disconnected from this task. Any running work continues."),
        "{}",
        tui.screen()
    );
    // Codex quit, its session did not: the turn goes on in the daemon.
    let state = row_of(&sb, &repo, &id)["agentState"].clone();
    assert_eq!(state["state"], "working", "{state}");
    pause.released.store(true, Ordering::SeqCst);
    // The daemon still runs grove's hooks: the rest of the turn lands as
    // it is written, and the turn's end.
    wait_state(&sb, &repo, &id, "waiting");
    assert_model_got_the_turn(Api::OpenAi, &session_calls(&server));
    assert_turn_captured(&sb, &repo, &thread_dir, &seen, &follow, "codex");
    // The session ends with the daemon (as it would 60 s after its last
    // client left): exited, by Codex's own SessionEnd.
    stop_codex_daemon(&sb);
    let state = wait_state(&sb, &repo, &id, "exited");
    assert_eq!(state["event"], "SessionEnd", "{state}");
    drop(tui);

    // Resumed in Codex's TUI (a new daemon): nothing asked again, the
    // model gets the earlier turn, the new one lands.
    let mut cmd = sb.grove_with_agents(&repo);
    cmd.args(["resume", &id, "--prompt", "Now sum it up"]);
    codex_env(&mut cmd);
    let tui = Tui::start(&sb, &cmd);
    tui.until(
        |s| s.contains("All done: one note written."),
        |s| {
            assert!(codex_answers(s).is_none(), "asked again: {s}");
            None
        },
    );
    wait_state(&sb, &repo, &id, "waiting");
    let calls = session_calls(&server);
    assert_eq!(calls.len(), 5, "one answer for the new turn");
    assert_in_order(
        &calls[4].body["input"].to_string(),
        &[
            prompt.as_str(),
            "grove-real-test",
            "No such file",
            "A notes.txt",
            "The note is in notes.txt.",
            "Now sum it up",
        ],
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 5, "{seen:#?}");
        assert_within_a_second(&seen[4..], 1, &transcripts(&sb, "codex"));
    }
    reply_within_a_second(&sb, &repo, &thread_dir, "codex", &two_turns()[1].reply);
    let mut want = expected(&prompt, CODEX_TURN);
    want.push("user: Now sum it up".into());
    want.push("agent: All done: one note written.".into());
    assert_lines(&conversation(&thread_dir), &want);
    // Quit with nothing running: the session waits in the daemon.
    tui.keys(&["C-c"]);
    assert_eq!(wait_for(|| tui.exit_code()), 0, "{}", tui.screen());
    let state = row_of(&sb, &repo, &id)["agentState"].clone();
    assert_eq!(state["state"], "waiting", "{state}");
    stop_codex_daemon(&sb);
    wait_state(&sb, &repo, &id, "exited");
    eprintln!("codex TUI through grove: {:?}", started.elapsed());
}

#[test]
#[cfg_attr(
    skip_real_agents,
    ignore = "GROVE_SKIP_REAL_AGENTS=1: needs the real agents of tests/real-agents"
)]
fn codex_tui_started_by_hand_after_capture_install_is_captured_as_it_goes() {
    let sb = Arc::new(Sandbox::new());
    if !tui_ready(&sb) {
        return;
    }
    let started = Instant::now();
    let repo = sb.repo("app");
    let (wt, id) = task(&sb, &repo, "codex");
    let thread_dir = wt.join(".agent/threads").join(&id);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut watch = Watch::of(
        sb.clone(),
        Api::OpenAi,
        repo.clone(),
        Some(thread_dir.clone()),
        seen.clone(),
    );
    // The second turn's answer is held: the user interrupts it.
    let pause = Arc::new(Pause {
        after: 5,
        ..Pause::default()
    });
    watch.pause = Some(pause.clone());
    let _release = Release(pause.clone());
    let server = ModelServer::start_gated(Api::OpenAi, two_turns(), watch.gate());
    // Codex's offer of a newer model answered before (it may come after the
    // prompt box is drawn, and take the Enter meant for the prompt).
    codex_config(&sb, &server, MODEL_OFFER_ANSWERED);
    // grove's hooks trusted for the user: Codex asks only about the folder.
    ok(sb.grove(&wt).args(["capture", "install", "--trust-agent"]));
    let _daemon = CodexDaemon { sb: &sb };
    let follow = Follow::start(&sb, &repo, &id);
    let mut cmd = sb.agent("codex", &wt);
    codex_env(&mut cmd);
    let tui = Tui::start(&sb, &cmd);
    let folder = tui.until(|s| s.contains("Trust this folder?"), |_| None);
    assert!(
        folder.contains(&format!(
            "Trusting will apply to the repository root:\n  {}",
            repo.display()
        )),
        "{folder}"
    );
    tui.until(
        |s| s.contains("Ask Codex to do anything"),
        |s| {
            assert!(
                !s.contains("Hooks need review") && !s.contains("Use existing model"),
                "{s}"
            );
            codex_answers(s)
        },
    );
    tui.type_line(&scenario()[0].prompt);
    tui.until(|s| s.contains("The note is in notes.txt."), |_| None);
    wait_state(&sb, &repo, &id, "waiting");
    assert_model_got_the_turn(Api::OpenAi, &session_calls(&server));
    assert_turn_captured(&sb, &repo, &thread_dir, &seen, &follow, "codex");

    // A turn interrupted (Esc) runs no hook: the rollout says it ended.
    tui.type_line("Now sum it up");
    wait_for(|| pause.reached.load(Ordering::SeqCst).then_some(()));
    assert_eq!(row_of(&sb, &repo, &id)["agentState"]["state"], "working");
    tui.keys(&["Escape"]);
    tui.until(|s| s.contains("Conversation interrupted"), |_| None);
    let state = wait_state(&sb, &repo, &id, "waiting");
    assert_eq!(state["event"], "turn_aborted", "{state}");
    pause.released.store(true, Ordering::SeqCst);

    // Quit: the session waits in Codex's daemon until it ends there.
    tui.keys(&["C-c"]);
    assert_eq!(wait_for(|| tui.exit_code()), 0, "{}", tui.screen());
    assert!(
        tui.screen().contains("Disconnected from this task"),
        "{}",
        tui.screen()
    );
    let state = row_of(&sb, &repo, &id)["agentState"].clone();
    assert_eq!(state["state"], "waiting", "{state}");
    stop_codex_daemon(&sb);
    let state = wait_state(&sb, &repo, &id, "exited");
    assert_eq!(state["event"], "SessionEnd", "{state}");
    eprintln!("codex TUI by hand: {:?}", started.elapsed());
}
