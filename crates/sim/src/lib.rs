//! mslink-sim: a deterministic virtual-time simulator that drives the mslink engine.
//!
//! Contract: integer-nanosecond virtual time, a binary heap of (time, sequence) events
//! (`mslink_link::event`, shared with the link's hop and test kit), a path of nodes joined by wired and wireless segments with a
//! `MultiServiceLink` at each wireless end and an error model per direction ([`world`]), UDP
//! applications, and TOML scenarios ([`scenario`]). The crate does no I/O: scenario text and
//! trace files come in through the caller, results go out as values (the CLI writes them).
//! Same scenario, seed and repetition give identical results.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod budget;
pub mod cell;
pub mod demo;
pub mod host;
pub mod labels;
/// Dotted-key overrides of TOML documents (`--set`): moved down to `mslink-channel` so the
/// emulator shares them without depending on the simulator; re-exported here for old paths.
pub use mslink_channel::overrides;
pub mod packet;
pub mod resources;
pub mod scenario;
/// Statistics of repeated runs (the `mslink-stats` crate, shared with the benchmarks).
pub use mslink_stats as stats;
pub mod tcp;
pub mod world;
pub mod www_model;
pub mod xcp;

pub use scenario::{Scenario, ScenarioError};
pub use world::{run, run_with, run_with_capture, Capture, RunResult};
