//! The service header: what a recovery service puts in front of each frame it sends.
//!
//! Contract: the layout is fixed by a [`HeaderFormat`] both ends of a link agree on (from the
//! link configuration, like a negotiated PPP option). A data frame costs exactly the bytes 004
//! §III.A counts for its scheme: `width` bytes of sequence (Karn/OOS RLP, XOR FEC: 1 byte in
//! 8-bit mode) plus `width` bytes of piggybacked acknowledgement for Go-Back-N and Selective
//! Repeat (2 bytes in 8-bit mode). The top bit of the first byte tells data (0) from control (1);
//! on a link that segments packets the next two bits give the fragment position, so the
//! sequence number gets what is left (8-bit mode: 7 bits, or 5 with segmentation).
//!
//! ```text
//! data:     | C=0 | FP (2, if segmented) | seq (rest of `width` bytes) | [ack: width bytes] | payload
//! control:  | C=1 | kind (3) | reserved (4) | kind fields ...
//!   ack       (1): ack
//!   nack      (2): ack, first missing, 32-bit bitmap of further missing (bit i: first+1+i)
//!   keepalive (3): next (next sequence the sender will use), base (oldest it still holds)
//!   parity    (4): first (sequence of the block's first data frame), count (u8), parity bytes
//!   unknown kinds are parsed as `Unknown` and their bytes kept, never rejected (DESIGN rule 5)
//! ```
//! All fields are big-endian. Parsing never panics: short buffers give [`HeaderError`].

use super::seq::SeqSpace;

/// Byte width of sequence and acknowledgement fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SeqWidth {
    /// One byte (004's HSCSD and WLAN framing).
    #[default]
    #[serde(rename = "8")]
    W8,
    /// Two bytes.
    #[serde(rename = "16")]
    W16,
    /// Four bytes (fast real links with large windows).
    #[serde(rename = "32")]
    W32,
}

impl SeqWidth {
    /// Field width in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            SeqWidth::W8 => 1,
            SeqWidth::W16 => 2,
            SeqWidth::W32 => 4,
        }
    }
    /// The width for a number of bits (8, 16 or 32).
    pub fn from_bits(bits: u32) -> Option<Self> {
        match bits {
            8 => Some(SeqWidth::W8),
            16 => Some(SeqWidth::W16),
            32 => Some(SeqWidth::W32),
            _ => None,
        }
    }
}

/// Where a frame's payload sits in the packet it came from (link-level segmentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragPos {
    /// The whole packet.
    Whole = 0,
    /// The first of several fragments.
    First = 1,
    /// Neither first nor last.
    Middle = 2,
    /// The last of several fragments.
    Last = 3,
}

impl FragPos {
    fn from_bits(b: u8) -> FragPos {
        match b & 3 {
            0 => FragPos::Whole,
            1 => FragPos::First,
            2 => FragPos::Middle,
            _ => FragPos::Last,
        }
    }
    /// True for `Whole` and `First`: this fragment opens a packet.
    pub const fn starts(self) -> bool {
        matches!(self, FragPos::Whole | FragPos::First)
    }
    /// True for `Whole` and `Last`: this fragment closes a packet.
    pub const fn ends(self) -> bool {
        matches!(self, FragPos::Whole | FragPos::Last)
    }
}

/// The header layout both ends of a service agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderFormat {
    /// Width of sequence and acknowledgement fields.
    pub width: SeqWidth,
    /// Whether data frames carry a fragment position (the link segments packets).
    pub segmented: bool,
    /// Whether data frames carry a piggybacked cumulative acknowledgement (GBN, SR).
    pub piggyback_ack: bool,
}

/// Control frame kinds (3 bits on the wire).
pub mod kind {
    /// Cumulative acknowledgement.
    pub const ACK: u8 = 1;
    /// Negative acknowledgement of one or more frames.
    pub const NACK: u8 = 2;
    /// Sender state while idle (Karn's RLP keepalive).
    pub const KEEPALIVE: u8 = 3;
    /// XOR parity over a block of data frames.
    pub const PARITY: u8 = 4;
}

/// Why a service header could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The frame is shorter than its header.
    #[error("frame of {len} bytes is shorter than its {need}-byte header")]
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes the header needs.
        need: usize,
    },
    /// The frame is empty but the format has a header.
    #[error("empty frame")]
    Empty,
}

/// A parsed service header (the `Repr` of DESIGN rule 5). Sequence fields hold wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A data frame.
    Data {
        /// Fragment position (`Whole` when the format does not segment).
        fp: FragPos,
        /// Sequence number (wire value).
        seq: u32,
        /// Piggybacked cumulative acknowledgement, when the format has one.
        ack: Option<u32>,
    },
    /// Cumulative acknowledgement: every frame before `ack` arrived.
    Ack {
        /// Next expected sequence number.
        ack: u32,
    },
    /// Negative acknowledgement: `first` (and each frame flagged in `more`) is missing.
    Nack {
        /// Next expected sequence number (cumulative acknowledgement).
        ack: u32,
        /// First missing sequence number.
        first: u32,
        /// Bit `i` set: `first + 1 + i` is missing too.
        more: u32,
    },
    /// Keepalive: the sender's next sequence number and the oldest frame it can still resend.
    Keepalive {
        /// Next sequence number the sender will use.
        next: u32,
        /// Oldest sequence number the sender still holds; the receiver stops waiting below it.
        base: u32,
    },
    /// XOR parity over `count` data frames starting at `first`.
    Parity {
        /// Sequence number of the block's first data frame.
        first: u32,
        /// Number of data frames covered.
        count: u8,
    },
    /// A control kind this version does not know; kept so a newer peer is counted, not refused.
    Unknown {
        /// The kind code.
        kind: u8,
    },
}

impl HeaderFormat {
    /// A format with the given width, no segmentation, no piggybacked ack.
    pub const fn new(width: SeqWidth) -> Self {
        HeaderFormat {
            width,
            segmented: false,
            piggyback_ack: false,
        }
    }
    /// Bits of the first data field taken by flags (C, and FP when segmented).
    const fn flag_bits(&self) -> u32 {
        if self.segmented {
            3
        } else {
            1
        }
    }
    /// The sequence space of this format.
    pub const fn seq_space(&self) -> SeqSpace {
        SeqSpace::new(self.width.bytes() as u32 * 8 - self.flag_bits())
    }
    /// Header bytes of a data frame: the per-frame overhead of the scheme.
    pub const fn data_header_len(&self) -> usize {
        let w = self.width.bytes();
        if self.piggyback_ack {
            2 * w
        } else {
            w
        }
    }
    /// Header bytes of `h` in this format.
    pub fn header_len(&self, h: &Header) -> usize {
        let w = self.width.bytes();
        match h {
            Header::Data { .. } => self.data_header_len(),
            Header::Ack { .. } => 1 + w,
            Header::Nack { .. } => 1 + 2 * w + 4,
            Header::Keepalive { .. } => 1 + 2 * w,
            Header::Parity { .. } => 1 + w + 1,
            Header::Unknown { .. } => 1,
        }
    }

    /// Parses the header at the start of `frame`; returns it and the payload offset.
    pub fn parse(&self, frame: &[u8]) -> Result<(Header, usize), HeaderError> {
        let first = *frame.first().ok_or(HeaderError::Empty)?;
        let w = self.width.bytes();
        let need = |n: usize| {
            if frame.len() < n {
                Err(HeaderError::Truncated {
                    len: frame.len(),
                    need: n,
                })
            } else {
                Ok(())
            }
        };
        if first & 0x80 == 0 {
            let n = self.data_header_len();
            need(n)?;
            let raw = read_be(&frame[..w]);
            let total_bits = w as u32 * 8;
            let fp = if self.segmented {
                FragPos::from_bits((raw >> (total_bits - 3)) as u8)
            } else {
                FragPos::Whole
            };
            let seq = raw & mask(total_bits - self.flag_bits());
            let ack = if self.piggyback_ack {
                Some(read_be(&frame[w..2 * w]) & mask(self.seq_space().bits()))
            } else {
                None
            };
            return Ok((Header::Data { fp, seq, ack }, n));
        }
        let k = (first >> 4) & 7;
        let sbits = self.seq_space().bits();
        let field = |i: usize| read_be(&frame[1 + i * w..1 + (i + 1) * w]) & mask(sbits);
        let h = match k {
            kind::ACK => {
                need(1 + w)?;
                Header::Ack { ack: field(0) }
            }
            kind::NACK => {
                need(1 + 2 * w + 4)?;
                let o = 1 + 2 * w;
                Header::Nack {
                    ack: field(0),
                    first: field(1),
                    more: read_be(&frame[o..o + 4]),
                }
            }
            kind::KEEPALIVE => {
                need(1 + 2 * w)?;
                Header::Keepalive {
                    next: field(0),
                    base: field(1),
                }
            }
            kind::PARITY => {
                need(1 + w + 1)?;
                Header::Parity {
                    first: field(0),
                    count: frame[1 + w],
                }
            }
            other => Header::Unknown { kind: other },
        };
        let len = self.header_len(&h);
        Ok((h, len))
    }

    /// Writes `h` at the start of `buf` and returns its length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`HeaderFormat::header_len`]: callers size buffers from it.
    pub fn emit(&self, h: &Header, buf: &mut [u8]) -> usize {
        let w = self.width.bytes();
        let sbits = self.seq_space().bits();
        let len = self.header_len(h);
        assert!(buf.len() >= len, "header buffer too short");
        match *h {
            Header::Data { fp, seq, ack } => {
                let total_bits = w as u32 * 8;
                let mut raw = seq & mask(sbits);
                if self.segmented {
                    raw |= (fp as u32) << (total_bits - 3);
                }
                write_be(&mut buf[..w], raw);
                if self.piggyback_ack {
                    write_be(&mut buf[w..2 * w], ack.unwrap_or(0) & mask(sbits));
                }
            }
            Header::Ack { ack } => {
                buf[0] = 0x80 | kind::ACK << 4;
                write_be(&mut buf[1..1 + w], ack & mask(sbits));
            }
            Header::Nack { ack, first, more } => {
                buf[0] = 0x80 | kind::NACK << 4;
                write_be(&mut buf[1..1 + w], ack & mask(sbits));
                write_be(&mut buf[1 + w..1 + 2 * w], first & mask(sbits));
                buf[1 + 2 * w..1 + 2 * w + 4].copy_from_slice(&more.to_be_bytes());
            }
            Header::Keepalive { next, base } => {
                buf[0] = 0x80 | kind::KEEPALIVE << 4;
                write_be(&mut buf[1..1 + w], next & mask(sbits));
                write_be(&mut buf[1 + w..1 + 2 * w], base & mask(sbits));
            }
            Header::Parity { first, count } => {
                buf[0] = 0x80 | kind::PARITY << 4;
                write_be(&mut buf[1..1 + w], first & mask(sbits));
                buf[1 + w] = count;
            }
            Header::Unknown { kind } => buf[0] = 0x80 | (kind & 7) << 4,
        }
        len
    }
}

const fn mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

fn read_be(b: &[u8]) -> u32 {
    b.iter().fold(0u32, |acc, &x| acc << 8 | x as u32)
}

fn write_be(b: &mut [u8], v: u32) {
    let n = b.len();
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = (v >> (8 * (n - 1 - i))) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fmt(width: SeqWidth, segmented: bool, piggyback_ack: bool) -> HeaderFormat {
        HeaderFormat {
            width,
            segmented,
            piggyback_ack,
        }
    }

    #[test]
    fn overhead_matches_004() {
        // 004 §III.A: Karn/OOS RLP and XOR FEC 1 byte, GBN/SR 2 bytes (sequence + ack).
        assert_eq!(fmt(SeqWidth::W8, false, false).data_header_len(), 1);
        assert_eq!(fmt(SeqWidth::W8, false, true).data_header_len(), 2);
        assert_eq!(fmt(SeqWidth::W8, false, false).seq_space().modulus(), 128);
        assert_eq!(fmt(SeqWidth::W8, true, false).seq_space().modulus(), 32);
        assert_eq!(fmt(SeqWidth::W32, false, true).data_header_len(), 8);
    }

    #[test]
    fn fixtures() {
        let f = fmt(SeqWidth::W8, true, true);
        let mut b = [0u8; 16];
        let n = f.emit(
            &Header::Data {
                fp: FragPos::Last,
                seq: 5,
                ack: Some(9),
            },
            &mut b,
        );
        assert_eq!(&b[..n], &[0b0110_0101, 9]);
        let n = f.emit(
            &Header::Nack {
                ack: 3,
                first: 4,
                more: 0b101,
            },
            &mut b,
        );
        assert_eq!(&b[..n], &[0xA0, 3, 4, 0, 0, 0, 5]);
        let f16 = fmt(SeqWidth::W16, false, false);
        let n = f16.emit(
            &Header::Keepalive {
                next: 0x1234,
                base: 0x0102,
            },
            &mut b,
        );
        assert_eq!(&b[..n], &[0xB0, 0x12, 0x34, 0x01, 0x02]);
        assert_eq!(
            f16.parse(&[0xF0, 1, 2, 3]).unwrap(),
            (Header::Unknown { kind: 7 }, 1)
        );
        assert_eq!(
            f16.parse(&[0x90, 1]),
            Err(HeaderError::Truncated { len: 2, need: 3 })
        );
        assert_eq!(f16.parse(&[]), Err(HeaderError::Empty));
    }

    fn arb_format() -> impl Strategy<Value = HeaderFormat> {
        (
            prop_oneof![Just(SeqWidth::W8), Just(SeqWidth::W16), Just(SeqWidth::W32)],
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(w, s, p)| fmt(w, s, p))
    }

    fn arb_header(f: HeaderFormat) -> impl Strategy<Value = Header> {
        let m = (f.seq_space().modulus() - 1) as u32;
        let fp = if f.segmented {
            prop_oneof![
                Just(FragPos::Whole),
                Just(FragPos::First),
                Just(FragPos::Middle),
                Just(FragPos::Last)
            ]
            .boxed()
        } else {
            Just(FragPos::Whole).boxed()
        };
        let pig = f.piggyback_ack;
        prop_oneof![
            (fp, 0..=m, 0..=m).prop_map(move |(fp, seq, a)| Header::Data {
                fp,
                seq,
                ack: pig.then_some(a)
            }),
            (0..=m).prop_map(|ack| Header::Ack { ack }),
            (0..=m, 0..=m, any::<u32>()).prop_map(|(ack, first, more)| Header::Nack {
                ack,
                first,
                more
            }),
            (0..=m, 0..=m).prop_map(|(next, base)| Header::Keepalive { next, base }),
            (0..=m, any::<u8>()).prop_map(|(first, count)| Header::Parity { first, count }),
            (5u8..8).prop_map(|kind| Header::Unknown { kind }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip((f, h) in arb_format().prop_flat_map(|f| (Just(f), arb_header(f)))) {
            let mut b = vec![0u8; f.header_len(&h) + 3];
            let n = f.emit(&h, &mut b);
            prop_assert_eq!(f.parse(&b).unwrap(), (h, n));
        }

        #[test]
        fn parse_never_panics(f in arb_format(), bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            if let Ok((h, n)) = f.parse(&bytes) {
                prop_assert!(n <= bytes.len());
                prop_assert_eq!(n, f.header_len(&h));
            }
        }
    }
}
