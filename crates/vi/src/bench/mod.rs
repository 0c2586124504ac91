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
//! The wire protocol: every test starts with a 40-byte control message from the client's
//! spare slot, five little-endian u64 words `[op, size, count, flags, seed]` (flags: bit 0
//! poll, bit 1 verify). Op 1: ping-pong `count` messages of `size` bytes, then the server sends
//! its user and system CPU microseconds over the exchange in a message with immediate data
//! `u32::MAX`. Op 2: sink `count` messages, returning a credit message (immediate data =
//! credits) every `WINDOW / 2`; with verify, check each message against the pattern of
//! [`pattern`] for `(seed, message number)`; at the end send `[user µs, system µs, messages
//! checked, messages that differed, first differing message, its first differing byte]` with
//! immediate data `u32::MAX`. Op 3: quit. The server acks ops 1 and 2 with an 8-byte message.
//!
//! CPU: each process's getrusage(RUSAGE_SELF) user and system time over the measured
//! exchange (the plain-socket reference, whose echo is a thread of the client, uses
//! RUSAGE_THREAD for each side).

use std::time::Duration;

use crate::{Backend, Status, VipError, WaitMode, WorkQueue};

mod callcost;
mod client;
mod end;
pub mod files;
mod floor;
pub mod netns;
mod pattern;
mod report;
mod server;
pub mod tables;

pub use callcost::call_costs;
pub use client::{run_client, run_client_with, ClientConfig, ServerCommand, Target};
pub use floor::{floor_pingpong, FloorProgram, FLOOR_C};
pub use report::{
    fit_line, fit_quality, histogram, percentile, CallRow, CarrierRow, Ci95, Fit, FloorPair,
    FloorRatios, PingRow, PingRun, Report, Residual, ThroughputRow, ThroughputRun, FLOOR_GAP_PCT,
};
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
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum BenchBackend {
    /// Shared-memory rings (same host only).
    Shm,
    /// Plain sockets, TCP (the baseline; works across hosts).
    #[cfg_attr(feature = "clap", value(alias = "sockets"))]
    Tcp,
    /// Plain sockets, TCP, every batch of posts behind one doorbell in one gathered
    /// `writev(2)`: the batching io_uring's gathered `SENDMSG` gets, so io_uring is compared
    /// at equal batching.
    #[cfg_attr(feature = "clap", value(alias = "sockets-batch"))]
    TcpBatch,
    /// Plain sockets, UDP (one datagram per message, at most 65,499 bytes).
    Udp,
    /// Plain sockets, UDP, every batch of posts behind one doorbell in one `sendmmsg(2)`: the
    /// batching io_uring's UDP wire gets, so io_uring over UDP is compared at equal batching.
    #[cfg_attr(feature = "clap", value(alias = "sockets-udp-batch"))]
    UdpBatch,
    /// io_uring over TCP (fixed buffers, fixed file, batched submission; SEND_ZC with --zc).
    #[cfg_attr(feature = "clap", value(name = "uring", alias = "uring-tcp"))]
    UringTcp,
    /// io_uring over UDP.
    UringUdp,
    /// Plain blocking TCP sockets without the VI layer (local ping-pong reference only).
    #[cfg_attr(feature = "clap", value(skip))]
    Sock,
    /// Plain blocking UDP sockets without the VI layer, one datagram each way (local
    /// ping-pong reference of the UDP backends only).
    #[cfg_attr(feature = "clap", value(skip))]
    SockUdp,
    /// The C spin-loop floor over shared memory without the VI layer (`--floor`, local
    /// ping-pong reference only).
    #[cfg_attr(feature = "clap", value(skip))]
    Floor,
}

/// Transport of the sockets and io_uring backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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
            Self::Tcp | Self::TcpBatch | Self::Sock => Backend::Tcp,
            Self::Floor => Backend::SharedMemory,
            Self::Udp | Self::UdpBatch | Self::SockUdp => Backend::Udp,
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
            (Self::TcpBatch | Self::UdpBatch, Transport::Tcp) => Self::TcpBatch,
            (Self::TcpBatch | Self::UdpBatch, Transport::Udp) => Self::UdpBatch,
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
            Self::TcpBatch => "tcp-batch",
            Self::Udp => "udp",
            Self::UdpBatch => "udp-batch",
            Self::UringTcp => "uring",
            Self::UringUdp => "uring-udp",
            Self::Sock => "sock",
            Self::SockUdp => "sock-udp",
            Self::Floor => "floor",
        }
    }

    /// What must carry its bytes: the bench checks the kernel's answer
    /// ([`crate::Nic::carrier`]) against it and refuses to report a backend over another.
    pub fn carrier(self) -> crate::Carrier {
        match self {
            Self::Shm | Self::Floor => crate::Carrier::SharedMemory,
            Self::Tcp | Self::TcpBatch | Self::UringTcp | Self::Sock => crate::Carrier::Tcp,
            Self::Udp | Self::UdpBatch | Self::UringUdp | Self::SockUdp => crate::Carrier::Udp,
        }
    }

    /// Does it gather a batch of sends into one write (`NicConfig::gather_sends`)?
    pub fn gathers(self) -> bool {
        matches!(self, Self::TcpBatch | Self::UdpBatch)
    }
}

/// User and system CPU time of the calling thread (getrusage RUSAGE_THREAD); zero if the
/// call fails.
pub(crate) fn thread_cpu() -> (Duration, Duration) {
    // SAFETY: rusage is plain old data; zeroed is a valid value and getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage owned by this frame.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The CPU the calling thread runs on (-1 if unknown).
pub(crate) fn current_cpu() -> i64 {
    // SAFETY: sched_getcpu takes no arguments and only reads the caller's CPU number.
    i64::from(unsafe { libc::sched_getcpu() })
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
