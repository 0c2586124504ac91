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

use mslink_link::{Duration, Instant};

use super::segment::{Segment, ACK, MAX_SACK_BLOCKS};
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

    /// Takes one data segment.
    pub fn handle_segment(&mut self, now: Instant, s: &Segment) {
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

    /// The ACK owed now, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
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

    /// When the delayed-ACK timer expires.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// Nothing to do here beyond what `poll_transmit` sends once the timer is due; kept for
    /// the common API shape (a call with nothing due does nothing).
    pub fn handle_timeout(&mut self, now: Instant) {
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
}
