//! Deterministic loss patterns, counted in frames (003 §3).
//!
//! Contract. Frames are numbered from zero; in every cycle of `good + bad` frames, the first
//! `good` arrive and the next `bad` are lost, shifted by `offset` frames. 003 Fig. 1 drops one
//! burst of 1-8 frames in every hundred (`good = 100 - k, bad = k`); Fig. 3 drops five-frame
//! bursts from windows of 6 to 100; §3.2.3's competing-retransmission test is 400 good then 100
//! bad. The loss rate is exactly `bad / (good + bad)` over whole cycles.

use crate::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::RngCore;

/// A periodic good/bad frame pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    good: u64,
    bad: u64,
    frame: u64,
}

impl Pattern {
    /// `good` frames delivered then `bad` lost, repeating, starting `offset` frames in.
    pub fn new(good: u64, bad: u64, offset: u64) -> Self {
        Pattern {
            good,
            bad,
            frame: offset,
        }
    }
}

impl ErrorModel for Pattern {
    fn outcome(&mut self, _now: Instant, _len: usize, _rng: &mut dyn RngCore) -> Outcome {
        let cycle = self.good + self.bad;
        let lost = cycle > 0 && self.frame % cycle >= self.good;
        self.frame += 1;
        if lost {
            Outcome::Lost
        } else {
            Outcome::Delivered
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn four_hundred_good_one_hundred_bad() {
        let mut m = Pattern::new(400, 100, 0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let lost: Vec<bool> = (0..1000)
            .map(|_| m.outcome(Instant::ZERO, 1, &mut rng) == Outcome::Lost)
            .collect();
        assert!(lost[..400].iter().all(|&l| !l));
        assert!(lost[400..500].iter().all(|&l| l));
        assert!(!lost[500]);
        assert_eq!(lost.iter().filter(|&&l| l).count(), 200);
    }
}
