//! The IPv4 header (RFC 791 §3.1).
//!
//! Contract: [`Ipv4Packet::new_checked`] accepts a buffer whose first byte says version 4 with
//! IHL >= 5 and which holds the whole header that IHL announces (options included); the total
//! length field is checked by [`Ipv4Packet::check_total_len`] and by [`Ipv4Repr::parse`], which
//! also verifies the header checksum (RFC 1071) and refuses fragments (this stack does not
//! reassemble). Emit writes a 20-byte header without options and fills in the checksum.

use crate::checksum::checksum;
use crate::{get_array, get_u16, Field, WireError};

/// Byte ranges of the fields.
pub mod field {
    use super::Field;
    /// Version (high nibble) and IHL (low nibble, in 32-bit words).
    pub const VER_IHL: usize = 0;
    /// DS field and ECN.
    pub const TOS: usize = 1;
    /// Total length (header and data).
    pub const LENGTH: Field = 2..4;
    /// Identification.
    pub const IDENT: Field = 4..6;
    /// Flags (3 bits) and fragment offset (13 bits).
    pub const FLG_OFF: Field = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Field = 10..12;
    /// Source address.
    pub const SRC: Field = 12..16;
    /// Destination address.
    pub const DST: Field = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;
/// The "don't fragment" flag.
pub const FLAG_DF: u16 = 0x4000;
/// The reserved flag (must be zero per RFC 791; kept as received, never rejected).
pub const FLAG_RESERVED: u16 = 0x8000;
/// The "more fragments" flag and the offset mask: non-zero means a fragment.
pub const FRAGMENT_MASK: u16 = 0x3fff;

/// An IPv4 header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view without checks (the caller sized the buffer).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// A view of a buffer that starts with a version-4 header whose IHL bytes are all present.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        let b0 = *b.first().ok_or(WireError::Truncated)?;
        if b0 >> 4 != 4 || (b0 & 0x0f) < 5 {
            return Err(WireError::Malformed);
        }
        if b.len() < ((b0 & 0x0f) as usize) * 4 {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet { buffer })
    }

    /// Checks the total length against the header length and the bytes present.
    #[inline]
    pub fn check_total_len(&self) -> Result<(), WireError> {
        let total = self.total_len() as usize;
        if total < self.header_len() {
            return Err(WireError::BadLength);
        }
        if total > self.buffer.as_ref().len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version.
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL x 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        ((self.buffer.as_ref()[field::VER_IHL] & 0x0f) as usize) * 4
    }

    /// DS field and ECN.
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// Total length.
    #[inline]
    pub fn total_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// Flags and fragment offset.
    #[inline]
    pub fn flags_offset(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::FLG_OFF)
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum_field(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> [u8; 4] {
        get_array(self.buffer.as_ref(), field::SRC)
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> [u8; 4] {
        get_array(self.buffer.as_ref(), field::DST)
    }

    /// Whether the header (options included) sums to all ones (RFC 791 §3.1, RFC 1071).
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.buffer.as_ref()[..self.header_len()]) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the header length (bytes, a multiple of 4).
    #[inline]
    pub fn set_version_ihl(&mut self, header_len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }

    /// Sets the DS field and ECN.
    #[inline]
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets flags and fragment offset.
    #[inline]
    pub fn set_flags_offset(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLG_OFF].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the time to live.
    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }

    /// Computes and writes the header checksum (RFC 791 §3.1).
    #[inline]
    pub fn fill_checksum(&mut self) {
        let n = self.header_len();
        let b = self.buffer.as_mut();
        b[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum(&b[..n]);
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

/// The values of an IPv4 header (options are skipped on parse and never emitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Protocol of the payload (any value is kept).
    pub protocol: u8,
    /// Time to live.
    pub ttl: u8,
    /// DS field and ECN.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// The "don't fragment" flag.
    pub dont_frag: bool,
    /// The reserved flag bit, kept as received (unknown codepoints are kept).
    pub reserved_flag: bool,
    /// Bytes of data after the header.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// The header's values; checks the total length, the checksum, and that it is no fragment.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self, WireError> {
        p.check_total_len()?;
        if !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        if p.flags_offset() & FRAGMENT_MASK != 0 {
            return Err(WireError::Unsupported);
        }
        Ok(Ipv4Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            ttl: p.ttl(),
            tos: p.tos(),
            ident: p.ident(),
            dont_frag: p.flags_offset() & FLAG_DF != 0,
            reserved_flag: p.flags_offset() & FLAG_RESERVED != 0,
            payload_len: p.total_len() as usize - p.header_len(),
        })
    }

    /// Header length in bytes (no options).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with its checksum into `p`; the total length is capped at 65535.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        p.set_version_ihl(HEADER_LEN);
        p.set_tos(self.tos);
        p.set_total_len((self.payload_len + HEADER_LEN).min(u16::MAX as usize) as u16);
        p.set_ident(self.ident);
        let df = if self.dont_frag { FLAG_DF } else { 0 };
        let rf = if self.reserved_flag { FLAG_RESERVED } else { 0 };
        p.set_flags_offset(df | rf);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src(self.src);
        p.set_dst(self.dst);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header written out by hand: 10.0.0.1 -> 10.0.0.2, UDP, TTL 64, ident 0x1c46, DF,
    /// total length 24 (4 data bytes); checksum computed by hand below.
    fn fixture() -> [u8; 24] {
        let mut h = [
            0x45, 0x00, 0x00, 0x18, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1,
            10, 0, 0, 2, b'a', b'b', b'c', b'd',
        ];
        // One's complement sum of the header's 16-bit words, written independently of the
        // crate's checksum code.
        let mut s: u32 = 0;
        for w in h[..20].chunks(2) {
            s += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        h[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
        h
    }

    #[test]
    fn fixture_parses_and_round_trips() {
        let fx = fixture();
        let p = Ipv4Packet::new_checked(&fx[..]).unwrap();
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Ipv4Repr {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
                protocol: 17,
                ttl: 64,
                tos: 0,
                ident: 0x1c46,
                dont_frag: true,
                reserved_flag: false,
                payload_len: 4,
            }
        );
        let mut out = [0u8; 20];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut out[..]));
        assert_eq!(out[..], fx[..20]);
        // etherparse agrees on the fields and the checksum.
        let (h, _) = etherparse::Ipv4Header::from_slice(&out).unwrap();
        assert_eq!(h.calc_header_checksum(), h.header_checksum);
        assert_eq!(h.identification, 0x1c46);
    }

    #[test]
    fn malformed_headers_are_refused() {
        let fx = fixture();
        let err = |b: &[u8]| {
            Ipv4Packet::new_checked(b)
                .and_then(|p| Ipv4Repr::parse(&p))
                .err()
        };
        assert_eq!(err(&[]), Some(WireError::Truncated));
        assert_eq!(err(&fx[..19]), Some(WireError::Truncated));
        let mut v6 = fx;
        v6[0] = 0x65;
        assert_eq!(err(&v6), Some(WireError::Malformed));
        let mut ihl4 = fx;
        ihl4[0] = 0x44;
        assert_eq!(err(&ihl4), Some(WireError::Malformed));
        let mut ck = fx;
        ck[8] ^= 1;
        assert_eq!(err(&ck), Some(WireError::BadChecksum));
        // Total length beyond the buffer, and shorter than the header.
        assert_eq!(err(&fx[..23]), Some(WireError::Truncated));
        let mut short = fx;
        short[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(err(&short), Some(WireError::BadLength));
        // A fragment (MF set) is unsupported; the reserved flag is kept, not rejected.
        let mut p = Ipv4Packet::new_unchecked(fx);
        p.set_flags_offset(0x2000);
        p.fill_checksum();
        assert_eq!(err(&p.into_inner()), Some(WireError::Unsupported));
        let mut p = Ipv4Packet::new_unchecked(fx);
        p.set_flags_offset(FLAG_RESERVED | FLAG_DF);
        p.fill_checksum();
        let r = Ipv4Repr::parse(&Ipv4Packet::new_checked(&p.into_inner()[..]).unwrap()).unwrap();
        assert!(r.reserved_flag && r.dont_frag);
    }

    proptest::proptest! {
        #[test]
        fn repr_round_trips(src: [u8; 4], dst: [u8; 4], protocol: u8, ttl: u8, tos: u8,
                            ident: u16, dont_frag: bool, reserved_flag: bool,
                            payload_len in 0usize..100) {
            let r = Ipv4Repr {
                src, dst, protocol, ttl, tos, ident, dont_frag, reserved_flag, payload_len,
            };
            let mut buf = vec![0u8; r.buffer_len() + payload_len];
            r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            let back = Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, r);
        }

        #[test]
        fn views_never_panic(bytes: Vec<u8>) {
            if let Ok(p) = Ipv4Packet::new_checked(&bytes[..]) {
                let _ = Ipv4Repr::parse(&p);
                let _ = (p.src(), p.dst(), p.verify_checksum());
            }
        }
    }
}
