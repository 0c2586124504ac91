//! A tunnel end whose TUN device stays full (docs/architecture.md rule 13): it waits for the
//! device, keeps reading the socket, drops what exceeds the driver's backlog with a count,
//! and every packet its link delivered is written exactly once, in order, or counted as
//! dropped. The "TUN devices" are Unix packet pipes ([`PacketPipe`]), which really fill up
//! when nobody reads them (a TUN device almost never refuses a write); the UDP sockets are on
//! loopback, so the test needs no root.

// A system test that drives real sockets, threads and clocks: rule 1 (crates/tunnel/clippy.toml)
// binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![cfg(target_os = "linux")]

use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use mslink_io::device::{Device, PacketPipe};
use mslink_io::udp::UdpPort;
use mslink_link::config::LinkConfig;
use mslink_link::testkit::{ipv4_udp, udp_seq};
use mslink_tunnel::config::SessionConfig;
use mslink_tunnel::handshake::Credentials;
use mslink_tunnel::keys::Key;
use mslink_tunnel::rt::{self, Control, RunOptions};
use mslink_tunnel::Tunnel;

/// Reads every packet waiting in `pipe`.
fn read_all(pipe: &PacketPipe, into: &mut Vec<u32>) {
    let mut buf = vec![0u8; 2048];
    while let Ok(n) = pipe.read(&mut buf) {
        into.push(udp_seq(&buf[..n]));
    }
}

#[test]
fn a_full_tun_device_is_waited_for_and_what_it_cannot_take_is_counted() {
    let link: LinkConfig = toml::from_str("[[service]]\nname = 'raw'\nscheme = 'raw'").unwrap();
    let psk = Credentials::Psk { psk: Key([7; 32]) };
    let (sa, sb) = (
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        UdpSocket::bind("127.0.0.1:0").unwrap(),
    );
    let (aa, ab) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    let session = SessionConfig::default();
    let a = Tunnel::new(&session, psk, &link, Some(ab), [1; 32]).unwrap();
    let b = Tunnel::new(&session, psk, &link, Some(aa), [2; 32]).unwrap();
    let (dev_a, user_a) = PacketPipe::pair().unwrap();
    let (dev_b, user_b) = PacketPipe::pair().unwrap();
    let opts = |label: &str| RunOptions {
        stats_interval: None,
        handle_signals: false,
        label: label.into(),
    };
    let (ca, cb) = (Control::default(), Control::default());
    const N: u32 = 12_000;
    let mut received = Vec::new();
    let (oa, ob) = (opts("a"), opts("b"));
    std::thread::scope(|s| {
        // A port holds raw pointers for recvmmsg: each is made in the thread that uses it.
        fn port(sock: UdpSocket) -> UdpPort {
            UdpPort::new(sock, 8 << 20, true).unwrap()
        }
        let (da, db, oa, ob, ca2, cb2) = (&dev_a, &dev_b, &oa, &ob, &ca, &cb);
        let ta = s.spawn(move || rt::drive(a, da, &mut port(sa), oa, ca2));
        let tb = s.spawn(move || rt::drive(b, db, &mut port(sb), ob, cb2));
        // Send N packets into A while nobody reads B's device: it fills, and B's backlog
        // overflows.
        let mut next = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while next < N {
            match user_a.write(&ipv4_udp(next, 1028)) {
                Ok(_) => next += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_micros(200))
                }
                Err(e) => panic!("{e}"),
            }
            assert!(
                Instant::now() < deadline,
                "A's device never took {N} packets"
            );
        }
        // Until B's link has delivered everything A's link carried and stays still.
        let mut last = (u64::MAX, Instant::now());
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let d = cb.snapshot().tunnel.packets_delivered;
            if d != last.0 {
                last = (d, Instant::now());
            } else if last.1.elapsed() > Duration::from_millis(500) {
                break;
            }
            assert!(Instant::now() < deadline, "B never settled");
        }
        // Now read B's device: what waited goes out.
        let settle = Instant::now();
        while settle.elapsed() < Duration::from_secs(1) {
            read_all(&user_b, &mut received);
            std::thread::sleep(Duration::from_millis(5));
        }
        ca.stop();
        cb.stop();
        ta.join().unwrap().unwrap();
        tb.join().unwrap().unwrap();
    });
    read_all(&user_b, &mut received);
    let (sa, sb) = (ca.snapshot(), cb.snapshot());
    let t = &sb.tun;
    println!(
        "A read {} packets, its link carried them; B's link delivered {}: written {}, \
         dropped full {}, waits {}, received {}",
        sa.tun.packets_read,
        sb.tunnel.packets_delivered,
        t.packets_written,
        t.dropped_full,
        t.would_block,
        received.len()
    );
    assert_eq!(sa.tun.packets_read, u64::from(N));
    assert!(t.would_block > 0, "B's device never filled: {t:?}");
    assert!(t.dropped_full > 0, "B's backlog never overflowed: {t:?}");
    assert_eq!(t.write_errors + t.coalesce_errors, 0, "{t:?}");
    assert_eq!(
        t.packets_written + t.dropped_full,
        sb.tunnel.packets_delivered,
        "every delivered packet written or counted: {t:?}"
    );
    assert_eq!(received.len() as u64, t.packets_written);
    assert!(
        received.windows(2).all(|w| w[0] < w[1]),
        "written once, in order"
    );
}
