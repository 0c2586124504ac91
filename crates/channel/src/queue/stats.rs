//! What a queue counts: packets by how they left, and the sojourn of those dequeued (its
//! distribution in buckets, `SOJOURN_BUCKETS`).

use super::*;

/// Quarter-octave buckets of the sojourn histogram: bucket `k` holds sojourns in
/// [2^(k/4), 2^((k+1)/4)) µs (bucket 0 also everything below 1 µs; the last one everything
/// above 2^25 µs ≈ 34 s).
pub const SOJOURN_BUCKETS: usize = 100;

/// Sojourn times of the packets a queue handed out.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SojournStats {
    /// Packets measured.
    pub count: u64,
    /// Sum of their sojourns, ns.
    pub sum_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Counts per quarter-octave bucket ([`SOJOURN_BUCKETS`] of them once anything is recorded).
    pub histogram: Vec<u64>,
}

impl SojournStats {
    fn bucket(ns: u64) -> usize {
        let us = ns as f64 / 1e3;
        if us < 1.0 {
            return 0;
        }
        ((us.log2() * 4.0) as usize).min(SOJOURN_BUCKETS - 1)
    }

    /// Records one sojourn.
    pub fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        if self.histogram.is_empty() {
            self.histogram = vec![0; SOJOURN_BUCKETS];
        }
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
        self.histogram[Self::bucket(ns)] += 1;
    }

    /// Mean sojourn, seconds (0 when nothing was recorded).
    pub fn mean_s(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1e9
        }
    }

    /// The `q`-quantile (0..=1) in seconds, to within a quarter octave: the geometric middle
    /// of the bucket holding it (0 when nothing was recorded).
    pub fn quantile_s(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (k, n) in self.histogram.iter().enumerate() {
            seen += n;
            if seen >= rank {
                if k == 0 {
                    return 0.5e-6;
                }
                return 2f64.powf((k as f64 + 0.5) / 4.0) * 1e-6;
            }
        }
        self.max_ns as f64 / 1e9
    }

    /// Adds another's counts.
    pub fn merge(&mut self, o: &SojournStats) {
        if o.count == 0 {
            return;
        }
        if self.histogram.is_empty() {
            self.histogram = vec![0; SOJOURN_BUCKETS];
        }
        self.count += o.count;
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        for (a, b) in self.histogram.iter_mut().zip(&o.histogram) {
            *a += b;
        }
    }
}

/// Counters of a queue: `arrived = dequeued + dropped + len()`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueStats {
    /// Packets offered.
    pub arrived: u64,
    /// Packets handed out by `dequeue`.
    pub dequeued: u64,
    /// Packets dropped, every cause.
    pub dropped: u64,
    /// Bytes dropped, every cause.
    pub dropped_bytes: u64,
    /// Drop-tail: arriving packets that did not fit.
    pub dropped_tail: u64,
    /// Drop-head: queued packets dropped to make room.
    pub dropped_head: u64,
    /// CoDel's or PIE's control law.
    pub dropped_aqm: u64,
    /// An AQM queue at its hard limit.
    pub dropped_overflow: u64,
    /// Sojourn times of the packets handed out.
    pub sojourn: SojournStats,
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Drop-tail limit.
    Tail,
    /// Drop-head limit.
    Head,
    /// AQM control law.
    Aqm,
    /// AQM hard limit.
    Overflow,
}

impl QueueStats {
    pub(super) fn drop(&mut self, cause: DropCause, len: usize) {
        self.dropped += 1;
        self.dropped_bytes += len as u64;
        match cause {
            DropCause::Tail => self.dropped_tail += 1,
            DropCause::Head => self.dropped_head += 1,
            DropCause::Aqm => self.dropped_aqm += 1,
            DropCause::Overflow => self.dropped_overflow += 1,
        }
    }
}
