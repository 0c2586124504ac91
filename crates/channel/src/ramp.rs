//! A ramp of loss (003 §7, Fig. 12): "a smoothly increasing frequency of packet loss, ranging
//! from 10% to 90%, surrounded by periods without losses".
//!
//! Contract. The loss probability is a function of time only: zero before `start`; rising
//! linearly from `low` to `high` over `rise`; falling linearly from `high` back to `low` over
//! `fall`; zero afterwards. With a positive `period` the whole shape repeats every `period`
//! (measured from time zero). Each frame is lost independently with the probability at the
//! instant it is sent, drawn from the generator the driver passes in (so the model is
//! deterministic for a seed). Because the probability depends on time, not on how many frames
//! the station sent, a scheduler that gives a station more or fewer slots does not move the
//! burst (location-dependent errors, 003 §5.2, assigned per station by the driver).

use crate::{ErrorModel, Outcome};
use mslink_link::{Duration, Instant};
use rand::{Rng, RngCore};

/// Parameters of a [`Ramp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampShape {
    /// Start of the ramp (end of the first clean period).
    pub start: Duration,
    /// Duration of the rise from `low` to `high`.
    pub rise: Duration,
    /// Duration of the fall from `high` to `low`.
    pub fall: Duration,
    /// Loss probability at the ends of the ramp (003 Fig. 12: 10%).
    pub low: f64,
    /// Loss probability at its peak (003 Fig. 12: 90%).
    pub high: f64,
    /// Repetition period; zero for a single ramp.
    pub period: Duration,
}

impl RampShape {
    /// Loss probability at `now`.
    pub fn loss_at(&self, now: Instant) -> f64 {
        let mut t = now.as_nanos();
        if self.period > Duration::ZERO {
            t %= self.period.as_nanos();
        }
        let (start, rise, fall) = (
            self.start.as_nanos(),
            self.rise.as_nanos(),
            self.fall.as_nanos(),
        );
        if t < start {
            return 0.0;
        }
        let into = t - start;
        let span = self.high - self.low;
        let p = if into < rise {
            self.low + span * into as f64 / rise as f64
        } else if into - rise < fall {
            self.high - span * (into - rise) as f64 / fall as f64
        } else {
            return 0.0;
        };
        p.clamp(0.0, 1.0)
    }
}

/// Independent loss whose probability follows a [`RampShape`] in time.
#[derive(Clone, Debug)]
pub struct Ramp {
    shape: RampShape,
}

impl Ramp {
    /// A ramp model.
    pub fn new(shape: RampShape) -> Self {
        Ramp { shape }
    }

    /// Its shape.
    pub fn shape(&self) -> &RampShape {
        &self.shape
    }
}

impl ErrorModel for Ramp {
    fn outcome(&mut self, now: Instant, _len: usize, rng: &mut dyn RngCore) -> Outcome {
        let p = self.shape.loss_at(now);
        if p > 0.0 && rng.gen_bool(p) {
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

    fn fig12() -> RampShape {
        RampShape {
            start: Duration::from_secs(10),
            rise: Duration::from_secs(40),
            fall: Duration::from_secs(40),
            low: 0.1,
            high: 0.9,
            period: Duration::ZERO,
        }
    }

    fn at(s: f64) -> Instant {
        Instant::ZERO + Duration::from_nanos((s * 1e9) as u64)
    }

    #[test]
    fn shape_is_clean_then_linear_up_and_down_then_clean() {
        let r = fig12();
        assert_eq!(r.loss_at(at(0.0)), 0.0);
        assert_eq!(r.loss_at(at(9.999)), 0.0);
        assert!((r.loss_at(at(10.0)) - 0.1).abs() < 1e-12);
        // Halfway up the rise: 0.1 + 0.8 / 2.
        assert!((r.loss_at(at(30.0)) - 0.5).abs() < 1e-9);
        assert!((r.loss_at(at(50.0)) - 0.9).abs() < 1e-9);
        // A quarter into the fall: 0.9 - 0.8 / 4.
        assert!((r.loss_at(at(60.0)) - 0.7).abs() < 1e-9);
        assert!((r.loss_at(at(89.999)) - 0.1).abs() < 1e-3);
        assert_eq!(r.loss_at(at(90.0)), 0.0);
        assert_eq!(r.loss_at(at(1000.0)), 0.0);
    }

    #[test]
    fn periodic_shape_repeats() {
        let r = RampShape {
            period: Duration::from_secs(100),
            ..fig12()
        };
        for s in [5.0, 30.0, 60.0, 95.0] {
            assert_eq!(r.loss_at(at(s)), r.loss_at(at(s + 300.0)), "{s}");
        }
    }

    #[test]
    fn measured_loss_follows_the_ramp() {
        // One frame every 10 ms; compare the lost fraction per 5 s with the mean of the
        // linear probability over that stretch (the probability at its midpoint).
        let mut m = Ramp::new(fig12());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let mut lost = [0u32; 20];
        for i in 0..10_000u64 {
            let now = Instant::ZERO + Duration::from_millis(10 * i);
            if m.outcome(now, 1000, &mut rng) == Outcome::Lost {
                lost[(i / 500) as usize] += 1;
            }
        }
        for (k, &l) in lost.iter().enumerate() {
            let mid = 5.0 * k as f64 + 2.5;
            let want = if (10.0..50.0).contains(&mid) {
                0.1 + 0.8 * (mid - 10.0) / 40.0
            } else if (50.0..90.0).contains(&mid) {
                0.9 - 0.8 * (mid - 50.0) / 40.0
            } else {
                0.0
            };
            let got = f64::from(l) / 500.0;
            // 500 Bernoulli draws: standard deviation at most sqrt(0.25 / 500) = 0.022.
            assert!((got - want).abs() < 0.09, "bin {k}: {got} vs {want}");
        }
    }
}
