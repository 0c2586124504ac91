//! RACK-TLP, RFC 8985: loss detection by time, and the tail loss probe.
//!
//! Contract. [`Rack`] keeps what RFC 8985 §5 asks of a sender: per outstanding segment its
//! latest transmit time and whether it was retransmitted (one entry per segment in flight,
//! dropped as the cumulative ACK passes: memory follows the flight, never the transfer), and
//! `RACK.xmit_ts`, `RACK.end_seq`, `RACK.rtt`, `RACK.min_RTT`, `RACK.fack`,
//! `RACK.segs_sacked` (asked of the scoreboard) and `RACK.reordering_seen`. The sender calls
//! [`Rack::on_send`] for every transmission, [`Rack::on_delivered`] for every segment an ACK
//! newly acknowledges or SACKs (§6.2 steps 1-3), and [`Rack::detect_loss`] after each ACK and
//! when the reordering timer fires (§6.2 step 5, `RACK_detect_loss`): it marks lost, in the
//! [`Scoreboard`], every unSACKed segment sent at least `RACK.rtt + reo_wnd` before the most
//! recently delivered one, and returns when the next one would be (the reordering timer).
//! [`Rack::mark_losses_on_rto`] is §6.3's RTO rule. The TLP state (§7) is [`Tlp`]; the
//! sender (`sender/recovery.rs`) arms its timers and sends the probes. Sans-IO: `now` comes in.
//!
//! `reo_wnd` (§6.2 step 4): `min(RACK.min_RTT / 4, SRTT)`, or 0 while no reordering has been
//! seen and the sender is in recovery or holds DupThresh SACKed segments. The receiver in this
//! model sends no DSACK (RFC 2883), so `RACK.reo_wnd_mult` stays 1: the window does not grow
//! after spurious retransmissions, it only follows `min_RTT`.

use std::collections::VecDeque;

use mslink_link::{Duration, Instant};

use super::sack::Scoreboard;

/// RFC 8985 §5.2, per segment.
#[derive(Clone, Copy, Debug)]
struct SegTx {
    /// `Segment.xmit_ts`: the latest transmission.
    xmit_ts: Instant,
    /// `Segment.retransmitted`.
    retransmitted: bool,
}

/// The RTT samples one ACK gives, from the send times of the never-retransmitted segments
/// it delivers (cumulatively or by SACK), as Linux takes them (`tcp_clean_rtx_queue`,
/// `tcp_sacktag_write_queue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRtts {
    /// The most recently sent segment's: what the congestion control sees (`ca_rtt_us`).
    pub newest: Duration,
    /// The earliest sent segment's: what the retransmission timer sees (`seq_rtt_us`,
    /// else `sack_rtt_us`).
    pub oldest: Duration,
}

/// The RACK state of one sender.
#[derive(Clone, Debug)]
pub struct Rack {
    mss: u64,
    /// Segment index of `segs[0]`.
    base: u64,
    segs: VecDeque<SegTx>,
    /// `RACK.xmit_ts` and `RACK.end_seq` of the most recently sent segment delivered.
    xmit_ts: Option<Instant>,
    end_seq: u64,
    /// `RACK.rtt`.
    rtt: Duration,
    /// `RACK.min_RTT`.
    min_rtt: Option<Duration>,
    /// `RACK.fack`: the highest end sequence delivered.
    fack: u64,
    /// `RACK.reordering_seen`.
    reordering_seen: bool,
    /// An RTT sample arrived since the last loss probe (§7.3 condition 2).
    rtt_since_probe: bool,
    /// The smallest and largest RTT of the never-retransmitted segments delivered since the
    /// last [`Rack::take_ack_rtts`].
    ack_rtts: Option<AckRtts>,
}

impl Rack {
    /// An empty state for `mss`-byte segments.
    pub fn new(mss: u64) -> Self {
        Rack {
            mss,
            base: 0,
            segs: VecDeque::new(),
            xmit_ts: None,
            end_seq: 0,
            rtt: Duration::ZERO,
            min_rtt: None,
            fack: 0,
            reordering_seen: false,
            rtt_since_probe: true,
            ack_rtts: None,
        }
    }

    /// The RTTs of the never-retransmitted segments delivered since the last call (one
    /// ACK's worth when called once per ACK), if there were any.
    pub fn take_ack_rtts(&mut self) -> Option<AckRtts> {
        self.ack_rtts.take()
    }

    /// `RACK.min_RTT`.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// `RACK.rtt`.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// Whether reordering was seen.
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// Whether an RTT sample arrived since the last probe (RFC 8985 §7.3 condition 2).
    pub fn rtt_since_probe(&self) -> bool {
        self.rtt_since_probe
    }

    /// A loss probe went out.
    pub fn on_probe(&mut self) {
        self.rtt_since_probe = false;
    }

    fn entry(&mut self, k: u64) -> Option<&mut SegTx> {
        let i = k.checked_sub(self.base)? as usize;
        self.segs.get_mut(i)
    }

    /// The latest transmit time of the first segment the cumulative ACK has not passed (the
    /// head), if it was sent.
    pub fn head_xmit_ts(&self) -> Option<Instant> {
        self.segs.front().map(|s| s.xmit_ts)
    }

    /// Segment `k` was sent at `now` (again if `again`).
    pub fn on_send(&mut self, k: u64, now: Instant, again: bool) {
        if k < self.base {
            return;
        }
        let i = (k - self.base) as usize;
        if i >= self.segs.len() {
            let fill = SegTx {
                xmit_ts: now,
                retransmitted: false,
            };
            self.segs.resize(i + 1, fill);
        }
        let s = &mut self.segs[i];
        s.xmit_ts = now;
        s.retransmitted |= again;
    }

    /// Forgets the segments the cumulative ACK `una` covers.
    pub fn advance(&mut self, una: u64) {
        let k = una / self.mss;
        while self.base < k {
            if self.segs.pop_front().is_none() {
                self.base = k;
                break;
            }
            self.base += 1;
        }
    }

    /// RFC 8985 §6.2 steps 1-3 for segment `k` (`[k*mss, end)`), newly delivered by an ACK
    /// arriving at `now`: `RACK_update_min_RTT`, `RACK_update` and `RACK_detect_reordering`.
    pub fn on_delivered(&mut self, k: u64, end: u64, now: Instant) {
        let Some(s) = self.entry(k).copied() else {
            return;
        };
        let rtt = now.saturating_since(s.xmit_ts);
        if !s.retransmitted {
            self.ack_rtts = Some(match self.ack_rtts {
                None => AckRtts {
                    newest: rtt,
                    oldest: rtt,
                },
                Some(a) => AckRtts {
                    newest: a.newest.min(rtt),
                    oldest: a.oldest.max(rtt),
                },
            });
        }
        // Step 3 (RACK_detect_reordering): delivered below the highest delivered, never
        // retransmitted, so it was reordered, not lost.
        if end > self.fack {
            self.fack = end;
        } else if !s.retransmitted {
            self.reordering_seen = true;
        }
        // Step 2: an ACK of a retransmitted segment faster than min_RTT is probably for the
        // original (no timestamps here to tell): ignore it.
        if s.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rtt = rtt;
        self.rtt_since_probe = true;
        // Step 1 (RACK_update_min_RTT; a global minimum, the path here does not change).
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        // RACK_sent_after(Segment.xmit_ts, Segment.end_seq, RACK.xmit_ts, RACK.end_seq).
        if self
            .xmit_ts
            .is_none_or(|t| s.xmit_ts > t || (s.xmit_ts == t && end > self.end_seq))
        {
            self.xmit_ts = Some(s.xmit_ts);
            self.end_seq = end;
        }
    }

    /// RFC 8985 §6.2 step 4, `RACK_update_reo_wnd` without DSACK (`reo_wnd_mult` = 1).
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        segs_sacked: u64,
        dupthresh: u32,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reordering_seen && (in_recovery || segs_sacked >= u64::from(dupthresh)) {
            return Duration::ZERO;
        }
        let w = Duration::from_nanos(self.min_rtt.map_or(0, |m| m.as_nanos() / 4));
        srtt.map_or(w, |s| w.min(s))
    }

    /// RFC 8985 §6.2 step 5, `RACK_detect_loss`: marks in `sb` every outstanding segment
    /// below `snd_max` not SACKed that was sent before RACK's segment and at least
    /// `RACK.rtt + reo_wnd` ago; returns how many it newly marked and, if some segment sent
    /// before RACK's is not yet that old, the time left until it is (the reordering timer).
    pub fn detect_loss(
        &self,
        now: Instant,
        reo_wnd: Duration,
        sb: &mut Scoreboard,
        snd_max: u64,
    ) -> (u64, Option<Duration>) {
        let Some(rack_ts) = self.xmit_ts else {
            return (0, None);
        };
        let mut marked = 0;
        let mut timeout: Option<Duration> = None;
        for (i, s) in self.segs.iter().enumerate() {
            let k = self.base + i as u64;
            let seq = k * self.mss;
            if seq >= snd_max {
                break;
            }
            let end = seq + sb.len_of(k);
            if sb.is_sacked(seq) || sb.is_marked_lost(k) {
                continue;
            }
            // RACK_sent_after(RACK.xmit_ts, RACK.end_seq, Segment.xmit_ts, Segment.end_seq).
            let after = rack_ts > s.xmit_ts || (rack_ts == s.xmit_ts && self.end_seq > end);
            if !after {
                continue;
            }
            let due = s.xmit_ts + self.rtt + reo_wnd;
            if due <= now {
                marked += u64::from(sb.mark_lost(k));
            } else {
                let left = due.saturating_since(now);
                timeout = Some(timeout.map_or(left, |t| t.max(left)));
            }
        }
        (marked, timeout)
    }

    /// RFC 8985 §6.3, `RACK_mark_losses_on_RTO`: the first outstanding segment (sent an RTO
    /// ago) and every other unSACKed one sent at least `RACK.rtt + reo_wnd` ago are lost.
    pub fn mark_losses_on_rto(
        &self,
        now: Instant,
        reo_wnd: Duration,
        sb: &mut Scoreboard,
        una: u64,
        snd_max: u64,
    ) -> u64 {
        let mut marked = 0;
        for (i, s) in self.segs.iter().enumerate() {
            let k = self.base + i as u64;
            let seq = k * self.mss;
            if seq >= snd_max {
                break;
            }
            if seq + sb.len_of(k) <= una || sb.is_sacked(seq) {
                continue;
            }
            if seq <= una || s.xmit_ts + self.rtt + reo_wnd <= now {
                marked += u64::from(sb.mark_lost(k));
            }
        }
        marked
    }
}

/// RFC 8985 §7, the tail loss probe of one sender.
#[derive(Clone, Debug, Default)]
pub struct Tlp {
    /// When the probe timeout (PTO) fires.
    pub pto_deadline: Option<Instant>,
    /// When the RACK reordering timer fires.
    pub reo_deadline: Option<Instant>,
    /// The PTO fired: the next `poll_transmit` sends the probe.
    pub probe_pending: bool,
    /// `TLP.end_seq`: `snd_nxt` after the probe still unresolved.
    pub end_seq: Option<u64>,
    /// `TLP.is_retrans`.
    pub is_retrans: bool,
    /// The sender is recovering from a retransmission timeout (until `recover` is ACKed).
    pub rto_recovery: bool,
    /// A fast recovery just began: its first lost segment goes out whatever the window
    /// (RFC 6675 §5 step 4.3, the fast retransmit).
    pub fast_rtx: bool,
}

/// RFC 8985 §7.2: `PTO = 2 * SRTT` (1 s before the first sample), plus `wc_del_ack` (the
/// worst-case delayed ACK, `WCDelAckT`) when one segment is in flight, at least `floor`
/// (Linux's 10 ms `TCP_TIMEOUT_MIN`-like floor, so a LAN's microsecond SRTT does not make
/// probes spurious), and never later than the RTO would fire (`rto_left`).
pub fn pto(
    srtt: Option<Duration>,
    one_segment: bool,
    wc_del_ack: Duration,
    floor: Duration,
    rto_left: Option<Duration>,
) -> Duration {
    let mut p = srtt.map_or(Duration::from_secs(1), |s| s.saturating_mul(2));
    if one_segment {
        p = p + wc_del_ack;
    }
    p = p.max(floor);
    rto_left.map_or(p, |r| p.min(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    /// Ten segments sent 1 ms apart from t = 0; segment 1 never arrives, the others are SACKed
    /// 100 ms after they were sent.
    fn setup() -> (Rack, Scoreboard) {
        let mut r = Rack::new(MSS);
        let sb = Scoreboard::new(MSS, 1_000_000);
        for k in 0..10 {
            r.on_send(k, ms(k), false);
        }
        (r, sb)
    }

    fn sack(r: &mut Rack, sb: &mut Scoreboard, k: u64, now: Instant) {
        sb.update_with(&[(k * MSS, (k + 1) * MSS)], |j| {
            r.on_delivered(j, (j + 1) * MSS, now)
        });
    }

    /// RFC 8985 §6.2: a segment is lost once one sent after it is delivered and `RACK.rtt +
    /// reo_wnd` has passed since it was sent; before that the reordering timer is armed for
    /// the remainder, so reordering within reo_wnd is tolerated.
    #[test]
    fn a_later_sent_delivery_marks_loss_only_after_reo_wnd() {
        let (mut r, mut sb) = setup();
        r.on_delivered(0, MSS, ms(100));
        r.advance(MSS);
        sb.advance(MSS);
        sack(&mut r, &mut sb, 2, ms(102));
        assert_eq!(r.rtt(), Duration::from_millis(100));
        assert_eq!(r.min_rtt(), Some(Duration::from_millis(100)));
        // No reordering seen, one SACKed segment: reo_wnd = min_RTT / 4 = 25 ms.
        let w = r.reo_wnd(
            false,
            sb.sacked_count(),
            3,
            Some(Duration::from_millis(100)),
        );
        assert_eq!(w, Duration::from_millis(25));
        // Segment 1 was sent at 1 ms: lost at 1 + 100 + 25 = 126 ms, not before.
        let (n, t) = r.detect_loss(ms(102), w, &mut sb, 10 * MSS);
        assert_eq!((n, t), (0, Some(Duration::from_millis(24))));
        assert!(!sb.is_marked_lost(1));
        let (n, t) = r.detect_loss(ms(126), w, &mut sb, 10 * MSS);
        assert_eq!((n, t), (1, None));
        assert!(sb.is_marked_lost(1));
        assert_eq!(sb.first_lost(MSS), Some(MSS));
        // pipe: 2..9 minus SACKed 2: segments 3..9 = 7000 bytes; the lost one counts 0.
        assert_eq!(sb.rack_pipe(MSS, 10 * MSS), 7000);
        sb.on_retransmit(MSS);
        assert_eq!(
            sb.rack_pipe(MSS, 10 * MSS),
            8000,
            "the retransmission is in flight"
        );
        // With DupThresh SACKed segments (and no reordering seen) the window is 0.
        for k in 3..5 {
            sack(&mut r, &mut sb, k, ms(104));
        }
        assert_eq!(r.reo_wnd(false, 3, 3, None), Duration::ZERO);
    }

    /// RFC 8985 §6.2 step 3: a segment delivered below RACK.fack and never retransmitted was
    /// reordered; from then on reo_wnd stays min_RTT/4 even in recovery.
    #[test]
    fn a_late_original_is_reordering() {
        let (mut r, mut sb) = setup();
        sack(&mut r, &mut sb, 5, ms(105));
        assert!(!r.reordering_seen());
        assert_eq!(r.reo_wnd(true, 1, 3, None), Duration::ZERO);
        sack(&mut r, &mut sb, 3, ms(106));
        assert!(r.reordering_seen());
        assert_eq!(r.reo_wnd(true, 2, 3, None), Duration::from_millis(25));
    }

    /// RFC 8985 §6.3: on an RTO the first outstanding segment is lost, and so is every other
    /// one sent at least RACK.rtt + reo_wnd ago; recent ones are not.
    #[test]
    fn rto_marks_the_first_and_the_old_segments() {
        let (mut r, mut sb) = setup();
        r.on_delivered(0, MSS, ms(100));
        r.advance(MSS);
        sb.advance(MSS);
        r.on_send(9, ms(1000), true);
        let n = r.mark_losses_on_rto(ms(1050), Duration::ZERO, &mut sb, MSS, 10 * MSS);
        assert_eq!(n, 8, "segments 1-8; 9 was resent 50 ms ago, under RACK.rtt");
        assert!(!sb.is_marked_lost(9) && sb.is_marked_lost(1));
    }

    #[test]
    fn pto_follows_rfc8985_section_7_2() {
        let srtt = Some(Duration::from_millis(100));
        let d = Duration::from_millis(200);
        let f = Duration::from_millis(10);
        assert_eq!(pto(srtt, false, d, f, None), Duration::from_millis(200));
        assert_eq!(pto(srtt, true, d, f, None), Duration::from_millis(400));
        let rto = Some(Duration::from_millis(300));
        assert_eq!(pto(srtt, true, d, f, rto), Duration::from_millis(300));
        let tiny = Some(Duration::from_micros(100));
        assert_eq!(pto(tiny, false, d, f, None), f);
        assert_eq!(pto(None, false, d, f, None), Duration::from_secs(1));
    }
}
