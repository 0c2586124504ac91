//! mslink-tunnel: the multi-service link layer carried between two hosts over UDP, with
//! authenticated encryption (Noise handshake via snow, ChaCha20-Poly1305 datagrams).
//!
//! Contract: everything except [`rt`] is sans-IO (docs/architecture.md rule 1): [`wire`] (the datagram
//! format), [`replay`] (RFC 6479 window), [`keys`], [`handshake`] (Noise IK / NNpsk0),
//! [`crypto`] (sealing), [`events`] (what happened, as values), [`cookie`] (handshake MACs, cookie replies), [`ratelimit`]
//! (initiations a responder processes), [`session`] (the [`Tunnel`] state machine that runs a
//! `MultiServiceLink` end to end inside the sessions, 004 §IV) and [`config`]. [`rt`] is the
//! only real-time glue: it sets up the TUN device and the UDP socket and runs the tunnel in the
//! driver loop it shares with the emulator (`mslink_io::driver`).
#![warn(missing_docs)]

pub mod config;
pub mod cookie;
pub mod crypto;
pub mod events;
pub mod handshake;
pub mod keys;
pub mod ratelimit;
pub mod replay;
#[cfg(target_os = "linux")]
pub mod rt;
pub mod session;
pub mod wire;

pub use events::{Severity, TunnelEvent};
pub use session::{Rejected, Tunnel, TunnelStats};
