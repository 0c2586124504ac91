//! Sliding anti-replay window over 64-bit datagram counters (RFC 6479).
//!
//! Contract. [`ReplayWindow::check`] tells whether a counter may still be accepted (not seen,
//! not older than the window); [`ReplayWindow::update`] records it and must be called only
//! after the datagram authenticated, so a forged datagram can never move the window (RFC 6479
//! §2: check first, update after the integrity check). Any counter within [`WINDOW`] of the
//! highest one seen is accepted once, in any order; a duplicate is never accepted.
//!
//! Layout (RFC 6479 §2, Fig. 2): a ring of `BLOCKS` 64-bit words; bit `c % 64` of word
//! `(c / 64) % BLOCKS` stands for counter `c`. Moving the window forward clears whole words, so
//! an update costs O(1) amortised and no bit shifting. One word is kept as slack, so the
//! guaranteed window is `(BLOCKS - 1) * 64` counters.

/// Words in the ring (a power of two).
const BLOCKS: usize = 64;
const BLOCK_BITS: u64 = 64;
/// Counters behind the highest seen that are still accepted (RFC 6479 §2: (N - 1) * 64).
pub const WINDOW: u64 = (BLOCKS as u64 - 1) * BLOCK_BITS;

/// The receive-side replay state of one session.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    bitmap: [u64; BLOCKS],
    /// Highest counter accepted so far (meaningful once `any` is set).
    top: u64,
    any: bool,
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            bitmap: [0; BLOCKS],
            top: 0,
            any: false,
        }
    }
}

fn slot(counter: u64) -> (usize, u64) {
    let block = ((counter / BLOCK_BITS) as usize) & (BLOCKS - 1);
    (block, 1u64 << (counter % BLOCK_BITS))
}

impl ReplayWindow {
    /// True if `counter` would be accepted: newer than everything seen, or within the window
    /// and not seen before.
    pub fn check(&self, counter: u64) -> bool {
        if !self.any || counter > self.top {
            return true;
        }
        if self.top - counter >= WINDOW {
            return false;
        }
        let (block, bit) = slot(counter);
        self.bitmap[block] & bit == 0
    }

    /// Records `counter` (after authentication). Returns false, changing nothing, if
    /// [`check`](Self::check) would have refused it.
    pub fn update(&mut self, counter: u64) -> bool {
        if !self.check(counter) {
            return false;
        }
        if !self.any || counter > self.top {
            // RFC 6479 §2: clear the words between the old top's word and the new one.
            let old = if self.any {
                self.top / BLOCK_BITS
            } else {
                // Nothing seen: every word is stale.
                (counter / BLOCK_BITS).wrapping_sub(BLOCKS as u64)
            };
            let new = counter / BLOCK_BITS;
            let steps = (new.wrapping_sub(old)).min(BLOCKS as u64);
            for i in 1..=steps {
                let b = (old.wrapping_add(i) as usize) & (BLOCKS - 1);
                self.bitmap[b] = 0;
            }
            self.top = counter;
            self.any = true;
        }
        let (block, bit) = slot(counter);
        self.bitmap[block] |= bit;
        true
    }

    /// The highest counter accepted, if any.
    pub fn top(&self) -> Option<u64> {
        self.any.then_some(self.top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn in_order_duplicates_and_age() {
        let mut w = ReplayWindow::default();
        assert!(w.update(0));
        assert!(!w.update(0));
        assert!(w.update(5));
        assert!(w.update(3));
        assert!(!w.update(3));
        assert!(w.update(5 + WINDOW));
        // 5 is now exactly WINDOW behind the top: too old.
        assert!(!w.check(5));
        assert!(w.check(6));
        assert!(w.update(u64::MAX - 1));
        assert!(!w.check(6));
        assert!(w.update(u64::MAX));
        assert!(!w.update(u64::MAX));
    }

    #[test]
    fn jump_far_ahead_clears_everything() {
        let mut w = ReplayWindow::default();
        for c in 0..200 {
            assert!(w.update(c));
        }
        assert!(w.update(1_000_000));
        // Every counter within the window below the new top is fresh.
        for c in (1_000_000 - WINDOW + 1)..1_000_000 {
            assert!(w.check(c), "{c}");
        }
    }

    /// Independent model: a set of seen counters and the highest one.
    fn model_accepts(seen: &HashSet<u64>, top: Option<u64>, c: u64) -> Option<bool> {
        if seen.contains(&c) {
            return Some(false);
        }
        match top {
            None => Some(true),
            Some(t) if c > t => Some(true),
            Some(t) if t - c < WINDOW => Some(true),
            // Older than the window: the window refuses, which is its right.
            Some(_) => None,
        }
    }

    proptest! {
        #[test]
        fn never_accepts_a_duplicate_and_accepts_fresh_within_window(
            base in 0u64..u64::MAX / 2,
            offsets in proptest::collection::vec(0u64..3 * WINDOW, 1..400),
        ) {
            let mut w = ReplayWindow::default();
            let mut seen = HashSet::new();
            let mut top = None;
            for o in offsets {
                let c = base + o;
                let got = w.update(c);
                if let Some(expect) = model_accepts(&seen, top, c) {
                    prop_assert_eq!(got, expect, "counter {}", c);
                } else {
                    prop_assert!(!got);
                }
                if got {
                    prop_assert!(seen.insert(c), "duplicate {} accepted", c);
                    top = Some(top.map_or(c, |t: u64| t.max(c)));
                }
            }
        }

        #[test]
        fn any_permutation_within_window_is_accepted_once(
            seed in any::<u64>(),
            n in 1usize..(WINDOW as usize),
        ) {
            use rand::seq::SliceRandom;
            use rand_chacha::rand_core::SeedableRng;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut order: Vec<u64> = (0..n as u64).collect();
            order.shuffle(&mut rng);
            let mut w = ReplayWindow::default();
            for &c in &order {
                prop_assert!(w.update(c), "fresh {} refused", c);
            }
            for &c in &order {
                prop_assert!(!w.update(c), "duplicate {} accepted", c);
            }
        }
    }
}
