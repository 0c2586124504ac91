//! Soak of the tunnel's real-time driver (issue 16): two ends in real namespaces carry TCP
//! and UDP as fast as they go, with the path's loss off and on, for `MSLINK_SOAK_SECS`
//! seconds per case (10 by default, in `./dev test`; `bench/soak.sh` runs 600). For each
//! case it checks what a user is promised:
//!
//! * memory stays flat: the process's RSS (both ends, the relay, the traffic) grows by less
//!   than [`RSS_BOUND`] from the end of the warm-up (the first quarter) to the end;
//! * every packet is accounted for: for UDP, each datagram the sender handed to the kernel is
//!   received, or counted by exactly one cause (a TUN queue drop, the link refusing it, the
//!   path losing it, a full socket buffer on the way); for both, every datagram an end received
//!   is a frame, a keepalive or a handshake message, and none was rejected;
//! * no TCP stall: the receiver's byte count grows in every [`STALL_WINDOW`], and it gets
//!   exactly the bytes sent.
//!
//! Each case prints one line (`-- --nocapture`) that docs/tunnel.md quotes. The path is a UDP
//! relay in B's namespace between the ends (`common::relay`), which drops a seeded fraction of
//! the data datagrams. Linux only; needs root.

// A system test that drives real sockets, files and clocks: rule 1 (crates/tunnel/clippy.toml)
// binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

/// Most the process's RSS may grow after the warm-up. Each end keeps at most 128 spare
/// buffers of 64 KiB (8 MiB) and its link's queues; the rest is the allocator's slack. The
/// leak this guards against grew by about a byte per byte carried (hundreds of MiB here).
const RSS_BOUND: u64 = 32 << 20;
/// TCP must make progress in every window this long.
const STALL_WINDOW: Duration = Duration::from_secs(2);
/// UDP payload bytes and the sender's pace.
const UDP_LEN: usize = 1000;
const UDP_PER_SEC: u64 = 20_000;

fn soak_secs() -> u64 {
    std::env::var("MSLINK_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Traffic {
    Tcp,
    Udp,
}

/// Datagrams the kernel dropped at the open UDP socket bound to `port` in `ns` (its receive
/// buffer was full): the last column of /proc/net/udp.
fn udp_socket_drops(ns: &mslink_netns::Netns, port: u16) -> u64 {
    let text = ns
        .run(|| std::fs::read_to_string("/proc/thread-self/net/udp"))
        .unwrap()
        .unwrap();
    let suffix = format!(":{port:04X}");
    text.lines()
        .skip(1)
        .find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| a.ends_with(&suffix))
        })
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or_else(|| panic!("no UDP socket on port {port}"))
}

/// Receive and transmit drops of device `dev` in `ns`.
fn dev_drops(ns: &mslink_netns::Netns, dev: &str) -> (u64, u64) {
    let c = mslink_netns::dev_counters(&ns.net_dev().unwrap(), dev).expect("device");
    (c[1], c[3])
}

/// Runs one case; returns the process's RSS after its warm-up and at its end.
fn soak(net: u8, traffic: Traffic, loss: f64, secs: u64) -> (u64, u64) {
    let ns = veth_pair(net);
    let relay_addr: SocketAddr = format!("192.168.{net}.2:51999").parse().unwrap();
    let b_addr: SocketAddr = format!("192.168.{net}.2:51900").parse().unwrap();
    let (ca, cb) = configs(net, relay_addr, false);
    let b = End::start(&ns.b, "b", cb);
    let switch = RelaySwitch::default();
    let s2 = switch.clone();
    let relay = within(&ns.b, move || {
        relay(
            UdpSocket::bind(relay_addr).expect("relay socket"),
            b_addr,
            s2,
            loss,
            false,
        )
    });
    let a = End::start(&ns.a, "a", ca);
    let to: SocketAddr = format!("10.{net}.0.2:7000").parse().unwrap();

    // The receiver: progress in bytes (TCP) or datagrams (UDP), read by the sampler below.
    let progress = Arc::new(AtomicU64::new(0));
    let p2 = progress.clone();
    let receiver = match traffic {
        Traffic::Tcp => {
            let l = within(&ns.b, move || TcpListener::bind(to).unwrap())
                .join()
                .unwrap();
            std::thread::spawn(move || -> Option<UdpSocket> {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(k) => p2.fetch_add(k as u64, Ordering::SeqCst),
                        Err(e) => panic!("TCP receive: {e}"),
                    };
                }
                None
            })
        }
        Traffic::Udp => {
            let s = within(&ns.b, move || UdpSocket::bind(to).unwrap())
                .join()
                .unwrap();
            s.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 2048];
                let quiet_for = Duration::from_secs(2);
                let mut last = Instant::now();
                // Until nothing arrives for two seconds after the sender stopped.
                while last.elapsed() < quiet_for || p2.load(Ordering::SeqCst) == 0 {
                    if s.recv(&mut buf).is_ok() {
                        p2.fetch_add(1, Ordering::SeqCst);
                        last = Instant::now();
                    }
                }
                // Kept open until its drop counter is read.
                Some(s)
            })
        }
    };
    let (_, a_tun_tx_drop0) = dev_drops(&ns.a, "mslt0");
    let (b_tun_rx_drop0, _) = dev_drops(&ns.b, "mslt0");

    // The sender, for `secs`.
    let until = Instant::now() + Duration::from_secs(secs);
    let sender = within(&ns.a, move || -> u64 {
        match traffic {
            Traffic::Tcp => {
                let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
                let chunk = vec![0x5au8; 1 << 16];
                let mut sent = 0u64;
                while Instant::now() < until {
                    s.write_all(&chunk).expect("TCP send");
                    sent += chunk.len() as u64;
                }
                sent
            }
            Traffic::Udp => {
                let s = UdpSocket::bind("0.0.0.0:0").unwrap();
                let d = vec![0x33u8; UDP_LEN];
                let start = Instant::now();
                let mut sent = 0u64;
                while Instant::now() < until {
                    let due = (start.elapsed().as_secs_f64() * UDP_PER_SEC as f64) as u64;
                    if sent >= due {
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    // A datagram the kernel refused (ENOBUFS) was never sent: not counted.
                    if s.send_to(&d, to).is_ok() {
                        sent += 1;
                    }
                }
                sent
            }
        }
    });

    // Sample RSS and progress every 250 ms while the sender runs.
    let start = Instant::now();
    let warm = Duration::from_secs(secs) / 4;
    let (mut rss_warm, mut rss_max) = (None, 0);
    let mut last_progress = (start, 0u64);
    let mut longest_stall = Duration::ZERO;
    while !sender.is_finished() {
        std::thread::sleep(Duration::from_millis(250));
        let rss = rss_bytes();
        rss_max = rss_max.max(rss);
        if start.elapsed() >= warm && rss_warm.is_none() {
            rss_warm = Some(rss);
        }
        let p = progress.load(Ordering::SeqCst);
        if p > last_progress.1 || p == 0 {
            last_progress = (Instant::now(), p);
        }
        longest_stall = longest_stall.max(last_progress.0.elapsed());
    }
    let sent = sender.join().unwrap();
    let rss_end = rss_bytes();
    let sink = receiver.join().unwrap();
    let received = progress.load(Ordering::SeqCst);
    // Freeze the path and both ends in step, so that their counters can be compared exactly:
    // the relay stops forwarding (it still receives and counts), what it forwarded lands while
    // both ends still run, the ends stop (their final counters are exact, keepalives and timers
    // included), the relay reads what is left in its socket, and stops.
    std::thread::sleep(Duration::from_millis(500));
    // The TUN devices' drop counters, read while the devices exist (they go with their end).
    let (_, a_tun_tx_drop) = dev_drops(&ns.a, "mslt0");
    let (b_tun_rx_drop, _) = dev_drops(&ns.b, "mslt0");
    switch.hold();
    std::thread::sleep(Duration::from_millis(200));
    let (sa, sb) = (a.finish(), b.finish());
    std::thread::sleep(Duration::from_millis(200));
    let relay_drops = udp_socket_drops(&ns.b, 51999);
    let sink_drops = sink.map(|_| udp_socket_drops(&ns.b, 7000));
    switch.stop();
    let r = relay.join().unwrap();
    let rss_warm = rss_warm.expect("a sample after the warm-up");
    let growth = rss_end.saturating_sub(rss_warm);
    let what = match traffic {
        Traffic::Tcp => format!("{:.0} MB", received as f64 / 1e6),
        Traffic::Udp => format!("{received} of {sent} datagrams"),
    };
    eprintln!(
        "tunnel soak {traffic:?} loss {:.0}% for {secs} s: {what}; RSS {} MiB after warm-up, {} MiB at the end (max {} MiB, growth {} KiB); path dropped {} data datagrams; longest pause in progress {:.2} s",
        loss * 100.0,
        rss_warm >> 20,
        rss_end >> 20,
        rss_max >> 20,
        growth >> 10,
        r.dropped[0] + r.dropped[1],
        longest_stall.as_secs_f64()
    );

    assert!(
        growth < RSS_BOUND,
        "RSS grew by {} MiB after the warm-up",
        growth >> 20
    );
    for (end, s) in [("A", &sa), ("B", &sb)] {
        let t = &s.tunnel;
        assert_eq!(t.rejected.total(), 0, "{end}: {t:?}");
        assert_eq!(
            t.datagrams_received,
            t.frames_received
                + t.keepalives_received
                + t.handshakes_answered
                + t.handshakes_completed,
            "{end}: every datagram is a frame, a keepalive or a handshake message"
        );
        assert_eq!(t.link_resets, 0, "{end}");
        assert_eq!(s.tun.write_errors + s.tun.dropped_full, 0, "{end}");
    }
    // The path: everything A sent reached the relay (or its full socket buffer), and what it
    // forwarded reached B.
    assert_eq!(r.received[0] + relay_drops, sa.tunnel.datagrams_sent);
    assert_eq!(r.forwarded[0], sb.tunnel.datagrams_received);
    assert_eq!(r.received[1], sb.tunnel.datagrams_sent);
    assert_eq!(r.forwarded[1], sa.tunnel.datagrams_received);
    match traffic {
        Traffic::Tcp => {
            assert_eq!(received, sent, "TCP delivered every byte");
            assert!(
                longest_stall < STALL_WINDOW,
                "TCP stalled for {longest_stall:?}"
            );
        }
        Traffic::Udp => {
            // One datagram is one packet is one frame (raw service, 1028-byte packets).
            let tun_queue = a_tun_tx_drop - a_tun_tx_drop0;
            let refused = sa.tunnel.packets_refused;
            // Data datagrams lost on the path: dropped by the relay, or at its socket (only
            // data is sent at a rate that can fill it).
            let path = r.dropped[0] + relay_drops;
            let rcvbuf = sink_drops.expect("the UDP receiver's socket");
            let b_rx = b_tun_rx_drop - b_tun_rx_drop0;
            assert_eq!(sa.tun.packets_read, sa.tunnel.packets_in);
            assert_eq!(
                sent,
                received + tun_queue + refused + path + rcvbuf + b_rx,
                "sent = received + TUN queue {tun_queue} + refused {refused} + path {path} + receive buffer {rcvbuf} + B's TUN {b_rx}"
            );
            assert!(
                received > sent / 2,
                "most datagrams arrive: {received} of {sent}"
            );
            eprintln!(
                "  the {} missing: TUN queue {tun_queue}, refused by the link {refused}, path {path} (relay {}, its socket {relay_drops}), receiver's socket {rcvbuf}, B's TUN {b_rx}",
                sent - received,
                r.dropped[0]
            );
        }
    }
    (rss_warm, rss_end)
}

#[test]
fn the_tunnel_runs_flat_and_accounts_for_every_packet() {
    let secs = soak_secs();
    let mut first_warm = None;
    let mut last_end = 0;
    for (i, (traffic, loss)) in [
        (Traffic::Tcp, 0.0),
        (Traffic::Tcp, 0.02),
        (Traffic::Udp, 0.0),
        (Traffic::Udp, 0.02),
    ]
    .into_iter()
    .enumerate()
    {
        let (warm, end) = soak(201 + i as u8, traffic, loss, secs);
        first_warm.get_or_insert(warm);
        last_end = end;
    }
    // Across all cases, as one long run of the same process.
    let first_warm = first_warm.expect("four cases ran");
    eprintln!(
        "tunnel soak, all cases ({} s): RSS {} MiB after the first warm-up, {} MiB at the end",
        4 * secs,
        first_warm >> 20,
        last_end >> 20
    );
    assert!(last_end.saturating_sub(first_warm) < RSS_BOUND);
}
