//! Ctrl-C (SIGINT), SIGTERM and SIGHUP while a hook runs.
//!
//! A hook runs in a process group of its own, so the terminal's Ctrl-C
//! reaches grove, not the hook. While hooks run, grove turns those signals
//! into a flag: the running hook's whole group is killed (as on a timeout),
//! its outcome recorded as interrupted, the remaining hooks skipped, the
//! thread and the cache written — then grove exits with 128 + the signal.
//! A second signal, once grove has seen the first, terminates grove at
//! once. While an agent runs in the foreground ([`Watch::foreground`]), the
//! signals are the agent's: grove only records them, however many come, and
//! does its bookkeeping when the agent exits. Outside these, the signals do
//! what they always do.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals grove stops for: SIGINT, SIGTERM, SIGHUP.
#[cfg(unix)]
const SIGNALS: &[i32] = &[
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];
#[cfg(windows)]
const SIGNALS: &[i32] = &[signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

struct Handlers {
    /// The signal received while watching (0: none).
    received: Arc<AtomicUsize>,
    /// When set, a signal does what it does by default (terminate).
    pass_through: Arc<AtomicBool>,
}

static HANDLERS: OnceLock<Option<Handlers>> = OnceLock::new();

fn handlers() -> Option<&'static Handlers> {
    HANDLERS
        .get_or_init(|| {
            let received = Arc::new(AtomicUsize::new(0));
            let pass_through = Arc::new(AtomicBool::new(true));
            for &signal in SIGNALS {
                // The default action is taken only when passing through;
                // otherwise the signal is recorded.
                let ok = signal_hook::flag::register_conditional_default(
                    signal,
                    Arc::clone(&pass_through),
                )
                .and_then(|_| {
                    signal_hook::flag::register_usize(
                        signal,
                        Arc::clone(&received),
                        signal as usize,
                    )
                });
                if ok.is_err() {
                    return None;
                }
            }
            Some(Handlers {
                received,
                pass_through,
            })
        })
        .as_ref()
}

/// While alive, a termination signal is recorded instead of ending grove.
/// Dropped, the signals act as usual again.
pub struct Watch {
    handlers: Option<&'static Handlers>,
    /// Once a signal was seen, the next one terminates grove.
    escalate: bool,
}

impl Watch {
    /// Starts watching: the first signal is recorded, and once
    /// [`Watch::received`] has reported it, another terminates grove.
    pub fn start() -> Watch {
        Watch::begin(true)
    }

    /// Starts watching for a foreground agent: every signal is recorded,
    /// none terminates grove (the agent, in the same process group, gets
    /// them too and decides).
    pub fn foreground() -> Watch {
        Watch::begin(false)
    }

    fn begin(escalate: bool) -> Watch {
        let handlers = handlers();
        if let Some(h) = handlers {
            h.received.store(0, Ordering::SeqCst);
            h.pass_through.store(false, Ordering::SeqCst);
        }
        Watch { handlers, escalate }
    }

    /// The signal received since the watch started, if any.
    pub fn received(&self) -> Option<i32> {
        let h = self.handlers?;
        match h.received.load(Ordering::SeqCst) {
            0 => None,
            n => {
                if self.escalate {
                    h.pass_through.store(true, Ordering::SeqCst);
                }
                i32::try_from(n).ok()
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(h) = self.handlers {
            h.pass_through.store(true, Ordering::SeqCst);
        }
    }
}

/// The name of a signal, for messages: `SIGINT`.
pub fn signal_name(signal: i32) -> String {
    signal_hook::low_level::signal_name(signal)
        .map(str::to_string)
        .unwrap_or_else(|| format!("signal {signal}"))
}
