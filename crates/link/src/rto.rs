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
//!
//! [`RtoFlavour::Linux`] keeps the same SRTT but the variation term of Linux's
//! `tcp_rtt_estimator` (net/ipv4/tcp_input.c): the mean deviation gains 1/4 as in (2.3), but
//! only 1/32 of a sample that is below SRTT by more than the deviation (a falling RTT does not
//! raise the timeout); RTTVAR follows the largest deviation of the last round trip at once when
//! it grows, and falls a quarter of the way to it once per round trip (a round ends when the
//! cumulative ACK passes what was sent when the round began); the minimum RTO is a floor on
//! that variation term, not on the timeout, so `RTO = SRTT + max(4 mdev, min)`: at 200 ms RTT
//! and a 200 ms minimum the timeout is about 400 ms where RFC 6298 gives about 210 ms. The
//! first sample sets SRTT = R and the variation term to `max(2R, min)`. Rounds are counted
//! with [`RtoEstimator::sample_in_round`]; [`RtoEstimator::sample`] treats each sample as
//! inside the current round.

use crate::time::Duration;

/// RFC 6298 (2.3): alpha = 1/8, beta = 1/4, K = 4.
const K: u64 = 4;

/// Which rule turns RTT samples into a timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoFlavour {
    /// RFC 6298 §2: `max(min, SRTT + max(G, 4 RTTVAR))`.
    #[default]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` and `__tcp_set_rto`: `SRTT + max(4 mdev, min)`, the
    /// deviation tracked per round trip (module documentation).
    Linux,
}

/// Linux's variation state, in units of 4 mdev (the kernel's `mdev_us`, `mdev_max_us`,
/// `rttvar_us`) and the sequence number that ends the current round (`rtt_seq`).
#[derive(Clone, Copy, Debug, Default)]
struct LinuxVar {
    mdev: u64,
    mdev_max: u64,
    rttvar: u64,
    rtt_seq: u64,
}

/// RFC 6298 state: SRTT, RTTVAR, the backoff.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    flavour: RtoFlavour,
    linux: LinuxVar,
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
            flavour: RtoFlavour::Rfc6298,
            linux: LinuxVar::default(),
        }
    }

    /// The same estimator with the rule `flavour`.
    pub fn flavour(mut self, flavour: RtoFlavour) -> Self {
        self.flavour = flavour;
        self
    }

    /// Takes one RTT measurement `r` (never from a retransmitted segment).
    pub fn sample(&mut self, r: Duration) {
        let seq = self.linux.rtt_seq;
        self.sample_in_round(r, seq, seq);
    }

    /// Takes one RTT measurement `r` when the cumulative ACK is `una` and the next new
    /// byte is `nxt` (sequence numbers, for [`RtoFlavour::Linux`]'s rounds; ignored by
    /// RFC 6298).
    pub fn sample_in_round(&mut self, r: Duration, una: u64, nxt: u64) {
        if self.flavour == RtoFlavour::Linux {
            self.sample_linux(r.as_nanos(), una, nxt);
            self.backoff = 0;
            return;
        }
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

    /// `tcp_rtt_estimator` with the kernel's fixed-point scaling written out: `v` is 4 mdev.
    fn sample_linux(&mut self, r: u64, una: u64, nxt: u64) {
        let min = self.min.as_nanos();
        let l = &mut self.linux;
        let Some(s) = self.srtt else {
            self.srtt = Some(Duration::from_nanos(r));
            l.mdev = 2 * r;
            l.rttvar = l.mdev.max(min);
            l.mdev_max = l.rttvar;
            l.rtt_seq = nxt;
            self.rttvar = Duration::from_nanos(l.rttvar / K);
            return;
        };
        let s = s.as_nanos();
        // SRTT <- 7/8 SRTT + 1/8 R, as (2.3).
        self.srtt = Some(Duration::from_nanos((7 * s + r) / 8));
        let err = r.abs_diff(s);
        let quarter = l.mdev / 4;
        if r < s && err > quarter {
            // A sample below SRTT by more than mdev moves mdev by 1/32 of the excess.
            l.mdev += (err - quarter) / 8;
        } else if err >= quarter {
            l.mdev += err - quarter;
        } else {
            l.mdev -= quarter - err;
        }
        if l.mdev > l.mdev_max {
            l.mdev_max = l.mdev;
            l.rttvar = l.rttvar.max(l.mdev_max);
        }
        if una > l.rtt_seq {
            // A round trip ended: RTTVAR falls a quarter of the way to its largest deviation.
            if l.mdev_max < l.rttvar {
                l.rttvar -= (l.rttvar - l.mdev_max) / 4;
            }
            l.rtt_seq = nxt;
            l.mdev_max = min;
        }
        self.rttvar = Duration::from_nanos(l.rttvar / K);
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
        if let (RtoFlavour::Linux, Some(s)) = (self.flavour, self.srtt) {
            return Duration::from_nanos(s.as_nanos() + self.linux.rttvar);
        }
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

    fn linux(min: u64) -> RtoEstimator {
        RtoEstimator::new(ms(1), ms(min), ms(120_000), ms(1000)).flavour(RtoFlavour::Linux)
    }

    #[test]
    fn linux_floors_the_variation_not_the_timeout() {
        let mut e = linux(200);
        // First sample: SRTT = R, 4 mdev = 2R, so RTO = 3R when 2R is above the minimum.
        e.sample_in_round(ms(200), 0, 10);
        assert_eq!(e.rto(), ms(600));
        // Steady 200 ms samples, one per round: the variation term falls a quarter of the way
        // to the minimum each round and the timeout settles at SRTT + min = 400 ms, where
        // RFC 6298 settles at max(min, SRTT + G) = 201 ms.
        let mut rfc = RtoEstimator::new(ms(1), ms(200), ms(120_000), ms(1000));
        for round in 1..60 {
            e.sample_in_round(ms(200), 10 * round + 1, 10 * (round + 1));
            rfc.sample(ms(200));
        }
        let rto = e.rto().as_nanos();
        assert!((400_000_000..400_001_000).contains(&rto), "{rto}");
        assert_eq!(rfc.rto(), ms(201));
        // A small first sample: the minimum rules (10 ms + max(20 ms, 200 ms)).
        let mut e = linux(200);
        e.sample_in_round(ms(10), 0, 1);
        assert_eq!(e.rto(), ms(210));
    }

    #[test]
    fn linux_variation_falls_once_per_round_and_a_falling_rtt_barely_raises_it() {
        let mut e = linux(0);
        e.sample_in_round(ms(100), 0, 10); // 4 mdev = 200 ms, RTO 300 ms
                                           // Samples inside the round (the cumulative ACK has not passed 10): 4 mdev shrinks
                                           // but RTTVAR holds at the round's largest, so the timeout moves only with SRTT.
        for _ in 0..5 {
            e.sample_in_round(ms(100), 5, 20);
        }
        assert_eq!(e.rto(), ms(300));
        // The first round ends: its largest deviation was the first sample's, so RTTVAR
        // holds; the next round's largest is the current, small one, and at its end RTTVAR
        // falls a quarter of the way to it.
        e.sample_in_round(ms(100), 11, 20);
        assert_eq!(e.rto(), ms(300));
        e.sample_in_round(ms(100), 21, 30);
        let v = e.rttvar().as_nanos() * 4;
        assert!(v < 200_000_000 && v > 150_000_000, "{v}");
        // A sample 80 ms below SRTT: 4 mdev moves by 1/8 of the excess over mdev, where
        // RFC 6298 would add a quarter of the whole 80 ms to RTTVAR.
        let before = e.rto();
        e.sample_in_round(ms(20), 22, 40);
        assert!(e.rto() <= before, "{:?} > {before:?}", e.rto());
        // Backoff as RFC 6298 (5.5); a sample clears it.
        let b = e.rto();
        e.backoff();
        assert_eq!(e.rto().as_nanos(), b.as_nanos() * 2);
        e.sample_in_round(ms(20), 23, 40);
        assert!(e.rto().as_nanos() < b.as_nanos() * 2);
    }
}
