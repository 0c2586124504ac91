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

use mslink_link::{Duration, Instant};

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

/// RFC 5681 additive increase, multiplicative decrease.
#[derive(Clone, Debug)]
pub struct Aimd {
    cwnd: u64,
    ssthresh: u64,
    /// Byte-counting remainder of congestion avoidance.
    acc: u64,
}

impl Aimd {
    /// Starts with `initial_window` segments and an arbitrarily high ssthresh (RFC 5681 §3.1).
    pub fn new(initial_window: u32, mss: u64) -> Self {
        Aimd {
            cwnd: initial_window as u64 * mss,
            ssthresh: u64::MAX / 4,
            acc: 0,
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
            // RFC 5681 §3.1 eq. (2): slow start, cwnd += min(N, SMSS) per ACK.
            self.cwnd += a.acked.min(a.mss);
        } else {
            // RFC 5681 §3.1 eq. (3): congestion avoidance, cwnd += SMSS*SMSS/cwnd per ACK
            // (kept exact by carrying the remainder).
            self.acc += a.mss * a.mss;
            self.cwnd += self.acc / self.cwnd;
            self.acc %= self.cwnd.max(1);
        }
    }
    fn on_loss(&mut self, flight: u64, mss: u64) {
        // RFC 5681 §3.2 eq. (4): ssthresh = max(FlightSize / 2, 2*SMSS).
        self.ssthresh = (flight / 2).max(2 * mss);
        self.cwnd = self.ssthresh;
        self.acc = 0;
    }
    fn on_timeout(&mut self, flight: u64, mss: u64) {
        // RFC 5681 §3.1 eq. (4) and the loss window LW = 1 SMSS.
        self.ssthresh = (flight / 2).max(2 * mss);
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
        }
    }

    #[test]
    fn slow_start_doubles_per_window_then_one_mss_per_window() {
        let mut c = Aimd::new(1, 1000);
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
}
