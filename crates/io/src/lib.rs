//! mslink-io: the host I/O that the protocol crates (rule 1 of docs/architecture.md: no
//! clock, sleep, thread, socket or file) leave to their drivers, written once for the
//! simulator's lab, the emulator and the CLI.
//!
//! Contract. [`files`] makes output folders before a long job starts, with errors that name
//! the option and the folder; [`read_trace_file`], [`read_error_trace`],
//! [`read_period_trace`] and [`TraceFiles`] read the trace files a configuration names, with
//! errors that name the file and, for a malformed line, its number; [`log`] sends the
//! real-time drivers' `tracing` events to standard error, one whole line each.

#![warn(missing_docs)]

pub mod files;
pub mod log;
mod trace_files;

pub use trace_files::{read_error_trace, read_period_trace, read_trace_file, TraceFiles};
