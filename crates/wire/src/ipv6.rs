//! The IPv6 fixed header (RFC 8200 §3).
//!
//! Contract: [`Ipv6Packet::new_checked`] accepts a buffer that starts with version 6 and holds
//! the 40-byte fixed header; [`Ipv6Repr::parse`] also checks that the payload length field
//! fits in the buffer. Extension headers are payload here: [`crate::ip`] walks them to the
//! upper-layer protocol. The traffic class, flow label and next header are kept as received.

use crate::{get_array, get_u16, get_u32, Field, WireError};

/// Byte ranges of the fields.
pub mod field {
    use super::Field;
    /// Version (4 bits), traffic class (8 bits), flow label (20 bits).
    pub const VER_TC_FLOW: Field = 0..4;
    /// Length of the payload (extension headers included).
    pub const PAYLOAD_LEN: Field = 4..6;
    /// The first next-header value (an extension header or the upper-layer protocol).
    pub const NEXT_HEADER: usize = 6;
    /// Hop limit.
    pub const HOP_LIMIT: usize = 7;
    /// Source address.
    pub const SRC: Field = 8..24;
    /// Destination address.
    pub const DST: Field = 24..40;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;

/// An IPv6 header at the start of a buffer.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// A view without checks (the caller sized the buffer).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// A view of a buffer that starts with a version-6 fixed header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.is_empty() {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::Malformed);
        }
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Ipv6Packet { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (6 in a checked view).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class (DS field and ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (get_u16(self.buffer.as_ref(), 0..2) >> 4) as u8
    }

    /// Flow label.
    #[inline]
    pub fn flow_label(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::VER_TC_FLOW) & 0x000f_ffff
    }

    /// Payload length field.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::PAYLOAD_LEN)
    }

    /// The first next-header value.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> [u8; 16] {
        get_array(self.buffer.as_ref(), field::SRC)
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> [u8; 16] {
        get_array(self.buffer.as_ref(), field::DST)
    }

    /// The bytes after the fixed header that are present in the buffer (at most the payload
    /// length field's worth).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (HEADER_LEN + self.payload_len() as usize).min(b.len());
        &b[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets version 6, the traffic class and the flow label.
    #[inline]
    pub fn set_ver_tc_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let v = (6u32 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0x000f_ffff);
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the payload length field.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::PAYLOAD_LEN].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXT_HEADER] = v;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }
}

/// The values of an IPv6 fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// The first next-header value (kept as received).
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DS field and ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Bytes after the fixed header (extension headers included).
    pub payload_len: usize,
}

impl Ipv6Repr {
    /// The header's values; checks that the payload length fits in the buffer.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Self, WireError> {
        let payload_len = p.payload_len() as usize;
        if HEADER_LEN + payload_len > p.buffer.as_ref().len() {
            return Err(WireError::Truncated);
        }
        Ok(Ipv6Repr {
            src: p.src(),
            dst: p.dst(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            payload_len,
        })
    }

    /// Header length in bytes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header into `p`; the payload length is capped at 65535.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv6Packet<T>) {
        p.set_ver_tc_flow(self.traffic_class, self.flow_label);
        p.set_payload_len(self.payload_len.min(u16::MAX as usize) as u16);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src(self.src);
        p.set_dst(self.dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etherparse_agrees_on_a_built_packet() {
        let b = etherparse::PacketBuilder::ipv6([1; 16], [2; 16], 9).udp(1000, 2000);
        let mut out = Vec::new();
        b.write(&mut out, &[7, 7, 7]).unwrap();
        let p = Ipv6Packet::new_checked(&out[..]).unwrap();
        let r = Ipv6Repr::parse(&p).unwrap();
        assert_eq!(r.src, [1; 16]);
        assert_eq!(r.dst, [2; 16]);
        assert_eq!(r.hop_limit, 9);
        assert_eq!(r.next_header, 17);
        assert_eq!(r.payload_len, 8 + 3);
        let mut back = [0u8; HEADER_LEN];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut back[..]));
        assert_eq!(back[..], out[..HEADER_LEN]);
    }

    #[test]
    fn short_or_wrong_version_is_refused() {
        assert_eq!(
            Ipv6Packet::new_checked(&[0x60u8; 39][..]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(
            Ipv6Packet::new_checked(&[0x45u8; 40][..]).err(),
            Some(WireError::Malformed)
        );
        let mut b = [0u8; 40];
        b[0] = 0x60;
        b[5] = 1; // payload length 1, no byte present
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), Err(WireError::Truncated));
    }

    proptest::proptest! {
        #[test]
        fn repr_round_trips(src: [u8; 16], dst: [u8; 16], next_header: u8, hop_limit: u8,
                            traffic_class: u8, flow_label in 0u32..(1 << 20), payload_len in 0usize..64) {
            let r = Ipv6Repr { src, dst, next_header, hop_limit, traffic_class, flow_label, payload_len };
            let mut buf = vec![0u8; r.buffer_len() + payload_len];
            r.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
            let back = Ipv6Repr::parse(&Ipv6Packet::new_checked(&buf[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, r);
        }

        #[test]
        fn views_never_panic(bytes: Vec<u8>) {
            if let Ok(p) = Ipv6Packet::new_checked(&bytes[..]) {
                let _ = Ipv6Repr::parse(&p);
                let _ = p.payload();
            }
        }
    }
}
