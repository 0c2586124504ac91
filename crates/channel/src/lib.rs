//! mslink-channel: what a wireless channel does to each frame.
//!
//! Contract: sans-IO (no clock, no I/O). An [`ErrorModel`] turns `(now, frame length, rng)` into
//! an [`Outcome`] — delivered, lost, truncated at a byte, or delivered with bits inverted at given
//! positions. Models keep their own state (burst phase, bits to the next error) and draw every
//! random number from the generator the driver passes in, so a driver that gives each link
//! direction its own seeded stream gets independent, reproducible processes per direction
//! (004 §III.A: "the error processes in each link direction were identical but independent").
//! Models stack ([`Stack`]): every layer sees every frame and the outcomes combine. Traces are
//! parsed from text the caller has read; this crate opens no files.
//!
//! What else a link does to its traffic is here too, so the simulator and the emulator share
//! one implementation of each: [`capacity`] (rate, Mahimahi traces), [`queue`] (drop-tail,
//! drop-head, CoDel, PIE, FQ-CoDel, with drops counted by cause) and [`delay`] (fixed delay,
//! jitter with or without reordering, on/off outages). All take `now` from the caller.
//! [`overrides`] (dotted-key `--set KEY=VALUE` edits of a TOML document, for the simulator's
//! scenarios and the emulator's link files) is here so both drivers share it.

#![warn(missing_docs)]

pub mod airtime;
pub mod burst_spec;
pub mod capacity;
pub mod config;
pub mod delay;
pub mod exponential;
pub mod fading;
pub mod generate;
pub mod gilbert_elliott;
pub mod independent;
pub mod mahimahi;
pub mod mean_loss;
pub mod medium;
pub mod outcome;
pub mod overrides;
pub mod pattern;
pub mod queue;
pub mod ramp;
pub mod streams;
pub mod trace;

pub use config::{ErrorModelConfig, ModelError};
pub use outcome::Outcome;

use mslink_link::Instant;
use rand::RngCore;

/// A channel error process.
pub trait ErrorModel: Send {
    /// The fate of a frame of `len` bytes sent at `now`.
    fn outcome(&mut self, now: Instant, len: usize, rng: &mut dyn RngCore) -> Outcome;
}

/// Several models applied to every frame; the outcomes combine with [`Outcome::combine`].
pub struct Stack {
    layers: Vec<Box<dyn ErrorModel>>,
}

impl Stack {
    /// A stack of `layers`, applied in order.
    pub fn new(layers: Vec<Box<dyn ErrorModel>>) -> Self {
        Stack { layers }
    }
}

impl ErrorModel for Stack {
    fn outcome(&mut self, now: Instant, len: usize, rng: &mut dyn RngCore) -> Outcome {
        self.layers.iter_mut().fold(Outcome::Delivered, |acc, m| {
            acc.combine(m.outcome(now, len, rng))
        })
    }
}

/// A parameter outside its range: which one, and what is allowed (and what was given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` {what}")]
pub struct ParamError {
    /// The parameter's key, as written in a configuration file.
    pub key: String,
    /// What is wrong and what was expected.
    pub what: String,
}

impl ParamError {
    /// The error for `key`.
    pub fn new(key: impl Into<String>, what: impl Into<String>) -> Self {
        ParamError {
            key: key.into(),
            what: what.into(),
        }
    }
}
