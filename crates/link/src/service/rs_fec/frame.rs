//! Wire format of the Reed-Solomon FEC service (003 §4): a protected header, then RS blocks.
//!
//! Contract. Every frame starts with a 12-byte *header codeword*: 6 information bytes and 6
//! parity bytes of the shortened code RS(12,6) (t = 3: any 3 corrupted header bytes are
//! repaired), so the fields that say how to read the rest survive the bit errors the blocks
//! are there to correct. What follows depends on the header's top bit:
//!
//! ```text
//! header info (6 bytes, then 6 RS parity bytes):
//!   data:   b0 = 0 | FP (2) | PP (2) | len[10:8] (3)    FP: the SDU's position in its packet
//!           b1 = len[7:0]                               PP: this piece's position in the SDU
//!           b2 = nsym   (parity symbols per block, 0 = uncoded)
//!           b3..4 = seq (16 bits, big-endian)
//!           b5 = blocks (must equal ceil((len + 4) / (255 - nsym)); a check on the header)
//!   report: b0 = 1 | outcome (2) | load (5)             outcome: 0 clean, 1 corrected,
//!           b1..2 = ack   (next sequence expected)               2 failed, 3 truncated
//!           b3..4 = about (sequence of the frame reported on)
//!           b5 = nsym that frame carried; load = ceil(31 * corrected / t), the worst block's
//!                corrected symbols as a fraction of what its code can correct
//!
//! data body:   data = payload (len bytes) || CRC-32(header info || payload), cut into blocks of
//!              k = 255 - nsym data bytes (the last one shorter), each followed by its nsym
//!              parity bytes: consecutive RS(255, k) codewords, the last one shortened.
//! report body: CRC-32(header info) followed by 6 parity bytes: one RS(10,4) codeword.
//! ```
//!
//! The CRC-32 (IEEE) covers the header information as well as the payload, so a header that
//! the RS(12,6) decoder miscorrected cannot pass as valid. The link's own CRC must be off for
//! this service: its point is to repair frames such a CRC would refuse. Parsing never panics;
//! a receiver tells a *truncated* frame (shorter than its header says) from a *failed* one
//! (a block beyond repair, or a CRC mismatch after repair), and the service reports both.

use crate::fec::RsCodec;
use crate::wire::FragPos;

/// Length of a Reed-Solomon block (codeword) in bytes (003 §4: "255-byte blocks").
pub const BLOCK_LEN: usize = 255;
/// Header information bytes.
pub const HEADER_INFO: usize = 6;
/// Parity bytes protecting the header.
pub const HEADER_NSYM: usize = 6;
/// The header codeword: `HEADER_INFO + HEADER_NSYM` bytes.
pub const HEADER_LEN: usize = HEADER_INFO + HEADER_NSYM;
/// CRC-32 bytes at the end of each frame's data.
pub const CRC_LEN: usize = 4;
/// Parity bytes protecting a report's CRC.
pub const REPORT_NSYM: usize = 6;
/// Total length of a report frame.
pub const REPORT_LEN: usize = HEADER_LEN + CRC_LEN + REPORT_NSYM;
/// The largest payload one frame can carry (11-bit length field).
pub const MAX_PAYLOAD: usize = 0x7ff;
/// The largest `load` value: a block that needed all `t` of its code's corrections.
pub const LOAD_MAX: u8 = 31;

/// What the receiver made of a data frame (carried back in reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every block was already a codeword and the CRC matched.
    Clean = 0,
    /// Some block needed correction; after it the CRC matched.
    Corrected = 1,
    /// A block was beyond repair, or the CRC failed after repair.
    Failed = 2,
    /// The frame was shorter than its header says.
    Truncated = 3,
}

impl Outcome {
    fn from_bits(b: u8) -> Outcome {
        match b & 3 {
            0 => Outcome::Clean,
            1 => Outcome::Corrected,
            2 => Outcome::Failed,
            _ => Outcome::Truncated,
        }
    }
    /// True if the frame's payload was accepted.
    pub const fn received(self) -> bool {
        matches!(self, Outcome::Clean | Outcome::Corrected)
    }
}

/// The header of a data frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// The SDU's fragment position in its packet (link-level segmentation).
    pub fp: FragPos,
    /// This piece's position within the SDU (the service's own splitting, 003 §4 shrinking).
    pub piece: FragPos,
    /// Payload bytes (at most [`MAX_PAYLOAD`]).
    pub len: u16,
    /// Parity symbols per block (0: uncoded).
    pub nsym: u8,
    /// Sequence number (low 16 bits).
    pub seq: u16,
}

/// A receiver's report on one data frame, with its cumulative acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// What became of the frame.
    pub outcome: Outcome,
    /// Worst block's corrected symbols as a fraction of `t`, scaled to `0..=31`.
    pub load: u8,
    /// Next sequence number the receiver expects (low 16 bits).
    pub ack: u16,
    /// The frame reported on (low 16 bits).
    pub about: u16,
    /// Parity symbols per block that frame carried.
    pub nsym: u8,
}

/// A parsed frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A data frame; the body follows.
    Data(DataHeader),
    /// A report (control) frame.
    Report(Report),
}

/// Why a frame could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The header codeword is beyond repair or the frame is shorter than a header.
    #[error("frame header unreadable")]
    Header,
    /// Header fields are inconsistent (block count, length, parity).
    #[error("frame header inconsistent")]
    Inconsistent,
    /// The frame is shorter than its header says.
    #[error("frame truncated")]
    Truncated,
    /// A block was beyond repair, or the CRC failed after repair.
    #[error("frame body failed to decode")]
    Failed,
}

/// Number of blocks for `data_len` bytes of data (payload + CRC) at `nsym` parity each.
pub const fn blocks_for(data_len: usize, nsym: usize) -> usize {
    data_len.div_ceil(BLOCK_LEN - nsym)
}

/// Bytes of a data frame carrying `len` payload bytes at `nsym` parity per block.
pub const fn data_frame_len(len: usize, nsym: usize) -> usize {
    let data = len + CRC_LEN;
    HEADER_LEN + data + blocks_for(data, nsym) * nsym
}

/// The largest payload a frame of `blocks` full blocks at `nsym` parity can carry.
pub const fn capacity(blocks: usize, nsym: usize) -> usize {
    let c = blocks * (BLOCK_LEN - nsym) - CRC_LEN;
    if c > MAX_PAYLOAD {
        MAX_PAYLOAD
    } else {
        c
    }
}

/// Reed-Solomon codecs by parity count, built on first use (tables cost memory).
#[derive(Debug)]
pub struct Codecs {
    by_nsym: Vec<Option<Box<RsCodec>>>,
}

impl Default for Codecs {
    fn default() -> Self {
        Codecs {
            by_nsym: (0..=crate::fec::rs::MAX_NSYM).map(|_| None).collect(),
        }
    }
}

impl Codecs {
    /// The codec for `nsym` (1..=254) parity symbols.
    pub fn get(&mut self, nsym: usize) -> &RsCodec {
        self.by_nsym[nsym].get_or_insert_with(|| {
            Box::new(RsCodec::new(nsym).expect("parity counts come from validated headers"))
        })
    }
}

fn frag_bits(fp: FragPos) -> u8 {
    fp as u8
}

fn frag_from(b: u8) -> FragPos {
    match b & 3 {
        0 => FragPos::Whole,
        1 => FragPos::First,
        2 => FragPos::Middle,
        _ => FragPos::Last,
    }
}

fn header_info(h: &Header) -> [u8; HEADER_INFO] {
    match *h {
        Header::Data(d) => [
            frag_bits(d.fp) << 5 | frag_bits(d.piece) << 3 | ((d.len >> 8) as u8 & 7),
            d.len as u8,
            d.nsym,
            (d.seq >> 8) as u8,
            d.seq as u8,
            blocks_for(d.len as usize + CRC_LEN, d.nsym as usize) as u8,
        ],
        Header::Report(r) => [
            0x80 | (r.outcome as u8) << 5 | r.load.min(LOAD_MAX),
            (r.ack >> 8) as u8,
            r.ack as u8,
            (r.about >> 8) as u8,
            r.about as u8,
            r.nsym,
        ],
    }
}

/// Appends the protected header for `h` to `out`; returns its information bytes.
fn emit_header(codecs: &mut Codecs, h: &Header, out: &mut Vec<u8>) -> [u8; HEADER_INFO] {
    let info = header_info(h);
    let start = out.len();
    out.extend_from_slice(&info);
    out.resize(start + HEADER_LEN, 0);
    codecs
        .get(HEADER_NSYM)
        .encode_in_place(&mut out[start..])
        .expect("header codeword length is fixed");
    info
}

/// Appends `data` as consecutive RS blocks of `nsym` parity each (raw chunks when 0).
fn emit_blocks(codecs: &mut Codecs, nsym: usize, data: &[u8], out: &mut Vec<u8>) {
    if nsym == 0 {
        out.extend_from_slice(data);
        return;
    }
    let start = out.len();
    for chunk in data.chunks(BLOCK_LEN - nsym) {
        out.extend_from_slice(chunk);
        out.resize(out.len() + nsym, 0);
    }
    codecs
        .get(nsym)
        .encode_blocks(&mut out[start..], BLOCK_LEN)
        .expect("every block holds 1..=255 - nsym data bytes");
}

/// Appends a data frame to `out`: header, then `payload` and its CRC in blocks.
///
/// # Panics
/// If `payload` exceeds [`MAX_PAYLOAD`] or `h.len` differs from it (callers size pieces).
pub fn emit_data(codecs: &mut Codecs, h: &DataHeader, payload: &[u8], out: &mut Vec<u8>) {
    assert!(payload.len() <= MAX_PAYLOAD && h.len as usize == payload.len());
    let info = emit_header(codecs, &Header::Data(*h), out);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&info);
    crc.update(payload);
    let crc = crc.finalize().to_be_bytes();
    let nsym = h.nsym as usize;
    if nsym == 0 {
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc);
        return;
    }
    // Blocks are cut over payload || crc without building that buffer: the CRC joins the
    // last block. The data goes in first, a gap of nsym bytes after each block's, then the
    // frame's blocks are encoded together (in fours and twos: faster on AVX2-only CPUs).
    let k = BLOCK_LEN - nsym;
    let total = payload.len() + CRC_LEN;
    let start = out.len();
    let mut off = 0;
    while off < total {
        let end = (off + k).min(total);
        for i in off..end {
            out.push(if i < payload.len() {
                payload[i]
            } else {
                crc[i - payload.len()]
            });
        }
        out.resize(out.len() + nsym, 0);
        off = end;
    }
    codecs
        .get(nsym)
        .encode_blocks(&mut out[start..], BLOCK_LEN)
        .expect("every block holds 1..=255 - nsym data bytes");
}

/// Appends a report frame to `out`.
pub fn emit_report(codecs: &mut Codecs, r: &Report, out: &mut Vec<u8>) {
    let info = emit_header(codecs, &Header::Report(*r), out);
    let crc = crc32fast::hash(&info).to_be_bytes();
    emit_blocks(codecs, REPORT_NSYM, &crc, out);
}

/// Decodes the header codeword at the start of `frame`.
pub fn parse_header(
    codecs: &mut Codecs,
    frame: &[u8],
) -> Result<(Header, [u8; HEADER_INFO]), FrameError> {
    if frame.len() < HEADER_LEN {
        return Err(FrameError::Header);
    }
    let mut hdr = [0u8; HEADER_LEN];
    hdr.copy_from_slice(&frame[..HEADER_LEN]);
    codecs
        .get(HEADER_NSYM)
        .decode(&mut hdr)
        .map_err(|_| FrameError::Header)?;
    let mut info = [0u8; HEADER_INFO];
    info.copy_from_slice(&hdr[..HEADER_INFO]);
    let h = if info[0] & 0x80 == 0 {
        let d = DataHeader {
            fp: frag_from(info[0] >> 5),
            piece: frag_from(info[0] >> 3),
            len: ((info[0] as u16 & 7) << 8) | info[1] as u16,
            nsym: info[2],
            seq: u16::from_be_bytes([info[3], info[4]]),
        };
        if d.nsym as usize > crate::fec::rs::MAX_NSYM
            || blocks_for(d.len as usize + CRC_LEN, d.nsym as usize) != info[5] as usize
        {
            return Err(FrameError::Inconsistent);
        }
        Header::Data(d)
    } else {
        Header::Report(Report {
            outcome: Outcome::from_bits(info[0] >> 5),
            load: info[0] & 0x1f,
            ack: u16::from_be_bytes([info[1], info[2]]),
            about: u16::from_be_bytes([info[3], info[4]]),
            nsym: info[5],
        })
    };
    Ok((h, info))
}

/// What decoding a data frame's body found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyStats {
    /// Blocks that needed correction.
    pub blocks_corrected: u32,
    /// Symbols corrected over all blocks.
    pub symbols_corrected: u32,
    /// Most symbols corrected in one block.
    pub worst_block: u32,
}

/// Decodes the body of a data frame (everything after the header) into `payload`.
///
/// On success `payload` holds exactly `h.len` bytes. `scratch` is a reusable work buffer.
pub fn decode_data(
    codecs: &mut Codecs,
    h: &DataHeader,
    info: &[u8; HEADER_INFO],
    body: &[u8],
    scratch: &mut Vec<u8>,
    payload: &mut Vec<u8>,
) -> Result<BodyStats, (FrameError, BodyStats)> {
    let nsym = h.nsym as usize;
    let data_len = h.len as usize + CRC_LEN;
    let want = data_len + blocks_for(data_len, nsym) * nsym;
    let mut st = BodyStats::default();
    if body.len() < want {
        return Err((FrameError::Truncated, st));
    }
    if body.len() > want {
        return Err((FrameError::Inconsistent, st));
    }
    payload.clear();
    if nsym == 0 {
        payload.extend_from_slice(body);
    } else {
        scratch.clear();
        scratch.extend_from_slice(body);
        let decoded = codecs.get(nsym).decode_blocks(scratch, BLOCK_LEN, |n| {
            if n > 0 {
                st.blocks_corrected += 1;
                st.symbols_corrected += n as u32;
                st.worst_block = st.worst_block.max(n as u32);
            }
        });
        if decoded.is_err() {
            return Err((FrameError::Failed, st));
        }
        for block in scratch.chunks(BLOCK_LEN) {
            payload.extend_from_slice(&block[..block.len() - nsym]);
        }
    }
    debug_assert_eq!(payload.len(), data_len);
    let (data, crc) = payload.split_at(h.len as usize);
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(info);
    hasher.update(data);
    if hasher.finalize().to_be_bytes() != crc {
        return Err((FrameError::Failed, st));
    }
    payload.truncate(h.len as usize);
    Ok(st)
}

/// Checks a report frame's body (its CRC codeword). Returns false if it is unusable.
pub fn check_report(codecs: &mut Codecs, info: &[u8; HEADER_INFO], body: &[u8]) -> bool {
    if body.len() != CRC_LEN + REPORT_NSYM {
        return false;
    }
    let mut cw = [0u8; CRC_LEN + REPORT_NSYM];
    cw.copy_from_slice(body);
    if codecs.get(REPORT_NSYM).decode(&mut cw).is_err() {
        return false;
    }
    cw[..CRC_LEN] == crc32fast::hash(info).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frag(i: u8) -> FragPos {
        frag_from(i)
    }

    proptest! {
        #[test]
        fn data_round_trip(fp in 0u8..4, pp in 0u8..4, nsym in prop_oneof![Just(0u8), 1u8..=198],
                           seq: u16, payload in proptest::collection::vec(any::<u8>(), 0..1300)) {
            let mut c = Codecs::default();
            let h = DataHeader { fp: frag(fp), piece: frag(pp), len: payload.len() as u16, nsym, seq };
            let mut out = Vec::new();
            emit_data(&mut c, &h, &payload, &mut out);
            prop_assert_eq!(out.len(), data_frame_len(payload.len(), nsym as usize));
            let (hh, info) = parse_header(&mut c, &out).unwrap();
            prop_assert_eq!(hh, Header::Data(h));
            let (mut s, mut p) = (Vec::new(), Vec::new());
            decode_data(&mut c, &h, &info, &out[HEADER_LEN..], &mut s, &mut p).unwrap();
            prop_assert_eq!(p, payload);
        }

        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut c = Codecs::default();
            match parse_header(&mut c, &bytes) {
                Ok((Header::Data(h), info)) => {
                    let (mut s, mut p) = (Vec::new(), Vec::new());
                    if decode_data(&mut c, &h, &info, &bytes[HEADER_LEN..], &mut s, &mut p).is_ok() {
                        prop_assert_eq!(p.len(), h.len as usize);
                    }
                }
                Ok((Header::Report(_), info)) => {
                    let _ = check_report(&mut c, &info, &bytes[HEADER_LEN..]);
                }
                Err(_) => {}
            }
        }
    }

    fn data(len: u16, nsym: u8) -> DataHeader {
        DataHeader {
            fp: FragPos::Last,
            piece: FragPos::First,
            len,
            nsym,
            seq: 0xabcd,
        }
    }

    #[test]
    fn data_frame_layout_and_round_trip() {
        let mut c = Codecs::default();
        for (len, nsym) in [
            (0u16, 0u8),
            (100, 0),
            (1271, 0),
            (500, 12),
            (177, 74),
            (1000, 198),
        ] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let h = data(len, nsym);
            let mut out = Vec::new();
            emit_data(&mut c, &h, &payload, &mut out);
            assert_eq!(out.len(), data_frame_len(len as usize, nsym as usize));
            // Independent size check: header 12, data len+4, one nsym per started block.
            let k = 255 - nsym as usize;
            let mut blocks = 0;
            let mut left = len as usize + 4;
            while left > 0 {
                left = left.saturating_sub(k);
                blocks += 1;
            }
            assert_eq!(out.len(), 12 + len as usize + 4 + blocks * nsym as usize);
            let (hh, info) = parse_header(&mut c, &out).unwrap();
            assert_eq!(hh, Header::Data(h));
            let mut s = Vec::new();
            let mut p = Vec::new();
            let st = decode_data(&mut c, &h, &info, &out[HEADER_LEN..], &mut s, &mut p).unwrap();
            assert_eq!(p, payload);
            assert_eq!(st, BodyStats::default());
        }
    }

    #[test]
    fn header_fixture_bits() {
        let mut c = Codecs::default();
        let mut out = Vec::new();
        emit_data(&mut c, &data(0x123, 12), &[0u8; 0x123], &mut out);
        // FP Last = 3, PP First = 1, len 0x123: b0 = 0b0_11_01_001.
        assert_eq!(&out[..6], &[0b0110_1001, 0x23, 12, 0xab, 0xcd, 2]);
        let r = Report {
            outcome: Outcome::Failed,
            load: 5,
            ack: 0x0102,
            about: 0x0304,
            nsym: 74,
        };
        let mut out = Vec::new();
        emit_report(&mut c, &r, &mut out);
        assert_eq!(out.len(), REPORT_LEN);
        assert_eq!(&out[..6], &[0x80 | 2 << 5 | 5, 1, 2, 3, 4, 74]);
        let (h, info) = parse_header(&mut c, &out).unwrap();
        assert_eq!(h, Header::Report(r));
        assert!(check_report(&mut c, &info, &out[HEADER_LEN..]));
    }

    #[test]
    fn header_survives_three_byte_errors_and_blocks_repair() {
        let mut c = Codecs::default();
        let h = data(400, 20);
        let payload = vec![0x5a; 400];
        let mut out = Vec::new();
        emit_data(&mut c, &h, &payload, &mut out);
        let mut bad = out.clone();
        for i in [0, 5, 11] {
            bad[i] ^= 0xff;
        }
        // 10 symbol errors in the first block, 3 in the second (t = 10).
        for i in 0..10 {
            bad[HEADER_LEN + i * 20] ^= 0x11;
        }
        for i in 0..3 {
            bad[HEADER_LEN + 255 + i] ^= 0x22;
        }
        let (hh, info) = parse_header(&mut c, &bad).unwrap();
        assert_eq!(hh, Header::Data(h));
        let (mut s, mut p) = (Vec::new(), Vec::new());
        let st = decode_data(&mut c, &h, &info, &bad[HEADER_LEN..], &mut s, &mut p).unwrap();
        assert_eq!(p, payload);
        assert_eq!(
            st,
            BodyStats {
                blocks_corrected: 2,
                symbols_corrected: 13,
                worst_block: 10
            }
        );
        // Truncation and unrepairable damage are told apart.
        let cut = &out[HEADER_LEN..out.len() - 1];
        assert_eq!(
            decode_data(&mut c, &h, &info, cut, &mut s, &mut p)
                .unwrap_err()
                .0,
            FrameError::Truncated
        );
        let mut worse = out.clone();
        for i in 0..11 {
            worse[HEADER_LEN + i] ^= 0x33;
        }
        assert_eq!(
            decode_data(&mut c, &h, &info, &worse[HEADER_LEN..], &mut s, &mut p)
                .unwrap_err()
                .0,
            FrameError::Failed
        );
    }

    #[test]
    fn uncoded_frames_rely_on_the_crc() {
        let mut c = Codecs::default();
        let h = data(50, 0);
        let mut out = Vec::new();
        emit_data(&mut c, &h, &[9u8; 50], &mut out);
        out[HEADER_LEN + 10] ^= 1;
        let (_, info) = parse_header(&mut c, &out).unwrap();
        let (mut s, mut p) = (Vec::new(), Vec::new());
        assert_eq!(
            decode_data(&mut c, &h, &info, &out[HEADER_LEN..], &mut s, &mut p)
                .unwrap_err()
                .0,
            FrameError::Failed
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut c = Codecs::default();
        let mut x = 1u32;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            if let Ok((Header::Data(h), info)) = parse_header(&mut c, &bytes) {
                let (mut s, mut p) = (Vec::new(), Vec::new());
                let _ = decode_data(&mut c, &h, &info, &bytes[HEADER_LEN..], &mut s, &mut p);
            }
        }
        assert_eq!(parse_header(&mut c, &[1, 2, 3]), Err(FrameError::Header));
    }
}
