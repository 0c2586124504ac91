//! The LLM and ILLM stacks' frames are ordinary (issue 7, "Done when"): over an AF_PACKET socket
//! on one end of a veth pair, they exchange datagrams with a plain Linux UDP socket at the other
//! end. The test makes two network namespaces of its own (named after the process id), the veth
//! pair inside them and addresses only inside them, and removes the namespaces (and with them the
//! pair) when it ends, also on failure. Linux only; needs root (CAP_NET_ADMIN) and `ip`.

#![cfg(target_os = "linux")]

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use mslink_link::Instant;
use mslink_stack::afpacket::AfPacket;
use mslink_stack::{Architecture, Participants, Stack, StackConfig};

const OUR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const LINUX_MAC: &str = "02:00:00:00:00:02";

/// Two namespaces joined by a veth pair (`v0` in A, `v1` in B); deleted on drop.
struct Netns {
    a: String,
    b: String,
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("running ip");
    assert!(st.success(), "ip {} failed", args.join(" "));
}

impl Netns {
    fn create() -> Netns {
        let pid = std::process::id();
        let ns = Netns {
            a: format!("mslink-stk-a-{pid}"),
            b: format!("mslink-stk-b-{pid}"),
        };
        ip(&["netns", "add", &ns.a]);
        ip(&["netns", "add", &ns.b]);
        ip(&[
            "-n", &ns.a, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", &ns.b,
        ]);
        ip(&[
            "-n",
            &ns.a,
            "link",
            "set",
            "v0",
            "address",
            "02:00:00:00:00:01",
            "up",
        ]);
        ip(&["-n", &ns.b, "link", "set", "v1", "address", LINUX_MAC, "up"]);
        ip(&["-n", &ns.b, "link", "set", "lo", "up"]);
        ip(&["-n", &ns.b, "addr", "add", "10.77.0.2/24", "dev", "v1"]);
        // Our stack does not answer ARP: Linux is told our station address.
        ip(&[
            "-n",
            &ns.b,
            "neigh",
            "add",
            "10.77.0.1",
            "lladdr",
            "02:00:00:00:00:01",
            "dev",
            "v1",
            "nud",
            "permanent",
        ]);
        ns
    }

    /// Runs `f` in a thread that has entered namespace `name`.
    fn within<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{name}");
        std::thread::spawn(move || {
            let f_ns = File::open(&path).expect("opening the namespace");
            // SAFETY: setns on a valid namespace descriptor affects only this thread.
            let r = unsafe { libc::setns(f_ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("namespace thread")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

#[test]
fn llm_and_illm_talk_to_a_linux_udp_socket_over_veth() {
    let ns = Netns::create();
    let dev = Netns::within(&ns.a, || {
        AfPacket::open("v0", Duration::from_millis(200)).expect("AF_PACKET socket")
    });
    let sock = Netns::within(&ns.b, || {
        UdpSocket::bind("10.77.0.2:9000").expect("Linux UDP socket")
    });
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    for arch in [Architecture::Llm, Architecture::Illm] {
        let cfg = StackConfig {
            architecture: arch,
            station: OUR_MAC,
            address: [10, 77, 0, 1],
            ..Default::default()
        };
        let (mut st, ids) = Stack::udp_ip_eth(cfg);
        let linux_mac = [2, 0, 0, 0, 0, 2];
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
