//! The real-time driver of a tunnel end: TUN device, UDP socket, clock, signals, run by the
//! one driver loop of `mslink_io::driver`.
//!
//! Contract. [`run`] owns one [`Tunnel`] and drives it until asked to stop (SIGINT/SIGTERM
//! when `handle_signals` is set, or [`Control::stop`]); it returns `Ok` on a clean stop and
//! the TUN device disappears with its descriptor. It is the only part of the crate that reads
//! a clock, opens files and sockets, or installs signal handlers. The TUN device is
//! configured (MTU, queue length, `tun.address`, up) with route-netlink requests in the
//! calling thread's network namespace (`mslink_netns::rtnl`); no `ip` process runs. [`drive`]
//! is the loop alone, over any packet device and socket (the tests give it a Unix packet
//! pipe that really fills up).
//!
//! The loop is the emulator's (`mslink_io::driver`): it runs due timers, sends datagrams in
//! batches (`sendmmsg`, runs of equal-sized datagrams as one UDP GSO message), writes
//! delivered packets to the TUN device (packets of one TCP flow as one super-packet), sleeps
//! in `ppoll` until the tunnel's next deadline or a descriptor is ready, and reads bursts of
//! up to 64 datagrams (one `recvmmsg`) or packets (TCP super-packets cut into MTU-sized
//! packets). What crosses the link and the wire is unchanged: one link frame per datagram,
//! MTU-sized packets. Back-pressure: when the socket's send buffer is full the datagrams wait
//! and the TUN device is not read until it drains; when the TUN device cannot take a packet
//! the loop waits until it can (the emulator's rule), and drops beyond the driver's backlog
//! are counted ([`Snapshot::tun`]`.dropped_full`). Nothing is dropped without a count.
//!
//! Time: `Instant` is nanoseconds since the Unix epoch read once at start, advanced by the
//! monotonic clock, so handshake timestamps keep growing across restarts (replay protection
//! of initiations) while timers never jump.
//!
//! Logs are `tracing` events (target `mslink_tunnel`, a `label` field naming the tunnel end,
//! the message) at the levels of [`Level`]; the program that runs the tunnel decides where
//! they go and which levels it keeps (`mslink tunnel` prints one line per event on stderr,
//! with sd-daemon(3) priority prefixes under systemd). The session's events
//! ([`Tunnel::poll_event`]) and what the loop meets (a refused coalesced write, a refused
//! datagram) are logged as they come. SIGUSR1 prints the counters; so does `stats_interval`.

// The real-time driver side of the crate: docs/architecture.md rule 1 (no clock, sleep, thread,
// socket or file) binds the protocol modules, which clippy.toml enforces; this module is I/O.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use mslink_io::clock::Clock;
use mslink_io::device::Device;
use mslink_io::driver::{self, DeviceCounts, Fate, IoCounts, Machine, Note, Options};
use mslink_io::signals;
use mslink_io::tun::Tun;
use mslink_io::udp::{SocketCounts, SocketNote, UdpPort};
use mslink_link::link::LinkStats;
use mslink_link::{Duration, Instant};
use mslink_netns::rtnl::{self, LinkChange};

use crate::config::{parse_cidr, TunnelConfig};
use crate::events::Severity;
use crate::handshake::Credentials;
use crate::keys::Key;
use crate::session::{Tunnel, TunnelStats};
use crate::wire::{Kind, TAG_LEN, TRANSPORT_HEADER_LEN};

/// How often [`Control::snapshot`] is refreshed.
pub const SNAPSHOT_EVERY: StdDuration = StdDuration::from_millis(20);

/// Longest sleep of the loop, so a stop request is seen promptly.
pub const MAX_SLEEP: StdDuration = StdDuration::from_millis(100);

/// Send and receive buffer of the tunnel's UDP socket.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

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
    /// What the loop read from and wrote to the TUN device, offloads and drops included.
    pub tun: DeviceCounts,
    /// What the loop received and sent on the UDP socket.
    pub udp: SocketCounts,
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
    /// Asks the loop to stop (it notices within [`MAX_SLEEP`]).
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
    /// A setting of the configuration could not be used: its key, its value, what went wrong
    /// and what to do about it.
    #[error("{key} = {value}: {what}")]
    Setting {
        /// The configuration key (`private_key_file`, `listen`, `tun.name`, ...).
        key: &'static str,
        /// Its value.
        value: String,
        /// What went wrong, and the fix.
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

/// A warning when a datagram carrying a full link frame (`link.frame_size` plus the tunnel's
/// header and tag, plus IP and UDP) exceeds the path MTU to `peer`: the kernel would then
/// fragment every full-sized datagram, which costs a second packet and loses both if either
/// is lost. None when it fits, or the path MTU is unknown.
pub fn frame_size_note(cfg: &TunnelConfig, peer: SocketAddr) -> Option<String> {
    let mtu = mslink_io::udp::path_mtu(peer).ok()?;
    frame_size_check(cfg.link.frame_size, peer, mtu)
}

/// [`frame_size_note`] for a known path MTU.
pub fn frame_size_check(frame_size: usize, peer: SocketAddr, mtu: usize) -> Option<String> {
    let overhead = TRANSPORT_HEADER_LEN + TAG_LEN + mslink_io::udp::ip_udp_header_len(peer);
    let datagram = frame_size + overhead;
    (mtu > overhead && datagram > mtu).then(|| {
        format!(
            "link.frame_size = {frame_size}: a full frame travels in a {datagram}-byte IP packet, \
             above the path MTU of {mtu} bytes to {peer}, so the kernel fragments it; set \
             link.frame_size to at most {} (the path MTU less {overhead} bytes of IP, UDP, \
             tunnel header and tag)",
            mtu - overhead
        )
    })
}

/// Why `listen` could not be bound, and what to do.
fn listen_error(cfg: &TunnelConfig, e: io::Error) -> RtError {
    let what = match e.kind() {
        io::ErrorKind::AddrInUse => format!(
            "the port is in use by another program (another tunnel end?): stop it, or choose \
             another port ({e})"
        ),
        io::ErrorKind::AddrNotAvailable => format!(
            "no interface of this host has that address: use one of its addresses, or \
             0.0.0.0 for all ({e})"
        ),
        io::ErrorKind::PermissionDenied => format!(
            "ports below 1024 need CAP_NET_BIND_SERVICE: choose a higher port, or give the \
             program the capability ({e})"
        ),
        _ => format!("cannot be bound: {e}"),
    };
    RtError::Setting {
        key: "listen",
        value: cfg.listen.to_string(),
        what,
    }
}

/// Why the TUN device `tun.name` could not be made, and what to do.
fn tun_error(cfg: &TunnelConfig, e: io::Error) -> RtError {
    let what = match e.raw_os_error() {
        Some(libc::EBUSY) => format!(
            "a TUN device of that name is in use by another program (another tunnel end?): \
             stop it, or choose another tun.name ({e})"
        ),
        Some(libc::EINVAL) => format!(
            "a device of that name exists and is not a TUN device (`ip link show {}`): \
             choose another tun.name ({e})",
            cfg.tun.name
        ),
        Some(libc::EPERM | libc::EACCES) => format!(
            "making a TUN device needs CAP_NET_ADMIN: run as root, or give the program the \
             capability (docs/tunnel.md, systemd) ({e})"
        ),
        Some(libc::ENOENT | libc::ENODEV) => {
            format!("no /dev/net/tun: load the tun module (`modprobe tun`) ({e})")
        }
        _ => format!("the TUN device cannot be made: {e}"),
    };
    RtError::Setting {
        key: "tun.name",
        value: cfg.tun.name.clone(),
        what,
    }
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

/// Reads the credentials, from the config or the key files it names; an error names the key
/// (`private_key_file`, `psk_file`), the file and how to make one.
pub fn credentials(cfg: &TunnelConfig) -> Result<Credentials, RtError> {
    let from_file = |key: &'static str, p: &std::path::Path| -> Result<Key, RtError> {
        let setting = |what: String| RtError::Setting {
            key,
            value: p.display().to_string(),
            what,
        };
        let text = std::fs::read_to_string(p).map_err(|e| {
            setting(match e.kind() {
                io::ErrorKind::NotFound => format!(
                    "no such file (make one with `mslink tunnel {} > {}`, or give the key \
                     itself as {})",
                    if key == "psk_file" {
                        "genpsk"
                    } else {
                        "genkey"
                    },
                    p.display(),
                    key.trim_end_matches("_file")
                ),
                _ => format!("cannot be read: {e}"),
            })
        })?;
        Key::from_base64(&text).map_err(|e| {
            setting(format!(
                "{e} (a key file holds one base64 key of 32 bytes, as `mslink tunnel genkey` \
                 and `genpsk` write)"
            ))
        })
    };
    if let Some(psk) = cfg.psk {
        return Ok(Credentials::Psk { psk });
    }
    if let Some(p) = &cfg.psk_file {
        return Ok(Credentials::Psk {
            psk: from_file("psk_file", p)?,
        });
    }
    let private = match (&cfg.private_key, &cfg.private_key_file) {
        (Some(k), _) => *k,
        (None, Some(p)) => from_file("private_key_file", p)?,
        (None, None) => unreachable!("validate() requires a key"),
    };
    Ok(Credentials::Keys {
        private,
        peer_public: cfg.peer_public_key.expect("validate() requires it"),
    })
}

/// Formats the counters as a few log lines.
pub fn format_stats(s: &Snapshot) -> String {
    let t = &s.tunnel;
    let r = &t.rejected;
    let (d, u) = (&s.tun, &s.udp);
    let mut out = format!(
        "datagrams in {} ({} B) out {} ({} B); rejected forged {} replayed {} truncated {} garbage {} unknown_session {} rate_limited {} busy {}; \
         handshakes initiated {} completed {} answered {} after_silence {}; cookie replies out {} in {}; \
         sessions {} expired {}; link resets {}; keepalives out {} in {}; roams {}; \
         tun read {} ({} super-packets, {} offload errors) written {} ({} coalesced writes, write errors {}, \
         waits {}, dropped full {}); link refused {}; udp send errors {} waits {}",
        t.datagrams_received, t.bytes_received, t.datagrams_sent, t.bytes_sent, r.forged, r.replayed,
        r.truncated, r.garbage, r.unknown_session, r.rate_limited, r.busy, t.handshakes_initiated,
        t.handshakes_completed, t.handshakes_answered, t.handshakes_after_silence,
        t.cookie_replies_sent, t.cookies_received, t.sessions_started, t.sessions_expired, t.link_resets,
        t.keepalives_sent,
        t.keepalives_received, t.roams, d.packets_read, d.gso_reads, d.offload_errors,
        d.packets_written, d.coalesced_writes, d.write_errors, d.would_block, d.dropped_full,
        t.packets_refused, u.send_errors, u.would_block
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
    let seed = mslink_io::seed::os_random().map_err(io_err("getrandom"))?;
    let tunnel = Tunnel::new(&cfg.session, creds, &cfg.link, cfg.peer, seed)?;
    if opts.handle_signals {
        signals::install(&[libc::SIGINT, libc::SIGTERM, libc::SIGUSR1])
            .map_err(io_err("installing signal handlers"))?;
    }

    // The socket first: a port in use is reported without touching the TUN device.
    let sock = UdpSocket::bind(cfg.listen).map_err(|e| listen_error(cfg, e))?;
    let mut port = UdpPort::new(sock, SOCKET_BUFFER_BYTES, cfg.udp_gso)
        .map_err(io_err("non-blocking socket"))?;

    let opened = if cfg.tun.offload {
        // A kernel without the offloads refuses them: fall back to plain reads and writes.
        Tun::create_with_offloads(&cfg.tun.name).or_else(|_| Tun::create(&cfg.tun.name))
    } else {
        Tun::create(&cfg.tun.name)
    };
    let tun = opened.map_err(|e| tun_error(cfg, e))?;
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

    if let Some(note) = cfg.peer.and_then(|peer| frame_size_note(cfg, peer)) {
        log.emit(Level::Warn, format_args!("{note}"));
    }
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
            port.socket().local_addr().map_or(cfg.listen, |a| a),
            cfg.peer
                .map_or("learned from its first handshake".into(), |p| p.to_string()),
            mode,
            cfg.link.services.len()
        ),
    );

    drive(tunnel, &tun, &mut port, opts, control)
}

/// Drives `tunnel` between a packet `device` and a UDP `port` until asked to stop (the loop of
/// [`run`], without its set-up).
pub fn drive<D: Device>(
    tunnel: Tunnel,
    device: &D,
    port: &mut UdpPort,
    opts: &RunOptions,
    control: &Control,
) -> Result<(), RtError> {
    let log = Log {
        label: opts.label.clone(),
    };
    control.up.store(true, Ordering::SeqCst);
    let clock = Clock::from_unix_epoch();
    let now = clock.now();
    let every = |d: StdDuration| Duration::from_nanos(d.as_nanos().min(u64::MAX as u128) as u64);
    let mut m = TunnelMachine {
        tunnel,
        outbox: VecDeque::new(),
        log: &log,
        opts,
        control,
        snap: Snapshot::default(),
        snap_at: None,
        snap_moved: 0,
        publish_due: None,
        stats_every: opts.stats_interval.map(every),
        next_stats: opts.stats_interval.map(|d| now + every(d)),
    };
    let loop_opts = Options {
        max_sleep: every(MAX_SLEEP),
        ..Options::default()
    };
    let end =
        driver::run(&mut m, &[device], Some(port), &clock, loop_opts).map_err(|e| RtError::Io {
            what: "the TUN device or the UDP socket".into(),
            source: e,
        })?;
    m.snap.tun = end.devices[0];
    m.snap.udp = end.socket;
    m.publish();
    log.emit(
        Level::Info,
        format_args!("stopping; stats: {}", format_stats(&m.snap)),
    );
    Ok(())
}

/// Datagrams received and sent and packets read and written so far: what makes a snapshot
/// stale.
fn moved(io: &IoCounts<'_>) -> u64 {
    io.socket.datagrams_received
        + io.socket.datagrams_sent
        + io.devices.iter().map(|d| d.reads + d.writes).sum::<u64>()
}

/// A tunnel end as the driver loop's machine: device 0 is the TUN device.
struct TunnelMachine<'a> {
    tunnel: Tunnel,
    /// Packets delivered by the link, waiting for the TUN device.
    outbox: VecDeque<Vec<u8>>,
    log: &'a Log,
    opts: &'a RunOptions,
    control: &'a Control,
    snap: Snapshot,
    /// When the snapshot was last published.
    snap_at: Option<Instant>,
    /// Datagrams and packets moved when it was (see [`moved`]).
    snap_moved: u64,
    /// Something moved since the last publication: the next is due at this time even if
    /// nothing else wakes the loop, so the snapshot is never more than [`SNAPSHOT_EVERY`]
    /// behind (the loop may otherwise sleep [`MAX_SLEEP`]).
    publish_due: Option<Instant>,
    stats_every: Option<Duration>,
    next_stats: Option<Instant>,
}

impl TunnelMachine<'_> {
    /// Gathers the session's and the link's counters into the snapshot the [`Control`] shows.
    fn publish(&mut self) {
        self.snap.tunnel = self.tunnel.stats();
        self.snap.link = self.tunnel.link_stats();
        self.snap.peer = self.tunnel.peer();
        *self
            .control
            .snapshot
            .lock()
            .expect("no panics while holding it") = self.snap.clone();
    }
}

impl Machine for TunnelMachine<'_> {
    fn handle_packet(&mut self, now: Instant, _device: usize, packet: &[u8]) {
        // Refusals are counted by the session (`packets_refused`).
        let _ = self.tunnel.handle_packet(now, packet);
    }
    fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &mut [u8]) {
        self.tunnel.handle_datagram(now, from, datagram);
    }
    fn handled_first(datagram: &[u8]) -> bool {
        Kind::of(datagram).is_some_and(Kind::is_handshake)
    }
    fn handle_timeout(&mut self, now: Instant) {
        if self.tunnel.poll_timeout().is_some_and(|t| t <= now) {
            self.tunnel.handle_timeout(now);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.tunnel.poll_timeout(),
            self.next_stats,
            self.publish_due,
        ]
        .into_iter()
        .flatten()
        .min()
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        self.tunnel.poll_transmit(now, buf)
    }
    fn outbox(&mut self, _device: usize) -> &mut VecDeque<Vec<u8>> {
        let t = &mut self.tunnel;
        self.outbox.extend(std::iter::from_fn(|| t.poll_deliver()));
        &mut self.outbox
    }
    fn written(&mut self, _now: Instant, _device: usize, _packet: &[u8], _fate: Fate) {
        // Counted by the loop (`Snapshot::tun`); refusals are logged from `note`.
    }
    fn turn(&mut self, now: Instant, io: IoCounts<'_>) -> driver::Control {
        while let Some(e) = self.tunnel.poll_event() {
            self.log.emit(level(e.severity()), format_args!("{e}"));
        }
        self.snap.tun = io.devices[0];
        self.snap.udp = *io.socket;
        let due_stats = self.next_stats.is_some_and(|t| now >= t);
        let dump = (self.opts.handle_signals && signals::take_dump()) || due_stats;
        // The full counters (the link's allocate) are gathered every SNAPSHOT_EVERY at most.
        let every = Duration::from_nanos(SNAPSHOT_EVERY.as_nanos() as u64);
        let moved = moved(&io);
        if dump || self.snap_at.is_none_or(|t| now >= t + every) {
            self.publish();
            self.snap_at = Some(now);
            self.snap_moved = moved;
            self.publish_due = None;
        } else if moved != self.snap_moved && self.publish_due.is_none() {
            self.publish_due = self.snap_at.map(|t| t + every);
        }
        if dump {
            let line = format_stats(&self.snap);
            self.log.emit(Level::Info, format_args!("stats: {line}"));
            if let (Some(t), Some(d)) = (self.next_stats.as_mut(), self.stats_every) {
                *t = now + d;
            }
        }
        let stop = self.control.stop.load(Ordering::Relaxed)
            || (self.opts.handle_signals && signals::stop_requested());
        if stop {
            driver::Control::Stop
        } else {
            driver::Control::Continue
        }
    }
    fn note(&mut self, note: Note<'_>) {
        match note {
            Note::CoalescingOff { error, .. } => self.log.emit(
                Level::Info,
                format_args!("TUN refused a coalesced write ({error}); writing singly"),
            ),
            Note::WriteFailed { error, .. } => self
                .log
                .emit(Level::Debug, format_args!("TUN write failed: {error}")),
            Note::Socket(SocketNote::SendFailed { to, error }) => self
                .log
                .emit(Level::Debug, format_args!("UDP send to {to}: {error}")),
            Note::Socket(SocketNote::ReceiveFailed(error)) => {
                // E.g. ICMP port unreachable reported on the socket: not fatal.
                self.log
                    .emit(Level::Debug, format_args!("UDP receive: {error}"))
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_size_above_the_path_mtu_is_named_with_the_size_that_fits() {
        let v4: SocketAddr = "192.0.2.1:51900".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:51900".parse().unwrap();
        // 1400 + 16 + 16 + 28 = 1460: fits 1500, not 1420.
        assert_eq!(frame_size_check(1400, v4, 1500), None);
        let n = frame_size_check(1400, v4, 1420).expect("too large");
        assert!(
            n.contains("link.frame_size = 1400") && n.contains("at most 1360"),
            "{n}"
        );
        // IPv6 headers are 20 bytes longer.
        assert_eq!(frame_size_check(1440, v4, 1500), None);
        assert!(frame_size_check(1440, v6, 1500).is_some());
    }
}
