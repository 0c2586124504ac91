//! The UDP header (RFC 768).
//!
//! Contract: [`UdpPacket::new_checked`] accepts a buffer holding the 8-byte header;
//! [`UdpRepr::parse`] checks the length field (at least the header, at most the bytes present).
//! The checksum covers a pseudo-header and the data, so it is computed and verified by the UDP
//! protocol (which may integrate it with the copy, 002 §2.2); the repr carries the field as is
//! (0 = not computed, RFC 768).

use crate::{get_u16, Field, WireError};

/// Byte ranges of the fields.
pub mod field {
    use super::Field;
    /// Source port.
    pub const SRC_PORT: Field = 0..2;
    /// Destination port.
    pub const DST_PORT: Field = 2..4;
    /// Length of header and data.
    pub const LENGTH: Field = 4..6;
    /// Checksum (0: not computed).
    pub const CHECKSUM: Field = 6..8;
}

/// Length of the header.
pub const HEADER_LEN: usize = 8;

/// A UDP header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A view without checks (the caller sized the buffer).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// A view of a buffer holding at least the 8-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(UdpPacket { buffer })
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

    /// Length field.
    #[inline]
    pub fn len_field(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum_field(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The header bytes.
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..HEADER_LEN]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
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

    /// Sets the length field.
    #[inline]
    pub fn set_len_field(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum_field(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
}

/// The values of a UDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Bytes of data after the header.
    pub payload_len: usize,
    /// The checksum field as sent (0: none).
    pub checksum: u16,
}

impl UdpRepr {
    /// The header's values; checks the length field against the header and the bytes present.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Result<Self, WireError> {
        let len = p.len_field() as usize;
        if len < HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if len > p.buffer.as_ref().len() {
            return Err(WireError::Truncated);
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: len - HEADER_LEN,
            checksum: p.checksum_field(),
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `p`; the length field is capped at 65535.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut UdpPacket<T>) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len_field((self.payload_len + HEADER_LEN).min(u16::MAX as usize) as u16);
        p.set_checksum_field(self.checksum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ports 1000 -> 2000, length 10, checksum 0xbeef, 2 data bytes.
    const FIXTURE: [u8; 10] = [0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0a, 0xbe, 0xef, 1, 2];

    #[test]
    fn fixture_parses_and_round_trips() {
        let p = UdpPacket::new_checked(&FIXTURE[..]).unwrap();
        let r = UdpRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            UdpRepr {
                src_port: 1000,
                dst_port: 2000,
                payload_len: 2,
                checksum: 0xbeef
            }
        );
        let mut out = [0u8; 8];
        r.emit(&mut UdpPacket::new_unchecked(&mut out[..]));
        assert_eq!(out[..], FIXTURE[..8]);
    }

    #[test]
    fn bad_lengths() {
        assert_eq!(
            UdpPacket::new_checked(&FIXTURE[..7]).err(),
            Some(WireError::Truncated)
        );
        let p = UdpPacket::new_checked(&FIXTURE[..9]).unwrap();
        assert_eq!(UdpRepr::parse(&p), Err(WireError::Truncated));
        let mut b = FIXTURE;
        b[4..6].copy_from_slice(&7u16.to_be_bytes());
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p), Err(WireError::BadLength));
    }

    proptest::proptest! {
        #[test]
        fn repr_round_trips(src_port: u16, dst_port: u16, checksum: u16, payload_len in 0usize..64) {
            let r = UdpRepr { src_port, dst_port, payload_len, checksum };
            let mut buf = vec![0u8; r.buffer_len() + payload_len];
            r.emit(&mut UdpPacket::new_unchecked(&mut buf[..]));
            let back = UdpRepr::parse(&UdpPacket::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, r);
        }

        #[test]
        fn views_never_panic(bytes: Vec<u8>) {
            if let Ok(p) = UdpPacket::new_checked(&bytes[..]) {
                let _ = UdpRepr::parse(&p);
            }
        }
    }
}
