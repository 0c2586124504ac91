//! Which packets of a UDP flow have arrived: tells a copy from a new packet with memory sized
//! to the flow's reordering, not to the worst case.
//!
//! Contract. [`Arrivals::insert`] records sequence number `seq` and says whether it is new.
//! It remembers at most [`WINDOW`] packets below the highest one seen, as a bitmap of
//! 64-packet words that grows on demand and drops its oldest word once every packet in it has
//! arrived (those stay known as arrived) or when the window is full (those are forgotten).
//! A packet [`WINDOW`] or more below the highest one, or forgotten, counts as new: a copy that
//! late is not told apart (no link here delays a copy that much). A flow that never receives
//! a datagram (TCP, WWW) allocates nothing; one whose packets arrive in order holds one or two
//! words; the most is [`MAX_HEAP_BYTES`]. The answers are those of the table this replaced
//! ([`WINDOW`] slots, slot `seq % WINDOW` holding `seq + 1` once `seq` arrived) whenever a
//! flow's packets arrive less than `WINDOW - 64` apart in sequence.

use std::collections::VecDeque;

/// Packets remembered below the highest one seen.
pub(crate) const WINDOW: usize = 4096;
const WORDS: usize = WINDOW / 64;
/// The largest heap block of one flow's bitmap.
pub(crate) const MAX_HEAP_BYTES: usize = WORDS * std::mem::size_of::<u64>();

/// The arrivals of one flow.
#[derive(Debug, Default)]
pub(super) struct Arrivals {
    /// Packets below this were forgotten when the window slid.
    floor: u32,
    /// Highest sequence number seen.
    top: u32,
    /// Sequence number of bit 0 of `words[0]`, a multiple of 64; every packet from `floor`
    /// up to it has arrived.
    base: u32,
    /// Bit `s % 64` of `words[(s - base) / 64]` is set once packet `s` has arrived.
    words: VecDeque<u64>,
}

impl Arrivals {
    /// Records packet `seq`; false if it had arrived before.
    pub(super) fn insert(&mut self, seq: u32) -> bool {
        if seq < self.floor || self.top.saturating_sub(seq) >= WINDOW as u32 {
            return true;
        }
        if seq < self.base {
            return false;
        }
        self.top = self.top.max(seq);
        let mut w = ((seq - self.base) / 64) as usize;
        if w >= WORDS {
            // Slide so that `seq` lands in the last word of a full window.
            let drop = w + 1 - WORDS;
            if drop >= self.words.len() {
                self.words.clear();
            } else {
                self.words.drain(..drop);
            }
            self.base += 64 * drop as u32;
            self.floor = self.base;
            w = WORDS - 1;
        }
        if w >= self.words.len() {
            // Powers of two up to the window, so the heap never passes `MAX_HEAP_BYTES`.
            let cap = (w + 1).next_power_of_two().min(WORDS);
            if self.words.capacity() < cap {
                self.words.reserve_exact(cap - self.words.len());
            }
            self.words.resize(w + 1, 0);
        }
        let bit = 1u64 << (seq % 64);
        if self.words[w] & bit != 0 {
            return false;
        }
        self.words[w] |= bit;
        while self.words.len() > 1 && self.words[0] == u64::MAX {
            self.words.pop_front();
            self.base += 64;
        }
        true
    }

    /// Heap bytes held (capacity).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The table this window replaced: slot `seq % WINDOW` holds `seq + 1` once `seq` arrived.
    fn table_says_new(t: &mut [u32], seq: u32) -> bool {
        let slot = &mut t[seq as usize % WINDOW];
        let new = *slot != seq.wrapping_add(1);
        *slot = seq.wrapping_add(1);
        new
    }

    #[test]
    fn in_order_flows_stay_small_and_copies_are_caught() {
        let mut a = Arrivals::default();
        for s in 0..100_000 {
            assert!(a.insert(s));
            assert!(!a.insert(s), "copy of {s}");
        }
        assert!(a.heap_bytes() <= 4 * 8, "{}", a.heap_bytes());
        // Lose every other packet: the window fills, then slides, and stays at its bound.
        for s in (100_000..200_000).step_by(2) {
            assert!(a.insert(s));
        }
        assert!(a.heap_bytes() <= MAX_HEAP_BYTES, "{}", a.heap_bytes());
        assert!(!a.insert(199_998));
        assert!(a.insert(199_999), "a late packet within the window is new");
        // A jump far ahead clears the window.
        assert!(a.insert(10_000_000));
        assert!(!a.insert(10_000_000));
        assert!(a.insert(9_999_000));
        // Packets that all arrived stay known after their word is dropped.
        let mut b = Arrivals::default();
        for s in 0..1000 {
            b.insert(s);
        }
        assert!(!b.insert(5) && b.heap_bytes() <= 4 * 8);
    }

    proptest! {
        /// Within `WINDOW` of reordering, the window and the old table agree on every arrival.
        #[test]
        fn agrees_with_the_table(steps in proptest::collection::vec((0u32..3, 0u32..200), 1..2000)) {
            let (mut a, mut t) = (Arrivals::default(), vec![0u32; WINDOW]);
            let mut top = 0u32;
            for (kind, back) in steps {
                let seq = match kind {
                    // Next packets, possibly after losses.
                    0 => { top += back / 20 + 1; top }
                    // A late packet or a copy, not far behind.
                    _ => top.saturating_sub(back),
                };
                prop_assert_eq!(a.insert(seq), table_says_new(&mut t, seq), "seq {}", seq);
            }
            prop_assert!(a.heap_bytes() <= MAX_HEAP_BYTES);
        }
    }
}
