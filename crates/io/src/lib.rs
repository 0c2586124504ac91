//! mslink-io: the host I/O that the protocol crates (rule 1 of docs/architecture.md: no
//! clock, sleep, thread, socket or file) leave to their drivers, written once for the
//! simulator's lab, the emulator, the tunnel and the CLI — in the way quinn-udp serves quinn.
//!
//! Contract.
//! * [`driver`] is the one real-time loop of the emulator and the tunnel: readiness
//!   (`ppoll`, nanosecond deadlines, spinning and busy polling), timers, and one
//!   back-pressure rule for a device that cannot take a write (wait until writable, count
//!   what is dropped). The sans-IO machine it runs (the emulated hop, a tunnel end) sees
//!   packets, datagrams and time, nothing else.
//! * [`device`], [`tun`], [`gso`] and [`coalesce`]: packet devices (TUN devices, with their
//!   segmentation offloads: super-packets cut into MTU-sized packets on the way in, runs of
//!   one TCP flow written back as one super-packet), and a Unix packet pipe that really
//!   fills up, for tests. [`udp`]: a UDP socket with `recvmmsg`/`sendmmsg`, UDP GSO and
//!   back-pressure; [`pool`] its bounded buffer free-list.
//! * [`clock`] (monotonic time as `mslink_link::Instant`, 1 ns timer slack), [`signals`]
//!   (stop and dump-counters flags set by async-signal-safe handlers), [`seed`] (the
//!   kernel's random generator).
//! * [`files`] makes output folders before a long job starts, with errors that name the
//!   option and the folder; [`read_trace_file`], [`read_error_trace`], [`read_period_trace`]
//!   and [`TraceFiles`] read the trace files a configuration names, with errors that name the
//!   file and, for a malformed line, its number; [`log`] sends the real-time drivers'
//!   `tracing` events to standard error, one whole line each.

#![warn(missing_docs)]

pub mod clock;
pub mod coalesce;
pub mod device;
pub mod driver;
pub mod files;
pub mod gso;
pub mod log;
pub mod pool;
pub mod seed;
pub mod signals;
mod trace_files;
pub mod tun;
pub mod udp;

pub use trace_files::{
    error_trace_held, read_error_trace, read_period_trace, read_trace_file, TraceFiles,
};
