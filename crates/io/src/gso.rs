//! TUN offloads, read side: the virtio-net header, checksum completion and segmentation of
//! GSO super-packets into the MTU-sized IP packets the emulated link carries.
//!
//! Contract (sans-IO: bytes in, bytes out). A TUN device opened with `IFF_VNET_HDR` puts a
//! 10-byte `struct virtio_net_hdr` (virtio spec 1.2 §5.1.6, little-endian once `TUNSETVNETLE`
//! is set) before every packet: `flags` (u8), `gso_type` (u8), `hdr_len`, `gso_size`,
//! `csum_start`, `csum_offset` (le16 each). [`process`] takes one such read and hands each
//! resulting IP packet to `emit`, exactly as the kernel would have put them on a device
//! without offloads:
//!
//! * `gso_type == NONE`: one packet. With `VIRTIO_NET_HDR_F_NEEDS_CSUM`, the checksum field at
//!   `csum_start + csum_offset` holds the pseudo-header sum and the one's-complement sum from
//!   `csum_start` to the end of the packet is still to be added (spec §5.1.6.2); it is completed
//!   as Linux's `skb_checksum_help` does (net/core/dev.c: a result of 0 is written as 0xffff,
//!   `CSUM_MANGLED_0`).
//! * `TCPV4` / `TCPV6` (ECN bit allowed): a TCP super-packet whose payload is cut into
//!   `gso_size` pieces, as Linux's `tcp_gso_segment` (net/ipv4/tcp_offload.c) with
//!   `inet_gso_segment` / `ipv6_gso_segment` do it: every segment gets a copy of the IP and
//!   TCP headers; IPv4 total length, identification (the super-packet's, plus the segment
//!   index, modulo 2^16) and header checksum, or IPv6 payload length; TCP sequence number plus
//!   the bytes before it; FIN and PSH only on the last segment, CWR only on the first; a full
//!   TCP checksum (RFC 793 §3.1 / RFC 1071, pseudo-header RFC 791 or RFC 8200 §8.1). A
//!   super-packet no longer than one segment is passed whole (its checksum completed), as
//!   `tcp_gso_segment` returns it unsegmented.
//! * `UDP_L4` (USO): the same for UDP (`__udp_gso_segment`, net/ipv4/udp_offload.c): each
//!   segment gets the UDP header with its own length and checksum (0 written as 0xffff).
//!
//! Everything is validated before the first `emit`: a short read, an unknown `gso_type`, a
//! checksum offset outside the packet, an IP or transport header that does not fit, a length
//! field that disagrees with the read, IPv6 extension headers or an IPv4 fragment in a GSO
//! packet give an [`OffloadError`] and no output, so the caller can count it and pass the
//! bytes on whole (the link then refuses or carries them, and the accounting still holds).
//! Nothing here panics on any input.

use mslink_wire::checksum::{pseudo_header, Sum};
use mslink_wire::ipv4::{self, Ipv4Packet};
use mslink_wire::ipv6::{self, Ipv6Packet};
use mslink_wire::tcp::TcpPacket;
use mslink_wire::{udp, WireError};

/// Bytes of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum from `csum_start` on is still to be added.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4`.
pub const GSO_UDP_L4: u8 = 5;
/// `VIRTIO_NET_HDR_GSO_ECN`: the TCP super-packet carries ECN (CWR on its first segment).
pub const GSO_ECN: u8 = 0x80;

const TCP: u8 = 6;
const UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// A parsed virtio-net header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_F_*` bits (unknown bits are kept).
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*`.
    pub gso_type: u8,
    /// Length of the headers (a hint; not relied on when reading).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where checksumming starts, from the start of the IP packet.
    pub csum_start: u16,
    /// Where the checksum goes, from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Parses the first [`VNET_HDR_LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<VnetHdr, OffloadError> {
        let b: &[u8; VNET_HDR_LEN] = b
            .get(..VNET_HDR_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(OffloadError::ShortRead { len: b.len() })?;
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Ok(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        })
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }
}

/// Why a read could not be turned into IP packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// The read is shorter than the virtio-net header.
    #[error("read of {len} bytes is shorter than the 10-byte virtio_net_hdr")]
    ShortRead {
        /// Bytes read.
        len: usize,
    },
    /// A `gso_type` this device never enabled.
    #[error("virtio_net_hdr gso_type {0:#04x} is not NONE, TCPV4, TCPV6 or UDP_L4")]
    GsoType(u8),
    /// `csum_start + csum_offset + 2` is past the end of the packet.
    #[error("csum_start {start} + csum_offset {offset} + 2 is past the {len}-byte packet")]
    CsumRange {
        /// `csum_start`.
        start: u16,
        /// `csum_offset`.
        offset: u16,
        /// Packet length.
        len: usize,
    },
    /// The GSO packet itself is not what its header says.
    #[error("GSO packet of {len} bytes: {what}")]
    Packet {
        /// Packet length.
        len: usize,
        /// What is wrong.
        what: &'static str,
    },
}

/// What one read gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Processed {
    /// One packet, as read (no checksum to complete).
    Plain,
    /// One packet whose partial checksum was completed.
    Checksummed,
    /// A GSO super-packet, cut into this many packets.
    Segmented(usize),
}

/// The pseudo-header sum of an IPv4 or IPv6 packet `ip` for transport protocol `proto` and a
/// transport length `len` (RFC 793 §3.1, RFC 768, RFC 8200 §8.1). `ip` must hold the whole
/// fixed IP header.
pub(crate) fn pseudo(ip: &[u8], proto: u8, len: usize) -> Sum {
    if ip[0] >> 4 == 4 {
        pseudo_header(&ip[12..16], &ip[16..20], proto, len)
    } else {
        pseudo_header(&ip[8..24], &ip[24..40], proto, len)
    }
}

/// The transport checksum of the IP packet `ip` whose transport header starts at `t` (the
/// checksum field taken as it is: zero it first to compute, keep it to verify).
pub(crate) fn transport_sum(ip: &[u8], t: usize, proto: u8) -> Sum {
    let mut s = pseudo(ip, proto, ip.len() - t);
    s.add(&ip[t..]);
    s
}

/// Sets the IPv4 header checksum of `h` (the whole header, options included).
fn fill_ipv4_checksum(h: &mut [u8]) {
    Ipv4Packet::new_unchecked(h).fill_checksum();
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn put16(b: &mut [u8], i: usize, v: u16) {
    b[i..i + 2].copy_from_slice(&v.to_be_bytes());
}

/// Where the parts of a validated GSO packet are.
struct Layout {
    v4: bool,
    /// IP header length.
    l3: usize,
    /// IP + transport header length.
    hl: usize,
    proto: u8,
    gso: usize,
}

fn bad(len: usize, what: &'static str) -> OffloadError {
    OffloadError::Packet { len, what }
}

fn layout(h: &VnetHdr, p: &[u8]) -> Result<Layout, OffloadError> {
    let len = p.len();
    let proto = match h.gso_type & !GSO_ECN {
        GSO_TCPV4 | GSO_TCPV6 => TCP,
        _ => UDP,
    };
    let v4 = match (p.first().map(|b| b >> 4), h.gso_type & !GSO_ECN) {
        (Some(4), GSO_TCPV4 | GSO_UDP_L4) => true,
        (Some(6), GSO_TCPV6 | GSO_UDP_L4) => false,
        _ => return Err(bad(len, "IP version does not match gso_type")),
    };
    let l3 = if v4 {
        let ip = Ipv4Packet::new_checked(p).map_err(|e| match e {
            WireError::Truncated if len < ipv4::HEADER_LEN => {
                bad(len, "shorter than an IPv4 header")
            }
            _ => bad(len, "IPv4 header length out of range"),
        })?;
        if usize::from(ip.total_len()) != len {
            return Err(bad(len, "IPv4 total length differs from the read"));
        }
        if ip.flags_offset() & ipv4::FRAGMENT_MASK != 0 {
            return Err(bad(len, "IPv4 fragment"));
        }
        if ip.protocol() != proto {
            return Err(bad(len, "IPv4 protocol does not match gso_type"));
        }
        ip.header_len()
    } else {
        let ip = Ipv6Packet::new_checked(p).map_err(|_| bad(len, "shorter than an IPv6 header"))?;
        if usize::from(ip.payload_len()) + ipv6::HEADER_LEN != len {
            return Err(bad(len, "IPv6 payload length differs from the read"));
        }
        if ip.next_header() != proto {
            return Err(bad(len, "IPv6 extension headers or wrong next header"));
        }
        ipv6::HEADER_LEN
    };
    let l4 = if proto == TCP {
        match TcpPacket::new_checked(&p[l3..]) {
            Ok(t) => t.header_len(),
            Err(WireError::Malformed) => return Err(bad(len, "TCP data offset below 5")),
            Err(_) if p.len() < l3 + 13 => return Err(bad(len, "TCP header past the end")),
            Err(_) => return Err(bad(len, "transport header past the end")),
        }
    } else {
        udp::HEADER_LEN
    };
    let hl = l3 + l4;
    if hl > len {
        return Err(bad(len, "transport header past the end"));
    }
    let csum_offset = if proto == TCP { 16 } else { 6 };
    if h.flags & F_NEEDS_CSUM == 0
        || usize::from(h.csum_start) != l3
        || usize::from(h.csum_offset) != csum_offset
    {
        return Err(bad(len, "GSO without NEEDS_CSUM at the transport checksum"));
    }
    if h.gso_size == 0 {
        return Err(bad(len, "gso_size 0"));
    }
    Ok(Layout {
        v4,
        l3,
        hl,
        proto,
        gso: usize::from(h.gso_size),
    })
}

/// Completes a partial checksum in place, as `skb_checksum_help` does: the sum from `start`
/// to the end, the field's partial sum included where it lies, goes in the field.
fn complete(p: &mut [u8], start: usize, at: usize) {
    let mut sum = Sum::default();
    sum.add(&p[start..]);
    let c = sum.checksum();
    put16(p, at, if c == 0 { 0xffff } else { c });
}

/// Turns one TUN read (`read`: virtio-net header then packet) into IP packets for `emit`;
/// `scratch` holds segments while they are built. See the module contract.
pub fn process(
    read: &mut [u8],
    scratch: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]),
) -> Result<Processed, OffloadError> {
    let h = VnetHdr::parse(read)?;
    let p = &mut read[VNET_HDR_LEN..];
    let len = p.len();
    match h.gso_type & !GSO_ECN {
        GSO_NONE => {
            if h.flags & F_NEEDS_CSUM == 0 {
                emit(p);
                return Ok(Processed::Plain);
            }
            let start = usize::from(h.csum_start);
            let at = start + usize::from(h.csum_offset);
            if at + 2 > len {
                return Err(OffloadError::CsumRange {
                    start: h.csum_start,
                    offset: h.csum_offset,
                    len,
                });
            }
            complete(p, start, at);
            emit(p);
            Ok(Processed::Checksummed)
        }
        GSO_TCPV4 | GSO_TCPV6 | GSO_UDP_L4 => {
            if h.gso_type == GSO_UDP_L4 | GSO_ECN {
                return Err(OffloadError::GsoType(h.gso_type));
            }
            let l = layout(&h, p)?;
            let payload = len - l.hl;
            let csum_at = l.l3 + if l.proto == TCP { 16 } else { 6 };
            if payload <= l.gso {
                complete(p, l.l3, csum_at);
                emit(p);
                return Ok(Processed::Checksummed);
            }
            let n = payload.div_ceil(l.gso);
            let id0 = be16(p, 4);
            let seq0 = if l.proto == TCP {
                u32::from_be_bytes(p[l.l3 + 4..l.l3 + 8].try_into().expect("4 bytes"))
            } else {
                0
            };
            let p = &*p;
            for k in 0..n {
                let off = l.hl + k * l.gso;
                let body = &p[off..(off + l.gso).min(len)];
                let seg_len = l.hl + body.len();
                scratch.clear();
                scratch.extend_from_slice(&p[..l.hl]);
                scratch.extend_from_slice(body);
                let s = &mut scratch[..];
                if l.v4 {
                    put16(s, 2, seg_len as u16);
                    put16(s, 4, id0.wrapping_add(k as u16));
                    fill_ipv4_checksum(&mut s[..l.l3]);
                } else {
                    put16(s, 4, (seg_len - 40) as u16);
                }
                let t = l.l3;
                if l.proto == TCP {
                    let seq = seq0.wrapping_add((k * l.gso) as u32);
                    s[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
                    if k + 1 < n {
                        s[t + 13] &= !(TCP_FIN | TCP_PSH);
                    }
                    if k > 0 {
                        s[t + 13] &= !TCP_CWR;
                    }
                    put16(s, t + 16, 0);
                    let c = transport_sum(s, t, TCP).checksum();
                    put16(s, t + 16, c);
                } else {
                    put16(s, t + 4, (seg_len - t) as u16);
                    put16(s, t + 6, 0);
                    let c = transport_sum(s, t, UDP).checksum();
                    put16(s, t + 6, if c == 0 { 0xffff } else { c });
                }
                emit(s);
            }
            Ok(Processed::Segmented(n))
        }
        _ => Err(OffloadError::GsoType(h.gso_type)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// RFC 1071 §4.1's reference loop, 16 bits at a time: the independent check.
    pub(crate) fn rfc1071(chunks: &[&[u8]]) -> u16 {
        let bytes: Vec<u8> = chunks.concat();
        let mut s: u32 = 0;
        let mut i = 0;
        while i + 1 < bytes.len() {
            s += u32::from(bytes[i]) << 8 | u32::from(bytes[i + 1]);
            i += 2;
        }
        if i < bytes.len() {
            s += u32::from(bytes[i]) << 8;
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// True if the IP header and transport checksums of `p` verify by RFC 1071's loop.
    pub(crate) fn verifies(p: &[u8]) -> bool {
        let (l3, proto, src_dst): (usize, u8, &[u8]) = if p[0] >> 4 == 4 {
            let ihl = usize::from(p[0] & 15) * 4;
            if rfc1071(&[&p[..ihl]]) != 0 {
                return false;
            }
            (ihl, p[9], &p[12..20])
        } else {
            (40, p[6], &p[8..40])
        };
        let tl = ((p.len() - l3) as u32).to_be_bytes();
        let pseudo: [&[u8]; 4] = [
            src_dst,
            &[0, proto],
            &tl[if p[0] >> 4 == 4 { 2 } else { 0 }..],
            &p[l3..],
        ];
        rfc1071(&pseudo) == 0
    }

    /// A TCP packet (IPv4 or IPv6) with `payload`, ACK|`flags`, timestamps option, correct
    /// checksums.
    pub(crate) fn tcp(v6: bool, seq: u32, id: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 32];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5201u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&777u32.to_be_bytes());
        t[12] = 8 << 4;
        t[13] = 0x10 | flags;
        t[14..16].copy_from_slice(&512u16.to_be_bytes());
        t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3]);
        t.extend_from_slice(payload);
        let mut p = if v6 {
            let mut h = vec![0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(t.len() as u16).to_be_bytes());
            h[6] = TCP;
            h[7] = 64;
            h[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            h[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            h
        } else {
            let mut h = vec![0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[6] = 0x40;
            h[8] = 64;
            h[9] = TCP;
            h[12..16].copy_from_slice(&[10, 0, 0, 2]);
            h[16..20].copy_from_slice(&[10, 0, 0, 1]);
            let c = rfc1071(&[&h[..]]);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            h
        };
        let l3 = p.len();
        p.extend_from_slice(&t);
        let c = transport_sum(&p, l3, TCP).checksum();
        p[l3 + 16..l3 + 18].copy_from_slice(&c.to_be_bytes());
        assert!(verifies(&p));
        p
    }

    /// What the kernel hands over for a TSO super-packet: header, then the packet with the
    /// pseudo-header sum (full length) in the checksum field.
    pub(crate) fn gso_read(super_packet: &[u8], gso_size: u16) -> Vec<u8> {
        let v6 = super_packet[0] >> 4 == 6;
        let l3 = if v6 { 40 } else { 20 };
        let mut p = super_packet.to_vec();
        let tl = p.len() - l3;
        let ps = pseudo(&p, TCP, tl).fold();
        p[l3 + 16..l3 + 18].copy_from_slice(&ps.to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: (l3 + 32) as u16,
            gso_size,
            csum_start: l3 as u16,
            csum_offset: 16,
        };
        [&h.to_bytes()[..], &p].concat()
    }

    fn run(read: &[u8]) -> (Result<Processed, OffloadError>, Vec<Vec<u8>>) {
        let mut r = read.to_vec();
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let res = process(&mut r, &mut scratch, &mut |p| out.push(p.to_vec()));
        (res, out)
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn tso_super_packet_cuts_like_the_kernel() {
        for v6 in [false, true] {
            let data = payload(4000);
            let sp = tcp(v6, 0xffff_f000, 0xfffe, TCP_PSH | TCP_FIN | TCP_CWR, &data);
            let (res, out) = run(&gso_read(&sp, 1448));
            assert_eq!(res, Ok(Processed::Segmented(3)));
            let l3 = if v6 { 40 } else { 20 };
            let mut got = Vec::new();
            for (k, s) in out.iter().enumerate() {
                assert!(verifies(s), "segment {k} checksums");
                let t = &s[l3..];
                let seq = u32::from_be_bytes(t[4..8].try_into().unwrap());
                assert_eq!(seq, 0xffff_f000u32.wrapping_add(1448 * k as u32));
                let flags = t[13];
                assert_eq!(flags & TCP_CWR != 0, k == 0, "CWR only on the first");
                assert_eq!(
                    flags & (TCP_PSH | TCP_FIN) != 0,
                    k == 2,
                    "PSH/FIN only last"
                );
                assert_eq!(flags & 0x10, 0x10);
                if v6 {
                    assert_eq!(usize::from(be16(s, 4)), s.len() - 40);
                } else {
                    assert_eq!(usize::from(be16(s, 2)), s.len());
                    assert_eq!(be16(s, 4), 0xfffeu16.wrapping_add(k as u16));
                }
                assert_eq!(&t[20..32], &sp[l3 + 20..l3 + 32], "options copied");
                got.extend_from_slice(&t[32..]);
            }
            assert_eq!(out[0].len(), l3 + 32 + 1448);
            assert_eq!(out[2].len(), l3 + 32 + 4000 - 2 * 1448);
            assert_eq!(got, data);
        }
    }

    #[test]
    fn partial_checksum_is_completed() {
        let p = tcp(false, 1, 2, 0, &payload(99));
        let mut partial = p.clone();
        let ps = pseudo(&p, TCP, p.len() - 20).fold();
        partial[36..38].copy_from_slice(&ps.to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 20,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        let (res, out) = run(&[&h.to_bytes()[..], &partial].concat());
        assert_eq!(res, Ok(Processed::Checksummed));
        assert_eq!(out, vec![p.clone()]);
        // No flag: passed through untouched. A super-packet within one segment: completed.
        let (res, out) = run(&[&[0u8; 10][..], &partial].concat());
        assert_eq!((res, out), (Ok(Processed::Plain), vec![partial.clone()]));
        let (res, out) = run(&gso_read(&p, 1448));
        assert_eq!((res, out), (Ok(Processed::Checksummed), vec![p]));
    }

    #[test]
    fn udp_segmentation_offload() {
        let data = payload(2500);
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((28 + data.len()) as u16).to_be_bytes());
        p[4..6].copy_from_slice(&7u16.to_be_bytes());
        p[8] = 64;
        p[9] = UDP;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[10, 0, 0, 1]);
        let c = rfc1071(&[&p[..20]]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&5000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p.extend_from_slice(&data);
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_UDP_L4,
            hdr_len: 28,
            gso_size: 1000,
            csum_start: 20,
            csum_offset: 6,
        };
        let (res, out) = run(&[&h.to_bytes()[..], &p].concat());
        assert_eq!(res, Ok(Processed::Segmented(3)));
        let mut got = Vec::new();
        for (k, s) in out.iter().enumerate() {
            assert!(verifies(s));
            assert_eq!(usize::from(be16(s, 24)), s.len() - 20);
            assert_eq!(be16(s, 4), 7 + k as u16);
            got.extend_from_slice(&s[28..]);
        }
        assert_eq!(got, data);
    }

    #[test]
    fn malformed_reads_are_errors_not_panics() {
        let good = gso_read(&tcp(false, 1, 1, 0, &payload(3000)), 1000);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0u8; 5], "short read"),
            ([&good[..1], &[9], &good[2..]].concat(), "gso type 9"),
            ([&good[..4], &[0, 0], &good[6..]].concat(), "gso_size 0"),
            ([&good[..8], &[200, 0], &good[10..]].concat(), "csum_offset"),
            (good[..good.len() - 1].to_vec(), "total length"),
            ([&good[..10], &[0x46]].concat(), "truncated"),
            (
                [&[1, 0, 0, 0, 0, 0, 250, 0, 0, 0], &good[10..50]].concat(),
                "csum range",
            ),
        ];
        for (read, what) in cases {
            let (res, out) = run(&read);
            assert!(res.is_err(), "{what}: {res:?}");
            assert!(out.is_empty(), "{what}: nothing emitted on error");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any payload and segment size: the segments verify, carry consecutive sequence
        /// numbers and re-assemble to the payload.
        #[test]
        fn segments_reassemble(
            v6 in proptest::bool::ANY,
            len in 1usize..9000,
            gso in 1u16..3000,
            seq in proptest::num::u32::ANY,
            id in proptest::num::u16::ANY,
        ) {
            let data = payload(len);
            let sp = tcp(v6, seq, id, TCP_PSH, &data);
            let (res, out) = run(&gso_read(&sp, gso));
            let n = len.div_ceil(usize::from(gso));
            let l3 = if v6 { 40 } else { 20 };
            proptest::prop_assert_eq!(res.unwrap(), if n == 1 { Processed::Checksummed } else { Processed::Segmented(n) });
            let mut got = Vec::new();
            for s in &out {
                proptest::prop_assert!(verifies(s));
                let sq = u32::from_be_bytes(s[l3 + 4..l3 + 8].try_into().unwrap());
                proptest::prop_assert_eq!(sq, seq.wrapping_add(got.len() as u32));
                got.extend_from_slice(&s[l3 + 32..]);
            }
            proptest::prop_assert_eq!(got, data);
        }

        /// Arbitrary bytes never panic, and an error emits nothing.
        #[test]
        fn arbitrary_reads_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let (res, out) = run(&bytes);
            if res.is_err() {
                proptest::prop_assert!(out.is_empty());
            }
        }
    }
}
