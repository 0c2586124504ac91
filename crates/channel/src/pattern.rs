//! Deterministic loss patterns, counted in frames (003 §3).
//!
//! Contract. Frames are numbered from zero; in every cycle of `good + bad` frames, the first
//! `good` arrive and the next `bad` are lost, shifted by `offset` frames. 003 Fig. 1 drops one
//! burst of 1-8 frames in every hundred (`good = 100 - k, bad = k`); Fig. 3 drops five-frame
//! bursts from windows of 6 to 100; §3.2.3's competing-retransmission test is 400 good then 100
//! bad. The loss rate is exactly `bad / (good + bad)` over whole cycles.
//!
//! 003 drops *data* packets in its patterns ("TCP versus data-packet loss"). A link-layer
//! service also sends small control frames (acknowledgements, NACKs, keepalives) in the
//! pattern's direction; with `min_bytes` set, frames shorter than it are delivered and do not
//! advance the count, so the pattern meets data frames only. Otherwise a scheme could burn
//! the bad slots with tiny probes, or lose its good ones to them, and the loss rate would no
//! longer say how much of the link's capacity is left.

use crate::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::RngCore;

/// A periodic good/bad frame pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    good: u64,
    bad: u64,
    frame: u64,
    min_bytes: usize,
}

impl Pattern {
    /// `good` frames delivered then `bad` lost, repeating, starting `offset` frames in.
    pub fn new(good: u64, bad: u64, offset: u64) -> Self {
        Pattern {
            good,
            bad,
            frame: offset,
            min_bytes: 0,
        }
    }

    /// Frames shorter than `min_bytes` pass untouched and uncounted (module docs).
    pub fn counting_from(mut self, min_bytes: usize) -> Self {
        self.min_bytes = min_bytes;
        self
    }
}

impl ErrorModel for Pattern {
    fn outcome(&mut self, _now: Instant, len: usize, _rng: &mut dyn RngCore) -> Outcome {
        if len < self.min_bytes {
            return Outcome::Delivered;
        }
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

    #[test]
    fn short_frames_neither_count_nor_get_lost() {
        let mut m = Pattern::new(2, 1, 0).counting_from(100);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut seen = Vec::new();
        for len in [1500, 40, 1500, 40, 40, 1500, 1500, 99, 100] {
            seen.push(m.outcome(Instant::ZERO, len, &mut rng) == Outcome::Lost);
        }
        // Data frames 0, 1, 2, 3, 4 meet good, good, bad, good, good; short ones pass.
        assert_eq!(
            seen,
            [false, false, false, false, false, true, false, false, false]
        );
    }
}
