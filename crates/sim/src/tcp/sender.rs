//! The TCP sender: a bulk transfer of a known size with Reno, NewReno or SACK loss recovery.
//!
//! Contract. [`Sender::new`] makes a connection with `total` bytes to send (an application
//! that always has data: FTP). The driver feeds ACKs with [`Sender::handle_ack`], calls
//! [`Sender::handle_timeout`] when [`Sender::poll_timeout`] is due, and after any input calls
//! [`Sender::poll_transmit`] until it returns `None`. The window is
//! `min(cwnd, peer's advertised window, send buffer)`. The RTO timer follows RFC 6298 §5, RTT
//! samples follow Karn's rule (one timed segment at a time, never a retransmitted one), and a
//! timeout goes back to the first unacknowledged byte (RFC 5681 §3.1, as BSD and ns-2 do).
//! A malformed ACK (acknowledging unsent data) is counted, never a panic.
//!
//! Connection state (the SYN and FIN exchanges, RFC 7323 timestamps) lives in the child
//! module `handshake.rs`: the public entry points `handle_ack`, `poll_transmit` and
//! `handle_timeout` are there and wrap this file's loss recovery (`handle_data_ack`,
//! `poll_data`, `handle_rto`), which sees only data offsets. With both options off the
//! wrappers pass straight through.
//!
//! Two options change loss recovery (both off by default; the glue is in
//! `sender_recovery.rs`, the algorithms in `prr.rs` and `rack.rs`): PRR (RFC 6937) decides how
//! much to send on each ACK of a recovery instead of window inflation, and RACK-TLP (RFC 8985,
//! SACK only) detects losses by transmit time instead of DupThresh and sends tail loss probes.

use mslink_link::{Duration, Instant};

use super::cc::{AckInfo, Aimd, CongestionControl, Counting};
use super::cubic::Cubic;
use super::prr::Prr;
use super::rack::{AckRtts, Rack, Tlp};
use super::rto::{RtoEstimator, RtoFlavour};
use super::sack::Scoreboard;
use super::segment::{Segment, ACK, PSH};
use super::{TcpConfig, Variant, WindowGrowth};

#[path = "handshake.rs"]
mod handshake;

/// Counters of one sender.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SenderStats {
    /// Segments sent, retransmissions included.
    pub segments: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes: u64,
    /// Segments sent again.
    pub retransmits: u64,
    /// Fast retransmits (entries into loss recovery).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// ACKs received.
    pub acks: u64,
    /// Duplicate ACKs received.
    pub dupacks: u64,
    /// ACKs for data never sent (a peer's violation).
    pub bad_acks: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// RFC 6675 rescue retransmissions (also counted in `retransmits`).
    pub rescue_retransmits: u64,
    /// New segments sent by limited transmit (RFC 3042).
    pub limited_transmits: u64,
    /// SYN retransmissions (`handshake`).
    pub syn_retransmits: u64,
    /// FIN retransmissions (`handshake`; a FIN riding on a retransmitted last data segment
    /// counts as a data retransmission only).
    pub fin_retransmits: u64,
    /// RTT samples taken from a timestamp echo (`timestamps`; also counted in `rtt_samples`).
    pub ts_rtt_samples: u64,
    /// Whether the connection closed: our FIN acknowledged and the peer's FIN received and
    /// acknowledged (`handshake`). The flow's completion is still the time its last data
    /// byte was acknowledged.
    pub closed: bool,
    /// Segments sent during recoveries governed by PRR (RFC 6937), retransmissions included.
    pub prr_sent: u64,
    /// Segments RACK marked lost (RFC 8985 §6.2 and §6.3).
    pub rack_marked_lost: u64,
    /// Recoveries RACK started (also counted in `fast_retransmits`).
    pub rack_recoveries: u64,
    /// Expiries of the RACK reordering timer (RFC 8985 §6.3).
    pub reorder_timeouts: u64,
    /// Tail loss probes sent (RFC 8985 §7.3; also counted in `segments`).
    pub tlp_probes: u64,
    /// Probes that repaired a loss, so the window was reduced (RFC 8985 §7.4).
    pub tlp_recoveries: u64,
}

/// One TCP sender.
#[derive(Debug)]
pub struct Sender {
    variant: Variant,
    mss: u64,
    dupthresh: u32,
    limited_transmit: bool,
    /// Bytes sent by limited transmit since the last new ACK (RFC 5681 §3.2 step 2: not part
    /// of the FlightSize that sets ssthresh).
    limited_sent: u64,
    snd_buf: u64,
    total: u64,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    rwnd: u64,
    cc: Box<dyn CongestionControl>,
    rto: RtoEstimator,
    /// Linux's timer: retransmitting the first unacknowledged segment restarts it, and with
    /// RACK every ACK gives an RTT sample (`linux_rtt_sample`).
    linux_timer: bool,
    /// The RTTs of the segments the ACK being processed delivered (RACK only).
    ack_rtts: Option<AckRtts>,
    deadline: Option<Instant>,
    /// Karn's rule: (end of the timed segment, its send time).
    timed: Option<(u64, Instant)>,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`.
    recover: Option<u64>,
    /// Whether the first partial ACK of this recovery has come (RFC 6582 §3.2 step 5).
    partial_seen: bool,
    retransmit_una: bool,
    /// RFC 6675 HighRxt, exclusive: one past the highest byte retransmitted in recovery.
    high_rxt: u64,
    /// RFC 6675 RescueRxt: `RecoveryPoint` once this recovery made its rescue retransmission.
    rescue_rxt: Option<u64>,
    sb: Scoreboard,
    /// RFC 6937 state when PRR is on.
    prr: Option<Prr>,
    /// PRR's `sndcnt` left for the current ACK, bytes.
    prr_budget: u64,
    /// RFC 8985 RACK state when RACK-TLP is on.
    rack: Option<Rack>,
    /// RFC 8985 timers and TLP state (idle when RACK-TLP is off).
    tlp: Tlp,
    /// RFC 8985 §7.2 `WCDelAckT`: the receiver's longest ACK delay.
    wc_del_ack: Duration,
    stats: SenderStats,
    /// Handshake, FIN and timestamps state (`handshake.rs`).
    conn: handshake::Conn,
}

impl Sender {
    /// A sender of `total` bytes with the window controller `cfg` names: XCP's, CUBIC
    /// (RFC 9438) or RFC 5681 AIMD.
    pub fn new(cfg: &TcpConfig, total: u64) -> Self {
        let mss = cfg.mss as u64;
        let iw = cfg.initial_window;
        let counting = if cfg.byte_counting {
            Counting::Bytes
        } else {
            Counting::PerAck
        };
        let cc: Box<dyn CongestionControl> = match cfg.congestion_control {
            _ if cfg.xcp => Box::new(crate::xcp::XcpWindow::new(iw, mss)),
            WindowGrowth::Reno => Box::new(Aimd::new(iw, mss, counting).flavour(cfg.reno_flavour)),
            WindowGrowth::Cubic => {
                Box::new(Cubic::new(iw, mss, counting).flavour(cfg.cubic_flavour))
            }
        };
        Self::with_cc(cfg, total, cc)
    }

    /// A sender of `total` bytes whose window is set by `cc` (e.g. XCP).
    pub fn with_cc(cfg: &TcpConfig, total: u64, cc: Box<dyn CongestionControl>) -> Self {
        let mss = cfg.mss as u64;
        let s = TcpConfig::secs;
        Sender {
            variant: cfg.variant,
            mss,
            dupthresh: cfg.dupack_threshold,
            limited_transmit: cfg.limited_transmit,
            limited_sent: 0,
            snd_buf: cfg.send_buffer_bytes,
            total,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            // Until the first ACK: the receive buffer both ends were configured with.
            rwnd: cfg.recv_buffer_bytes,
            cc,
            rto: RtoEstimator::new(
                s(cfg.granularity_s),
                s(cfg.min_rto_s),
                s(cfg.max_rto_s),
                s(cfg.initial_rto_s),
            )
            .flavour(cfg.rto_flavour),
            linux_timer: cfg.rto_flavour == RtoFlavour::Linux,
            ack_rtts: None,
            deadline: None,
            timed: None,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            partial_seen: false,
            retransmit_una: false,
            high_rxt: 0,
            rescue_rxt: None,
            sb: Scoreboard::new(mss, total),
            prr: cfg.prr.then(Prr::default),
            prr_budget: 0,
            rack: (cfg.rack && cfg.variant == Variant::Sack).then(|| Rack::new(mss)),
            tlp: Tlp::default(),
            wc_del_ack: s(cfg.delayed_ack_s),
            stats: SenderStats::default(),
            conn: handshake::Conn::new(cfg),
        }
    }

    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    /// The loss-recovery variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }
    /// First unacknowledged byte.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    /// Highest byte sent, plus one.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    /// Slow-start threshold, bytes.
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    /// Whether the sender is in fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// The RTO estimator.
    pub fn rto(&self) -> &RtoEstimator {
        &self.rto
    }
    /// Appends `bytes` to the data to send: an application writing more to an open
    /// connection (a persistent HTTP connection, `app = "www"`). Segments are cut at the MSS
    /// from wherever the data ends, so after a short segment their boundaries are no longer
    /// multiples of the MSS; the SACK scoreboard assumes they are, so only Reno and NewReno
    /// senders may be appended to (the scenario checks it).
    pub fn append(&mut self, bytes: u64) {
        debug_assert!(
            self.variant != Variant::Sack,
            "append needs reno or newreno"
        );
        self.total += bytes;
    }

    /// Whether every byte has been acknowledged.
    pub fn is_done(&self) -> bool {
        self.snd_una >= self.total
    }

    fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    fn seg_len(&self, seq: u64) -> u32 {
        self.mss.min(self.total - seq) as u32
    }

    /// Loss recovery's part of processing one ACK (data offsets only).
    fn handle_data_ack(&mut self, now: Instant, a: &Segment) {
        self.stats.acks += 1;
        if a.flags & ACK == 0 {
            return;
        }
        if a.ack > self.snd_max {
            self.stats.bad_acks += 1;
            return;
        }
        if a.ack < self.snd_una {
            return; // An old ACK, overtaken (RFC 5681 §2: neither new nor duplicate).
        }
        self.rwnd = a.window;
        let mut delivered = 0;
        if self.variant == Variant::Sack {
            let (lo, hi) = (a.ack.max(self.snd_una), self.snd_max);
            let mut blocks = [(0, 0); super::segment::MAX_SACK_BLOCKS];
            for (i, &(s, e)) in a.sack_blocks().iter().enumerate() {
                blocks[i] = (s.max(lo), e.min(hi));
            }
            delivered = self.sack_delivered(now, a.ack, &blocks[..a.sack_blocks().len()]);
        }
        self.ack_rtts = self.rack.as_mut().and_then(|r| r.take_ack_rtts());
        if self.linux_rtt_sampling() {
            self.linux_rtt_sample(now, a);
        }
        let (prior_una, prior_dupacks) = (self.snd_una, self.dupacks);
        let mut dup = false;
        if a.ack > self.snd_una {
            self.new_ack(now, a.ack, a.xcp.map(|x| x.feedback));
        } else if self.flight() > 0 && a.len == 0 {
            dup = true;
            self.dup_ack(a);
        }
        if self.variant != Variant::Sack {
            // RFC 6937 §2 without SACK: a duplicate ACK delivered one SMSS; a new ACK the
            // change in snd.una less one SMSS per preceding duplicate.
            delivered = if dup {
                self.mss
            } else {
                (self.snd_una - prior_una).saturating_sub(u64::from(prior_dupacks) * self.mss)
            };
        }
        self.after_ack(now, a, prior_una, dup, delivered);
    }

    fn new_ack(&mut self, now: Instant, ack: u64, xcp_feedback: Option<i32>) {
        let acked = ack - self.snd_una;
        let flight = self.flight();
        let mut rtt = None;
        // RFC 6298 §3 / Karn: sample only from a segment never retransmitted.
        if let Some((end, t)) = self.timed {
            if ack >= end {
                let r = now.saturating_since(t);
                if !self.linux_rtt_sampling() {
                    self.rto.sample(r);
                    self.stats.rtt_samples += 1;
                }
                self.timed = None;
                rtt = Some(r);
            }
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.sb.advance(ack);
        self.dupacks = 0;
        self.limited_sent = 0;
        let mut restart = true;
        if self.in_recovery {
            let full = self.recover.is_none_or(|r| ack >= r);
            match self.variant {
                // RFC 5681 §3.2 step 6: the first new ACK deflates the window and ends recovery.
                Variant::Reno => {
                    let ss = self.cc.ssthresh();
                    self.cc.set_cwnd(ss);
                    self.in_recovery = false;
                }
                Variant::NewReno | Variant::Sack if full && self.prr.is_some() => {
                    // RFC 6937 §3: at the end of recovery cwnd = ssthresh.
                    let ss = self.cc.ssthresh();
                    self.cc.set_cwnd(ss);
                    self.in_recovery = false;
                }
                Variant::NewReno if full => {
                    // RFC 6582 §3.2 step 3, option (1): cwnd = min(ssthresh, FlightSize + SMSS).
                    let f = self.flight().max(self.mss) + self.mss;
                    let w = self.cc.ssthresh().min(f);
                    self.cc.set_cwnd(w);
                    self.in_recovery = false;
                }
                Variant::NewReno => {
                    // RFC 6582 §3.2 step 5: retransmit the next hole, deflate by the amount
                    // acknowledged, add back one SMSS if that was at least one SMSS; reset the
                    // timer only on the first partial ACK ("Impatient").
                    self.retransmit_una = true;
                    if self.prr.is_none() {
                        let w = self.cc.cwnd().saturating_sub(acked);
                        let w = if acked >= self.mss { w + self.mss } else { w };
                        self.cc.set_cwnd(w.max(self.mss));
                    }
                    restart = !self.partial_seen;
                    self.partial_seen = true;
                }
                Variant::Sack if full => {
                    // RFC 6675 §5: recovery ends when RecoveryPoint is acknowledged.
                    self.in_recovery = false;
                }
                Variant::Sack => {}
            }
        } else {
            let ca_rtt = match self.rack {
                Some(_) => self.ack_rtts.map(|r| r.newest),
                None => rtt,
            };
            self.cc.on_ack(&AckInfo {
                now,
                acked,
                flight,
                mss: self.mss,
                rtt,
                ca_rtt,
                una: ack,
                snd_max: self.snd_max,
                xcp_feedback,
            });
        }
        // RFC 6298 (5.2)/(5.3).
        if self.snd_una >= self.snd_max {
            self.deadline = None;
        } else if restart {
            self.deadline = Some(now + self.rto.rto());
        }
    }

    fn dup_ack(&mut self, a: &Segment) {
        self.stats.dupacks += 1;
        self.dupacks += 1;
        if self.in_recovery {
            if self.variant != Variant::Sack && self.prr.is_none() {
                // RFC 5681 §3.2 step 4: each further duplicate inflates the window.
                let w = self.cc.cwnd() + self.mss;
                self.cc.set_cwnd(w);
            }
            return;
        }
        if self.rack.is_some() {
            return; // RFC 8985: RACK, not DupThresh, detects the loss (`after_ack`).
        }
        let trigger = self.dupacks >= self.dupthresh
            || (self.variant == Variant::Sack && self.sb.is_lost(self.snd_una, self.dupthresh));
        if !trigger {
            return;
        }
        // RFC 6582 §3.2 step 2 (and RFC 6675 §5): no new recovery for losses of data sent
        // before the last one began or before the last timeout.
        if self.variant != Variant::Reno && self.recover.is_some_and(|r| a.ack <= r) {
            return;
        }
        if self.variant == Variant::Reno && self.dupacks != self.dupthresh {
            return;
        }
        self.enter_recovery();
    }

    /// Starts a fast recovery: RFC 5681 §3.2 steps 2-3, RFC 6582 §3.2 step 2, RFC 6675 §5.
    fn enter_recovery(&mut self) {
        self.stats.fast_retransmits += 1;
        // RFC 5681 §3.2 step 2: data sent by limited transmit is not counted.
        let flight = self.flight().saturating_sub(self.limited_sent);
        self.cc.on_loss(flight, self.mss);
        self.in_recovery = true;
        self.partial_seen = false;
        self.recover = Some(self.snd_max);
        // With RACK the lost segments are marked; NextSeg() sends them.
        self.retransmit_una = self.rack.is_none();
        self.high_rxt = self.snd_una;
        self.rescue_rxt = None;
        if self.variant != Variant::Sack && self.prr.is_none() {
            // RFC 5681 §3.2 step 3: cwnd = ssthresh + 3*SMSS.
            let w = self.cc.ssthresh() + self.dupthresh as u64 * self.mss;
            self.cc.set_cwnd(w);
        }
        self.recovery_started();
    }

    /// The next data segment to send, if the window allows one: a tail loss probe first.
    fn poll_data(&mut self, now: Instant) -> Option<Segment> {
        if self.tlp.probe_pending {
            if let Some(p) = self.send_probe(now) {
                return Some(p);
            }
        }
        if self.retransmit_una && self.snd_una < self.total {
            self.retransmit_una = false;
            let seq = self.snd_una;
            self.high_rxt = self.high_rxt.max(seq + self.seg_len(seq) as u64);
            return Some(self.emit(now, seq, true));
        }
        self.retransmit_una = false;
        if self.variant == Variant::Sack && (self.in_recovery || self.tlp.rto_recovery) {
            return self.sack_transmit(now);
        }
        if self.snd_nxt >= self.total {
            return None;
        }
        let len = self.seg_len(self.snd_nxt) as u64;
        let mut cwnd = self.cc.cwnd();
        if self.prr_governs() {
            // RFC 6937: in recovery PRR's sndcnt, not the window, says how much may go.
            if self.prr_budget < len {
                return None;
            }
            cwnd = u64::MAX / 2;
        }
        let mut extra = 0;
        if self.limited_transmit
            && !self.in_recovery
            && self.dupacks > 0
            && self.dupacks < self.dupthresh
            && self.snd_nxt >= self.snd_max
        {
            // RFC 3042 §2: one new segment per duplicate ACK, on the first two only, the
            // flight at most cwnd + 2*SMSS, within the receiver's window; cwnd unchanged.
            extra = u64::from(self.dupacks.min(2)) * self.mss;
        }
        let wnd = (cwnd + extra).min(self.rwnd).min(self.snd_buf);
        if self.snd_nxt + len > self.snd_una + wnd {
            return None;
        }
        if self.snd_nxt + len > self.snd_una + cwnd {
            self.limited_sent += len;
            self.stats.limited_transmits += 1;
        }
        let seq = self.snd_nxt;
        let again = seq < self.snd_max;
        Some(self.emit(now, seq, again))
    }

    /// RFC 6675 §5 (C): while `cwnd - pipe >= SMSS`, send what `NextSeg()` names.
    fn sack_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.rack.is_some() {
            return self.rack_transmit(now);
        }
        let pipe = self
            .sb
            .pipe(self.snd_una, self.snd_max, self.high_rxt, self.dupthresh);
        if !self.may_send(pipe) {
            return None;
        }
        let hole = self
            .sb
            .next_seg(self.snd_una, self.high_rxt, self.dupthresh);
        // Rule 1: a lost hole.
        if let Some((seq, true)) = hole {
            self.high_rxt = seq + self.seg_len(seq) as u64;
            return Some(self.emit(now, seq, true));
        }
        // Rule 2: new data the receiver's window and the send buffer allow.
        if let Some(s) = self.new_data_in_recovery(now) {
            return Some(s);
        }
        // Rule 3: a hole not yet deemed lost.
        if let Some((seq, false)) = hole {
            self.high_rxt = seq + self.seg_len(seq) as u64;
            return Some(self.emit(now, seq, true));
        }
        // Rule 4, the rescue retransmission (optional, "to protect the ACK clock" when loss
        // at the end of the window leaves nothing else to send): once per recovery, or again
        // when the cumulative ACK has passed the last rescue, the highest outstanding
        // unSACKed segment; RescueRxt = RecoveryPoint, HighRxt untouched.
        if self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
            if let Some(seq) = self.sb.highest_unsacked(self.snd_una, self.snd_max) {
                self.rescue_rxt = self.recover;
                self.stats.rescue_retransmits += 1;
                return Some(self.emit(now, seq, true));
            }
        }
        None
    }

    /// Whether recovery may send one more segment: PRR's `sndcnt` budget when PRR governs,
    /// else RFC 6675 §5 (C)'s `cwnd - pipe >= SMSS`.
    fn may_send(&self, pipe: u64) -> bool {
        if self.prr_governs() {
            self.prr_budget >= self.mss
        } else {
            self.cc.cwnd() >= pipe + self.mss
        }
    }

    /// RFC 6675 §5 NextSeg() rule 2 (and RACK's new-data step): the next new segment, if the
    /// receiver's window and the send buffer allow it.
    fn new_data_in_recovery(&mut self, now: Instant) -> Option<Segment> {
        let limit = self.snd_una + self.rwnd.min(self.snd_buf);
        if self.snd_max >= self.total {
            return None;
        }
        let len = self.seg_len(self.snd_max) as u64;
        if self.snd_max + len > limit {
            return None;
        }
        let seq = self.snd_max;
        self.snd_nxt = seq;
        Some(self.emit(now, seq, false))
    }

    fn emit(&mut self, now: Instant, seq: u64, again: bool) -> Segment {
        let len = self.seg_len(seq);
        let end = seq + len as u64;
        if seq == self.snd_nxt {
            self.snd_nxt = end;
        }
        if again {
            self.stats.retransmits += 1;
            // Karn: a retransmission spoils the measurement in progress.
            self.timed = None;
            if self.linux_timer && seq == self.snd_una {
                self.deadline = Some(now + self.rto.rto());
            }
        } else if self.timed.is_none() {
            self.timed = Some((end, now));
        }
        self.snd_max = self.snd_max.max(end);
        self.stats.segments += 1;
        self.stats.bytes += len as u64;
        // RFC 6298 (5.1): start the timer if it is not running.
        if self.deadline.is_none() {
            self.deadline = Some(now + self.rto.rto());
        }
        self.on_emit(now, seq, len as u64, again);
        Segment {
            seq,
            len,
            ack: 1,
            flags: ACK | if end == self.total { PSH } else { 0 },
            window: 65_535,
            xcp: self.cc.xcp_request(self.rto.srtt(), self.mss),
            ..Segment::default()
        }
    }

    /// When the next timer expires: the retransmission timer, or with RACK-TLP the earlier
    /// of it, the probe timeout and the reordering timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.deadline, self.tlp.pto_deadline, self.tlp.reo_deadline]
            .into_iter()
            .flatten()
            .min()
    }

    /// Handles whichever timer is due: RACK's reordering timer and the probe timeout (RFC 8985
    /// §6.3, §7.3), then the retransmission timer (RFC 6298 (5.4)-(5.6), RFC 5681 §3.1).
    fn handle_rto(&mut self, now: Instant) {
        self.rack_timers(now);
        if self.deadline.is_none_or(|t| t > now) {
            return;
        }
        self.stats.timeouts += 1;
        let flight = self.flight();
        self.cc.on_timeout(flight, self.mss);
        self.rto.backoff();
        self.in_recovery = false;
        self.dupacks = 0;
        self.retransmit_una = false;
        // RFC 6582 §4 / RFC 6675 §5.1: recovery point is the highest data sent.
        self.recover = Some(self.snd_max);
        self.high_rxt = self.snd_una;
        self.timed = None;
        self.deadline = Some(now + self.rto.rto());
        if self.rack.is_some() {
            // RFC 8985 §6.3: mark what the timeout shows lost; NextSeg() resends it.
            self.rack_on_rto(now);
            return;
        }
        self.sb.clear();
        // Go back: resend from the first unacknowledged byte as the window reopens.
        self.snd_nxt = self.snd_una;
    }

    /// The current retransmission timeout (backoff included).
    pub fn rto_now(&self) -> Duration {
        self.rto.rto()
    }
}

#[path = "sender_recovery.rs"]
mod recovery;

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
