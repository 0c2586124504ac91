//! Round-trip benchmarks of the protocol graph (002 §5.2, Tables 1-3, Fig. 4; what `mslink
//! stack-bench` runs): per stack (ETH, IP-ETH, UDP-IP-ETH, TCP-IP-ETH), architecture (LLM, DAA, ILLM) and
//! user data size, UDP with its checksum on with ILP off vs on, and the round trip of a
//! prioritised flow among background flows.
//!
//! Contract: a client and a server stack in this process ping-pong a number of times per
//! cell; the figure is the mean wall-clock round trip (this driver reads the clock; the stacks
//! do not). On the in-memory wire ([`Wire`]) it measures protocol processing alone: no device,
//! no copy to a kernel, no interrupt; [`veth_tables`] runs the same over AF_PACKET sockets on
//! a veth pair between two unnamed network namespaces it creates and removes (Linux, root).
//! Checksums are off in the latency tables, as in 002 §5.2.
//!
//! In the round-trip and ILP tables a cell (layer and size) measures its architectures
//! interleaved, in alternating order repetition by repetition, and keeps every repetition's
//! mean: a row's figure is the mean over the repetitions, with a Student-t 95% interval, and
//! DAA's and ILLM's rows carry their paired ratio to LLM's with its interval and verdict
//! ([`interleave`]). 002 §5.3-5.4 compare both with LLM by a few percent; measured one
//! architecture after the other, the machine's drift would decide that (issue 34).
//!
//! The table functions hand each cell's rows (`on_cell`) or, for Fig. 4, each [`Row`]
//! (`on_row`) to the caller as soon as they are measured (to show progress) and return them
//! all; nothing here prints. [`text`] renders the rows as the verb's tables (cell by cell, for
//! the caller to print as they come), [`json`] as its JSON documents, and [`files`] writes
//! them as CSV.

// The benchmark harness: it times the protocol graph with the wall clock and drives veth
// sockets. docs/architecture.md rule 1 (no clock, sleep, thread, socket or file) binds the
// protocol modules, which clippy.toml enforces; this module measures them.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Instant as WallClock;

use mslink_link::Instant;

use crate::wire::Wire;
use crate::{Architecture, EndpointId, Participants, Stack, StackConfig, StackError, UdpConn};

pub mod files;
pub mod interleave;
pub mod json;
pub mod text;

pub use interleave::{PairedRatio, Verdict};

/// User data sizes of 002 Tables 1-3.
pub const SIZES: [usize; 5] = [1, 100, 500, 1000, 1400];
/// Background flow counts of 002 Fig. 4.
pub const FIG4_BACKGROUND: [usize; 6] = [0, 2, 4, 8, 12, 16];
/// Most transactions per cell over the veth (each one crosses the kernel twice).
pub const VETH_MAX_TRANSACTIONS: u32 = 2000;
/// Ethertype of an application directly on Ethernet (IEEE local experimental 2).
const APP_ETHERTYPE: u32 = 0x88B6;
/// IP protocol number of an application directly on IP (RFC 3692 experimental).
const APP_IPPROTO: u32 = 253;

/// Why a benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A stack refused to open an endpoint or send.
    #[error(transparent)]
    Stack(#[from] StackError),
    /// A device or namespace operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A message that should have arrived did not.
    #[error("{0}")]
    Missing(&'static str),
    /// The echo thread panicked.
    #[error("echo thread panicked")]
    Panicked,
    /// `source` happened while doing `what`.
    #[error("{what}")]
    Context {
        /// What the benchmark was doing.
        what: &'static str,
        /// The failure.
        source: Box<BenchError>,
    },
}

fn context<E: Into<BenchError>>(what: &'static str) -> impl FnOnce(E) -> BenchError {
    move |e| BenchError::Context {
        what,
        source: Box::new(e.into()),
    }
}

/// The protocol an application sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Directly on Ethernet.
    Eth,
    /// On IPv4.
    Ip,
    /// On UDP.
    Udp,
    /// On (the minimal) TCP: 002 Table 1's TCP-IP-ETH row.
    Tcp,
}

impl Layer {
    /// Every layer, lowest first.
    pub const ALL: [Layer; 4] = [Layer::Eth, Layer::Ip, Layer::Udp, Layer::Tcp];

    /// The stack's name in 002's tables (`UDP-IP-ETHDAA` for DAA).
    pub fn name(self, arch: Architecture) -> String {
        let base = match self {
            Layer::Eth => "ETH",
            Layer::Ip => "IP-ETH",
            Layer::Udp => "UDP-IP-ETH",
            Layer::Tcp => "TCP-IP-ETH",
        };
        if arch == Architecture::Daa {
            format!("{base}DAA")
        } else {
            base.to_string()
        }
    }
}

/// One measured cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// "memory" (in-memory wire) or "veth" (AF_PACKET).
    pub device: &'static str,
    /// Architecture name, or `fig4-bg<N>` for 002 Fig. 4 with N background flows.
    pub architecture: String,
    /// Stack name ([`Layer::name`]), or for Fig. 4 `UDPDAA-prio` / `UDP`.
    pub stack: String,
    /// User data bytes (Fig. 4: of the background flows).
    pub size: usize,
    /// UDP checksum on.
    pub checksum: bool,
    /// Integrated copy and checksum on.
    pub ilp: bool,
    /// Mean round trip over the repetitions (Fig. 4: median of the probe's), µs.
    pub rtt_us: f64,
    /// Each repetition's mean round trip, µs, in repetition order (empty for Fig. 4).
    pub reps_us: Vec<f64>,
    /// Against LLM in the same cell, repetition by repetition (DAA and ILLM rows of the
    /// interleaved tables; `None` for LLM and Fig. 4).
    pub vs_llm: Option<PairedRatio>,
}

impl Row {
    /// Half-width of the Student-t 95% interval of [`Row::rtt_us`] (`None` without
    /// repetitions; infinite with one).
    pub fn ci95_us(&self) -> Option<f64> {
        (!self.reps_us.is_empty()).then(|| mslink_stats::estimate(&self.reps_us).half)
    }

    /// The smallest repetition's mean round trip (what the tables reported before issue 34).
    pub fn best_us(&self) -> Option<f64> {
        self.reps_us.iter().copied().min_by(f64::total_cmp)
    }
}

/// A client and a server stack with one endpoint each, on the same layer.
pub struct Pair {
    /// The client stack.
    pub client: Stack,
    /// The server stack.
    pub server: Stack,
    /// The client's endpoint.
    pub ce: EndpointId,
}

/// A client and a server of `arch` whose applications sit on `layer`; `checksum`: UDP
/// checksum on; `ilp`: integrated copy and checksum.
pub fn pair(
    arch: Architecture,
    layer: Layer,
    checksum: bool,
    ilp: bool,
) -> Result<Pair, BenchError> {
    let cc = StackConfig {
        architecture: arch,
        ilp,
        ..Default::default()
    };
    let cs = StackConfig {
        architecture: arch,
        ilp,
        ..StackConfig::host(2)
    };
    pair_of(cc, cs, layer, checksum)
}

/// A client with configuration `cc` and a server with `cs` (hosts 1 and 2), applications on
/// `layer`.
fn pair_of(
    cc: StackConfig,
    cs: StackConfig,
    layer: Layer,
    checksum: bool,
) -> Result<Pair, BenchError> {
    let (mut client, ic) = Stack::udp_ip_eth(cc.clone());
    let (mut server, is) = Stack::udp_ip_eth(cs.clone());
    let pc = Participants {
        remote_mac: cs.station,
        remote_ip: cs.address,
        local_port: 7000,
        remote_port: 7,
        remote_app: 2,
        udp_checksum: checksum,
        ..Default::default()
    };
    let ps = Participants {
        remote_mac: cc.station,
        remote_ip: cc.address,
        local_port: 7,
        remote_port: 7000,
        remote_app: 1,
        udp_checksum: checksum,
        ..Default::default()
    };
    let (top_c, top_s, number) = match layer {
        Layer::Eth => (ic.eth, is.eth, APP_ETHERTYPE),
        Layer::Ip => (ic.ip, is.ip, APP_IPPROTO),
        Layer::Udp => (ic.udp, is.udp, 0),
        Layer::Tcp => (ic.tcp, is.tcp, 0),
    };
    let (ce, _) = client
        .open(top_c, pc, number, Some(1))
        .map_err(context("opening the client endpoint"))?;
    server
        .open(top_s, ps, number, Some(2))
        .map_err(context("opening the server endpoint"))?;
    Ok(Pair { client, server, ce })
}

/// Mean round trip in microseconds over `n` ping-pongs of `size` bytes on the in-memory wire.
pub fn ping_pong(p: &mut Pair, size: usize, n: u32) -> Result<f64, BenchError> {
    let data = vec![0x42u8; size];
    let mut w = Wire::new();
    let t = Instant::ZERO;
    let start = WallClock::now();
    for _ in 0..n {
        p.client.send(t, p.ce, &data)?;
        w.pump(t, &mut p.client, &mut p.server);
        let Some(d) = p.server.poll_deliver() else {
            return Err(BenchError::Missing("server received nothing"));
        };
        // Echo the user data (an application on raw Ethernet also sees the link padding).
        p.server
            .send(t, d.endpoint, &d.data[..size.min(d.data.len())])?;
        w.pump(t, &mut p.client, &mut p.server);
        if p.client.poll_deliver().is_none() {
            return Err(BenchError::Missing("client received no reply"));
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / n as f64)
}

/// Demultiplexing counts of one architecture and stack: what 002 §3-4 says each architecture
/// does per received frame, counted, not timed (the same on any machine).
#[derive(Clone, Debug, PartialEq)]
pub struct CountRow {
    /// Architecture name (`llm`, `daa`, `illm`).
    pub architecture: String,
    /// Stack name ([`Layer::name`]).
    pub stack: String,
    /// Frames the server delivered (or consumed).
    pub frames: u64,
    /// Demultiplexing operations per frame.
    pub demux_per_frame: f64,
    /// State changes made before a frame's last demultiplexing operation, per frame.
    pub pops_before_last_demux: f64,
}

/// [`CountRow`]s of the server of every architecture, for applications on IP and on UDP,
/// over `n` ping-pongs of 1 byte; with `mutant`, DAA demultiplexes at every layer again (the
/// claims ledger's mutant, [`StackConfig::mutant_layered_demux`]).
pub fn count_table(n: u32, mutant: bool) -> Result<Vec<CountRow>, BenchError> {
    let mut rows = Vec::new();
    for arch in Architecture::ALL {
        for layer in [Layer::Ip, Layer::Udp] {
            let end = |host| StackConfig {
                architecture: arch,
                mutant_layered_demux: mutant,
                ..StackConfig::host(host)
            };
            let mut p = pair_of(end(1), end(2), layer, false)?;
            ping_pong(&mut p, 1, n)?;
            let st = p.server.stats();
            let frames = st.delivered + st.consumed;
            let per = |x: u64| x as f64 / frames.max(1) as f64;
            rows.push(CountRow {
                architecture: arch.name().to_string(),
                stack: layer.name(arch),
                frames,
                demux_per_frame: per(st.demuxes),
                pops_before_last_demux: per(st.pops_before_last_demux),
            });
        }
    }
    Ok(rows)
}

/// Warm-up ping-pongs before a contestant's first repetition.
const WARM_UP: u32 = 1000;

/// The rows of one interleaved cell: `contestants` (architecture, layer, checksum, ILP) at
/// `size` bytes on `device`, with `reps[c]` contestant `c`'s repetitions; each DAA and ILLM
/// row compared with the LLM row of the same checksum and ILP setting (002 §5.3-5.4 compare
/// them with LLM).
fn cell_rows(
    device: &'static str,
    contestants: &[(Architecture, Layer, bool, bool)],
    size: usize,
    reps: Vec<Vec<f64>>,
) -> Vec<Row> {
    let llm = |checksum: bool, ilp: bool| {
        contestants
            .iter()
            .position(|&(a, _, c, i)| a == Architecture::Llm && c == checksum && i == ilp)
    };
    contestants
        .iter()
        .enumerate()
        .map(|(k, &(arch, layer, checksum, ilp))| {
            let vs_llm = match llm(checksum, ilp) {
                Some(l) if l != k => Some(interleave::compare(&reps[k], &reps[l])),
                _ => None,
            };
            Row {
                device,
                architecture: arch.name().into(),
                stack: layer.name(arch),
                size,
                checksum,
                ilp,
                rtt_us: mslink_stats::estimate(&reps[k]).mean,
                reps_us: reps[k].clone(),
                vs_llm,
            }
        })
        .collect()
}

/// One cell on the in-memory wire: a client and server pair per contestant, each warmed up,
/// then `repeat` repetitions of `n` ping-pongs of `size` bytes, the contestants interleaved
/// ([`interleave::measure_interleaved`]).
fn memory_cell(
    contestants: &[(Architecture, Layer, bool, bool)],
    size: usize,
    n: u32,
    repeat: u32,
) -> Result<Vec<Row>, BenchError> {
    let mut pairs = contestants
        .iter()
        .map(|&(arch, layer, checksum, ilp)| pair(arch, layer, checksum, ilp))
        .collect::<Result<Vec<Pair>, _>>()?;
    for p in &mut pairs {
        ping_pong(p, size, n.min(WARM_UP))?;
    }
    let reps = interleave::measure_interleaved(pairs.len(), repeat, |c| {
        ping_pong(&mut pairs[c], size, n)
    })?;
    Ok(cell_rows("memory", contestants, size, reps))
}

/// 002 Tables 1-3 on the in-memory wire: per layer and size (a cell), every architecture
/// interleaved over `repeat` repetitions of `n` round trips, checksum off. Each cell's rows
/// (in [`Architecture::ALL`] order) go to `on_cell` as soon as it is measured.
pub fn memory_tables(
    n: u32,
    repeat: u32,
    on_cell: &mut dyn FnMut(&[Row]),
) -> Result<Vec<Row>, BenchError> {
    let mut rows = Vec::new();
    for layer in Layer::ALL {
        for size in SIZES {
            let contestants = Architecture::ALL.map(|a| (a, layer, false, false));
            let cell = memory_cell(&contestants, size, n, repeat)?;
            on_cell(&cell);
            rows.extend(cell);
        }
    }
    Ok(rows)
}

/// UDP-IP-ETH with the checksum on, 1400 bytes, one cell of six contestants interleaved: per
/// architecture, copy then checksum (ILP off) and copy-and-checksum (ILP on) (002 §2.2). Rows
/// per architecture, ILP off then on.
pub fn ilp_table(
    n: u32,
    repeat: u32,
    on_cell: &mut dyn FnMut(&[Row]),
) -> Result<Vec<Row>, BenchError> {
    let contestants: Vec<_> = Architecture::ALL
        .into_iter()
        .flat_map(|a| [false, true].map(|ilp| (a, Layer::Udp, true, ilp)))
        .collect();
    let mut rows = memory_cell(&contestants, 1400, n, repeat)?;
    // ILP rows carry the 002 stack name without the DAA suffix, as they always have.
    for r in &mut rows {
        r.stack = "UDP-IP-ETH".into();
    }
    on_cell(&rows);
    Ok(rows)
}

/// Round trips over AF_PACKET on a veth pair: per layer and size (a cell), every architecture
/// interleaved over `repeat` repetitions of `n` round trips (at most
/// [`VETH_MAX_TRANSACTIONS`]), checksum off, after a warm-up run per architecture; each cell's
/// rows go to `on_cell` as soon as it is measured. Creates and removes its namespaces (Linux,
/// root).
#[cfg(target_os = "linux")]
pub fn veth_tables(
    n: u32,
    repeat: u32,
    on_cell: &mut dyn FnMut(&[Row]),
) -> Result<Vec<Row>, BenchError> {
    use crate::afpacket::AfPacket;
    use std::sync::Arc;
    use std::time::Duration;

    let n = n.clamp(1, VETH_MAX_TRANSACTIONS);
    let ns = crate::veth::pair_apart()
        .map_err(context("creating namespaces and a veth pair (root needed)"))?;
    let to = Duration::from_millis(100);
    // Opened inside; the sockets stay in their namespaces whatever thread uses them.
    let devs = (
        Arc::new(ns.a.run(move || AfPacket::open("v0", to))??),
        Arc::new(ns.b.run(move || AfPacket::open("v1", to))??),
    );
    let mut rows = Vec::new();
    for layer in Layer::ALL {
        for size in SIZES {
            let contestants = Architecture::ALL.map(|a| (a, layer, false, false));
            let mut pairs = contestants
                .iter()
                .map(|&(arch, layer, checksum, ilp)| pair(arch, layer, checksum, ilp))
                .collect::<Result<Vec<Pair>, _>>()?;
            for p in &mut pairs {
                veth_round_trips(&devs, p, size, n)?;
            }
            let reps = interleave::measure_interleaved(pairs.len(), repeat, |c| {
                veth_round_trips(&devs, &mut pairs[c], size, n)
            })?;
            let cell = cell_rows("veth", &contestants, size, reps);
            on_cell(&cell);
            rows.extend(cell);
        }
    }
    drop(ns);
    Ok(rows)
}

/// Mean round trip (µs) of `n` transactions of `size` bytes between `p`'s client, on the first
/// device, and its server, echoing on the second device in a thread of its own for the run
/// (its stack lent to the thread and taken back).
#[cfg(target_os = "linux")]
fn veth_round_trips(
    devs: &(
        std::sync::Arc<crate::afpacket::AfPacket>,
        std::sync::Arc<crate::afpacket::AfPacket>,
    ),
    p: &mut Pair,
    size: usize,
    n: u32,
) -> Result<f64, BenchError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let (dev_a, dev_b) = (&devs.0, devs.1.clone());
    // A placeholder while the echo thread holds the server.
    let mut server = std::mem::replace(&mut p.server, Stack::udp_ip_eth(StackConfig::default()).0);
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let echo = std::thread::spawn(move || -> (Stack, std::io::Result<()>) {
        let mut run = || -> std::io::Result<()> {
            while !st.load(Ordering::Relaxed) {
                dev_b.receive(Instant::ZERO, &mut server)?;
                while let Some(d) = server.poll_deliver() {
                    let len = size.min(d.data.len());
                    let _ = server.send(Instant::ZERO, d.endpoint, &d.data[..len]);
                }
                dev_b.transmit(&mut server)?;
            }
            Ok(())
        };
        let result = run();
        (server, result)
    });
    let data = vec![0x42u8; size];
    let (client, ce) = (&mut p.client, p.ce);
    let mut timed = || -> Result<f64, BenchError> {
        let start = WallClock::now();
        for _ in 0..n {
            client.send(Instant::ZERO, ce, &data)?;
            dev_a.transmit(client)?;
            let mut waits = 0;
            loop {
                if !dev_a.receive(Instant::ZERO, client)? {
                    waits += 1;
                    if waits > 20 {
                        return Err(BenchError::Missing("no reply over the veth after 2 s"));
                    }
                }
                if client.poll_deliver().is_some() {
                    break;
                }
            }
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / n as f64)
    };
    // Whatever the client met, the echo thread is stopped and its stack taken back first.
    let result = timed();
    stop.store(true, Ordering::Relaxed);
    let (server, echoed) = echo.join().map_err(|_| BenchError::Panicked)?;
    p.server = server;
    echoed?;
    result
}

/// The client and server stacks of 002 Fig. 4 with `flows` UDP flows between them (flow `f`
/// on ports 3000+f and 4000+f, applications 100+f and 200+f); flow 0, the probe, sends at
/// `probe_priority` (the rest at 0). Returns the stacks and the client's endpoints.
pub fn fig4_flows(
    cc: &StackConfig,
    cs: &StackConfig,
    flows: usize,
    probe_priority: u32,
) -> Result<(Stack, Stack, Vec<EndpointId>), BenchError> {
    let (mut client, ic) = Stack::udp_ip_eth(cc.clone());
    let (mut server, is) = Stack::udp_ip_eth(cs.clone());
    let mut ce = Vec::new();
    for f in 0..flows {
        let c = UdpConn {
            local_port: 3000 + f as u16,
            remote_port: 4000 + f as u16,
            local_app: 100 + f as u32,
            remote_app: 200 + f as u32,
            priority: if f == 0 { probe_priority } else { 0 },
            ..Default::default()
        };
        ce.push(client.open_udp_to(ic.udp, cs, c)?.0);
        let back = UdpConn {
            priority: 0,
            ..c.reversed()
        };
        server.open_udp_to(is.udp, cc, back)?;
    }
    Ok((client, server, ce))
}

/// 002 Fig. 4 on the in-memory wire: p50 round trip (µs) of a 1-byte probe flow among
/// `background` ping-pong flows of `bg_size` bytes. With `daa_priority` the server is a DAA stack
/// whose received work waits in the priority queue and the probe's frames carry priority 7;
/// otherwise it is the LLM stack ("plain UDP"), which processes frames in arrival order. The
/// server does one frame's work per loop turn, so the probe waits for whatever is processed
/// before it; the clock measures that real processing.
pub fn fig4_p50(
    daa_priority: bool,
    background: usize,
    bg_size: usize,
    samples: usize,
) -> Result<f64, BenchError> {
    let arch = if daa_priority {
        Architecture::Daa
    } else {
        Architecture::Llm
    };
    let (cc, mut cs) = StackConfig::pair(arch);
    cs.priority_queue = if daa_priority { 4096 } else { 0 };
    let flows = background + 1;
    let (mut client, mut server, ce) =
        fig4_flows(&cc, &cs, flows, if daa_priority { 7 } else { 0 })?;
    let t = Instant::ZERO;
    let start = WallClock::now();
    let mut sent_at = vec![start; flows];
    for f in (0..flows).rev() {
        client.send(t, ce[f], &vec![f as u8; if f == 0 { 1 } else { bg_size }])?;
    }
    let mut w = Wire::new();
    let mut rtts: Vec<f64> = Vec::with_capacity(samples);
    // Server input queue for the LLM case: frames wait here and are processed one per turn.
    let mut fifo: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    while rtts.len() < samples {
        while let Some(m) = server.poll_transmit_msg() {
            client.handle_frame(t, m.bytes());
        }
        while let Some(d) = client.poll_deliver() {
            let f = d.endpoint.0 as usize;
            let now = WallClock::now();
            if f == 0 {
                rtts.push(now.duration_since(sent_at[0]).as_secs_f64() * 1e6);
            }
            sent_at[f] = now;
            client.send(t, ce[f], &d.data)?;
        }
        if daa_priority {
            w.pump(t, &mut client, &mut server);
        } else {
            while let Some(m) = client.poll_transmit_msg() {
                fifo.push_back(m.bytes().to_vec());
            }
            if let Some(fr) = fifo.pop_front() {
                server.handle_frame(t, &fr);
            }
        }
        if let Some(d) = server.poll_deliver() {
            server.send(t, d.endpoint, &d.data)?;
        }
    }
    rtts.sort_by(f64::total_cmp);
    Ok(rtts[rtts.len() / 2])
}

/// 002 Fig. 4: for each background flow count ([`FIG4_BACKGROUND`]) and background size (1
/// and 1000 bytes), the prioritised UDP-DAA flow then plain UDP, 2001 samples each.
pub fn fig4_table(on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, BenchError> {
    let mut rows = Vec::new();
    for bg in FIG4_BACKGROUND {
        for size in [1usize, 1000] {
            for prio in [true, false] {
                let row = Row {
                    device: "memory",
                    architecture: format!("fig4-bg{bg}"),
                    stack: if prio { "UDPDAA-prio" } else { "UDP" }.into(),
                    size,
                    checksum: false,
                    ilp: false,
                    rtt_us: fig4_p50(prio, bg, size, 2001)?,
                    reps_us: Vec::new(),
                    vs_llm: None,
                };
                on_row(&row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// How the server of 002 Fig. 4 over the veth processes what it receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fig4Server {
    /// "UDP": the LLM stack in one receive thread; each frame's whole processing in arrival
    /// order (under LLM a frame's priority is known only at the top of the stack).
    Llm,
    /// "UDPDAA-prio": the DAA stack; a dispatcher thread does the bottom-layer demux
    /// ([`Stack::classify`]) and hands the frame to the receive thread of its priority class,
    /// the urgent class's thread at a higher `SCHED_FIFO` priority than the background one's
    /// (002 §4.2.2, §5.5: the priority field is the priority of the thread).
    DaaPriority,
    /// "UDPDAA-equal", the control: as [`Fig4Server::DaaPriority`], every thread at the same
    /// priority, so what remains is the effect of demultiplexing early into separate threads.
    DaaEqual,
}

impl Fig4Server {
    /// All three, in table order.
    pub const ALL: [Fig4Server; 3] = [
        Fig4Server::DaaPriority,
        Fig4Server::DaaEqual,
        Fig4Server::Llm,
    ];

    /// The row's stack name.
    pub fn name(self) -> &'static str {
        match self {
            Fig4Server::Llm => "UDP",
            Fig4Server::DaaPriority => "UDPDAA-prio",
            Fig4Server::DaaEqual => "UDPDAA-equal",
        }
    }

    /// `SCHED_FIFO` priorities of (dispatcher, urgent thread, background thread); the LLM
    /// server's single thread takes the background one's.
    fn priorities(self) -> (i32, i32, i32) {
        match self {
            Fig4Server::DaaPriority => (3, 2, 1),
            Fig4Server::DaaEqual | Fig4Server::Llm => (1, 1, 1),
        }
    }
}

/// Most wall-clock time one Fig. 4 cell over the veth may take (its real-time threads block
/// between frames, and this bounds the whole cell).
#[cfg(target_os = "linux")]
pub const VETH_FIG4_CELL_BUDGET: std::time::Duration = std::time::Duration::from_secs(3);

/// The CPU every thread of Fig. 4 over the veth runs on.
#[cfg(target_os = "linux")]
pub const VETH_FIG4_CPU: usize = 1;
/// `SCHED_FIFO` priority of the Fig. 4 client thread (above every server thread's).
#[cfg(target_os = "linux")]
const CLIENT_PRIORITY: i32 = 10;

/// What a Fig. 4 run over the veth observed besides its rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VethFig4Notes {
    /// `SCHED_FIFO` was refused (the kernel's reason): every thread ran under the default
    /// policy, so the `-prio` rows had no real priority.
    pub fifo_refused: Option<String>,
    /// Frames the DAA dispatcher could not classify (not for any open path), dropped.
    pub unclassified: u64,
    /// Cells that hit [`VETH_FIG4_CELL_BUDGET`] before all their samples.
    pub short_cells: u32,
}

/// Sets the calling thread's `SCHED_FIFO` priority, noting a refusal.
#[cfg(target_os = "linux")]
fn fifo_or_note(prio: i32, refused: &std::sync::Mutex<Option<String>>) {
    if let Err(e) = crate::rt::set_fifo(prio) {
        if let Ok(mut r) = refused.lock() {
            r.get_or_insert_with(|| e.to_string());
        }
    }
}

/// 002 Fig. 4 over AF_PACKET on a veth pair, with real receive threads at real priorities:
/// the p50 round trip (µs) of a 1-byte probe flow (DAA priority 7) among `background` ping-pong
/// flows of `bg_size` bytes, the server organised as `server` says; `samples` probe round trips
/// after a tenth as many for warm-up, or what [`VETH_FIG4_CELL_BUDGET`] allows. The client is
/// the calling thread (already pinned and prioritised by [`veth_fig4_table`]), driving every
/// flow from one loop.
#[cfg(target_os = "linux")]
fn veth_fig4_cell(
    devs: (
        &std::sync::Arc<crate::afpacket::AfPacket>,
        &std::sync::Arc<crate::afpacket::AfPacket>,
    ),
    server: Fig4Server,
    background: usize,
    bg_size: usize,
    samples: usize,
    notes: &mut VethFig4Notes,
) -> Result<f64, BenchError> {
    let (dev_a, dev_b) = devs;
    let arch = if server == Fig4Server::Llm {
        Architecture::Llm
    } else {
        Architecture::Daa
    };
    let (cc, cs) = StackConfig::pair(arch);
    let flows = background + 1;
    let (mut client, _, ce) = fig4_flows(&cc, &cs, flows, 7)?;
    let mut threads = VethFig4Threads::spawn(server, dev_b, Fig4Configs { cc, cs, flows });
    // The client: every flow's first message (the probe last), then echo every reply back.
    let warm = samples / 10;
    let mut rtts: Vec<f64> = Vec::with_capacity(samples + warm);
    // Whatever fails on the client's side, the server threads are stopped and joined first.
    let mut measure = || -> Result<(), BenchError> {
        let (start, mut sent_at) = start_flows(dev_a, &mut client, &ce, bg_size)?;
        let mut waits = 0;
        loop {
            if rtts.len() >= samples + warm {
                break Ok(());
            }
            if start.elapsed() > VETH_FIG4_CELL_BUDGET {
                notes.short_cells += 1;
                break Ok(());
            }
            match dev_a.receive(Instant::ZERO, &mut client) {
                Ok(true) => waits = 0,
                Ok(false) => {
                    waits += 1;
                    if waits > 20 {
                        break Err(BenchError::Missing("no reply over the veth after 2 s"));
                    }
                }
                Err(e) => break Err(e.into()),
            }
            while let Some(d) = client.poll_deliver() {
                let f = d.endpoint.0 as usize;
                let now = WallClock::now();
                if f == 0 {
                    rtts.push(now.duration_since(sent_at[0]).as_secs_f64() * 1e6);
                }
                client.send(Instant::ZERO, ce[f], &d.data)?;
                sent_at[f] = WallClock::now();
            }
            if let Err(e) = dev_a.transmit(&mut client) {
                break Err(e.into());
            }
        }
    };
    let result = measure();
    threads.join()?;
    result?;
    drain(dev_a, dev_b)?;
    threads.note(notes);
    median_after_warmup(rtts, warm)
}

/// What every stack of one Fig. 4 cell is built from: the client's and the server's
/// configurations and the number of flows (the probe and the background ones).
#[cfg(target_os = "linux")]
#[derive(Clone)]
struct Fig4Configs {
    cc: StackConfig,
    cs: StackConfig,
    flows: usize,
}

#[cfg(target_os = "linux")]
impl Fig4Configs {
    /// A server stack with every flow open.
    fn server_stack(&self) -> Result<Stack, BenchError> {
        let (_, st, _) = fig4_flows(&self.cc, &self.cs, self.flows, 0)?;
        Ok(st)
    }
}

/// The server of one Fig. 4 cell over the veth: its threads on the server's device, each with
/// its own server stack, and what they share with the cell.
#[cfg(target_os = "linux")]
struct VethFig4Threads {
    dev: std::sync::Arc<crate::afpacket::AfPacket>,
    cfg: Fig4Configs,
    handles: Vec<std::thread::JoinHandle<Result<(), BenchError>>>,
    /// Set when the client is done: the threads that poll the device end.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// `SCHED_FIFO` refused to a thread (the kernel's reason).
    refused: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    /// Frames the DAA dispatcher could not classify.
    unclassified: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

#[cfg(target_os = "linux")]
impl VethFig4Threads {
    /// Starts the threads of `server` on `dev`: the LLM server is one thread; a DAA server
    /// is a dispatcher and a receive thread per priority (002 §5.5), at
    /// [`Fig4Server::priorities`].
    fn spawn(
        server: Fig4Server,
        dev: &std::sync::Arc<crate::afpacket::AfPacket>,
        cfg: Fig4Configs,
    ) -> Self {
        let mut t = VethFig4Threads {
            dev: dev.clone(),
            cfg,
            handles: Vec::new(),
            stop: Default::default(),
            refused: Default::default(),
            unclassified: Default::default(),
        };
        let (p_disp, p_urgent, p_bg) = server.priorities();
        if server == Fig4Server::Llm {
            t.spawn_llm(p_bg);
        } else {
            t.spawn_daa(p_disp, p_urgent, p_bg);
        }
        t
    }

    /// The LLM server: one thread (at `prio`) receives, echoes and transmits every frame in
    /// arrival order until stopped.
    fn spawn_llm(&mut self, prio: i32) {
        use std::sync::atomic::Ordering;
        let (db, cfg, st, refused) = (
            self.dev.clone(),
            self.cfg.clone(),
            self.stop.clone(),
            self.refused.clone(),
        );
        self.handles
            .push(std::thread::spawn(move || -> Result<(), BenchError> {
                fifo_or_note(prio, &refused);
                let mut srv = cfg.server_stack()?;
                while !st.load(Ordering::Relaxed) {
                    db.receive(Instant::ZERO, &mut srv)?;
                    while let Some(d) = srv.poll_deliver() {
                        let _ = srv.send(Instant::ZERO, d.endpoint, &d.data);
                    }
                    db.transmit(&mut srv)?;
                }
                Ok(())
            }));
    }

    /// The DAA server: an urgent and a background receive thread, then the dispatcher (at
    /// `p_disp`), which reads every frame and hands it to the thread its priority picks.
    fn spawn_daa(&mut self, p_disp: i32, p_urgent: i32, p_bg: i32) {
        use std::sync::atomic::Ordering;
        use std::sync::mpsc;
        let (tx_u, rx_u) = mpsc::channel::<Vec<u8>>();
        let (tx_b, rx_b) = mpsc::channel::<Vec<u8>>();
        self.handles
            .push(std::thread::spawn(self.receive_thread(rx_u, p_urgent)));
        self.handles
            .push(std::thread::spawn(self.receive_thread(rx_b, p_bg)));
        let (db, cfg, st, refused, unc) = (
            self.dev.clone(),
            self.cfg.clone(),
            self.stop.clone(),
            self.refused.clone(),
            self.unclassified.clone(),
        );
        self.handles
            .push(std::thread::spawn(move || -> Result<(), BenchError> {
                fifo_or_note(p_disp, &refused);
                // The dispatcher's stack is used for its bottom-layer demux only.
                let classifier = cfg.server_stack()?;
                let mut buf = [0u8; 2048];
                while !st.load(Ordering::Relaxed) {
                    let Some(n) = db.recv_frame(&mut buf)? else {
                        continue;
                    };
                    let f = &buf[..n];
                    match classifier.classify(f) {
                        // 002 §5.5: the frame's priority picks the thread that processes it.
                        Ok((_, p)) if p > 0 => {
                            tx_u.send(f.to_vec()).map_err(|_| BenchError::Panicked)?
                        }
                        Ok(_) => tx_b.send(f.to_vec()).map_err(|_| BenchError::Panicked)?,
                        Err(_) => {
                            unc.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Ok(())
                // The senders drop here and the receive threads end.
            }));
    }

    /// A DAA receive thread (at `prio`): its own server stack (every flow open), frames in
    /// from the dispatcher's channel `rx`, echoes out through the shared socket.
    fn receive_thread(
        &self,
        rx: std::sync::mpsc::Receiver<Vec<u8>>,
        prio: i32,
    ) -> impl FnOnce() -> Result<(), BenchError> + Send + 'static {
        let (db, cfg, refused) = (self.dev.clone(), self.cfg.clone(), self.refused.clone());
        move || -> Result<(), BenchError> {
            fifo_or_note(prio, &refused);
            let mut st = cfg.server_stack()?;
            while let Ok(f) = rx.recv() {
                st.handle_frame(Instant::ZERO, &f);
                while let Some(d) = st.poll_deliver() {
                    let _ = st.send(Instant::ZERO, d.endpoint, &d.data);
                }
                db.transmit(&mut st)?;
            }
            Ok(())
        }
    }

    /// Stops the threads and waits for each in turn; the first error (or panic) ends the wait.
    fn join(&mut self) -> Result<(), BenchError> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.handles.drain(..) {
            t.join().map_err(|_| BenchError::Panicked)??;
        }
        Ok(())
    }

    /// Adds what the threads observed to `notes`: a `SCHED_FIFO` refusal (the first noted
    /// stays) and the frames the dispatcher could not classify.
    fn note(&self, notes: &mut VethFig4Notes) {
        if let Some(r) = self.refused.lock().ok().and_then(|mut r| r.take()) {
            notes.fifo_refused.get_or_insert(r);
        }
        notes.unclassified += self.unclassified.load(std::sync::atomic::Ordering::Relaxed);
    }
}

/// The client's first message on every flow (`bg_size` bytes; the probe, flow 0, 1 byte and
/// last), each transmitted at once. Returns when the cell started and when each flow's
/// message went.
#[cfg(target_os = "linux")]
fn start_flows(
    dev: &crate::afpacket::AfPacket,
    client: &mut Stack,
    ce: &[EndpointId],
    bg_size: usize,
) -> Result<(WallClock, Vec<WallClock>), BenchError> {
    let flows = ce.len();
    let start = WallClock::now();
    let mut sent_at = vec![start; flows];
    for f in (0..flows).rev() {
        client.send(
            Instant::ZERO,
            ce[f],
            &vec![f as u8; if f == 0 { 1 } else { bg_size }],
        )?;
        sent_at[f] = WallClock::now();
        dev.transmit(client)?;
    }
    Ok((start, sent_at))
}

/// Frames of this cell still on their way must not reach the next one: reads both devices dry.
#[cfg(target_os = "linux")]
fn drain(a: &crate::afpacket::AfPacket, b: &crate::afpacket::AfPacket) -> Result<(), BenchError> {
    let mut buf = [0u8; 2048];
    while a.recv_frame(&mut buf)?.is_some() {}
    while b.recv_frame(&mut buf)?.is_some() {}
    Ok(())
}

/// The median of the probe round trips after the first `warm` (warm-up); an error when none
/// came after them.
#[cfg(target_os = "linux")]
fn median_after_warmup(mut rtts: Vec<f64>, warm: usize) -> Result<f64, BenchError> {
    if rtts.len() <= warm {
        return Err(BenchError::Missing(
            "no probe round trip over the veth in the time budget",
        ));
    }
    let mut v = rtts.split_off(warm);
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// 002 Fig. 4 over the veth with real receive threads ([`Fig4Server`]): for each background
/// flow count ([`FIG4_BACKGROUND`]) and size (1 and 1000 bytes), the three servers, `samples`
/// probe round trips each. Creates and removes its namespaces (Linux, root).
#[cfg(target_os = "linux")]
pub fn veth_fig4_table(
    samples: usize,
    on_row: &mut dyn FnMut(&Row),
) -> Result<(Vec<Row>, VethFig4Notes), BenchError> {
    use crate::afpacket::AfPacket;
    use std::sync::Arc;
    use std::time::Duration;

    let ns = crate::veth::pair_apart()
        .map_err(context("creating namespaces and a veth pair (root needed)"))?;
    let to = Duration::from_millis(100);
    let dev_a = Arc::new(ns.a.run(move || AfPacket::open("v0", to))??);
    let dev_b = Arc::new(ns.b.run(move || AfPacket::open("v1", to))??);
    let mut notes = VethFig4Notes::default();
    let mut rows = Vec::new();
    // Every thread of the experiment on one CPU (the threads spawned per cell inherit the
    // mask): a wake-up across this VM's two vCPUs costs ~50 µs (docs/stack.md), which would
    // swamp everything else; on one CPU the threads compete for one processor, as 002's
    // "single processor" measurements did. The client runs at a real-time priority above the
    // server's threads, so the server's work queues up behind the client's sends and the
    // server's scheduling decides the order (see docs/stack.md).
    let saved = crate::rt::affinity()?;
    crate::rt::pin_to_cpu(VETH_FIG4_CPU)?;
    let refused = std::sync::Mutex::new(None);
    fifo_or_note(CLIENT_PRIORITY, &refused);
    let result = (|| -> Result<(), BenchError> {
        for bg in FIG4_BACKGROUND {
            for size in [1usize, 1000] {
                for server in Fig4Server::ALL {
                    let rtt_us = veth_fig4_cell(
                        (&dev_a, &dev_b),
                        server,
                        bg,
                        size,
                        samples.max(1),
                        &mut notes,
                    )?;
                    let row = Row {
                        device: "veth",
                        architecture: format!("fig4-bg{bg}"),
                        stack: server.name().into(),
                        size,
                        checksum: false,
                        ilp: false,
                        rtt_us,
                        reps_us: Vec::new(),
                        vs_llm: None,
                    };
                    on_row(&row);
                    rows.push(row);
                }
            }
        }
        Ok(())
    })();
    let _ = crate::rt::set_other();
    crate::rt::set_affinity(&saved)?;
    result?;
    if let Some(r) = refused.lock().ok().and_then(|mut r| r.take()) {
        notes.fifo_refused.get_or_insert(r);
    }
    drop(ns);
    Ok((rows, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(rows: &'a [CountRow], arch: &str, stack: &str) -> &'a CountRow {
        rows.iter()
            .find(|r| r.architecture == arch && r.stack == stack)
            .unwrap_or_else(|| panic!("no row {arch} {stack}: {rows:?}"))
    }

    #[test]
    fn each_architecture_demultiplexes_as_002_describes() {
        let rows = count_table(20, false).unwrap();
        // LLM: demux and state change alternate, one demux per layer (002 §3.1).
        let llm = row(&rows, "llm", "UDP-IP-ETH");
        assert_eq!(llm.frames, 20);
        assert_eq!(
            (llm.demux_per_frame, llm.pops_before_last_demux),
            (3.0, 2.0)
        );
        // ILLM: the same demuxes, all before any state change (002 §4.3).
        let illm = row(&rows, "illm", "UDP-IP-ETH");
        assert_eq!(
            (illm.demux_per_frame, illm.pops_before_last_demux),
            (3.0, 0.0)
        );
        // DAA: one demux at the bottom (002 §4.2).
        let daa = row(&rows, "daa", "UDP-IP-ETHDAA");
        assert_eq!(
            (daa.demux_per_frame, daa.pops_before_last_demux),
            (1.0, 0.0)
        );
        assert_eq!(row(&rows, "llm", "IP-ETH").demux_per_frame, 2.0);
        assert_eq!(row(&rows, "daa", "IP-ETHDAA").demux_per_frame, 1.0);
    }

    #[test]
    fn a_cell_keeps_every_repetition_and_compares_daa_and_illm_with_llm() {
        let mut seen = Vec::new();
        let rows = ilp_table(5, 3, &mut |cell| seen.push(cell.len())).unwrap();
        assert_eq!(seen, [6], "one cell of six contestants");
        for r in &rows {
            assert_eq!(r.reps_us.len(), 3, "{r:?}");
            assert_eq!(r.rtt_us, mslink_stats::estimate(&r.reps_us).mean);
            assert_eq!(r.stack, "UDP-IP-ETH");
            // LLM has no ratio; DAA and ILLM have one to LLM at their own ILP setting.
            assert_eq!(r.vs_llm.is_some(), r.architecture != "llm", "{r:?}");
        }
        let llm_off = &rows[0];
        let daa_off = &rows[2];
        assert_eq!((daa_off.architecture.as_str(), daa_off.ilp), ("daa", false));
        let want = interleave::compare(&daa_off.reps_us, &llm_off.reps_us);
        assert_eq!(daa_off.vs_llm, Some(want));
    }

    #[test]
    fn the_mutant_demultiplexes_daa_frames_at_every_layer() {
        let rows = count_table(20, true).unwrap();
        let daa = row(&rows, "daa", "UDP-IP-ETHDAA");
        assert_eq!(daa.frames, 20, "the mutant still delivers");
        assert_eq!(daa.demux_per_frame, 3.0);
        // LLM and ILLM are untouched.
        assert_eq!(row(&rows, "llm", "UDP-IP-ETH").demux_per_frame, 3.0);
    }
}
