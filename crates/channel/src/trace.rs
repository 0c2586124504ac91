//! Per-frame outcome traces: a text format, its parser, and replay.
//!
//! Contract. A trace lists the fate of successive frames, one entry per line, so a recorded
//! error environment (003 §1.3, §4: losses, truncations and bit inversions captured from a real
//! radio) can be replayed exactly, by the simulator and the emulator alike. The format:
//!
//! ```text
//! # mslink error trace: one frame per line; '#' starts a comment; blank lines are skipped
//! ok                 # delivered intact
//! loss               # lost
//! trunc 120          # only the first 120 bytes arrive
//! bits 17 903 904    # delivered with these bit positions inverted (bit 0 = MSB of byte 0)
//! ok * 400           # any entry may be repeated: '* COUNT'
//! ```
//!
//! Parsing never panics; an error names the line and what was expected. Replay walks the
//! entries frame by frame and starts over at the end. Truncation points and bit positions
//! beyond a shorter frame are clipped to it.
//!
//! Two forms of one trace: [`Trace`] holds the entries as values, to generate, inspect and
//! rewrite traces; [`PackedTrace`] (`trace/packed.rs`) holds them for replay in no more bytes
//! than their text, and [`TraceParser`] builds it line by line, so a driver can stream a trace
//! file of any size instead of holding its text. [`Replay`] walks a packed trace, which the
//! replays of every run and direction may share.

use std::sync::Arc;

use crate::{ErrorModel, Outcome};
use mslink_link::Instant;
use rand::RngCore;

mod packed;

pub use packed::{Entries, PackedTrace, TraceParser};

/// One trace line: an outcome and how many frames it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The outcome (bit positions and truncation as written).
    pub outcome: Outcome,
    /// Consecutive frames with this outcome (at least 1).
    pub count: u64,
}

/// The first line [`Trace::to_text`] writes.
pub const TEXT_HEADER: &str = "# mslink error trace\n";

/// The entry as one line of the text format (without the line ending): `ok`, `loss`,
/// `trunc N` or `bits P ...`, then ` * COUNT` when it covers more than one frame.
impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.outcome {
            Outcome::Delivered => f.write_str("ok")?,
            Outcome::Lost => f.write_str("loss")?,
            Outcome::Truncated { at } => write!(f, "trunc {at}")?,
            Outcome::Corrupted { bits } => {
                f.write_str("bits")?;
                for b in bits {
                    write!(f, " {b}")?;
                }
            }
        }
        if self.count > 1 {
            write!(f, " * {}", self.count)?;
        }
        Ok(())
    }
}

/// A malformed trace line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong and what was expected.
    pub what: String,
}

/// A parsed trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The entries, in order.
    pub entries: Vec<Entry>,
}

impl Trace {
    /// Parses the text format.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if let Some(e) = parse_line(raw, i + 1)? {
                entries.push(e);
            }
        }
        Ok(Trace { entries })
    }

    /// Writes the trace back in the text format (run-length encoded).
    pub fn to_text(&self) -> String {
        let mut out = String::from(TEXT_HEADER);
        for e in &self.entries {
            out.push_str(&e.to_string());
            out.push('\n');
        }
        out
    }

    /// Frames covered by one pass.
    pub fn frames(&self) -> u64 {
        self.entries.iter().map(|e| e.count).sum()
    }
}

/// Writes `entries` in the text format, header first: run-length encoded as they come, or with
/// `expand` one line per frame.
pub fn write_text(
    w: &mut dyn std::io::Write,
    entries: impl Iterator<Item = Entry>,
    expand: bool,
) -> std::io::Result<()> {
    w.write_all(TEXT_HEADER.as_bytes())?;
    for e in entries {
        if expand {
            let line = format!(
                "{}\n",
                Entry {
                    outcome: e.outcome,
                    count: 1
                }
            );
            for _ in 0..e.count {
                w.write_all(line.as_bytes())?;
            }
        } else {
            writeln!(w, "{e}")?;
        }
    }
    Ok(())
}

/// Parses line `line` (1-based) of the text format, given without its line ending: the entry it
/// holds, or `None` for a blank or comment line. The one parser of the format ([`Trace::parse`]
/// and [`TraceParser`] both call it).
fn parse_line(raw: &str, line: usize) -> Result<Option<Entry>, TraceError> {
    let Some((spec, count)) = line_body(raw, line)? else {
        return Ok(None);
    };
    let err = |what: String| TraceError { line, what };
    let mut words = spec.split_whitespace();
    let kind = words.next().unwrap_or("");
    let num = |w: &str, what: &str| -> Result<u64, TraceError> {
        w.parse::<u64>()
            .map_err(|_| err(format!("{what} {w:?} is not a non-negative integer")))
    };
    let outcome = match kind {
        "ok" => Outcome::Delivered,
        "loss" => Outcome::Lost,
        "trunc" => {
            let at = words
                .next()
                .ok_or_else(|| err("`trunc` needs a byte count, e.g. `trunc 120`".into()))?;
            Outcome::Truncated {
                at: num(at, "truncation point")? as usize,
            }
        }
        "bits" => {
            let mut bits = Vec::new();
            for w in words.by_ref() {
                for part in w.split(',').filter(|p| !p.is_empty()) {
                    let b = num(part, "bit position")?;
                    bits.push(
                        u32::try_from(b)
                            .map_err(|_| err(format!("bit position {b} is too large")))?,
                    );
                }
            }
            if bits.is_empty() {
                return Err(err(
                    "`bits` needs at least one bit position, e.g. `bits 17 903`".into(),
                ));
            }
            bits.sort_unstable();
            bits.dedup();
            Outcome::Corrupted { bits }
        }
        other => {
            return Err(err(format!(
                "unknown entry {other:?}; expected ok, loss, trunc N or bits P ..."
            )))
        }
    };
    if let Some(extra) = words.next() {
        return Err(err(format!("unexpected {extra:?} after the entry")));
    }
    Ok(Some(Entry { outcome, count }))
}

/// The entry of line `line` (1-based) of a line-oriented trace text, comment and surrounding
/// blanks removed, and its `* COUNT` repeat (1 without one); `None` for a blank or comment
/// line. Shared by the per-frame format and the period format (`crate::fading`).
pub(crate) fn line_body(raw: &str, line: usize) -> Result<Option<(&str, u64)>, TraceError> {
    let body = raw.split('#').next().unwrap_or("").trim();
    if body.is_empty() {
        return Ok(None);
    }
    let err = |what: String| TraceError { line, what };
    Ok(Some(match body.split_once('*') {
        Some((s, c)) => {
            let c = c.trim();
            let n: u64 = c
                .parse()
                .map_err(|_| err(format!("repeat count {c:?} is not a positive integer")))?;
            if n == 0 {
                return Err(err("repeat count must be at least 1".into()));
            }
            (s.trim(), n)
        }
        None => (body, 1),
    }))
}

/// Replays a trace frame by frame, starting over at the end.
#[derive(Clone, Debug)]
pub struct Replay {
    trace: Arc<PackedTrace>,
    /// The entry in use (`None` for an empty trace) and the byte offset of the next one.
    current: Option<Entry>,
    next: usize,
    /// Frames of `current` already replayed.
    used: u64,
}

impl Replay {
    /// Replays `trace`; an empty trace delivers every frame.
    pub fn new(trace: Trace) -> Self {
        Self::packed(Arc::new(PackedTrace::from(&trace)))
    }

    /// Replays a packed trace, which any number of replays may share.
    pub fn packed(trace: Arc<PackedTrace>) -> Self {
        let (current, next) = match trace.entry_at(0) {
            Some((e, next)) => (Some(e), next),
            None => (None, 0),
        };
        Replay {
            trace,
            current,
            next,
            used: 0,
        }
    }
}

impl ErrorModel for Replay {
    fn outcome(&mut self, _now: Instant, len: usize, _rng: &mut dyn RngCore) -> Outcome {
        let Some(e) = &self.current else {
            return Outcome::Delivered;
        };
        let out = e.outcome.clipped_to(len);
        self.used += 1;
        if self.used >= e.count {
            self.used = 0;
            if self.next >= self.trace.byte_len() {
                self.next = 0;
            }
            let (e, next) = self
                .trace
                .entry_at(self.next)
                .expect("a packed trace holds whole entries");
            self.current = Some(e);
            self.next = next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;

    #[test]
    fn parses_the_documented_example() {
        let t =
            Trace::parse("# c\nok\nloss\ntrunc 120\nbits 17 903,904\n\nok * 400 # tail\n").unwrap();
        assert_eq!(t.frames(), 404);
        assert_eq!(
            t.entries[3].outcome,
            Outcome::Corrupted {
                bits: vec![17, 903, 904]
            }
        );
        assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
    }

    #[test]
    fn errors_name_the_line() {
        let e = Trace::parse("ok\nloss\ntrunk 5\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string().starts_with("line 3: unknown entry \"trunk\""),
            "{e}"
        );
        assert!(Trace::parse("trunc\n")
            .unwrap_err()
            .to_string()
            .contains("needs a byte count"));
        assert!(Trace::parse("ok * 0").is_err());
        assert!(Trace::parse("bits x").is_err());
        assert!(Trace::parse("loss 3")
            .unwrap_err()
            .to_string()
            .contains("unexpected"));
    }

    #[test]
    fn replay_cycles_and_clips_to_the_frame() {
        let mut r = Replay::new(Trace::parse("loss\nbits 5 900\ntrunc 50\nok * 2").unwrap());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let got: Vec<Outcome> = (0..6)
            .map(|_| r.outcome(Instant::ZERO, 40, &mut rng))
            .collect();
        assert_eq!(
            got,
            vec![
                Outcome::Lost,
                Outcome::Corrupted { bits: vec![5] },
                Outcome::Delivered,
                Outcome::Delivered,
                Outcome::Delivered,
                Outcome::Lost
            ]
        );
    }

    proptest! {
        /// Replay of the packed trace gives, frame by frame, the entries written out one frame
        /// per line, cycling.
        #[test]
        fn replay_follows_the_entries(entries in proptest::collection::vec((0u8..4, 1u64..5, 0usize..60, proptest::collection::btree_set(0u32..600, 1..4)), 1..12), len in 1usize..80, frames in 1usize..100) {
            let t = Trace { entries: entries.into_iter().map(|(k, count, at, bits)| Entry {
                outcome: match k { 0 => Outcome::Delivered, 1 => Outcome::Lost, 2 => Outcome::Truncated { at }, _ => Outcome::Corrupted { bits: bits.into_iter().collect() } },
                count,
            }).collect() };
            let one_per_frame: Vec<&Outcome> = t.entries.iter().flat_map(|e| std::iter::repeat_n(&e.outcome, e.count as usize)).collect();
            let mut r = Replay::new(t.clone());
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
            for i in 0..frames {
                prop_assert_eq!(r.outcome(Instant::ZERO, len, &mut rng), one_per_frame[i % one_per_frame.len()].clipped_to(len), "frame {}", i);
            }
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,200}") {
            let _ = Trace::parse(&text);
        }

        #[test]
        fn text_round_trip(entries in proptest::collection::vec((0u8..4, 1u64..50, 0usize..2000, proptest::collection::btree_set(0u32..16000, 1..5)), 0..20)) {
            let t = Trace { entries: entries.into_iter().map(|(k, count, at, bits)| Entry {
                outcome: match k { 0 => Outcome::Delivered, 1 => Outcome::Lost, 2 => Outcome::Truncated { at }, _ => Outcome::Corrupted { bits: bits.into_iter().collect() } },
                count,
            }).collect() };
            prop_assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
        }
    }
}
