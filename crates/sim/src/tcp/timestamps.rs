//! RFC 7323 timestamps: the clock, TS.Recent, and the RTT an echo measures.
//!
//! Contract. [`tsval`] is the timestamp clock: `now` in whole milliseconds, modulo 2^32 (a
//! 1 ms tick, as Linux's TCP timestamps; RFC 7323 §5.4 asks for 1 ms to 1 s). [`TsRecent`]
//! keeps the value an end echoes (RFC 7323 §4.3): a segment's TSval replaces TS.Recent only
//! if the segment starts at or before the last acknowledgement this end sent
//! (`SEG.SEQ <= Last.ACK.sent`) and the TSval is not older (modulo 2^32); so with delayed
//! ACKs the echo is of the earliest unacknowledged segment, an out-of-order segment does not
//! change it, and the segment that fills a hole does. [`rtt`] is the sample an ACK's TSecr
//! gives (RFC 7323 §4.1): now minus the echoed TSval, naming the transmission that was
//! acknowledged, so retransmitted data is measured too. PAWS (§5) is not implemented: the
//! simulator's links never deliver a segment from an earlier wrap of the sequence space.

use mslink_link::{Duration, Instant};

/// The timestamp clock: milliseconds since the start of the run, modulo 2^32.
pub fn tsval(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}

/// The RTT an echoed TSval `ecr` measures at `now` (RFC 7323 §4.1), in whole milliseconds.
pub fn rtt(now: Instant, ecr: u32) -> Duration {
    Duration::from_millis(tsval(now).wrapping_sub(ecr) as u64)
}

/// Whether timestamp `a` is at or after `b` modulo 2^32 (RFC 7323 §5.2's comparison).
fn not_older(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// TS.Recent and Last.ACK.sent of one end (RFC 7323 §4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TsRecent {
    recent: Option<u32>,
    last_ack_sent: u64,
}

impl TsRecent {
    /// RFC 7323 §4.3 (2): a segment starting at `seq` with TSval `val` arrived.
    pub fn on_segment(&mut self, seq: u64, val: u32) {
        if seq <= self.last_ack_sent && self.recent.is_none_or(|r| not_older(val, r)) {
            self.recent = Some(val);
        }
    }
    /// RFC 7323 §4.3 (3): an ACK for `ack` is sent; returns the TSecr it carries.
    pub fn on_ack_sent(&mut self, ack: u64) -> u32 {
        self.last_ack_sent = ack;
        self.recent.unwrap_or(0)
    }
    /// TS.Recent, if a timestamp has been accepted.
    pub fn recent(&self) -> Option<u32> {
        self.recent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7323 §4.3 case (A), delayed ACKs: segments 1 and 2 arrive and one ACK covers
    /// both; it echoes the TSval of segment 1, the earliest unacknowledged one.
    #[test]
    fn delayed_ack_echoes_the_earliest_unacknowledged_segment() {
        let mut t = TsRecent::default();
        t.on_ack_sent(0);
        t.on_segment(0, 1); // TSval 1 at seq 0 = Last.ACK.sent: taken
        t.on_segment(1000, 2); // seq 1000 > Last.ACK.sent: ignored
        assert_eq!(t.on_ack_sent(2000), 1);
        t.on_segment(2000, 3);
        assert_eq!(t.on_ack_sent(3000), 3);
    }

    /// RFC 7323 §4.3 case (B), a hole: segment 3 arrives before 2; the duplicate ACK echoes
    /// segment 1's TSval (the out-of-order segment does not update TS.Recent), and the ACK
    /// after segment 2 fills the hole echoes segment 2's.
    #[test]
    fn out_of_order_segment_does_not_update_and_the_hole_filler_does() {
        let mut t = TsRecent::default();
        t.on_segment(0, 10);
        assert_eq!(t.on_ack_sent(1000), 10);
        t.on_segment(2000, 30); // above Last.ACK.sent = 1000
        assert_eq!(t.on_ack_sent(1000), 10, "duplicate ACK echoes segment 1");
        t.on_segment(1000, 20); // fills the hole
        assert_eq!(
            t.on_ack_sent(3000),
            20,
            "echoes the hole filler, not segment 3"
        );
    }

    /// An old TSval (a delayed retransmission) never moves TS.Recent back, modulo 2^32.
    #[test]
    fn older_tsval_is_ignored_across_the_wrap() {
        let mut t = TsRecent::default();
        t.on_segment(0, u32::MAX - 1);
        t.on_segment(0, 5); // after the wrap: newer
        assert_eq!(t.recent(), Some(5));
        t.on_segment(0, u32::MAX); // before the wrap: older
        assert_eq!(t.recent(), Some(5));
    }

    /// The clock ticks in milliseconds and an echo measures now minus TSecr, across a wrap.
    #[test]
    fn clock_and_rtt() {
        let t = Instant::from_millis(1234) + Duration::from_micros(999);
        assert_eq!(tsval(t), 1234);
        assert_eq!(rtt(t, 1200), Duration::from_millis(34));
        let big = Instant::from_millis((1u64 << 32) + 3);
        assert_eq!(rtt(big, u32::MAX), Duration::from_millis(4));
    }
}
