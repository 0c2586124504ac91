//! `mslink bench`: the end-system benchmark of 000 §IV on today's host — ping-pong round
//! trip vs message size (percentiles and a fitted line like 000's "10 + 0.01·size"),
//! throughput vs message size with per-process CPU from getrusage on each side, and per-call
//! cost tables for socket calls (000 Table 1) and the VI API (000 Table 2).
//!
//! Contract: `server` serves any number of tests on one VI connection; `client` drives
//! them; `local` starts a server child process on this host and runs the client against
//! it. Every wait has a timeout, so a lost peer ends the run with an error, never a hang.
//! Flow control is the VI consumer's job (a message with no receive descriptor is an
//! error): the server keeps `WINDOW` receives posted and returns credits.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use mslink_vi::{
    process_cpu, Backend, CqHandle, Descriptor, MemHandle, Nic, NicConfig, ViHandle, WaitMode,
    WorkQueue,
};
use serde::Serialize;

mod callcost;
mod netns;
mod output;
mod server;

use callcost::call_costs;
use output::report;
use server::{serve, spawn_server};

/// Receives the server keeps posted; the client may have this many messages in flight.
const WINDOW: usize = 16;
const OP_PINGPONG: u32 = 1;
const OP_SINK: u32 = 2;
const OP_QUIT: u32 = 3;
const TAG_SEND: u64 = 1 << 32;
const TIMEOUT: Duration = Duration::from_secs(20);

/// Options of `mslink bench`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  mslink bench local --quick               # both backends, small settings (CI)\n  mslink bench local --backend shm --sizes 64 --iters 100000\n  mslink bench local --backend tcp --backend uring --transport tcp --transport udp --sizes 65536\n  mslink bench local --netns --backend uring --quick      # across a veth between two namespaces (root)\n  mslink bench server --backend tcp --addr 0.0.0.0:7000   # on host A\n  mslink bench client --backend tcp --addr hostA:7000      # on host B"
)]
pub struct BenchArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// Run a server and the client on this host (server in a child process).
    Local(ClientOpts),
    /// Serve tests on one connection at --addr.
    Server(ServerOpts),
    /// Run the tests against a server at --addr.
    Client(ClientOpts),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum BackendArg {
    /// Shared-memory rings (same host only).
    Shm,
    /// Plain sockets, TCP (the baseline; works across hosts).
    #[value(alias = "sockets")]
    Tcp,
    /// Plain sockets, UDP (one datagram per message, at most 65,499 bytes).
    Udp,
    /// io_uring over TCP (fixed buffers, fixed file, batched submission, SEND_ZC).
    #[value(name = "uring", alias = "uring-tcp")]
    UringTcp,
    /// io_uring over UDP.
    UringUdp,
    /// Plain blocking TCP sockets without the VI layer (local ping-pong reference only).
    #[value(skip)]
    Sock,
}

impl BackendArg {
    fn backend(self) -> Backend {
        match self {
            Self::Shm => Backend::SharedMemory,
            Self::Tcp | Self::Sock => Backend::Tcp,
            Self::Udp => Backend::Udp,
            Self::UringTcp => Backend::UringTcp,
            Self::UringUdp => Backend::UringUdp,
        }
    }

    /// The same API over `t` (`--transport`): sockets and io_uring switch between TCP and
    /// UDP; shared memory has no transport.
    fn over(self, t: TransportArg) -> Self {
        match (self, t) {
            (Self::Tcp | Self::Udp, TransportArg::Tcp) => Self::Tcp,
            (Self::Tcp | Self::Udp, TransportArg::Udp) => Self::Udp,
            (Self::UringTcp | Self::UringUdp, TransportArg::Tcp) => Self::UringTcp,
            (Self::UringTcp | Self::UringUdp, TransportArg::Udp) => Self::UringUdp,
            (b, _) => b,
        }
    }

    /// The name `--backend` takes (and tables print).
    fn name(self) -> &'static str {
        match self {
            Self::Shm => "shm",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::UringTcp => "uring",
            Self::UringUdp => "uring-udp",
            Self::Sock => "sock",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum TransportArg {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum ModeArg {
    /// Spin on the completion queue.
    Poll,
    /// Sleep in the kernel until completion.
    Block,
}

impl ModeArg {
    fn mode(self) -> WaitMode {
        match self {
            Self::Poll => WaitMode::Poll,
            Self::Block => WaitMode::Block,
        }
    }
}

#[derive(Args, Debug, Clone)]
struct ServerOpts {
    /// Backend.
    #[arg(long, value_enum, default_value = "shm")]
    backend: BackendArg,
    /// Listen address: a Unix socket path (shm) or ip:port (tcp).
    #[arg(long)]
    addr: String,
    /// Largest message the server accepts (bytes).
    #[arg(long, default_value_t = 1 << 20)]
    max_size: usize,
    /// io_uring: plain SEND instead of SEND_ZC.
    #[arg(long)]
    no_zc: bool,
}

#[derive(Args, Debug, Clone)]
struct ClientOpts {
    /// Backends to measure (`local` may take several: --backend shm --backend tcp
    /// --backend uring); `sockets` is another name for `tcp`.
    #[arg(long, value_enum, default_values = ["shm", "tcp"])]
    backend: Vec<BackendArg>,
    /// Transport of the sockets and io_uring backends (shm ignores it); may be given twice.
    #[arg(long, value_enum)]
    transport: Vec<TransportArg>,
    /// io_uring: plain SEND instead of SEND_ZC (client and, with `local`, server).
    #[arg(long)]
    no_zc: bool,
    /// `local` only: run the server and the client in two fresh network namespaces joined
    /// by a veth pair (msv<pid>a/b, removed afterwards; needs root).
    #[arg(long)]
    netns: bool,
    /// Server address (client only).
    #[arg(long, default_value = "")]
    addr: String,
    /// Wait modes to measure.
    #[arg(long, value_enum, default_values = ["poll", "block"])]
    mode: Vec<ModeArg>,
    /// Message sizes in bytes (default: powers of two 1 B .. --max-size).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Largest message size (bytes).
    #[arg(long, default_value_t = 1 << 20)]
    max_size: usize,
    /// Round trips per size (after --warmup).
    #[arg(long, default_value_t = 10_000)]
    iters: usize,
    /// Unrecorded round trips per size.
    #[arg(long, default_value_t = 1_000)]
    warmup: usize,
    /// Bytes pushed per throughput point (at least 64 messages).
    #[arg(long, default_value_t = 256 << 20)]
    volume: usize,
    /// Most messages per throughput point.
    #[arg(long, default_value_t = 200_000)]
    max_messages: usize,
    /// Repetitions per call in the call-cost tables.
    #[arg(long, default_value_t = 2_000)]
    calls: usize,
    /// Small settings that finish in seconds (CI).
    #[arg(long)]
    quick: bool,
    /// Write pingpong.csv, throughput.csv and callcost.csv into this directory, with the
    /// figures throughput, cpu_per_byte and rtt as PNG and SVG beside them.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// With --csv: do not draw the PNG and SVG figures.
    #[arg(long)]
    no_plots: bool,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
}

/// Run `mslink bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.role {
        Role::Server(o) => serve(o),
        Role::Client(o) => report(&client_all(o, None)?, o),
        Role::Local(o) => report(&client_all(o, Some(()))?, o),
    }
}

// ---------------------------------------------------------------- results

#[derive(Serialize, Debug, Clone)]
struct PingRow {
    backend: BackendArg,
    mode: ModeArg,
    /// "loopback" or "veth" (`--netns`; the `sock` reference always runs on loopback).
    path: &'static str,
    size: usize,
    iters: usize,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    mean_us: f64,
}

#[derive(Serialize, Debug, Clone)]
struct ThroughputRow {
    backend: BackendArg,
    mode: ModeArg,
    /// "loopback" or "veth" (`--netns`).
    path: &'static str,
    size: usize,
    messages: usize,
    seconds: f64,
    mbit_s: f64,
    client_user_s: f64,
    client_sys_s: f64,
    server_user_s: f64,
    server_sys_s: f64,
    /// Client + server CPU seconds per gigabyte moved.
    cpu_s_per_gb: f64,
    /// Client (sender) user+system CPU nanoseconds per byte moved.
    client_cpu_ns_per_byte: f64,
    /// Server (receiver) user+system CPU nanoseconds per byte moved.
    server_cpu_ns_per_byte: f64,
    /// io_uring SEND_ZC sends during this point (client side) and how many the kernel copied.
    zc_sends: u64,
    /// Of `zc_sends`, those with IORING_NOTIF_USAGE_ZC_COPIED set.
    zc_copied: u64,
}

#[derive(Serialize, Debug, Clone)]
struct CallRow {
    api: &'static str,
    call: &'static str,
    mean_us: f64,
}

#[derive(Serialize, Debug, Clone)]
struct Fit {
    backend: BackendArg,
    mode: ModeArg,
    fixed_us: f64,
    us_per_byte: f64,
}

#[derive(Serialize, Debug, Default)]
struct Report {
    pingpong: Vec<PingRow>,
    rtt_fit: Vec<Fit>,
    throughput: Vec<ThroughputRow>,
    callcost: Vec<CallRow>,
    /// Socket send+recv pair over VI post send + send wait + post recv + recv wait.
    socket_over_vi_ratio: f64,
}

impl PingRow {
    /// The row of a loopback ping-pong from its round trips (ns, any order).
    fn from_rtts(
        backend: BackendArg,
        mode: ModeArg,
        size: usize,
        iters: usize,
        mut rtts: Vec<u64>,
    ) -> PingRow {
        rtts.sort_unstable();
        let mean = rtts.iter().sum::<u64>() as f64 / rtts.len().max(1) as f64 / 1e3;
        PingRow {
            backend,
            mode,
            path: "loopback",
            size,
            iters,
            p50_us: percentile(&rtts, 0.5),
            p90_us: percentile(&rtts, 0.9),
            p99_us: percentile(&rtts, 0.99),
            p999_us: percentile(&rtts, 0.999),
            max_us: rtts.last().map_or(0.0, |&x| x as f64 / 1e3),
            mean_us: mean,
        }
    }
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1e3
}

/// Least-squares line y = a + b·x (000 §IV.C.2's round-trip equation), weighted by 1/y²
/// so that every size counts by its relative error: with sizes in powers of two an
/// unweighted fit is set by the largest messages alone and can give a negative fixed cost.
fn fit_line(pts: &[(f64, f64)]) -> (f64, f64) {
    let w = |y: f64| if y > 0.0 { 1.0 / (y * y) } else { 0.0 };
    let sw: f64 = pts.iter().map(|p| w(p.1)).sum();
    if pts.len() < 2 || sw <= 0.0 {
        return (pts.first().map_or(0.0, |p| p.1), 0.0);
    }
    let mx = pts.iter().map(|p| w(p.1) * p.0).sum::<f64>() / sw;
    let my = pts.iter().map(|p| w(p.1) * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts.iter().map(|p| w(p.1) * (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| w(p.1) * (p.0 - mx) * (p.1 - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

// ---------------------------------------------------------------- one VI end

struct End {
    nic: Nic,
    cq: CqHandle,
    vi: ViHandle,
    mem: MemHandle,
    slot: usize,
    mode: WaitMode,
}

impl End {
    fn new(backend: Backend, slot: usize, slots: usize, zc: bool) -> Result<Self> {
        let cfg = NicConfig {
            send_zc: zc,
            ..NicConfig::default()
        };
        let mut nic = Nic::open(backend, cfg)?;
        let cq = nic.create_cq();
        let vi = nic.create_vi(cq, cq)?;
        let mem = nic.register_mem(vec![0; slot * slots]);
        Ok(Self {
            nic,
            cq,
            vi,
            mem,
            slot,
            mode: WaitMode::Block,
        })
    }

    fn post_recv(&mut self, i: usize) -> Result<()> {
        let seg = self.nic.segment(self.mem, i * self.slot, self.slot)?;
        self.nic
            .post_recv(self.vi, &Descriptor::single(seg, i as u64))?;
        Ok(())
    }

    fn send(&mut self, i: usize, len: usize, imm: u32) -> Result<()> {
        let seg = self.nic.segment(self.mem, i * self.slot, len)?;
        let mut d = Descriptor::single(seg, TAG_SEND | i as u64);
        d.immediate = imm;
        self.nic.post_send(self.vi, &d)?;
        Ok(())
    }

    fn send_deferred(&mut self, i: usize, len: usize, imm: u32) -> Result<()> {
        let seg = self.nic.segment(self.mem, i * self.slot, len)?;
        let mut d = Descriptor::single(seg, TAG_SEND | i as u64);
        d.immediate = imm;
        self.nic.post_send_deferred(self.vi, &d)?;
        Ok(())
    }

    fn wait(&mut self) -> Result<mslink_vi::Completion> {
        let c = self.nic.cq_wait(self.cq, TIMEOUT, self.mode)?;
        if !c.is_ok() {
            bail!("transfer failed: {:?} on {:?}", c.status, c.queue);
        }
        Ok(c)
    }

    fn words(&self, slot: usize) -> Result<[u64; 4]> {
        let b = &self.nic.mem(self.mem)?[slot * self.slot..];
        let mut w = [0u64; 4];
        for (k, x) in w.iter_mut().enumerate() {
            *x = u64::from_le_bytes(b[k * 8..k * 8 + 8].try_into()?);
        }
        Ok(w)
    }

    fn put_words(&mut self, slot: usize, w: &[u64]) -> Result<()> {
        let s = self.slot;
        let b = &mut self.nic.mem_mut(self.mem)?[slot * s..];
        for (k, x) in w.iter().enumerate() {
            b[k * 8..k * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- client

fn client_all(o: &ClientOpts, local: Option<()>) -> Result<Report> {
    let mut o = o.clone();
    if o.quick {
        o.max_size = o.max_size.min(64 << 10);
        o.iters = o.iters.min(300);
        o.warmup = o.warmup.min(30);
        o.volume = o.volume.min(4 << 20);
        o.max_messages = o.max_messages.min(5_000);
        o.calls = o.calls.min(200);
    }
    let sizes: Vec<usize> = if o.sizes.is_empty() {
        std::iter::successors(Some(1usize), |s| s.checked_mul(2))
            .take_while(|&s| s <= o.max_size)
            .collect()
    } else {
        o.sizes.clone()
    };
    let max = sizes.iter().copied().max().unwrap_or(1).max(64);
    let mut rep = Report::default();
    // Every backend over every requested transport, each once.
    let transports = if o.transport.is_empty() {
        vec![TransportArg::Tcp]
    } else {
        o.transport.clone()
    };
    let mut backends: Vec<BackendArg> = Vec::new();
    for &b in &o.backend {
        for &t in &transports {
            if !backends.contains(&b.over(t)) {
                backends.push(b.over(t));
            }
        }
    }
    let mut ns = match (local, o.netns) {
        (Some(()), true) => Some(netns::NetnsPair::create()?),
        (None, true) => bail!("--netns needs `mslink bench local`"),
        _ => None,
    };
    if let Some(n) = ns.as_mut() {
        n.enter_client()?;
    }
    let path = if ns.is_some() { "veth" } else { "loopback" };
    for &b in &backends {
        // A UDP message is one datagram: sizes beyond it are left out for UDP backends.
        let sizes: Vec<usize> = sizes
            .iter()
            .copied()
            .filter(|&s| s <= b.backend().max_message())
            .collect();
        let max = max.min(b.backend().max_message());
        let (_child, addr) = match local {
            Some(()) => {
                let (c, a) = spawn_server(b, max, !o.no_zc, ns.as_ref().map(|n| n.a.as_str()))?;
                (Some(c), a)
            }
            None => (None, o.addr.clone()),
        };
        let mut e = End::new(b.backend(), max, WINDOW + 1, !o.no_zc)?;
        for i in 0..WINDOW {
            e.post_recv(i)?;
        }
        e.nic
            .connect(e.vi, &addr, TIMEOUT)
            .with_context(|| format!("connect to {addr}"))?;
        for &m in &o.mode {
            e.mode = m.mode();
            let mut pts = Vec::new();
            for &s in &sizes {
                let mut row = pingpong(&mut e, b, m, s, o.iters, o.warmup)
                    .with_context(|| format!("ping-pong {b:?} {m:?} {s} B"))?;
                row.path = path;
                pts.push((s as f64, row.p50_us));
                rep.pingpong.push(row);
            }
            let (a, k) = fit_line(&pts);
            rep.rtt_fit.push(Fit {
                backend: b,
                mode: m,
                fixed_us: a,
                us_per_byte: k,
            });
            for &s in &sizes {
                let mut row = throughput(&mut e, b, m, s, o.volume, o.max_messages)
                    .with_context(|| format!("throughput {b:?} {m:?} {s} B"))?;
                row.path = path;
                rep.throughput.push(row);
            }
        }
        control(&mut e, [OP_QUIT as u64, 0, 0, 0], false)?;
        let _ = e.nic.disconnect(e.vi);
    }
    if local.is_some() && backends.contains(&BackendArg::Tcp) {
        // Reference: the same ping-pong with plain blocking sockets and no VI framing, to
        // show what the VI layer adds on the TCP path.
        let mut pts = Vec::new();
        for &s in &sizes {
            let row = raw_socket_pingpong(s, o.iters, o.warmup)
                .with_context(|| format!("raw socket ping-pong {s} B"))?;
            pts.push((s as f64, row.p50_us));
            rep.pingpong.push(row);
        }
        let (a, k) = fit_line(&pts);
        rep.rtt_fit.push(Fit {
            backend: BackendArg::Sock,
            mode: ModeArg::Block,
            fixed_us: a,
            us_per_byte: k,
        });
    }
    rep.callcost = call_costs(o.calls)?;
    let get = |api: &str, call: &str| {
        rep.callcost
            .iter()
            .find(|r| r.api == api && r.call == call)
            .map_or(0.0, |r| r.mean_us)
    };
    let vi_total = get(
        "vi",
        "total of 4 (post send + send wait + post recv + recv wait)",
    );
    if vi_total > 0.0 {
        rep.socket_over_vi_ratio = get("socket", "send()+recv() 1 B") / vi_total;
    }
    Ok(rep)
}

/// Send a control message from the client's spare slot and wait for the 8-byte ack.
fn control(e: &mut End, w: [u64; 4], want_ack: bool) -> Result<()> {
    let spare = WINDOW;
    e.put_words(spare, &w)?;
    e.send(spare, 32, 0)?;
    if !want_ack {
        // Wait for the send only.
        loop {
            if e.wait()?.queue == WorkQueue::Send {
                return Ok(());
            }
        }
    }
    let mut acked = false;
    let mut sent = false;
    while !(acked && sent) {
        let c = e.wait()?;
        match c.queue {
            WorkQueue::Send => sent = true,
            WorkQueue::Recv => {
                e.post_recv(c.tag as usize)?;
                acked = true;
            }
        }
    }
    Ok(())
}

fn pingpong(
    e: &mut End,
    b: BackendArg,
    m: ModeArg,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<PingRow> {
    let total = iters + warmup;
    let mode = u64::from(m == ModeArg::Poll);
    control(
        e,
        [OP_PINGPONG as u64, size as u64, total as u64, mode],
        true,
    )?;
    let mut rtts = Vec::with_capacity(iters);
    for i in 0..total {
        let t0 = Instant::now();
        e.send(WINDOW, size, 0)?;
        let (mut sent, mut back) = (false, false);
        while !(sent && back) {
            let c = e.wait()?;
            match c.queue {
                WorkQueue::Send => sent = true,
                WorkQueue::Recv => {
                    back = true;
                    if i >= warmup {
                        rtts.push(t0.elapsed().as_nanos() as u64);
                    }
                    e.post_recv(c.tag as usize)?;
                }
            }
        }
    }
    Ok(PingRow::from_rtts(b, m, size, iters, rtts))
}

/// Ping-pong over plain blocking TCP sockets (write_all / read_exact), echo in a thread.
fn raw_socket_pingpong(size: usize, iters: usize, warmup: usize) -> Result<PingRow> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let at = l.local_addr()?;
    let total = iters + warmup;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; size];
        for _ in 0..total {
            s.read_exact(&mut buf)?;
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let mut c = TcpStream::connect(at)?;
    c.set_nodelay(true)?;
    c.set_read_timeout(Some(TIMEOUT))?;
    let mut buf = vec![0u8; size];
    let mut rtts = Vec::with_capacity(iters);
    for i in 0..total {
        let t0 = Instant::now();
        c.write_all(&buf)?;
        c.read_exact(&mut buf)?;
        if i >= warmup {
            rtts.push(t0.elapsed().as_nanos() as u64);
        }
    }
    echo.join()
        .map_err(|_| anyhow::anyhow!("echo thread panicked"))??;
    Ok(PingRow::from_rtts(
        BackendArg::Sock,
        ModeArg::Block,
        size,
        iters,
        rtts,
    ))
}

fn throughput(
    e: &mut End,
    b: BackendArg,
    m: ModeArg,
    size: usize,
    volume: usize,
    max_messages: usize,
) -> Result<ThroughputRow> {
    let count = (volume / size.max(1)).clamp(64, max_messages.max(64));
    let mode = u64::from(m == ModeArg::Poll);
    control(e, [OP_SINK as u64, size as u64, count as u64, mode], true)?;
    let zc0 = e.nic.vi_stats(e.vi)?;
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let (mut credits, mut sent, mut server_cpu) = (WINDOW, 0usize, None);
    let mut sends_done = 0usize;
    while server_cpu.is_none() || sends_done < count {
        // Post every credited message, then ring the doorbell once (000 §III.A): a
        // provider may hand the batch to the kernel in one call (io_uring: one
        // io_uring_enter, one gathered SENDMSG over TCP); the sockets backends still make
        // one system call per message.
        let posted = sent;
        while credits > 0 && sent < count {
            e.send_deferred(WINDOW, size, 0)?;
            credits -= 1;
            sent += 1;
        }
        if sent > posted {
            e.nic.doorbell(e.vi)?;
        }
        let c = e.wait()?;
        match c.queue {
            WorkQueue::Send => sends_done += 1,
            WorkQueue::Recv => {
                let slot = c.tag as usize;
                if c.immediate == u32::MAX {
                    let w = e.words(slot)?;
                    server_cpu = Some((w[0] as f64 / 1e6, w[1] as f64 / 1e6));
                } else {
                    credits += c.immediate as usize;
                }
                e.post_recv(slot)?;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu1 = process_cpu();
    let zc1 = e.nic.vi_stats(e.vi)?;
    let (su, ss) = server_cpu.unwrap_or_default();
    let cu = cpu1.0.saturating_sub(cpu0.0).as_secs_f64();
    let cs = cpu1.1.saturating_sub(cpu0.1).as_secs_f64();
    let bytes = (count * size) as f64;
    Ok(ThroughputRow {
        backend: b,
        mode: m,
        size,
        messages: count,
        seconds: secs,
        mbit_s: bytes * 8.0 / secs / 1e6,
        client_user_s: cu,
        client_sys_s: cs,
        server_user_s: su,
        server_sys_s: ss,
        cpu_s_per_gb: (cu + cs + su + ss) / (bytes / 1e9),
        client_cpu_ns_per_byte: (cu + cs) * 1e9 / bytes,
        server_cpu_ns_per_byte: (su + ss) * 1e9 / bytes,
        zc_sends: zc1.zc_sends.saturating_sub(zc0.zc_sends),
        zc_copied: zc1.zc_copied.saturating_sub(zc0.zc_copied),
        path: "loopback",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_fit_recovers_a_known_line() {
        // Points on 10 + 0.01·x (000's Linux equation), computed here independently.
        let pts: Vec<(f64, f64)> = [1.0, 100.0, 1000.0, 4096.0]
            .iter()
            .map(|&x| (x, 10.0 + 0.01 * x))
            .collect();
        let (a, b) = fit_line(&pts);
        assert!((a - 10.0).abs() < 1e-9 && (b - 0.01).abs() < 1e-12);
    }

    #[test]
    fn line_fit_keeps_a_positive_fixed_cost_under_noise_at_large_sizes() {
        // 1 µs + 0.001 µs/B, with the two largest points 30% slow (a noisy tail).
        let mut pts: Vec<(f64, f64)> = (0..21)
            .map(|k| {
                let x = f64::from(1u32 << k);
                (x, 1.0 + 0.001 * x)
            })
            .collect();
        for p in pts.iter_mut().skip(19) {
            p.1 *= 1.3;
        }
        let (a, b) = fit_line(&pts);
        assert!(a > 0.5 && a < 1.5, "fixed cost {a}");
        assert!(b > 0.0009 && b < 0.0014, "per byte {b}");
    }

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<u64> = (1..=1000).map(|x| x * 1000).collect();
        assert_eq!(percentile(&v, 0.5), 500.0);
        assert_eq!(percentile(&v, 0.999), 999.0);
        assert_eq!(percentile(&v, 1.0), 1000.0);
    }
}
