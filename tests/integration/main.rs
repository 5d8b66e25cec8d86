//! grove's integration tests: one binary, one module per area. Every test
//! builds its own temporary repository and runs the real `grove` binary.

// Tests and benchmarks start git, grove and their baselines themselves.
#![allow(clippy::disallowed_methods)]

mod model_server;
mod support;

mod agents;
mod append;
#[cfg(target_os = "linux")]
mod background_setup;
mod bare;
mod blame;
mod capture_install;
mod checkpoint;
mod cli;
mod copies;
mod examples;
mod export;
mod fidelity;
mod fork;
mod format;
mod hooks;
mod hostile;
mod ids;
mod import;
mod import_sidechains;
mod integrated;
mod interrupt;
mod large;
mod layers;
mod list;
mod live;
mod loss;
mod merge;
mod names;
mod native;
mod outside;
mod parallel;
mod ports;
mod pr;
mod props;
mod quick_start;
mod read;
mod real_agents;
mod real_sources;
mod real_sources_live;
mod real_tuis;
mod relations;
mod remove;
mod robust;
mod search;
mod secrets;
mod shell;
mod snapshots_human;
mod sync;
mod teardown;
mod turn_snapshots;
mod validate;
mod worktree;
