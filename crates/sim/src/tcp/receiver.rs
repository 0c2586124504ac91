//! The TCP receiver: cumulative ACKs, SACK blocks, delayed ACKs, a bounded receive buffer.
//!
//! Contract. [`Receiver::handle_segment`] takes one data segment; [`Receiver::poll_transmit`]
//! returns the ACK owed, if any; [`Receiver::handle_timeout`] sends a delayed ACK when its
//! timer expires. The application reads in-order data at once, so the receive buffer holds
//! only out-of-order data and the right edge of the window is `rcv_nxt + buffer`; a segment
//! beyond it is dropped (and ACKed, RFC 9293 §3.10.7.4). ACK policy (RFC 5681 §4.2, RFC 1122
//! §4.2.3.2): without delayed ACKs every segment is ACKed; with them, an ACK is sent for every
//! second full-sized segment or `delayed_ack_s` after the first unacknowledged one, and at
//! once for an out-of-order segment, a duplicate, or a segment that fills (part of) a gap.
//! With SACK, each ACK carries up to three blocks, the first holding the segment that caused
//! it and the rest the most recently changed blocks (RFC 2018 §4).
//!
//! With `handshake` (RFC 9293 §3.5, §3.6) the receiver starts in LISTEN: a SYN is answered
//! with a SYN-ACK carrying the options (timestamps only if the SYN had them), retransmitted
//! on its own timer (initial `initial_rto_s`, doubling, RFC 6298 (5.5)) until any ACK
//! arrives, and at once for a repeated SYN. The sender's FIN (`seq` = its offset, one past
//! the last data byte) is taken when every byte before it has arrived, ACKed at once with
//! `rcv_nxt + 1`, and the receiver closes passively in the same segment (FIN|ACK, its own
//! FIN at its offset 0), retransmitted on the timer until the sender ACKs it. With
//! `timestamps` every ACK carries TSval and TSecr = TS.Recent (RFC 7323 §4.3, see
//! `timestamps.rs`).

use mslink_link::{Duration, Instant};

use super::segment::{Segment, SynOptions, Timestamps, ACK, FIN, MAX_SACK_BLOCKS, SYN};
use super::timestamps::{self, TsRecent};
use super::TcpConfig;

/// Counters of one receiver.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ReceiverStats {
    /// Data segments received.
    pub segments: u64,
    /// Segments carrying only bytes already received.
    pub duplicates: u64,
    /// Segments that arrived above a gap.
    pub out_of_order: u64,
    /// Segments dropped because they lay beyond the advertised window.
    pub beyond_window: u64,
    /// ACKs sent.
    pub acks: u64,
    /// ACKs that were delayed by the timer.
    pub delayed_acks: u64,
    /// SYN-ACK retransmissions (`handshake`).
    pub synack_retransmits: u64,
    /// Retransmissions of the receiver's FIN (`handshake`).
    pub fin_retransmits: u64,
    /// Whether the sender's FIN has arrived in order (`handshake`).
    pub fin_received: bool,
    /// Whether the receiver's own FIN was acknowledged: the connection is closed at this end.
    pub closed: bool,
}

/// RFC 9293 §3.3.2 states of the receiver that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Listen,
    SynReceived,
    Established,
    /// Our FIN sent (CLOSE-WAIT, then LAST-ACK at once: the application closes at once).
    LastAck,
    Closed,
}

/// One out-of-order block held in the buffer.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: u64,
    end: u64,
    /// When it last changed (a counter), for SACK block order.
    touched: u64,
}

/// One TCP receiver.
#[derive(Debug)]
pub struct Receiver {
    rcv_nxt: u64,
    buffer: u64,
    mss: u32,
    sack: bool,
    delayed: bool,
    delay: Duration,
    ooo: Vec<Block>,
    clock: u64,
    /// Start of the block the latest segment went into, if out of order.
    latest: Option<u64>,
    unacked: u32,
    ack_now: bool,
    deadline: Option<Instant>,
    /// XCP feedback of the data segments not yet acknowledged, summed (Katabi et al. §3.2:
    /// the receiver copies it into the ACK).
    xcp_feedback: Option<i32>,
    stats: ReceiverStats,
    state: State,
    /// A SYN-ACK is owed.
    synack_due: bool,
    /// The sender's SYN options, as offered.
    peer: Option<SynOptions>,
    /// Our options.
    opts: SynOptions,
    /// Offset of the sender's FIN, once a segment carrying it arrived.
    fin_at: Option<u64>,
    /// Retransmission timer of the SYN-ACK and the FIN, and its backoff.
    rtx: Option<Instant>,
    rtx_backoff: u32,
    initial_rto: Duration,
    max_rto: Duration,
    /// Timestamps configured, and in use.
    ts: bool,
    ts_on: bool,
    ts_recent: TsRecent,
}

impl Receiver {
    /// A receiver configured like its sender.
    pub fn new(cfg: &TcpConfig) -> Self {
        Receiver {
            rcv_nxt: 0,
            buffer: cfg.recv_buffer_bytes,
            mss: cfg.mss,
            sack: cfg.variant == super::Variant::Sack,
            delayed: cfg.delayed_ack,
            delay: TcpConfig::secs(cfg.delayed_ack_s),
            ooo: Vec::new(),
            clock: 0,
            latest: None,
            unacked: 0,
            ack_now: false,
            deadline: None,
            xcp_feedback: None,
            stats: ReceiverStats::default(),
            state: if cfg.handshake {
                State::Listen
            } else {
                State::Established
            },
            synack_due: false,
            peer: None,
            opts: SynOptions {
                mss: cfg.mss.min(u16::MAX as u32) as u16,
                wscale: Some(cfg.window_shift()),
                sack_permitted: cfg.variant == super::Variant::Sack,
            },
            fin_at: None,
            rtx: None,
            rtx_backoff: 0,
            initial_rto: TcpConfig::secs(cfg.initial_rto_s),
            max_rto: TcpConfig::secs(cfg.max_rto_s),
            ts: cfg.timestamps,
            // Without a handshake there is nothing to negotiate.
            ts_on: cfg.timestamps && !cfg.handshake,
            ts_recent: TsRecent::default(),
        }
    }

    /// Whether the connection is closed at this end (`handshake`).
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Whether timestamps are in use.
    pub fn timestamps(&self) -> bool {
        self.ts_on
    }

    fn hs(&self) -> bool {
        self.state != State::Established || self.fin_at.is_some()
    }

    /// The SYN-ACK's and FIN's retransmission timeout: the initial RTO doubled per expiry
    /// (RFC 6298 (2.1), (5.5)); the receiver has no RTT samples of its own.
    fn rtx_timeout(&self) -> Duration {
        let d = self
            .initial_rto
            .saturating_mul(1 << self.rtx_backoff.min(20));
        if d > self.max_rto {
            self.max_rto
        } else {
            d
        }
    }

    /// Connection-state processing of one segment; false if the data path must not see it.
    fn conn_segment(&mut self, now: Instant, s: &Segment) -> bool {
        if s.flags & SYN != 0 {
            match self.state {
                // RFC 9293 §3.10.7.2: LISTEN, a SYN: SYN-RECEIVED, answer with a SYN-ACK.
                State::Listen => {
                    self.state = State::SynReceived;
                    self.peer = s.syn;
                    // RFC 7323 §3.2: timestamps only if the SYN carries them.
                    self.ts_on = self.ts && s.ts.is_some();
                    if let Some(t) = s.ts.filter(|_| self.ts_on) {
                        self.ts_recent.on_segment(0, t.val);
                    }
                    self.synack_due = true;
                    self.rtx = Some(now + self.rtx_timeout());
                }
                // A repeated SYN: our SYN-ACK was lost; send it again at once.
                State::SynReceived => self.synack_due = true,
                _ => self.ack_now = true,
            }
            return false;
        }
        if self.state == State::Listen {
            return false; // RFC 9293 §3.10.7.2: anything but a SYN is dropped in LISTEN.
        }
        if self.state == State::SynReceived && s.flags & ACK != 0 {
            // RFC 9293 §3.10.7.4: the ACK of our SYN-ACK: ESTABLISHED.
            self.state = State::Established;
            self.rtx = None;
            self.rtx_backoff = 0;
        }
        if self.state == State::LastAck && s.flags & ACK != 0 && s.ack >= 1 {
            // The ACK of our FIN (our offset 0): CLOSED.
            self.state = State::Closed;
            self.stats.closed = true;
            self.rtx = None;
        }
        if s.flags & FIN != 0 {
            if self.fin_at.is_some() {
                self.ack_now = true; // a repeated FIN: our ACK (and FIN) were lost
            }
            self.fin_at = Some(s.end());
        }
        true
    }

    /// The sender's FIN is taken once every byte before it has arrived: ACK it at once and
    /// close passively (RFC 9293 §3.10.7.4, eighth; §3.6).
    fn check_fin(&mut self, now: Instant) {
        if self.fin_at == Some(self.rcv_nxt) && !self.stats.fin_received {
            self.stats.fin_received = true;
            self.ack_now = true;
            self.state = State::LastAck;
            self.rtx_backoff = 0;
            self.rtx = Some(now + self.rtx_timeout());
        }
    }

    /// Next byte expected: every byte below it has been delivered in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Bytes held out of order.
    pub fn buffered(&self) -> u64 {
        self.ooo.iter().map(|b| b.end - b.start).sum()
    }

    /// Takes one segment from the sender: data, or with `handshake` a SYN, FIN or ACK.
    pub fn handle_segment(&mut self, now: Instant, s: &Segment) {
        if !self.hs() && !self.ts_on && s.flags & (SYN | FIN) == 0 {
            return self.data_segment(now, s);
        }
        if !self.conn_segment(now, s) {
            return;
        }
        if self.ts_on {
            if let Some(t) = s.ts {
                // RFC 7323 §4.3 (2), before the data moves Last.ACK.sent's meaning on.
                self.ts_recent.on_segment(s.seq, t.val);
            }
        }
        self.data_segment(now, s);
        self.check_fin(now);
    }

    fn data_segment(&mut self, now: Instant, s: &Segment) {
        if s.len == 0 {
            return;
        }
        self.stats.segments += 1;
        if let Some(x) = s.xcp {
            let sum = self.xcp_feedback.unwrap_or(0).saturating_add(x.feedback);
            self.xcp_feedback = Some(sum);
        }
        let (start, end) = (s.seq, s.end());
        if start >= self.rcv_nxt + self.buffer || end > self.rcv_nxt + self.buffer {
            self.stats.beyond_window += 1;
            self.ack_now = true;
            return;
        }
        if end <= self.rcv_nxt {
            // A duplicate: ACK at once so the sender learns where we are (RFC 5681 §4.2).
            self.stats.duplicates += 1;
            self.ack_now = true;
            self.latest = None;
            return;
        }
        self.clock += 1;
        if start <= self.rcv_nxt {
            let filled_gap = !self.ooo.is_empty();
            self.rcv_nxt = end;
            // Pull in the blocks this one joins.
            let mut k = 0;
            while k < self.ooo.len() && self.ooo[k].start <= self.rcv_nxt {
                self.rcv_nxt = self.rcv_nxt.max(self.ooo[k].end);
                k += 1;
            }
            self.ooo.drain(..k);
            self.latest = None;
            if filled_gap || !self.delayed {
                self.ack_now = true;
            } else {
                // RFC 5681 §4.2: an ACK for at least every second full-sized segment.
                if s.len >= self.mss {
                    self.unacked += 1;
                }
                if self.unacked >= 2 {
                    self.ack_now = true;
                } else if self.deadline.is_none() {
                    self.deadline = Some(now + self.delay);
                }
            }
        } else {
            self.stats.out_of_order += 1;
            self.insert(start, end);
            self.ack_now = true;
        }
    }

    fn insert(&mut self, start: u64, end: u64) {
        let at = self.ooo.partition_point(|b| b.end < start);
        let mut b = Block {
            start,
            end,
            touched: self.clock,
        };
        // Merge with every block it overlaps or touches.
        let mut k = at;
        while k < self.ooo.len() && self.ooo[k].start <= b.end {
            b.start = b.start.min(self.ooo[k].start);
            b.end = b.end.max(self.ooo[k].end);
            k += 1;
        }
        self.ooo.splice(at..k, [b]);
        self.latest = Some(b.start);
    }

    /// The segment owed now, if any: a SYN-ACK, or an ACK (carrying our FIN once the
    /// sender's has arrived).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.synack_due {
            self.synack_due = false;
            let peer = self.peer.unwrap_or_default();
            let mut a = Segment {
                seq: 0,
                ack: 0,
                flags: SYN | ACK,
                window: self.buffer.min(65_535),
                syn: Some(SynOptions {
                    wscale: self.opts.wscale.filter(|_| peer.wscale.is_some()),
                    sack_permitted: self.opts.sack_permitted && peer.sack_permitted,
                    ..self.opts
                }),
                ..Segment::default()
            };
            if self.ts_on {
                a.ts = Some(Timestamps {
                    val: timestamps::tsval(now),
                    ecr: self.ts_recent.on_ack_sent(0),
                });
            }
            return Some(a);
        }
        let mut a = self.poll_ack(now)?;
        if self.stats.fin_received {
            a.ack += 1;
            if self.state == State::LastAck {
                a.flags |= FIN;
            } else {
                a.seq = 1;
            }
        }
        if self.ts_on {
            a.ts = Some(Timestamps {
                val: timestamps::tsval(now),
                ecr: self.ts_recent.on_ack_sent(a.ack.min(self.rcv_nxt)),
            });
        }
        Some(a)
    }

    fn poll_ack(&mut self, now: Instant) -> Option<Segment> {
        let timer = self.deadline.is_some_and(|t| t <= now);
        if !self.ack_now && !timer {
            return None;
        }
        if timer && !self.ack_now {
            self.stats.delayed_acks += 1;
        }
        self.ack_now = false;
        self.unacked = 0;
        self.deadline = None;
        self.stats.acks += 1;
        let mut a = Segment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            flags: ACK,
            window: self.buffer,
            xcp: self
                .xcp_feedback
                .take()
                .map(|feedback| super::segment::XcpField {
                    feedback,
                    ..Default::default()
                }),
            ..Segment::default()
        };
        if self.sack && !self.ooo.is_empty() {
            // RFC 2018 §4: the block with the latest segment first, then the most recently
            // changed others.
            let mut n = 0;
            if let Some(b) = self
                .latest
                .and_then(|s| self.ooo.iter().find(|b| b.start == s))
            {
                a.sack[0] = (b.start, b.end);
                n = 1;
            }
            let mut rest: [Option<Block>; MAX_SACK_BLOCKS] = [None; MAX_SACK_BLOCKS];
            for b in &self.ooo {
                if Some(b.start) == self.latest && n == 1 {
                    continue;
                }
                // Keep the most recently touched few (insertion into a tiny sorted array).
                let mut cur = Some(*b);
                for slot in rest.iter_mut() {
                    match (*slot, cur) {
                        (None, _) => {
                            *slot = cur;
                            break;
                        }
                        (Some(s), Some(c)) if c.touched > s.touched => {
                            *slot = Some(c);
                            cur = Some(s);
                        }
                        _ => {}
                    }
                }
            }
            for b in rest.iter().flatten() {
                if n == MAX_SACK_BLOCKS {
                    break;
                }
                a.sack[n] = (b.start, b.end);
                n += 1;
            }
            a.sack_len = n as u8;
        }
        Some(a)
    }

    /// When the delayed-ACK timer or the SYN-ACK/FIN retransmission timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.deadline, self.rtx) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A due delayed ACK is sent by `poll_transmit`; a due SYN-ACK or FIN is retransmitted
    /// with the timeout doubled (a call with nothing due does nothing).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.rtx.is_some_and(|t| t <= now) {
            self.rtx_backoff += 1;
            match self.state {
                State::SynReceived => {
                    self.synack_due = true;
                    self.stats.synack_retransmits += 1;
                }
                State::LastAck => {
                    self.ack_now = true;
                    self.stats.fin_retransmits += 1;
                }
                _ => {}
            }
            self.rtx = Some(now + self.rtx_timeout());
            if !matches!(self.state, State::SynReceived | State::LastAck) {
                self.rtx = None;
            }
        }
        if self.deadline.is_some_and(|t| t <= now) {
            self.ack_now = true;
            self.stats.delayed_acks += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(delayed: bool, sack: bool) -> TcpConfig {
        TcpConfig {
            mss: 1000,
            delayed_ack: delayed,
            delayed_ack_s: 0.2,
            variant: if sack {
                super::super::Variant::Sack
            } else {
                super::super::Variant::Reno
            },
            recv_buffer_bytes: 20_000,
            ..TcpConfig::default()
        }
    }

    fn seg(k: u64) -> Segment {
        Segment {
            seq: k * 1000,
            len: 1000,
            flags: ACK,
            ..Segment::default()
        }
    }

    #[test]
    fn every_segment_acked_without_delay() {
        let mut r = Receiver::new(&cfg(false, false));
        for k in 0..3 {
            r.handle_segment(Instant::ZERO, &seg(k));
            let a = r.poll_transmit(Instant::ZERO).unwrap();
            assert_eq!(a.ack, (k + 1) * 1000);
            assert_eq!(a.window, 20_000);
            assert!(r.poll_transmit(Instant::ZERO).is_none());
        }
    }

    #[test]
    fn delayed_acks_every_second_segment_or_after_the_timer() {
        let mut r = Receiver::new(&cfg(true, false));
        let t0 = Instant::from_millis(10);
        r.handle_segment(t0, &seg(0));
        assert!(r.poll_transmit(t0).is_none(), "first segment waits");
        assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(200)));
        r.handle_segment(t0, &seg(1));
        assert_eq!(
            r.poll_transmit(t0).unwrap().ack,
            2000,
            "second one is ACKed"
        );
        assert_eq!(r.poll_timeout(), None);
        r.handle_segment(t0, &seg(2));
        let due = r.poll_timeout().unwrap();
        assert!(r
            .poll_transmit(Instant::from_nanos(due.as_nanos() - 1))
            .is_none());
        r.handle_timeout(due);
        assert_eq!(r.poll_transmit(due).unwrap().ack, 3000);
        assert_eq!(r.stats().delayed_acks, 1);
        // Out of order: at once, even with delayed ACKs; and the gap filler too.
        r.handle_segment(due, &seg(4));
        assert_eq!(r.poll_transmit(due).unwrap().ack, 3000);
        r.handle_segment(due, &seg(3));
        assert_eq!(r.poll_transmit(due).unwrap().ack, 5000);
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut r = Receiver::new(&cfg(false, true));
        let t = Instant::ZERO;
        r.handle_segment(t, &seg(0));
        r.poll_transmit(t);
        for k in [2, 4, 6, 7, 9] {
            r.handle_segment(t, &seg(k));
            r.poll_transmit(t);
        }
        r.handle_segment(t, &seg(4)); // a repeat of an out-of-order segment
        r.poll_transmit(t);
        r.handle_segment(t, &seg(3)); // joins 2 and 4
        let a = r.poll_transmit(t).unwrap();
        assert_eq!(a.ack, 1000);
        assert_eq!(
            a.sack_blocks(),
            &[(2000, 5000), (9000, 10_000), (6000, 8000)]
        );
        assert_eq!(r.buffered(), 6000);
    }

    #[test]
    fn window_bounds_what_is_accepted() {
        let mut r = Receiver::new(&cfg(false, false));
        r.handle_segment(Instant::ZERO, &seg(20));
        assert_eq!(r.stats().beyond_window, 1);
        assert_eq!(r.buffered(), 0);
        r.handle_segment(Instant::ZERO, &seg(19));
        assert_eq!(r.buffered(), 1000);
    }

    /// RFC 7323 §4.3 at the receiver: with delayed ACKs the ACK of two segments echoes the
    /// first one's TSval; an out-of-order segment's TSval is not echoed by the duplicate ACK
    /// it causes; the segment that fills the hole is echoed.
    #[test]
    fn ts_recent_with_delayed_acks_and_out_of_order_segments() {
        let mut c = cfg(true, false);
        c.timestamps = true;
        let mut r = Receiver::new(&c);
        let t = |k: u64, val: u32| Segment {
            ts: Some(Timestamps { val, ecr: 0 }),
            ..seg(k)
        };
        let now = Instant::from_millis(500);
        r.handle_segment(now, &t(0, 10));
        r.handle_segment(now, &t(1, 11));
        let a = r.poll_transmit(now).unwrap();
        assert_eq!(
            (a.ack, a.ts.unwrap().ecr, a.ts.unwrap().val),
            (2000, 10, 500)
        );
        r.handle_segment(now, &t(3, 13)); // out of order: a duplicate ACK at once
        let a = r.poll_transmit(now).unwrap();
        assert_eq!((a.ack, a.ts.unwrap().ecr), (2000, 10));
        r.handle_segment(now, &t(2, 12)); // fills the hole
        let a = r.poll_transmit(now).unwrap();
        assert_eq!((a.ack, a.ts.unwrap().ecr), (4000, 12));
    }

    /// RFC 9293 §3.5: in LISTEN only a SYN is taken; the SYN-ACK echoes the SYN's options
    /// (SACK-permitted only if offered) and is resent on the timer, 1 s then 2 s later
    /// (RFC 6298 (2.1), (5.5)), until an ACK arrives.
    #[test]
    fn listen_syn_ack_and_its_retransmission() {
        let mut c = cfg(false, true);
        c.handshake = true;
        let mut r = Receiver::new(&c);
        r.handle_segment(Instant::ZERO, &seg(0));
        assert!(
            r.poll_transmit(Instant::ZERO).is_none(),
            "data in LISTEN is dropped"
        );
        let syn = Segment {
            flags: SYN,
            syn: Some(SynOptions {
                mss: 1000,
                wscale: Some(0),
                sack_permitted: false,
            }),
            ..Segment::default()
        };
        r.handle_segment(Instant::ZERO, &syn);
        let a = r.poll_transmit(Instant::ZERO).unwrap();
        assert_eq!(a.flags, SYN | ACK);
        assert!(!a.syn.unwrap().sack_permitted, "not offered by the SYN");
        assert_eq!(r.poll_timeout(), Some(Instant::from_secs(1)));
        r.handle_timeout(Instant::from_secs(1));
        assert_eq!(
            r.poll_transmit(Instant::from_secs(1)).unwrap().flags,
            SYN | ACK
        );
        assert_eq!(r.poll_timeout(), Some(Instant::from_secs(3)));
        r.handle_segment(Instant::from_secs(2), &seg(0));
        assert_eq!(r.poll_timeout(), None, "the ACK on the data ends the timer");
        assert_eq!(r.rcv_nxt(), 1000);
        assert_eq!(r.stats().synack_retransmits, 1);
    }
}
