//! OOS RLP (004 §III.A, ref. \[25\]): Karn's RLP recovery, but every frame is delivered the
//! moment it arrives.
//!
//! Contract. Same frames, NACKs, keepalives, retry limit and receiver gap wait as
//! [`super::karn_rlp`] (so the same residual loss, 004 §III.D: "their recovery mechanism is
//! exactly the same"), but the receiver hands each new frame up at once instead of holding it
//! behind a gap: a frame is delayed only when it is itself retransmitted, which is what makes
//! OOS RLP the lowest-delay retransmission scheme over several wireless links (004 §III.D,
//! Figs. 8-10). Delivery is out of order and at most once; the receiver still tracks which
//! numbers it has seen inside its window so a duplicate is never delivered twice. It takes the
//! same configuration as Karn's RLP ([`KarnRlpConfig`]).

use super::karn_rlp::{KarnRlpConfig, Rlp};
use crate::wire::HeaderFormat;

/// OOS RLP tuning: the same knobs as Karn's RLP.
pub type OosRlpConfig = KarnRlpConfig;

impl Rlp {
    /// An OOS RLP end: Karn's RLP recovery with delivery on arrival.
    pub fn oos(config: &OosRlpConfig, format: HeaderFormat) -> Self {
        Self::with_params(config.params("oos_rlp", false), format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{Sdu, Service};
    use crate::time::Instant;
    use crate::wire::SeqWidth;

    #[test]
    fn frames_after_a_gap_are_delivered_at_once_and_only_once() {
        let c = OosRlpConfig::default();
        let f = HeaderFormat::new(SeqWidth::W8);
        let (mut a, mut b) = (Rlp::oos(&c, f), Rlp::oos(&c, f));
        let t0 = Instant::ZERO;
        for i in 0..3u8 {
            a.handle_sdu(t0, Sdu::whole(vec![i])).unwrap();
        }
        let mut frames = Vec::new();
        let mut buf = Vec::new();
        while a.poll_transmit(t0, &mut buf) {
            frames.push(std::mem::take(&mut buf));
        }
        b.handle_frame(t0, &frames[0]);
        b.handle_frame(t0, &frames[2]); // frame 1 lost
        b.handle_frame(t0, &frames[2]); // and frame 2 duplicated
        let got: Vec<(u64, u8)> = std::iter::from_fn(|| b.poll_deliver())
            .map(|d| (d.seq, d.data[0]))
            .collect();
        assert_eq!(got, [(0, 0), (2, 2)]);
        assert_eq!(b.stats().duplicates, 1);
        // The late frame 1 is still recovered and delivered after 2.
        let mut nack = Vec::new();
        assert!(b.poll_transmit(t0, &mut nack));
        a.handle_frame(t0, &nack);
        buf.clear();
        assert!(a.poll_transmit(t0, &mut buf));
        b.handle_frame(t0, &buf);
        assert_eq!(b.poll_deliver().map(|d| d.seq), Some(1));
        assert_eq!(b.name(), "oos_rlp");
    }
}
