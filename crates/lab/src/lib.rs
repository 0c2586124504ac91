//! mslink-lab: the experiment pipeline of mslink as a library, under the `mslink` command and
//! the Python package alike.
//!
//! Contract. Everything here reads and writes files or runs programs on behalf of a driver: the
//! trace files a scenario names ([`TraceFiles`]), many simulation runs on a few threads with
//! results in a fixed order ([`parallel`]), the provenance of results ([`provenance`]) and the
//! claims ledger of the five papers ([`reproduce`]: runs, verdicts, counterfactuals, mutants,
//! coverage, report), the simulator's TCP against the kernel's ([`validate`]) and a scenario's
//! sweep points and repetitions run into a results folder ([`campaign`], `mslink sim`). It
//! prints nothing: progress, notes and warnings go through the caller's
//! [`progress::Progress`], errors come back with their context (file, claim, key).

#![warn(missing_docs)]

pub mod campaign;
pub mod parallel;
pub mod progress;
pub mod provenance;
pub mod reproduce;
pub mod validate;

pub use mslink_io::{files, read_error_trace, read_period_trace, read_trace_file, TraceFiles};

/// A fresh, empty folder for the test `name` of this process (the unit tests' scratch space).
#[cfg(test)]
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mslink-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
