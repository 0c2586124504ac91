//! The end-system benchmark of 000 §IV on today's host (what `mslink bench` runs): ping-pong
//! round trip vs message size (percentiles and a fitted line like 000's "10 + 0.01·size"),
//! throughput vs message size with per-process CPU from getrusage on each side, and per-call
//! cost tables for socket calls (000 Table 1) and the VI API (000 Table 2).
//!
//! Contract: [`serve`] answers any number of tests on one VI connection until the client's
//! quit message; [`run_client`] drives them against a server at an address or one it starts
//! on this host ([`Target::Local`]: a child process, optionally across a veth pair between
//! two network namespaces, [`netns`]) and returns a [`Report`]. Every wait has a timeout, so
//! a lost peer ends the run with an error, never a hang. Flow control is the VI consumer's job
//! (a message with no receive descriptor is an error): the server keeps `WINDOW` receives
//! posted and returns credits. Nothing here prints; errors are [`BenchError`]s.
//!
//! The wire protocol: every test starts with a 32-byte control message from the client's
//! spare slot, four little-endian u64 words `[op, size, count, poll]` (op 1: ping-pong
//! `count` messages of `size` bytes; op 2: sink `count` messages, returning a credit message
//! (immediate data = credits) every `WINDOW / 2`, and at the end the server's user and system
//! CPU microseconds in a message with immediate data `u32::MAX`; op 3: quit). The server acks
//! ops 1 and 2 with an 8-byte message.

use std::time::Duration;

use crate::{Backend, Status, VipError, WaitMode, WorkQueue};

mod callcost;
mod client;
mod end;
mod floor;
pub mod netns;
mod report;
mod server;

pub use callcost::call_costs;
pub use client::{run_client, run_client_with, ClientConfig, ServerCommand, Target};
pub use floor::{floor_pingpong, FLOOR_C};
pub use report::{fit_line, percentile, CallRow, Fit, PingRow, Report, ThroughputRow};
pub use server::{serve, ServerConfig};

/// Receives the server keeps posted; the client may have this many messages in flight.
const WINDOW: usize = 16;
const OP_PINGPONG: u32 = 1;
const OP_SINK: u32 = 2;
const OP_QUIT: u32 = 3;
const TAG_SEND: u64 = 1 << 32;
const TIMEOUT: Duration = Duration::from_secs(20);

/// What a benchmark row measured: a VI backend, or plain blocking sockets without the VI
/// layer (the local ping-pong reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchBackend {
    /// Shared-memory rings (same host only).
    Shm,
    /// Plain sockets, TCP.
    Tcp,
    /// Plain sockets, UDP.
    Udp,
    /// io_uring over TCP.
    UringTcp,
    /// io_uring over UDP.
    UringUdp,
    /// Plain blocking TCP sockets without the VI layer (local ping-pong reference only).
    Sock,
    /// The C spin-loop floor over shared memory without the VI layer (`--floor`, local
    /// ping-pong reference only).
    Floor,
}

/// Transport of the sockets and io_uring backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl BenchBackend {
    /// The VI backend it drives.
    pub fn backend(self) -> Backend {
        match self {
            Self::Shm => Backend::SharedMemory,
            Self::Tcp | Self::Sock => Backend::Tcp,
            Self::Floor => Backend::SharedMemory,
            Self::Udp => Backend::Udp,
            Self::UringTcp => Backend::UringTcp,
            Self::UringUdp => Backend::UringUdp,
        }
    }

    /// The same API over `t`: sockets and io_uring switch between TCP and UDP; shared memory
    /// has no transport.
    pub fn over(self, t: Transport) -> Self {
        match (self, t) {
            (Self::Tcp | Self::Udp, Transport::Tcp) => Self::Tcp,
            (Self::Tcp | Self::Udp, Transport::Udp) => Self::Udp,
            (Self::UringTcp | Self::UringUdp, Transport::Tcp) => Self::UringTcp,
            (Self::UringTcp | Self::UringUdp, Transport::Udp) => Self::UringUdp,
            (b, _) => b,
        }
    }

    /// Its short name (`mslink bench --backend` takes it; tables print it).
    pub fn name(self) -> &'static str {
        match self {
            Self::Shm => "shm",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::UringTcp => "uring",
            Self::UringUdp => "uring-udp",
            Self::Sock => "sock",
            Self::Floor => "floor",
        }
    }
}

/// The short name of a wait mode ("poll", "block").
pub fn mode_name(m: WaitMode) -> &'static str {
    match m {
        WaitMode::Poll => "poll",
        WaitMode::Block => "block",
    }
}

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A VI call was refused.
    #[error(transparent)]
    Vi(#[from] VipError),
    /// An operating-system call failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A transfer completed with an error.
    #[error("transfer failed: {status:?} on {queue:?}")]
    Transfer {
        /// Its status.
        status: Status,
        /// Its work queue.
        queue: WorkQueue,
    },
    /// The peer broke the benchmark protocol (or a measurement loop went wrong).
    #[error("{0}")]
    Protocol(String),
    /// A helper thread panicked.
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// `source` happened while doing `what`.
    #[error("{what}")]
    Context {
        /// What the benchmark was doing.
        what: String,
        /// The failure.
        source: Box<BenchError>,
    },
}

/// Adds what was being done to an error.
trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, BenchError>;
}

impl<T, E: Into<BenchError>> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, BenchError> {
        self.map_err(|e| BenchError::Context {
            what: what(),
            source: Box::new(e.into()),
        })
    }
}

fn protocol(what: impl Into<String>) -> BenchError {
    BenchError::Protocol(what.into())
}
