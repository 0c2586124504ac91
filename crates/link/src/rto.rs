//! The retransmission timeout estimator of RFC 6298, with a clock granularity: one
//! implementation for the simulator's TCP, the Reed-Solomon service's retransmissions and the
//! NACK repeat interval of the selective-repeat and RLP receivers.
//!
//! Contract. [`RtoEstimator::sample`] takes one RTT measurement (the caller applies Karn's
//! rule, RFC 6298 §3: never a sample from a retransmitted segment) and clears any backoff;
//! [`RtoEstimator::backoff`] doubles the timeout after an expiry (RFC 6298 (5.5));
//! [`RtoEstimator::rto`] is the current timeout: `SRTT + max(G, 4 RTTVAR)` (2.2/2.3), rounded
//! up to a whole number of clock ticks G (a BSD-style timer that only fires on its ticks, as
//! 004's 500 ms timers did), at least the minimum RTO (2.4), times the backoff, at most the
//! maximum (2.5).

use crate::time::Duration;

/// RFC 6298 (2.3): alpha = 1/8, beta = 1/4, K = 4.
const K: u64 = 4;

/// RFC 6298 state: SRTT, RTTVAR, the backoff.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    granularity: Duration,
    min: Duration,
    max: Duration,
    initial: Duration,
    backoff: u32,
}

impl RtoEstimator {
    /// An estimator with no sample yet.
    pub fn new(granularity: Duration, min: Duration, max: Duration, initial: Duration) -> Self {
        RtoEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            granularity,
            min,
            max,
            initial,
            backoff: 0,
        }
    }

    /// Takes one RTT measurement `r` (never from a retransmitted segment).
    pub fn sample(&mut self, r: Duration) {
        let r = r.as_nanos();
        match self.srtt {
            // (2.2) SRTT <- R, RTTVAR <- R/2.
            None => {
                self.srtt = Some(Duration::from_nanos(r));
                self.rttvar = Duration::from_nanos(r / 2);
            }
            // (2.3) RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'.
            Some(s) => {
                let s = s.as_nanos();
                let var = self.rttvar.as_nanos();
                self.rttvar = Duration::from_nanos((3 * var + s.abs_diff(r)) / 4);
                self.srtt = Some(Duration::from_nanos((7 * s + r) / 8));
            }
        }
        // Karn's algorithm (RFC 6298 §5 note, (5.7)): a valid sample ends the backoff.
        self.backoff = 0;
    }

    /// Doubles the timeout after it expired (RFC 6298 (5.5)).
    pub fn backoff(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }

    /// Starts over with `initial` as the timeout before the first sample and no backoff, as
    /// RFC 6298 (5.7) asks when the SYN was retransmitted (3 s) and data transmission begins.
    pub fn reinitialize(&mut self, initial: Duration) {
        self.initial = initial;
        self.backoff = 0;
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The timeout before backoff.
    pub fn base(&self) -> Duration {
        let raw = match self.srtt {
            None => self.initial.as_nanos(),
            Some(s) => s.as_nanos() + (K * self.rttvar.as_nanos()).max(self.granularity.as_nanos()),
        };
        let g = self.granularity.as_nanos();
        let ticks = if g > 0 { raw.div_ceil(g) * g } else { raw };
        Duration::from_nanos(ticks.max(self.min.as_nanos()))
    }

    /// The current timeout: the base times 2^backoff, at most the maximum.
    pub fn rto(&self) -> Duration {
        let b = self.base().as_nanos();
        let scaled = b
            .checked_shl(self.backoff)
            .filter(|x| x >> self.backoff == b);
        Duration::from_nanos(scaled.unwrap_or(u64::MAX).min(self.max.as_nanos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn rfc6298_arithmetic_with_a_perfect_clock() {
        let mut e = RtoEstimator::new(Duration::ZERO, Duration::ZERO, ms(60_000), ms(1000));
        assert_eq!(e.rto(), ms(1000), "(2.1) initial RTO");
        e.sample(ms(100));
        // (2.2): SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300.
        assert_eq!(e.rto(), ms(300));
        e.sample(ms(200));
        // (2.3): RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5.
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.rto(), Duration::from_micros(112_500 + 250_000));
    }

    #[test]
    fn granularity_minimum_and_backoff() {
        // 004: 500 ms ticks; RFC 6298 (2.4): 1 s minimum.
        let mut e = RtoEstimator::new(ms(500), ms(1000), ms(64_000), ms(1000));
        e.sample(ms(10));
        // 10 + max(500, 20) = 510 ms -> two ticks = 1 s, also the minimum.
        assert_eq!(e.rto(), ms(1000));
        e.backoff();
        assert_eq!(e.rto(), ms(2000));
        e.backoff();
        e.backoff();
        assert_eq!(e.rto(), ms(8000));
        for _ in 0..40 {
            e.backoff();
        }
        assert_eq!(e.rto(), ms(64_000), "(2.5) maximum");
        // Karn: a valid sample after the retransmission clears the backoff.
        e.sample(ms(10));
        assert_eq!(e.rto(), ms(1000));
        // A large variation: 10 ms samples then one of 800 ms.
        e.sample(ms(800));
        let (s, v) = (e.srtt().unwrap().as_nanos(), e.rttvar().as_nanos());
        let want = (s + 4 * v).div_ceil(500_000_000) * 500_000_000;
        assert_eq!(e.rto().as_nanos(), want.max(1_000_000_000));
    }
}
