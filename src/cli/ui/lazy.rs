//! Subcommand arguments defined only for the subcommand that runs.
//!
//! clap's derive builds every subcommand's arguments (with their help
//! texts) before it parses anything: with thirty-odd subcommands that was
//! 0.4 ms of every grove run, a quarter of `grove rm`'s own start-up. Each
//! subcommand's arguments are wrapped in [`Lazy`], which hands them to
//! clap as a deferred definition ([`clap::Command::defer`]): clap defines
//! them when that subcommand is the one parsed. Whatever shows several
//! subcommands' texts at once (`--help`, `help`, completions, the manual
//! pages, an empty command line) gets the eager definition.

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{ArgMatches, Args, Command, FromArgMatches};

/// Off only for a command line that names a subcommand and asks no help.
static EAGER: AtomicBool = AtomicBool::new(true);

/// Defines only the subcommand `argv` runs, when it names one (its first
/// word that is not an option) and asks no help. A word that is no
/// subcommand gets clap's error, which shows no subcommand's texts.
pub fn define_only_what_runs(argv: &[OsString]) {
    let asks_help = argv
        .iter()
        .skip(1)
        .any(|a| a == "-h" || a == "--help" || a == "help");
    let names_one = crate::cli::subcommand_word(argv).is_some();
    EAGER.store(asks_help || !names_one, Ordering::Relaxed);
}

/// `T`'s arguments, defined when clap builds the subcommand they belong to.
pub struct Lazy<T>(pub T);

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

impl<T: Args> Args for Lazy<T> {
    fn augment_args(cmd: Command) -> Command {
        if EAGER.load(Ordering::Relaxed) {
            T::augment_args(cmd)
        } else {
            cmd.defer(T::augment_args)
        }
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        if EAGER.load(Ordering::Relaxed) {
            T::augment_args_for_update(cmd)
        } else {
            cmd.defer(T::augment_args_for_update)
        }
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}
