//! Persistent in-order retransmission (003 §3): retransmit until success, never reorder,
//! never duplicate.
//!
//! Contract. 003 §3 shows that a link that hides its losses by retransmitting *persistently*
//! and *in order* lets TCP run at the link's remaining capacity even at 83% loss (Figs. 3-4),
//! while a small retry limit leaves an end-to-end loss rate that grows fast with the local one
//! (Fig. 5: residual loss p^(k+1) after k retries). We choose a **windowed** scheme rather
//! than stop-and-wait (003 leaves the choice open): stop-and-wait would cap throughput at one
//! frame per round trip, which on 004's HSCSD link (about 220 ms) is a tenth of its capacity.
//!
//! It is the Karn's RLP engine ([`super::karn_rlp`]) with both ways of giving up removed: the
//! sender has no retry limit and the receiver no gap wait. So a data frame carries only its
//! sequence number (1 byte in 8-bit mode); the receiver NACKs each gap at once and again every
//! `nack_interval_ms` until it is filled, acknowledges cumulatively every half window and in
//! answer to keepalives; the sender keeps every frame until it is acknowledged and, while it
//! has nothing new to send, polls every `keepalive_interval_ms` (003 §3.2.3 observes such
//! "probe" packets re-establishing contact after an error burst). The poll is an empty
//! keepalive unless the oldest unacknowledged frame has already been retransmitted, i.e. is
//! known to have been lost: then the probe is that data frame itself, and the receiver answers
//! a duplicate with an `Ack`. The receiver also acknowledges at once a repair that moves its
//! in-order point: otherwise an idle sender's next probe carried the frame just repaired, a
//! full frame of airtime for nothing (with 003 Fig. 3's 32 KB TCP window at 42% loss, 415
//! kbit/s instead of 447 against a linear 443). With
//! empty keepalives only, a periodic error pattern (003's "five packets dropped out of every
//! six") could phase-lock with the sender's alternation of retransmission and keepalive so
//! that only keepalives got through: a 10 KB TCP window at 83% loss moved 64 packets in
//! 1000 s. Data probes on every poll fixed that but spent a full frame's airtime on frames the
//! receiver mostly already had (an idle sender waiting for the half-window `Ack`), halving
//! TCP's throughput with an 8 KB window at 83%. Delivery is in
//! sequence and exactly once; the only limit on persistence is the send queue, whose overflow
//! is counted (003 §3.2.2: under worse errors the queue overflows and TCP backs off, which is
//! the right response to the lower capacity).

use super::go_back_n::timer_ms;
use super::karn_rlp::{Rlp, RlpParams};
use crate::wire::HeaderFormat;

/// Persistent retransmission tuning. Durations are in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PersistentConfig {
    /// Frames held for retransmission, at most; clamped to `1..=modulus/2 - 1`.
    pub window: u64,
    /// Interval between repeated NACKs of a frame still missing (ms); should exceed the
    /// round-trip time.
    pub nack_interval_ms: f64,
    /// Interval between keepalives while the sender holds frames but sends no data (ms).
    pub keepalive_interval_ms: f64,
    /// SDUs held waiting for the window before new ones are refused.
    pub queue_limit: usize,
}

impl Default for PersistentConfig {
    /// Timers suit 004's slowest link (HSCSD, about 220 ms round trip) and work on WLAN too.
    fn default() -> Self {
        PersistentConfig {
            window: 32,
            nack_interval_ms: 300.0,
            keepalive_interval_ms: 300.0,
            queue_limit: 1000,
        }
    }
}

impl PersistentConfig {
    /// The engine's parameters: no retry limit, no receiver give-up, data probes.
    pub(crate) fn params(&self) -> RlpParams {
        let config = self;
        RlpParams {
            name: "persistent",
            window: config.window,
            max_retransmissions: None,
            nack_interval: timer_ms(config.nack_interval_ms),
            keepalive_interval: timer_ms(config.keepalive_interval_ms),
            gap_wait: None,
            queue_limit: config.queue_limit,
            in_order: true,
            probe_with_data: true,
        }
    }
}

impl Rlp {
    /// A persistent-retransmission end (003 §3): no retry limit, no receiver give-up.
    pub fn persistent(config: &PersistentConfig, format: HeaderFormat) -> Self {
        Self::with_params(config.params(), format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{Sdu, Service};
    use crate::time::Instant;
    use crate::wire::SeqWidth;

    fn frames(s: &mut Rlp, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while s.poll_transmit(now, &mut buf) {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    #[test]
    fn never_gives_up() {
        let c = PersistentConfig::default();
        let f = HeaderFormat::new(SeqWidth::W8);
        let (mut a, mut b) = (Rlp::persistent(&c, f), Rlp::persistent(&c, f));
        let mut now = Instant::ZERO;
        for i in 0..3u8 {
            a.handle_sdu(now, Sdu::whole(vec![i])).unwrap();
        }
        let first = frames(&mut a, now);
        b.handle_frame(now, &first[0]);
        b.handle_frame(now, &first[2]); // frame 1 lost
                                        // Fifty rounds in which every retransmission of frame 1 is lost: far past any retry
                                        // limit or gap wait Karn's RLP would use.
        for _ in 0..50 {
            for n in frames(&mut b, now) {
                a.handle_frame(now, &n);
            }
            let _lost = frames(&mut a, now);
            now = b.poll_timeout().expect("the receiver keeps NACKing");
            b.handle_timeout(now);
            a.handle_timeout(now);
        }
        assert_eq!(a.stats().abandoned + b.stats().abandoned, 0);
        // Each round frame 1 goes out in answer to the NACK, and again as the sender's probe
        // whenever its poll timer fires too.
        assert!(
            a.stats().retransmissions >= 50,
            "{}",
            a.stats().retransmissions
        );
        assert_eq!(b.poll_deliver().unwrap().data, vec![0]);
        assert!(
            b.poll_deliver().is_none(),
            "frame 2 still waits behind frame 1"
        );
        // The 51st copy gets through: everything is delivered, in order, once.
        for n in frames(&mut b, now) {
            a.handle_frame(now, &n);
        }
        for d in frames(&mut a, now) {
            b.handle_frame(now, &d);
        }
        let got: Vec<u8> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| d.data[0])
            .collect();
        assert_eq!(got, [1, 2]);
        assert_eq!(b.name(), "persistent");
    }

    #[test]
    fn a_repair_that_moves_the_in_order_point_is_acknowledged_at_once() {
        let c = PersistentConfig::default(); // window 32: volunteered acks every 16 frames
        let f = HeaderFormat::new(SeqWidth::W8);
        let (mut a, mut b) = (Rlp::persistent(&c, f), Rlp::persistent(&c, f));
        let now = Instant::ZERO;
        for i in 0..3u8 {
            a.handle_sdu(now, Sdu::whole(vec![i])).unwrap();
        }
        let first = frames(&mut a, now);
        b.handle_frame(now, &first[0]);
        b.handle_frame(now, &first[2]); // frame 1 lost
        let nack = frames(&mut b, now);
        assert_eq!(nack.len(), 1, "one NACK for the gap");
        a.handle_frame(now, &nack[0]);
        let repair = frames(&mut a, now);
        assert_eq!(repair.len(), 1, "frame 1 again");
        b.handle_frame(now, &repair[0]);
        let answer = frames(&mut b, now);
        assert_eq!(
            answer.len(),
            1,
            "the repair is acknowledged without waiting"
        );
        a.handle_frame(now, &answer[0]);
        assert!(
            a.poll_timeout().is_none(),
            "the sender holds nothing, so it has nothing to poll for"
        );
        // A frame that arrives in order and repairs nothing waits for the half-window ack.
        a.handle_sdu(now, Sdu::whole(vec![3])).unwrap();
        for d in frames(&mut a, now) {
            b.handle_frame(now, &d);
        }
        assert!(frames(&mut b, now).is_empty());
        let got: Vec<u8> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| d.data[0])
            .collect();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    /// Sends `n` one-byte SDUs over a hop of one frame per 15 ms slot whose forward direction
    /// loses five frames out of every six (003 Fig. 3's 83% pattern), the reverse none; returns
    /// what the receiver delivered within `slots` slots.
    fn periodic_pattern_run(p: RlpParams, n: u8, slots: u64) -> Vec<u8> {
        let f = HeaderFormat::new(SeqWidth::W8);
        let (mut a, mut b) = (Rlp::with_params(p.clone(), f), Rlp::with_params(p, f));
        let mut now = Instant::ZERO;
        for i in 0..n {
            a.handle_sdu(now, Sdu::whole(vec![i])).unwrap();
        }
        let mut got = Vec::new();
        let mut buf = Vec::new();
        for slot in 0..slots {
            now = Instant::from_nanos(slot * 15_000_000);
            for end in [&mut a, &mut b] {
                if end.poll_timeout().is_some_and(|t| t <= now) {
                    end.handle_timeout(now);
                }
            }
            while b.poll_transmit(now, &mut buf) {
                a.handle_frame(now, &std::mem::take(&mut buf));
            }
            if a.poll_transmit(now, &mut buf) && slot % 6 == 5 {
                b.handle_frame(now, &buf);
            }
            buf.clear();
            got.extend(std::iter::from_fn(|| b.poll_deliver()).map(|d| d.data[0]));
        }
        got
    }

    fn params_for_003_fig3() -> RlpParams {
        let c = PersistentConfig {
            window: 64,
            nack_interval_ms: 40.0,
            keepalive_interval_ms: 20.0,
            ..PersistentConfig::default()
        };
        c.params()
    }

    #[test]
    fn a_periodic_error_pattern_cannot_lock_out_the_data() {
        let p = params_for_003_fig3();
        assert!(p.probe_with_data);
        let got = periodic_pattern_run(p, 20, 2_000);
        assert_eq!(
            got,
            (0..20).collect::<Vec<u8>>(),
            "every SDU, in order, once"
        );
    }

    #[test]
    fn empty_keepalives_can_phase_lock_with_the_pattern() {
        // The control: the same engine polling with empty keepalives, as Karn's RLP does.
        let mut p = params_for_003_fig3();
        p.probe_with_data = false;
        let got = periodic_pattern_run(p, 20, 2_000);
        assert!(got.len() < 20, "delivered {} of 20", got.len());
    }
}
