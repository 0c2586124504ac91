//! Helpers shared by the tunnel's namespace tests: two unnamed namespaces joined by a veth
//! pair, tunnel ends on threads inside them (stopped and joined on drop), their
//! configurations, and TCP and memory probes. Linux only; needs root.

// A system test that drives real sockets, files and clocks: rule 1 (crates/tunnel/clippy.toml)
// binds the protocol modules.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code)] // each test file uses its own subset

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use mslink_netns::{Netns, VethPair};
use mslink_tunnel::config::TunnelConfig;
use mslink_tunnel::keys::Key;
use mslink_tunnel::rt::{self, Control, RunOptions, Snapshot};
use rand::{RngCore, SeedableRng};

/// Two namespaces joined by a veth pair `v0` (a, 192.168.<net>.1) - `v1` (b, .2), IPv6 off
/// in both: only the test's own traffic crosses, never neighbour discovery or MLD reports
/// from a TUN device coming up (a restarted end with a packet of its own to send starts a
/// handshake of its own, at a moment no test controls).
pub fn veth_pair(net: u8) -> VethPair {
    let p = VethPair::create("v0", "v1", None).expect("namespaces and veth pair (root)");
    for ns in [&p.a, &p.b] {
        for conf in ["all", "default"] {
            ns.sysctl(&format!("net/ipv6/conf/{conf}/disable_ipv6"), "1")
                .expect("turn IPv6 off in the namespace");
        }
    }
    for (ns, dev, host) in [(&p.a, "v0", 1), (&p.b, "v1", 2)] {
        ns.add_address(dev, IpAddr::V4(Ipv4Addr::new(192, 168, net, host)), 24)
            .expect("address the veth");
    }
    p
}

/// Runs `f` on a thread that has entered namespace `ns`.
pub fn within<T: Send + 'static>(
    ns: &Netns,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    ns.thread(f).expect("a thread inside the namespace")
}

/// A tunnel end running on its own thread in a namespace; stopped and joined on drop.
pub struct End {
    control: Control,
    thread: Option<JoinHandle<Result<(), rt::RtError>>>,
}

impl End {
    pub fn start(ns: &Netns, label: &str, cfg: TunnelConfig) -> End {
        let control = Control::default();
        let c = control.clone();
        let opts = RunOptions {
            stats_interval: None,
            handle_signals: false,
            label: label.to_string(),
        };
        let thread = within(ns, move || rt::run(&cfg, &opts, &c));
        let mut end = End {
            control,
            thread: Some(thread),
        };
        for _ in 0..500 {
            if end.control.is_up() {
                return end;
            }
            if end.thread.as_ref().is_some_and(|t| t.is_finished()) {
                let r = end.thread.take().unwrap().join().unwrap();
                panic!("tunnel {label} did not start: {r:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("tunnel {label} not up after 5 s");
    }
    pub fn stats(&self) -> Snapshot {
        self.control.snapshot()
    }
    /// Stops the tunnel, waits for its loop to end and returns its final counters (exact:
    /// written after the last datagram it sent or received).
    pub fn finish(mut self) -> Snapshot {
        self.control.stop();
        if let Some(t) = self.thread.take() {
            t.join()
                .expect("tunnel thread did not panic")
                .expect("tunnel ran and stopped cleanly");
        }
        self.control.snapshot()
    }
    /// Whether its thread still runs (it has neither failed nor panicked).
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for End {
    fn drop(&mut self) {
        self.control.stop();
        if let Some(t) = self.thread.take() {
            match t.join() {
                Ok(r) => r.expect("tunnel ran and stopped cleanly"),
                Err(_) if std::thread::panicking() => {}
                Err(_) => panic!("tunnel thread panicked"),
            }
        }
    }
}

/// Configurations of both ends: A at 192.168.<net>.1 (initiator, peer = `a_peer`), B at .2
/// (learns its peer). Inner addresses 10.<net>.0.1 and .2.
pub fn configs(net: u8, a_peer: SocketAddr, psk: bool) -> (TunnelConfig, TunnelConfig) {
    let link = r#"
        crc = false
        default_service = "raw"
        [[service]]
        name = "raw"
        scheme = "raw"
        [[service]]
        name = "bulk"
        scheme = "selective_repeat"
        window = 64
        timeout_ms = 40
        nack_interval_ms = 10
        [[rule]]
        service = "bulk"
        protocol = "tcp"
    "#;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(net as u64);
    let (ka, kb, shared) = (
        Key::generate(&mut rng),
        Key::generate(&mut rng),
        Key::generate(&mut rng),
    );
    let mut a = TunnelConfig {
        listen: format!("192.168.{net}.1:51900").parse().unwrap(),
        peer: Some(a_peer),
        link: toml::from_str(link).unwrap(),
        ..Default::default()
    };
    a.tun.name = "mslt0".into();
    a.tun.address = Some(format!("10.{net}.0.1/24"));
    a.session.keepalive_ms = 60_000;
    let mut b = a.clone();
    b.listen = format!("192.168.{net}.2:51900").parse().unwrap();
    b.peer = None;
    b.tun.address = Some(format!("10.{net}.0.2/24"));
    if psk {
        a.psk = Some(shared);
        b.psk = Some(shared);
    } else {
        a.private_key = Some(ka);
        a.peer_public_key = Some(kb.public());
        b.private_key = Some(kb);
        b.peer_public_key = Some(ka.public());
    }
    (a, b)
}

/// Accepts one TCP connection at `to` in B and reads it to the end: (CRC-32, bytes) of what
/// arrived.
pub fn tcp_sink(ns: &VethPair, to: SocketAddr) -> JoinHandle<(u32, usize)> {
    let listener = within(&ns.b, move || TcpListener::bind(to).expect("bind in B"))
        .join()
        .unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut h = crc32fast::Hasher::new();
        let mut n = 0;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let k = s.read(&mut buf).expect("read");
            if k == 0 {
                break;
            }
            h.update(&buf[..k]);
            n += k;
        }
        (h.finalize(), n)
    })
}

/// Sends `len` seeded random bytes over TCP from A to B's `to`; returns (sent crc, received crc,
/// bytes received).
pub fn tcp_transfer(ns: &VethPair, to: SocketAddr, len: usize) -> (u32, u32, usize) {
    let server = tcp_sink(ns, to);
    let client = within(&ns.a, move || {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut data = vec![0u8; len];
        rng.fill_bytes(&mut data);
        let mut s = None;
        for _ in 0..50 {
            match TcpStream::connect_timeout(&to, Duration::from_millis(500)) {
                Ok(c) => {
                    s = Some(c);
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        let mut s = s.expect("connect across the tunnel");
        s.write_all(&data).expect("write");
        drop(s);
        crc32fast::hash(&data)
    });
    let sent = client.join().unwrap();
    let (got, n) = server.join().unwrap();
    (sent, got, n)
}

/// The process's resident set size in bytes (VmRSS of /proc/self/status).
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line");
    kb * 1024
}

/// Streams `len` bytes over TCP from A to B's `to` in 64 KiB writes (no buffer of `len` is
/// ever held, so the process's memory shows only what the tunnels keep); returns the bytes
/// B received.
pub fn tcp_stream(ns: &VethPair, to: SocketAddr, len: usize) -> usize {
    let server = tcp_sink(ns, to);
    within(&ns.a, move || {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5))
            .expect("connect across the tunnel");
        let chunk = vec![0x5au8; 1 << 16];
        let mut left = len;
        while left > 0 {
            let k = left.min(chunk.len());
            s.write_all(&chunk[..k]).expect("write");
            left -= k;
        }
    })
    .join()
    .unwrap();
    server.join().unwrap().1
}

/// What a [`relay`] saw, per direction (`[a_to_b, b_to_a]`).
#[derive(Debug, Default)]
pub struct Relayed {
    /// Datagrams received.
    pub received: [u64; 2],
    /// Datagrams forwarded.
    pub forwarded: [u64; 2],
    /// Data datagrams dropped on purpose (`loss`).
    pub dropped: [u64; 2],
    /// Copies of the datagrams from A to B (only with `keep`).
    pub seen: Vec<Vec<u8>>,
}

/// Controls a running [`relay`] from another thread.
#[derive(Clone, Default)]
pub struct RelaySwitch {
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl RelaySwitch {
    /// From now on the relay still receives and counts, but forwards nothing: what it already
    /// forwarded can land while both ends still run, so its counters and theirs can be frozen
    /// in step (hold, let in-flight datagrams land, stop the ends, stop the relay).
    pub fn hold(&self) {
        self.hold.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    /// Ends the relay (it notices within 50 ms).
    pub fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Relays UDP between A (any address but `b`) and B's tunnel address `b` until `switch` is
/// stopped (receiving but not forwarding once it is held), dropping a seeded fraction `loss` of the transport datagrams that carry data (longer than
/// an empty keepalive, 32 bytes) in each direction; handshakes and keepalives always pass.
/// With `keep`, every datagram from A to B is copied into the result.
pub fn relay(
    sock: std::net::UdpSocket,
    b: SocketAddr,
    switch: RelaySwitch,
    loss: f64,
    keep: bool,
) -> Relayed {
    use rand::Rng;
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut a = None;
    let mut r = Relayed::default();
    let mut buf = vec![0u8; 65_536];
    while !switch.stop.load(std::sync::atomic::Ordering::SeqCst) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let (dir, to) = if from == b {
            (1, a)
        } else {
            a = Some(from);
            if keep {
                r.seen.push(buf[..n].to_vec());
            }
            (0, Some(b))
        };
        r.received[dir] += 1;
        let data = buf[0] == 3 && n > 32;
        if data && loss > 0.0 && rng.gen_bool(loss) {
            r.dropped[dir] += 1;
            continue;
        }
        if switch.hold.load(std::sync::atomic::Ordering::SeqCst) {
            continue;
        }
        if let Some(to) = to {
            if sock.send_to(&buf[..n], to).is_ok() {
                r.forwarded[dir] += 1;
            }
        }
    }
    r
}
