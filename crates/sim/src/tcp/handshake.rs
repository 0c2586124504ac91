//! The sender's connection state: the three-way handshake, the FIN exchange and RFC 7323
//! timestamps, wrapped around the loss recovery of `sender.rs`.
//!
//! Contract. This is a child module of `sender` holding the public entry points
//! [`Sender::handle_ack`], [`Sender::poll_transmit`] and [`Sender::handle_timeout`]; with
//! `handshake` and `timestamps` off they call `handle_data_ack`, `poll_data` and
//! `handle_rto` unchanged. With `handshake` (RFC 9293 §3.5): the sender starts in SYN-SENT
//! and sends a SYN carrying MSS, window scale, SACK-permitted (variant `sack`) and
//! timestamps (when on); the SYN is retransmitted on the RTO timer with backoff (initial RTO
//! `initial_rto_s`, RFC 6298 (2.1), (5.5)); no data goes before the SYN-ACK, whose arrival
//! is ESTABLISHED, and the first data segment carries the ACK that completes the handshake
//! (a pure ACK answers a duplicate SYN-ACK). The handshake's RTT is the first sample if the
//! SYN was sent once (RFC 6298 (2.2), Karn); if it was retransmitted, the RTO is
//! re-initialised to 3 s (RFC 6298 (5.7)) and the initial window is one segment (RFC 5681
//! §3.1). Close (RFC 9293 §3.6): the FIN rides on every transmission of the last data
//! segment (or goes alone when there is no data, or when the timer expires with only the
//! FIN outstanding); it takes the sequence number `total`, so the ACK of it is `total + 1`,
//! which loss recovery sees as `total`. The receiver's FIN is acknowledged with a pure ACK;
//! the connection is closed once both FINs are acknowledged (TIME-WAIT is not modelled).
//! `is_done` still means the last data byte is acknowledged. Segment counters: `segments`,
//! `bytes` and `retransmits` count data segments only; SYNs, lone FINs and pure ACKs are
//! counted in `syn_retransmits`/`fin_retransmits` when resent. With `timestamps`
//! (RFC 7323): every segment carries TSval (a 1 ms clock, see `timestamps.rs`) and TSecr
//! (TS.Recent per §4.3); every ACK that acknowledges new data (or the FIN) gives an RTT
//! sample from its TSecr (§4.1), including ACKs of retransmitted data, and Karn's timed
//! segment is not used. With `handshake`, timestamps are used only if the SYN-ACK carries
//! them (§3.2).

use mslink_link::{Duration, Instant};

use super::super::segment::{Segment, SynOptions, Timestamps, ACK, FIN, SYN};
use super::super::timestamps::{self, TsRecent};
use super::super::{TcpConfig, Variant};
use super::Sender;

/// RFC 9293 §3.3.2 states of the sender that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    SynSent,
    Established,
}

/// Connection state of one sender.
#[derive(Debug)]
pub(super) struct Conn {
    handshake: bool,
    state: State,
    /// A SYN is owed: the first, or a retransmission after the timer expired.
    syn_due: bool,
    /// When the SYN was sent, while it has been sent once only.
    syn_sent: Option<Instant>,
    syn_retransmitted: bool,
    opts: SynOptions,
    /// Whether the sender closes with a FIN after its data.
    fin: bool,
    /// A FIN must go out alone (no data left to carry it).
    fin_due: bool,
    fin_sent: bool,
    fin_acked: bool,
    peer_fin: bool,
    /// A pure ACK is owed (the peer's FIN, a duplicate SYN-ACK).
    ack_due: bool,
    /// Timestamps in use.
    ts: bool,
    ts_recent: TsRecent,
    closed_at: Option<Instant>,
}

impl Conn {
    pub(super) fn new(cfg: &TcpConfig) -> Conn {
        Conn {
            handshake: cfg.handshake,
            state: if cfg.handshake {
                State::SynSent
            } else {
                State::Established
            },
            syn_due: cfg.handshake,
            syn_sent: None,
            syn_retransmitted: false,
            opts: SynOptions {
                mss: cfg.mss.min(u16::MAX as u32) as u16,
                wscale: Some(cfg.window_shift()),
                sack_permitted: cfg.variant == Variant::Sack,
            },
            fin: cfg.handshake,
            fin_due: cfg.handshake,
            fin_sent: false,
            fin_acked: false,
            peer_fin: false,
            ack_due: false,
            ts: cfg.timestamps,
            ts_recent: TsRecent::default(),
            closed_at: None,
        }
    }

    fn plain(&self) -> bool {
        !self.handshake && !self.ts
    }
}

impl Sender {
    /// Whether the handshake has completed (always, without `handshake`).
    pub fn is_established(&self) -> bool {
        self.conn.state == State::Established
    }

    /// Whether both FINs have been exchanged and acknowledged (`handshake`).
    pub fn is_closed(&self) -> bool {
        self.conn.closed_at.is_some()
    }

    /// When the connection closed (`handshake`).
    pub fn closed_at(&self) -> Option<Instant> {
        self.conn.closed_at
    }

    /// Whether timestamps are in use (configured and, with `handshake`, negotiated).
    pub fn timestamps(&self) -> bool {
        self.conn.ts
    }

    /// Keeps the connection open after its data: no FIN (a persistent HTTP connection that
    /// the application appends to).
    pub fn keep_open(&mut self) {
        self.conn.fin = false;
        self.conn.fin_due = false;
    }

    /// Processes one segment from the receiver: a SYN-ACK, an ACK, a FIN.
    pub fn handle_ack(&mut self, now: Instant, a: &Segment) {
        if self.conn.plain() {
            return self.handle_data_ack(now, a);
        }
        if self.conn.handshake {
            if self.conn.state == State::SynSent {
                self.stats.acks += 1;
                // RFC 9293 §3.10.7.3: a SYN-ACK acknowledging our SYN (ISS + 1, offset 0).
                if a.flags & (SYN | ACK) == SYN | ACK && a.ack == 0 {
                    self.established(now, a);
                }
                return;
            }
            if a.flags & SYN != 0 {
                // A duplicate SYN-ACK: our ACK was lost; acknowledge again (RFC 9293
                // §3.10.7.4).
                self.stats.acks += 1;
                self.conn.ack_due = true;
                return;
            }
            if a.flags & FIN != 0 {
                // RFC 9293 §3.10.7.4 eighth: the peer's FIN (its only byte of sequence
                // space, offset 0) is acknowledged with offset 1.
                self.conn.peer_fin = true;
                self.conn.ack_due = true;
            }
        }
        if self.conn.ts {
            if let Some(t) = a.ts {
                self.conn.ts_recent.on_segment(a.seq, t.val);
            }
        }
        let una = self.snd_una;
        let mut data_ack = *a;
        let mut fin_newly_acked = false;
        if self.conn.fin_sent
            && !self.conn.fin_acked
            && a.flags & ACK != 0
            && a.ack == self.total + 1
        {
            // The FIN's sequence number is `total`: loss recovery sees data offsets only.
            self.conn.fin_acked = true;
            fin_newly_acked = true;
            data_ack.ack = self.total;
        }
        if self.conn.ts
            && !self.linux_rtt_sampling()
            && a.flags & ACK != 0
            && ((data_ack.ack > una && data_ack.ack <= self.snd_max) || fin_newly_acked)
        {
            // RFC 7323 §4.1: every ACK of new data gives a sample from its echo, which names
            // the transmission it acknowledges (so retransmitted data is measured too).
            if let Some(t) = a.ts {
                self.rto.sample(timestamps::rtt(now, t.ecr));
                self.stats.rtt_samples += 1;
                self.stats.ts_rtt_samples += 1;
            }
        }
        self.handle_data_ack(now, &data_ack);
        if self.conn.fin_sent && !self.conn.fin_acked && self.deadline.is_none() {
            // RFC 6298 (5.1): the FIN is outstanding data as far as the timer goes.
            self.deadline = Some(now + self.rto.rto());
        }
        if self.conn.fin_acked && self.snd_una >= self.total {
            self.deadline = None;
        }
        self.check_closed(now);
    }

    /// The SYN-ACK arrived: ESTABLISHED (RFC 9293 §3.5).
    fn established(&mut self, now: Instant, a: &Segment) {
        self.conn.state = State::Established;
        self.deadline = None;
        // RFC 7323 §2.2: the SYN-ACK's window is not scaled.
        self.rwnd = a.window;
        // RFC 7323 §3.2: timestamps only if both SYNs carried them.
        if self.conn.ts {
            match a.ts {
                Some(t) => self.conn.ts_recent.on_segment(a.seq, t.val),
                None => self.conn.ts = false,
            }
        }
        match self.conn.syn_sent {
            // RFC 6298 (2.2): the first RTT sample, from a SYN sent once (Karn).
            Some(t0) if !self.conn.syn_retransmitted => {
                self.rto.sample(now.saturating_since(t0));
                self.stats.rtt_samples += 1;
            }
            _ => {
                // RFC 6298 (5.7): the SYN was retransmitted; RTO 3 s when data begins.
                let three = Duration::from_secs(3);
                let base = self.rto.base();
                self.rto
                    .reinitialize(if base < three { three } else { base });
                // RFC 5681 §3.1: the initial window is one segment after a lost SYN or
                // SYN-ACK.
                self.cc.set_cwnd(self.mss);
            }
        }
        // The third segment of the handshake: the first data segment carries this ACK.
        self.conn.ack_due = true;
    }

    /// The next segment to send: a SYN, data (the last carrying the FIN), a lone FIN, or a
    /// pure ACK.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if self.conn.plain() {
            return self.poll_data(now);
        }
        if self.conn.state == State::SynSent {
            if !self.conn.syn_due {
                return None;
            }
            self.conn.syn_due = false;
            if !self.conn.syn_retransmitted {
                self.conn.syn_sent = Some(now);
            }
            if self.deadline.is_none() {
                self.deadline = Some(now + self.rto.rto());
            }
            let mut s = Segment {
                seq: 0,
                flags: SYN,
                window: 65_535,
                syn: Some(self.conn.opts),
                ..Segment::default()
            };
            self.decorate(now, &mut s);
            return Some(s);
        }
        if let Some(mut s) = self.poll_data(now) {
            if self.conn.ts {
                // RFC 7323 §4.1: timestamps replace the one timed segment.
                self.timed = None;
            }
            if self.conn.fin && s.end() == self.total {
                s.flags |= FIN;
                self.conn.fin_sent = true;
                self.conn.fin_due = false;
            }
            self.conn.ack_due = false;
            self.decorate(now, &mut s);
            return Some(s);
        }
        if !self.conn.handshake {
            return None;
        }
        if self.conn.fin && self.conn.fin_due && self.snd_nxt >= self.total {
            self.conn.fin_due = false;
            self.conn.fin_sent = true;
            self.conn.ack_due = false;
            if self.deadline.is_none() {
                self.deadline = Some(now + self.rto.rto());
            }
            let mut s = Segment {
                seq: self.total,
                flags: ACK | FIN,
                window: 65_535,
                ..Segment::default()
            };
            self.decorate(now, &mut s);
            return Some(s);
        }
        if self.conn.ack_due {
            self.conn.ack_due = false;
            let mut s = Segment {
                seq: if self.conn.fin_sent {
                    self.total + 1
                } else {
                    self.snd_nxt
                },
                flags: ACK,
                window: 65_535,
                ..Segment::default()
            };
            self.decorate(now, &mut s);
            self.check_closed(now);
            return Some(s);
        }
        None
    }

    /// The acknowledgement field (with `handshake`: 0 for the SYN-ACK, 1 once the peer's FIN
    /// is in) and the timestamps option.
    fn decorate(&mut self, now: Instant, s: &mut Segment) {
        if self.conn.handshake {
            s.ack = u64::from(self.conn.peer_fin);
        }
        if self.conn.ts {
            let ecr = if s.flags & ACK != 0 {
                self.conn.ts_recent.on_ack_sent(s.ack)
            } else {
                0 // RFC 7323 §3.2: TSecr is zero when the ACK bit is off (the SYN).
            };
            s.ts = Some(Timestamps {
                val: timestamps::tsval(now),
                ecr,
            });
        }
    }

    fn check_closed(&mut self, now: Instant) {
        if self.conn.handshake
            && self.conn.closed_at.is_none()
            && self.conn.fin_acked
            && self.conn.peer_fin
            && !self.conn.ack_due
        {
            self.conn.closed_at = Some(now);
            self.stats.closed = true;
        }
    }

    /// Handles the retransmission timer if it is due: the SYN's (RFC 6298 (5.5), RFC 9293
    /// §3.8.1), the FIN's, or loss recovery's.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !self.conn.handshake {
            return self.handle_rto(now);
        }
        let rto_due = self.deadline.is_some_and(|t| t <= now);
        if self.conn.state == State::SynSent {
            if !rto_due {
                return;
            }
            self.stats.timeouts += 1;
            self.stats.syn_retransmits += 1;
            self.rto.backoff();
            self.conn.syn_due = true;
            self.conn.syn_retransmitted = true;
            self.deadline = Some(now + self.rto.rto());
            return;
        }
        // Loss recovery's timers (with RACK-TLP also the probe and reordering timers) run
        // whichever is due; only an expired RTO with nothing but the FIN outstanding resends it.
        let fin_only =
            rto_due && self.conn.fin_sent && !self.conn.fin_acked && self.snd_una >= self.total;
        self.handle_rto(now);
        if fin_only {
            self.conn.fin_due = true;
            self.stats.fin_retransmits += 1;
        }
    }
}

#[cfg(test)]
#[path = "handshake_tests.rs"]
mod tests;
