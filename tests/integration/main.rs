//! grove's integration tests: one binary, one module per area. Every test
//! builds its own temporary repository and runs the real `grove` binary.

mod support;

mod append;
mod cli;
mod examples;
mod format;
mod hooks;
mod ids;
mod read;
mod remove;
mod worktree;
