//! DNS for a single-mode command when the host's resolver listens on loopback (issue 34).
//!
//! Contract. A command in the emulator's namespace reads the host's `/etc/resolv.conf`; when
//! that names a resolver on loopback (systemd-resolved's `127.0.0.53`, Ubuntu's default, or a
//! local dnsmasq), the namespace's own loopback has nothing there and every lookup fails. So
//! the session ([`crate::session`]) then starts a [`Forwarder`] on the host side of the hop (the
//! right side's address, port 53, UDP and TCP) that relays queries to that resolver, and runs
//! the command with a `resolv.conf` naming the forwarder first ([`rewrite`]), mounted over
//! `/etc/resolv.conf` in a mount namespace of the command's own
//! ([`mslink_netns::FileOverlay`]); nothing changes for the rest of the host. Queries and
//! answers cross the emulated hop like any other traffic (as with Mahimahi's DNS proxy,
//! which also sits outside the shell). A resolver the namespace can reach (any other address,
//! through NAT) needs none of this: [`loopback_upstream`] returns `None` and the command keeps
//! the host's file.
//!
//! The UDP relay gives each query a fresh ID towards the resolver and restores the client's on
//! the answer; an answer that matches no query (late, after [`QUERY_TIMEOUT`], or unknown) is
//! dropped and counted ([`DnsCounts`]), as are datagrams too short to be DNS. TCP
//! connections are relayed byte for byte, one upstream connection each.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a UDP query waits for its answer before its entry is forgotten (a resolver
/// retries after 5 s by default: resolv.conf(5) `timeout`).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// How often the relay threads look at the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// The first nameserver of a `resolv.conf` text that is on loopback, as a socket address on
/// port 53; `None` if the file names none.
pub fn loopback_upstream(resolv_conf: &str) -> Option<SocketAddr> {
    nameservers(resolv_conf)
        .find(|a| a.is_loopback())
        .map(|a| SocketAddr::new(a, 53))
}

/// The `nameserver` addresses of a `resolv.conf` text, in order (a scope suffix such as
/// `%eth0` is ignored; lines that do not parse are skipped, as the resolver skips them).
fn nameservers(text: &str) -> impl Iterator<Item = IpAddr> + '_ {
    text.lines().filter_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some("nameserver"))
            .then(|| w.next())
            .flatten()
            .and_then(|a| a.split('%').next()?.parse().ok())
    })
}

/// The command's `resolv.conf`: `nameserver FORWARDER` first, then the host's lines except its
/// loopback nameservers (other nameservers stay: the namespace reaches them through NAT;
/// `search` and `options` lines stay as they are).
pub fn rewrite(resolv_conf: &str, forwarder: IpAddr) -> String {
    let mut out = format!(
        "# mslink emulate: the host's resolver is on loopback; {forwarder} relays to it\n\
         nameserver {forwarder}\n"
    );
    for l in resolv_conf.lines() {
        let mut w = l.split_whitespace();
        let loopback_ns = w.next() == Some("nameserver")
            && w.next()
                .and_then(|a| a.split('%').next()?.parse::<IpAddr>().ok())
                .is_some_and(|a| a.is_loopback());
        if !loopback_ns {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// What a [`Forwarder`] relayed and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DnsCounts {
    /// UDP queries relayed to the resolver.
    pub queries: u64,
    /// UDP answers relayed back to a client.
    pub answers: u64,
    /// UDP datagrams dropped: shorter than a DNS header (12 bytes), from either side.
    pub dropped_malformed: u64,
    /// UDP answers dropped: they matched no query waiting (late or unknown ID).
    pub dropped_unmatched: u64,
    /// UDP queries the resolver's socket refused (the send failed).
    pub dropped_send_failed: u64,
    /// TCP connections relayed.
    pub tcp_connections: u64,
    /// TCP connections whose resolver could not be reached (closed at once).
    pub tcp_refused: u64,
}

#[derive(Default)]
struct Counters {
    queries: AtomicU64,
    answers: AtomicU64,
    dropped_malformed: AtomicU64,
    dropped_unmatched: AtomicU64,
    dropped_send_failed: AtomicU64,
    tcp_connections: AtomicU64,
    tcp_refused: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A query waiting for its answer: who asked, with which ID, when.
struct Waiting {
    client: SocketAddr,
    id: u16,
    at: Instant,
}

/// The UDP queries in flight, by the ID given to the resolver.
#[derive(Default)]
struct Table {
    next_id: u16,
    waiting: HashMap<u16, Waiting>,
}

impl Table {
    /// A fresh ID for a query from `client` with `id`; entries older than [`QUERY_TIMEOUT`]
    /// are forgotten.
    fn admit(&mut self, client: SocketAddr, id: u16, now: Instant) -> u16 {
        if self.waiting.len() >= 1024 {
            self.waiting
                .retain(|_, w| now.duration_since(w.at) < QUERY_TIMEOUT);
        }
        let ours = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.waiting.insert(
            ours,
            Waiting {
                client,
                id,
                at: now,
            },
        );
        ours
    }

    /// The client and original ID of the answer to query `ours`, if it is still waiting.
    fn answer(&mut self, ours: u16, now: Instant) -> Option<(SocketAddr, u16)> {
        let w = self.waiting.remove(&ours)?;
        (now.duration_since(w.at) < QUERY_TIMEOUT).then_some((w.client, w.id))
    }
}

/// A DNS relay from `listen:53` to a resolver; stops (its threads joined) when dropped.
pub struct Forwarder {
    listen: SocketAddr,
    upstream: SocketAddr,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<()>>,
}

impl Forwarder {
    /// Binds UDP and TCP port 53 on `listen` and relays to `upstream`.
    ///
    /// # Errors
    /// A socket that cannot be bound (port 53 taken on that address or on all addresses, or
    /// no permission) or connected.
    pub fn start(listen: IpAddr, upstream: SocketAddr) -> io::Result<Forwarder> {
        Self::start_on(SocketAddr::new(listen, 53), upstream)
    }

    /// [`Forwarder::start`] on any port (tests).
    pub fn start_on(listen: SocketAddr, upstream: SocketAddr) -> io::Result<Forwarder> {
        let local = UdpSocket::bind(listen)?;
        let listen = local.local_addr()?;
        let tcp = TcpListener::bind(listen)?;
        let bind_any: SocketAddr = match upstream {
            SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let up = UdpSocket::bind(bind_any)?;
        up.connect(upstream)?;
        for s in [&local, &up] {
            s.set_read_timeout(Some(TICK))?;
        }
        tcp.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let table = Arc::new(Mutex::new(Table::default()));
        let mut threads = Vec::new();
        {
            let (local, up) = (local.try_clone()?, up.try_clone()?);
            let (stop, counters, table) = (stop.clone(), counters.clone(), table.clone());
            threads.push(std::thread::spawn(move || {
                queries(&local, &up, &stop, &counters, &table)
            }));
        }
        {
            let (stop, counters) = (stop.clone(), counters.clone());
            threads.push(std::thread::spawn(move || {
                answers(&up, &local, &stop, &counters, &table)
            }));
        }
        {
            let (stop, counters) = (stop.clone(), counters.clone());
            threads.push(std::thread::spawn(move || {
                connections(&tcp, upstream, &stop, &counters)
            }));
        }
        Ok(Forwarder {
            listen,
            upstream,
            stop,
            counters,
            threads,
        })
    }

    /// Where it listens.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// The resolver it relays to.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Its counters so far.
    pub fn counts(&self) -> DnsCounts {
        let c = &self.counters;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DnsCounts {
            queries: n(&c.queries),
            answers: n(&c.answers),
            dropped_malformed: n(&c.dropped_malformed),
            dropped_unmatched: n(&c.dropped_unmatched),
            dropped_send_failed: n(&c.dropped_send_failed),
            tcp_connections: n(&c.tcp_connections),
            tcp_refused: n(&c.tcp_refused),
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// True for a read that timed out (look at the stop flag and read again).
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Client to resolver: each query under a fresh ID.
fn queries(
    local: &UdpSocket,
    up: &UdpSocket,
    stop: &AtomicBool,
    c: &Counters,
    table: &Mutex<Table>,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let (n, client) = match local.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if timed_out(&e) => continue,
            Err(_) => continue,
        };
        if n < 12 {
            bump(&c.dropped_malformed);
            continue;
        }
        let id = u16::from_be_bytes([buf[0], buf[1]]);
        let ours = table
            .lock()
            .expect("no panics while held")
            .admit(client, id, Instant::now());
        buf[..2].copy_from_slice(&ours.to_be_bytes());
        match up.send(&buf[..n]) {
            Ok(_) => bump(&c.queries),
            Err(_) => bump(&c.dropped_send_failed),
        }
    }
}

/// Resolver to client: each answer under its query's original ID.
fn answers(
    up: &UdpSocket,
    local: &UdpSocket,
    stop: &AtomicBool,
    c: &Counters,
    table: &Mutex<Table>,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let n = match up.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if timed_out(&e) => continue,
            // ECONNREFUSED from an ICMP port unreachable: the resolver is not there (yet).
            Err(_) => continue,
        };
        if n < 12 {
            bump(&c.dropped_malformed);
            continue;
        }
        let ours = u16::from_be_bytes([buf[0], buf[1]]);
        let found = table
            .lock()
            .expect("no panics while held")
            .answer(ours, Instant::now());
        let Some((client, id)) = found else {
            bump(&c.dropped_unmatched);
            continue;
        };
        buf[..2].copy_from_slice(&id.to_be_bytes());
        if local.send_to(&buf[..n], client).is_ok() {
            bump(&c.answers);
        }
    }
}

/// TCP: each connection relayed to its own connection to the resolver.
fn connections(tcp: &TcpListener, upstream: SocketAddr, stop: &Arc<AtomicBool>, c: &Counters) {
    while !stop.load(Ordering::Relaxed) {
        let client = match tcp.accept() {
            Ok((s, _)) => s,
            Err(e) if timed_out(&e) => {
                std::thread::sleep(TICK);
                continue;
            }
            Err(_) => continue,
        };
        match TcpStream::connect_timeout(&upstream, Duration::from_secs(5)) {
            Ok(server) => {
                bump(&c.tcp_connections);
                relay(client, server, stop.clone());
            }
            Err(_) => bump(&c.tcp_refused),
        }
    }
}

/// Copies both ways between `a` and `b` on two threads until either side closes or the stop
/// flag is set.
fn relay(a: TcpStream, b: TcpStream, stop: Arc<AtomicBool>) {
    let pipe = move |mut from: TcpStream, mut to: TcpStream, stop: Arc<AtomicBool>| {
        let _ = from.set_read_timeout(Some(TICK));
        let mut buf = [0u8; 4096];
        while !stop.load(Ordering::Relaxed) {
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if timed_out(&e) => {}
                Err(_) => break,
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    };
    if let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) {
        let s2 = stop.clone();
        std::thread::spawn(move || pipe(a, b, stop));
        std::thread::spawn(move || pipe(b2, a2, s2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = "# This is /run/systemd/resolve/stub-resolv.conf\n\
                        nameserver 127.0.0.53\n\
                        options edns0 trust-ad\n\
                        search example.org\n";

    #[test]
    fn a_loopback_resolver_is_found_and_replaced() {
        assert_eq!(
            loopback_upstream(STUB),
            Some("127.0.0.53:53".parse().unwrap())
        );
        assert_eq!(
            loopback_upstream("nameserver ::1\n"),
            Some("[::1]:53".parse().unwrap())
        );
        assert_eq!(
            loopback_upstream("nameserver 10.0.0.1\nnameserver fe80::1%eth0\n"),
            None
        );
        let text = rewrite(
            &format!("{STUB}nameserver 192.0.2.1\n"),
            "100.64.0.2".parse().unwrap(),
        );
        let ns: Vec<IpAddr> = nameservers(&text).collect();
        assert_eq!(
            ns,
            vec![
                "100.64.0.2".parse::<IpAddr>().unwrap(),
                "192.0.2.1".parse().unwrap()
            ]
        );
        assert!(text.contains("options edns0 trust-ad\n") && text.contains("search example.org\n"));
    }

    #[test]
    fn ids_are_restored_and_late_or_unknown_answers_refused() {
        let mut t = Table::default();
        let t0 = Instant::now();
        let c: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let a = t.admit(c, 0xbeef, t0);
        let b = t.admit(c, 0xbeef, t0);
        assert_ne!(a, b);
        assert_eq!(t.answer(a, t0), Some((c, 0xbeef)));
        // Answered once only.
        assert_eq!(t.answer(a, t0), None);
        assert_eq!(t.answer(b, t0 + QUERY_TIMEOUT), None);
    }

    /// A query through the forwarder reaches a resolver on loopback under another ID and its
    /// answer comes back under the client's; junk is counted, not relayed.
    #[test]
    fn queries_and_answers_cross_udp_and_tcp() {
        let resolver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let resolver_tcp = TcpListener::bind(resolver.local_addr().unwrap()).unwrap();
        let f = Forwarder::start_on(
            "127.0.0.1:0".parse().unwrap(),
            resolver.local_addr().unwrap(),
        )
        .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut query = vec![0x12, 0x34];
        query.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, b'e', b'x']);
        // Junk first: the query's arrival at the resolver then says it was counted.
        client.send_to(&[1, 2, 3], f.listen()).unwrap();
        client.send_to(&query, f.listen()).unwrap();
        let mut buf = [0u8; 512];
        let (n, from) = resolver.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[2..n], &query[2..]);
        let mut answer = buf[..n].to_vec();
        answer[2] |= 0x80;
        resolver.send_to(&answer, from).unwrap();
        let (n, _) = client.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..2], &[0x12, 0x34]);
        assert_eq!(&buf[2..n], &answer[2..]);
        // TCP: bytes both ways.
        let mut s = TcpStream::connect(f.listen()).unwrap();
        s.write_all(b"\x00\x02hi").unwrap();
        let (mut up, _) = resolver_tcp.accept().unwrap();
        let mut got = [0u8; 4];
        up.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"\x00\x02hi");
        up.write_all(b"\x00\x02ok").unwrap();
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"\x00\x02ok");
        let c = f.counts();
        assert_eq!(
            (c.queries, c.answers, c.dropped_malformed, c.tcp_connections),
            (1, 1, 1, 1)
        );
    }
}
