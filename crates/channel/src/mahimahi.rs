//! Mahimahi packet-delivery traces: the capacity of a link as a list of delivery opportunities.
//!
//! Contract. A trace is text with one non-negative integer per line: the millisecond at which
//! the link can deliver one packet of [`OPPORTUNITY_BYTES`] bytes (Mahimahi's `mm-link`
//! format). Timestamps never decrease; the last one is the trace's period, after which the
//! trace starts over (so a trace of ten lines all at `1` gives ten opportunities every
//! millisecond, forever). Blank lines and `#` comments are skipped. Parsing never panics and an
//! error names the 1-based line and what was expected ([`MahimahiError`], a small `Copy`
//! type). This module does no I/O: the caller reads the file.

/// Bytes one delivery opportunity carries (Mahimahi's MTU-sized opportunity: a 1500-byte IP
/// packet plus 4 bytes of framing).
pub const OPPORTUNITY_BYTES: usize = 1504;

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
    ms: Vec<u64>,
}

impl MahimahiTrace {
    /// Parses the text of a trace file.
    pub fn parse(text: &str) -> Result<MahimahiTrace, MahimahiError> {
        let mut ms: Vec<u64> = Vec::new();
        let mut lines = 0;
        for (i, raw) in text.lines().enumerate() {
            lines = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let err = |kind| MahimahiError { line: i + 1, kind };
            let t: u64 = body
                .parse()
                .map_err(|_| err(MahimahiErrorKind::NotANumber))?;
            if ms.last().is_some_and(|&p| t < p) {
                return Err(err(MahimahiErrorKind::Decreasing));
            }
            ms.push(t);
        }
        match ms.last() {
            None => Err(MahimahiError {
                line: lines,
                kind: MahimahiErrorKind::Empty,
            }),
            Some(0) => Err(MahimahiError {
                line: lines,
                kind: MahimahiErrorKind::ZeroPeriod,
            }),
            Some(_) => Ok(MahimahiTrace { ms }),
        }
    }

    /// A trace from timestamps already in memory (same rules as [`MahimahiTrace::parse`]).
    pub fn from_ms(ms: &[u64]) -> Result<MahimahiTrace, MahimahiError> {
        let text: String = ms.iter().map(|t| format!("{t}\n")).collect();
        Self::parse(&text)
    }

    /// Opportunities per period.
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// The period in milliseconds (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        *self.ms.last().expect("parse refuses empty traces")
    }

    /// Timestamp in ms of opportunity `k` counted from the start, across loops.
    pub fn at_ms(&self, k: u64) -> u64 {
        let n = self.ms.len() as u64;
        (k / n) * self.period_ms() + self.ms[(k % n) as usize]
    }

    /// Index of the first opportunity at or after millisecond `t`.
    pub fn first_at_or_after_ms(&self, t: u64) -> u64 {
        let n = self.ms.len() as u64;
        let p = self.period_ms();
        let lap = t / p;
        let within = t % p;
        let i = self.ms.partition_point(|&m| m < within) as u64;
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

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "[0-9a-z#\\n -]{0,64}") {
            let _ = MahimahiTrace::parse(&s);
        }
    }
}
