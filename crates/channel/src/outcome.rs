//! The fate of one frame on the channel.
//!
//! Contract: an [`Outcome`] is a value; [`Outcome::apply`] turns it into the bytes that arrive
//! (or none), and [`Outcome::combine`] merges the verdicts of stacked models: loss wins over
//! truncation, the earlier truncation wins, and bit errors add up (those past a truncation
//! vanish with the bytes they hit).

/// What the channel does to one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Arrives intact.
    Delivered,
    /// Never arrives.
    Lost,
    /// Only the first `at` bytes arrive (003 Table 1's "packet truncation").
    Truncated {
        /// Bytes that arrive.
        at: usize,
    },
    /// Arrives with these bit positions inverted (bit `i` is bit `7 - i % 8` of byte `i / 8`,
    /// most significant first, as bits go on the air). Sorted, no repeats.
    Corrupted {
        /// Inverted bit positions.
        bits: Vec<u32>,
    },
}

impl Outcome {
    /// This outcome for a frame of `len` bytes: a truncation at or past its end delivers it
    /// whole, and only the inverted bits inside it remain (none left: delivered).
    pub fn clipped_to(&self, len: usize) -> Outcome {
        match self {
            Outcome::Truncated { at } if *at >= len => Outcome::Delivered,
            Outcome::Corrupted { bits } => {
                let inside: Vec<u32> = bits
                    .iter()
                    .copied()
                    .filter(|&b| (b as usize) < len * 8)
                    .collect();
                if inside.is_empty() {
                    Outcome::Delivered
                } else {
                    Outcome::Corrupted { bits: inside }
                }
            }
            o => o.clone(),
        }
    }

    /// Merges the verdicts of two stacked models.
    pub fn combine(self, other: Outcome) -> Outcome {
        use Outcome::*;
        match (self, other) {
            (Lost, _) | (_, Lost) => Lost,
            (Delivered, o) | (o, Delivered) => o,
            (Truncated { at: a }, Truncated { at: b }) => Truncated { at: a.min(b) },
            (Truncated { at }, Corrupted { .. }) | (Corrupted { .. }, Truncated { at }) => {
                Truncated { at }
            }
            (Corrupted { bits: mut a }, Corrupted { bits: b }) => {
                a.extend(b);
                a.sort_unstable();
                // Two inversions of one bit cancel.
                let mut out: Vec<u32> = Vec::with_capacity(a.len());
                for x in a {
                    if out.last() == Some(&x) {
                        out.pop();
                    } else {
                        out.push(x);
                    }
                }
                if out.is_empty() {
                    Delivered
                } else {
                    Corrupted { bits: out }
                }
            }
        }
    }

    /// True unless the frame arrives byte for byte.
    pub fn is_damaged(&self) -> bool {
        !matches!(self, Outcome::Delivered)
    }

    /// The bytes that arrive when `frame` meets this outcome, or `None` if lost.
    pub fn apply(&self, frame: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.apply_into(frame, &mut out).then_some(out)
    }

    /// [`Outcome::apply`] into a buffer the caller keeps (a simulator reuses its buffers
    /// rather than allocate one per frame): `out` is cleared and, unless the frame is lost
    /// (then `false`), holds the bytes that arrive.
    pub fn apply_into(&self, frame: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self {
            Outcome::Lost => return false,
            Outcome::Delivered => out.extend_from_slice(frame),
            Outcome::Truncated { at } => out.extend_from_slice(&frame[..(*at).min(frame.len())]),
            Outcome::Corrupted { bits } => {
                out.extend_from_slice(frame);
                for &b in bits {
                    if let Some(byte) = out.get_mut(b as usize / 8) {
                        *byte ^= 0x80 >> (b % 8);
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_into_reuses_the_buffer_and_agrees_with_apply() {
        let frame: Vec<u8> = (0..40).collect();
        let mut out = vec![7u8; 100];
        for o in [
            Outcome::Delivered,
            Outcome::Lost,
            Outcome::Truncated { at: 9 },
            Outcome::Corrupted {
                bits: vec![0, 17, 319],
            },
        ] {
            let arrives = o.apply_into(&frame, &mut out);
            assert_eq!(arrives.then(|| out.clone()), o.apply(&frame), "{o:?}");
            assert!(out.capacity() >= 100, "the caller's buffer is kept");
        }
        assert!(!Outcome::Lost.apply_into(&frame, &mut out) && out.is_empty());
    }

    #[test]
    fn combination_rules() {
        use Outcome::*;
        assert_eq!(Delivered.combine(Lost), Lost);
        assert_eq!(
            Truncated { at: 5 }.combine(Truncated { at: 3 }),
            Truncated { at: 3 }
        );
        assert_eq!(
            Corrupted { bits: vec![1, 4] }.combine(Corrupted { bits: vec![4, 9] }),
            Corrupted { bits: vec![1, 9] }
        );
        assert_eq!(
            Corrupted { bits: vec![4] }.combine(Corrupted { bits: vec![4] }),
            Delivered
        );
        assert_eq!(
            Corrupted { bits: vec![4] }.combine(Truncated { at: 2 }),
            Truncated { at: 2 }
        );
    }

    #[test]
    fn apply_inverts_most_significant_bit_first() {
        let f = [0u8, 0, 0];
        assert_eq!(
            Outcome::Corrupted {
                bits: vec![0, 15, 99]
            }
            .apply(&f),
            Some(vec![0x80, 0x01, 0])
        );
        assert_eq!(Outcome::Truncated { at: 1 }.apply(&f), Some(vec![0]));
        assert_eq!(Outcome::Lost.apply(&f), None);
    }
}
