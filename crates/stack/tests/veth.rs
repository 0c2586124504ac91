//! The LLM and ILLM stacks' frames are ordinary (issue 7, "Done when"): over an AF_PACKET socket
//! on one end of a veth pair, they exchange datagrams with a plain Linux UDP socket at the other
//! end. The test makes two unnamed network namespaces of its own (`mslink_stack::veth::pair`),
//! the veth pair inside them and addresses only inside them; the kernel removes the namespaces
//! (and with them the pair) when the test drops them, also on failure. Linux only; needs root
//! (CAP_NET_ADMIN).

// A test that drives real sockets and files: rule 1 (crates/stack/clippy.toml) binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![cfg(target_os = "linux")]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use mslink_link::Instant;
use mslink_stack::afpacket::AfPacket;
use mslink_stack::veth::{self, VethPair, MAC_A, MAC_B};
use mslink_stack::{Architecture, Participants, Stack, StackConfig};

const OUR_MAC: [u8; 6] = MAC_A;

/// The pair, plus Linux's side configured: an address on `v1` and our station in its
/// neighbour table (our stack does not answer ARP).
fn setup() -> VethPair {
    let ns = veth::pair().expect("namespaces and veth pair");
    ns.b.add_address("v1", [10, 77, 0, 2].into(), 24).unwrap();
    ns.b.add_neighbour("v1", [10, 77, 0, 1].into(), MAC_A)
        .unwrap();
    ns
}

#[test]
fn llm_and_illm_talk_to_a_linux_udp_socket_over_veth() {
    let ns = setup();
    let dev =
        ns.a.run(|| AfPacket::open("v0", Duration::from_millis(200)))
            .unwrap()
            .expect("AF_PACKET socket");
    let sock =
        ns.b.run(|| UdpSocket::bind("10.77.0.2:9000"))
            .unwrap()
            .expect("Linux UDP socket");
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    for arch in [Architecture::Llm, Architecture::Illm] {
        let cfg = StackConfig {
            architecture: arch,
            station: OUR_MAC,
            address: [10, 77, 0, 1],
            ..Default::default()
        };
        let (mut st, ids) = Stack::udp_ip_eth(cfg);
        let linux_mac = MAC_B;
        // e1 computes checksums (Linux verifies them); e2 receives Linux's datagrams without
        // verifying, since veth leaves the checksum of locally sent datagrams unfinished
        // (transmit checksum offload) and we have no ethtool here to switch that off.
        let p1 = Participants {
            remote_mac: linux_mac,
            remote_ip: [10, 77, 0, 2],
            local_port: 5000,
            remote_port: 9000,
            udp_checksum: true,
            ..Default::default()
        };
        let p2 = Participants {
            local_port: 5001,
            ..p1
        };
        let p2 = Participants {
            udp_checksum: false,
            ..p2
        };
        let (e1, _) = st.open(ids.udp, p1, 0, None).unwrap();
        let (e2, _) = st.open(ids.udp, p2, 0, None).unwrap();

        let msg = format!("hello linux from {}", arch.name());
        st.send(Instant::ZERO, e1, msg.as_bytes()).unwrap();
        assert_eq!(dev.transmit(&mut st).unwrap(), 1);
        let mut buf = [0u8; 2048];
        let (n, from) = sock
            .recv_from(&mut buf)
            .expect("Linux received our datagram");
        assert_eq!(&buf[..n], msg.as_bytes());
        assert_eq!(from, "10.77.0.1:5000".parse::<SocketAddr>().unwrap());

        let reply = vec![0x33u8; 1400];
        sock.send_to(&reply, "10.77.0.1:5001").unwrap();
        let mut got = None;
        for _ in 0..50 {
            dev.receive(Instant::ZERO, &mut st).unwrap();
            if let Some(d) = st.poll_deliver() {
                got = Some(d);
                break;
            }
        }
        let d = got.expect("our stack received Linux's datagram");
        assert_eq!(d.endpoint, e2);
        assert_eq!(d.data, reply);
    }
    drop(ns);
}
