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
//! has nothing new to send, polls with a keepalive every `keepalive_interval_ms` (003 §3.2.3
//! observes such "probe" packets re-establishing contact after an error burst). Delivery is in
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

impl Rlp {
    /// A persistent-retransmission end (003 §3): no retry limit, no receiver give-up.
    pub fn persistent(config: &PersistentConfig, format: HeaderFormat) -> Self {
        let p = RlpParams {
            name: "persistent",
            window: config.window,
            max_retransmissions: None,
            nack_interval: timer_ms(config.nack_interval_ms),
            keepalive_interval: timer_ms(config.keepalive_interval_ms),
            gap_wait: None,
            queue_limit: config.queue_limit,
            in_order: true,
        };
        Self::with_params(p, format)
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
        assert_eq!(a.stats().retransmissions, 50);
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
}
