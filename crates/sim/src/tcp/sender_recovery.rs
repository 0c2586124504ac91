//! The sender's glue for PRR (RFC 6937) and RACK-TLP (RFC 8985): what each ACK delivered,
//! PRR's `sndcnt` per ACK, RACK's loss marking and timers, and the tail loss probe.
//!
//! Contract. A child of `sender.rs`, kept apart so the classic recovery there stays as it
//! was: every method is a no-op unless its option is on (`prr` and `rack` in `TcpConfig`).
//! The arithmetic lives in `prr.rs` and `rack.rs`; here is only when to call it.

use mslink_link::{Duration, Instant};

use super::super::rack;
use super::super::segment::Segment;
use super::super::Variant;
use super::Sender;

/// Floor of the probe timeout (RFC 8985 §7.2 leaves it to the implementation; Linux: 10 ms).
const PTO_FLOOR: Duration = Duration::from_millis(10);

impl Sender {
    /// Applies an ACK's SACK blocks and returns RFC 6937's `DeliveredData`: bytes newly
    /// cumulatively acknowledged that were not SACKed before, plus bytes newly SACKed (the
    /// change in snd.una plus the change in SACKd). Tells RACK about every segment delivered
    /// (RFC 8985 §6.2 steps 1-3).
    pub(super) fn sack_delivered(&mut self, now: Instant, ack: u64, blocks: &[(u64, u64)]) -> u64 {
        let mss = self.mss;
        let total = self.total;
        let mut newly = 0;
        let rack = &mut self.rack;
        let sb = &mut self.sb;
        sb.update_with(blocks, |k| {
            let end = ((k + 1) * mss).min(total);
            newly += end - k * mss;
            if let Some(r) = rack.as_mut() {
                r.on_delivered(k, end, now);
            }
        });
        let mut cum = 0;
        if ack > self.snd_una {
            let (lo, hi) = (self.snd_una / mss, ack.div_ceil(mss));
            for k in lo..hi {
                let (a, b) = ((k * mss).max(self.snd_una), ((k + 1) * mss).min(ack));
                if self.sb.is_sacked(k * mss) || b <= a {
                    continue;
                }
                cum += b - a;
                if let Some(r) = self.rack.as_mut() {
                    r.on_delivered(k, (k + 1) * mss, now);
                }
            }
        }
        cum + newly
    }

    /// After an ACK was processed: RACK's loss detection (RFC 8985 §6.2 step 5), TLP's
    /// (§7.4), re-arming the probe timeout (§7.2), then PRR's `sndcnt` (RFC 6937 §3).
    pub(super) fn after_ack(
        &mut self,
        now: Instant,
        a: &Segment,
        prior_una: u64,
        dup: bool,
        delivered: u64,
    ) {
        if let Some(r) = self.rack.as_mut() {
            r.advance(self.snd_una);
            self.rearm_on_sack(now, prior_una);
            self.rack_detect(now);
            self.tlp_on_ack(a, prior_una, dup);
            if self.tlp.rto_recovery && self.recover.is_none_or(|r| self.snd_una >= r) {
                self.tlp.rto_recovery = false;
            }
            // §7.2: re-armed on a cumulative ACK; stopped while SACKed data waits for RACK.
            if self.snd_una > prior_una || self.sb.any() {
                self.arm_pto(now);
            }
        }
        self.prr_update(delivered);
    }

    /// Linux's `tcp_clean_rtx_queue` (with `rto_flavour = "linux"`): an ACK that leaves the
    /// cumulative edge where it was but SACKs never-retransmitted data sent before the head's
    /// last transmission (its RTT sample longer than the time since then) restarts the
    /// retransmission timer, so a repair queued behind a long flight is given the time that
    /// flight takes to drain; SACKs of data sent after the repair do not, or the timer could be
    /// pushed back for ever in a recovery.
    fn rearm_on_sack(&mut self, now: Instant, prior_una: u64) {
        if !self.linux_rtt_sampling() || self.snd_una != prior_una || self.deadline.is_none() {
            return;
        }
        let head = self.rack.as_ref().and_then(|r| r.head_xmit_ts());
        let (Some(rtts), Some(head)) = (self.ack_rtts, head) else {
            return;
        };
        if rtts.oldest > now.saturating_since(head) {
            self.deadline = Some(now + self.rto.rto());
        }
    }

    /// A recovery began (by DupThresh or by RACK): RFC 6937 §3 initialisation, with RecoverFS
    /// the FlightSize (`snd.nxt - snd.una`) less what limited transmit sent, as RFC 5681 §3.2
    /// step 2 counts it for ssthresh and as RFC 6937 §3.1's example counts it (FlightSize 20
    /// with two limited-transmit segments out); the probe timer stops (RFC 8985 §7.2).
    pub(super) fn recovery_started(&mut self) {
        let fs = (self.snd_max - self.snd_una).saturating_sub(self.limited_sent);
        if let Some(p) = self.prr.as_mut() {
            p.start(fs);
            self.prr_budget = 0;
        }
        self.tlp.pto_deadline = None;
        self.tlp.fast_rtx = self.rack.is_some();
    }

    /// Whether RTT samples are taken as Linux takes them (`rto_flavour = "linux"` with RACK):
    /// from every ACK, not from one timed segment per round trip.
    pub(super) fn linux_rtt_sampling(&self) -> bool {
        self.linux_timer && self.rack.is_some()
    }

    /// Linux's `tcp_ack_update_rtt`: the sample is the RTT of the earliest sent
    /// never-retransmitted segment this ACK delivered, cumulatively or by SACK (so the timer
    /// follows a growing queue through a recovery, when the cumulative ACK stands still);
    /// failing that, an ACK of new data gives the RFC 7323 echo.
    pub(super) fn linux_rtt_sample(&mut self, now: Instant, a: &Segment) {
        let echo =
            a.ts.filter(|_| a.ack > self.snd_una)
                .map(|t| super::super::timestamps::rtt(now, t.ecr));
        let Some(r) = self.ack_rtts.map(|r| r.oldest).or(echo) else {
            return;
        };
        let una = a.ack.max(self.snd_una);
        self.rto.sample_in_round(r, una, self.snd_max);
        self.stats.rtt_samples += 1;
    }

    /// Whether PRR decides what may be sent now.
    pub(super) fn prr_governs(&self) -> bool {
        self.in_recovery && self.prr.is_some()
    }

    /// RFC 6937 §3 on an ACK in recovery: `sndcnt` from `DeliveredData` and `pipe` (RFC
    /// 6675's from the scoreboard, RACK's when RACK is on, or, without SACK, the flight less one
    /// SMSS per duplicate ACK since the last cumulative advance), then `cwnd = pipe + sndcnt`.
    pub(super) fn prr_update(&mut self, delivered: u64) {
        if !self.prr_governs() {
            return;
        }
        let ssthresh = self.cc.ssthresh();
        let pipe = match (self.variant, self.rack.is_some()) {
            (Variant::Sack, true) => self.sb.rack_pipe(self.snd_una, self.snd_max),
            (Variant::Sack, false) => {
                self.sb
                    .pipe(self.snd_una, self.snd_max, self.high_rxt, self.dupthresh)
            }
            _ => (self.snd_max - self.snd_una).saturating_sub(u64::from(self.dupacks) * self.mss),
        };
        let Some(p) = self.prr.as_mut() else {
            return;
        };
        let mut sndcnt = p.sndcnt(delivered, pipe, ssthresh, self.mss);
        if p.out() == 0 {
            // RFC 9937 (6937bis) §4: the fast retransmit goes out even if sndcnt is 0.
            sndcnt = sndcnt.max(self.mss);
        }
        self.prr_budget = sndcnt;
        self.cc.set_cwnd((pipe + sndcnt).max(self.mss));
    }

    /// Bookkeeping of every transmission: PRR's `prr_out`, RACK's transmit time, and the
    /// probe timeout after new data (RFC 8985 §7.2).
    pub(super) fn on_emit(&mut self, now: Instant, seq: u64, len: u64, again: bool) {
        if self.prr_governs() {
            if let Some(p) = self.prr.as_mut() {
                p.on_send(len);
            }
            self.prr_budget = self.prr_budget.saturating_sub(len);
            self.stats.prr_sent += 1;
        }
        if let Some(r) = self.rack.as_mut() {
            r.on_send(seq / self.mss, now, again);
            if again {
                self.sb.on_retransmit(seq);
            } else {
                self.arm_pto(now);
            }
        }
    }

    /// RFC 8985 §7.2: (re)arms the probe timeout when not in recovery, no SACKed data waits
    /// for RACK, and data is outstanding; otherwise stops it.
    fn arm_pto(&mut self, now: Instant) {
        let flight = self.snd_max - self.snd_una;
        if self.in_recovery || self.tlp.rto_recovery || self.sb.any() || flight == 0 {
            self.tlp.pto_deadline = None;
            return;
        }
        let rto_left = self.deadline.map(|t| t.saturating_since(now));
        let p = rack::pto(
            self.rto.srtt(),
            flight <= self.mss,
            self.wc_del_ack,
            PTO_FLOOR,
            rto_left,
        );
        self.tlp.pto_deadline = Some(now + p);
    }

    /// RFC 8985 §6.2 step 5 and §6.3: `RACK_detect_loss_and_arm_timer`; a loss starts a
    /// recovery unless one (or an RTO recovery) is already under way.
    fn rack_detect(&mut self, now: Instant) {
        let Some(r) = self.rack.as_ref() else {
            return;
        };
        let w = r.reo_wnd(
            self.in_recovery || self.tlp.rto_recovery,
            self.sb.sacked_count(),
            self.dupthresh,
            self.rto.srtt(),
        );
        let (n, left) = r.detect_loss(now, w, &mut self.sb, self.snd_max);
        self.stats.rack_marked_lost += n;
        self.tlp.reo_deadline = left.map(|d| now + d);
        if n > 0 && !self.in_recovery && !self.tlp.rto_recovery && !self.is_done() {
            self.stats.rack_recoveries += 1;
            self.enter_recovery();
        }
    }

    /// RFC 8985 §7.4.2, `TLP_process_ack`. Without DSACK in this model, a probe that was a
    /// retransmission is found needless by a duplicate ACK without SACK blocks (the receiver
    /// already held the data), and found to have repaired a loss when the cumulative ACK
    /// passes it; then the window is reduced as for a fast recovery.
    fn tlp_on_ack(&mut self, a: &Segment, prior_una: u64, dup: bool) {
        let Some(end) = self.tlp.end_seq else {
            return;
        };
        if a.ack < end {
            return;
        }
        if !self.tlp.is_retrans {
            self.tlp.end_seq = None;
        } else if a.ack > end {
            self.tlp.end_seq = None;
            if !self.in_recovery {
                self.stats.tlp_recoveries += 1;
                let flight = self.snd_max - prior_una;
                self.cc.on_loss(flight, self.mss);
                let ss = self.cc.ssthresh();
                self.cc.set_cwnd(ss);
            }
        } else if dup && a.sack_blocks().is_empty() {
            self.tlp.end_seq = None;
        }
    }

    /// The RACK timers: the reordering timer (RFC 8985 §6.3) and the probe timeout (§7.3).
    pub(super) fn rack_timers(&mut self, now: Instant) {
        if self.rack.is_none() {
            return;
        }
        if self.tlp.reo_deadline.is_some_and(|t| t <= now) {
            self.tlp.reo_deadline = None;
            self.stats.reorder_timeouts += 1;
            let (was, marked) = (self.in_recovery, self.stats.rack_marked_lost);
            self.rack_detect(now);
            if self.in_recovery && !was {
                self.prr_update(0);
            } else if was && self.stats.rack_marked_lost > marked && self.prr_governs() {
                // Already recovering (Linux's `tcp_rack_reo_timeout`): the segments just
                // marked leave the flight, and `tcp_xmit_retransmit_queue` resends lost ones
                // while the flight is below the window the last ACK's PRR step set. Without
                // this the repairs waited for an ACK that, with the rest of the flight lost
                // too, never came: a timeout.
                let pipe = self.sb.rack_pipe(self.snd_una, self.snd_max);
                self.prr_budget = self.cc.cwnd().saturating_sub(pipe);
            }
        }
        if self.tlp.pto_deadline.is_some_and(|t| t <= now) {
            self.tlp.pto_deadline = None;
            // §7.3: one probe per episode, and only after an RTT sample since the last one.
            let rtt_ok = self.rack.as_ref().is_some_and(|r| r.rtt_since_probe());
            if self.tlp.end_seq.is_none() && rtt_ok && self.snd_max > self.snd_una {
                self.tlp.probe_pending = true;
            }
            // §7.3: after a probe (or none), the RTO timer, not the PTO, is armed.
            if self.snd_max > self.snd_una {
                self.deadline = Some(now + self.rto.rto());
            }
        }
    }

    /// RFC 8985 §7.3: the probe is one new segment if the receive window and send buffer
    /// allow it, else the last segment sent again. `TLP.end_seq` = snd_nxt after it.
    pub(super) fn send_probe(&mut self, now: Instant) -> Option<Segment> {
        self.tlp.probe_pending = false;
        if self.snd_max <= self.snd_una {
            return None;
        }
        let limit = self.snd_una + self.rwnd.min(self.snd_buf);
        let new = self.snd_max < self.total
            && self.snd_nxt == self.snd_max
            && self.snd_max + self.seg_len(self.snd_max) as u64 <= limit;
        let seg = if new {
            self.emit(now, self.snd_max, false)
        } else {
            let last = (self.snd_max - 1) / self.mss * self.mss;
            self.emit(now, last, true)
        };
        self.tlp.end_seq = Some(self.snd_max);
        self.tlp.is_retrans = !new;
        if let Some(r) = self.rack.as_mut() {
            r.on_probe();
        }
        self.stats.tlp_probes += 1;
        self.tlp.pto_deadline = None;
        self.deadline = Some(now + self.rto.rto());
        Some(seg)
    }

    /// RFC 8985 §6.3 on a retransmission timeout: mark the losses, keep the scoreboard, resend
    /// the first outstanding segment at once, and recover (from cwnd = 1 SMSS) by sending the
    /// lost segments first (`rack_transmit`).
    pub(super) fn rack_on_rto(&mut self, now: Instant) {
        let Some(r) = self.rack.as_ref() else {
            return;
        };
        let w = r.reo_wnd(
            true,
            self.sb.sacked_count(),
            self.dupthresh,
            self.rto.srtt(),
        );
        let n = r.mark_losses_on_rto(now, w, &mut self.sb, self.snd_una, self.snd_max);
        self.stats.rack_marked_lost += n;
        // RFC 6298 (5.4): the earliest outstanding segment goes out now, whatever pipe says
        // (a segment sent within RACK.rtt is not marked and would hold pipe at cwnd).
        self.tlp = rack::Tlp {
            rto_recovery: true,
            fast_rtx: true,
            ..rack::Tlp::default()
        };
        // A later loss mark may still come from the reordering timer.
        self.rack_detect(now);
    }

    /// `NextSeg()` for a RACK sender in fast or RTO recovery: on entering a fast recovery the
    /// first segment marked lost at once (the fast retransmit); then the first segment RACK
    /// marked lost (rule 1), else new data (rule 2), while `cwnd - pipe >= SMSS` (or PRR's sndcnt
    /// allows). RACK-TLP takes the place of rules 3 and 4 (a hole not yet deemed lost is left
    /// to RACK's timer; the tail to the probe).
    pub(super) fn rack_transmit(&mut self, now: Instant) -> Option<Segment> {
        if std::mem::take(&mut self.tlp.fast_rtx) {
            if let Some(seq) = self.sb.first_lost(self.snd_una) {
                self.high_rxt = self.high_rxt.max(seq + self.seg_len(seq) as u64);
                return Some(self.emit(now, seq, true));
            }
        }
        let pipe = self.sb.rack_pipe(self.snd_una, self.snd_max);
        if !self.may_send(pipe) {
            return None;
        }
        if let Some(seq) = self.sb.first_lost(self.snd_una) {
            if seq < self.snd_max {
                self.high_rxt = self.high_rxt.max(seq + self.seg_len(seq) as u64);
                return Some(self.emit(now, seq, true));
            }
        }
        if let Some(s) = self.new_data_in_recovery(now) {
            return Some(s);
        }
        None
    }
}
