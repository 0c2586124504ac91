//! The simulator's packets: real IPv4/UDP, so the classifier sees real headers and a capture
//! of any interface is an ordinary one.
//!
//! Contract: [`build`] writes an IPv4 header (with checksum) and a UDP header (checksum 0,
//! allowed over IPv4) followed by a 16-byte stamp — flow index, sequence number, send time in
//! ns — padded to the requested size. [`stamp`] reads the stamp back, or `None` for anything
//! that is not one of ours.
//!
//! Flows and addresses. Every flow has its own endpoints, so no two flows share an
//! (address, port) pair and nothing wraps: flow `i` lies in address block
//! `b = i / FLOWS_PER_BLOCK` and at port offset `o = i % FLOWS_PER_BLOCK`. At node `n` it uses
//! the address 10.(b / 256).(b % 256).(n + 1) ([`address`]), sends from port
//! `SOURCE_PORT_BASE + o` ([`source_port`]) and, by default, to port `APP_PORT_BASE + o`
//! ([`app_port`]). The first 5,001 flows are block 0: node `n` is 10.0.0.(n + 1) as before.
//! A node thus answers to one address per block (as a host with many aliases, or the many
//! clients behind an access router); routing looks at the last octet only ([`destination`]).
//! [`flow_at`] reads the flow back from a source endpoint. The limits are [`MAX_FLOWS`]
//! flows and [`MAX_NODES`] nodes; `Scenario::validate` refuses more.

use mslink_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use mslink_wire::udp::{self, UdpPacket, UdpRepr};

/// IPv4 + UDP headers + stamp.
pub const MIN_PACKET: usize = 20 + 8 + 16;

/// Flow `i` sends from port `SOURCE_PORT_BASE + i % FLOWS_PER_BLOCK`. tshark 4 has no
/// dissector on 54329-60000 (`bench/tshark_port_probe.py`: every UDP port tried with this
/// simulator's packets, docs/simulator.md), so every flow's source reads as data.
pub const SOURCE_PORT_BASE: u16 = 55000;
/// A flow `i` with `port = 0` sends to port `APP_PORT_BASE + i % FLOWS_PER_BLOCK`: no
/// dissector on 47001-54327 either, so with the sources above a capture of any number of flows
/// reads as plain data. The old ports (5000 + i to, 40000 + i from) were dissected as TAPA,
/// CAPWAP, mDNS, CoAP, ... from the first flow on.
pub const APP_PORT_BASE: u16 = 48000;
/// Flows per address block: the ports 55000-60000 (and 48000-53000) that read as plain data.
pub const FLOWS_PER_BLOCK: usize = 5001;
/// Address blocks: the second and third octets of an address.
pub const BLOCKS: usize = 1 << 16;
/// Flows a scenario may have: every one with endpoints of its own.
pub const MAX_FLOWS: usize = FLOWS_PER_BLOCK * BLOCKS;
/// Nodes a path may have: the last octet of node `n`'s addresses is `n + 1`, at most 254.
pub const MAX_NODES: usize = 254;

/// The source port of flow `flow`.
pub fn source_port(flow: usize) -> u16 {
    SOURCE_PORT_BASE + (flow % FLOWS_PER_BLOCK) as u16
}

/// The default destination port of flow `flow`.
pub fn app_port(flow: usize) -> u16 {
    APP_PORT_BASE + (flow % FLOWS_PER_BLOCK) as u16
}

/// The flow whose source endpoint ([`address`] and [`source_port`]) is (`addr`, `port`), if
/// the port is a source port.
pub fn flow_at(addr: [u8; 4], port: u16) -> Option<usize> {
    let o = usize::from(port.checked_sub(SOURCE_PORT_BASE)?);
    let block = usize::from(addr[1]) << 8 | usize::from(addr[2]);
    (o < FLOWS_PER_BLOCK).then_some(block * FLOWS_PER_BLOCK + o)
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

/// The address of node `node` in the block of flow `flow`.
pub fn address(node: usize, flow: usize) -> [u8; 4] {
    debug_assert!(node < MAX_NODES && flow < MAX_FLOWS, "validated");
    let b = flow / FLOWS_PER_BLOCK;
    [10, (b >> 8) as u8, b as u8, node as u8 + 1]
}

/// Writes one packet of `len` bytes (at least [`MIN_PACKET`]) into `out` (cleared first).
#[allow(clippy::too_many_arguments)]
pub fn build(out: &mut Vec<u8>, len: usize, from: usize, to: usize, dscp: u8, port: u16, s: Stamp) {
    let len = len.max(MIN_PACKET);
    out.clear();
    out.resize(len, 0);
    let ip = Ipv4Repr {
        src: address(from, s.flow as usize),
        dst: address(to, s.flow as usize),
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
    usize::from(*p.get(19)?).checked_sub(1)
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

    #[test]
    fn every_flow_has_endpoints_of_its_own() {
        // Both sides of every block boundary, the old 16-bit wrap and the last flow.
        let flows = [
            0,
            1,
            5000,
            5001,
            5002,
            65535,
            65536,
            65537,
            1_000_000,
            MAX_FLOWS - 1,
        ];
        let mut seen = std::collections::HashSet::new();
        for f in flows {
            let (a, p) = (address(3, f), source_port(f));
            assert!(seen.insert((a, p)), "flow {f} shares {a:?}:{p}");
            assert_eq!(flow_at(a, p), Some(f));
            assert!((55000..=60000).contains(&p) && (48000..=53000).contains(&app_port(f)));
            let mut pk = Vec::new();
            let st = Stamp {
                flow: f as u32,
                seq: 0,
                sent_ns: 0,
            };
            build(&mut pk, 60, 3, 253, 0, app_port(f), st);
            assert_eq!(destination(&pk), Some(253));
            assert_eq!(&pk[12..16], &address(3, f));
        }
        assert_eq!(address(0, 5000), [10, 0, 0, 1]);
        assert_eq!(address(0, 65537), [10, 0, 13, 1]);
        assert_eq!(flow_at([10, 0, 0, 1], 54999), None);
        assert_eq!(flow_at([10, 0, 0, 1], 60001), None);
    }
}
