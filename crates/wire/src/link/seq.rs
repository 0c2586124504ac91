//! Sequence numbers on the wire versus in memory.
//!
//! Contract: services count frames with an unbounded `u64`; only the low `bits` of it travel in a
//! header. [`SeqSpace::decode`] recovers the full number as the one closest to a reference the
//! receiver already knows (its next expected number), which is unambiguous as long as the two
//! ends never drift apart by half the sequence space or more. Each service keeps its windows
//! below half the space (see [`SeqSpace::max_window`]) so that condition holds.

/// The sequence space of one header field: `bits` wide, numbers modulo `2^bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqSpace {
    bits: u32,
}

impl SeqSpace {
    /// A space of `bits` bits (1..=32).
    ///
    /// # Panics
    /// If `bits` is 0 or above 32: the header formats never produce such a space.
    pub const fn new(bits: u32) -> Self {
        assert!(
            bits >= 1 && bits <= 32,
            "sequence space must be 1..=32 bits"
        );
        SeqSpace { bits }
    }
    /// Width of the space in bits.
    pub const fn bits(self) -> u32 {
        self.bits
    }
    /// Number of distinct values, `2^bits`.
    pub const fn modulus(self) -> u64 {
        1u64 << self.bits
    }
    /// The largest window a selective-repeat style protocol may use in this space: half of it.
    pub const fn max_window(self) -> u64 {
        self.modulus() / 2
    }
    /// The wire value of a full sequence number: its low `bits`.
    pub const fn encode(self, full: u64) -> u32 {
        (full & (self.modulus() - 1)) as u32
    }
    /// The full sequence number nearest to `reference` whose low bits are `wire`.
    ///
    /// Ties (exactly half the space away) resolve forward. Never returns a number that would
    /// underflow zero.
    pub fn decode(self, wire: u32, reference: u64) -> u64 {
        let m = self.modulus();
        let mask = m - 1;
        let wire = wire as u64 & mask;
        let half = m / 2;
        let base = reference & !mask;
        let cand = base | wire;
        // Pick among cand - m, cand, cand + m the one within [reference - half, reference + half).
        if cand + half <= reference {
            cand + m
        } else if cand >= reference + half && cand >= m {
            cand - m
        } else {
            cand
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decode_wraps_forward_and_backward() {
        let s = SeqSpace::new(8);
        assert_eq!(s.decode(2, 254), 258);
        assert_eq!(s.decode(250, 258), 250);
        assert_eq!(s.decode(5, 0), 5);
        assert_eq!(s.decode(200, 0), 200); // nothing below zero to wrap to
    }

    proptest! {
        #[test]
        fn decode_inverts_encode_within_half_window(bits in 1u32..=32, reference in 0u64..(1u64 << 40), delta in any::<i64>()) {
            let s = SeqSpace::new(bits);
            let half = s.max_window() as i64;
            let d = if half > 1 { delta.rem_euclid(2 * half - 1) - (half - 1) } else { 0 };
            let full = reference as i64 + d;
            prop_assume!(full >= 0);
            let full = full as u64;
            prop_assert_eq!(s.decode(s.encode(full), reference), full);
        }
    }
}
