//! CUBIC window growth (RFC 9438) behind the [`CongestionControl`] trait.
//!
//! Contract. [`Cubic`] is a byte-counting window controller, a drop-in replacement for
//! [`super::cc::Aimd`]: loss recovery (Reno, NewReno, SACK) stays the sender's and only the
//! window's growth and its reduction differ. Below ssthresh it slow-starts as RFC 5681 §3.1
//! (eq. 2, cwnd += min(N, SMSS) per ACK, or min(N, 2 SMSS) with [`Counting::Bytes`]; HyStart++, RFC 9406, is not implemented:
//! Linux does not run it). At or above
//! ssthresh every ACK moves the window towards `W_cubic(t + RTT)` (RFC 9438 §4.2, clamped to
//! [cwnd, 1.5 cwnd]) unless the Reno-friendly estimate `W_est` (§4.3) is larger. A loss sets
//! `ssthresh = max(beta_cubic * cwnd, 2 SMSS)` (§4.6 with cwnd, as Linux does: see
//! [`Cubic::on_loss`]) and remembers `W_max` with fast convergence (§4.7); a timeout resets the
//! window to one SMSS and restarts the curve with K = 0 (§4.8).
//!
//! Windows are in bytes at the trait and in segments (f64, bytes / SMSS) inside the RFC's
//! formulas, since C = 0.4 is in segments per second cubed. Time is `AckInfo::now` and nothing
//! else. The RTT added to t (§4.2) is the minimum of the RTT samples the sender passes in
//! `AckInfo::rtt`, as Linux's `tcp_cubic.c` uses `delay_min` (the RFC says the smoothed RTT;
//! the minimum keeps the target independent of the queue CUBIC itself builds).
//!
//! With [`CubicFlavour::Linux`] the window grows as Linux's `tcp_cubic.c` grows it
//! (`bictcp_update`), which differs from the RFC in three ways: W_est grows at alpha_cubic
//! whatever its size (no switch to 1 at cwnd_prior), cwnd does not jump to W_est but
//! approaches `max(W_cubic(t + RTT), W_est)` by (target - cwnd) / cwnd per acknowledged segment
//! (`cnt = cwnd / (target - cwnd)`, at least 2), and before the first loss it grows by at least
//! 1/20 per segment (`cnt <= 20`); at or above the target, 1/(100 cwnd) (`cnt = 100 cwnd`).
//! It reduces as `bictcp_recalc_ssthresh` does, on the window in whole segments with the
//! products rounded down (`ssthresh = cwnd * 717 / 1024`: 8 segments leave 5, where the RFC's
//! 0.7 in bytes leaves 5.6; docs/validation.md measures what that does at small windows).
//! Its slow start ends early with HyStart ([`super::hystart`]), on the per-ACK RTT samples
//! `AckInfo::ca_rtt`, whose minimum is then also the RTT of `W_cubic(t + RTT)` (Linux's
//! `delay_min`, fed by every ACK).
//!
//! Application-limited ACKs (RFC 9438 §5.8): when the flight before an ACK was more than one
//! SMSS below the window (the receiver's window or the send buffer bound it), the window does
//! not grow and the time since the previous ACK is taken out of t, so W_cubic(t) does not run
//! ahead of a window that was not used.

use mslink_link::{Duration, Instant};

use super::cc::{AckInfo, CongestionControl, Counting};
use super::hystart::HyStart;
use super::CubicFlavour;

/// RFC 9438 §5.1: C = 0.4 (segments / s^3).
pub const C: f64 = 0.4;
/// RFC 9438 §4.6: the multiplicative decrease factor beta_cubic = 0.7.
pub const BETA: f64 = 0.7;
/// RFC 9438 §4.3: alpha_cubic = 3 (1 - beta_cubic) / (1 + beta_cubic), so that the average
/// window of the Reno-friendly estimate matches Reno's with beta = 0.5.
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// The state of the current congestion avoidance stage (RFC 9438 §4.2 "t_epoch").
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// t_epoch: when this congestion avoidance stage began (moved forward over
    /// application-limited periods, §5.8).
    start: Instant,
    /// K, seconds (§4.2 Figure 2).
    k: f64,
    /// W_max for this stage, segments (the curve's plateau).
    w_max: f64,
    /// W_est, segments (§4.3).
    w_est: f64,
    /// The last ACK's arrival, for taking application-limited time out of t.
    last_ack: Instant,
}

/// An RFC 9438 CUBIC window controller.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// How slow start counts ACKs (congestion avoidance counts bytes either way).
    counting: Counting,
    /// The RFC's or Linux's growth.
    flavour: CubicFlavour,
    /// Fractional bytes of growth carried between ACKs.
    acc: f64,
    /// W_max, segments: the window just before the last reduction (after fast convergence,
    /// §4.7); 0 before the first loss and after a timeout (§4.8).
    w_max: f64,
    /// cwnd_prior, segments: the window at the last congestion event (§4.3's switch of
    /// alpha_cubic to 1).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// Smallest RTT sample seen.
    min_rtt: Option<Duration>,
    /// A timeout has set ssthresh and no new data has been acknowledged since: a further
    /// timeout (backoff) keeps that ssthresh, as Linux's `tcp_enter_loss` does.
    rto_episode: bool,
    /// Linux's slow-start exit (flavour `Linux` only).
    hystart: HyStart,
}

impl Cubic {
    /// Starts with `initial_window` segments and an arbitrarily high ssthresh (RFC 5681 §3.1).
    pub fn new(initial_window: u32, mss: u64, counting: Counting) -> Self {
        Cubic {
            mss,
            cwnd: initial_window as u64 * mss,
            ssthresh: u64::MAX / 4,
            counting,
            flavour: CubicFlavour::Rfc9438,
            acc: 0.0,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            min_rtt: None,
            rto_episode: false,
            hystart: HyStart::default(),
        }
    }

    /// The same controller growing as `flavour` says.
    pub fn flavour(mut self, flavour: CubicFlavour) -> Self {
        self.flavour = flavour;
        self
    }

    /// W_max of the current (or next) congestion avoidance stage, segments.
    pub fn w_max(&self) -> f64 {
        self.epoch.map_or(self.w_max, |e| e.w_max)
    }

    /// K of the current congestion avoidance stage, seconds (`None` outside one).
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    /// W_est of the current congestion avoidance stage, segments.
    pub fn w_est(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_est)
    }

    /// The smallest RTT sample seen, the RTT of §4.2's `W_cubic(t + RTT)`.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// RFC 9438 §4.2 Figure 1: W_cubic(t) = C (t - K)^3 + W_max, segments.
    pub fn w_cubic(k: f64, w_max: f64, t: f64) -> f64 {
        C * (t - k).powi(3) + w_max
    }

    /// RFC 9438 §4.2 Figure 2: K = cubic_root((W_max - cwnd_epoch) / C), seconds; 0 when the
    /// stage starts at or above W_max (then W_max is the starting window, as in §4.8 and
    /// Linux's `bictcp_update`).
    pub fn k_of(w_max: f64, cwnd_epoch: f64) -> f64 {
        if cwnd_epoch >= w_max {
            0.0
        } else {
            ((w_max - cwnd_epoch) / C).cbrt()
        }
    }

    fn segs(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss as f64
    }

    /// Shared by loss and timeout: RFC 9438 §4.6 and §4.7 from the current window.
    fn reduce(&mut self) {
        let (cwnd, w_max, ssthresh) = match self.flavour {
            CubicFlavour::Rfc9438 => {
                let cwnd = self.segs(self.cwnd);
                // §4.7 fast convergence: a loss before the window regained the last W_max
                // means another flow took bandwidth; release more by lowering the plateau.
                let w_max = if cwnd < self.w_max {
                    cwnd * (1.0 + BETA) / 2.0
                } else {
                    cwnd
                };
                // §4.6: ssthresh = beta_cubic * cwnd, at least 2 SMSS.
                let ssthresh = ((self.cwnd as f64 * BETA) as u64).max(2 * self.mss);
                (cwnd, w_max, ssthresh)
            }
            CubicFlavour::Linux => self.reduced_as_linux(),
        };
        self.w_max = w_max;
        self.cwnd_prior = cwnd;
        self.ssthresh = ssthresh;
        self.epoch = None;
        self.acc = 0.0;
    }

    /// The window (segments), W_max (segments) and ssthresh (bytes) after a reduction, as
    /// Linux's `bictcp_recalc_ssthresh` makes it: the window is a whole number of segments and
    /// the products are rounded down, `ssthresh = max(cwnd * 717 / 1024, 2)` and, with fast
    /// convergence, `W_max = cwnd * (1024 + 717) / 2048`, so 8 segments leave 5 (not 5.6).
    fn reduced_as_linux(&self) -> (f64, f64, u64) {
        const BETA_SCALE: u64 = 1024;
        const BETA_LINUX: u64 = 717;
        let cwnd = self.cwnd / self.mss;
        let w_max = if (cwnd as f64) < self.w_max {
            cwnd * (BETA_SCALE + BETA_LINUX) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        let ssthresh = (cwnd * BETA_LINUX / BETA_SCALE).max(2) * self.mss;
        (cwnd as f64, w_max as f64, ssthresh)
    }

    /// One ACK in congestion avoidance (RFC 9438 §4.2-§4.5).
    fn avoid(&mut self, a: &AckInfo) {
        let mss = self.mss as f64;
        let cwnd_seg = self.segs(self.cwnd);
        // §4.2: a new stage; cwnd_epoch is the window now. §4.8: after a timeout (or with
        // no loss yet) W_max is 0, so K = 0 and the plateau is cwnd_epoch.
        let fresh = Epoch {
            start: a.now,
            k: Cubic::k_of(self.w_max, cwnd_seg),
            w_max: self.w_max.max(cwnd_seg),
            // §4.3: W_est starts at cwnd_epoch.
            w_est: cwnd_seg,
            last_ack: a.now,
        };
        let e = self.epoch.get_or_insert(fresh);
        let acked = a.acked as f64 / mss;
        // §4.3: W_est += alpha_cubic * segments_acked / cwnd; alpha_cubic becomes 1 once
        // W_est has reached cwnd_prior (not in Linux: `beta_scale` is a constant).
        let linux = self.flavour == CubicFlavour::Linux;
        let alpha = if !linux && e.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        e.w_est += alpha * acked / cwnd_seg;
        let t = a.now.saturating_since(e.start).as_secs_f64();
        let rtt = self.min_rtt.map_or(0.0, |r| r.as_secs_f64());
        e.last_ack = a.now;
        let (k, w_max, w_est) = (e.k, e.w_max, e.w_est);
        if linux {
            self.grow_as_linux(k, w_max, w_est, t + rtt, acked);
            return;
        }
        if Cubic::w_cubic(k, w_max, t) < w_est {
            // §4.3: the Reno-friendly region; cwnd = W_est (never lowered by an ACK).
            let w = (w_est * mss) as u64;
            if w > self.cwnd {
                self.cwnd = w;
                self.acc = 0.0;
            }
            return;
        }
        // §4.2: target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd].
        let target = Cubic::w_cubic(k, w_max, t + rtt).clamp(cwnd_seg, 1.5 * cwnd_seg);
        // §4.4 (concave, cwnd < W_max) and §4.5 (convex, cwnd >= W_max) grow alike:
        // cwnd += (target - cwnd) / cwnd per acknowledged segment.
        self.add_segments((target - cwnd_seg) / cwnd_seg * acked);
    }

    /// Linux's `bictcp_update` and `tcp_cong_avoid_ai`: `acked` segments each add 1/cnt of
    /// a segment, cnt = cwnd / (target - cwnd) with target the larger of the cubic curve at
    /// `t_rtt` and W_est; cnt is at least 2, at most 20 before the first loss (W_max = 0 when
    /// the stage began), and 100 cwnd when cwnd is at or above the target.
    fn grow_as_linux(&mut self, k: f64, w_max: f64, w_est: f64, t_rtt: f64, acked: f64) {
        let cwnd = self.segs(self.cwnd);
        let target = Cubic::w_cubic(k, w_max, t_rtt).max(w_est);
        let mut cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            100.0 * cwnd
        };
        if self.w_max == 0.0 {
            cnt = cnt.min(20.0);
        }
        self.add_segments(acked / cnt.max(2.0));
    }

    /// Adds `segs` (fractional) segments to the window, carrying the fraction.
    fn add_segments(&mut self, segs: f64) {
        self.acc += segs * self.mss as f64;
        let whole = self.acc.floor();
        self.cwnd += whole as u64;
        self.acc -= whole;
    }
}

impl CongestionControl for Cubic {
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn on_ack(&mut self, a: &AckInfo) {
        self.rto_episode = false;
        let linux = self.flavour == CubicFlavour::Linux;
        let sample = if linux { a.ca_rtt.or(a.rtt) } else { a.rtt };
        if let Some(r) = sample {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        if let (true, Some(r), Some(m)) = (linux, sample, self.min_rtt) {
            // HyStart judges every ACK of a slow start, window-limited or not (Linux's
            // `pkts_acked` runs before `cong_avoid`).
            let cwnd = self.cwnd / self.mss;
            if self.cwnd < self.ssthresh && self.hystart.on_ack(a.now, a.una, a.snd_max, cwnd, r, m)
            {
                self.ssthresh = self.cwnd;
            }
        }
        // RFC 9438 §5.8: no growth while the window is not what limits the sender, and that
        // time does not count in t.
        if a.flight + a.mss < self.cwnd {
            if let Some(e) = self.epoch.as_mut() {
                e.start += a.now.saturating_since(e.last_ack);
                e.last_ack = a.now;
            }
            return;
        }
        if self.cwnd < self.ssthresh {
            // RFC 9438 §4.10 / RFC 5681 §3.1 eq. (2): slow start (RFC 3465 §2.2 when
            // counting bytes).
            self.cwnd += self.counting.slow_start(a.acked, a.mss);
            return;
        }
        self.avoid(a);
    }
    /// RFC 9438 §4.6 writes `ssthresh = flight_size * beta_cubic` and notes that some
    /// implementations use cwnd; Linux (`bictcp_recalc_ssthresh`) and Windows use cwnd, which
    /// the RFC's authors kept as the deployed and more robust choice for application-limited
    /// senders. This one uses cwnd too, so `_flight` is unused; growth stops while the sender
    /// is not window-limited (§5.8), which keeps cwnd near the flight.
    fn on_loss(&mut self, _flight: u64, _mss: u64) {
        self.reduce();
        // §4.6: cwnd = max(ssthresh, 2 SMSS) (the sender then inflates it for Reno/NewReno).
        self.cwnd = self.ssthresh;
        self.rto_episode = false;
    }
    fn on_timeout(&mut self, _flight: u64, mss: u64) {
        // §4.8: ssthresh as in §4.6 (once per timeout episode: a backed-off timeout with no
        // new data acknowledged keeps it), cwnd = 1 SMSS (RFC 5681 loss window), and the next
        // congestion avoidance stage starts its curve with K = 0 and W_max = cwnd_epoch.
        if !self.rto_episode {
            self.reduce();
        }
        self.w_max = 0.0;
        self.epoch = None;
        self.acc = 0.0;
        self.cwnd = mss;
        self.rto_episode = true;
        self.hystart.restart();
    }
    fn set_cwnd(&mut self, cwnd: u64) {
        self.cwnd = cwnd;
    }
    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
#[path = "cubic_tests.rs"]
mod tests;
