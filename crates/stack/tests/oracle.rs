//! Our LLM/ILLM frames are ordinary Ethernet/IPv4/UDP: etherparse (a test oracle, not a
//! dependency of the core) parses them with valid checksums, and frames etherparse builds are
//! delivered by our stacks. DAA frames parse as Ethernet with the local experimental ethertype.

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};
use mslink_link::Instant;
use mslink_stack::{Architecture, Participants, Stack, StackConfig};

const A_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const B_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const A_IP: [u8; 4] = [10, 0, 0, 1];
const B_IP: [u8; 4] = [10, 0, 0, 2];

fn stack(arch: Architecture, ck: bool) -> (Stack, mslink_stack::EndpointId) {
    let cfg = StackConfig {
        architecture: arch,
        ..Default::default()
    };
    let (mut s, ids) = Stack::udp_ip_eth(cfg);
    let p = Participants {
        remote_mac: B_MAC,
        remote_ip: B_IP,
        local_port: 4000,
        remote_port: 53,
        remote_app: 8,
        udp_checksum: ck,
        ..Default::default()
    };
    let (e, _) = s.open(ids.udp, p, 0, Some(7)).unwrap();
    (s, e)
}

#[test]
fn our_frames_parse_with_etherparse() {
    for arch in [Architecture::Llm, Architecture::Illm] {
        for ck in [false, true] {
            for len in [0usize, 1, 17, 100, 1400, 1472] {
                let (mut s, e) = stack(arch, ck);
                let data: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
                s.send(Instant::ZERO, e, &data).unwrap();
                let mut buf = [0u8; 1600];
                let n = s.poll_transmit(Instant::ZERO, &mut buf).unwrap();
                assert_eq!(n, (14 + 28 + len).max(60));
                let p = SlicedPacket::from_ethernet(&buf[..n]).unwrap();
                let Some(etherparse::LinkSlice::Ethernet2(eth)) = p.link else {
                    panic!("not Ethernet II")
                };
                let eth = eth.to_header();
                assert_eq!((eth.source, eth.destination), (A_MAC, B_MAC));
                let Some(NetSlice::Ipv4(ip)) = p.net else {
                    panic!("not IPv4")
                };
                let iph = ip.header().to_header();
                assert_eq!((iph.source, iph.destination), (A_IP, B_IP));
                assert_eq!(iph.calc_header_checksum(), iph.header_checksum);
                let Some(TransportSlice::Udp(u)) = p.transport else {
                    panic!("not UDP")
                };
                assert_eq!((u.source_port(), u.destination_port()), (4000, 53));
                assert_eq!(u.payload(), &data[..]);
                let uh = u.to_header();
                if ck {
                    assert_eq!(uh.calc_checksum_ipv4(&iph, &data).unwrap(), uh.checksum);
                } else {
                    assert_eq!(uh.checksum, 0);
                }
            }
        }
    }
}

#[test]
fn etherparse_frames_are_delivered() {
    for arch in [Architecture::Llm, Architecture::Illm] {
        // Receiver is B; the frame comes from A's port 53 to B's port 4000.
        let cfg = StackConfig {
            architecture: arch,
            station: B_MAC,
            address: B_IP,
            ..Default::default()
        };
        let (mut s, ids) = Stack::udp_ip_eth(cfg);
        let p = Participants {
            remote_mac: A_MAC,
            remote_ip: A_IP,
            local_port: 4000,
            remote_port: 53,
            udp_checksum: true,
            ..Default::default()
        };
        let (e, _) = s.open(ids.udp, p, 0, None).unwrap();
        for len in [1usize, 500, 1400] {
            let data = vec![0xa5u8; len];
            let b = PacketBuilder::ethernet2(A_MAC, B_MAC)
                .ipv4(A_IP, B_IP, 64)
                .udp(53, 4000);
            let mut frame = Vec::new();
            b.write(&mut frame, &data).unwrap();
            frame.resize(frame.len().max(60), 0);
            s.handle_frame(Instant::ZERO, &frame);
            let d = s.poll_deliver().expect("delivered");
            assert_eq!((d.endpoint, d.data), (e, data));
        }
        assert_eq!(s.stats().dropped(), 0);
    }
}

#[test]
fn daa_frames_are_ethernet_with_experimental_type() {
    let (mut s, e) = stack(Architecture::Daa, true);
    s.send(Instant::ZERO, e, b"rt").unwrap();
    let mut buf = [0u8; 128];
    let n = s.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    let (eth, rest) = etherparse::Ethernet2Header::from_slice(&buf[..n]).unwrap();
    assert_eq!(eth.ether_type, etherparse::EtherType(0x88B5));
    assert_eq!(&rest[0..4], &8u32.to_be_bytes(), "peer's application id");
    assert_eq!(&rest[8..10], &[0x08, 0x00], "inner type IPv4");
    let (iph, _) = etherparse::Ipv4Header::from_slice(&rest[10..]).unwrap();
    assert_eq!(iph.destination, B_IP);
}
