//! IPv4 and IPv6 packets for the fuzz seeds, built with mslink-wire's own reprs and checksum
//! code, so a seed is what the project itself would send.
//!
//! Contract: every builder returns a whole, valid packet (length fields equal to the bytes,
//! IPv4 header checksum and TCP/UDP checksums filled in) unless its name says otherwise; the
//! addresses are the documentation ones below. Deterministic: no randomness, no clock.

use mslink_wire::checksum::pseudo_header;
use mslink_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use mslink_wire::ipv6::{Ipv6Packet, Ipv6Repr};
use mslink_wire::tcp::{write_option, TcpOption, TcpPacket, TcpRepr};
use mslink_wire::udp::{UdpPacket, UdpRepr};

/// IPv4 source address.
pub const SRC4: [u8; 4] = [192, 0, 2, 1];
/// IPv4 destination address.
pub const DST4: [u8; 4] = [192, 0, 2, 2];
/// IPv6 source address (2001:db8::1).
pub const SRC6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
/// IPv6 destination address (2001:db8::2).
pub const DST6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// IP protocol number of TCP.
pub const TCP: u8 = 6;
/// IP protocol number of UDP.
pub const UDP: u8 = 17;

/// `n` bytes of recognisable payload.
pub fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// A UDP header and payload, checksum not yet filled in.
pub fn udp(src_port: u16, dst_port: u16, data: &[u8]) -> Vec<u8> {
    let r = UdpRepr {
        src_port,
        dst_port,
        payload_len: data.len(),
        checksum: 0,
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut UdpPacket::new_unchecked(&mut b[..]));
    b.extend_from_slice(data);
    b
}

/// The fixed fields of a TCP header for [`tcp`].
#[derive(Clone, Copy, Debug)]
pub struct Tcp {
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
}

/// A TCP header with `options` (padded with End of option list to a multiple of four bytes)
/// and payload, checksum not yet filled in.
pub fn tcp(h: Tcp, options: &[TcpOption], data: &[u8]) -> Vec<u8> {
    let mut opts = Vec::new();
    for o in options {
        let mut b = vec![0u8; o.buffer_len()];
        write_option(&mut b, o);
        opts.extend_from_slice(&b);
    }
    opts.resize(opts.len().div_ceil(4) * 4, 0);
    let r = TcpRepr {
        src_port: h.src_port,
        dst_port: h.dst_port,
        seq: h.seq,
        ack: h.ack,
        flags: h.flags,
        window: 65535,
        urgent: 0,
        options_len: opts.len(),
    };
    let mut b = vec![0u8; r.buffer_len()];
    let mut p = TcpPacket::new_unchecked(&mut b[..]);
    r.emit(&mut p);
    p.options_mut().copy_from_slice(&opts);
    b.extend_from_slice(data);
    b
}

/// Fills in the TCP or UDP checksum of `transport` (other protocols are left alone).
pub fn fill_l4_checksum(src: &[u8], dst: &[u8], proto: u8, transport: &mut [u8]) {
    let at = match proto {
        TCP => 16,
        UDP => 6,
        _ => return,
    };
    transport[at..at + 2].copy_from_slice(&[0, 0]);
    let mut s = pseudo_header(src, dst, proto, transport.len());
    s.add(transport);
    let c = match s.checksum() {
        0 if proto == UDP => 0xffff,
        c => c,
    };
    transport[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Header fields of an IPv4 packet for [`ipv4_with`].
#[derive(Clone, Copy, Debug)]
pub struct V4 {
    /// Type of service (DSCP and ECN).
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// The flags and fragment offset field as on the wire (e.g. 0x4000: don't fragment).
    pub flags_offset: u16,
}

impl Default for V4 {
    fn default() -> Self {
        V4 {
            tos: 0,
            ident: 1,
            flags_offset: 0x4000,
        }
    }
}

/// An IPv4 packet: `h`, `options` (a multiple of four bytes), protocol `proto`, and
/// `transport`, whose TCP/UDP checksum is filled in unless the packet is a later fragment.
pub fn ipv4_with(h: V4, options: &[u8], proto: u8, transport: &[u8]) -> Vec<u8> {
    assert!(options.len() % 4 == 0 && options.len() <= 40);
    let hl = 20 + options.len();
    let r = Ipv4Repr {
        src: SRC4,
        dst: DST4,
        protocol: proto,
        ttl: 64,
        tos: h.tos,
        ident: h.ident,
        dont_frag: false,
        reserved_flag: false,
        payload_len: transport.len(),
    };
    let mut b = vec![0u8; hl + transport.len()];
    let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
    r.emit(&mut p);
    p.set_version_ihl(hl);
    p.set_total_len((hl + transport.len()) as u16);
    p.set_flags_offset(h.flags_offset);
    b[20..hl].copy_from_slice(options);
    b[hl..].copy_from_slice(transport);
    if h.flags_offset & 0x1fff == 0 {
        // A later fragment carries no transport header.
        fill_l4_checksum(&SRC4, &DST4, proto, &mut b[hl..]);
    }
    Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
    b
}

/// An IPv4 packet with type of service `tos` (no options, don't fragment).
pub fn ipv4(tos: u8, proto: u8, transport: &[u8]) -> Vec<u8> {
    ipv4_with(
        V4 {
            tos,
            ..V4::default()
        },
        &[],
        proto,
        transport,
    )
}

/// An IPv6 packet with traffic class `tc`: the fixed header (next header `first`), the
/// extension headers `ext` (already chained, the last one naming `proto`), then `transport`,
/// whose checksum is filled in if `proto` is TCP or UDP (pass another number to leave the
/// bytes as they are, e.g. for a later fragment).
pub fn ipv6_with(tc: u8, first: u8, ext: &[u8], proto: u8, transport: &[u8]) -> Vec<u8> {
    let r = Ipv6Repr {
        src: SRC6,
        dst: DST6,
        next_header: first,
        hop_limit: 64,
        traffic_class: tc,
        flow_label: 0x12345,
        payload_len: ext.len() + transport.len(),
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
    b.extend_from_slice(ext);
    let mut t = transport.to_vec();
    fill_l4_checksum(&SRC6, &DST6, proto, &mut t);
    b.extend_from_slice(&t);
    b
}

/// An IPv6 packet without extension headers.
pub fn ipv6(tc: u8, proto: u8, transport: &[u8]) -> Vec<u8> {
    ipv6_with(tc, proto, &[], proto, transport)
}
