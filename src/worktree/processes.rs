//! Processes still at work in a worktree — a live agent, a dev server, a
//! shell's job — found before the worktree is removed under them: a process
//! whose current directory is inside it, or that holds a file inside it
//! open. Linux reads `/proc`; on other systems none are found (removal goes
//! on as before), as the README says.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

/// How long reaped processes get between SIGTERM and SIGKILL.
pub const REAP_GRACE: Duration = Duration::from_secs(2);

/// A process at work in a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub pid: u32,
    /// Its command line (or name), for people.
    pub command: String,
    /// What holds it there: its working directory, or the file it has open.
    pub holds: PathBuf,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, in {})",
            self.pid,
            self.command,
            self.holds.display()
        )
    }
}

/// The processes at work in `dir`, leaving out grove itself, the
/// processes it runs under (the shell that started it may sit in `dir`)
/// and those it started (the `git status` it may be running there as it
/// looks).
pub fn in_dir(dir: &Path) -> Vec<Holder> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    // A child's command line is read from its memory, which waits while
    // the child is starting: grove's own children are left out first.
    scan(&dir, &ancestors())
        .into_iter()
        .filter(|(pid, _)| !descends_from_grove(*pid))
        .map(|(pid, holds)| Holder {
            pid,
            command: command_of(pid),
            holds,
        })
        .collect()
}

/// Whether `pid` is a child of grove, or a child's child… — or already
/// gone (grove's own `git status` may end between the look at its
/// directory and the look at its parent): either way not at work.
fn descends_from_grove(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let own = std::process::id();
        let Some(mut parent) = parent_of(pid) else {
            return true; // ended since it was seen
        };
        for _ in 0..64 {
            if parent == own {
                return true;
            }
            match parent_of(parent) {
                Some(up) if parent > 1 => parent = up,
                _ => return false,
            }
        }
    }
    let _ = pid;
    false
}

/// Every process's working directory and open files, looked at through
/// directory handles (`/proc/<pid>`, its `fd/`) so that each look resolves
/// one name instead of walking `/proc/<pid>/fd/<n>` from the root: on a
/// machine of a few hundred processes that walk was most of the scan's
/// time, spent while grove's own checks wait on the same cores.
#[cfg(target_os = "linux")]
fn scan(dir: &Path, spared: &[u32]) -> Vec<(u32, PathBuf)> {
    use nix::dir::Dir;
    use nix::fcntl::{OFlag, openat, readlinkat};
    use nix::sys::stat::Mode;
    use std::os::fd::AsFd;

    let Ok(mut procs) = Dir::open(
        "/proc",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let proc_fd = match procs.as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(_) => return Vec::new(),
    };
    let mut out = Vec::new();
    for entry in procs.iter().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().ok().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if spared.contains(&pid) {
            continue;
        }
        // A process of another user, or one that just ended, reads as nothing.
        let Ok(base) = openat(
            &proc_fd,
            name,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        let holds = readlinkat(&base, "cwd")
            .ok()
            .map(PathBuf::from)
            .filter(|cwd| cwd.starts_with(dir))
            .or_else(|| open_file_in(&base, dir));
        if let Some(holds) = holds {
            out.push((pid, holds));
        }
    }
    out
}

#[cfg(target_os = "linux")]
fn open_file_in(base: &std::os::fd::OwnedFd, dir: &Path) -> Option<PathBuf> {
    use nix::dir::Dir;
    use nix::fcntl::{OFlag, readlinkat};
    use nix::sys::stat::Mode;
    use std::os::fd::AsFd;

    let mut fds = Dir::openat(
        base,
        "fd",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let fds_fd = fds.as_fd().try_clone_to_owned().ok()?;
    fds.iter()
        .flatten()
        .filter(|fd| fd.file_name().to_bytes().first() != Some(&b'.'))
        .filter_map(|fd| readlinkat(&fds_fd, fd.file_name()).ok())
        .map(PathBuf::from)
        .find(|target| target.starts_with(dir))
}

/// The command line of `pid` (its name when that is empty), cut at 80
/// characters.
fn command_of(pid: u32) -> String {
    let base = Path::new("/proc").join(pid.to_string());
    let cmdline = std::fs::read(base.join("cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        std::fs::read_to_string(base.join("comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_default()
    } else {
        let line = words.join(" ");
        match line.char_indices().nth(80) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line,
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn scan(_dir: &Path, _spared: &[u32]) -> Vec<(u32, PathBuf)> {
    Vec::new()
}

/// grove and the processes above it.
fn ancestors() -> Vec<u32> {
    let mut out = vec![std::process::id()];
    #[cfg(target_os = "linux")]
    {
        // grove's own parent without /proc: reading its own `stat` waits
        // while another of its threads is starting a process.
        let mut parent = Some(std::os::unix::process::parent_id());
        while let Some(pid) = parent.filter(|p| *p != 0 && !out.contains(p) && out.len() < 64) {
            out.push(pid);
            parent = parent_of(pid);
        }
    }
    out
}

#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Ends the processes at work in `dir`: SIGTERM, then SIGKILL to those still
/// there after [`REAP_GRACE`]. Returns those that were still there at the
/// end (none, unless a process cannot be signalled).
pub fn reap(dir: &Path, holders: &[Holder]) -> Vec<Holder> {
    signal(holders, Signal::Term);
    let deadline = Instant::now() + REAP_GRACE;
    let still = |dir: &Path| -> Vec<Holder> {
        let now = in_dir(dir);
        now.into_iter()
            .filter(|h| holders.iter().any(|o| o.pid == h.pid))
            .collect()
    };
    loop {
        let left = still(dir);
        if left.is_empty() {
            return left;
        }
        if Instant::now() >= deadline {
            signal(&left, Signal::Kill);
            std::thread::sleep(Duration::from_millis(100));
            return still(dir);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal(holders: &[Holder], which: Signal) {
    use nix::sys::signal::{Signal as S, kill};
    let sig = match which {
        Signal::Term => S::SIGTERM,
        Signal::Kill => S::SIGKILL,
    };
    for h in holders {
        if let Ok(pid) = i32::try_from(h.pid) {
            let _ = kill(nix::unistd::Pid::from_raw(pid), sig);
        }
    }
}

#[cfg(not(unix))]
fn signal(_holders: &[Holder], _which: Signal) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// grove's own children (the `git status` it runs in the worktree while
    /// it looks) are part of grove, not processes at work there.
    #[test]
    #[allow(clippy::disallowed_methods)] // a child of the test process itself
    fn groves_own_children_are_not_at_work_in_the_worktree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(dir.path())
            .spawn()
            .expect("sleep");
        let found = in_dir(dir.path());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, Vec::new());
    }

    /// A process seen in the worktree that has ended by the time its parent
    /// is looked up (grove's own `git status`, finishing) is not at work.
    #[test]
    #[allow(clippy::disallowed_methods)] // a child of the test process itself
    fn a_process_gone_by_the_parent_lookup_is_not_at_work() {
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id();
        child.wait().expect("wait");
        assert!(descends_from_grove(pid));
        assert!(!descends_from_grove(1), "init is no child of grove");
    }
}
