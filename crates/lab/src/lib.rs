//! mslink-lab: the experiment pipeline of mslink as a library, under the `mslink` command and
//! the Python package alike.
//!
//! Contract. Everything here reads and writes files or runs programs on behalf of a driver: the
//! trace files a scenario names ([`TraceFiles`]), many simulation runs on a few threads with
//! results in a fixed order ([`parallel`]), the provenance of results ([`provenance`]) and the
//! claims ledger of the five papers ([`reproduce`]: runs, verdicts, counterfactuals, mutants,
//! coverage, report) and the simulator's TCP against the kernel's ([`validate`]). It prints nothing: progress and notes go through the caller's
//! [`reproduce::Progress`], errors come back with their context (file, claim, key).

#![warn(missing_docs)]

pub mod parallel;
pub mod provenance;
pub mod reproduce;
mod trace_files;
pub mod validate;

pub use trace_files::{read_error_trace, read_period_trace, read_trace_file, TraceFiles};
