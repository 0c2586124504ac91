//! Per-queue error-rate estimators for ELF (003 §6: `E_i`, learnt from the transmit outcomes
//! the MAC reports back).
//!
//! Contract: an estimator turns the stream of outcomes (delivered or not) of each queue into
//! an estimate `E_i` in `[0, 1]`; a queue with no outcome yet has `E_i = 0` (error-free until
//! shown otherwise). Two kinds: an exponentially weighted moving average over outcomes, and the
//! loss fraction over a sliding window of the last `N` outcomes (over fewer while fewer have been
//! seen). Recording is O(1) and allocation-free.

use super::SchedConfigError;

/// Default EWMA gain: about a thousand outcomes of memory. 003 gives no value. A flow whose
/// weight is `1 - sum(reserved weights)` amplifies estimator noise: with a gain of 0.01 the
/// best-effort flows of the Table 2 setup ran 3.8% above their allocation, with 1e-3 within
/// 0.5% (tests/sched_shares.rs). The price is reaction time: about a thousand frames (1.6 s at
/// 5 Mbit/s with 1000-byte frames) to follow an error burst; lower it per link for faster
/// links or burstier channels.
pub const DEFAULT_EWMA_ALPHA: f64 = 1e-3;
/// Largest window accepted (outcomes per queue).
pub const MAX_WINDOW: u32 = 1 << 24;

/// How ELF estimates each queue's error rate.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ErrorEstimator {
    /// `E <- (1 - g) E + g * [lost]` at each outcome, with gain `g = max(alpha, 1/n)` after
    /// `n` outcomes: the running mean at first, then an EWMA of memory about `1/alpha`.
    Ewma {
        /// Gain in `(0, 1]`.
        alpha: f64,
    },
    /// Loss fraction among the last `outcomes` outcomes.
    Window {
        /// Window length `N` (1..=[`MAX_WINDOW`]).
        outcomes: u32,
    },
}

impl Default for ErrorEstimator {
    fn default() -> Self {
        ErrorEstimator::Ewma {
            alpha: DEFAULT_EWMA_ALPHA,
        }
    }
}

impl ErrorEstimator {
    /// Checks the parameters (field names as in an `estimator` table).
    pub fn validate(&self) -> Result<(), SchedConfigError> {
        match *self {
            ErrorEstimator::Ewma { alpha } => {
                if !(alpha > 0.0 && alpha <= 1.0) {
                    return Err(SchedConfigError::BadValue {
                        field: "estimator.alpha".into(),
                        value: alpha,
                        expected: "a gain in (0, 1]",
                    });
                }
            }
            ErrorEstimator::Window { outcomes } => {
                if outcomes == 0 || outcomes > MAX_WINDOW {
                    return Err(SchedConfigError::BadValue {
                        field: "estimator.outcomes".into(),
                        value: f64::from(outcomes),
                        expected: "a window of 1..=16777216 outcomes",
                    });
                }
            }
        }
        Ok(())
    }
}

/// Estimator state for `n` queues.
#[derive(Clone, Debug)]
pub(crate) enum Estimates {
    Ewma {
        alpha: f64,
        e: Vec<f64>,
        /// Outcomes seen per queue (saturating): the gain is `max(alpha, 1 / seen)`.
        seen: Vec<u32>,
    },
    Window {
        /// Window length `N`.
        n: u32,
        /// 64-bit words per queue.
        words: usize,
        /// Ring of loss bits, `words` per queue.
        bits: Vec<u64>,
        /// Next ring position per queue.
        pos: Vec<u32>,
        /// Outcomes seen per queue, capped at `N`.
        seen: Vec<u32>,
        /// Losses among them.
        lost: Vec<u32>,
    },
}

impl Estimates {
    /// Fresh state (every `E_i = 0`) for a validated estimator.
    pub(crate) fn new(kind: &ErrorEstimator, queues: usize) -> Self {
        match *kind {
            ErrorEstimator::Ewma { alpha } => Estimates::Ewma {
                alpha,
                e: vec![0.0; queues],
                seen: vec![0; queues],
            },
            ErrorEstimator::Window { outcomes } => {
                let words = (outcomes as usize).div_ceil(64);
                Estimates::Window {
                    n: outcomes,
                    words,
                    bits: vec![0; words * queues],
                    pos: vec![0; queues],
                    seen: vec![0; queues],
                    lost: vec![0; queues],
                }
            }
        }
    }

    /// Records one outcome of queue `q` and returns the new estimate `E_q`.
    #[inline]
    pub(crate) fn record(&mut self, q: usize, delivered: bool) -> f64 {
        match self {
            Estimates::Ewma { alpha, e, seen } => {
                let x = if delivered { 0.0 } else { 1.0 };
                // The running mean until a queue has 1/alpha outcomes, the EWMA after: a flow
                // that sends rarely (a low-rate reservation) learns its error rate from its
                // first outcomes instead of creeping up from zero over thousands of them.
                seen[q] = seen[q].saturating_add(1);
                let gain = alpha.max(1.0 / f64::from(seen[q]));
                e[q] += gain * (x - e[q]);
                e[q] = e[q].clamp(0.0, 1.0);
                e[q]
            }
            Estimates::Window {
                n,
                words,
                bits,
                pos,
                seen,
                lost,
            } => {
                let p = pos[q] as usize;
                let word = &mut bits[q * *words + p / 64];
                let mask = 1u64 << (p % 64);
                if seen[q] == *n {
                    // The oldest outcome leaves the window.
                    if *word & mask != 0 {
                        lost[q] -= 1;
                    }
                } else {
                    seen[q] += 1;
                }
                if delivered {
                    *word &= !mask;
                } else {
                    *word |= mask;
                    lost[q] += 1;
                }
                pos[q] = if p as u32 + 1 == *n { 0 } else { p as u32 + 1 };
                f64::from(lost[q]) / f64::from(seen[q])
            }
        }
    }

    /// Records an outcome of queue `q` that lost the share `lost` (in `[0, 1]`) of its air
    /// time, and returns the new estimate: the EWMA averages it as it is; the window, which
    /// keeps one bit per outcome, records a loss when `lost > 0.5`.
    #[inline]
    pub(crate) fn record_share(&mut self, q: usize, lost: f64) -> f64 {
        match self {
            Estimates::Ewma { alpha, e, seen } => {
                seen[q] = seen[q].saturating_add(1);
                let gain = alpha.max(1.0 / f64::from(seen[q]));
                e[q] += gain * (lost.clamp(0.0, 1.0) - e[q]);
                e[q] = e[q].clamp(0.0, 1.0);
                e[q]
            }
            Estimates::Window { .. } => self.record(q, lost <= 0.5),
        }
    }

    /// Current estimate `E_q` (the scheduler keeps its own copy; tests read it here).
    #[cfg(test)]
    pub(crate) fn get(&self, q: usize) -> f64 {
        match self {
            Estimates::Ewma { e, .. } => e[q],
            Estimates::Window { seen, lost, .. } => {
                if seen[q] == 0 {
                    0.0
                } else {
                    f64::from(lost[q]) / f64::from(seen[q])
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    proptest! {
        #[test]
        fn window_is_the_loss_fraction_of_the_last_n(
            n in 1u32..200,
            outcomes in proptest::collection::vec((0usize..3, any::<bool>()), 0..600),
        ) {
            let mut est = Estimates::new(&ErrorEstimator::Window { outcomes: n }, 3);
            let mut model: Vec<VecDeque<bool>> = vec![VecDeque::new(); 3];
            for (q, d) in outcomes {
                model[q].push_back(d);
                if model[q].len() > n as usize {
                    model[q].pop_front();
                }
                let lost = model[q].iter().filter(|d| !**d).count() as f64;
                let want = lost / model[q].len() as f64;
                prop_assert_eq!(est.record(q, d), want);
                prop_assert_eq!(est.get(q), want);
            }
        }

        #[test]
        fn ewma_stays_in_range_and_tracks(alpha in 0.001f64..1.0, outcomes in proptest::collection::vec(any::<bool>(), 1..300)) {
            let mut est = Estimates::new(&ErrorEstimator::Ewma { alpha }, 1);
            let mut e = 0.0f64;
            for (i, d) in outcomes.into_iter().enumerate() {
                // The running mean over the first 1/alpha outcomes, then the EWMA.
                let g = alpha.max(1.0 / (i + 1) as f64);
                e = (1.0 - g) * e + g * if d { 0.0 } else { 1.0 };
                let got = est.record(0, d);
                prop_assert!((0.0..=1.0).contains(&got));
                prop_assert!((got - e).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn shares_of_air_time_average_as_they_are() {
        // 003 §6.2: 1 - E is the share of air time that delivers payload. Frames that spend a
        // fifth of their air on coding and never fail: E = 0.2, as for one frame lost in five.
        let mut coded = Estimates::new(&ErrorEstimator::Ewma { alpha: 0.01 }, 1);
        let mut lossy = Estimates::new(&ErrorEstimator::Ewma { alpha: 0.01 }, 1);
        let (mut a, mut b) = (0.0, 0.0);
        for i in 0..5000 {
            a = coded.record_share(0, 0.2);
            b = lossy.record(0, i % 5 != 0);
        }
        assert!((a - 0.2).abs() < 1e-9, "{a}");
        assert!((b - 0.2).abs() < 0.02, "{b}");
        // Whole outcomes agree with `record`.
        let mut x = Estimates::new(&ErrorEstimator::default(), 1);
        let mut y = Estimates::new(&ErrorEstimator::default(), 1);
        for d in [true, false, false, true] {
            assert_eq!(x.record_share(0, if d { 0.0 } else { 1.0 }), y.record(0, d));
        }
        // The window keeps one bit per outcome.
        let mut w = Estimates::new(&ErrorEstimator::Window { outcomes: 4 }, 1);
        for lost in [0.2, 0.9, 0.4, 0.6] {
            w.record_share(0, lost);
        }
        assert_eq!(w.get(0), 0.5);
    }

    #[test]
    fn unseen_queues_are_error_free() {
        for kind in [
            ErrorEstimator::default(),
            ErrorEstimator::Window { outcomes: 10 },
        ] {
            let est = Estimates::new(&kind, 4);
            assert!((0..4).all(|q| est.get(q) == 0.0));
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = ErrorEstimator::Ewma { alpha: 0.0 }.validate().unwrap_err();
        assert!(e.to_string().contains("estimator.alpha"), "{e}");
        let e = ErrorEstimator::Ewma { alpha: f64::NAN }
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("estimator.alpha"), "{e}");
        let e = ErrorEstimator::Window { outcomes: 0 }
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("estimator.outcomes"), "{e}");
    }
}
