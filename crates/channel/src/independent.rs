//! Independent frame loss: each frame is lost with probability `p`, whatever came before
//! (004 §III.A: HSCSD's bit interleaving randomises losses, modelled this way at 1-10%).

use crate::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::{Rng, RngCore};

/// Loses each frame independently with probability `p`.
#[derive(Clone, Debug)]
pub struct Independent {
    p: f64,
}

impl Independent {
    /// A model losing frames with probability `p` (clamped to [0, 1]).
    pub fn new(p: f64) -> Self {
        Independent {
            p: p.clamp(0.0, 1.0),
        }
    }
}

impl ErrorModel for Independent {
    fn outcome(&mut self, _now: Instant, _len: usize, rng: &mut dyn RngCore) -> Outcome {
        if rng.gen_bool(self.p) {
            Outcome::Lost
        } else {
            Outcome::Delivered
        }
    }
}
