//! The one-way delays of one flow's packets: mean and standard deviation, percentiles, and
//! interarrival jitter, in memory that does not grow with the number of packets.
//!
//! Contract. [`Delays::add`] takes each distinct packet's delay (seconds, in arrival order).
//! [`Delays::summary`] gives the mean and standard deviation and the smallest delay (exact),
//! the 50th, 95th and 99th
//! percentiles, and the interarrival jitter of RFC 3550 §6.4.1: with D = the difference of two
//! consecutive packets' transit times, J += (|D| - J) / 16. Percentile p is the value at rank
//! floor(p * (n - 1)) of the n delays in increasing order (the lower of the two nearest order
//! statistics): exact while a flow has received at most [`EXACT`] packets (kept as they are,
//! 8 bytes each: a million short flows stay small), and from then on within 1% of it, from a
//! DDSketch (Masson, Rim and Lee, VLDB 2019, through the `sketches-ddsketch` crate):
//! logarithmic bins of relative width 2%, held 128 at a time, so a flow whose delays span a
//! factor of 13 holds 1 KiB and none more than [`MAX_HEAP_BYTES`]; past [`MAX_BINS`] bins (a
//! span of 28,000: 10 ms to 280 s) the lowest bins merge, which moves only the lowest
//! percentiles. A flow that receives nothing allocates nothing and reports zeros.

use sketches_ddsketch::{Config, DDSketch};

/// Packets whose delays are kept exactly before the sketch takes over.
pub(crate) const EXACT: usize = 32;
/// Relative accuracy of the percentiles past [`EXACT`] packets.
pub(crate) const RELATIVE_ACCURACY: f64 = 0.01;
/// Delays below this (seconds) count as zero: far under any link's transmission time.
const MIN_DELAY_S: f64 = 1e-9;
/// Bins kept at most; past it the lowest bins merge (a span of e^(0.02 * 512) = 28,000).
pub(crate) const MAX_BINS: u32 = 512;
/// One block of bins: the crate grows a sketch's bins 128 at a time.
pub(crate) const BLOCK_BYTES: usize = 128 * std::mem::size_of::<u64>();
/// The most heap one flow's delays hold: the sketch and its bins at their largest (the exact
/// list, at most [`EXACT`] delays, is freed when the sketch takes over).
pub(crate) const MAX_HEAP_BYTES: [usize; 2] = [
    std::mem::size_of::<DDSketch>(),
    MAX_BINS as usize * std::mem::size_of::<u64>(),
];

/// What a flow's delays sum up to.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct DelaySummary {
    pub mean_s: f64,
    pub std_s: f64,
    pub min_s: f64,
    pub p50_s: f64,
    pub p95_s: f64,
    pub p99_s: f64,
    pub jitter_s: f64,
}

/// The delays of one flow.
#[derive(Clone, Default)]
pub(super) struct Delays {
    n: u64,
    sum: f64,
    sumsq: f64,
    /// Smallest delay so far (+infinity before the first).
    min: f64,
    /// Transit time of the last packet (RFC 3550's R_i - S_i).
    last: f64,
    jitter: f64,
    /// The delays themselves, up to [`EXACT`] of them.
    exact: Vec<f64>,
    /// The delays, once there are more than [`EXACT`].
    sketch: Option<Box<DDSketch>>,
}

impl Delays {
    /// Records one packet's delay, seconds.
    pub(super) fn add(&mut self, delay: f64) {
        if self.n > 0 {
            // RFC 3550 §6.4.1: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1)) / 16.
            self.jitter += ((delay - self.last).abs() - self.jitter) / 16.0;
        }
        self.last = delay;
        self.min = if self.n == 0 {
            delay
        } else {
            self.min.min(delay)
        };
        self.n += 1;
        self.sum += delay;
        self.sumsq += delay * delay;
        if let Some(sk) = &mut self.sketch {
            sk.add(delay);
        } else if self.exact.len() < EXACT {
            self.exact.push(delay);
        } else {
            let mut sk = Box::new(DDSketch::new(Config::new(
                RELATIVE_ACCURACY,
                MAX_BINS,
                MIN_DELAY_S,
            )));
            for &d in &self.exact {
                sk.add(d);
            }
            sk.add(delay);
            self.exact = Vec::new();
            self.sketch = Some(sk);
        }
    }

    /// Heap bytes held (the exact list's capacity, or the sketch and its bins).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.exact.capacity() * std::mem::size_of::<f64>()
            + self.sketch.as_ref().map_or(0, |s| {
                std::mem::size_of::<DDSketch>() + s.length() * std::mem::size_of::<u64>()
            })
    }

    pub(super) fn summary(&self) -> DelaySummary {
        if self.n == 0 {
            return DelaySummary::default();
        }
        let n = self.n as f64;
        let mean = self.sum / n;
        let mut sorted = Vec::new();
        if self.sketch.is_none() {
            sorted = self.exact.clone();
            sorted.sort_by(f64::total_cmp);
        }
        let q = |p: f64| match &self.sketch {
            Some(sk) => sk.quantile(p).ok().flatten().unwrap_or(0.0),
            None => mslink_stats::percentile(&sorted, p),
        };
        DelaySummary {
            mean_s: mean,
            std_s: (self.sumsq / n - mean * mean).max(0.0).sqrt(),
            min_s: self.min,
            p50_s: q(0.50),
            p95_s: q(0.95),
            p99_s: q(0.99),
            jitter_s: self.jitter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_received_allocates_nothing() {
        let d = Delays::default();
        assert_eq!(d.heap_bytes(), 0);
        assert_eq!(d.summary(), DelaySummary::default());
    }

    #[test]
    fn percentiles_are_within_the_sketch_accuracy_of_the_order_statistics() {
        // Delays 1..=1000 ms in a scrambled order: the exact p-th is at rank floor(p * 999).
        let mut d = Delays::default();
        let mut v: Vec<f64> = (1..=1000).map(|i| i as f64 * 1e-3).collect();
        for i in 0..v.len() {
            v.swap(i, (i * 7919) % 1000);
        }
        for &x in &v {
            d.add(x);
        }
        let s = d.summary();
        for (p, got) in [(0.50, s.p50_s), (0.95, s.p95_s), (0.99, s.p99_s)] {
            let exact = ((p * 999.0) as usize + 1) as f64 * 1e-3;
            assert!(
                (got - exact).abs() <= RELATIVE_ACCURACY * exact * 1.0001,
                "p{p}: {got} vs {exact}"
            );
        }
        assert!((s.mean_s - 0.5005).abs() < 1e-12);
        // sqrt((1000^2 - 1) / 12) ms.
        assert!((s.std_s - 0.288_674_9).abs() < 1e-6);
        // Spanning a factor of 1000 at 2% per bin: a few hundred bins, a few KiB.
        assert!(d.heap_bytes() < 8 * 1024, "{}", d.heap_bytes());
    }

    #[test]
    fn short_flows_have_exact_percentiles_in_a_few_bytes() {
        // 20 delays 20, 19, ..., 1 ms: rank floor(p * 19) in increasing order.
        let mut d = Delays::default();
        for i in (1..=20).rev() {
            d.add(i as f64 * 1e-3);
        }
        let s = d.summary();
        assert_eq!((s.p50_s, s.p95_s, s.p99_s), (10e-3, 19e-3, 19e-3));
        assert!(d.heap_bytes() <= EXACT * 8, "{}", d.heap_bytes());
        // One packet: every percentile is its delay.
        let mut one = Delays::default();
        one.add(0.25);
        let s = one.summary();
        assert_eq!(
            (s.mean_s, s.p50_s, s.p99_s, s.std_s),
            (0.25, 0.25, 0.25, 0.0)
        );
        // The sketch takes over at EXACT + 1 packets, with every delay so far.
        let mut d = Delays::default();
        for i in 1..=(EXACT + 1) {
            d.add(i as f64 * 1e-3);
        }
        assert!(d.exact.is_empty());
        assert_eq!(d.sketch.as_ref().map(|s| s.count()), Some(EXACT + 1));
        let p50 = d.summary().p50_s;
        assert!((p50 - 17e-3).abs() <= 17e-3 * RELATIVE_ACCURACY, "{p50}");
    }

    #[test]
    fn jitter_follows_rfc3550() {
        // Constant delay: no jitter.
        let mut d = Delays::default();
        for _ in 0..100 {
            d.add(0.02);
        }
        assert_eq!(d.summary().jitter_s, 0.0);
        // Alternating 10 and 30 ms: |D| = 20 ms each time, so J -> 20 ms as 1 - (15/16)^n.
        let mut d = Delays::default();
        for i in 0..200 {
            d.add(if i % 2 == 0 { 0.01 } else { 0.03 });
        }
        let expect = 0.02 * (1.0 - (15.0f64 / 16.0).powi(199));
        assert!((d.summary().jitter_s - expect).abs() < 1e-12);
        // One step: J = |D| / 16 after the second packet.
        let mut d = Delays::default();
        d.add(0.01);
        d.add(0.026);
        assert!((d.summary().jitter_s - 0.001).abs() < 1e-15);
    }
}
