//! One simulation run: nodes on a path, segments between them, hosts with their network
//! subsystem (001), UDP applications, TCP transfers and WWW browsing, in virtual time; or
//! 003's cell (`crate::cell`).
//!
//! Contract. [`run`] executes repetition `rep` of a validated scenario and returns its
//! results as values ([`RunResult`]; the flow columns are declared in [`columns`]); it builds
//! the segments, then the world and its flows, then runs the events (`run_with`); it does no I/O (trace files come through the caller's loader). Every
//! random draw comes from a ChaCha8 stream derived from (the repetition's seed, component name) (the
//! repetition's seed is `mslink_channel::streams::rep_seed(scenario seed, rep)`),
//! so adding a flow never shifts another component's draws, and the event queue orders
//! events by (time, sequence number): the same scenario, seed and rep give identical results.
//!
//! Model. A wired segment serialises packets at its rate behind a queue (drop-tail by default;
//! any discipline of `mslink_channel::queue`, the emulator's), not while an on/off outage
//! holds it (`mslink_channel::delay::OnOff`), then delivers them after its delay model's delay
//! (`mslink_channel::delay::Delay`: fixed, or with jitter, kept in order or reordered). A wireless segment has a `MultiServiceLink` at each end and
//! a MAC per direction that sends one frame at a time at the segment's rate; each frame meets
//! that direction's error model (its own process, 004 §III.A) and, unless lost, arrives after
//! the direction's delay model's delay; during an on/off outage the MAC starts nothing. With
//! `dot11b` the two directions' senders share one half-duplex medium under the IEEE 802.11 DCF
//! (`world/dcf.rs`: DIFS, backoff counters from each station's own stream, collisions and MAC
//! retries), and a frame arrives when its data frame ends (SIFS and MAC ACK only hold the
//! medium). The MAC tells the sending end's scheduler whether the frame got through (as a
//! link-level acknowledgement would; ELF learns error rates from it). Nodes forward packets
//! along the path toward the destination address. A host hands the packets its applications
//! and transports emit to its interface in one place (`host_emit`), where a model of the
//! host's network subsystem belongs. TCP flows (`app = "ftp"`) live in `world/ftp.rs`, WWW
//! browsing (`app = "www"`) in `world/www.rs`; `world/ends.rs` says which end of a wireless
//! segment is the wireless host's (Snoop's mobile role).

use mslink_channel::config::{TextLoader, TraceLoader};
use mslink_channel::delay::{Delay, OnOff};
use mslink_channel::queue::Queue;
use mslink_channel::{ErrorModel, Outcome};
use mslink_link::link::{MultiServiceLink, TxFrame};
use mslink_link::{Direction, Duration, Instant, Side};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use crate::packet::{self, Stamp};
use crate::scenario::{AppKind, Flow, Scenario, ScenarioError, SegmentKind};
use mslink_link::event::EventQueue;

mod arrivals;
pub mod columns;
mod dcf;
mod delays;
mod ends;
pub(crate) mod footprint;
mod ftp;
mod results;
mod settle;
mod www;

pub use results::{
    DirectionResult, FlowMetric, FlowResult, HostResult, RunResult, SegmentResult, TimePoint,
    SUMMARISED,
};

enum Ev {
    Send(usize),
    WiredFree {
        seg: usize,
        dir: Direction,
    },
    Arrive {
        seg: usize,
        dir: Direction,
        bytes: Vec<u8>,
    },
    MacFree {
        seg: usize,
        dir: Direction,
    },
    LinkTimer {
        seg: usize,
        end: Side,
    },
    /// A timer of host `node`'s network subsystem.
    Host {
        node: usize,
    },
    /// A timer of TCP flow `flow`: FTP's sender (side 0) or receiver (side 1); for WWW,
    /// side `2 * direction + end` (see `www_drive`).
    Tcp {
        flow: usize,
        side: usize,
    },
}

struct Wired {
    rate: u64,
    delay: [Delay; 2],
    queue: [Queue<Vec<u8>>; 2],
    onoff: [Option<OnOff>; 2],
    busy: [bool; 2],
}

struct Wireless {
    rate: u64,
    /// Per direction: the delay model (fixed unless the segment has jitter).
    delay: [Delay; 2],
    /// Per direction: on/off outages, if any.
    onoff: [Option<OnOff>; 2],
    ends: [MultiServiceLink; 2],
    models: [Box<dyn ErrorModel>; 2],
    rngs: [ChaCha8Rng; 2],
    busy_until: [Instant; 2],
    armed: [Option<Instant>; 2],
    /// 802.11b timing (`dot11b`): the two directions' senders share one medium under the
    /// DCF (`world/dcf.rs`); without it each direction's MAC sends back to back at `rate`.
    dcf: Option<Box<dcf::Dcf>>,
    /// Per direction: the frame the DCF is trying to send (polled from the end at its first
    /// attempt, kept across collisions until it is sent or given up).
    held: [Option<(TxFrame, Vec<u8>)>; 2],
    /// Pending DCF wake-up, to avoid scheduling duplicates.
    dcf_armed: Option<Instant>,
}

enum Seg {
    Wired(Box<Wired>),
    Wireless(Box<Wireless>),
}

struct Source {
    from: usize,
    to: usize,
    dscp: u8,
    port: u16,
    len: usize,
    interval: Duration,
    spurt_end: Instant,
    /// Start, seconds (as drawn: results use it unrounded).
    start_s: f64,
    stop: Instant,
    /// Talk spurts and silences (`cbr` only: other flows keep no random stream here).
    talk: Option<Box<Talk>>,
    seq: u32,
}

/// 004 §III.D's on-off source: exponential talk spurts and silences, and the flow's stream.
struct Talk {
    talk: Exp<f64>,
    silence: Exp<f64>,
    rng: ChaCha8Rng,
}

struct Sink {
    /// Which packets arrived, to count copies (nothing allocated until a datagram arrives).
    seen: arrivals::Arrivals,
    received: u64,
    duplicates: u64,
    bytes: u64,
    /// One-way delays of the distinct packets.
    delays: delays::Delays,
    late: u64,
    window_bytes: Vec<u64>,
    /// Packets sent before the run ended that were still in the network then and arrived
    /// while it settled (`settle.rs`): queued, not lost.
    unsent: u64,
}

/// When each flow of `sc.expanded_flows()` starts, seconds: its entry's `start_s`, plus for
/// an entry with a `start` distribution a draw per copy, in copy order, from the entry's own
/// stream `start.flow<e>` (so no other component's draws move).
fn start_times(sc: &Scenario, seed: u64) -> Vec<f64> {
    use crate::scenario::StartDist;
    let mut out = Vec::with_capacity(sc.flows.iter().map(|f| f.count).sum());
    for (e, f) in sc.flows.iter().enumerate() {
        let Some(d) = &f.start else {
            out.extend(std::iter::repeat_n(f.start_s, f.count));
            continue;
        };
        let mut rng = stream(seed, &format!("start.flow{e}"));
        let mut at = f.start_s;
        for _ in 0..f.count {
            out.push(match *d {
                StartDist::Uniform { spread_s } => {
                    f.start_s + rand::Rng::gen::<f64>(&mut rng) * spread_s
                }
                StartDist::Exponential { mean_gap_s } => {
                    at += Exp::new(1.0 / mean_gap_s)
                        .expect("validated")
                        .sample(&mut rng);
                    at
                }
            });
        }
    }
    out
}

/// The random stream of component `name` for `seed` (FNV-1a of the name picks the ChaCha8
/// stream).
pub(crate) fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    // Shared with the emulator, so one seed gives both the same error draws.
    mslink_channel::streams::stream(seed, name)
}

/// Counts one frame of `len` bytes put on the medium, by its fate.
/// The outage processes of a segment's two directions: one per direction `onoff.direction`
/// includes, each on its own stream (`segmentN.dirD.onoff`).
fn outages(
    onoff: Option<&mslink_channel::delay::OnOffConfig>,
    st: impl Fn(usize, &str) -> rand_chacha::ChaCha8Rng,
) -> [Option<OnOff>; 2] {
    [0, 1].map(|d| {
        onoff
            .filter(|o| o.direction.includes(d))
            .map(|o| OnOff::new(o.clone(), st(d, "onoff")))
    })
}

fn record(d: &mut DirectionResult, len: usize, outcome: &Outcome) {
    d.sent += 1;
    d.bytes += len as u64;
    match outcome {
        Outcome::Lost => d.lost += 1,
        Outcome::Truncated { .. } => d.truncated += 1,
        Outcome::Corrupted { .. } => d.corrupted += 1,
        Outcome::Delivered => {}
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Receives a copy of every packet entering a segment: (segment, direction, time, IP packet).
pub type Capture<'c> = &'c mut dyn FnMut(usize, usize, Instant, &[u8]);

struct World<'a, 'c> {
    capture: Option<Capture<'c>>,
    sc: &'a Scenario,
    flows: Vec<(String, &'a crate::scenario::Flow)>,
    q: EventQueue<Ev>,
    segs: Vec<Seg>,
    dirs: Vec<[DirectionResult; 2]>,
    sources: Vec<Source>,
    /// TCP and WWW results taken when a run ends early (its transfers done, 004 §V), by flow.
    frozen: Vec<Option<results::FlowResult>>,
    /// Once the run has ended and its results are taken: each flow's sequence numbers sent
    /// before the end (`settle.rs`). Packets arriving then count as `unsent`, nothing else.
    settling: Option<settle::Settling>,
    sinks: Vec<Sink>,
    sent: Vec<u64>,
    window: Duration,
    buf: Vec<u8>,
    /// TCP connections, by flow index (`None` for UDP flows; boxed, so a UDP flow's slot is
    /// one pointer).
    tcp: Vec<Option<Box<ftp::TcpFlow>>>,
    /// TCP flows whose last byte has not arrived yet.
    tcp_left: usize,
    /// WWW browsing flows, by flow index (`None` for the others); see [`www`].
    www: Vec<Option<Box<www::WwwFlow>>>,
    /// Packet buffers for reuse.
    pool: Vec<Vec<u8>>,
    /// Network subsystem of each node that has one (001 §III.A), by node.
    hosts: Vec<Option<crate::host::NetworkSubsystem>>,
    /// Pending host timer per node, to avoid scheduling duplicates.
    host_armed: Vec<Option<Instant>>,
    /// XCP router on a host's interface (`xcp_capacity_bps`), by node.
    xcp: Vec<Option<crate::xcp::XcpRouter>>,
    /// XCP routers on intermediate nodes' interfaces (`[[xcp_router]]`), by segment and
    /// direction.
    xcp_egress: Vec<[Option<crate::xcp::XcpRouter>; 2]>,
}

/// Runs repetition `rep` of `sc` (validate it first). `load` returns the text of a trace file.
pub fn run(
    sc: &Scenario,
    rep: u32,
    load: &mut dyn FnMut(&str) -> std::io::Result<String>,
) -> Result<RunResult, ScenarioError> {
    run_with(sc, rep, &mut TextLoader(load), None)
}

/// [`run`], handing a copy of every IP packet that enters a segment to `capture` (the CLI
/// writes them to pcap files; the simulator itself does no I/O).
pub fn run_with_capture(
    sc: &Scenario,
    rep: u32,
    load: &mut dyn FnMut(&str) -> std::io::Result<String>,
    capture: Option<Capture<'_>>,
) -> Result<RunResult, ScenarioError> {
    run_with(sc, rep, &mut TextLoader(load), capture)
}

/// [`run_with_capture`] taking packed traces from `traces` (the CLI streams each trace file
/// once and shares it among runs and link directions; see `mslink_channel::config`).
pub fn run_with(
    sc: &Scenario,
    rep: u32,
    traces: &mut dyn TraceLoader,
    capture: Option<Capture<'_>>,
) -> Result<RunResult, ScenarioError> {
    let seed = mslink_channel::streams::rep_seed(sc.sim.seed, rep);
    if let Some(cell) = &sc.cell {
        let c = crate::cell::run_cell(
            cell,
            secs(sc.sim.duration_s),
            secs(sc.sim.timeseries_window_s),
            seed,
            traces,
        )?;
        return Ok(RunResult {
            rep,
            seed,
            flows: c.flows,
            segments: Vec::new(),
            timeseries: c.timeseries,
            events: c.slots,
            simulated_s: sc.sim.duration_s,
            hosts: Vec::new(),
        });
    }
    let segs = build_segments(sc, seed, traces)?;
    let duration = secs(sc.sim.duration_s);
    let flows = sc.expanded_flows();
    let starts = start_times(sc, seed);
    let mut w = World::new(sc, segs, flows, starts.len(), capture);
    for (i, &start_s) in starts.iter().enumerate() {
        w.add_flow(i, start_s, seed, duration);
    }
    drop(starts);
    let end = w.run_events(duration);
    Ok(w.finish(rep, seed, end))
}

/// The segments of `sc` with their queues, delays, link ends and error models, drawing from
/// streams of `seed`.
fn build_segments(
    sc: &Scenario,
    seed: u64,
    traces: &mut dyn TraceLoader,
) -> Result<Vec<Seg>, ScenarioError> {
    let mut segs = Vec::new();
    for (i, s) in sc.segments.iter().enumerate() {
        let rate = s.rate().round() as u64;
        segs.push(match s.kind {
            SegmentKind::Wired => {
                // Stream names as the emulator's (crates/emu/src/config.rs), so one seed gives
                // a wired segment and the emulated hop the same queue and delay draws.
                let st =
                    |dir: usize, what: &str| stream(seed, &format!("segment{i}.dir{dir}.{what}"));
                let qc = s.queue_config();
                Seg::Wired(Box::new(Wired {
                    rate,
                    delay: [0, 1].map(|d| Delay::new(s.delay_config(), st(d, "delay"))),
                    queue: [0, 1].map(|d| Queue::new(&qc, st(d, "queue"))),
                    onoff: outages(s.onoff.as_ref(), st),
                    busy: [false; 2],
                }))
            }
            SegmentKind::Wireless => {
                // The wireless host's end takes the mobile role of TCP-aware agents (Snoop).
                let cfgs = ends::end_configs(&s.link_config(), i, sc.segments.len());
                let end = |e: usize| {
                    MultiServiceLink::new(&cfgs[e]).map_err(|e| ScenarioError::Invalid {
                        key: format!("segment[{i}].link"),
                        what: e.to_string(),
                    })
                };
                let model = |c: &mslink_channel::ErrorModelConfig, traces: &mut dyn TraceLoader| {
                    c.build_with(traces).map_err(|e| ScenarioError::Invalid {
                        key: format!("segment[{i}].error"),
                        what: e.to_string(),
                    })
                };
                let fwd = model(&s.error, traces)?;
                let rev = model(s.error_reverse.as_ref().unwrap_or(&s.error), traces)?;
                let st =
                    |dir: usize, what: &str| stream(seed, &format!("segment{i}.dir{dir}.{what}"));
                Seg::Wireless(Box::new(Wireless {
                    rate,
                    delay: [0, 1].map(|d| Delay::new(s.delay_config(), st(d, "delay"))),
                    onoff: outages(s.onoff.as_ref(), st),
                    ends: [end(0)?, end(1)?],
                    models: [fwd, rev],
                    rngs: [
                        stream(seed, &format!("segment{i}.dir0.error")),
                        stream(seed, &format!("segment{i}.dir1.error")),
                    ],
                    busy_until: [Instant::ZERO; 2],
                    armed: [None; 2],
                    // Each station's backoff counters from its own stream.
                    dcf: s
                        .dot11b
                        .as_ref()
                        .map(|d| Box::new(dcf::Dcf::new(d, [st(0, "dcf"), st(1, "dcf")]))),
                    held: [None, None],
                    dcf_armed: None,
                }))
            }
        });
    }
    Ok(segs)
}

impl<'s, 'c> World<'s, 'c> {
    /// A world of `sc` over `segs` with room for `n` flows, before any flow starts.
    fn new(
        sc: &'s Scenario,
        segs: Vec<Seg>,
        flows: Vec<(String, &'s Flow)>,
        n: usize,
        capture: Option<Capture<'c>>,
    ) -> Self {
        World {
            capture,
            sc,
            sent: vec![0; flows.len()],
            flows,
            q: EventQueue::default(),
            dirs: vec![Default::default(); segs.len()],
            segs,
            // The per-flow tables are sized once: growing by doubling would leave up to half of
            // each unused.
            sources: Vec::with_capacity(n),
            frozen: Vec::new(),
            settling: None,
            sinks: Vec::with_capacity(n),
            window: secs(sc.sim.timeseries_window_s),
            buf: Vec::new(),
            tcp: Vec::with_capacity(n),
            tcp_left: 0,
            www: Vec::with_capacity(n),
            pool: Vec::new(),
            hosts: (0..=sc.segments.len())
                .map(|n| {
                    sc.hosts
                        .iter()
                        .find(|h| h.node == n)
                        .map(|h| crate::host::NetworkSubsystem::new(h.config.clone()))
                })
                .collect(),
            host_armed: vec![None; sc.segments.len() + 1],
            xcp: (0..=sc.segments.len())
                .map(|n| {
                    let h = sc.hosts.iter().find(|h| h.node == n)?;
                    Some(crate::xcp::XcpRouter::with_capacity(
                        h.config.xcp_capacity_bps?,
                    ))
                })
                .collect(),
            xcp_egress: (0..sc.segments.len())
                .map(|seg| {
                    [0, 1].map(|dir| {
                        // Direction 0 leaves node `seg`, direction 1 leaves node `seg + 1`.
                        let r = sc
                            .xcp_routers
                            .iter()
                            .find(|r| r.segment == seg && r.node == seg + dir)?;
                        Some(crate::xcp::XcpRouter::with_capacity(r.capacity_bps))
                    })
                })
                .collect(),
        }
    }

    /// Adds flow `i`, starting `start_s` into the run, drawing from streams of `seed`.
    fn add_flow(&mut self, i: usize, start_s: f64, seed: u64, duration: Duration) {
        let (name, f) = (self.flows[i].0.clone(), self.flows[i].1);
        let start = Instant::ZERO + secs(start_s);
        let stop = if f.stop_s > 0.0 {
            Instant::ZERO + secs(f.stop_s).min(duration)
        } else {
            Instant::ZERO + duration
        };
        let mut talk = (f.app == AppKind::Cbr).then(|| {
            Box::new(Talk {
                talk: Exp::new(1.0 / f.talk_s).expect("validated"),
                silence: Exp::new(1.0 / f.silence_s).expect("validated"),
                rng: stream(seed, &format!("flow.{i}.{name}")),
            })
        });
        let spurt_end = match &mut talk {
            Some(t) => start + secs(t.talk.sample(&mut t.rng)),
            None => Instant::MAX,
        };
        self.www.push((f.app == AppKind::Www).then(|| {
            let r = stream(seed, &format!("flow.{i}.{name}.www"));
            Box::new(www::WwwFlow::new(i, f, r, start, stop))
        }));
        self.sources.push(Source {
            from: f.from,
            to: f.to,
            dscp: f.dscp,
            port: if f.port == 0 {
                packet::app_port(i)
            } else {
                f.port
            },
            len: f.packet_bytes,
            interval: match f.app {
                // Back to back at the first hop's line rate (003 §4's spray).
                AppKind::Spray => {
                    let first = &self.sc.segments[f.from.min(f.to)];
                    secs(f.packet_bytes as f64 * 8.0 / first.rate())
                }
                _ => secs(f.packet_bytes as f64 * 8.0 / f.rate_bps),
            },
            spurt_end,
            start_s,
            stop,
            talk,
            seq: 0,
        });
        self.sinks.push(Sink {
            seen: arrivals::Arrivals::default(),
            received: 0,
            duplicates: 0,
            bytes: 0,
            delays: delays::Delays::default(),
            late: 0,
            window_bytes: Vec::new(),
            unsent: 0,
        });
        self.tcp
            .push((f.app == AppKind::Ftp).then(|| Box::new(ftp::TcpFlow::new(i, f, start))));
        self.q.schedule(start, Ev::Send(i));
    }

    /// Runs the events to the end of the run and returns when it ended: when the transfers
    /// did (or the cap) in a run of transfers, else at the cap plus `drain_s`.
    fn run_events(&mut self, duration: Duration) -> Instant {
        self.tcp_left = self.tcp.iter().flatten().count();
        // A run of transfers only ends when the last one has (or at the time limit); so does a
        // run of transfers next to WWW browsing and continuous media (004 §V: "the run ended
        // when the file transfer completed").
        let only_tcp = self.tcp_left > 0
            && self
                .flows
                .iter()
                .all(|(_, f)| matches!(f.app, AppKind::Ftp | AppKind::Www | AppKind::Cbr));
        let cap = Instant::ZERO + duration;
        let drain = secs(self.sc.sim.drain_s);
        let mut end = cap + drain;
        if only_tcp {
            // The run ends when the transfers do, or at the cap: the TCP and WWW results are
            // taken then. Datagram sources stop, and what they already sent gets `drain_s` to
            // arrive, so packets still queued or in the air are not counted as lost.
            let mut horizon = cap;
            while let Some((now, ev)) = self.q.pop_until(horizon) {
                self.handle(now, ev);
                if self.tcp_left == 0 && self.frozen.is_empty() {
                    end = now;
                    self.freeze_tcp(end);
                    horizon = now + drain;
                }
            }
            if self.frozen.is_empty() {
                end = cap;
                self.freeze_tcp(end);
                while let Some((now, ev)) = self.q.pop_until(cap + drain) {
                    self.handle(now, ev);
                }
            }
        } else {
            while let Some((now, ev)) = self.q.pop_until(end) {
                self.handle(now, ev);
            }
        }
        end
    }
}

impl World<'_, '_> {
    fn handle(&mut self, now: Instant, ev: Ev) {
        match ev {
            Ev::Send(i) => self.send(now, i),
            Ev::WiredFree { seg, dir } => self.wired_next(now, seg, dir),
            Ev::Arrive { seg, dir, bytes } => self.arrive(now, seg, dir, bytes),
            Ev::MacFree { seg, dir } => self.mac(now, seg, dir),
            Ev::LinkTimer { seg, end } => {
                if let Seg::Wireless(wl) = &mut self.segs[seg] {
                    if wl.armed[end] == Some(now) {
                        wl.armed[end] = None;
                    }
                    if wl.ends[end].poll_timeout().is_some_and(|t| t <= now) {
                        wl.ends[end].handle_timeout(now);
                    }
                }
                self.after_end(now, seg, end);
            }
            Ev::Tcp { flow, side } if self.www[flow].is_some() => self.www_timer(now, flow, side),
            Ev::Tcp { flow, side } => self.tcp_timer(now, flow, side),
            Ev::Host { node } => {
                if self.host_armed[node] == Some(now) {
                    self.host_armed[node] = None;
                }
                if let Some(h) = self.hosts[node].as_mut() {
                    h.handle_timeout(now);
                }
                self.host_pump(now, node);
            }
        }
    }

    /// Host `node` hands a packet to its network interface: the one place where the host's
    /// network subsystem (001 §III: NIC overhead, device hand-off) sits between a transport
    /// and the first link.
    fn host_emit(&mut self, now: Instant, node: usize, p: Vec<u8>) {
        match self.hosts[node].as_mut() {
            None => self.at_node(now, node, p),
            Some(h) => {
                let mut p = p;
                if let Some(r) = self.xcp[node].as_mut() {
                    // 001: the sending host is the XCP router of its own interface.
                    r.mark(now, &mut p, h.backlog_bytes());
                }
                h.handle_packet(now, p);
                self.host_pump(now, node);
            }
        }
    }

    /// Hands the packets host `node`'s subsystem has ready to its device, and keeps its timer.
    fn host_pump(&mut self, now: Instant, node: usize) {
        loop {
            let Some(h) = self.hosts[node].as_mut() else {
                return;
            };
            let Some(p) = h.poll_to_device() else { break };
            self.at_node(now, node, p);
        }
        let Some(t) = self.hosts[node].as_ref().and_then(|h| h.poll_timeout()) else {
            return;
        };
        // As for link ends (see `arm`): a past deadline is armed at the current time.
        let t = t.max(self.q.now());
        if self.host_armed[node].is_none_or(|a| t < a) {
            self.host_armed[node] = Some(t);
            self.q.schedule(t, Ev::Host { node });
        }
    }

    /// The device of `node` has nothing left to send: its subsystem may hand over the next
    /// packet (001: the single-slot hand-off).
    fn device_free(&mut self, now: Instant, node: usize) {
        if let Some(h) = self.hosts.get_mut(node).and_then(|h| h.as_mut()) {
            h.handle_device_free(now);
            self.host_pump(now, node);
        }
    }

    /// Whether host `node` would take a packet from a transport now. Transports ask before
    /// each segment (TCP's `tcp_drive`), so a device model with back-pressure (001: a host
    /// never overflows its own device) answers `false` while busy and drives the node's
    /// transports again when it frees. Without a host model the device is always ready.
    fn host_ready(&self, _node: usize) -> bool {
        true
    }

    /// Keeps a packet buffer for reuse.
    fn recycle(&mut self, p: Vec<u8>) {
        if self.pool.len() < 1024 {
            self.pool.push(p);
        }
    }

    /// Counts `bytes` delivered to flow `i`'s application in the moving-window series.
    fn record_bytes(&mut self, now: Instant, i: usize, bytes: u64) {
        if self.window > Duration::ZERO {
            let sink = &mut self.sinks[i];
            let b = (now.as_nanos() / self.window.as_nanos()) as usize;
            if sink.window_bytes.len() <= b {
                sink.window_bytes.resize(b + 1, 0);
            }
            sink.window_bytes[b] += bytes;
        }
    }

    fn send(&mut self, now: Instant, i: usize) {
        if self.tcp[i].is_some() {
            self.tcp_drive(now, i);
            return;
        }
        if self.www[i].is_some() {
            self.www_start(now, i);
            return;
        }
        let s = &mut self.sources[i];
        if now >= s.stop {
            return;
        }
        let stamp = Stamp {
            flow: i as u32,
            seq: s.seq,
            sent_ns: now.as_nanos(),
        };
        s.seq += 1;
        let mut p = Vec::new();
        packet::build(&mut p, s.len, s.from, s.to, s.dscp, s.port, stamp);
        let mut next = now + s.interval;
        if let Some(t) = &mut s.talk {
            if next >= s.spurt_end {
                // 004 §III.D: exponential talk spurts and silences; media only while talking.
                let resume = s.spurt_end + secs(t.silence.sample(&mut t.rng));
                s.spurt_end = resume + secs(t.talk.sample(&mut t.rng));
                next = resume;
            }
        }
        let from = s.from;
        self.sent[i] += 1;
        self.q.schedule(next, Ev::Send(i));
        self.host_emit(now, from, p);
    }

    /// A packet is at `node`: deliver it there or forward it along the path.
    fn at_node(&mut self, now: Instant, node: usize, mut p: Vec<u8>) {
        let Some(dst) = packet::destination(&p) else {
            return;
        };
        if dst == node {
            if p[9] == 6 && self.settling.is_some() {
                // Settling: transports are frozen with their results; nothing answers.
                return;
            }
            if p[9] == 6 {
                self.tcp_arrive(now, node, p);
            } else {
                self.sink(now, p);
            }
            return;
        }
        let (seg, dir) = if dst > node {
            (node, Direction::LeftToRight)
        } else {
            (node - 1, Direction::RightToLeft)
        };
        if self.xcp_egress[seg][dir].is_some() {
            self.xcp_forward(now, seg, dir, &mut p);
        }
        if let Some(c) = self.capture.as_mut() {
            c(seg, dir.index(), now, &p);
        }
        match &mut self.segs[seg] {
            Seg::Wired(wd) => {
                if wd.onoff[dir].as_mut().is_some_and(|o| o.drops_at(now)) {
                    self.dirs[seg][dir].outage_drops += 1;
                    return;
                }
                // Drops (here or when an AQM dequeues) are counted by the queue, by cause.
                wd.queue[dir].enqueue(now, p);
                if !wd.busy[dir] {
                    self.wired_next(now, seg, dir);
                }
            }
            Seg::Wireless(wl) => {
                // The buffer travels on as the service's SDU (no copy); the frames arriving at
                // the far end refill the pool (`arrive`).
                if wl.onoff[dir].as_mut().is_some_and(|o| o.drops_at(now)) {
                    self.dirs[seg][dir].outage_drops += 1;
                    self.recycle(p);
                    return;
                }
                if wl.ends[dir.from()].handle_packet_owned(now, p).is_err() {
                    self.dirs[seg][dir].refused += 1;
                }
                self.after_end(now, seg, dir.from());
            }
        }
    }

    /// The XCP router on the interface into (`seg`, `dir`) sees a forwarded packet: its
    /// queue is what that interface has waiting (the link end's send queues, or the wired
    /// queue), and it lowers the packet's feedback (001 Fig. 3: the access point's wireless
    /// interface is the bottleneck of a download).
    fn xcp_forward(&mut self, now: Instant, seg: usize, dir: Direction, p: &mut [u8]) {
        let queue = match &self.segs[seg] {
            Seg::Wired(wd) => wd.queue[dir].bytes(),
            Seg::Wireless(wl) => wl.ends[dir.from()].queued_bytes(),
        };
        if let Some(r) = self.xcp_egress[seg][dir].as_mut() {
            r.mark(now, p, queue);
        }
    }

    fn wired_next(&mut self, now: Instant, seg: usize, dir: Direction) {
        let Seg::Wired(wd) = &mut self.segs[seg] else {
            return;
        };
        if let Some(o) = wd.onoff[dir].as_mut() {
            // An outage: nothing starts before it ends; packets wait in the queue.
            let on = o.available_at(now);
            if on > now {
                wd.busy[dir] = true;
                self.q.schedule(on, Ev::WiredFree { seg, dir });
                return;
            }
        }
        let Some(e) = wd.queue[dir].dequeue(now) else {
            wd.busy[dir] = false;
            // The sending node of direction `dir` is `seg + dir`.
            self.device_free(now, seg + dir.from().index());
            return;
        };
        let p = e.item;
        wd.busy[dir] = true;
        let done = now + Duration::transmission(p.len() as u64, wd.rate);
        let at = wd.delay[dir].arrival(done);
        let d = &mut self.dirs[seg][dir];
        d.sent += 1;
        d.bytes += p.len() as u64;
        self.q.schedule(at, Ev::Arrive { seg, dir, bytes: p });
        self.q.schedule(done, Ev::WiredFree { seg, dir });
    }

    /// Lets the MAC of direction `dir` send, if it is idle and its end has a frame.
    fn mac(&mut self, now: Instant, seg: usize, dir: Direction) {
        let Seg::Wireless(wl) = &mut self.segs[seg] else {
            return;
        };
        if wl.dcf.is_some() {
            self.mac_dcf(now, seg);
            return;
        }
        if wl.busy_until[dir] > now {
            return;
        }
        if let Some(o) = wl.onoff[dir].as_mut() {
            // An outage: the MAC starts nothing before it ends (frames wait in the end).
            let on = o.available_at(now);
            if on > now {
                wl.busy_until[dir] = on;
                self.q.schedule(on, Ev::MacFree { seg, dir });
                return;
            }
        }
        self.buf.clear();
        let Some(tx) = wl.ends[dir.from()].poll_transmit(now, &mut self.buf) else {
            self.device_free(now, seg + dir.from().index());
            return;
        };
        let done = now + Duration::transmission(tx.len as u64, wl.rate);
        wl.busy_until[dir] = done;
        // The per-frame step shared with the emulator (crates/channel/src/medium.rs); what
        // arrives goes into a pooled buffer.
        let mut bytes = self.pool.pop().unwrap_or_default();
        let (outcome, arrives) = mslink_channel::medium::on_air_into(
            &mut wl.ends[dir.from()],
            tx,
            &self.buf,
            &mut *wl.models[dir],
            &mut wl.rngs[dir],
            now,
            &mut bytes,
        );
        record(&mut self.dirs[seg][dir], tx.len, &outcome);
        if arrives {
            let at = wl.delay[dir].arrival(done);
            self.q.schedule(at, Ev::Arrive { seg, dir, bytes });
        } else {
            self.recycle(bytes);
        }
        self.q.schedule(done, Ev::MacFree { seg, dir });
        self.arm(seg, dir.from());
    }

    /// The 802.11b medium of segment `seg` (`world/dcf.rs` decides who sends when): tells the
    /// DCF which stations have a frame, starts what is due at `now`, frees the devices of idle
    /// stations with nothing to send, and keeps the wake-up armed. Safe to call at any time.
    fn mac_dcf(&mut self, now: Instant, seg: usize) {
        let Seg::Wireless(wl) = &mut self.segs[seg] else {
            return;
        };
        if wl.dcf_armed == Some(now) {
            wl.dcf_armed = None;
        }
        // An outage holds a station's new frames until it ends.
        let mut wake: Option<Instant> = None;
        let mut ready = [false; 2];
        for (i, r) in ready.iter_mut().enumerate() {
            *r = wl.held[i].is_some();
            if !*r && wl.ends[i].has_transmit(now) {
                let on = wl.onoff[i].as_mut().map_or(now, |o| o.available_at(now));
                if on > now {
                    wake = Some(wake.map_or(on, |w| w.min(on)));
                } else {
                    *r = true;
                }
            }
        }
        let dcf = wl.dcf.as_mut().expect("an 802.11b segment");
        for (i, r) in ready.into_iter().enumerate() {
            dcf.set_ready(now, i, r);
        }
        if dcf.poll_timeout().is_some_and(|t| t <= now) {
            self.dcf_start(now, seg);
        }
        // Devices of stations with nothing left to send may take the next packet (001: the
        // single-slot hand-off), once the medium is idle (as without the DCF, a device is
        // free when its frame's whole exchange is over).
        for i in 0..2 {
            let Seg::Wireless(wl) = &mut self.segs[seg] else {
                return;
            };
            let idle = wl.dcf.as_ref().is_some_and(|d| d.busy_until() <= now);
            if idle && wl.held[i].is_none() && !wl.ends[i].has_transmit(now) {
                // May hand a packet to the end and call back here (nested): state is current.
                self.device_free(now, seg + i);
            }
        }
        let Seg::Wireless(wl) = &mut self.segs[seg] else {
            return;
        };
        let dcf = wl.dcf.as_ref().expect("an 802.11b segment");
        let busy = dcf.busy_until();
        let next = [dcf.poll_timeout(), wake, (busy > now).then_some(busy)]
            .into_iter()
            .flatten()
            .min();
        if let Some(t) = next {
            let t = t.max(now);
            if wl.dcf_armed.is_none_or(|a| t < a || a < now) {
                wl.dcf_armed = Some(t);
                self.q.schedule(
                    t,
                    Ev::MacFree {
                        seg,
                        dir: Direction::LeftToRight,
                    },
                );
            }
        }
    }

    /// The DCF of segment `seg` starts a transmission at `now`: the chosen stations' frames
    /// go on the air (a collision keeps them for the next attempt).
    fn dcf_start(&mut self, now: Instant, seg: usize) {
        let Seg::Wireless(wl) = &mut self.segs[seg] else {
            return;
        };
        let dcf = wl.dcf.as_mut().expect("an 802.11b segment");
        let who = dcf.poll_start(now);
        let mut lens = [None; 2];
        for i in 0..2 {
            if !who[i] {
                continue;
            }
            if wl.held[i].is_none() {
                let mut b = self.pool.pop().unwrap_or_default();
                b.clear();
                if let Some(tx) = wl.ends[i].poll_transmit(now, &mut b) {
                    wl.held[i] = Some((tx, b));
                } else {
                    self.pool.push(b);
                }
            }
            lens[i] = wl.held[i].as_ref().map(|(tx, _)| tx.len);
        }
        let ex = wl.dcf.as_mut().expect("checked").transmit(now, lens);
        for i in 0..2 {
            let Some(data_end) = ex.data_end[i] else {
                continue;
            };
            if ex.collided && !ex.dropped[i] {
                // §9.2.5.3: the MAC sends the same frame again after its backoff.
                continue;
            }
            let (tx, frame) = wl.held[i].take().expect("a frame was sent");
            if ex.collided {
                // Given up at the retry limit: lost, as far as the link end can tell.
                wl.ends[i].handle_tx_report(now, tx.service, false);
                record(&mut self.dirs[seg][i], tx.len, &Outcome::Lost);
                if self.pool.len() < 1024 {
                    self.pool.push(frame);
                }
                continue;
            }
            // The per-frame step shared with the emulator (crates/channel/src/medium.rs).
            let mut bytes = self.pool.pop().unwrap_or_default();
            let (outcome, arrives) = mslink_channel::medium::on_air_into(
                &mut wl.ends[i],
                tx,
                &frame,
                &mut *wl.models[i],
                &mut wl.rngs[i],
                now,
                &mut bytes,
            );
            record(&mut self.dirs[seg][i], tx.len, &outcome);
            if self.pool.len() < 1024 {
                self.pool.push(frame);
            }
            if arrives {
                // The receiver has the frame when its data frame ends; the SIFS and MAC ACK
                // after it keep the medium busy but are no part of its delay.
                let at = wl.delay[i].arrival(data_end);
                let dir = Direction::BOTH[i];
                self.q.schedule(at, Ev::Arrive { seg, dir, bytes });
            } else if self.pool.len() < 1024 {
                self.pool.push(bytes);
            }
        }
        self.arm(seg, Side::Left);
        self.arm(seg, Side::Right);
    }

    fn arrive(&mut self, now: Instant, seg: usize, dir: Direction, bytes: Vec<u8>) {
        let rx_node = seg + dir.to().index();
        match &mut self.segs[seg] {
            Seg::Wired(_) => self.at_node(now, rx_node, bytes),
            Seg::Wireless(wl) => {
                let end = dir.to();
                wl.ends[end].handle_frame(now, &bytes);
                self.recycle(bytes);
                self.after_end(now, seg, end);
            }
        }
    }

    /// After anything happened at wireless end `end`: hand up its packets, let its MAC send,
    /// and keep its timer armed.
    fn after_end(&mut self, now: Instant, seg: usize, end: Side) {
        let node = seg + end.index();
        loop {
            let Seg::Wireless(wl) = &mut self.segs[seg] else {
                return;
            };
            let Some(p) = wl.ends[end].poll_deliver() else {
                break;
            };
            self.at_node(now, node, p);
        }
        self.mac(now, seg, end.sending());
        self.arm(seg, end);
    }

    fn arm(&mut self, seg: usize, end: Side) {
        let Seg::Wireless(wl) = &mut self.segs[seg] else {
            return;
        };
        if let Some(t) = wl.ends[end].poll_timeout() {
            // A deadline already past means "due now": the queue runs it at the current time,
            // so record that time. Recording the past instant itself left `armed` set forever
            // (the event fires at `now`, never equal to it), and no later timer of this end
            // was ever scheduled again: the OOS RLP receiver behind a Snoop base station
            // stopped NACKing and giving up gaps, and its sender's window never reopened.
            let t = t.max(self.q.now());
            if wl.armed[end].is_none_or(|a| t < a) {
                wl.armed[end] = Some(t);
                self.q.schedule(t, Ev::LinkTimer { seg, end });
            }
        }
    }

    fn sink(&mut self, now: Instant, p: Vec<u8>) {
        let Some(st) = packet::stamp(&p) else { return };
        let Some((_, flow)) = self.flows.get(st.flow as usize) else {
            return;
        };
        if flow.app == AppKind::Ping && packet::destination(&p) == Some(flow.to) {
            // An echo request reached its destination: answer with the same stamp, so the
            // reply's arrival at the source measures the round trip.
            let s = &self.sources[st.flow as usize];
            let mut reply = Vec::new();
            packet::build(&mut reply, p.len(), s.to, s.from, s.dscp, s.port, st);
            // The reply leaves through the answering host's network subsystem (its NIC model),
            // like any packet the host sends: a ping crosses both hosts' NICs.
            let at = flow.to;
            self.host_emit(now, at, reply);
            return;
        }
        let sink = &mut self.sinks[st.flow as usize];
        if let Some(s) = &mut self.settling {
            if st.seq < s.before_end[st.flow as usize] && sink.seen.insert(st.seq) {
                sink.unsent += 1;
                s.arrived += 1;
            }
            return;
        }
        if !sink.seen.insert(st.seq) {
            sink.duplicates += 1;
            return;
        }
        let delay = now
            .saturating_since(Instant::from_nanos(st.sent_ns))
            .as_secs_f64();
        sink.received += 1;
        sink.bytes += p.len() as u64;
        sink.delays.add(delay);
        if delay * 1e3 > self.flows[st.flow as usize].1.playback_ms {
            sink.late += 1;
        }
        if self.window > Duration::ZERO {
            let b = (now.as_nanos() / self.window.as_nanos()) as usize;
            if sink.window_bytes.len() <= b {
                sink.window_bytes.resize(b + 1, 0);
            }
            sink.window_bytes[b] += p.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_depend_on_seed_and_name_only() {
        let a: u64 = stream(1, "flow.0.a").gen();
        assert_eq!(a, stream(1, "flow.0.a").gen::<u64>());
        assert_ne!(a, stream(2, "flow.0.a").gen::<u64>());
        assert_ne!(a, stream(1, "flow.1.b").gen::<u64>());
    }
}
