//! The congestion window: who sets it, and how it grows and shrinks.
//!
//! Contract. A sender keeps its congestion window in a [`CongestionControl`] and tells it
//! about new acknowledgements outside loss recovery ([`CongestionControl::on_ack`]), about a
//! loss found by duplicate ACKs or SACK ([`CongestionControl::on_loss`]) and about a
//! retransmission timeout ([`CongestionControl::on_timeout`]). Loss *recovery* (which segment
//! to send, window inflation during Reno fast recovery) is the sender's business
//! (`sender.rs`); it adjusts the window through [`CongestionControl::set_cwnd`]. Reno,
//! NewReno and SACK all use [`Aimd`] (RFC 5681) by default, or [`super::cubic::Cubic`]
//! (RFC 9438) with `congestion_control = "cubic"`; a window controller fed by routers, such
//! as XCP's, implements the same trait and reads its feedback from [`AckInfo`].
//! [`Aimd`] halves its window as RFC 5681 writes it or, with `reno_flavour = "linux"`, as
//! Linux's `tcp_reno_ssthresh` does (whole segments, rounded down).

use mslink_link::{Duration, Instant};

use super::RenoFlavour;

/// What one acknowledgement of new data tells the window controller.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    /// Arrival time.
    pub now: Instant,
    /// Bytes newly acknowledged.
    pub acked: u64,
    /// Bytes in flight before this ACK (RFC 5681 FlightSize).
    pub flight: u64,
    /// Sender's maximum segment size.
    pub mss: u64,
    /// An RTT sample taken from this ACK, if any (Karn's rule applied).
    pub rtt: Option<Duration>,
    /// The RTT of the most recently sent segment this ACK delivered, if it was never
    /// retransmitted (Linux's per-ACK `ca_rtt`; from RACK's transmit times, so only with
    /// RACK on, else the Karn sample).
    pub ca_rtt: Option<Duration>,
    /// The cumulative ACK after this one.
    pub una: u64,
    /// One past the highest byte sent.
    pub snd_max: u64,
    /// The XCP feedback the receiver echoed on this ACK, bytes (XCP flows only).
    pub xcp_feedback: Option<i32>,
}

/// A congestion window controller.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// The congestion window, bytes.
    fn cwnd(&self) -> u64;
    /// The slow-start threshold, bytes.
    fn ssthresh(&self) -> u64;
    /// New data was acknowledged outside loss recovery.
    fn on_ack(&mut self, ack: &AckInfo);
    /// Loss detected by duplicate ACKs or SACK with `flight` bytes outstanding: sets
    /// ssthresh (and the window recovery starts from).
    fn on_loss(&mut self, flight: u64, mss: u64);
    /// The retransmission timer expired with `flight` bytes outstanding.
    fn on_timeout(&mut self, flight: u64, mss: u64);
    /// Sets the window (loss recovery inflates and deflates it).
    fn set_cwnd(&mut self, cwnd: u64);
    /// A short name for results.
    fn name(&self) -> &'static str;
    /// The XCP congestion header to put on a data segment, given the sender's smoothed RTT;
    /// `None` for window controllers that routers do not steer.
    fn xcp_request(&self, _srtt: Option<Duration>, _mss: u64) -> Option<super::segment::XcpField> {
        None
    }
}

/// What an ACK of new data is worth to the window's growth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// Per ACK, whatever it acknowledges (RFC 5681 §3.1 eq. 2 and 3, as ns-2's agents and
    /// 004): slow start adds at most one SMSS per ACK and congestion avoidance SMSS*SMSS/cwnd,
    /// so a receiver that ACKs every second segment halves the growth.
    PerAck,
    /// By the bytes acknowledged (RFC 3465, Appropriate Byte Counting, as Linux counts
    /// acknowledged segments): slow start adds what an ACK covers up to L = 2 SMSS (§2.2;
    /// Linux's limit for ordinary delayed ACKs too), congestion avoidance one SMSS per cwnd
    /// bytes acknowledged (§2.1, RFC 5681 §3.1's "byte counting" variant of eq. 3).
    Bytes,
}

impl Counting {
    /// Slow start's increase for an ACK of `acked` bytes (RFC 5681 eq. 2, RFC 3465 §2.2).
    pub fn slow_start(self, acked: u64, mss: u64) -> u64 {
        match self {
            Counting::PerAck => acked.min(mss),
            Counting::Bytes => acked.min(2 * mss),
        }
    }
}

/// RFC 5681 additive increase, multiplicative decrease.
#[derive(Clone, Debug)]
pub struct Aimd {
    cwnd: u64,
    ssthresh: u64,
    counting: Counting,
    /// Remainder of congestion avoidance: SMSS*SMSS products ([`Counting::PerAck`]) or bytes
    /// acknowledged ([`Counting::Bytes`]) not yet turned into window.
    acc: u64,
    /// How a loss or a timeout halves the window.
    flavour: RenoFlavour,
}

impl Aimd {
    /// Starts with `initial_window` segments and an arbitrarily high ssthresh (RFC 5681 §3.1).
    pub fn new(initial_window: u32, mss: u64, counting: Counting) -> Self {
        Aimd {
            cwnd: initial_window as u64 * mss,
            ssthresh: u64::MAX / 4,
            counting,
            acc: 0,
            flavour: RenoFlavour::Rfc5681,
        }
    }

    /// The same controller halving its window as `flavour` says.
    pub fn flavour(mut self, flavour: RenoFlavour) -> Self {
        self.flavour = flavour;
        self
    }

    /// ssthresh after a loss or a timeout with `flight` bytes outstanding.
    fn halved(&self, flight: u64, mss: u64) -> u64 {
        match self.flavour {
            // RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2*SMSS).
            RenoFlavour::Rfc5681 => (flight / 2).max(2 * mss),
            // Linux's `tcp_reno_ssthresh`: max(snd_cwnd >> 1, 2), the window in whole
            // segments.
            RenoFlavour::Linux => (self.cwnd / mss / 2).max(2) * mss,
        }
    }
}

impl CongestionControl for Aimd {
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn on_ack(&mut self, a: &AckInfo) {
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): slow start, cwnd += min(N, SMSS) per ACK (L = 2 SMSS
            // when counting bytes, RFC 3465 §2.2).
            self.cwnd += self.counting.slow_start(a.acked, a.mss);
            return;
        }
        match self.counting {
            Counting::PerAck => {
                // RFC 5681 §3.1 eq. (3): congestion avoidance, cwnd += SMSS*SMSS/cwnd per ACK
                // (kept exact by carrying the remainder).
                self.acc += a.mss * a.mss;
                self.cwnd += self.acc / self.cwnd;
                self.acc %= self.cwnd.max(1);
            }
            Counting::Bytes => {
                // RFC 3465 §2.1: once a window's worth of bytes is acknowledged, cwnd += SMSS
                // (Linux's `tcp_cong_avoid_ai` with acknowledged segments).
                self.acc += a.acked;
                while self.acc >= self.cwnd {
                    self.acc -= self.cwnd;
                    self.cwnd += a.mss;
                }
            }
        }
    }
    fn on_loss(&mut self, flight: u64, mss: u64) {
        // RFC 5681 §3.2 eq. (4) (or Linux's halving), and cwnd = ssthresh.
        self.ssthresh = self.halved(flight, mss);
        self.cwnd = self.ssthresh;
        self.acc = 0;
    }
    fn on_timeout(&mut self, flight: u64, mss: u64) {
        // RFC 5681 §3.1 eq. (4) (or Linux's halving) and the loss window LW = 1 SMSS.
        self.ssthresh = self.halved(flight, mss);
        self.cwnd = mss;
        self.acc = 0;
    }
    fn set_cwnd(&mut self, cwnd: u64) {
        self.cwnd = cwnd;
    }
    fn name(&self) -> &'static str {
        "aimd"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u64) -> AckInfo {
        AckInfo {
            now: Instant::ZERO,
            acked,
            flight: 0,
            mss: 1000,
            rtt: None,
            xcp_feedback: None,
            ca_rtt: None,
            una: 0,
            snd_max: 0,
        }
    }

    #[test]
    fn slow_start_doubles_per_window_then_one_mss_per_window() {
        let mut c = Aimd::new(1, 1000, Counting::PerAck);
        // Slow start: every ACK of a full segment adds one MSS, so a window of n ACKs doubles.
        let mut w = c.cwnd();
        for _ in 0..4 {
            for _ in 0..w / 1000 {
                c.on_ack(&ack(1000));
            }
            assert_eq!(c.cwnd(), 2 * w);
            w = c.cwnd();
        }
        c.on_loss(16_000, 1000);
        assert_eq!((c.ssthresh(), c.cwnd()), (8000, 8000));
        // Congestion avoidance: one window's worth of ACKs adds about one MSS (eq. 3).
        for _ in 0..8 {
            c.on_ack(&ack(1000));
        }
        assert!((8900..=9000).contains(&c.cwnd()), "{}", c.cwnd());
        c.on_timeout(9000, 1000);
        assert_eq!((c.ssthresh(), c.cwnd()), (4500, 1000));
        c.on_loss(1000, 1000);
        assert_eq!(c.ssthresh(), 2000, "never below 2 SMSS");
    }

    /// One window's bytes acknowledged by delayed ACKs (two segments each, one for an odd
    /// segment at the end).
    fn one_window_of_delayed_acks(c: &mut Aimd) {
        let mut left = c.cwnd();
        while left > 0 {
            let n = left.min(2000);
            c.on_ack(&ack(n));
            left -= n;
        }
    }

    #[test]
    fn with_delayed_acks_per_ack_counting_grows_half_as_fast_as_byte_counting() {
        // Slow start from 10 segments: per ACK, 5 ACKs add 5 SMSS (x1.5 per round trip); by
        // bytes, they add 10 (x2), as Linux does.
        let (mut per_ack, mut bytes) = (
            Aimd::new(10, 1000, Counting::PerAck),
            Aimd::new(10, 1000, Counting::Bytes),
        );
        one_window_of_delayed_acks(&mut per_ack);
        one_window_of_delayed_acks(&mut bytes);
        assert_eq!((per_ack.cwnd(), bytes.cwnd()), (15_000, 20_000));
        // Congestion avoidance at 20 segments: ten rounds of one window each.
        for c in [&mut per_ack, &mut bytes] {
            c.on_loss(40_000, 1000);
            assert_eq!(c.cwnd(), 20_000);
        }
        let w0 = per_ack.cwnd();
        for _ in 0..10 {
            one_window_of_delayed_acks(&mut per_ack);
            one_window_of_delayed_acks(&mut bytes);
        }
        // By bytes: one SMSS per window (RFC 3465 §2.1), exactly ten. Per ACK: about half.
        assert_eq!(bytes.cwnd(), w0 + 10_000);
        let grown = per_ack.cwnd() - w0;
        assert!((4_000..=5_500).contains(&grown), "per ACK grew {grown}");
    }

    #[test]
    fn byte_counting_limits_a_stretch_ack_in_slow_start_to_two_segments() {
        let mut c = Aimd::new(4, 1000, Counting::Bytes);
        c.on_ack(&ack(8000));
        assert_eq!(c.cwnd(), 6000, "RFC 3465 §2.2: L = 2 SMSS");
    }

    #[test]
    fn linux_halves_the_window_in_whole_segments_rfc5681_the_flight_in_bytes() {
        // A window of 9 segments, all in flight: RFC 5681 keeps 4.5 segments, Linux's
        // `tcp_reno_ssthresh` 9 >> 1 = 4.
        let nine = |f: RenoFlavour| Aimd::new(9, 1000, Counting::Bytes).flavour(f);
        let (mut rfc, mut linux) = (nine(RenoFlavour::Rfc5681), nine(RenoFlavour::Linux));
        rfc.on_loss(9000, 1000);
        linux.on_loss(9000, 1000);
        assert_eq!((rfc.cwnd(), linux.cwnd()), (4500, 4000));
        assert_eq!((rfc.ssthresh(), linux.ssthresh()), (4500, 4000));
        // Linux halves the window, not the flight: 9 segments with 5 in flight leave 4 (RFC
        // 5681: 2.5, held at 2 SMSS); and never below 2 segments.
        let mut linux = nine(RenoFlavour::Linux);
        linux.on_timeout(5000, 1000);
        assert_eq!((linux.ssthresh(), linux.cwnd()), (4000, 1000));
        let mut small = Aimd::new(3, 1000, Counting::Bytes).flavour(RenoFlavour::Linux);
        small.on_loss(3000, 1000);
        assert_eq!(small.cwnd(), 2000);
    }
}
