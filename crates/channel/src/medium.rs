//! One frame on the air: the per-frame step every driver of a wireless hop shares.
//!
//! Contract. When a MAC puts a frame on the air at `now`, [`on_air`] draws the frame's fate from
//! that direction's error model and generator, reports to the sending end's scheduler whether
//! the frame got through (as a link-level acknowledgement would; ELF learns error rates from
//! it, 003 §6), and returns the outcome with the bytes that arrive. The simulator and the
//! emulator both call it, so the same error trace gives the same per-frame outcomes in both
//! (003 §1.3, §4: trace-driven error emulation). [`FrameCounts`] tallies outcomes by kind.

use mslink_link::link::{MultiServiceLink, TxFrame};
use mslink_link::Instant;
use rand::RngCore;

use crate::{ErrorModel, Outcome};

/// Frames a MAC put on the air, by fate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameCounts {
    /// Frames sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Lost by the error model.
    pub lost: u64,
    /// Truncated by the error model.
    pub truncated: u64,
    /// Delivered with bit errors by the error model.
    pub corrupted: u64,
}

impl FrameCounts {
    /// Counts one frame of `len` bytes that met `outcome`.
    pub fn record(&mut self, len: usize, outcome: &Outcome) {
        self.sent += 1;
        self.bytes += len as u64;
        match outcome {
            Outcome::Lost => self.lost += 1,
            Outcome::Truncated { .. } => self.truncated += 1,
            Outcome::Corrupted { .. } => self.corrupted += 1,
            Outcome::Delivered => {}
        }
    }
}

/// Frame `frame` (what `end.poll_transmit` just produced as `tx`) goes on the air at `now`:
/// its outcome and the bytes that arrive at the far end (`None` if lost).
pub fn on_air(
    end: &mut MultiServiceLink,
    tx: TxFrame,
    frame: &[u8],
    model: &mut dyn ErrorModel,
    rng: &mut dyn RngCore,
    now: Instant,
) -> (Outcome, Option<Vec<u8>>) {
    let mut out = Vec::new();
    let (outcome, arrives) = on_air_into(end, tx, frame, model, rng, now, &mut out);
    (outcome, arrives.then_some(out))
}

/// [`on_air`] writing the arriving bytes into `out` (cleared first), a buffer the caller
/// reuses; `true` if anything arrives.
pub fn on_air_into(
    end: &mut MultiServiceLink,
    tx: TxFrame,
    frame: &[u8],
    model: &mut dyn ErrorModel,
    rng: &mut dyn RngCore,
    now: Instant,
    out: &mut Vec<u8>,
) -> (Outcome, bool) {
    let outcome = model.outcome(now, tx.len, rng);
    end.handle_tx_report(now, tx.service, !outcome.is_damaged());
    let arrives = outcome.apply_into(frame, out);
    (outcome, arrives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;
    use mslink_link::config::LinkConfig;
    use rand::SeedableRng;

    #[test]
    fn applies_and_counts_the_model_outcome() {
        // Frames large enough that packets travel whole: no fragment header.
        let config = LinkConfig {
            frame_size: 1600,
            ..LinkConfig::default()
        };
        let mut end = MultiServiceLink::new(&config).unwrap();
        let mut model = Pattern::new(1, 1, 0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut counts = FrameCounts::default();
        let packet = [0x45u8; 40];
        for expect_lost in [false, true, false] {
            end.handle_packet(Instant::ZERO, &packet).unwrap();
            let mut buf = Vec::new();
            let tx = end.poll_transmit(Instant::ZERO, &mut buf).unwrap();
            let (o, arrives) = on_air(&mut end, tx, &buf, &mut model, &mut rng, Instant::ZERO);
            counts.record(tx.len, &o);
            assert_eq!(arrives.is_none(), expect_lost);
            if let Some(a) = arrives {
                assert_eq!(a, buf);
            }
        }
        assert_eq!((counts.sent, counts.lost), (3, 1));
        // Raw has no header; the link adds its CRC-32 (one service: no tag).
        assert_eq!(counts.bytes, 3 * (40 + 4));
    }
}
