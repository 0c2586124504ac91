//! The real-time driver of a tunnel end: TUN device, UDP socket, clock, poll loop, signals.
//!
//! Contract. [`run`] owns one [`Tunnel`] and drives it until asked to stop (SIGINT/SIGTERM
//! when `handle_signals` is set, or [`Control::stop`]); it returns `Ok` on a clean stop and
//! the TUN device disappears with its descriptor. It is the only part of the crate that reads
//! a clock, opens files and sockets, or installs signal handlers; it is kept in this one file
//! so it can move onto the emulator's driver (crates/emu) later. The TUN device is configured
//! (MTU, queue length, `tun.address`, up) with route-netlink requests in the calling thread's
//! network namespace (`mslink_netns::rtnl`); no `ip` process runs. Loop: run due timers, flush
//! datagrams to the socket and packets to the TUN device, then `ppoll` both descriptors with
//! a nanosecond timeout up to the tunnel's next deadline; read bursts of up to [`BURST`]
//! datagrams (one recvmmsg) or packets per wake-up and send datagrams in batches (sendmmsg).
//! Offloads (each on by default, each falling back by itself where the kernel refuses): the
//! TUN device is `mslink_emu::tun::Tun` with a virtio-net header, so a read may be a TCP
//! super-packet, cut into MTU-sized packets for the link by `mslink_emu::gso`, and delivered
//! packets of one flow are written back as one by `mslink_emu::coalesce`; runs of equal-sized
//! datagrams to the peer go as one UDP GSO message (`UDP_SEGMENT`). What crosses the link and
//! the wire is unchanged: one link frame per datagram, MTU-sized packets.
//! When the socket's send buffer is full the driver keeps the datagrams and stops reading the
//! TUN device until it drains (back-pressure, no drop).
//!
//! Time: `Instant` is nanoseconds since the Unix epoch read once at start, advanced by the
//! monotonic clock, so handshake timestamps keep growing across restarts (replay protection
//! of initiations) while timers never jump.
//!
//! Logs are `tracing` events (target `mslink_tunnel`, a `label` field naming the tunnel end,
//! the message) at the levels of [`Level`]; the program that runs the tunnel decides where
//! they go and which levels it keeps (`mslink tunnel` prints one line per event on stderr,
//! with sd-daemon(3) priority prefixes under systemd).
//! SIGUSR1 prints the counters; so does `stats_interval`.

// The real-time driver side of the crate: docs/architecture.md rule 1 (no clock, sleep, thread,
// socket or file) binds the protocol modules, which clippy.toml enforces; this module is I/O.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use mslink_emu::clock::Clock;
use mslink_emu::coalesce::{self, Plan};
use mslink_emu::gso::{self, Processed, VNET_HDR_LEN};
use mslink_emu::tun::Tun;
use mslink_link::link::LinkStats;
use mslink_netns::rtnl::{self, LinkChange};

use crate::config::{parse_cidr, TunnelConfig};
use crate::events::Severity;
use crate::handshake::Credentials;
use crate::keys::Key;
use crate::pool::BufferPool;
use crate::session::{Tunnel, TunnelStats};

/// Most datagrams or packets read per descriptor per wake-up.
pub const BURST: usize = 64;

/// Spare buffers the driver keeps between wake-ups, and the largest it keeps: the free-list
/// is fed by delivered packets but drawn only for datagrams, so it must be bounded
/// ([`BufferPool`]).
const POOL_BUFFERS: usize = 2 * BURST;
const POOL_BUFFER_BYTES: usize = 65_536;

/// How often [`Control::snapshot`] is refreshed.
pub const SNAPSHOT_EVERY: StdDuration = StdDuration::from_millis(20);

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Something failed.
    Error,
    /// Something is wrong but the tunnel runs on.
    Warn,
    /// Session events (handshakes, roaming, expiry) and counters.
    Info,
    /// Every rejected datagram.
    Debug,
}

/// A log level name that is not one of error, warn, info, debug.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not one of error, warn, info, debug")]
pub struct UnknownLevel(pub String);

impl std::str::FromStr for Level {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Self, UnknownLevel> {
        match s {
            "error" => Ok(Level::Error),
            "warn" => Ok(Level::Warn),
            "info" => Ok(Level::Info),
            "debug" => Ok(Level::Debug),
            _ => Err(UnknownLevel(s.to_string())),
        }
    }
}

impl From<Level> for tracing::Level {
    fn from(l: Level) -> tracing::Level {
        match l {
            Level::Error => tracing::Level::ERROR,
            Level::Warn => tracing::Level::WARN,
            Level::Info => tracing::Level::INFO,
            Level::Debug => tracing::Level::DEBUG,
        }
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Print counters this often.
    pub stats_interval: Option<StdDuration>,
    /// Install SIGINT/SIGTERM (stop) and SIGUSR1 (print counters) handlers. Off in tests,
    /// where several tunnels share a process.
    pub handle_signals: bool,
    /// Name for log lines (e.g. the TUN device).
    pub label: String,
}

/// Everything counted by one tunnel end.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Session layer.
    pub tunnel: TunnelStats,
    /// The link inside.
    pub link: LinkStats,
    /// Packets read from the TUN device (after cutting super-packets).
    pub tun_reads: u64,
    /// Of the reads, TCP/UDP super-packets the kernel handed over (offloads on).
    pub tun_super_reads: u64,
    /// Reads whose virtio-net header or super-packet made no sense: passed to the link whole.
    pub tun_offload_errors: u64,
    /// Packets written to the TUN device.
    pub tun_writes: u64,
    /// Of the writes, system calls that carried several packets of one TCP flow as one.
    pub tun_coalesced_writes: u64,
    /// Writes to the TUN device that failed.
    pub tun_write_errors: u64,
    /// Datagrams the socket refused for good (not "try again").
    pub udp_send_errors: u64,
    /// Times the send buffer was full and the driver waited.
    pub udp_backpressure: u64,
    /// The peer's current address.
    pub peer: Option<SocketAddr>,
}

/// A handle to stop a running tunnel and read its counters from another thread.
#[derive(Clone, Default)]
pub struct Control {
    stop: Arc<AtomicBool>,
    up: Arc<AtomicBool>,
    snapshot: Arc<Mutex<Snapshot>>,
}

impl Control {
    /// Asks the loop to stop (it notices within 100 ms).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
    /// True once the TUN device is configured and the socket bound.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }
    /// The latest counters (at most [`SNAPSHOT_EVERY`] old while the loop runs).
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot
            .lock()
            .expect("no panics while holding it")
            .clone()
    }
}

/// Why a tunnel could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A key file could not be read or parsed.
    #[error("key file {path}: {what}")]
    KeyFile {
        /// The file.
        path: String,
        /// What went wrong.
        what: String,
    },
    /// The link inside could not be built.
    #[error(transparent)]
    Tunnel(#[from] crate::session::TunnelError),
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> RtError {
    let what = what.into();
    move |source| RtError::Io { what, source }
}

static STOP: AtomicBool = AtomicBool::new(false);
static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work: set a flag; ppoll returns EINTR and the loop reads it.
    if sig == libc::SIGUSR1 {
        DUMP.store(true, Ordering::SeqCst);
    } else {
        STOP.store(true, Ordering::SeqCst);
    }
}

fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
        // SAFETY: a zeroed sigaction with a plain handler and no SA_RESTART (so ppoll is
        // interrupted); the handler only stores to atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Where the driver's log events come from: the tunnel end's label.
struct Log {
    label: String,
}

impl Log {
    fn emit(&self, level: Level, msg: std::fmt::Arguments<'_>) {
        let label = self.label.as_str();
        match level {
            Level::Error => tracing::error!(target: "mslink_tunnel", label, "{msg}"),
            Level::Warn => tracing::warn!(target: "mslink_tunnel", label, "{msg}"),
            Level::Info => tracing::info!(target: "mslink_tunnel", label, "{msg}"),
            Level::Debug => tracing::debug!(target: "mslink_tunnel", label, "{msg}"),
        }
    }
}

/// Reads the credentials, from the config or the key files it names.
pub fn credentials(cfg: &TunnelConfig) -> Result<Credentials, RtError> {
    let from_file = |p: &std::path::Path| -> Result<Key, RtError> {
        let path = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|e| RtError::KeyFile {
            path: path.clone(),
            what: e.to_string(),
        })?;
        Key::from_base64(&text).map_err(|e| RtError::KeyFile {
            path,
            what: e.to_string(),
        })
    };
    if let Some(psk) = cfg.psk {
        return Ok(Credentials::Psk { psk });
    }
    if let Some(p) = &cfg.psk_file {
        return Ok(Credentials::Psk { psk: from_file(p)? });
    }
    let private = match (&cfg.private_key, &cfg.private_key_file) {
        (Some(k), _) => *k,
        (None, Some(p)) => from_file(p)?,
        (None, None) => unreachable!("validate() requires a key"),
    };
    Ok(Credentials::Keys {
        private,
        peer_public: cfg.peer_public_key.expect("validate() requires it"),
    })
}

/// 32 bytes from the kernel's generator (getrandom(2)).
pub fn os_random() -> io::Result<[u8; 32]> {
    let mut b = [0u8; 32];
    let mut filled = 0;
    while filled < b.len() {
        // SAFETY: writes at most the remaining length into our buffer.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), b.len() - filled, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            filled += n as usize;
        }
    }
    Ok(b)
}

fn set_buffer(sock: &UdpSocket, opt: libc::c_int, bytes: libc::c_int) {
    // SAFETY: setsockopt with an int option on our socket; failure only leaves the default.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Formats the counters as a few log lines.
pub fn format_stats(s: &Snapshot) -> String {
    let t = &s.tunnel;
    let r = &t.rejected;
    let mut out = format!(
        "datagrams in {} ({} B) out {} ({} B); rejected forged {} replayed {} truncated {} garbage {} unknown_session {} rate_limited {} busy {}; \
         handshakes initiated {} completed {} answered {} after_silence {}; cookie replies out {} in {}; \
         sessions {} expired {}; link resets {}; keepalives out {} in {}; roams {}; \
         tun read {} ({} super-packets, {} offload errors) written {} ({} coalesced writes, write errors {}); \
         link refused {}; udp send errors {} waits {}",
        t.datagrams_received, t.bytes_received, t.datagrams_sent, t.bytes_sent, r.forged, r.replayed,
        r.truncated, r.garbage, r.unknown_session, r.rate_limited, r.busy, t.handshakes_initiated,
        t.handshakes_completed, t.handshakes_answered, t.handshakes_after_silence,
        t.cookie_replies_sent, t.cookies_received, t.sessions_started, t.sessions_expired, t.link_resets,
        t.keepalives_sent,
        t.keepalives_received, t.roams, s.tun_reads, s.tun_super_reads, s.tun_offload_errors,
        s.tun_writes, s.tun_coalesced_writes, s.tun_write_errors,
        t.packets_refused, s.udp_send_errors, s.udp_backpressure
    );
    for row in &s.link.services {
        let v = &row.service;
        out.push_str(&format!(
            "; service {} ({}) in {} delivered {} retransmissions {} abandoned {}",
            row.name,
            row.scheme,
            row.packets_in,
            row.packets_delivered,
            v.retransmissions,
            v.abandoned
        ));
    }
    out
}

/// Runs a tunnel end until stopped (see the module contract).
pub fn run(cfg: &TunnelConfig, opts: &RunOptions, control: &Control) -> Result<(), RtError> {
    cfg.validate()?;
    let log = Log {
        label: opts.label.clone(),
    };
    let creds = credentials(cfg)?;
    let seed = os_random().map_err(io_err("getrandom"))?;
    let mut tunnel = Tunnel::new(&cfg.session, creds, &cfg.link, cfg.peer, seed)?;
    if opts.handle_signals {
        install_signal_handlers().map_err(io_err("installing signal handlers"))?;
    }

    let opened = if cfg.tun.offload {
        // A kernel without the offloads refuses them: fall back to plain reads and writes.
        Tun::create_with_offloads(&cfg.tun.name).or_else(|_| Tun::create(&cfg.tun.name))
    } else {
        Tun::create(&cfg.tun.name)
    };
    let tun = opened.map_err(io_err(format!(
        "creating TUN device {} (needs CAP_NET_ADMIN and /dev/net/tun)",
        cfg.tun.name
    )))?;
    // The device is configured with route-netlink requests in this thread's namespace (what
    // `ip link set` and `ip addr add` would do, without running them).
    let name = cfg.tun.name.as_str();
    let mtu = u32::try_from(cfg.tun.mtu).map_err(|_| RtError::Io {
        what: "tun.mtu".into(),
        source: io::Error::other(format!("{} is too large", cfg.tun.mtu)),
    })?;
    rtnl::set_link(
        name,
        &LinkChange {
            mtu: Some(mtu),
            txqueuelen: cfg.tun.txqueuelen,
            ..LinkChange::default()
        },
    )
    .map_err(io_err("tun.mtu and tun.txqueuelen"))?;
    if let Some(a) = &cfg.tun.address {
        let (addr, prefix) = parse_cidr(a).map_err(|w| RtError::Io {
            what: "tun.address".into(),
            source: io::Error::other(w),
        })?;
        rtnl::add_address(name, addr, prefix).map_err(io_err("tun.address"))?;
    }
    rtnl::set_link(name, &LinkChange::up()).map_err(io_err("bringing the TUN device up"))?;

    let sock =
        UdpSocket::bind(cfg.listen).map_err(io_err(format!("binding UDP {}", cfg.listen)))?;
    sock.set_nonblocking(true)
        .map_err(io_err("non-blocking socket"))?;
    set_buffer(&sock, libc::SO_RCVBUF, 4 << 20);
    set_buffer(&sock, libc::SO_SNDBUF, 4 << 20);
    let mode = match creds {
        Credentials::Keys { .. } => "Noise IK (key pairs)",
        Credentials::Psk { .. } => "Noise NNpsk0 (pre-shared key)",
    };
    log.emit(
        Level::Info,
        format_args!(
            "up: tun {} mtu {}{}, udp {}, peer {}, {}, {} service(s)",
            name,
            cfg.tun.mtu,
            cfg.tun
                .address
                .as_deref()
                .map(|a| format!(" address {a}"))
                .unwrap_or_default(),
            sock.local_addr().map_or(cfg.listen, |a| a),
            cfg.peer
                .map_or("learned from its first handshake".into(), |p| p.to_string()),
            mode,
            cfg.link.services.len()
        ),
    );

    control.up.store(true, Ordering::SeqCst);
    let clock = Clock::from_unix_epoch();
    let mut snap = Snapshot::default();
    let mut rbuf = vec![0u8; 65_536 + VNET_HDR_LEN];
    let mut scratch = Vec::new();
    let mut head = Vec::new();
    let mut up: Vec<Vec<u8>> = Vec::new();
    let mut coalesce = true;
    let mut udp_gso = cfg.udp_gso;
    let mut recv = RecvBatch::new();
    // Datagrams made but not yet taken by the socket, and spare buffers.
    let mut out: VecDeque<(SocketAddr, Vec<u8>)> = VecDeque::with_capacity(BURST);
    let mut pool = BufferPool::new(POOL_BUFFERS, POOL_BUFFER_BYTES);
    let mut snap_at = StdInstant::now() - SNAPSHOT_EVERY;
    let mut next_stats = opts.stats_interval.map(|d| StdInstant::now() + d);

    loop {
        if control.stop.load(Ordering::Relaxed)
            || (opts.handle_signals && STOP.load(Ordering::Relaxed))
        {
            break;
        }
        let now = clock.now();
        if tunnel.poll_timeout().is_some_and(|t| t <= now) {
            tunnel.handle_timeout(now);
        }
        // Datagrams out in batches (sendmmsg), stopping at a full send buffer.
        loop {
            while out.len() < BURST {
                let mut b = pool.take();
                match tunnel.poll_transmit(now, &mut b) {
                    Some(to) => out.push_back((to, b)),
                    None => {
                        pool.give(b);
                        break;
                    }
                }
            }
            if out.is_empty() {
                break;
            }
            match send_batch(&sock, &out, &mut udp_gso) {
                Ok(k) => out.drain(..k).for_each(|(_, b)| pool.give(b)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    snap.udp_backpressure += 1;
                    break;
                }
                Err(e) => {
                    // The first datagram failed for good (e.g. no route): count it, go on.
                    snap.udp_send_errors += 1;
                    let (to, b) = out.pop_front().expect("not empty");
                    log.emit(Level::Debug, format_args!("UDP send to {to}: {e}"));
                    pool.give(b);
                }
            }
        }
        let stalled = !out.is_empty();
        // Packets up: with offloads, consecutive packets of one TCP flow go in one write.
        up.extend(std::iter::from_fn(|| tunnel.poll_deliver()));
        let mut at = 0;
        while at < up.len() {
            let plan = if tun.has_vnet_hdr() && coalesce {
                coalesce::plan(up[at..].iter().map(|p| p.as_slice()), &mut head)
            } else {
                head.clear();
                head.resize(if tun.has_vnet_hdr() { VNET_HDR_LEN } else { 0 }, 0);
                Plan {
                    count: 1,
                    header_len: 0,
                }
            };
            // A TUN write takes a whole packet or fails; a short count would be a kernel bug.
            match tun.write_planned(&head, plan, up[at..].iter().map(|p| p.as_slice())) {
                Ok((n, want)) if n == want => {
                    snap.tun_writes += plan.count as u64;
                    snap.tun_coalesced_writes += u64::from(plan.count > 1);
                }
                Ok((n, want)) => {
                    snap.tun_write_errors += plan.count as u64;
                    log.emit(Level::Warn, format_args!("TUN took {n} of {want} bytes"));
                }
                Err(e) if plan.count > 1 => {
                    // The device refused the super-packet: write singly from now on.
                    log.emit(
                        Level::Info,
                        format_args!("TUN refused a coalesced write ({e}); writing singly"),
                    );
                    coalesce = false;
                    continue;
                }
                Err(e) => {
                    snap.tun_write_errors += 1;
                    log.emit(Level::Debug, format_args!("TUN write failed: {e}"));
                }
            }
            at += plan.count;
        }
        up.drain(..).for_each(|b| pool.give(b));
        // Events (as the session handed them out) and counters.
        while let Some(e) = tunnel.poll_event() {
            log.emit(level(e.severity()), format_args!("{e}"));
        }
        let s = tunnel.stats();
        let due_stats = next_stats.is_some_and(|t| StdInstant::now() >= t);
        let dump = (opts.handle_signals && DUMP.swap(false, Ordering::SeqCst)) || due_stats;
        // The full counters (the link's allocate) are gathered every SNAPSHOT_EVERY at most.
        if dump || snap_at.elapsed() >= SNAPSHOT_EVERY {
            snap.tunnel = s;
            snap.link = tunnel.link_stats();
            snap.peer = tunnel.peer();
            *control.snapshot.lock().expect("no panics while holding it") = snap.clone();
            snap_at = StdInstant::now();
        }
        if dump {
            log.emit(Level::Info, format_args!("stats: {}", format_stats(&snap)));
            if let (Some(t), Some(d)) = (next_stats.as_mut(), opts.stats_interval) {
                *t += d;
            }
        }

        // Wait for input, a writable socket, or the next deadline (at most 100 ms, so a stop
        // request is seen promptly).
        let now = clock.now();
        let mut wait = StdDuration::from_millis(100);
        if let Some(t) = tunnel.poll_timeout() {
            wait = wait.min(StdDuration::from_nanos(
                t.as_nanos().saturating_sub(now.as_nanos()),
            ));
        }
        if let Some(t) = next_stats {
            wait = wait.min(t.saturating_duration_since(StdInstant::now()));
        }
        let mut fds = [
            libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLIN | if stalled { libc::POLLOUT } else { 0 },
                revents: 0,
            },
            libc::pollfd {
                fd: tun.as_raw_fd(),
                // Back-pressure: while a datagram waits for the socket, leave the TUN queue.
                events: if stalled { 0 } else { libc::POLLIN },
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: two valid pollfds, a valid timespec, no signal mask change.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(RtError::Io {
                what: "ppoll".into(),
                source: e,
            });
        }
        if fds[0].revents & libc::POLLIN != 0 {
            match recv.recv(&sock) {
                Ok(n) => {
                    let t = clock.now();
                    for i in 0..n {
                        if let Some((from, d)) = recv.datagram(i) {
                            tunnel.handle_datagram(t, from, d);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    // E.g. ICMP port unreachable reported on the socket: not fatal.
                    log.emit(Level::Debug, format_args!("UDP receive: {e}"));
                }
            }
        }
        if fds[1].revents & libc::POLLIN != 0 {
            for _ in 0..BURST {
                match tun.read(&mut rbuf) {
                    Ok(len) => {
                        let now = clock.now();
                        let mut feed = |p: &[u8]| {
                            snap.tun_reads += 1;
                            // Refusals are counted by the session (`packets_refused`).
                            let _ = tunnel.handle_packet(now, p);
                        };
                        if !tun.has_vnet_hdr() {
                            feed(&rbuf[..len]);
                            continue;
                        }
                        match gso::process(&mut rbuf[..len], &mut scratch, &mut feed) {
                            Ok(Processed::Segmented(_)) => snap.tun_super_reads += 1,
                            Ok(_) => {}
                            Err(_) => {
                                // Passed on whole: the link refuses it or carries it.
                                snap.tun_offload_errors += 1;
                                feed(&rbuf[len.min(VNET_HDR_LEN)..len]);
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        return Err(RtError::Io {
                            what: "reading the TUN device".into(),
                            source: e,
                        })
                    }
                }
            }
        }
    }
    snap.tunnel = tunnel.stats();
    snap.link = tunnel.link_stats();
    snap.peer = tunnel.peer();
    *control.snapshot.lock().expect("no panics while holding it") = snap.clone();
    log.emit(
        Level::Info,
        format_args!("stopping; stats: {}", format_stats(&snap)),
    );
    Ok(())
}

/// Largest UDP payload.
const RECV_LEN: usize = 65_536;

/// Buffers for one recvmmsg(2) call of up to [`BURST`] datagrams.
struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    fn new() -> RecvBatch {
        // SAFETY: sockaddr_storage, iovec and mmsghdr are plain data; zeroed is valid.
        let z = || unsafe { std::mem::zeroed() };
        RecvBatch {
            bufs: (0..BURST).map(|_| vec![0u8; RECV_LEN]).collect(),
            names: (0..BURST).map(|_| z()).collect(),
            iovs: (0..BURST).map(|_| unsafe { std::mem::zeroed() }).collect(),
            hdrs: (0..BURST).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }

    /// Receives up to BURST datagrams without blocking; returns how many.
    fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        for i in 0..BURST {
            self.iovs[i] = libc::iovec {
                iov_base: self.bufs[i].as_mut_ptr().cast(),
                iov_len: RECV_LEN,
            };
            // SAFETY: zeroed msghdr is valid; the pointers set below outlive the call.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            self.hdrs[i] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
        }
        // SAFETY: BURST headers, each pointing at its own buffer, name and iovec.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                BURST as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Datagram `i` of the last call and its sender.
    fn datagram(&mut self, i: usize) -> Option<(SocketAddr, &mut [u8])> {
        let len = self.hdrs[i].msg_len as usize;
        let from = from_storage(&self.names[i])?;
        Some((from, &mut self.bufs[i][..len]))
    }
}

fn from_storage(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn to_storage(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: plain data; zeroed is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in.
            let s: &mut libc::sockaddr_in =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = v4.port().to_be();
            s.sin_addr.s_addr = u32::from_be_bytes(v4.ip().octets()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in6.
            let s: &mut libc::sockaddr_in6 =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = v6.port().to_be();
            s.sin6_addr.s6_addr = v6.ip().octets();
            s.sin6_flowinfo = v6.flowinfo();
            s.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// `UDP_SEGMENT` from linux/udp.h (Linux 4.18): the socket option and control message that
/// ask the kernel to cut one send into datagrams of the given size (UDP GSO).
const UDP_SEGMENT: libc::c_int = 103;
/// Most bytes of payload one UDP GSO send carries (the IP packet limit, with room for headers).
const GSO_MAX_BYTES: usize = 65_000;
/// Most datagrams one UDP GSO send carries (the kernel's `UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGMENTS: usize = 64;

/// Sends up to [`BURST`] datagrams from the front of `out` with one sendmmsg(2); returns how
/// many went. With `gso`, each run of datagrams to one address whose sizes are equal (the last
/// may be shorter) goes as one message with a `UDP_SEGMENT` control message: the kernel builds
/// the datagrams from it in one pass through its UDP/IP stack (UDP GSO), the same datagrams on
/// the wire. A kernel that refuses UDP GSO clears `gso` and the batch is sent datagram by
/// datagram.
fn send_batch(
    sock: &UdpSocket,
    out: &VecDeque<(SocketAddr, Vec<u8>)>,
    gso: &mut bool,
) -> io::Result<usize> {
    let n = out.len().min(BURST);
    let mut names = [(unsafe { std::mem::zeroed::<libc::sockaddr_storage>() }, 0); BURST];
    // SAFETY: plain data; zeroed is valid.
    let mut iovs: [libc::iovec; BURST] = unsafe { std::mem::zeroed() };
    let mut hdrs: [libc::mmsghdr; BURST] = unsafe { std::mem::zeroed() };
    // One control buffer per message, u64-aligned as cmsghdr needs.
    let mut cmsgs = [[0u64; 4]; BURST];
    // Datagrams carried by each message.
    let mut counts = [0usize; BURST];
    let mut msgs = 0;
    let mut i = 0;
    while i < n {
        let (to, first) = &out[i];
        let size = first.len();
        let mut run = 1;
        let mut bytes = size;
        if *gso {
            while i + run < n && run < GSO_MAX_SEGMENTS {
                let (t, d) = &out[i + run];
                if t != to || d.len() > size || bytes + d.len() > GSO_MAX_BYTES {
                    break;
                }
                bytes += d.len();
                run += 1;
                if d.len() < size {
                    break; // a shorter datagram ends the run
                }
            }
        }
        names[msgs] = to_storage(to);
        for (k, (_, d)) in out.iter().skip(i).take(run).enumerate() {
            iovs[i + k] = libc::iovec {
                iov_base: d.as_ptr() as *mut libc::c_void,
                iov_len: d.len(),
            };
        }
        let h = &mut hdrs[msgs].msg_hdr;
        h.msg_name = (&mut names[msgs].0 as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = names[msgs].1;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = run;
        if run > 1 {
            // SAFETY: the control buffer is 32 bytes, enough for one cmsghdr and a u16, and
            // outlives the call; CMSG_* only compute offsets within it.
            unsafe {
                let space = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
                h.msg_control = cmsgs[msgs].as_mut_ptr().cast();
                h.msg_controllen = space;
                let c = libc::CMSG_FIRSTHDR(h);
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size as u16);
            }
        }
        counts[msgs] = run;
        msgs += 1;
        i += run;
    }
    // SAFETY: `msgs` headers pointing at live names, iovecs, control buffers and datagram
    // buffers (sendmmsg only reads them).
    let k = unsafe {
        libc::sendmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            msgs as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if k < 0 {
        let e = io::Error::last_os_error();
        let refused = matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::EIO | libc::ENOPROTOOPT)
        );
        if *gso && refused && counts[0] > 1 {
            // UDP GSO refused (old kernel, or a device without checksum offload): go on
            // without it; the caller retries the same datagrams.
            *gso = false;
            return Ok(0);
        }
        Err(e)
    } else {
        Ok(counts[..k as usize].iter().sum())
    }
}

/// The log level of an event of the given severity.
fn level(s: Severity) -> Level {
    match s {
        Severity::Debug => Level::Debug,
        Severity::Info => Level::Info,
        Severity::Warn => Level::Warn,
    }
}
