//! The TCP header (RFC 9293 §3.1) and its options: MSS, window scale and timestamps
//! (RFC 7323), SACK-permitted and SACK blocks (RFC 2018), any other kind kept as bytes.
//!
//! Contract: [`TcpPacket::new_checked`] accepts a buffer holding the 20-byte fixed header and
//! the options its data offset announces (data offset at least 5). [`TcpPacket::options`]
//! walks the options and never reads past the header: a malformed option (length below 2 or
//! past the header) ends the walk with `Err(WireError::Malformed)`. [`TcpRepr`] holds the
//! fixed fields and the options' length; [`TcpRepr::emit`] writes the fixed header and the
//! caller writes the options with [`write_option`] into [`TcpPacket::options_mut`]. The
//! checksum covers a pseudo-header ([`crate::checksum::pseudo_header`]) and the data, so it is
//! the caller's to compute: [`TcpPacket::fill_checksum`] and [`TcpPacket::verify_checksum`]
//! do it when the whole segment is in the buffer.

use crate::checksum::{pseudo_header, Sum};
use crate::{get_u16, get_u32, Field, WireError};

/// Byte ranges of the fields.
pub mod field {
    use super::Field;
    /// Source port.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Sequence number.
    pub const SEQ: Field = 4..8;
    /// Acknowledgement number.
    pub const ACK: Field = 8..12;
    /// Data offset (high nibble, in 32-bit words).
    pub const DATA_OFFSET: usize = 12;
    /// Flags (CWR ECE URG ACK PSH RST SYN FIN).
    pub const FLAGS: usize = 13;
    /// Window.
    pub const WINDOW: Field = 14..16;
    /// Checksum.
    pub const CHECKSUM: Field = 16..18;
    /// Urgent pointer.
    pub const URGENT: Field = 18..20;
    /// Start of the options.
    pub const OPTIONS: usize = 20;
}

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;
/// Longest header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// The FIN flag.
pub const FIN: u8 = 0x01;
/// The SYN flag.
pub const SYN: u8 = 0x02;
/// The RST flag.
pub const RST: u8 = 0x04;
/// The PSH flag.
pub const PSH: u8 = 0x08;
/// The ACK flag.
pub const ACK: u8 = 0x10;

/// Option kinds (IANA "TCP Option Kind Numbers").
pub mod kind {
    /// End of option list.
    pub const END: u8 = 0;
    /// No operation (padding).
    pub const NOP: u8 = 1;
    /// Maximum segment size (RFC 9293 §3.2).
    pub const MSS: u8 = 2;
    /// Window scale (RFC 7323 §2).
    pub const WINDOW_SCALE: u8 = 3;
    /// SACK permitted (RFC 2018 §2).
    pub const SACK_PERMITTED: u8 = 4;
    /// SACK blocks (RFC 2018 §3).
    pub const SACK: u8 = 5;
    /// Timestamps (RFC 7323 §3).
    pub const TIMESTAMPS: u8 = 8;
}

/// One option as read from a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// No operation.
    Nop,
    /// Maximum segment size.
    Mss(u16),
    /// Window scale shift.
    WindowScale(u8),
    /// SACK permitted.
    SackPermitted,
    /// SACK blocks: `(left, right)` edges as big-endian pairs, 8 bytes each (an option whose
    /// length is not 2 + 8n is [`TcpOption::Unknown`]).
    Sack(&'a [u8]),
    /// Timestamp value and echo reply.
    Timestamps(u32, u32),
    /// Any other kind (or a known kind with an unexpected length), with its data bytes.
    Unknown(u8, &'a [u8]),
}

impl<'a> TcpOption<'a> {
    /// The blocks of a SACK option (empty for other options).
    pub fn sack_blocks(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let data: &'a [u8] = match self {
            TcpOption::Sack(d) => d,
            _ => &[],
        };
        data.chunks_exact(8)
            .map(|c| (get_u32(c, 0..4), get_u32(c, 4..8)))
    }

    /// Bytes this option takes in a header.
    pub fn buffer_len(&self) -> usize {
        match self {
            TcpOption::Nop => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Sack(d) | TcpOption::Unknown(_, d) => 2 + d.len(),
            TcpOption::Timestamps(..) => 10,
        }
    }
}

/// Writes `opt` at the start of `buf` (at least `opt.buffer_len()` bytes) and returns its
/// length. Data longer than an option can say (253 bytes) is cut.
pub fn write_option(buf: &mut [u8], opt: &TcpOption) -> usize {
    let mut put = |k: u8, data: &[u8]| {
        let data = &data[..data.len().min(253)];
        buf[0] = k;
        buf[1] = 2 + data.len() as u8;
        buf[2..2 + data.len()].copy_from_slice(data);
        2 + data.len()
    };
    match *opt {
        TcpOption::Nop => {
            buf[0] = kind::NOP;
            1
        }
        TcpOption::Mss(v) => put(kind::MSS, &v.to_be_bytes()),
        TcpOption::WindowScale(v) => put(kind::WINDOW_SCALE, &[v]),
        TcpOption::SackPermitted => put(kind::SACK_PERMITTED, &[]),
        TcpOption::Sack(d) => put(kind::SACK, d),
        TcpOption::Timestamps(a, b) => {
            let mut d = [0u8; 8];
            d[..4].copy_from_slice(&a.to_be_bytes());
            d[4..].copy_from_slice(&b.to_be_bytes());
            put(kind::TIMESTAMPS, &d)
        }
        TcpOption::Unknown(k, d) => put(k, d),
    }
}

/// The options of a header, in order; stops at End of option list or the header's end.
#[derive(Clone, Debug)]
pub struct TcpOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for TcpOptions<'a> {
    type Item = Result<TcpOption<'a>, WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (&k, tail) = self.rest.split_first()?;
        match k {
            kind::END => {
                self.rest = &[];
                None
            }
            kind::NOP => {
                self.rest = tail;
                Some(Ok(TcpOption::Nop))
            }
            _ => {
                let len = match tail.first() {
                    Some(&l) if l >= 2 && l as usize <= self.rest.len() => l as usize,
                    _ => {
                        self.rest = &[];
                        return Some(Err(WireError::Malformed));
                    }
                };
                let data = &self.rest[2..len];
                self.rest = &self.rest[len..];
                Some(Ok(match (k, data.len()) {
                    (kind::MSS, 2) => TcpOption::Mss(get_u16(data, 0..2)),
                    (kind::WINDOW_SCALE, 1) => TcpOption::WindowScale(data[0]),
                    (kind::SACK_PERMITTED, 0) => TcpOption::SackPermitted,
                    (kind::SACK, n) if n % 8 == 0 => TcpOption::Sack(data),
                    (kind::TIMESTAMPS, 8) => {
                        TcpOption::Timestamps(get_u32(data, 0..4), get_u32(data, 4..8))
                    }
                    _ => TcpOption::Unknown(k, data),
                }))
            }
        }
    }
}

/// A TCP header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A view without checks (the caller sized the buffer).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// A view of a buffer holding the fixed header and the options the data offset announces.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = usize::from(b[field::DATA_OFFSET] >> 4) * 4;
        if hl < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if hl > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(TcpPacket { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Sequence number.
    #[inline]
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Acknowledgement number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::ACK)
    }

    /// Header length in bytes (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFFSET] >> 4) * 4
    }

    /// The flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// Window field (unscaled).
    #[inline]
    pub fn window(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum_field(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::URGENT)
    }

    /// The option bytes.
    #[inline]
    pub fn option_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }

    /// The options, in order.
    pub fn options(&self) -> TcpOptions<'_> {
        TcpOptions {
            rest: self.option_bytes(),
        }
    }

    /// The bytes after the header present in the buffer.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Whether the checksum verifies, the buffer holding the whole segment, over the
    /// pseudo-header of addresses `src` and `dst` (4 or 16 bytes each).
    #[inline]
    pub fn verify_checksum(&self, src: &[u8], dst: &[u8]) -> bool {
        let b = self.buffer.as_ref();
        let mut s = pseudo_header(src, dst, 6, b.len());
        s.add(b);
        s.fold() == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the acknowledgement number.
    #[inline]
    pub fn set_ack_number(&mut self, v: u32) {
        self.buffer.as_mut()[field::ACK].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the header length (a multiple of 4 from 20 to 60; the reserved bits are cleared).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[field::DATA_OFFSET] = ((len / 4) as u8) << 4;
    }

    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Sets the window field.
    #[inline]
    pub fn set_window(&mut self, v: u16) {
        self.buffer.as_mut()[field::WINDOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum_field(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent(&mut self, v: u16) {
        self.buffer.as_mut()[field::URGENT].copy_from_slice(&v.to_be_bytes());
    }

    /// The option bytes, to write with [`write_option`].
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[field::OPTIONS..hl]
    }

    /// Computes and sets the checksum over the whole buffer (header and data) and the
    /// pseudo-header of `src` and `dst`; `extra` is the sum of data not in the buffer (e.g. a
    /// payload of zeros, which adds nothing).
    #[inline]
    pub fn fill_checksum(&mut self, src: &[u8], dst: &[u8], total_len: usize, extra: Sum) {
        self.set_checksum_field(0);
        let mut s = pseudo_header(src, dst, 6, total_len);
        s.add(self.buffer.as_ref());
        s.add_sum(extra);
        let c = s.checksum();
        self.set_checksum_field(c);
    }
}

/// The fixed fields of a TCP header; the options are written separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags byte.
    pub flags: u8,
    /// Window field (already scaled down).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// Bytes of options, padding included (a multiple of 4, at most 40).
    pub options_len: usize,
}

impl TcpRepr {
    /// The header's fixed values.
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>) -> Result<Self, WireError> {
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq(),
            ack: p.ack_number(),
            flags: p.flags(),
            window: p.window(),
            urgent: p.urgent(),
            options_len: p.header_len() - HEADER_LEN,
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options_len
    }

    /// Writes the fixed header (checksum zero) into `p`; the options area is left as it is.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut TcpPacket<T>) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_seq(self.seq);
        p.set_ack_number(self.ack);
        p.set_header_len(self.buffer_len());
        p.set_flags(self.flags);
        p.set_window(self.window);
        p.set_checksum_field(0);
        p.set_urgent(self.urgent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(opts: &[etherparse::TcpOptionElement]) -> Vec<u8> {
        let mut h = etherparse::TcpHeader::new(1000, 2000, 0x0102_0304, 512);
        h.acknowledgment_number = 77;
        h.ack = true;
        h.psh = true;
        h.set_options(opts).unwrap();
        let ip = etherparse::Ipv4Header::new(
            (h.header_len() + 3) as u16,
            64,
            etherparse::IpNumber::TCP,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
        )
        .unwrap();
        h.checksum = h.calc_checksum_ipv4(&ip, &[1, 2, 3]).unwrap();
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(&[1, 2, 3]);
        v
    }

    #[test]
    fn etherparse_segment_reads_the_same() {
        use etherparse::TcpOptionElement as E;
        let b = built(&[
            E::MaximumSegmentSize(1460),
            E::WindowScale(7),
            E::SelectiveAcknowledgementPermitted,
            E::Timestamp(5, 6),
            E::SelectiveAcknowledgement((10, 20), [Some((30, 40)), None, None]),
        ]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        let r = TcpRepr::parse(&p).unwrap();
        assert_eq!(
            (r.src_port, r.dst_port, r.seq, r.ack),
            (1000, 2000, 0x0102_0304, 77)
        );
        assert_eq!(r.flags, ACK | PSH);
        assert_eq!(r.window, 512);
        assert!(p.verify_checksum(&[10, 0, 0, 1], &[10, 0, 0, 2]));
        let opts: Vec<_> = p.options().filter(|o| o != &Ok(TcpOption::Nop)).collect();
        assert_eq!(opts[0], Ok(TcpOption::Mss(1460)));
        assert_eq!(opts[1], Ok(TcpOption::WindowScale(7)));
        assert_eq!(opts[2], Ok(TcpOption::SackPermitted));
        assert_eq!(opts[3], Ok(TcpOption::Timestamps(5, 6)));
        let sack: Vec<_> = opts[4].unwrap().sack_blocks().collect();
        assert_eq!(sack, vec![(10, 20), (30, 40)]);
        assert_eq!(p.payload(), &[1, 2, 3]);
    }

    #[test]
    fn emitted_segment_is_what_etherparse_reads() {
        let r = TcpRepr {
            src_port: 5,
            dst_port: 6,
            seq: 7,
            ack: 8,
            flags: ACK,
            window: 9,
            urgent: 0,
            options_len: 12,
        };
        let mut b = vec![0u8; r.buffer_len() + 4];
        let mut p = TcpPacket::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        let o = p.options_mut();
        let n = write_option(o, &TcpOption::Nop);
        let n = n + write_option(&mut o[n..], &TcpOption::Nop);
        write_option(&mut o[n..], &TcpOption::Timestamps(1, 2));
        p.fill_checksum(
            &[1, 1, 1, 1],
            &[2, 2, 2, 2],
            r.buffer_len() + 4,
            Sum::default(),
        );
        let (h, rest) = etherparse::TcpHeader::from_slice(&b).unwrap();
        assert_eq!(rest.len(), 4);
        assert_eq!(h.sequence_number, 7);
        assert_eq!(h.options.elements_iter().count(), 3);
        let ip = etherparse::Ipv4Header::new(
            b.len() as u16,
            64,
            etherparse::IpNumber::TCP,
            [1, 1, 1, 1],
            [2, 2, 2, 2],
        )
        .unwrap();
        assert_eq!(h.calc_checksum_ipv4(&ip, rest).unwrap(), h.checksum);
    }

    #[test]
    fn malformed_options_end_the_walk() {
        let mut b = built(&[]);
        b[12] = 6 << 4; // one word of options: kind 2 with length 9 (past the header)
        b.splice(20..20, [2u8, 9, 0, 0]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        let v: Vec<_> = p.options().collect();
        assert_eq!(v, vec![Err(WireError::Malformed)]);
        b[12] = 4 << 4;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).err(),
            Some(WireError::Malformed)
        );
        assert_eq!(
            TcpPacket::new_checked(&b[..19]).err(),
            Some(WireError::Truncated)
        );
    }

    proptest::proptest! {
        #[test]
        fn repr_round_trips(src_port: u16, dst_port: u16, seq: u32, ack: u32, flags: u8,
                            window: u16, urgent: u16, words in 0usize..=10) {
            let r = TcpRepr { src_port, dst_port, seq, ack, flags, window, urgent, options_len: 4 * words };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]));
            let back = TcpRepr::parse(&TcpPacket::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, r);
        }

        #[test]
        fn views_never_panic(bytes: Vec<u8>) {
            if let Ok(p) = TcpPacket::new_checked(&bytes[..]) {
                let _ = TcpRepr::parse(&p);
                for o in p.options().flatten() {
                    let _ = o.sack_blocks().count();
                }
                let _ = p.payload();
                let _ = p.verify_checksum(&[0; 4], &[0; 4]);
            }
        }
    }
}
