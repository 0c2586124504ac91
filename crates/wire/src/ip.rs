//! An IPv4 or IPv6 packet down to its upper-layer protocol: what a classifier or a
//! TCP-aware link agent needs to know without caring which version it holds.
//!
//! Contract: [`IpPacket::parse`] reads an IPv4 header (RFC 791; options skipped; the checksum
//! is not verified, that is the receiving host's business) or an IPv6 header followed by its
//! extension headers (RFC 8200 §4: hop-by-hop options, routing, fragment, destination options,
//! and the authentication header of RFC 4302) up to the upper-layer protocol. It requires the
//! length fields to fit in the buffer; [`IpPacket::parse_lax`] accepts a buffer cut short of
//! them (the first link frame of a packet the link segmented) and reports what is present.
//! A fragment other than a first one carries no upper-layer header: its [`IpPacket::payload`]
//! is data, and [`IpPacket::is_first_fragment`] says so. Parsing never panics.

use crate::{ipv4, ipv6, WireError};

/// IPv6 extension headers walked to reach the upper-layer protocol.
mod ext {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const AUTH: u8 = 51;
    pub const DEST_OPTS: u8 = 60;
}

/// The facts of one IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPacket<'a> {
    /// 4 or 6.
    pub version: u8,
    /// IPv4 TOS or IPv6 traffic class: the DS field (six high bits) and ECN.
    pub tos: u8,
    /// Source address (4 or 16 bytes).
    pub src: &'a [u8],
    /// Destination address (4 or 16 bytes).
    pub dst: &'a [u8],
    /// The upper-layer protocol (after IPv6 extension headers).
    pub protocol: u8,
    /// Fragment offset in 8-byte units (0: none or the first fragment).
    pub fragment_offset: u16,
    /// The "more fragments" flag.
    pub more_fragments: bool,
    /// Bytes of IP header, options and extension headers before the upper layer.
    pub header_len: usize,
    /// Upper-layer bytes the length fields announce.
    pub payload_len: usize,
    /// Upper-layer bytes present in the buffer (all `payload_len` of them unless lax).
    pub payload: &'a [u8],
}

impl<'a> IpPacket<'a> {
    /// Reads a whole IPv4 or IPv6 packet.
    #[inline]
    pub fn parse(packet: &'a [u8]) -> Result<Self, WireError> {
        Self::read(packet, false)
    }

    /// Reads an IPv4 or IPv6 packet whose tail may be missing.
    #[inline]
    pub fn parse_lax(packet: &'a [u8]) -> Result<Self, WireError> {
        Self::read(packet, true)
    }

    /// The DS codepoint (six high bits of the TOS or traffic class).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos >> 2
    }

    /// Whether this is no fragment or the first one (whose payload starts with the
    /// upper-layer header).
    #[inline]
    pub fn is_first_fragment(&self) -> bool {
        self.fragment_offset == 0
    }

    /// Whether the packet is a fragment of a larger one.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.fragment_offset != 0 || self.more_fragments
    }

    #[inline]
    fn read(b: &'a [u8], lax: bool) -> Result<Self, WireError> {
        match b.first().map(|v| v >> 4) {
            None => Err(WireError::Truncated),
            Some(4) => Self::read_v4(b, lax),
            Some(6) => Self::read_v6(b, lax),
            Some(_) => Err(WireError::Malformed),
        }
    }

    #[inline]
    fn read_v4(b: &'a [u8], lax: bool) -> Result<Self, WireError> {
        let p = ipv4::Ipv4Packet::new_checked(b)?;
        let hl = p.header_len();
        let total = p.total_len() as usize;
        if total < hl {
            return Err(WireError::BadLength);
        }
        if total > b.len() && !lax {
            return Err(WireError::Truncated);
        }
        let fo = p.flags_offset();
        Ok(IpPacket {
            version: 4,
            tos: p.tos(),
            src: &b[ipv4::field::SRC],
            dst: &b[ipv4::field::DST],
            protocol: p.protocol(),
            fragment_offset: fo & 0x1fff,
            more_fragments: fo & 0x2000 != 0,
            header_len: hl,
            payload_len: total - hl,
            payload: &b[hl..total.min(b.len())],
        })
    }

    #[inline]
    fn read_v6(b: &'a [u8], lax: bool) -> Result<Self, WireError> {
        let p = ipv6::Ipv6Packet::new_checked(b)?;
        let end = ipv6::HEADER_LEN + p.payload_len() as usize;
        if end > b.len() && !lax {
            return Err(WireError::Truncated);
        }
        let present = &b[..end.min(b.len())];
        let mut next = p.next_header();
        let mut at = ipv6::HEADER_LEN;
        let (mut fragment_offset, mut more_fragments) = (0u16, false);
        loop {
            let len = match next {
                ext::HOP_BY_HOP | ext::ROUTING | ext::DEST_OPTS => {
                    let l = *present.get(at + 1).ok_or(WireError::Truncated)?;
                    8 * (usize::from(l) + 1)
                }
                ext::AUTH => {
                    let l = *present.get(at + 1).ok_or(WireError::Truncated)?;
                    4 * (usize::from(l) + 2)
                }
                ext::FRAGMENT => {
                    let h = present.get(at..at + 8).ok_or(WireError::Truncated)?;
                    let v = u16::from_be_bytes([h[2], h[3]]);
                    fragment_offset = v >> 3;
                    more_fragments = v & 1 != 0;
                    8
                }
                _ => break,
            };
            if at + len > end {
                return Err(WireError::BadLength);
            }
            if at + len > present.len() {
                return Err(WireError::Truncated);
            }
            next = present[at];
            at += len;
            if fragment_offset != 0 {
                // Later headers are in the first fragment, not here.
                break;
            }
        }
        Ok(IpPacket {
            version: 6,
            tos: p.traffic_class(),
            src: &b[ipv6::field::SRC],
            dst: &b[ipv6::field::DST],
            protocol: next,
            fragment_offset,
            more_fragments,
            header_len: at,
            payload_len: end - at,
            payload: &present[at..],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn udp4(tos: u8) -> Vec<u8> {
        let mut out = Vec::new();
        let mut ip =
            etherparse::Ipv4Header::new(0, 64, etherparse::IpNumber::UDP, [1; 4], [2; 4]).unwrap();
        ip.dscp = etherparse::Ipv4Dscp::try_new(tos >> 2).unwrap();
        PacketBuilder::ip(etherparse::IpHeaders::Ipv4(ip, Default::default()))
            .udp(5, 6)
            .write(&mut out, &[9; 10])
            .unwrap();
        out
    }

    #[test]
    fn ipv4_udp() {
        let b = udp4(46 << 2);
        let p = IpPacket::parse(&b).unwrap();
        assert_eq!((p.version, p.dscp(), p.protocol), (4, 46, 17));
        assert_eq!((p.header_len, p.payload_len, p.payload.len()), (20, 18, 18));
        assert_eq!(p.src, &[1; 4]);
        assert!(p.is_first_fragment() && !p.is_fragment());
        assert_eq!(IpPacket::parse(&b[..30]), Err(WireError::Truncated));
        let lax = IpPacket::parse_lax(&b[..30]).unwrap();
        assert_eq!((lax.payload_len, lax.payload.len()), (18, 10));
    }

    #[test]
    fn ipv6_extension_headers_are_walked() {
        use etherparse::{IpNumber, Ipv6Extensions, Ipv6FragmentHeader, Ipv6RawExtHeader};
        let ext = Ipv6Extensions {
            hop_by_hop_options: Some(Ipv6RawExtHeader::new_raw(IpNumber(0), &[0; 6]).unwrap()),
            destination_options: None,
            routing: None,
            fragment: Some(Ipv6FragmentHeader::new(
                IpNumber(0),
                etherparse::IpFragOffset::ZERO,
                false,
                7,
            )),
            auth: None,
        };
        let ip = etherparse::Ipv6Header {
            traffic_class: 10 << 2,
            hop_limit: 3,
            source: [1; 16],
            destination: [2; 16],
            ..Default::default()
        };
        let mut out = Vec::new();
        PacketBuilder::ip(etherparse::IpHeaders::Ipv6(ip, ext))
            .tcp(80, 81, 0, 100)
            .write(&mut out, &[1, 2])
            .unwrap();
        // Set the M flag by hand: RFC 8200 §4.5 puts it in the lowest bit of the offset word,
        // where etherparse 0.16 puts bit 0x80 of the fourth byte instead.
        out[48 + 3] |= 1;
        let p = IpPacket::parse(&out).unwrap();
        assert_eq!((p.version, p.dscp(), p.protocol), (6, 10, 6));
        assert_eq!(p.header_len, 40 + 8 + 8);
        assert!(p.is_first_fragment() && p.is_fragment());
        assert_eq!(p.payload.len(), 22);
        assert_eq!(&p.payload[..2], &80u16.to_be_bytes());
        let (protocol, payload) = (p.protocol, p.payload.to_vec());
        // Agrees with etherparse's reading.
        out[48 + 3] &= !1;
        let e = etherparse::IpSlice::from_slice(&out).unwrap();
        assert_eq!(e.payload().ip_number.0, protocol);
        assert_eq!(e.payload().payload, &payload[..]);
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(IpPacket::parse(&[]), Err(WireError::Truncated));
        assert_eq!(IpPacket::parse(&[0x50; 40]), Err(WireError::Malformed));
        let mut b = udp4(0);
        b[2..4].copy_from_slice(&10u16.to_be_bytes()); // total length below the header
        assert_eq!(IpPacket::parse(&b), Err(WireError::BadLength));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes: Vec<u8>) {
            let _ = IpPacket::parse(&bytes);
            let _ = IpPacket::parse_lax(&bytes);
        }

        #[test]
        fn agrees_with_etherparse_on_what_both_read(bytes: Vec<u8>) {
            if let (Ok(p), Ok(e)) = (IpPacket::parse(&bytes), etherparse::IpSlice::from_slice(&bytes)) {
                if !p.is_fragment() && !e.is_fragmenting_payload() {
                    proptest::prop_assert_eq!(e.payload().ip_number.0, p.protocol);
                    proptest::prop_assert_eq!(e.payload().payload, p.payload);
                }
            }
        }
    }
}
