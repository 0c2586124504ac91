//! The Gilbert-Elliott two-state burst model, stepped once per frame.
//!
//! Contract. The channel is Good or Bad; a frame sent in Good is lost with probability
//! `loss_good`, in Bad with `loss_bad`; after each frame the state moves Good->Bad with
//! probability `p` and Bad->Good with `r`. The first state is drawn from the stationary
//! distribution (Bad with probability p/(p+r)), so the long-run loss rate is
//! `(r * loss_good + p * loss_bad) / (p + r)` from the first frame on; mean burst length in Bad
//! is `1/r` frames.

use crate::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::{Rng, RngCore};

/// Gilbert-Elliott parameters, written as `p` and `r`, or as the average loss `loss` and the mean burst `burst_frames`
/// (`crate::burst_spec`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(
    try_from = "crate::burst_spec::GeSpec",
    into = "crate::burst_spec::GeSpec"
)]
pub struct GeParams {
    /// Probability of moving Good -> Bad after a frame.
    pub p: f64,
    /// Probability of moving Bad -> Good after a frame.
    pub r: f64,
    /// Frame loss probability in Good.
    pub loss_good: f64,
    /// Frame loss probability in Bad.
    pub loss_bad: f64,
    /// The average loss and mean burst (frames) it was given as, if it was
    /// (`crate::burst_spec`); written back that way.
    pub written: Option<crate::burst_spec::LossBurst>,
}

impl GeParams {
    /// The long-run frame loss rate.
    pub fn stationary_loss(&self) -> f64 {
        if self.p + self.r == 0.0 {
            return self.loss_good;
        }
        (self.r * self.loss_good + self.p * self.loss_bad) / (self.p + self.r)
    }
}

/// A Gilbert-Elliott channel.
#[derive(Clone, Debug)]
pub struct GilbertElliott {
    params: GeParams,
    bad: Option<bool>,
}

impl GilbertElliott {
    /// A channel with these parameters (each a probability in [0, 1]).
    pub fn new(params: GeParams) -> Self {
        GilbertElliott { params, bad: None }
    }
}

impl ErrorModel for GilbertElliott {
    fn outcome(&mut self, _now: Instant, _len: usize, rng: &mut dyn RngCore) -> Outcome {
        let GeParams {
            p,
            r,
            loss_good,
            loss_bad,
            ..
        } = self.params;
        let bad = match self.bad {
            Some(b) => b,
            None => p + r > 0.0 && rng.gen_bool(p / (p + r)),
        };
        let lost = rng.gen_bool(if bad { loss_bad } else { loss_good });
        self.bad = Some(if bad {
            !rng.gen_bool(r)
        } else {
            rng.gen_bool(p)
        });
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
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn long_run_loss_matches_closed_form() {
        let params = GeParams {
            p: 0.01,
            r: 0.2,
            loss_good: 0.001,
            loss_bad: 0.8,
            written: None,
        };
        let mut m = GilbertElliott::new(params);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let n = 1_000_000;
        let outcomes: Vec<bool> = (0..n)
            .map(|_| m.outcome(Instant::ZERO, 100, &mut rng) == Outcome::Lost)
            .collect();
        let rate = outcomes.iter().filter(|&&l| l).count() as f64 / n as f64;
        // Closed form: (0.2 * 0.001 + 0.01 * 0.8) / 0.21 = 0.0390476...
        let want = (0.2 * 0.001 + 0.01 * 0.8) / 0.21;
        assert!((rate - want).abs() / want < 0.05, "{rate} vs {want}");
        assert!((params.stationary_loss() - want).abs() < 1e-12);
    }
}
