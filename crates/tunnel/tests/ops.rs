//! Op-sequence test of the tunnel's real-time driver (issue 16: not only the sans-IO core):
//! two ends in real namespaces get a seeded random sequence of what happens to a deployed
//! tunnel (TCP transfers of any size, bursts of UDP datagrams of any size up to IP
//! fragmentation, hostile datagrams at the UDP port, idle pauses, either end restarting),
//! and after every step the driver must still run, account for every datagram it received,
//! keep its counters monotone, deliver TCP intact, and keep its memory bounded.
//! `MSLINK_TUNNEL_OPS` sets the number of steps (30 by default). Linux only; needs root.

// A system test that drives real sockets, files and clocks: rule 1 (crates/tunnel/clippy.toml)
// binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![cfg(target_os = "linux")]

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use common::*;
use mslink_tunnel::rt::Snapshot;
use rand::{Rng, RngCore, SeedableRng};

/// Every datagram an end received is rejected by cause or taken as something.
fn accounted(s: &Snapshot) -> bool {
    let t = &s.tunnel;
    t.datagrams_received
        == t.rejected.total()
            + t.frames_received
            + t.keepalives_received
            + t.handshakes_answered
            + t.handshakes_completed
            + t.cookies_received
}

/// Counters that only grow while an end runs.
fn grew(before: &Snapshot, after: &Snapshot) -> bool {
    let (a, b) = (&before.tunnel, &after.tunnel);
    b.datagrams_received >= a.datagrams_received
        && b.datagrams_sent >= a.datagrams_sent
        && b.rejected.total() >= a.rejected.total()
        && b.packets_in >= a.packets_in
        && b.packets_delivered >= a.packets_delivered
        && after.tun.packets_read >= before.tun.packets_read
        && after.tun.packets_written >= before.tun.packets_written
}

#[test]
fn a_random_sequence_of_operations_never_breaks_the_driver() {
    let steps: usize = std::env::var("MSLINK_TUNNEL_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let net = 211;
    let ns = veth_pair(net);
    let a_addr: SocketAddr = format!("192.168.{net}.1:51900").parse().unwrap();
    let b_addr: SocketAddr = format!("192.168.{net}.2:51900").parse().unwrap();
    let (ca, mut cb) = configs(net, b_addr, false);
    // Both ends know each other, so a restarted end is reachable at once.
    cb.peer = Some(a_addr);
    let mut b = End::start(&ns.b, "b", cb.clone());
    let mut a = End::start(&ns.a, "a", ca.clone());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let rss0 = rss_bytes();
    let mut port = 6000u16;
    let (mut last_a, mut last_b) = (a.stats(), b.stats());
    for step in 0..steps {
        let op = rng.gen_range(0..6);
        let what = match op {
            0 => {
                let len = rng.gen_range(1..(2 << 20));
                port += 1;
                let to = format!("10.{net}.0.2:{port}").parse().unwrap();
                let (sent, got, n) = tcp_transfer(&ns, to, len);
                assert_eq!((got, n), (sent, len), "step {step}: TCP of {len} B intact");
                format!("TCP {len} B")
            }
            1 => {
                let k = rng.gen_range(1..200);
                let sizes: Vec<usize> = (0..k).map(|_| rng.gen_range(0..3000)).collect();
                port += 1;
                let to: SocketAddr = format!("10.{net}.0.2:{port}").parse().unwrap();
                let sink = within(&ns.b, move || UdpSocket::bind(to).unwrap())
                    .join()
                    .unwrap();
                sink.set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                within(&ns.a, move || {
                    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
                    for n in sizes {
                        let _ = s.send_to(&vec![7u8; n], to);
                    }
                })
                .join()
                .unwrap();
                let mut got = 0;
                let mut buf = vec![0u8; 4096];
                while sink.recv(&mut buf).is_ok() {
                    got += 1;
                }
                assert!(got <= k, "step {step}: more datagrams than sent");
                format!("UDP burst of {k}, {got} arrived")
            }
            2 => {
                let k = rng.gen_range(1..50);
                let mut bad = Vec::new();
                for _ in 0..k {
                    let mut d = vec![0u8; rng.gen_range(0..200)];
                    rng.fill_bytes(&mut d);
                    if let Some(x) = d.first_mut() {
                        *x = rng.gen_range(0..6); // mostly our kinds
                    }
                    if d.len() > 1 {
                        d[1] = 2; // our version
                    }
                    bad.push(d);
                }
                let before = b.stats().tunnel.rejected.total();
                within(&ns.a, move || {
                    let s = UdpSocket::bind(format!("192.168.{net}.1:0")).unwrap();
                    for d in &bad {
                        s.send_to(d, b_addr).unwrap();
                    }
                })
                .join()
                .unwrap();
                std::thread::sleep(Duration::from_millis(200));
                let after = b.stats().tunnel.rejected.total();
                assert_eq!(
                    after - before,
                    k as u64,
                    "step {step}: each refused, by cause"
                );
                format!("{k} hostile datagrams")
            }
            3 => {
                let ms = rng.gen_range(0..400);
                std::thread::sleep(Duration::from_millis(ms));
                format!("idle {ms} ms")
            }
            4 => {
                drop(b);
                b = End::start(&ns.b, "b", cb.clone());
                last_b = b.stats();
                "B restarts".into()
            }
            _ => {
                drop(a);
                a = End::start(&ns.a, "a", ca.clone());
                last_a = a.stats();
                "A restarts".into()
            }
        };
        eprintln!("step {step}: {what}");
        std::thread::sleep(Duration::from_millis(100)); // snapshots settle
        let (sa, sb) = (a.stats(), b.stats());
        assert!(
            a.running() && b.running(),
            "step {step} ({what}): a driver stopped"
        );
        for (end, s) in [("A", &sa), ("B", &sb)] {
            assert!(accounted(s), "step {step} ({what}): {end} {:?}", s.tunnel);
            assert_eq!(
                s.tun.write_errors + s.tun.dropped_full,
                0,
                "step {step} ({what}): {end}"
            );
        }
        assert!(
            grew(&last_a, &sa) && grew(&last_b, &sb),
            "step {step} ({what})"
        );
        let rss = rss_bytes();
        assert!(
            rss < rss0 + (64 << 20),
            "step {step} ({what}): RSS {} MiB from {} MiB",
            rss >> 20,
            rss0 >> 20
        );
        (last_a, last_b) = (sa, sb);
    }
}
