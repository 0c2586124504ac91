//! XCP, the eXplicit Control Protocol (Katabi, Handley and Rohrs, SIGCOMM 2002), as 001 uses
//! it: the congestion header, the router's efficiency and fairness controllers at a bottleneck
//! interface, and the sender's window update.
//!
//! Contract. [`XcpRouter`] is sans-IO: the driver calls [`XcpRouter::on_packet`] for each packet
//! that enters the interface's queue (with the queue length it found, in bytes) and
//! [`XcpRouter::on_timeout`] whenever `now` reaches [`XcpRouter::poll_timeout`] (the end of a
//! control interval). The capacity the router believes it has is configuration
//! (`capacity_bps`): 001 runs XCP with a static "estimated bandwidth" swept from under- to
//! over-estimation, and so can we.
//!
//! Control law (Katabi et al. §3.5, §3.6, constants from their §3.5 and stability proof):
//! every control interval `d` (the mean RTT of the packets seen, `rtt_i` weighted by bytes),
//! the aggregate feedback is `φ = α·d·S − β·Q` with spare bandwidth `S = C − y` (bytes/s),
//! `y` the input rate over the last interval and `Q` the persistent queue (the minimum queue
//! seen during the interval); `α = 0.4`, `β = 0.226`. Shuffled traffic `h = max(0, γ·y·d − |φ|)`
//! with `γ = 0.1`. Per packet of size `s_i` from a flow with window `cwnd_i` and RTT `rtt_i`:
//! positive feedback `p_i = ξ_p · rtt_i² · s_i / cwnd_i`, negative `n_i = ξ_n · rtt_i · s_i`,
//! with `ξ_p = (h + max(φ,0)) / (d · Σ rtt_i·s_i/cwnd_i)` and `ξ_n = (h + max(−φ,0)) / (d · Σ s_i)`
//! taken over the previous interval; the header's feedback becomes `min(H_feedback, p_i − n_i)`.
//! The sender sets `cwnd = max(cwnd + H_feedback, s)` when the echoed feedback returns.

use mslink_link::{Duration, Instant};

/// The efficiency controller's gain on spare bandwidth (Katabi et al. §3.5).
pub const ALPHA: f64 = 0.4;
/// The efficiency controller's gain on the persistent queue.
pub const BETA: f64 = 0.226;
/// The share of traffic the fairness controller shuffles each interval.
pub const GAMMA: f64 = 0.1;

/// The congestion header a sender puts on each data packet and the receiver echoes back.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct XcpHeader {
    /// The sender's congestion window, bytes.
    pub cwnd_bytes: f64,
    /// The sender's RTT estimate; zero while it has none.
    pub rtt: Duration,
    /// Desired window change, bytes; routers only lower it.
    pub feedback_bytes: f64,
}

/// TCP option kind the simulator uses to carry the XCP header in a pcap (RFC 4727's
/// experimental kind 253), total length 14 bytes.
pub const OPTION_KIND: u8 = 253;
/// Length of the option: kind, length, cwnd (u32 bytes), rtt (u32 µs), feedback (i32 bytes).
pub const OPTION_LEN: usize = 14;

impl XcpHeader {
    /// Writes the header as a TCP option into `out` (exactly [`OPTION_LEN`] bytes).
    pub fn write_option(&self, out: &mut [u8; OPTION_LEN]) {
        out[0] = OPTION_KIND;
        out[1] = OPTION_LEN as u8;
        out[2..6]
            .copy_from_slice(&(self.cwnd_bytes.clamp(0.0, u32::MAX as f64) as u32).to_be_bytes());
        let rtt_us = (self.rtt.as_nanos() / 1_000).min(u64::from(u32::MAX)) as u32;
        out[6..10].copy_from_slice(&rtt_us.to_be_bytes());
        let fb = self.feedback_bytes.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
        out[10..14].copy_from_slice(&fb.to_be_bytes());
    }

    /// Reads an option written by [`XcpHeader::write_option`]; `None` if it is not one.
    pub fn read_option(opt: &[u8]) -> Option<XcpHeader> {
        if opt.len() != OPTION_LEN || opt[0] != OPTION_KIND || opt[1] as usize != OPTION_LEN {
            return None;
        }
        let u = |r: std::ops::Range<usize>| u32::from_be_bytes(opt[r].try_into().expect("4"));
        Some(XcpHeader {
            cwnd_bytes: f64::from(u(2..6)),
            rtt: Duration::from_micros(u64::from(u(6..10))),
            feedback_bytes: f64::from(u(10..14) as i32),
        })
    }
}

/// Router settings of one XCP interface.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct XcpRouterConfig {
    /// The capacity the router believes the link has, bit/s (001's "estimated bandwidth").
    pub capacity_bps: f64,
    /// Control interval used before any packet has told the router an RTT, ms.
    pub initial_interval_ms: f64,
}

impl Default for XcpRouterConfig {
    fn default() -> Self {
        XcpRouterConfig {
            capacity_bps: 11e6,
            initial_interval_ms: 100.0,
        }
    }
}

/// Sums over one control interval.
#[derive(Clone, Copy, Debug, Default)]
struct IntervalSums {
    bytes: f64,
    rtt_bytes: f64,
    /// Σ rtt_i·s_i / cwnd_i (seconds, since s_i/cwnd_i is dimensionless).
    rtt_s_over_cwnd: f64,
    min_queue: Option<f64>,
}

/// The XCP controllers of one bottleneck interface.
#[derive(Clone, Debug)]
pub struct XcpRouter {
    capacity_bytes_per_s: f64,
    interval: Duration,
    interval_end: Instant,
    current: IntervalSums,
    xi_p: f64,
    xi_n: f64,
    /// Aggregate feedback computed at the last interval end, bytes (for reports and tests).
    last_phi: f64,
}

impl XcpRouter {
    /// A router whose first control interval starts at `now`.
    pub fn new(config: &XcpRouterConfig, now: Instant) -> Self {
        let interval = Duration::from_secs_f64(config.initial_interval_ms / 1e3);
        XcpRouter {
            capacity_bytes_per_s: config.capacity_bps / 8.0,
            interval,
            interval_end: now + interval,
            current: IntervalSums::default(),
            xi_p: 0.0,
            xi_n: 0.0,
            last_phi: 0.0,
        }
    }

    /// The aggregate feedback of the last completed interval, bytes.
    pub fn aggregate_feedback(&self) -> f64 {
        self.last_phi
    }

    /// The current control interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Sees a packet of `len` bytes enter the queue, which held `queue_bytes` before it, and
    /// lowers its header's feedback to what this interface can allow.
    pub fn on_packet(&mut self, len: usize, queue_bytes: usize, h: &mut XcpHeader) {
        let s = len as f64;
        let q = queue_bytes as f64;
        let c = &mut self.current;
        c.bytes += s;
        c.min_queue = Some(c.min_queue.map_or(q, |m: f64| m.min(q)));
        let rtt = h.rtt.as_secs_f64();
        if rtt <= 0.0 || h.cwnd_bytes <= 0.0 {
            // A flow that has no RTT yet takes no part in the fairness sums (Katabi et al.
            // §3.6 assume every sender knows its RTT); its feedback is left as it asked.
            return;
        }
        c.rtt_bytes += rtt * s;
        c.rtt_s_over_cwnd += rtt * s / h.cwnd_bytes;
        let positive = self.xi_p * rtt * rtt * s / h.cwnd_bytes;
        let negative = self.xi_n * rtt * s;
        h.feedback_bytes = h.feedback_bytes.min(positive - negative);
    }

    /// When the current control interval ends.
    pub fn poll_timeout(&self) -> Instant {
        self.interval_end
    }

    /// Closes the control interval if `now` has reached its end: computes `φ`, the shuffled
    /// traffic and the per-packet factors for the next interval.
    pub fn on_timeout(&mut self, now: Instant) {
        if now < self.interval_end {
            return;
        }
        let d = self.interval.as_secs_f64();
        let sums = std::mem::take(&mut self.current);
        let input_rate = sums.bytes / d;
        let spare = self.capacity_bytes_per_s - input_rate;
        let queue = sums.min_queue.unwrap_or(0.0);
        let phi = ALPHA * d * spare - BETA * queue;
        let shuffle = (GAMMA * input_rate * d - phi.abs()).max(0.0);
        self.xi_p = if sums.rtt_s_over_cwnd > 0.0 {
            (shuffle + phi.max(0.0)) / (d * sums.rtt_s_over_cwnd)
        } else {
            0.0
        };
        self.xi_n = if sums.bytes > 0.0 {
            (shuffle + (-phi).max(0.0)) / (d * sums.bytes)
        } else {
            0.0
        };
        self.last_phi = phi;
        // The next interval lasts the mean RTT of the traffic just seen (§3.5).
        if sums.rtt_bytes > 0.0 {
            self.interval = Duration::from_secs_f64(sums.rtt_bytes / sums.bytes);
        }
        self.interval_end = now + self.interval;
    }
}

/// The sender's response to echoed feedback (Katabi et al. §3.4): `cwnd + feedback`, never
/// below one segment.
pub fn apply_feedback(cwnd_bytes: f64, feedback_bytes: f64, mss: usize) -> f64 {
    (cwnd_bytes + feedback_bytes).max(mss as f64)
}

/// The window of an XCP sender (Katabi et al. §3.2, §3.4) behind the simulator's TCP: it
/// asks routers for at most one segment more per segment sent (slow start's pace, so a path
/// without an XCP router still works), takes `cwnd + feedback` from each echoed header, and on
/// a loss halves the window as TCP does (XCP leaves loss recovery to TCP's machinery).
#[derive(Clone, Debug)]
pub struct XcpWindow {
    cwnd: f64,
    mss: f64,
}

impl XcpWindow {
    /// Starts with `initial_window` segments.
    pub fn new(initial_window: u32, mss: u64) -> Self {
        XcpWindow {
            cwnd: f64::from(initial_window) * mss as f64,
            mss: mss as f64,
        }
    }
}

impl crate::tcp::cc::CongestionControl for XcpWindow {
    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }
    fn ssthresh(&self) -> u64 {
        u64::MAX / 4
    }
    fn on_ack(&mut self, ack: &crate::tcp::cc::AckInfo) {
        if let Some(fb) = ack.xcp_feedback {
            self.cwnd = apply_feedback(self.cwnd, f64::from(fb), self.mss as usize);
        }
    }
    fn on_loss(&mut self, _flight: u64, _mss: u64) {
        self.cwnd = (self.cwnd / 2.0).max(self.mss);
    }
    fn on_timeout(&mut self, _flight: u64, _mss: u64) {
        self.cwnd = self.mss;
    }
    fn set_cwnd(&mut self, cwnd: u64) {
        self.cwnd = cwnd as f64;
    }
    fn name(&self) -> &'static str {
        "xcp"
    }
    fn xcp_request(
        &self,
        srtt: Option<Duration>,
        mss: u64,
    ) -> Option<crate::tcp::segment::XcpField> {
        Some(crate::tcp::segment::XcpField {
            cwnd: self.cwnd.min(u32::MAX as f64) as u32,
            rtt_us: srtt.map_or(0, |r| {
                (r.as_nanos() / 1_000).min(u64::from(u32::MAX)) as u32
            }),
            feedback: mss.min(i32::MAX as u64) as i32,
        })
    }
}

impl XcpRouter {
    /// Runs every control interval that ended by `now` (drivers that see the router only when
    /// packets pass call this first).
    pub fn catch_up(&mut self, now: Instant) {
        while self.interval_end <= now {
            let end = self.interval_end;
            self.on_timeout(end);
        }
    }

    /// A router with `capacity_bps` as its static capacity estimate and the default initial
    /// interval, its first interval starting at time zero (how the simulator builds one).
    pub fn with_capacity(capacity_bps: f64) -> Self {
        let cfg = XcpRouterConfig {
            capacity_bps,
            ..Default::default()
        };
        Self::new(&cfg, Instant::ZERO)
    }

    /// Sees IP packet `p` enter the interface while `queue_bytes` wait there: if it is a TCP
    /// data segment with an XCP header, runs the intervals due by `now` and lowers the
    /// header's feedback in place. ACKs (whose header echoes feedback, `cwnd` 0) and other
    /// packets pass unchanged.
    pub fn mark(&mut self, now: Instant, p: &mut [u8], queue_bytes: usize) {
        let Ok(Some(x)) = crate::tcp::segment::parse(p).map(|w| w.xcp) else {
            return;
        };
        if x.cwnd == 0 {
            return;
        }
        self.catch_up(now);
        let fb = self.on_wire(p.len(), queue_bytes, x);
        crate::tcp::segment::set_xcp_feedback(p, fb);
    }

    /// Sees a packet's wire congestion header: lowers its feedback and returns the new value.
    pub fn on_wire(
        &mut self,
        len: usize,
        queue_bytes: usize,
        x: crate::tcp::segment::XcpField,
    ) -> i32 {
        let mut h = XcpHeader {
            cwnd_bytes: f64::from(x.cwnd),
            rtt: Duration::from_micros(u64::from(x.rtt_us)),
            feedback_bytes: f64::from(x.feedback),
        };
        self.on_packet(len, queue_bytes, &mut h);
        h.feedback_bytes
            .clamp(i32::MIN as f64, i32::MAX as f64)
            .floor() as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_round_trips_and_refuses_other_options() {
        let h = XcpHeader {
            cwnd_bytes: 14_600.0,
            rtt: Duration::from_micros(2_500),
            feedback_bytes: -1_234.0,
        };
        let mut o = [0u8; OPTION_LEN];
        h.write_option(&mut o);
        assert_eq!(XcpHeader::read_option(&o), Some(h));
        o[0] = 8;
        assert_eq!(XcpHeader::read_option(&o), None);
        assert_eq!(XcpHeader::read_option(&o[..10]), None);
    }

    #[test]
    fn aggregate_feedback_is_alpha_d_spare_minus_beta_queue() {
        // 10 Mbit/s believed, 100 ms interval, 50 kB arriving (4 Mbit/s), queue never below 3 kB.
        let cfg = XcpRouterConfig {
            capacity_bps: 10e6,
            initial_interval_ms: 100.0,
        };
        let mut r = XcpRouter::new(&cfg, Instant::ZERO);
        let mut h = XcpHeader {
            cwnd_bytes: 10_000.0,
            rtt: Duration::from_millis(100),
            feedback_bytes: 1e9,
        };
        for _ in 0..50 {
            r.on_packet(1000, 3000, &mut h);
        }
        r.on_timeout(Instant::from_millis(100));
        let expect = 0.4 * 0.1 * (10e6 / 8.0 - 50_000.0 / 0.1) - 0.226 * 3000.0;
        assert!((r.aggregate_feedback() - expect).abs() < 1e-6);
    }

    #[test]
    fn positive_feedback_is_shared_equally_per_flow_and_sums_to_phi_plus_shuffle() {
        // Two flows with the same RTT but different windows and packet counts: per-flow
        // increase must be equal (AIMD's additive part), and the total handed out over one
        // interval equals h + φ.
        let cfg = XcpRouterConfig {
            capacity_bps: 8e6,
            initial_interval_ms: 50.0,
        };
        let mut r = XcpRouter::new(&cfg, Instant::ZERO);
        let rtt = Duration::from_millis(50);
        let flows = [(5_000.0, 5usize), (20_000.0, 20usize)]; // (cwnd, packets of 1000 B)
        for pass in 0..2 {
            let mut given = [0.0f64; 2];
            for (i, (cwnd, n)) in flows.iter().enumerate() {
                for _ in 0..*n {
                    let mut h = XcpHeader {
                        cwnd_bytes: *cwnd,
                        rtt,
                        feedback_bytes: 1e12,
                    };
                    r.on_packet(1000, 0, &mut h);
                    given[i] += h.feedback_bytes;
                }
            }
            let t = r.poll_timeout();
            r.on_timeout(t);
            if pass == 1 {
                // φ > 0 and no shuffling here, so every packet got positive feedback only.
                assert!(given[0] > 0.0, "feedback {given:?}");
                assert!((given[0] - given[1]).abs() < 1e-6 * given[0]);
            }
        }
        // Second pass used the factors computed from an identical first interval.
        let d: f64 = 0.05;
        let y = 25_000.0 / d;
        let phi: f64 = 0.4 * d * (1e6 - y);
        let h = (0.1 * y * d - phi.abs()).max(0.0);
        let expect_xi_p = (h + phi.max(0.0)) / (d * (2.0 * d));
        assert!((r.xi_p - expect_xi_p).abs() < 1e-9 * expect_xi_p);
    }

    /// A fluid model: N flows share a bottleneck the router believes has capacity C; each RTT
    /// every flow sends its window, the router sees it, and each sender applies the summed
    /// feedback. Katabi et al. §4: XCP converges to full use, an empty queue and fair shares.
    #[test]
    fn converges_to_the_believed_capacity_with_fair_shares() {
        let c_bps = 10e6;
        let cfg = XcpRouterConfig {
            capacity_bps: c_bps,
            initial_interval_ms: 40.0,
        };
        let rtt = Duration::from_millis(40);
        let mss = 1000;
        let mut r = XcpRouter::new(&cfg, Instant::ZERO);
        let mut cwnd = [1000.0f64, 30_000.0, 8_000.0];
        let mut now = Instant::ZERO;
        for _ in 0..400 {
            let mut fb = [0.0; 3];
            let total: f64 = cwnd.iter().sum();
            // Bytes beyond one RTT's capacity wait in the queue.
            let queue = (total - c_bps / 8.0 * rtt.as_secs_f64()).max(0.0) as usize;
            for (i, w) in cwnd.iter().enumerate() {
                let packets = (w / mss as f64).ceil() as usize;
                for _ in 0..packets {
                    let mut h = XcpHeader {
                        cwnd_bytes: *w,
                        rtt,
                        feedback_bytes: 1e12,
                    };
                    r.on_packet(mss, queue, &mut h);
                    fb[i] += h.feedback_bytes;
                }
            }
            now += rtt;
            r.on_timeout(now);
            for i in 0..3 {
                cwnd[i] = apply_feedback(cwnd[i], fb[i], mss);
            }
        }
        let bdp = c_bps / 8.0 * rtt.as_secs_f64();
        let total: f64 = cwnd.iter().sum();
        assert!(
            (total / bdp - 1.0).abs() < 0.1,
            "windows sum to {total}, BDP {bdp}"
        );
        let jain = total * total / (3.0 * cwnd.iter().map(|w| w * w).sum::<f64>());
        assert!(jain > 0.95, "Jain index {jain}, windows {cwnd:?}");
    }

    #[test]
    fn the_sender_window_follows_echoed_feedback_and_halves_on_loss() {
        use crate::tcp::cc::{AckInfo, CongestionControl};
        let mut w = XcpWindow::new(2, 1000);
        let ack = |fb| AckInfo {
            now: Instant::ZERO,
            acked: 1000,
            flight: 2000,
            mss: 1000,
            rtt: None,
            xcp_feedback: fb,
            ca_rtt: None,
            una: 0,
            snd_max: 0,
        };
        w.on_ack(&ack(Some(500)));
        assert_eq!(w.cwnd(), 2500);
        w.on_ack(&ack(None));
        assert_eq!(w.cwnd(), 2500, "an ACK without feedback leaves the window");
        w.on_ack(&ack(Some(-10_000)));
        assert_eq!(w.cwnd(), 1000, "never below one segment");
        w.set_cwnd(8000);
        w.on_loss(8000, 1000);
        assert_eq!(w.cwnd(), 4000);
        let req = w
            .xcp_request(Some(Duration::from_micros(2500)), 1000)
            .unwrap();
        assert_eq!((req.cwnd, req.rtt_us, req.feedback), (4000, 2500, 1000));
        w.on_timeout(4000, 1000);
        assert_eq!(w.cwnd(), 1000);
    }
}
