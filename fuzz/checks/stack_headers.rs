//! The checks of the `stack_headers` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: any bytes, read at once as each of the mslink-wire header views and reprs
//! (Ethernet, ETHDAA, IPv4, UDP, IPv6, TCP and its options, the version-blind IP reader;
//! docs/architecture.md, "Wire formats"). Invariants: no view or parse panics on any input,
//! and every header that parses emits back to a buffer that parses to the same repr. Returns
//! which readings succeeded.

use mslink_wire::eth::{DaaFrame, DaaRepr, EthFrame, EthRepr};
use mslink_wire::ip::IpPacket;
use mslink_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use mslink_wire::ipv6::{Ipv6Packet, Ipv6Repr};
use mslink_wire::tcp::{write_option, TcpPacket};
use mslink_wire::udp::{UdpPacket, UdpRepr};

/// Which readings of one input succeeded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// An Ethernet header.
    pub eth: bool,
    /// A DAA-extended Ethernet header.
    pub daa: bool,
    /// A whole IPv4 packet.
    pub ipv4: bool,
    /// A UDP datagram.
    pub udp: bool,
    /// An IPv6 packet.
    pub ipv6: bool,
    /// TCP options read from a TCP header (`None`: no TCP header).
    pub tcp_options: Option<usize>,
    /// A whole IP packet of either version.
    pub ip: bool,
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    if let Ok(r) = EthFrame::new_checked(data).and_then(|f| EthRepr::parse(&f)) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut EthFrame::new_unchecked(&mut b[..]));
        assert_eq!(
            EthRepr::parse(&EthFrame::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
        out.eth = true;
    }
    if let Ok(r) = DaaFrame::new_checked(data).and_then(|f| DaaRepr::parse(&f)) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut DaaFrame::new_unchecked(&mut b[..]));
        assert_eq!(
            DaaRepr::parse(&DaaFrame::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
        out.daa = true;
    }
    if let Ok(r) = Ipv4Packet::new_checked(data).and_then(|p| Ipv4Repr::parse(&p)) {
        // Options are not emitted: the round trip holds for the repr, not the bytes.
        let mut b = vec![0u8; r.buffer_len() + r.payload_len];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
        out.ipv4 = true;
    }
    if let Ok(r) = UdpPacket::new_checked(data).and_then(|p| UdpRepr::parse(&p)) {
        let mut b = vec![0u8; r.buffer_len() + r.payload_len];
        r.emit(&mut UdpPacket::new_unchecked(&mut b[..]));
        assert_eq!(
            UdpRepr::parse(&UdpPacket::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
        out.udp = true;
    }
    if let Ok(r) = Ipv6Packet::new_checked(data).and_then(|p| Ipv6Repr::parse(&p)) {
        let mut b = vec![0u8; r.buffer_len() + r.payload_len];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()),
            Ok(r)
        );
        out.ipv6 = true;
    }
    if let Ok(p) = TcpPacket::new_checked(data) {
        // Every option that reads re-emits to the same bytes.
        let mut n = 0;
        for o in p.options().flatten() {
            let mut b = vec![0u8; o.buffer_len()];
            write_option(&mut b, &o);
            let words = b.len().div_ceil(4);
            let mut h = vec![0u8; 20 + 4 * words];
            h[12] = ((5 + words) as u8) << 4;
            h[20..20 + b.len()].copy_from_slice(&b);
            let back = TcpPacket::new_unchecked(&h[..]);
            assert_eq!(back.options().next(), Some(Ok(o)));
            n += 1;
        }
        out.tcp_options = Some(n);
    }
    if let Ok(ip) = IpPacket::parse(data) {
        assert!(ip.header_len + ip.payload.len() <= data.len());
        assert_eq!(IpPacket::parse_lax(data), Ok(ip));
        out.ip = true;
    }
    out
}
