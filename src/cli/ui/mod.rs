//! What the commands share to talk to the user: where output goes and how
//! it is escaped ([`output`]), tables ([`table`]), thread trees ([`tree`]),
//! progress on a terminal ([`progress`]), completion of thread ids
//! ([`complete`]) and arguments built only for the command that runs
//! ([`lazy`]). Every other file of `cli/` is one command.

pub mod complete;
pub mod lazy;
pub mod output;
pub mod progress;
pub mod table;
pub mod tree;
