//! Error traces packed for replay: a trace's entries in a few bytes each.
//!
//! Contract. [`PackedTrace`] holds the entries of a trace as one byte string, consecutive
//! entries with the same outcome merged into one. Each entry is a tag byte (the outcome's kind
//! in the low two bits; the repeat count in the upper six when it is 1 to 63, else 0 and the
//! count follows as a LEB128 varint), then for `trunc` the truncation point, for `bits` the
//! number of positions, the first position and the gaps between the sorted positions, all as
//! varints. No field takes more bytes than its text (a varint never has more bytes than its
//! number has decimal digits), so a packed trace is never larger than the text it came from: a
//! file of alternating `ok` and `loss` lines packs into a quarter of its size, runs of one
//! outcome into a few bytes (the `Vec<Entry>` of [`Trace`] took 32 bytes per line and more).
//!
//! [`TraceParser`] builds a packed trace line by line, so a driver streams a file of any size
//! through it without holding its text; its errors are those of [`Trace::parse`], line numbers
//! included, since both call the same line parser. [`PackedTrace::entries`] gives the entries
//! back in order; [`super::Replay`] walks them with a cursor.

use super::{parse_line, Entry, Trace, TraceError};
use crate::Outcome;

const KIND_OK: u8 = 0;
const KIND_LOSS: u8 = 1;
const KIND_TRUNC: u8 = 2;
const KIND_BITS: u8 = 3;
/// Largest repeat count kept in the tag byte's upper six bits.
const TAG_COUNT_MAX: u64 = 63;

/// A trace's entries, packed (see the module contract).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PackedTrace {
    bytes: Vec<u8>,
    entries: u64,
    frames: u64,
}

impl std::fmt::Debug for PackedTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedTrace")
            .field("entries", &self.entries)
            .field("frames", &self.frames)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl PackedTrace {
    /// True when the trace has no entry (replaying it would deliver every frame).
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries after merging consecutive entries with the same outcome.
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// Frames covered by one pass (saturating at `u64::MAX`).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes of memory the trace holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// The entries, in order.
    pub fn entries(&self) -> Entries<'_> {
        Entries {
            bytes: &self.bytes,
            at: 0,
        }
    }

    /// The entry at byte offset `at` and the offset of the next one (`None` at the end).
    pub(super) fn entry_at(&self, at: usize) -> Option<(Entry, usize)> {
        let mut r = Reader {
            bytes: &self.bytes,
            at,
        };
        let e = r.entry()?;
        Some((e, r.at))
    }

    /// Byte length of the packed entries (where [`PackedTrace::entry_at`] wraps).
    pub(super) fn byte_len(&self) -> usize {
        self.bytes.len()
    }
}

impl From<&Trace> for PackedTrace {
    fn from(t: &Trace) -> Self {
        let mut p = Packer::default();
        for e in &t.entries {
            p.push(e.clone());
        }
        p.finish()
    }
}

/// The entries of a [`PackedTrace`], in order.
pub struct Entries<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Iterator for Entries<'_> {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        let mut r = Reader {
            bytes: self.bytes,
            at: self.at,
        };
        let e = r.entry()?;
        self.at = r.at;
        Some(e)
    }
}

/// Builds a [`PackedTrace`] from the text format, one line at a time.
///
/// ```
/// use mslink_channel::trace::TraceParser;
/// let mut p = TraceParser::new();
/// for line in "# a trace\nok * 3\nloss\nok\n".lines() {
///     p.push_line(line).unwrap();
/// }
/// let t = p.finish();
/// assert_eq!((t.len(), t.frames()), (3, 5));
/// ```
#[derive(Default)]
pub struct TraceParser {
    packer: Packer,
    line: usize,
}

impl TraceParser {
    /// A parser at line 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the next line, given without its line ending (as `str::lines` or a `BufRead`
    /// line with `\n` or `\r\n` removed gives it); an error names its 1-based number.
    pub fn push_line(&mut self, raw: &str) -> Result<(), TraceError> {
        self.line += 1;
        if let Some(e) = parse_line(raw, self.line)? {
            self.packer.push(e);
        }
        Ok(())
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.line
    }

    /// The packed trace of every line pushed.
    pub fn finish(self) -> PackedTrace {
        self.packer.finish()
    }
}

/// Appends entries, merging each into the one before when their outcomes are equal.
#[derive(Default)]
struct Packer {
    out: PackedTrace,
    pending: Option<Entry>,
}

impl Packer {
    fn push(&mut self, e: Entry) {
        if let Some(p) = &mut self.pending {
            if p.outcome == e.outcome {
                if let Some(n) = p.count.checked_add(e.count) {
                    p.count = n;
                    return;
                }
            }
        }
        if let Some(p) = self.pending.replace(e) {
            self.write(&p);
        }
    }

    fn write(&mut self, e: &Entry) {
        let b = &mut self.out.bytes;
        let kind = match &e.outcome {
            Outcome::Delivered => KIND_OK,
            Outcome::Lost => KIND_LOSS,
            Outcome::Truncated { .. } => KIND_TRUNC,
            Outcome::Corrupted { .. } => KIND_BITS,
        };
        if (1..=TAG_COUNT_MAX).contains(&e.count) {
            b.push(kind | ((e.count as u8) << 2));
        } else {
            b.push(kind);
            varint(b, e.count);
        }
        match &e.outcome {
            Outcome::Truncated { at } => varint(b, *at as u64),
            Outcome::Corrupted { bits } => {
                varint(b, bits.len() as u64);
                let mut prev = 0;
                for (i, &p) in bits.iter().enumerate() {
                    // Sorted and distinct (the parser's and `Outcome`'s rule): gaps are positive.
                    varint(b, if i == 0 { p } else { p - prev } as u64);
                    prev = p;
                }
            }
            Outcome::Delivered | Outcome::Lost => {}
        }
        self.out.entries += 1;
        self.out.frames = self.out.frames.saturating_add(e.count);
    }

    fn finish(mut self) -> PackedTrace {
        if let Some(p) = self.pending.take() {
            self.write(&p);
        }
        self.out.bytes.shrink_to_fit();
        self.out
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads entries back; `None` at the end (or, which the packer never writes, a cut entry).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn entry(&mut self) -> Option<Entry> {
        let tag = self.byte()?;
        let count = match u64::from(tag >> 2) {
            0 => self.varint()?,
            n => n,
        };
        let outcome = match tag & 3 {
            KIND_OK => Outcome::Delivered,
            KIND_LOSS => Outcome::Lost,
            KIND_TRUNC => Outcome::Truncated {
                at: self.varint()? as usize,
            },
            _ => {
                let n = self.varint()? as usize;
                let mut bits = Vec::with_capacity(n.min(self.bytes.len() - self.at));
                let mut p = 0u32;
                for i in 0..n {
                    let d = u32::try_from(self.varint()?).ok()?;
                    p = if i == 0 { d } else { p.checked_add(d)? };
                    bits.push(p);
                }
                Outcome::Corrupted { bits }
            }
        };
        Some(Entry { outcome, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packed(text: &str) -> PackedTrace {
        let mut p = TraceParser::new();
        for l in text.lines() {
            p.push_line(l).unwrap();
        }
        p.finish()
    }

    #[test]
    fn merges_runs_and_keeps_every_outcome() {
        let t =
            packed("ok\nok * 2\nloss\nloss\ntrunc 7\ntrunc 7\ntrunc 8\nbits 1 300 70000\nok * 100");
        let got: Vec<Entry> = t.entries().collect();
        let e = |outcome, count| Entry { outcome, count };
        assert_eq!(
            got,
            vec![
                e(Outcome::Delivered, 3),
                e(Outcome::Lost, 2),
                e(Outcome::Truncated { at: 7 }, 2),
                e(Outcome::Truncated { at: 8 }, 1),
                e(
                    Outcome::Corrupted {
                        bits: vec![1, 300, 70000]
                    },
                    1
                ),
                e(Outcome::Delivered, 100),
            ]
        );
        assert_eq!((t.len(), t.frames()), (6, 109));
    }

    #[test]
    fn counts_that_would_overflow_are_not_merged() {
        let max = u64::MAX;
        let t = packed(&format!("ok * {max}\nok * 5"));
        assert_eq!(t.len(), 2);
        assert_eq!(t.frames(), u64::MAX);
        assert_eq!(t.entries().map(|e| e.count).collect::<Vec<_>>(), [max, 5]);
    }

    #[test]
    fn errors_are_the_text_parsers() {
        let mut p = TraceParser::new();
        p.push_line("ok").unwrap();
        p.push_line("").unwrap();
        let e = p.push_line("trunk 5").unwrap_err();
        assert_eq!(e, Trace::parse("ok\n\ntrunk 5").unwrap_err());
        assert_eq!(e.line, 3);
    }

    proptest! {
        /// Packing keeps the frame sequence and never takes more bytes than the text.
        #[test]
        fn same_frames_and_no_larger_than_the_text(entries in proptest::collection::vec((0u8..4, 1u64..200, 0usize..100_000, proptest::collection::btree_set(0u32..u32::MAX, 1..6)), 0..40)) {
            let t = Trace { entries: entries.into_iter().map(|(k, count, at, bits)| Entry {
                outcome: match k { 0 => Outcome::Delivered, 1 => Outcome::Lost, 2 => Outcome::Truncated { at }, _ => Outcome::Corrupted { bits: bits.into_iter().collect() } },
                count,
            }).collect() };
            let text = t.to_text();
            let p = packed(&text);
            prop_assert_eq!(&p, &PackedTrace::from(&t));
            prop_assert!(p.byte_len() <= text.len(), "{} packed bytes from {} of text", p.byte_len(), text.len());
            let expand = |it: &mut dyn Iterator<Item = Entry>| -> Vec<(Outcome, u64)> {
                let mut v: Vec<(Outcome, u64)> = Vec::new();
                for e in it {
                    match v.last_mut() {
                        Some((o, n)) if *o == e.outcome => *n += e.count,
                        _ => v.push((e.outcome, e.count)),
                    }
                }
                v
            };
            prop_assert_eq!(expand(&mut p.entries()), expand(&mut t.entries.into_iter()));
        }
    }
}
