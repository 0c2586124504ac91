//! The SACK scoreboard of RFC 6675, kept per segment.
//!
//! Contract. The sender's data is cut into segments at multiples of the MSS (the last one may
//! be short), so the scoreboard keeps one flag byte per outstanding segment: SACKed or not.
//! [`Scoreboard::update`] applies the blocks of one ACK (RFC 2018 §4: a block covers whole
//! segments, anything else is ignored), [`Scoreboard::advance`] drops what the cumulative ACK
//! covers, and the RFC 6675 §4 queries are [`Scoreboard::is_lost`] (`IsLost`),
//! [`Scoreboard::pipe`] (`SetPipe`) and [`Scoreboard::next_seg`] (`NextSeg` rules 1 and 3;
//! rule 2, new data, is the sender's; for rule 4, the rescue retransmission, the sender asks
//! [`Scoreboard::highest_unsacked`]). Queries cost one pass over the outstanding segments.
//!
//! RACK (RFC 8985, `rack.rs`) marks segments lost by time instead of by count: with
//! [`Scoreboard::mark_lost`] a segment carries a second flag, LOST, until it is retransmitted
//! ([`Scoreboard::on_retransmit`]); [`Scoreboard::rack_pipe`] and [`Scoreboard::first_lost`]
//! are the `pipe` and `NextSeg()` rule 1 a RACK sender uses in place of the DupThresh ones.

use std::collections::VecDeque;

const SACKED: u8 = 1;
/// Marked lost by RACK and not retransmitted since.
const LOST: u8 = 2;

/// Which outstanding segments the receiver has reported holding.
#[derive(Clone, Debug)]
pub struct Scoreboard {
    mss: u64,
    total: u64,
    /// Segment index of `flags[0]`.
    base: u64,
    flags: VecDeque<u8>,
    /// Segment index one past the highest SACKed segment (0 = none).
    high_sacked: u64,
}

impl Scoreboard {
    /// An empty scoreboard for a stream of `total` bytes in `mss`-byte segments.
    pub fn new(mss: u64, total: u64) -> Self {
        Scoreboard {
            mss,
            total,
            base: 0,
            flags: VecDeque::new(),
            high_sacked: 0,
        }
    }

    fn seg_len(&self, k: u64) -> u64 {
        self.mss.min(self.total.saturating_sub(k * self.mss))
    }

    /// Forgets the segments below byte `una` (the cumulative ACK).
    pub fn advance(&mut self, una: u64) {
        let k = if una >= self.total {
            self.total.div_ceil(self.mss)
        } else {
            una / self.mss
        };
        while self.base < k {
            if self.flags.pop_front().is_none() {
                self.base = k;
                break;
            }
            self.base += 1;
        }
        if self.high_sacked <= self.base {
            self.high_sacked = 0;
        }
    }

    /// Forgets every SACK (after a retransmission timeout, RFC 2018 §8).
    pub fn clear(&mut self) {
        self.flags.iter_mut().for_each(|f| *f = 0);
        self.high_sacked = 0;
    }

    /// Applies SACK blocks `[start, end)` in bytes; returns whether any segment became SACKed.
    pub fn update(&mut self, blocks: &[(u64, u64)]) -> bool {
        self.update_with(blocks, |_| {})
    }

    /// [`Scoreboard::update`], calling `newly(k)` with the index of every segment that became
    /// SACKed (RFC 6937's change in SACKd, RFC 8985's newly delivered segments).
    pub fn update_with(&mut self, blocks: &[(u64, u64)], mut newly: impl FnMut(u64)) -> bool {
        let mut changed = false;
        for &(a, b) in blocks {
            if b <= a {
                continue;
            }
            let first = a.div_ceil(self.mss).max(self.base);
            let mut k = first;
            while k * self.mss < b && k * self.mss < self.total {
                if k * self.mss + self.seg_len(k) > b {
                    break;
                }
                let i = (k - self.base) as usize;
                if i >= self.flags.len() {
                    // Bounded by the caller: blocks above snd_max are dropped before this.
                    self.flags.resize(i + 1, 0);
                }
                if self.flags[i] & SACKED == 0 {
                    self.flags[i] = SACKED;
                    changed = true;
                    newly(k);
                }
                self.high_sacked = self.high_sacked.max(k + 1);
                k += 1;
            }
        }
        changed
    }

    /// Whether the segment starting at byte `seq` is SACKed.
    pub fn is_sacked(&self, seq: u64) -> bool {
        let k = seq / self.mss;
        k >= self.base
            && self
                .flags
                .get((k - self.base) as usize)
                .is_some_and(|f| f & SACKED != 0)
    }

    /// Whether any segment is SACKed.
    pub fn any(&self) -> bool {
        self.high_sacked > 0
    }

    /// The MSS the scoreboard cuts segments at.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// Length of segment `k` (the last one may be short).
    pub fn len_of(&self, k: u64) -> u64 {
        self.seg_len(k)
    }

    /// SACKed bytes in `[lo, hi)` (whole segments; before the cumulative ACK covers them).
    pub fn sacked_bytes(&self, lo: u64, hi: u64) -> u64 {
        let (a, b) = (lo / self.mss, hi.div_ceil(self.mss));
        (a.max(self.base)..b)
            .filter(|&k| self.flag(k) & SACKED != 0)
            .map(|k| self.seg_len(k))
            .sum()
    }

    /// Segments currently SACKed (RFC 8985 `RACK.segs_sacked`).
    pub fn sacked_count(&self) -> u64 {
        self.flags.iter().filter(|&&f| f & SACKED != 0).count() as u64
    }

    fn flag(&self, k: u64) -> u8 {
        if k < self.base {
            return 0;
        }
        self.flags
            .get((k - self.base) as usize)
            .copied()
            .unwrap_or(0)
    }

    fn flag_mut(&mut self, k: u64) -> &mut u8 {
        let i = (k - self.base) as usize;
        if i >= self.flags.len() {
            // Bounded by the caller: only segments below snd_max are marked.
            self.flags.resize(i + 1, 0);
        }
        &mut self.flags[i]
    }

    /// RFC 8985 §6.2 step 5: marks segment `k` lost (not if SACKed); returns whether it was
    /// newly marked.
    pub fn mark_lost(&mut self, k: u64) -> bool {
        if k < self.base || self.flag(k) != 0 {
            return false;
        }
        *self.flag_mut(k) = LOST;
        true
    }

    /// Whether RACK marked segment `k` lost and it has not been retransmitted since.
    pub fn is_marked_lost(&self, k: u64) -> bool {
        self.flag(k) & LOST != 0
    }

    /// The segment starting at `seq` was retransmitted: it is in flight again.
    pub fn on_retransmit(&mut self, seq: u64) {
        let k = seq / self.mss;
        if k >= self.base && self.flag(k) & LOST != 0 {
            *self.flag_mut(k) &= !LOST;
        }
    }

    /// `pipe` for a RACK sender (RFC 8985 §3.3 with RFC 6675 §4's counting): every segment
    /// between `una` and `high_data` neither SACKed nor marked lost, once (a retransmitted
    /// segment is in flight once: its mark was cleared when it was resent).
    pub fn rack_pipe(&self, una: u64, high_data: u64) -> u64 {
        let (lo, hi) = (una / self.mss, high_data.div_ceil(self.mss));
        (lo..hi)
            .filter(|&k| self.flag(k) == 0)
            .map(|k| self.seg_len(k))
            .sum()
    }

    /// `NextSeg()` rule 1 for a RACK sender: the first segment at or above `una` marked lost.
    pub fn first_lost(&self, una: u64) -> Option<u64> {
        let lo = una / self.mss;
        let from = lo.saturating_sub(self.base) as usize;
        self.flags
            .iter()
            .skip(from)
            .position(|&f| f & LOST != 0)
            .map(|i| (self.base + (from + i) as u64) * self.mss)
    }

    /// Segments SACKed above the one starting at `seq`.
    fn sacked_above(&self, seq: u64) -> u64 {
        let k = seq / self.mss;
        let from = (k + 1).saturating_sub(self.base) as usize;
        self.flags
            .iter()
            .skip(from)
            .filter(|&&f| f & SACKED != 0)
            .count() as u64
    }

    /// RFC 6675 §4 `IsLost(seq)`: `dupthresh` or more SACKed segments above it (with whole
    /// segments, the same as more than `(dupthresh - 1) * SMSS` SACKed bytes).
    pub fn is_lost(&self, seq: u64, dupthresh: u32) -> bool {
        !self.is_sacked(seq) && self.sacked_above(seq) >= dupthresh as u64
    }

    /// RFC 6675 §4 `SetPipe`: bytes outstanding between `una` and `high_data`, counting an
    /// unSACKed segment once if not lost and once more if retransmitted (below `high_rxt`).
    pub fn pipe(&self, una: u64, high_data: u64, high_rxt: u64, dupthresh: u32) -> u64 {
        let (lo, hi) = (una / self.mss, high_data.div_ceil(self.mss));
        let mut above = 0u64;
        let mut pipe = 0;
        for k in (lo..hi).rev() {
            let sacked = k >= self.base
                && self
                    .flags
                    .get((k - self.base) as usize)
                    .is_some_and(|f| f & SACKED != 0);
            if sacked {
                above += 1;
                continue;
            }
            let len = self.seg_len(k);
            if above < dupthresh as u64 {
                pipe += len;
            }
            if k * self.mss < high_rxt {
                pipe += len;
            }
        }
        pipe
    }

    /// The start of the highest segment between `una` and `high_data` not SACKed (RFC 6675
    /// §4 `NextSeg` rule 4 retransmits it).
    pub fn highest_unsacked(&self, una: u64, high_data: u64) -> Option<u64> {
        let (lo, hi) = (una / self.mss, high_data.div_ceil(self.mss));
        (lo..hi)
            .rev()
            .map(|k| k * self.mss)
            .find(|&seq| !self.is_sacked(seq))
    }

    /// RFC 6675 §4 `NextSeg` rules 1 and 3: the first unSACKed segment at or above
    /// `high_rxt` and below the highest SACKed one that is lost (rule 1), else the first such
    /// segment at all (rule 3), as its starting byte and whether it was lost.
    pub fn next_seg(&self, una: u64, high_rxt: u64, dupthresh: u32) -> Option<(u64, bool)> {
        if self.high_sacked == 0 {
            return None;
        }
        let lo = (una.max(high_rxt)).div_ceil(self.mss);
        let mut above = 0u64;
        let (mut lost, mut any) = (None, None);
        for k in (lo..self.high_sacked).rev() {
            if self.is_sacked(k * self.mss) {
                above += 1;
                continue;
            }
            any = Some(k);
            if above >= dupthresh as u64 {
                lost = Some(k);
            }
        }
        lost.map(|k| (k * self.mss, true))
            .or(any.map(|k| (k * self.mss, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten 1000-byte segments out; 1, 4 and 7 lost; the rest SACKed.
    fn three_holes() -> Scoreboard {
        let mut s = Scoreboard::new(1000, 1_000_000);
        s.update(&[(2000, 4000), (5000, 7000), (8000, 10_000)]);
        s.update(&[(0, 1000)]); // below... becomes SACKed, then the cumulative ACK covers it
        s.advance(1000);
        s
    }

    #[test]
    fn holes_are_lost_with_three_sacked_above() {
        let s = three_holes();
        assert!(s.is_lost(1000, 3), "6 SACKed segments above");
        assert!(s.is_lost(4000, 3), "4 above");
        assert!(!s.is_lost(7000, 3), "only 2 above");
        assert!(!s.is_lost(2000, 3), "SACKed itself");
        // Pipe: holes 1 and 4 lost (0 each), hole 7 not lost (1 segment): 1000 bytes.
        assert_eq!(s.pipe(1000, 10_000, 1000, 3), 1000);
        // After retransmitting segment 1: it counts again.
        assert_eq!(s.pipe(1000, 10_000, 2000, 3), 2000);
        // NextSeg: rule 1 gives hole 1, then hole 4; past it rule 3 gives hole 7 (not lost).
        assert_eq!(s.next_seg(1000, 1000, 3), Some((1000, true)));
        assert_eq!(s.next_seg(1000, 2000, 3), Some((4000, true)));
        assert_eq!(s.next_seg(1000, 5000, 3), Some((7000, false)));
        assert_eq!(s.next_seg(1000, 8000, 3), None);
    }

    #[test]
    fn partial_blocks_are_ignored_and_advance_forgets() {
        let mut s = Scoreboard::new(1000, 5500);
        assert!(!s.update(&[(1500, 2500)]), "covers no whole segment");
        assert!(s.update(&[(5000, 5500)]), "the short last segment");
        assert!(s.is_sacked(5000));
        s.advance(5500);
        assert!(!s.any());
        s.update(&[(7000, 8000)]);
        assert!(!s.is_sacked(7000), "beyond the stream");
    }
}
