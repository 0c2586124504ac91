//! An emulator session: programs in network namespaces on both sides of an emulated hop, run
//! to the end and accounted for (what `mslink emulate` does).
//!
//! Contract. A [`Session`] is built from a [`SessionConfig`]: the hop ([`EmuConfig`]), what runs
//! on each side ([`Commands`], with the [`Until`] policy), addresses, pcap files, the live
//! counters' interval. [`Session::run`] removes devices of dead emulators ([`sweep_stale`]),
//! makes its namespaces and TUN devices (named `msl<pid>l` and `msl<pid>r`, plus a tag of the
//! PID namespace when it runs in one: [`DeviceOwner`]; with [`SessionConfig::direct`], a plain
//! veth pair instead of the hop), IPv4 forwarding on in the namespaces it makes (so an
//! emulator nested inside reaches through both hops), starts the commands
//! (`sh -c`, with `MSLINK_LEFT`, `MSLINK_RIGHT`, their IPv6 twins `MSLINK_LEFT6` and
//! `MSLINK_RIGHT6` (`ula_pair`; IPv6 set up so the devices send nothing of their own,
//! `quiet_ipv6`), `MSLINK_SIDE` and the prompt's `MSLINK_PROMPT`, `PS1` and `PROMPT_COMMAND`
//! ([`prompt_env`]) in their environment; a single-mode command started from a terminal's
//! foreground gets the terminal, [`Netns::spawn_foreground`]; in single mode with
//! [`SessionConfig::nat`], after setting up NAT from the command's namespace to whatever the
//! host reaches, [`crate::nat`], removed when the run ends) and
//! carries their traffic through the [`EmulatedHop`] in real time ([`runtime::run`]) until the
//! policy says the run is over or SIGINT, SIGTERM or SIGHUP arrives (the session installs
//! handlers for them). Then it drains the hop, stops the commands still running and returns a
//! [`SessionEnd`]: exit statuses, the hop's [`Summary`], device and offload counters, and the
//! exit code (128 + the signal's number after a signal, else the status of the command the
//! policy names).
//!
//! Everything a session creates lives in unnamed namespaces or on descriptors it holds, so the
//! kernel removes it on exit, on Ctrl-C and after SIGKILL; the commands run in PID namespaces
//! killed with the emulator ([`Netns::spawn`]). A session prints nothing: what a caller may
//! show while it runs arrives as [`Event`]s. 003 §1.3 and §4: unmodified kernel TCP over an
//! emulated error environment.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::Child;

use mslink_io::clock::Clock;
use mslink_io::files::SharedFile;
use mslink_io::signals;
use mslink_io::tun::Tun;
use mslink_link::{Direction, Duration, Instant, Side};
use mslink_netns::{
    dev_counters, in_terminal_foreground, sweep_stale, take_terminal, DeviceOwner, Family,
    FileOverlay, LinkChange, Netns,
};

use crate::config::{EmuConfig, EmuConfigError};
use crate::hop::{EmulatedHop, Summary};
use crate::linklog::{LinkLog, LogBytes, LogHeader, LogTotals};
use crate::runtime::{self, Control, DeviceCounts, Passage};

/// When a pair run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// When the left command exits.
    Left,
    /// When the right command exits.
    Right,
    /// When both have exited.
    Both,
    /// When either has exited.
    Either,
}

impl Until {
    /// Every policy, in the order `--until` lists them.
    pub const ALL: [Until; 4] = [Until::Left, Until::Right, Until::Both, Until::Either];

    /// The policy's name, as `--until` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Until::Left => "left",
            Until::Right => "right",
            Until::Both => "both",
            Until::Either => "either",
        }
    }

    /// What the policy means, one line without a final period (`--until`'s help).
    pub fn about(self) -> &'static str {
        match self {
            Until::Left => "When the left command exits",
            Until::Right => "When the right command exits",
            Until::Both => "When both have exited",
            Until::Either => "When either has exited",
        }
    }
}

impl std::str::FromStr for Until {
    type Err = String;

    /// A policy by its [`Until::name`].
    fn from_str(s: &str) -> Result<Until, String> {
        Until::ALL
            .into_iter()
            .find(|u| u.name() == s)
            .ok_or_else(|| format!("{s:?}: use one of left, right, both, either"))
    }
}

/// What runs on each side of the hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Commands {
    /// One new namespace left of the hop, the caller's own on the right. The words are joined
    /// for `sh -c` ([`shell_join`]); without words, the user's shell (`$SHELL`) runs there,
    /// interactive (it stays in the terminal's foreground process group). The run ends when
    /// the command exits.
    Single(Vec<String>),
    /// Two new namespaces, each running its command (`sh -c`) if it has one.
    Pair {
        /// Command of the left side.
        left: Option<String>,
        /// Command of the right side.
        right: Option<String>,
        /// When the run ends (default: when the right command exits if there is one, else the
        /// left).
        until: Option<Until>,
    },
}

/// Everything a session needs to know.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The hop.
    pub emu: EmuConfig,
    /// What runs on each side.
    pub commands: Commands,
    /// Address of the left side (default: 10.0.0.1 for a pair, else from 100.64.0.0/10).
    pub left_addr: Option<Ipv4Addr>,
    /// Address of the right side (default: 10.0.0.2 for a pair, else from 100.64.0.0/10).
    pub right_addr: Option<Ipv4Addr>,
    /// Report live counters ([`Event::Stats`]) this often.
    pub stats_interval: Option<Duration>,
    /// Capture the left and right device's packets (both ways) to these pcap files.
    pub pcap: [Option<PathBuf>; 2],
    /// Capture every link frame on the emulated air (both directions) to this pcap file
    /// ([`crate::linkpcap`]).
    pub pcap_link: Option<PathBuf>,
    /// Baseline for benchmarks (pair mode): join the namespaces with a plain veth pair instead
    /// of the emulated hop.
    pub direct: bool,
    /// Per-packet logs in Mahimahi's format ([`crate::linklog`]) of the uplink (left to right)
    /// and the downlink (right to left).
    pub link_logs: [Option<PathBuf>; 2],
    /// How the link logs write packet sizes.
    pub log_bytes: LogBytes,
    /// The command line the logs' headers quote.
    pub command_line: String,
    /// Single mode: NAT the command's traffic to whatever the host reaches ([`crate::nat`]).
    pub nat: bool,
    /// The bracket text naming the link in a shell's prompt (`[mslink wlan 5% sr]`): the
    /// commands get it, after an outer emulator's, in `MSLINK_PROMPT`, and in front of `PS1`
    /// ([`prompt_env`]).
    pub prompt: Option<String>,
}

/// Why a session could not run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The hop cannot be built from the configuration.
    #[error("invalid link settings")]
    Config(#[source] EmuConfigError),
    /// An operating-system call failed while doing `what`.
    #[error("{what}")]
    Os {
        /// What the session was doing.
        what: String,
        /// The failure.
        source: io::Error,
    },
    /// An operating-system call failed (namespaces, devices, netlink requests, the event loop).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A pcap file could not be started.
    #[error(transparent)]
    PcapHeader(pcap_file::PcapError),
    /// A packet could not be written to a pcap file.
    #[error("writing a pcap file")]
    PcapWrite(#[source] pcap_file::PcapError),
}

type Log = LinkLog<std::io::BufWriter<std::fs::File>>;

/// The link logs of a run, by direction.
struct Logs {
    logs: [Option<(Log, PathBuf)>; 2],
}

impl Logs {
    fn open(
        config: &SessionConfig,
        hop: &EmulatedHop,
        clock: &Clock,
    ) -> Result<Logs, SessionError> {
        let emu = &config.emu;
        let q = emu.queue_config();
        let queue = match (q.discipline, q.packets, q.bytes) {
            (mslink_channel::queue::Discipline::Droptail, None, None) => "infinite".to_string(),
            (d, p, b) => {
                use mslink_channel::queue::Discipline as D;
                let name = match d {
                    D::Droptail => "droptail",
                    D::Drophead => "drophead",
                    D::Codel => "codel",
                    D::Pie => "pie",
                    D::FqCodel => "fq_codel",
                };
                let mut limits = Vec::new();
                if let Some(p) = p {
                    limits.push(format!("packets={p}"));
                }
                if let Some(b) = b {
                    limits.push(format!("bytes={b}"));
                }
                format!("{name} [{}]", limits.join(", "))
            }
        };
        let unix_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let init_unix_ms =
            (unix_now.as_nanos() as u64).saturating_sub(clock.now().as_nanos()) / 1_000_000;
        let mut logs = [None, None];
        let slots = logs.iter_mut().zip(&config.link_logs);
        for (dir, (slot, path)) in Direction::BOTH.into_iter().zip(slots) {
            let Some(path) = path else { continue };
            let trace = if dir == Direction::RightToLeft {
                emu.capacity_trace_reverse
                    .as_ref()
                    .or(emu.capacity_trace.as_ref())
            } else {
                emu.capacity_trace.as_ref()
            };
            let capacity = match (trace, emu.rate_bps) {
                (Some(t), _) => t.clone(),
                (None, r) if r > 0.0 => format!("{} bit/s", r.round() as u64),
                (None, _) => "unlimited".to_string(),
            };
            let header = LogHeader {
                direction: dir.index(),
                bytes: config.log_bytes,
                capacity,
                path: path.display().to_string(),
                command_line: config.command_line.clone(),
                queue: queue.clone(),
                init_unix_ms,
            };
            let what = format!("creating the link log {}", path.display());
            let f = std::fs::File::create(path).map_err(os(what.clone()))?;
            // A large buffer: the event loop writes a line per packet.
            let w = std::io::BufWriter::with_capacity(1 << 20, f);
            let log =
                LinkLog::new(w, &header, hop.capacity(dir), hop.onoff(dir)).map_err(os(what))?;
            *slot = Some((log, path.clone()));
        }
        Ok(Logs { logs })
    }

    fn any(&self) -> bool {
        self.logs.iter().any(Option::is_some)
    }

    /// Writes what the logs hold so far (see [`FLUSH_EVERY`]).
    fn flush(&mut self) {
        for (log, _) in self.logs.iter_mut().flatten() {
            log.flush();
        }
    }

    /// A packet read on `side` enters the direction it sends on; one written on `side`
    /// leaves the direction it receives from.
    fn packet(&mut self, side: Side, passage: Passage, t: Instant, p: &[u8]) {
        let dir = match passage {
            Passage::Read => side.sending(),
            Passage::Written => side.receiving(),
        };
        if let Some((log, _)) = self.logs[dir].as_mut() {
            match passage {
                Passage::Read => log.arrival(t, p),
                Passage::Written => log.departure(t, p),
            }
        }
    }

    fn tick(&mut self, now: Instant, hop: &EmulatedHop) {
        for (dir, l) in Direction::BOTH.into_iter().zip(self.logs.iter_mut()) {
            if let Some((log, _)) = l.as_mut() {
                log.tick(now, hop.drops_before_air(dir));
            }
        }
    }

    fn finish(
        self,
        now: Instant,
        hop: &EmulatedHop,
    ) -> Result<[Option<LogTotals>; 2], SessionError> {
        let mut totals = [None, None];
        for (dir, l) in Direction::BOTH.into_iter().zip(self.logs) {
            if let Some((log, path)) = l {
                let (_, t) = log
                    .finish(now, hop.drops_before_air(dir))
                    .map_err(os(format!("writing the link log {}", path.display())))?;
                totals[dir] = Some(t);
            }
        }
        Ok(totals)
    }
}

fn os(what: impl Into<String>) -> impl FnOnce(io::Error) -> SessionError {
    let what = what.into();
    move |source| SessionError::Os { what, source }
}

/// What happens during [`Session::run`], for the caller to show.
#[derive(Debug)]
pub enum Event<'a> {
    /// A device of an emulator that is gone was found in this namespace and removed.
    StaleDeviceRemoved(&'a str),
    /// Namespaces, devices and addresses are set up; the commands start now.
    Ready {
        /// Address and device name of the left side.
        left: (Ipv4Addr, &'a str),
        /// Address and device name of the right side.
        right: (Ipv4Addr, &'a str),
        /// A plain veth pair joins the sides ([`SessionConfig::direct`]).
        direct: bool,
    },
    /// NAT to the outside is set up ([`crate::nat`]): the table, and the devices whose
    /// forwarding it turned on for the replies.
    Nat {
        /// The nftables table (`inet mslink_<pid>`).
        table: &'a str,
        /// The devices whose forwarding is on for the run.
        uplinks: &'a [String],
    },
    /// NAT was asked for and could not be set up; the run goes on without it.
    NatUnavailable(&'a io::Error),
    /// The host's resolver is on loopback: a relay on the host side of the hop serves the
    /// command's lookups ([`crate::dns`]).
    Dns {
        /// Where the relay listens (the command's `resolv.conf` names it).
        listen: std::net::SocketAddr,
        /// The host's resolver.
        upstream: std::net::SocketAddr,
    },
    /// The host's resolver is on loopback and the relay could not be set up: the command's
    /// lookups will fail; the run goes on.
    DnsUnavailable(&'a io::Error),
    /// An nftables table of an emulator that is gone was found and removed.
    StaleNatRemoved(&'a str),
    /// Live counters ([`EmulatedHop::live_summary`]), every [`SessionConfig::stats_interval`].
    Stats {
        /// Hop time (since the session was built).
        now: Instant,
        /// The counters.
        live: &'a Summary,
    },
}

/// One side at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideEnd {
    /// Its address.
    pub addr: Ipv4Addr,
    /// Its IPv6 address (None: the kernel has no IPv6).
    pub addr6: Option<Ipv6Addr>,
    /// Its device.
    pub device: String,
    /// Exit status of its command (128 + signal if a signal ended it); `None`: no command, or
    /// it did not end.
    pub exit_status: Option<i32>,
    /// The device's counters at the end (rx packets, rx dropped, tx packets, tx dropped).
    pub counters: Option<[u64; 4]>,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct SessionEnd {
    /// The status a command-line tool should exit with: 128 + signal after a signal (130 for
    /// Ctrl-C, 143 for SIGTERM), else the status of the command [`Until`] names (for `Both`
    /// and `Either`, the first that failed, else the right's), 0 without one.
    pub exit_code: i32,
    /// The signal that stopped the run, if one did.
    pub signal: Option<i32>,
    /// Left and right side.
    pub sides: [SideEnd; 2],
    /// Wall time from the commands' start to the end.
    pub wall: std::time::Duration,
    /// The drain ended with the hop quiet (false: packets still in flight are reported so).
    pub drained: bool,
    /// Everything the hop counted.
    pub summary: Summary,
    /// What the TUN offloads did, per side.
    pub offload: [DeviceCounts; 2],
    /// The devices have a virtio-net header (the kernel took the offloads).
    pub offload_enabled: bool,
    /// The devices also take UDP segmentation offload.
    pub udp_segmentation: bool,
    /// What the link logs hold (uplink, downlink), for those written.
    pub logs: [Option<LogTotals>; 2],
    /// The DNS relay's counters, when the host's resolver was on loopback ([`crate::dns`]).
    pub dns: Option<crate::dns::DnsCounts>,
}

impl SessionEnd {
    /// Every packet is accounted for in both directions (false would be a bug).
    pub fn balanced(&self) -> bool {
        self.summary.directions.iter().all(|d| d.balanced)
    }
}

/// A seed from the kernel's random generator.
pub fn fresh_seed() -> io::Result<u64> {
    mslink_io::seed::os_seed()
}

/// What `PROMPT_COMMAND` runs in bash before each prompt: puts `$MSLINK_PROMPT` in front of
/// `PS1` unless it is in it already (bash's start-up files usually set `PS1` after the
/// environment gave it one, as Debian's /etc/bash.bashrc does).
pub const PROMPT_COMMAND: &str =
    r#"case "$PS1" in *"$MSLINK_PROMPT"*) ;; *) PS1="$MSLINK_PROMPT $PS1" ;; esac"#;

/// The environment that names the link in a shell's prompt, as Mahimahi's shells do
/// (`[delay 20 ms] $`): `MSLINK_PROMPT` (an outer emulator's, then `mine`: nested emulators
/// read outermost first), `PS1` (that, then the `PS1` the environment had without the outer
/// emulator's text, else `\$ ` for bash and `# ` or `$ ` for other shells) and, for bash,
/// `PROMPT_COMMAND` ([`PROMPT_COMMAND`] after any command already there). `env` reads the
/// caller's environment; `root` picks `#` over `$`.
pub fn prompt_env(
    mine: &str,
    env: &dyn Fn(&str) -> Option<String>,
    root: bool,
) -> Vec<(String, String)> {
    let outer = env("MSLINK_PROMPT").filter(|p| !p.trim().is_empty());
    let prompt = match &outer {
        Some(o) => format!("{o} {mine}"),
        None => mine.to_string(),
    };
    let shell = env("SHELL").unwrap_or_default();
    let bash = std::path::Path::new(&shell)
        .file_name()
        .is_some_and(|n| n == "bash");
    let base = match env("PS1").filter(|p| !p.is_empty()) {
        Some(ps1) => match &outer {
            Some(o) => ps1.replacen(&format!("{o} "), "", 1),
            None => ps1,
        },
        None if bash => "\\$ ".to_string(),
        None if root => "# ".to_string(),
        None => "$ ".to_string(),
    };
    let command = match env("PROMPT_COMMAND").filter(|c| !c.trim().is_empty()) {
        Some(c) if c.contains(PROMPT_COMMAND) => c,
        Some(c) => format!("{c}\n{PROMPT_COMMAND}"),
        None => PROMPT_COMMAND.to_string(),
    };
    vec![
        ("MSLINK_PROMPT".to_string(), prompt.clone()),
        ("PS1".to_string(), format!("{prompt} {base}")),
        ("PROMPT_COMMAND".to_string(), command),
    ]
}

/// Quotes words for `sh -c`.
pub fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One side's network namespace, its address and its device.
struct SideNs {
    ns: Netns,
    created: bool,
    addr: Ipv4Addr,
    /// None where the kernel has no IPv6.
    addr6: Option<Ipv6Addr>,
    dev: String,
}

/// The IPv6 addresses of the sides: unique local addresses (RFC 4193) under fd6d:736c::/32
/// ("msl" in the global ID, fixed rather than random so they are recognisable, as 10.0.0.x
/// are): fd6d:736c::1 and ::2 for a pair (its namespaces are private), fd6d:736c:0:I:I::1 and
/// ::2 in single mode, where the right side is the caller's namespace and `instance` (32 bits)
/// keeps concurrent and nested emulators apart.
fn ula_pair(pair: bool, instance: u32) -> (Ipv6Addr, Ipv6Addr) {
    let (hi, lo) = if pair {
        (0, 0)
    } else {
        ((instance >> 16) as u16, instance as u16)
    };
    let a = |last| Ipv6Addr::new(0xfd6d, 0x736c, 0, hi, lo, 0, 0, last);
    (a(1), a(2))
}

/// IPv6 on a TUN device without traffic nobody asked for, so counts stay exact: no router
/// solicitations (`router_solicitations`, `accept_ra`), no link-local address
/// (`addr_gen_mode` 1: none), no duplicate address detection (`accept_dad`, `dad_transmits`;
/// a TUN device is IFF_NOARP, so Linux joins no solicited-node group on it and sends no MLD
/// report for one, `addrconf_join_solict`; IPv6 forwarding stays off, so no all-routers group
/// either). Written while
/// the device is down, before any address exists. Without `v6`, IPv6 is off on the device.
fn quiet_ipv6(ns: &Netns, dev: &str, v6: bool) -> io::Result<()> {
    let conf = |key: &str, value: &str| ns.sysctl(&format!("net/ipv6/conf/{dev}/{key}"), value);
    if !v6 {
        let _ = conf("disable_ipv6", "1");
        return Ok(());
    }
    for (key, value) in [
        ("accept_ra", "0"),
        ("router_solicitations", "0"),
        ("accept_dad", "0"),
        ("dad_transmits", "0"),
        ("addr_gen_mode", "1"),
        ("disable_ipv6", "0"),
    ] {
        conf(key, value)
            .map_err(|e| io::Error::new(e.kind(), format!("setting {dev}'s IPv6 {key}: {e}")))?;
    }
    Ok(())
}

/// The kernel gives device `dev` IPv6 (its conf directory exists) in `ns`.
fn has_ipv6(ns: &Netns, dev: &str) -> bool {
    ns.run(|| std::path::Path::new(&format!("/proc/sys/net/ipv6/conf/{dev}")).exists())
        .unwrap_or(false)
}

fn configure(
    side: &SideNs,
    peer: Ipv4Addr,
    peer6: Option<Ipv6Addr>,
    mtu: usize,
    default_route: bool,
) -> io::Result<()> {
    let dev = side.dev.as_str();
    let v6 = side.addr6.zip(peer6);
    quiet_ipv6(&side.ns, dev, v6.is_some())?;
    if side.created {
        side.ns.set_link("lo", &LinkChange::up())?;
        // A namespace of ours forwards, so an emulator nested inside (whose right end is a
        // device in this namespace) reaches the far side through both hops.
        side.ns.sysctl("net/ipv4/ip_forward", "1")?;
    }
    let mtu = u32::try_from(mtu).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("MTU {mtu} is too large"),
        )
    })?;
    side.ns.set_link(
        dev,
        &LinkChange {
            up: true,
            mtu: Some(mtu),
            txqueuelen: Some(1000),
            mac: None,
        },
    )?;
    side.ns
        .add_peer_address(dev, side.addr.into(), peer.into())?;
    if let Some((local, peer)) = v6 {
        side.ns.add_peer_address(dev, local.into(), peer.into())?;
    }
    if default_route {
        side.ns.add_default_route(dev, Family::V4)?;
        if v6.is_some() {
            side.ns.add_default_route(dev, Family::V6)?;
        }
    }
    Ok(())
}

fn signal_of(st: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.signal().unwrap_or(0)
}

fn stop_child(c: &mut Child) {
    if matches!(c.try_wait(), Ok(None)) {
        // unshare --kill-child takes its command (the PID namespace's init) down with it.
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
        }
        for _ in 0..100 {
            if !matches!(c.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = c.kill();
    }
    let _ = c.wait();
}

/// The commands of a run and what has become of them.
struct Children {
    procs: [Option<Child>; 2],
    status: [Option<i32>; 2],
    until: Until,
    /// The command holds the terminal ([`Netns::spawn_foreground`]).
    foreground: bool,
}

impl Children {
    fn poll(&mut self) {
        for (c, status) in self.procs.iter_mut().zip(&mut self.status) {
            if let (Some(ch), None) = (c.as_mut(), *status) {
                if let Ok(Some(st)) = ch.try_wait() {
                    *status = Some(st.code().unwrap_or(128 + signal_of(&st)));
                }
            }
        }
    }

    /// The policy says the run is over.
    fn finished(&self) -> bool {
        let has = |i: usize| self.procs[i].is_some();
        let done = |i: usize| !has(i) || self.status[i].is_some();
        match self.until {
            Until::Left => done(0),
            Until::Right => done(1),
            Until::Both => done(0) && done(1),
            Until::Either => {
                (has(0) && self.status[0].is_some()) || (has(1) && self.status[1].is_some())
            }
        }
    }

    fn stop(&mut self) {
        for c in self.procs.iter_mut().flatten() {
            stop_child(c);
        }
        self.poll();
        if self.foreground {
            // Best effort: the terminal may be gone (a hang-up).
            let _ = take_terminal();
        }
    }

    /// The status of the command the policy names.
    fn exit_code(&self) -> i32 {
        let s = self.status;
        let main = match self.until {
            Until::Left => s[0],
            Until::Right => s[1],
            Until::Both | Until::Either => s[0].filter(|&c| c != 0).or(s[1]).or(s[0]),
        };
        main.unwrap_or(0)
    }
}

/// What the event loop does between packets: live counters, signals, the commands' end.
struct Watch<'e> {
    children: &'e mut Children,
    on_event: &'e mut dyn FnMut(Event<'_>),
    next_check: Instant,
    stats_every: Option<Duration>,
    next_stats: Option<Instant>,
}

impl Watch<'_> {
    fn tick(&mut self, now: Instant, hop: &EmulatedHop) -> Control {
        if let (Some(t), Some(every)) = (self.next_stats, self.stats_every) {
            if now >= t {
                let live = hop.live_summary();
                (self.on_event)(Event::Stats { now, live: &live });
                self.next_stats = Some(t + every);
            }
        }
        if signals::stop_requested() {
            return Control::Interrupt;
        }
        if now >= self.next_check {
            self.next_check = now + Duration::from_millis(5);
            self.children.poll();
            if self.children.finished() {
                return Control::Stop;
            }
        }
        Control::Continue
    }
}

type Pcap = pcap_file::pcap::PcapWriter<SharedFile>;

/// How often captures and link logs are flushed while the emulator runs, so that they are
/// readable up to a second before the end even after SIGKILL.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The pcap files of a run; the first write error is kept for the end.
struct Captures {
    writers: [Option<Pcap>; 2],
    error: Option<pcap_file::PcapError>,
    /// `--pcap-link`: the frames on the air.
    link: Option<crate::linkpcap::LinkPcap<SharedFile>>,
    /// Every file above, to flush on a timer.
    files: Vec<SharedFile>,
}

impl Captures {
    /// The link-frame capture, if asked for; turns the hop's frame tap on.
    fn open_link(
        &mut self,
        path: Option<&PathBuf>,
        config: &EmuConfig,
        hop: &mut EmulatedHop,
        clock: &Clock,
    ) -> Result<(), SessionError> {
        let Some(p) = path else { return Ok(()) };
        let w = SharedFile::create(p, 1 << 20).map_err(os(format!("creating {}", p.display())))?;
        self.files.push(w.clone());
        let zero = crate::linkpcap::zero_unix_ns(clock.now());
        self.link = Some(
            crate::linkpcap::LinkPcap::new(w, &config.link_config(), zero)
                .map_err(SessionError::PcapHeader)?,
        );
        self.flush();
        hop.set_frame_tap(true);
        Ok(())
    }

    fn frame(&mut self, f: &crate::hop::TappedFrame) {
        if let Some(l) = self.link.as_mut() {
            l.write(f);
        }
    }

    fn open(paths: &[Option<PathBuf>; 2]) -> Result<Captures, SessionError> {
        let mut writers = [None, None];
        let mut files = Vec::new();
        for (w, path) in writers.iter_mut().zip(paths) {
            let Some(p) = path else { continue };
            let f =
                SharedFile::create(p, 1 << 16).map_err(os(format!("creating {}", p.display())))?;
            files.push(f.clone());
            let header = pcap_file::pcap::PcapHeader {
                datalink: pcap_file::DataLink::RAW,
                ..Default::default()
            };
            *w = Some(
                pcap_file::pcap::PcapWriter::with_header(f, header)
                    .map_err(SessionError::PcapHeader)?,
            );
        }
        let mut c = Captures {
            writers,
            error: None,
            link: None,
            files,
        };
        c.flush();
        Ok(c)
    }

    /// Writes what the files hold so far (see [`FLUSH_EVERY`]); the first error is kept.
    fn flush(&mut self) {
        for f in &mut self.files {
            use std::io::Write;
            if let Err(e) = f.flush() {
                self.error.get_or_insert(pcap_file::PcapError::IoError(e));
            }
        }
    }

    fn any(&self) -> bool {
        self.writers.iter().any(Option::is_some)
    }

    fn write(&mut self, side: Side, p: &[u8]) {
        if let Some(w) = self.writers[side].as_mut() {
            let ts = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            if let Err(e) = w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, p.len() as u32, p))
            {
                self.error.get_or_insert(e);
            }
        }
    }

    fn finish(self) -> Result<(), SessionError> {
        if let Some(e) = self.error {
            return Err(SessionError::PcapWrite(e));
        }
        if let Some(l) = self.link {
            l.finish().map_err(SessionError::PcapWrite)?;
        }
        for w in self.writers.into_iter().flatten() {
            use std::io::Write;
            w.into_writer().flush().map_err(os("writing a pcap file"))?;
        }
        Ok(())
    }
}

/// An emulator session, ready to run.
pub struct Session {
    config: SessionConfig,
    clock: Clock,
    hop: EmulatedHop,
}

impl Session {
    /// Builds the hop (its clock starts now); `load` returns the text of a file the
    /// configuration names (capacity and error traces).
    pub fn new(
        config: SessionConfig,
        load: &mut dyn FnMut(&str) -> std::io::Result<String>,
    ) -> Result<Session, SessionError> {
        let clock = Clock::new();
        let hop = config
            .emu
            .build(clock.now(), load)
            .map_err(SessionError::Config)?;
        Ok(Session { config, clock, hop })
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    fn pair(&self) -> bool {
        matches!(self.config.commands, Commands::Pair { .. })
    }

    /// The two sides: namespaces, addresses, device names.
    fn sides(&self) -> Result<[SideNs; 2], SessionError> {
        // Named by pid and PID namespace: nested emulators run in PID namespaces of their own
        // (`Netns::spawn`), where pids are small and repeat.
        let owner = DeviceOwner::me().map_err(os("naming the devices"))?;
        let instance = owner.instance();
        let (la, ra) = if self.pair() {
            ([10, 0, 0, 1].into(), [10, 0, 0, 2].into())
        } else {
            // 100.64.0.0/10 (shared address space), one /30 per emulator process.
            let base = 0x6440_0000u32 | ((instance & 0xf_ffff) << 2);
            ((base + 1).into(), (base + 2).into())
        };
        let (la6, ra6) = ula_pair(self.pair(), instance);
        let left = SideNs {
            ns: Netns::create().map_err(os("creating the left network namespace"))?,
            created: true,
            addr: self.config.left_addr.unwrap_or(la),
            addr6: Some(la6),
            dev: owner.device('l'),
        };
        let right = SideNs {
            ns: if self.pair() {
                Netns::create().map_err(os("creating the right network namespace"))?
            } else {
                Netns::current()?
            },
            created: self.pair(),
            addr: self.config.right_addr.unwrap_or(ra),
            addr6: Some(ra6),
            dev: owner.device('r'),
        };
        Ok([left, right])
    }

    /// Baseline: a veth pair, no emulator; its right end is made straight in the right
    /// namespace (by descriptor).
    fn veth(left: &SideNs, right: &SideNs) -> io::Result<()> {
        left.ns.add_veth(&left.dev, &right.ns, &right.dev)
    }

    fn tuns(&self, left: &SideNs, right: &SideNs) -> Result<[Tun; 2], SessionError> {
        let offload = self.config.emu.tun_offload;
        let create = |dev: &str| {
            if offload {
                // A kernel without the offloads gets a plain device (the summary says
                // `offload_enabled: false`).
                Tun::create_with_offloads(dev).or_else(|_| Tun::create(dev))
            } else {
                Tun::create(dev)
            }
        };
        let l = left
            .ns
            .run(|| create(&left.dev))?
            .map_err(os("creating the left TUN"))?;
        let r = right
            .ns
            .run(|| create(&right.dev))?
            .map_err(os("creating the right TUN"))?;
        Ok([l, r])
    }

    fn spawn(
        &self,
        sides: &[SideNs; 2],
        dns: Option<&HostDns>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<Children, SessionError> {
        let (cmds, interactive, until) = match &self.config.commands {
            Commands::Single(words) if words.is_empty() => {
                ([Some("exec ${SHELL:-sh}".to_string()), None], true, None)
            }
            Commands::Single(words) => ([Some(shell_join(words)), None], false, None),
            Commands::Pair { left, right, until } => ([left.clone(), right.clone()], false, *until),
        };
        let mut env = vec![
            ("MSLINK_LEFT".to_string(), sides[0].addr.to_string()),
            ("MSLINK_RIGHT".to_string(), sides[1].addr.to_string()),
        ];
        for (key, side) in [("MSLINK_LEFT6", &sides[0]), ("MSLINK_RIGHT6", &sides[1])] {
            if let Some(a) = side.addr6 {
                env.push((key.to_string(), a.to_string()));
            }
        }
        if let Some(mine) = &self.config.prompt {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            env.extend(prompt_env(mine, &|k| std::env::var(k).ok(), root));
        }
        // Started from a terminal's foreground, a single-mode command (the shell, or e.g.
        // `-- bash`) gets the terminal: Ctrl-C and job control reach it, not the emulator.
        let foreground =
            matches!(self.config.commands, Commands::Single(_)) && in_terminal_foreground();
        let mut procs = [None, None];
        for (i, (side, cmd)) in sides.iter().zip(&cmds).enumerate() {
            let Some(c) = cmd else { continue };
            let mut env = env.clone();
            env.push(("MSLINK_SIDE".into(), ["left", "right"][i].into()));
            let start = |overlay: Option<&FileOverlay>| {
                if foreground {
                    side.ns.spawn_foreground(c, &env, overlay)
                } else {
                    side.ns.spawn(c, &env, !interactive, overlay)
                }
            };
            let overlay = dns.map(|d| &d.overlay);
            let child = match start(overlay) {
                // Mounting the resolver's file needs CAP_SYS_ADMIN: without it the command
                // runs with the host's file (and no lookups), which the user is told.
                Err(e) if overlay.is_some() => {
                    on_event(Event::DnsUnavailable(&io::Error::new(
                        e.kind(),
                        format!("mounting the relay's resolv.conf over /etc/resolv.conf: {e}"),
                    )));
                    start(None)
                }
                r => r,
            };
            procs[i] = Some(child.map_err(os(format!("starting {c:?}")))?);
        }
        let until = until.unwrap_or(if procs[1].is_some() {
            Until::Right
        } else {
            Until::Left
        });
        Ok(Children {
            procs,
            status: [None, None],
            until,
            foreground,
        })
    }

    /// Carries the traffic between the devices until the commands are done or a signal came,
    /// then drains; returns whether the hop drained and the offload counters.
    fn carry(
        &mut self,
        tuns: &[Tun; 2],
        children: &mut Children,
        captures: &mut Captures,
        logs: &mut Logs,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(bool, [DeviceCounts; 2]), SessionError> {
        let stats_every = self.config.stats_interval;
        let mut watch = Watch {
            children,
            on_event,
            next_check: Instant::ZERO,
            stats_every,
            next_stats: stats_every.map(|d| self.clock.now() + d),
        };
        let has_capture = captures.any() || logs.any();
        let has_link = captures.link.is_some();
        let captures = std::cell::RefCell::new(captures);
        let logs = std::cell::RefCell::new(logs);
        let mut next_flush = self.clock.now() + FLUSH_EVERY;
        let mut tick = |now: Instant, hop: &EmulatedHop| {
            logs.borrow_mut().tick(now, hop);
            if now >= next_flush {
                next_flush = now + FLUSH_EVERY;
                logs.borrow_mut().flush();
                captures.borrow_mut().flush();
            }
            watch.tick(now, hop)
        };
        let mut capture = |side: Side, passage: Passage, t: Instant, p: &[u8]| {
            captures.borrow_mut().write(side, p);
            logs.borrow_mut().packet(side, passage, t, p);
        };
        let mut frame = |f: &crate::hop::TappedFrame| captures.borrow_mut().frame(f);
        let cfg = &self.config.emu;
        let end = runtime::run(
            &mut self.hop,
            [&tuns[0], &tuns[1]],
            &self.clock,
            runtime::loop_options(cfg),
            &mut tick,
            if has_capture {
                Some(&mut capture)
            } else {
                None
            },
            if has_link { Some(&mut frame) } else { None },
        )?;
        // Whatever the last turn left (nothing: the loop drains the tap every turn).
        self.hop.drain_tapped(&mut frame);
        Ok((end.drained, end.offload))
    }

    /// Runs the session to its end (see the module contract); `on_event` hears what happens
    /// meanwhile.
    pub fn run(mut self, on_event: &mut dyn FnMut(Event<'_>)) -> Result<SessionEnd, SessionError> {
        for name in sweep_stale() {
            on_event(Event::StaleDeviceRemoved(&name));
        }
        let nat_wanted = self.config.nat && !self.pair() && !self.config.direct;
        if nat_wanted {
            for table in crate::nat::sweep() {
                on_event(Event::StaleNatRemoved(&table));
            }
        }
        signals::install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
            .map_err(os("installing signal handlers"))?;
        let mut sides = self.sides()?;
        let tuns = if self.config.direct {
            Self::veth(&sides[0], &sides[1])?;
            None
        } else {
            Some(self.tuns(&sides[0], &sides[1])?)
        };
        // IPv6 on both sides or neither; not on a link below IPv6's minimum MTU (1280 bytes,
        // RFC 8200 §5), where the kernel refuses it (links/wlan.toml has 993).
        let mtu = self.config.emu.mtu;
        if mtu < 1280 || !sides.iter().all(|s| has_ipv6(&s.ns, &s.dev)) {
            for s in &mut sides {
                s.addr6 = None;
            }
        }
        let [left, right] = &sides;
        configure(left, right.addr, right.addr6, mtu, true)?;
        configure(right, left.addr, left.addr6, mtu, self.pair())?;
        // Dropped (the table removed) when the run ends, however it ends; after SIGKILL its
        // reaper removes it.
        let _nat = if nat_wanted {
            start_nat(right, left.addr, on_event)
        } else {
            None
        };
        on_event(Event::Ready {
            left: (left.addr, &left.dev),
            right: (right.addr, &right.dev),
            direct: self.config.direct,
        });
        let dns = if self.pair() {
            None
        } else {
            HostDns::start(right.addr, on_event)
        };
        let mut children = self.spawn(&sides, dns.as_ref(), on_event)?;
        // The command's mount holds the file now.
        let dns = dns.and_then(HostDns::started);
        let started = std::time::Instant::now();
        let mut captures = Captures::open(&self.config.pcap)?;
        if tuns.is_some() {
            captures.open_link(
                self.config.pcap_link.as_ref(),
                &self.config.emu,
                &mut self.hop,
                &self.clock,
            )?;
        }
        let mut logs = if tuns.is_some() {
            Logs::open(&self.config, &self.hop, &self.clock)?
        } else {
            Logs { logs: [None, None] }
        };
        let (drained, offload) = match &tuns {
            Some(tuns) => self.carry(tuns, &mut children, &mut captures, &mut logs, on_event)?,
            None => {
                while !children.finished() && !signals::stop_requested() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    children.poll();
                }
                (true, [DeviceCounts::default(); 2])
            }
        };
        children.stop();
        captures.finish()?;
        let logs = logs.finish(self.clock.now(), &self.hop)?;
        let summary = self.hop.summary();
        let side_end = |i: usize| {
            let s = &sides[i];
            SideEnd {
                addr: s.addr,
                addr6: s.addr6,
                device: s.dev.clone(),
                exit_status: children.status[i],
                counters: s.ns.net_dev().ok().and_then(|t| dev_counters(&t, &s.dev)),
            }
        };
        let sig = signals::stop_signal().unwrap_or(0);
        Ok(SessionEnd {
            // Stopped by a signal: the shell's convention, 128 + its number, not the status of
            // the commands the session then stopped.
            exit_code: if sig != 0 {
                128 + sig
            } else {
                children.exit_code()
            },
            signal: (sig != 0).then_some(sig),
            sides: [side_end(0), side_end(1)],
            wall: started.elapsed(),
            drained,
            summary,
            offload,
            offload_enabled: tuns.as_ref().is_some_and(|t| t[0].has_vnet_hdr()),
            udp_segmentation: tuns.as_ref().is_some_and(|t| t[0].has_uso()),
            logs,
            dns: dns.map(|f| f.counts()),
        })
    }
}

/// NAT from `inner` out through whatever the host reaches ([`crate::nat`]), told as an event;
/// `None` (and [`Event::NatUnavailable`]) if it cannot be set up.
fn start_nat(
    right: &SideNs,
    inner: Ipv4Addr,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Option<crate::nat::Nat> {
    match crate::nat::Nat::start(&right.dev, inner) {
        Ok(nat) => {
            on_event(Event::Nat {
                table: nat.table(),
                uplinks: nat.uplinks(),
            });
            Some(nat)
        }
        Err(e) => {
            on_event(Event::NatUnavailable(&e));
            None
        }
    }
}

/// The DNS relay of a single-mode run whose host resolver is on loopback ([`crate::dns`]): the
/// relay and the `resolv.conf` the command gets in place of the host's.
struct HostDns {
    /// `None` once handed over ([`HostDns::started`]).
    forwarder: Option<crate::dns::Forwarder>,
    overlay: FileOverlay,
    /// The file mounted for the command, removed once the command started.
    file: PathBuf,
}

/// The `resolv.conf` every resolver reads.
const RESOLV_CONF: &str = "/etc/resolv.conf";

impl HostDns {
    /// A relay on `listen` to the host's resolver if that is on loopback (else `None`: the
    /// command reaches it as it is); a failure is an event, not an error.
    fn start(listen: Ipv4Addr, on_event: &mut dyn FnMut(Event<'_>)) -> Option<HostDns> {
        let text = std::fs::read_to_string(RESOLV_CONF).ok()?;
        let upstream = crate::dns::loopback_upstream(&text)?;
        let made = (|| -> io::Result<HostDns> {
            let forwarder = crate::dns::Forwarder::start(listen.into(), upstream)?;
            let file = std::env::temp_dir().join(format!(
                "mslink-resolv-{}-{listen}.conf",
                std::process::id()
            ));
            std::fs::write(&file, crate::dns::rewrite(&text, listen.into()))?;
            let overlay = FileOverlay::new(&file, std::path::Path::new(RESOLV_CONF))?;
            Ok(HostDns {
                forwarder: Some(forwarder),
                overlay,
                file,
            })
        })();
        match made {
            Ok(d) => {
                if let Some(f) = &d.forwarder {
                    on_event(Event::Dns {
                        listen: f.listen(),
                        upstream,
                    });
                }
                Some(d)
            }
            Err(e) => {
                on_event(Event::DnsUnavailable(&e));
                None
            }
        }
    }

    /// Once the commands run: the file goes (their mounts keep it), the relay stays.
    fn started(mut self) -> Option<crate::dns::Forwarder> {
        self.forwarder.take()
    }
}

impl Drop for HostDns {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_link_and_nests_outermost_first() {
        let get = |pairs: &[(&str, &str)], k: &str| {
            pairs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, v)| v.to_string())
        };
        let find =
            |env: &[(String, String)], k: &str| env.iter().find(|(a, _)| a == k).unwrap().1.clone();
        // A bash user without PS1 in the environment.
        let outer = prompt_env(
            "[mslink wlan 5% sr]",
            &|k| get(&[("SHELL", "/bin/bash")], k),
            true,
        );
        assert_eq!(find(&outer, "MSLINK_PROMPT"), "[mslink wlan 5% sr]");
        assert_eq!(find(&outer, "PS1"), "[mslink wlan 5% sr] \\$ ");
        assert_eq!(find(&outer, "PROMPT_COMMAND"), PROMPT_COMMAND);
        // An existing PS1 is kept after the text; other shells get # or $.
        let e = prompt_env("[mslink x]", &|k| get(&[("PS1", "%m> ")], k), false);
        assert_eq!(find(&e, "PS1"), "[mslink x] %m> ");
        assert_eq!(
            find(&prompt_env("[mslink x]", &|_| None, false), "PS1"),
            "[mslink x] $ "
        );
        assert_eq!(
            find(&prompt_env("[mslink x]", &|_| None, true), "PS1"),
            "[mslink x] # "
        );
        // Nested: the outer emulator's environment, as its shell passes it on.
        let inner_env: Vec<(&str, &str)> = outer
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("SHELL", "/bin/bash")])
            .collect();
        let inner = prompt_env("[mslink 1% raw]", &|k| get(&inner_env, k), true);
        assert_eq!(
            find(&inner, "MSLINK_PROMPT"),
            "[mslink wlan 5% sr] [mslink 1% raw]"
        );
        assert_eq!(
            find(&inner, "PS1"),
            "[mslink wlan 5% sr] [mslink 1% raw] \\$ "
        );
        assert_eq!(
            find(&inner, "PROMPT_COMMAND"),
            PROMPT_COMMAND,
            "not appended twice"
        );
        // A PROMPT_COMMAND of the user's runs first.
        let e = prompt_env(
            "[mslink x]",
            &|k| get(&[("PROMPT_COMMAND", "history -a")], k),
            true,
        );
        assert_eq!(
            find(&e, "PROMPT_COMMAND"),
            format!("history -a\n{PROMPT_COMMAND}")
        );
    }

    #[test]
    fn shell_join_quotes() {
        assert_eq!(
            shell_join(&["echo".into(), "a b".into(), "it's".into()]),
            "echo 'a b' 'it'\\''s'"
        );
    }
}
