//! mslink-stack: an x-kernel-style protocol graph (002 §4.1) in which the same Ethernet, IPv4,
//! UDP and (minimal) TCP protocol code runs under three receive architectures (002 §3): layered logical
//! multiplexing (LLM), direct application association (DAA) and integrated layered logical
//! multiplexing (ILLM), with integrated layer processing of the UDP copy and checksum (002 §2.2,
//! 001 §I, 000 §III).
//!
//! Contract: the protocol core ([`msg`], [`proto`], [`eth`], [`ipv4`], [`udp`], [`tcp`], [`graph`],
//! [`demux_key`]) is sans-IO (docs/architecture.md, rule 1): bytes in and out by method calls,
//! time as [`mslink_link::Instant`] arguments. Header layouts and the Internet checksum with
//! its integrated copy-and-checksum are `mslink_wire`'s, shared with every other crate. Devices drive it from outside: [`wire`] (in-memory)
//! and, on Linux, `afpacket` (raw Ethernet sockets), with its helpers `veth` (namespaces joined
//! by a veth pair) and `rt` (receive threads at real-time priorities). These and [`bench`](mod@bench),
//! which times round trips through the graph (002 §5.2; `mslink stack-bench`), are the only
//! modules here that do I/O, spawn threads or read a clock.
#![warn(missing_docs)]

#[cfg(target_os = "linux")]
pub mod afpacket;
pub mod bench;
pub mod demux_key;
pub mod eth;
pub mod graph;
pub mod ipv4;
pub mod msg;
pub mod proto;
#[cfg(target_os = "linux")]
pub mod rt;
pub mod tcp;
pub mod udp;
#[cfg(target_os = "linux")]
pub mod veth;
pub mod wire;

pub use graph::{
    Architecture, Delivery, EndpointId, GraphBuilder, Stack, StackConfig, StackError, StackStats,
    UdpConn, UdpIpEth,
};
pub use msg::Message;
pub use proto::{DropReason, Participants, Protocol};
