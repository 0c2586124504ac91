//! The simulator's packets: real IPv4/UDP, so the classifier sees real headers and a capture
//! of any interface is an ordinary one.
//!
//! Contract: [`build`] writes an IPv4 header (with checksum) and a UDP header (checksum 0,
//! allowed over IPv4) followed by a 16-byte stamp — flow index, sequence number, send time in
//! ns — padded to the requested size. [`stamp`] reads the stamp back, or `None` for anything
//! that is not one of ours. Node `i` has address 10.0.0.(i+1).

use mslink_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use mslink_wire::udp::{self, UdpPacket, UdpRepr};

/// IPv4 + UDP headers + stamp.
pub const MIN_PACKET: usize = 20 + 8 + 16;

/// Flow `i` sends from port `SOURCE_PORT_BASE + i` (wrapping past 65535). tshark 4 has no
/// dissector on 54329-60000 (`bench/tshark_port_probe.py`: every UDP port tried with this
/// simulator's packets, docs/simulator.md), so the first 5,001 flows' sources read as data.
pub const SOURCE_PORT_BASE: u16 = 55000;
/// A flow `i` with `port = 0` sends to port `APP_PORT_BASE + i` (wrapping): no dissector on
/// 47001-54327 either, so with the sources above a capture of up to 5,001 flows reads as plain
/// data. The old ports (5000 + i to, 40000 + i from) were dissected as TAPA, CAPWAP, mDNS,
/// CoAP, ... from the first flow on.
pub const APP_PORT_BASE: u16 = 48000;

/// The source port of flow `flow`.
pub fn source_port(flow: usize) -> u16 {
    SOURCE_PORT_BASE.wrapping_add(flow as u16)
}

/// The default destination port of flow `flow`.
pub fn app_port(flow: usize) -> u16 {
    APP_PORT_BASE.wrapping_add(flow as u16)
}

/// What [`stamp`] reads from a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Index of the flow in the scenario.
    pub flow: u32,
    /// Packet number within the flow.
    pub seq: u32,
    /// Send time, ns.
    pub sent_ns: u64,
}

/// The address of node `i`.
pub fn address(node: usize) -> [u8; 4] {
    [10, (node >> 16) as u8, (node >> 8) as u8, node as u8 + 1]
}

/// Writes one packet of `len` bytes (at least [`MIN_PACKET`]) into `out` (cleared first).
#[allow(clippy::too_many_arguments)]
pub fn build(out: &mut Vec<u8>, len: usize, from: usize, to: usize, dscp: u8, port: u16, s: Stamp) {
    let len = len.max(MIN_PACKET);
    out.clear();
    out.resize(len, 0);
    let ip = Ipv4Repr {
        src: address(from),
        dst: address(to),
        protocol: 17,
        ttl: 64,
        tos: dscp << 2,
        ident: 0,
        dont_frag: true,
        reserved_flag: false,
        payload_len: len - ipv4::HEADER_LEN,
    };
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut out[..]));
    let udp = UdpRepr {
        src_port: source_port(s.flow as usize),
        dst_port: port,
        payload_len: len - ipv4::HEADER_LEN - udp::HEADER_LEN,
        checksum: 0,
    };
    udp.emit(&mut UdpPacket::new_unchecked(&mut out[ipv4::HEADER_LEN..]));
    out[28..32].copy_from_slice(&s.flow.to_be_bytes());
    out[32..36].copy_from_slice(&s.seq.to_be_bytes());
    out[36..44].copy_from_slice(&s.sent_ns.to_be_bytes());
}

/// The stamp of one of our packets.
pub fn stamp(p: &[u8]) -> Option<Stamp> {
    if p.len() < MIN_PACKET || p[0] != 0x45 || p[9] != 17 {
        return None;
    }
    Some(Stamp {
        flow: u32::from_be_bytes(p[28..32].try_into().ok()?),
        seq: u32::from_be_bytes(p[32..36].try_into().ok()?),
        sent_ns: u64::from_be_bytes(p[36..44].try_into().ok()?),
    })
}

/// The destination node of one of our packets.
pub fn destination(p: &[u8]) -> Option<usize> {
    let a = p.get(16..20)?;
    let n = (a[1] as usize) << 16 | (a[2] as usize) << 8 | a[3] as usize;
    n.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_ordinary_ipv4_udp() {
        let mut p = Vec::new();
        build(
            &mut p,
            100,
            0,
            2,
            46,
            5004,
            Stamp {
                flow: 3,
                seq: 9,
                sent_ns: 123,
            },
        );
        assert_eq!(p.len(), 100);
        assert_eq!(
            mslink_wire::checksum::checksum(&p[..20]),
            0,
            "header checksum verifies"
        );
        assert_eq!(
            stamp(&p),
            Some(Stamp {
                flow: 3,
                seq: 9,
                sent_ns: 123
            })
        );
        assert_eq!(destination(&p), Some(2));
        let k = mslink_link::classifier::FlowKey::parse(&p).unwrap();
        assert_eq!((k.dscp, k.protocol, k.ports), (46, 17, Some((55003, 5004))));
    }
}
