//! mslink-link: the multi-service link layer engine of papers 004 and 003.
//!
//! Contract: sans-IO throughout (docs/architecture.md rule 1). No module reads a clock, sleeps, spawns
//! threads, opens sockets or files; time comes in as [`time::Instant`], bytes go in and out
//! through method calls. The simulator, the emulator and the tunnel drive the same state
//! machines.
//!
//! Map: [`time`] (our own instants), [`budget`] (scheduler shares and delay bounds), [`wire`] (frame formats), [`service`] (recovery schemes),
//! [`sched`] (frame schedulers), [`classifier`], [`sar`] (segmentation), [`link`] (the
//! multi-service link), [`config`], [`hop`] (an in-memory driver), [`side`] (the two sides of a hop and its two directions, as types), [`timer`] (timer tables).
// Unsafe code is denied everywhere except fec/simd.rs and its two children (simd_x86_shuffle.rs,
// simd_aarch64_neon.rs), which allow it for their SIMD kernels.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod budget;
pub mod classifier;
pub mod config;
pub mod event;
pub mod fec;
pub mod hop;
pub mod link;
pub mod rto;
pub mod sar;
pub mod sched;
pub mod service;
pub mod side;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod time;
pub mod timer;
/// The link's frames and service headers, which live in `mslink-wire` with every other format.
pub use mslink_wire::link as wire;

pub use side::{Direction, Side};
pub use time::{Duration, Instant};
