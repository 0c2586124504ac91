//! HyStart (Ha and Rhee, "Taming the elephants: new TCP slow start", Computer Networks 55(9),
//! 2011) as Linux's CUBIC runs it: slow start ends before the first loss when the bottleneck
//! queue starts to grow.
//!
//! Contract. [`HyStart`] watches the ACKs of a slow start, one round trip at a time (a round
//! ends when the cumulative ACK passes what had been sent when it began), and says when to
//! leave it: [`HyStart::on_ack`] returns `true` once, and the window controller then sets
//! ssthresh to the current window (so congestion avoidance takes over without a loss). It
//! counts rounds from the slow start's first ACK, so that each begins with the first ACK of a
//! flight, but judges only while the window is at least [`LOW_WINDOW`] segments, and has two
//! detectors, as `tcp_cubic.c` (`hystart_update`, `hystart_detect = 3`):
//! - **ACK train**: ACKs arriving at most [`ACK_DELTA`] apart since the round's first ACK,
//!   for longer than half of `delay_min` plus [`ACK_DELAY`] (the kernel's allowance for a
//!   burst's serialisation, at most 1 ms; 1 ms below 2 Gbit/s): the window's worth of ACKs
//!   spans half the base RTT, so the window has reached the path's capacity.
//! - **Delay increase**: the smallest of the round's first [`MIN_SAMPLES`] RTT samples
//!   exceeds `delay_min` by `clamp(delay_min / 8, 4 ms, 16 ms)`: a queue has built.
//!
//! `delay_min` is the smallest RTT sample the controller has seen. A timeout starts it over
//! ([`HyStart::restart`], as Linux's `bictcp_reset` on entering the Loss state); a fast
//! recovery does not. Sans-IO: time comes in as `now`.

use mslink_link::{Duration, Instant};

/// `hystart_low_window`: no detection below 16 segments.
pub const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us`: ACKs at most 2 ms apart form a train.
pub const ACK_DELTA: Duration = Duration::from_millis(2);
/// `hystart_ack_delay()`: 4 GSO bursts (64 KB) at the pacing rate, at most 1 ms; the
/// pacing rate (twice cwnd / SRTT in slow start) is below 2 Gbit/s on every link here.
pub const ACK_DELAY: Duration = Duration::from_millis(1);
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay detector judges.
pub const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX`: the bounds of the delay threshold.
pub const DELAY_THRESH: (Duration, Duration) =
    (Duration::from_millis(4), Duration::from_millis(16));

/// The HyStart state of one sender.
#[derive(Clone, Debug, Default)]
pub struct HyStart {
    /// The exit was found; nothing more until a restart.
    found: bool,
    /// The first ACK of the current round, and the last ACK of its train.
    round_start: Option<Instant>,
    last_ack: Option<Instant>,
    /// The round ends when the cumulative ACK passes this (`end_seq`).
    end_seq: u64,
    /// The smallest RTT sample of the round, and how many the round has had.
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

impl HyStart {
    /// Looks for the exit again from the next ACK (after a timeout).
    pub fn restart(&mut self) {
        *self = HyStart::default();
    }

    /// Whether an exit was found since the last restart.
    pub fn found(&self) -> bool {
        self.found
    }

    /// One ACK in slow start: cumulative ACK `una`, highest sequence sent `snd_max`, window
    /// `cwnd_segs` segments, its RTT sample `delay` and the smallest sample so far
    /// `delay_min`. Returns `true` when slow start should end now.
    pub fn on_ack(
        &mut self,
        now: Instant,
        una: u64,
        snd_max: u64,
        cwnd_segs: u64,
        delay: Duration,
        delay_min: Duration,
    ) -> bool {
        if self.found {
            return false;
        }
        // `hystart_update`: the round is reset before the window is checked, so rounds are
        // counted from the slow start's first ACK and each begins with the first ACK of a
        // flight (counted only from LOW_WINDOW, they would begin where that window happened
        // to be reached, in the middle of a flight's ACKs, for ever after).
        if self.round_start.is_none() || una > self.end_seq {
            // A new round: its first ACK starts the train.
            self.round_start = Some(now);
            self.last_ack = Some(now);
            self.end_seq = snd_max;
            self.curr_rtt = None;
            self.sample_cnt = 0;
        }
        if cwnd_segs < LOW_WINDOW {
            return false;
        }
        if let (Some(start), Some(last)) = (self.round_start, self.last_ack) {
            if now.saturating_since(last) <= ACK_DELTA {
                self.last_ack = Some(now);
                let threshold = (delay_min.as_nanos() + ACK_DELAY.as_nanos()) / 2;
                if now.saturating_since(start).as_nanos() > threshold {
                    self.found = true;
                }
            }
        }
        self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let eighth = Duration::from_nanos(delay_min.as_nanos() / 8);
            let thresh = eighth.clamp(DELAY_THRESH.0, DELAY_THRESH.1);
            if self.curr_rtt.is_some_and(|c| c > delay_min + thresh) {
                self.found = true;
            }
        }
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Duration {
        Duration::from_secs_f64(x / 1000.0)
    }
    fn at(x: f64) -> Instant {
        Instant::ZERO + ms(x)
    }

    /// A round of `n` ACKs `gap_ms` apart from `t0` with RTT samples `rtt_ms`, on a window of
    /// `n` segments; returns the index of the ACK that found the exit.
    fn round(h: &mut HyStart, t0: f64, gap_ms: f64, n: u64, una0: u64, rtt_ms: f64) -> Option<u64> {
        (0..n).find(|&i| {
            h.on_ack(
                at(t0 + gap_ms * i as f64),
                una0 + i + 1,
                una0 + 2 * n,
                n,
                ms(rtt_ms),
                ms(100.0),
            )
        })
    }

    #[test]
    fn an_ack_train_longer_than_half_the_base_rtt_ends_slow_start() {
        // 100 ms base RTT: the train must last more than (100 + 1) / 2 = 50.5 ms. ACKs 1 ms
        // apart: the 52nd ACK (51 ms after the first) finds it.
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 1.0, 64, 0, 100.0), Some(51));
        assert!(h.found());
        // Found once; a restart (a timeout) looks again.
        assert!(!h.on_ack(at(500.0), 10_000, 20_000, 64, ms(100.0), ms(100.0)));
        h.restart();
        assert!(!h.found());
    }

    #[test]
    fn acks_further_apart_than_two_ms_form_no_train() {
        // Delayed ACKs at 10 Mbit/s: one per two 1500-byte frames, 2.4 ms apart.
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 2.4, 64, 0, 100.0), None);
    }

    #[test]
    fn a_queue_of_more_than_the_threshold_ends_slow_start() {
        // delay_min 100 ms: threshold clamp(12.5 ms, 4, 16) = 12.5 ms. The round's first 8
        // samples judge nothing; the 9th sees min 113 ms > 112.5 ms.
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 3.0, 64, 0, 113.0), Some(8));
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 3.0, 64, 0, 112.0), None);
        // A new round starts over: its samples are judged by their own minimum.
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 3.0, 64, 0, 105.0), None);
        assert_eq!(round(&mut h, 300.0, 3.0, 64, 200, 117.0), Some(8));
    }

    /// Slow start from an initial window of 10 over a 200-ms path whose bottleneck takes 1.2 ms
    /// a segment (10 Mbit/s), the receiver acknowledging every second segment: flight j of
    /// 10 x 2^j segments leaves at twice the bottleneck's rate as the ACKs of flight j - 1
    /// come back (each ACK of two segments adds two to the window and sends four), so a
    /// flight's segments queue behind its own earlier ones, 0.6 ms more for each, and the
    /// ACKs of a flight return with RTTs rising from 200 ms by 1.2 ms per ACK. `head_ms` is
    /// the queue the head of the last flight already meets. Returns the window when HyStart
    /// found its exit, if it did.
    fn slow_start(h: &mut HyStart, flights: u32, head_ms: f64) -> Option<u64> {
        let (mut una, mut t) = (0u64, 0.0);
        for j in 0..flights {
            let w = 10u64 << j;
            let head = if j + 1 == flights { head_ms } else { 0.0 };
            for k in 0..w / 2 {
                una += 2;
                let cwnd = w + 2 * (k + 1);
                // What had been sent before this ACK: the flight, and four for each earlier
                // ACK of it.
                let snd_max = w + una + 2 * k - 2;
                let rtt = 200.0 + head + 1.2 * k as f64;
                if h.on_ack(
                    at(t + 2.4 * k as f64),
                    una,
                    snd_max,
                    cwnd,
                    ms(rtt),
                    ms(200.0),
                ) {
                    return Some(cwnd);
                }
            }
            t += 200.0;
        }
        None
    }

    /// Rounds are counted from the first ACK of the slow start, below the low window too, as
    /// Linux's `hystart_update` resets the round before it checks `hystart_low_window`: a round
    /// then begins with the first ACK of a flight, whose segments met no queue, and the rising
    /// RTTs of a flight's own burst end nothing. Counted only from 16 segments, the rounds
    /// began in the middle of a flight's ACKs ever after, and the burst's own queue, 24 ms at
    /// the middle of a flight of 80, ended slow start at 144 segments where the kernel's
    /// CUBIC went on to 490-648 on this link (docs/validation.md).
    #[test]
    fn a_round_starts_with_a_flight_so_a_bursts_own_queue_ends_nothing() {
        let mut h = HyStart::default();
        assert_eq!(slow_start(&mut h, 6, 0.0), None);
        // When the queue outlasts the gap between flights, the head of a flight meets it: a
        // head 20 ms late (more than the 16-ms threshold) ends slow start at its 9th ACK.
        let mut h = HyStart::default();
        assert_eq!(slow_start(&mut h, 6, 20.0), Some(320 + 18));
    }

    #[test]
    fn nothing_below_the_low_window() {
        let mut h = HyStart::default();
        assert_eq!(round(&mut h, 0.0, 1.0, 15, 0, 200.0), None);
    }
}
