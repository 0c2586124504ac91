//! Mahimahi packet-delivery traces: the capacity of a link as a list of delivery opportunities.
//!
//! Contract. A trace is text with one non-negative integer per line: the millisecond at which
//! the link can deliver one packet of [`OPPORTUNITY_BYTES`] bytes (Mahimahi's `mm-link`
//! format). Timestamps never decrease; the last one is the trace's period, after which the
//! trace starts over (so a trace of ten lines all at `1` gives ten opportunities every
//! millisecond, forever). Blank lines and `#` comments are skipped. Parsing never panics and an
//! error names the 1-based line and what was expected ([`MahimahiError`], a small `Copy`
//! type). This module does no I/O: the caller reads the file, whole ([`MahimahiTrace::parse`])
//! or line by line ([`MahimahiParser`], so the text need not be held). A trace keeps four
//! bytes per opportunity (eight once a timestamp passes 2^32 ms, 49.7 days), where a
//! `Vec<u64>` took eight.

/// Bytes one delivery opportunity carries (Mahimahi's MTU-sized opportunity: a 1500-byte IP
/// packet plus 4 bytes of framing).
pub const OPPORTUNITY_BYTES: usize = 1504;

/// The opportunity times (ms) of a trace whose rate in millisecond `m` is `rate_bps(m)`:
/// credit accrues each millisecond and every 1504 bytes of it is one opportunity at the end of
/// that millisecond (so the first line is at 1 ms or later, and the last one is the period).
pub fn opportunities(ms: u64, rate_bps: impl Fn(u64) -> f64) -> Vec<u64> {
    let per = (OPPORTUNITY_BYTES * 8) as f64;
    let mut credit = 0.0;
    let mut out = Vec::new();
    for m in 0..ms {
        credit += rate_bps(m) / 1000.0;
        while credit >= per {
            credit -= per;
            out.push(m + 1);
        }
    }
    // A Mahimahi trace's last line is its period.
    if out.last() != Some(&ms) {
        out.push(ms);
    }
    out
}

/// A wandering rate (Mbit/s) per step, `steps` of them, between `lo` and `hi`: a random walk
/// from the middle whose every step moves by at most a quarter of the range, clamped to it;
/// the draws come from ChaCha8 seeded with `seed` (`mslink trace capacity --min-mbps
/// --max-mbps`).
pub fn wandering_rates(lo: f64, hi: f64, steps: u64, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let spread = (hi - lo) / 4.0;
    let mut r = (lo + hi) / 2.0;
    (0..steps)
        .map(|_| {
            let v = r;
            r = (r + rng.gen_range(-spread..=spread)).clamp(lo, hi);
            v
        })
        .collect()
}

/// What is wrong with a trace line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MahimahiErrorKind {
    /// The line is not a non-negative integer number of milliseconds.
    NotANumber,
    /// The timestamp is smaller than the one before it.
    Decreasing,
    /// The trace has no opportunity at all.
    Empty,
    /// The last timestamp (the period) is zero, so the trace would loop in no time.
    ZeroPeriod,
}

/// A malformed Mahimahi trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {}", .kind.describe())]
pub struct MahimahiError {
    /// 1-based line number (for `Empty`, the number of lines read).
    pub line: usize,
    /// What is wrong.
    pub kind: MahimahiErrorKind,
}

impl MahimahiErrorKind {
    fn describe(&self) -> &'static str {
        match self {
            MahimahiErrorKind::NotANumber => {
                "expected a non-negative integer timestamp in milliseconds"
            }
            MahimahiErrorKind::Decreasing => "timestamps must not decrease",
            MahimahiErrorKind::Empty => "the trace has no delivery opportunity",
            MahimahiErrorKind::ZeroPeriod => {
                "the last timestamp (the period) must be greater than 0"
            }
        }
    }
}

/// A parsed packet-delivery trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MahimahiTrace {
    ms: Times,
}

/// The timestamps: four bytes each while they fit (a period under 49.7 days, every real
/// trace), eight beyond.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Times {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Times {
    fn len(&self) -> usize {
        match self {
            Times::Narrow(v) => v.len(),
            Times::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            Times::Narrow(v) => u64::from(v[i]),
            Times::Wide(v) => v[i],
        }
    }

    fn last(&self) -> Option<u64> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    fn push(&mut self, t: u64) {
        match self {
            Times::Narrow(v) => match u32::try_from(t) {
                Ok(t) => v.push(t),
                Err(_) => {
                    let mut wide: Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
                    wide.push(t);
                    *self = Times::Wide(wide);
                }
            },
            Times::Wide(v) => v.push(t),
        }
    }

    /// Index of the first timestamp not below `t`.
    fn first_not_below(&self, t: u64) -> usize {
        match self {
            Times::Narrow(v) => v.partition_point(|&m| u64::from(m) < t),
            Times::Wide(v) => v.partition_point(|&m| m < t),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Times::Narrow(v) => v.shrink_to_fit(),
            Times::Wide(v) => v.shrink_to_fit(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Times::Narrow(v) => v.capacity() * 4,
            Times::Wide(v) => v.capacity() * 8,
        }
    }
}

/// Builds a [`MahimahiTrace`] one line at a time, so a driver can stream a file of any size
/// instead of holding its text; errors are those of [`MahimahiTrace::parse`].
pub struct MahimahiParser {
    ms: Times,
    lines: usize,
}

impl Default for MahimahiParser {
    fn default() -> Self {
        MahimahiParser {
            ms: Times::Narrow(Vec::new()),
            lines: 0,
        }
    }
}

impl MahimahiParser {
    /// A parser at line 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the next line, given without its line ending.
    pub fn push_line(&mut self, raw: &str) -> Result<(), MahimahiError> {
        self.lines += 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            return Ok(());
        }
        let err = |kind| MahimahiError {
            line: self.lines,
            kind,
        };
        let t: u64 = body
            .parse()
            .map_err(|_| err(MahimahiErrorKind::NotANumber))?;
        if self.ms.last().is_some_and(|p| t < p) {
            return Err(err(MahimahiErrorKind::Decreasing));
        }
        self.ms.push(t);
        Ok(())
    }

    /// The trace of every line pushed, or why there is none.
    pub fn finish(mut self) -> Result<MahimahiTrace, MahimahiError> {
        match self.ms.last() {
            None => Err(MahimahiError {
                line: self.lines,
                kind: MahimahiErrorKind::Empty,
            }),
            Some(0) => Err(MahimahiError {
                line: self.lines,
                kind: MahimahiErrorKind::ZeroPeriod,
            }),
            Some(_) => {
                self.ms.shrink_to_fit();
                Ok(MahimahiTrace { ms: self.ms })
            }
        }
    }
}

impl MahimahiTrace {
    /// Parses the text of a trace file.
    pub fn parse(text: &str) -> Result<MahimahiTrace, MahimahiError> {
        let mut p = MahimahiParser::new();
        for line in text.lines() {
            p.push_line(line)?;
        }
        p.finish()
    }

    /// A trace from timestamps already in memory (same rules as [`MahimahiTrace::parse`]).
    pub fn from_ms(ms: &[u64]) -> Result<MahimahiTrace, MahimahiError> {
        let mut p = MahimahiParser::new();
        for t in ms {
            p.push_line(&t.to_string())?;
        }
        p.finish()
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// Bytes of memory the trace holds on the heap: four per opportunity.
    pub fn heap_bytes(&self) -> usize {
        self.ms.heap_bytes()
    }

    /// The period in milliseconds (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        self.ms.last().expect("parse refuses empty traces")
    }

    /// Timestamp in ms of opportunity `k` counted from the start, across loops.
    pub fn at_ms(&self, k: u64) -> u64 {
        let n = self.ms.len() as u64;
        (k / n) * self.period_ms() + self.ms.get((k % n) as usize)
    }

    /// Index of the first opportunity at or after millisecond `t`.
    pub fn first_at_or_after_ms(&self, t: u64) -> u64 {
        let n = self.ms.len() as u64;
        let p = self.period_ms();
        let lap = t / p;
        let within = t % p;
        let i = self.ms.first_not_below(within) as u64;
        let k = lap * n + i;
        // Step back over opportunities of the previous lap that fall at or after t (a trace
        // whose last line equals the period puts one at the start of the next lap).
        let mut k = k;
        while k > 0 && self.at_ms(k - 1) >= t {
            k -= 1;
        }
        k
    }

    /// Capacity in bits per second: opportunities per period times their size.
    pub fn capacity_bps(&self) -> f64 {
        self.ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / (self.period_ms() as f64 / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_loops() {
        let t = MahimahiTrace::parse("# ten per period\n0\n0\n5\n\n10\n").unwrap();
        assert_eq!(t.opportunities(), 4);
        assert_eq!(t.period_ms(), 10);
        let at: Vec<u64> = (0..9).map(|k| t.at_ms(k)).collect();
        assert_eq!(at, [0, 0, 5, 10, 10, 10, 15, 20, 20]);
        // 4 opportunities of 1504 bytes every 10 ms.
        assert_eq!(t.capacity_bps(), 4.0 * 1504.0 * 8.0 * 100.0);
    }

    #[test]
    fn first_at_or_after_finds_every_opportunity() {
        let t = MahimahiTrace::parse("1\n1\n3\n7\n").unwrap();
        for ms in 0..60 {
            let k = t.first_at_or_after_ms(ms);
            assert!(t.at_ms(k) >= ms, "ms {ms}: k {k}");
            assert!(k == 0 || t.at_ms(k - 1) < ms, "ms {ms}: k {k} skipped one");
        }
    }

    #[test]
    fn errors_name_the_line() {
        let e = |s: &str| MahimahiTrace::parse(s).unwrap_err();
        assert_eq!(
            e("1\n2\nx\n"),
            MahimahiError {
                line: 3,
                kind: MahimahiErrorKind::NotANumber
            }
        );
        assert_eq!(e("1\n5\n4\n").kind, MahimahiErrorKind::Decreasing);
        assert_eq!(e("1\n5\n4\n").line, 3);
        assert_eq!(e("-3\n").kind, MahimahiErrorKind::NotANumber);
        assert_eq!(e("# nothing\n\n").kind, MahimahiErrorKind::Empty);
        assert_eq!(e("0\n0\n").kind, MahimahiErrorKind::ZeroPeriod);
        assert_eq!(
            e("1\n2.5\n").to_string(),
            "line 2: expected a non-negative integer timestamp in milliseconds"
        );
    }

    #[test]
    fn four_bytes_an_opportunity_until_a_timestamp_needs_more() {
        let t = MahimahiTrace::parse(&"7\n".repeat(1000)).unwrap();
        assert_eq!(t.heap_bytes(), 4000);
        let wide = MahimahiTrace::from_ms(&[1, 2, 1 << 33]).unwrap();
        assert_eq!(wide.period_ms(), 1 << 33);
        assert_eq!(wide.at_ms(4), (1 << 33) + 2);
        assert_eq!(wide.first_at_or_after_ms(3), 2);
    }

    #[test]
    fn line_by_line_is_the_same_trace() {
        let text = "# c\n1\n1\n\n3\n7\n";
        let mut p = MahimahiParser::new();
        for l in text.lines() {
            p.push_line(l).unwrap();
        }
        assert_eq!(p.finish().unwrap(), MahimahiTrace::parse(text).unwrap());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "[0-9a-z#\\n -]{0,64}") {
            let _ = MahimahiTrace::parse(&s);
        }
    }
}
