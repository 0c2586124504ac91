//! What a simulation will cost, estimated before it runs: flows, events, memory and time.
//!
//! Contract. [`estimate`] reads validated scenarios (one per sweep point, each run `sim.reps`
//! times) and the sizes of the trace files they name, and allocates nothing that grows with
//! the flows or the simulated time: `count = 100000000` is refused in microseconds instead of
//! after gigabytes. It does no I/O; the driver passes in the trace sizes, the runs it executes
//! at once and, to [`Estimate::fits`], the memory available.
//!
//! Memory at the peak is the sum of
//! * the program: [`BASE_BYTES`], what the smallest runs peak at with their link ends, queues
//!   and plots (measured 7-13 MB);
//! * the traces, each file once (shared by every run): what the driver says each file takes
//!   held ([`TraceFile::held`]: at most the file's size, the bound of the packed form
//!   `mslink_channel::trace::PackedTrace`, or less from a sample of the file);
//! * the sweep points' scenarios, held for the whole invocation (`footprint::point_bytes`);
//! * per run executing at once, every flow's state for the whole run (`world/footprint.rs`:
//!   `size_of` of the world's per-flow types, a datagram flow's duplicate window at its
//!   largest) and the moving-window byte counters of every flow; a TCP transfer (`ftp`) holds
//!   its window in flight only while it runs, so the windows counted are those of the
//!   transfers running at once: by Little's law the arrival rate of the copies (`count` over
//!   their start spread) times how long one lasts (its handshake and slow-start round trips
//!   on an idle path plus its bytes at the bottleneck rate), stretched by 1 / (1 - load) for
//!   the load the transfers offer the bottleneck, and every copy at a load of 90% or more;
//! * per run executing or waiting to be written (runs are written in order as they finish and
//!   dropped, with at most two per thread waiting: at most three per thread in all), one result
//!   row per flow and one time-series point per flow and window;
//! * while a run is written into summary.json: one flow's JSON tree and text at a time,
//!   `footprint::SUMMARY_JSON_FLOW_BYTES`.
//!
//! Queues are bounded by their limits and not counted. Events per simulated second follow the
//! offered load: per packet one event at the source and, per segment it crosses, two on a
//! wired segment (transmission done, arrival) and three on a wireless one (MAC free, arrival,
//! the link's timers and control frames); a segment carries at most its rate, so the share of
//! offered packets above it is not counted past it. TCP flows (`ftp`, `www`) offer their path's
//! bottleneck rate, data one way and an ACK per segment (per two with delayed ACKs) back, and
//! an `ftp` flow only until `size_bytes` has gone; together they send only what the path
//! carries (ACK clocking). A cell runs one event per slot. Against
//! measured runs (docs/simulator.md, "Resources"): UDP scenarios and cells within 15% of the
//! events; TCP and WWW over by up to 3x (losses and slow start keep them below their path's
//! rate); persistent link-level retransmission over very lossy links under by up to 30%.
//!
//! Time is the machine's [`Costs`] applied to each run (per run, per flow, and per event at
//! the number of flows live at once: every flow but the transfers, and the transfers running
//! at once) and to the trace bytes read once; the runs share `at_once` threads,
//! and no invocation is shorter than its longest run.

use std::collections::BTreeMap;
use std::fmt;

use crate::scenario::{AppKind, Flow, Scenario, SegmentKind};
use crate::world::footprint;

/// Memory of the program itself, its link ends, queues and plots: the smallest runs peak at
/// 7-13 MB (`/usr/bin/time -v`, docs/PERFORMANCE.md); 16 MiB leaves room.
pub const BASE_BYTES: u64 = 16 << 20;

pub mod costs;
pub use costs::Costs;

/// A trace file a scenario names, as the driver found it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceFile {
    /// Its size in bytes: what reading it costs in time.
    pub bytes: u64,
    /// The memory it takes while held (bytes): at most `bytes` (a packed trace is never larger
    /// than its text), less when a sample of the file shows how it packs.
    pub held: u64,
}

/// Load of the bottleneck at or above which every copy of a transfer is counted as running
/// at once (the 1 / (1 - load) stretch has no bound there).
const SATURATED_LOAD: f64 = 0.9;

/// Simulated seconds a run may last: the clock counts `u64` nanoseconds (584 years).
pub const MAX_SIMULATED_S: f64 = u64::MAX as f64 / 1e9;

/// Events per packet at its source.
const SOURCE_EVENTS: f64 = 1.0;
/// Events per packet crossing a wired segment: transmission done, arrival.
const WIRED_EVENTS: f64 = 2.0;
/// Events per packet crossing a wireless segment: MAC free, arrival, the link's timers and
/// control frames.
const WIRELESS_EVENTS: f64 = 3.0;

/// The flow entry that contributes the most flows to a run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LargestFlow {
    /// Its index in `[[flow]]` (or `[[cell.flow]]`).
    pub index: usize,
    /// Its name as written (empty if none).
    pub name: String,
    /// Its `count`.
    pub count: usize,
}

/// Memory at the peak, by what holds it (bytes).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Memory {
    /// The program: [`BASE_BYTES`].
    pub base: u64,
    /// Trace files, each once.
    pub traces: u64,
    /// Flow state of the runs executing at once.
    pub flows: u64,
    /// Moving-window series: the counters of the runs executing at once, and the points of
    /// the results of the runs executing or waiting to be written.
    pub series: u64,
    /// The per-flow result rows of the runs executing or waiting to be written.
    pub results: u64,
    /// Writing a run into summary.json: one flow's JSON tree and text at a time
    /// ([`footprint::SUMMARY_JSON_FLOW_BYTES`]), while other runs execute.
    pub writing: u64,
    /// The sweep points' scenarios, held for the whole invocation.
    pub points: u64,
}

impl Memory {
    /// The peak: everything kept; runs are written while others execute.
    pub fn total(&self) -> u64 {
        self.base
            .saturating_add(self.traces)
            .saturating_add(self.flows)
            .saturating_add(self.writing)
            .saturating_add(self.series)
            .saturating_add(self.results)
            .saturating_add(self.points)
    }
}

/// The estimate of one `mslink sim` invocation; serialized (`mslink sim --estimate --json`)
/// with these field names, memory in bytes and times in seconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// Sweep points.
    pub points: usize,
    /// Runs: every point times its repetitions.
    pub runs: u64,
    /// Runs executing at once.
    pub at_once: u64,
    /// Flows of the largest run, copies (`count`) included.
    pub flows: u64,
    /// The flow entry with the largest `count` in that run.
    pub largest: Option<LargestFlow>,
    /// Memory one flow of that run keeps for the whole run, its largest kind (bytes), a
    /// transfer's window in flight apart.
    pub flow_bytes: u64,
    /// Memory a transfer (`ftp`) of that run holds while it runs: its connection and window in
    /// flight (bytes; 0 without transfers).
    pub window_bytes: u64,
    /// Moving-window points per flow of the longest run (0: no series).
    pub windows: u64,
    /// Events per simulated second of the busiest point.
    pub events_per_s: f64,
    /// Events of the longest run.
    pub run_events: f64,
    /// Events of every run.
    pub events: f64,
    /// Memory at the peak.
    pub memory: Memory,
    /// Thread seconds of every run at the machine's [`Costs`].
    pub cpu_s: f64,
    /// Seconds reading the trace files, once each.
    pub trace_s: f64,
    /// Wall-clock seconds: the traces, then the runs on `at_once` threads (never less than the
    /// longest run).
    pub wall_s: f64,
    /// Where the costs come from ([`Costs::source`]).
    pub costs: String,
    /// Transfers (`ftp` copies) counted as running at once in the largest run, their windows
    /// in flight held (0 without transfers).
    pub transfers_at_once: u64,
}

/// Estimates the runs of `points` (validated scenarios, one per sweep point, each run
/// `sim.reps` times), `threads` at once, at the machine's `costs`; `traces` gives each trace
/// file as the scenarios name it (a file it does not know counts as empty: the run will say
/// why).
pub fn estimate(
    points: &[Scenario],
    threads: usize,
    traces: &BTreeMap<String, TraceFile>,
    costs: &Costs,
) -> Estimate {
    let runs: u64 = points.iter().map(|p| u64::from(p.sim.reps)).sum();
    let at_once = (threads.max(1) as u64).min(runs.max(1));
    let mut e = Estimate {
        points: points.len(),
        runs,
        at_once,
        flows: 0,
        largest: None,
        flow_bytes: 0,
        window_bytes: 0,
        windows: 0,
        events_per_s: 0.0,
        run_events: 0.0,
        events: 0.0,
        memory: Memory {
            base: BASE_BYTES,
            ..Memory::default()
        },
        cpu_s: 0.0,
        trace_s: 0.0,
        wall_s: 0.0,
        costs: costs.source.clone(),
        transfers_at_once: 0,
    };
    let mut longest = 0.0f64;
    let mut files: Vec<String> = Vec::new();
    let (mut run_state, mut run_counters) = (0u64, 0u64);
    for sc in points {
        let reps = u64::from(sc.sim.reps);
        let p = point(sc);
        if p.flows > e.flows || e.largest.is_none() {
            e.flows = p.flows;
            e.largest = p.largest.clone();
            e.flow_bytes = p.flow_bytes;
            e.window_bytes = p.window_bytes;
            e.transfers_at_once = p.transfers_at_once;
        }
        let run_s = costs.run_s
            + p.flows as f64 * costs.flow_s
            + p.run_events * costs.event_s(p.live_flows as f64);
        longest = longest.max(run_s);
        e.cpu_s += run_s * reps as f64;
        e.memory.points = e.memory.points.saturating_add(footprint::point_bytes(sc));
        e.windows = e.windows.max(p.windows);
        e.events_per_s = e.events_per_s.max(p.events_per_s);
        e.run_events = e.run_events.max(p.run_events);
        e.events += p.run_events * reps as f64;
        run_state = run_state.max(p.state);
        e.memory.writing = e.memory.writing.max(
            p.flows
                .min(1)
                .saturating_mul(footprint::SUMMARY_JSON_FLOW_BYTES),
        );
        run_counters = run_counters.max(p.counters);
        // Runs are written as they finish and dropped: the results held at once are those of
        // the runs executing and of at most `2 * at_once` waiting to be written in order.
        let held = runs.min(3 * at_once);
        e.memory.series = e.memory.series.max(p.result_points.saturating_mul(held));
        e.memory.results = e.memory.results.max(p.result_rows.saturating_mul(held));
        for f in sc.trace_files() {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    e.memory.flows = run_state.saturating_mul(at_once);
    e.memory.series = e
        .memory
        .series
        .saturating_add(run_counters.saturating_mul(at_once));
    let known: Vec<&TraceFile> = files.iter().filter_map(|f| traces.get(f)).collect();
    e.memory.traces = known.iter().fold(0, |a: u64, t| a.saturating_add(t.held));
    e.trace_s = known.iter().map(|t| t.bytes as f64).sum::<f64>() * costs.trace_byte_s;
    e.wall_s = e.trace_s + (e.cpu_s / at_once as f64).max(longest);
    e
}

impl Estimate {
    /// Whether the peak fits in `available` bytes.
    pub fn fits(&self, available: u64) -> bool {
        self.memory.total() <= available
    }

    /// What to change to need less memory, the largest share first.
    pub fn advice(&self) -> String {
        let m = &self.memory;
        let mut shares: Vec<(u64, String)> = Vec::new();
        if let Some(l) = &self.largest {
            let entry = if l.count > 1 {
                format!("lower flow[{}].count ({})", l.index, l.count)
            } else {
                "use fewer flows".to_string()
            };
            let jobs = if self.at_once > 1 {
                ", or run fewer at once (--jobs 1)"
            } else {
                ""
            };
            shares.push((m.flows, format!("{entry}{jobs}")));
        }
        shares.push((
            m.series,
            "set sim.timeseries_window_s larger (or 0: no series), or shorten sim.duration_s"
                .to_string(),
        ));
        shares.push((
            m.results,
            "run fewer sweep points or repetitions at a time".to_string(),
        ));
        shares.push((m.traces, "use smaller trace files".to_string()));
        shares.sort_by_key(|(b, _)| std::cmp::Reverse(*b));
        shares
            .into_iter()
            .filter(|(b, _)| *b > 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What one sweep point's run costs.
struct Point {
    flows: u64,
    largest: Option<LargestFlow>,
    /// Largest per-flow state of the run's flows, a transfer's window in flight apart.
    flow_bytes: u64,
    /// Largest window in flight of the run's transfers.
    window_bytes: u64,
    windows: u64,
    events_per_s: f64,
    run_events: f64,
    /// Flow state of one run.
    state: u64,
    /// Moving-window counters of one run.
    counters: u64,
    /// Time-series points in one run's results, bytes.
    result_points: u64,
    /// Flow rows in one run's results, bytes.
    result_rows: u64,
    /// Transfers counted as running at once.
    transfers_at_once: u64,
    /// Flows whose state the events touch at once: every flow but the transfers, and the
    /// transfers running at once (what the cost of an event depends on).
    live_flows: u64,
}

/// Bytes of a copy's name: the flow's name (or `flowN`), and `#k` when it has copies.
fn name_len(f: &Flow, index: usize) -> usize {
    let base = if f.name.is_empty() {
        format!("flow{index}").len()
    } else {
        f.name.len()
    };
    let suffix = if f.count > 1 {
        1 + (f.count - 1).to_string().len()
    } else {
        0
    };
    base + suffix
}

fn point(sc: &Scenario) -> Point {
    let duration = sc.sim.duration_s;
    let window = sc.sim.timeseries_window_s;
    if let Some(cell) = &sc.cell {
        let n = cell.flows.len() as u64;
        let slots_per_s = cell.rate_bps / (8.0 * cell.frame_bytes as f64);
        let slot_s = 1.0 / slots_per_s;
        let windows = if window > 0.0 {
            (duration / window.max(slot_s)).floor() as u64
        } else {
            0
        };
        let name = cell.flows.iter().map(|f| f.name.len()).max().unwrap_or(4);
        return Point {
            flows: n,
            largest: None,
            flow_bytes: 0,
            window_bytes: 0,
            windows,
            events_per_s: slots_per_s,
            run_events: slots_per_s * duration,
            state: 0,
            counters: 0,
            // The flows and the whole link's pseudo-flow.
            result_points: (n + 1)
                .saturating_mul(windows)
                .saturating_mul(footprint::result_point_bytes(name)),
            result_rows: n.saturating_mul(footprint::result_flow_bytes(name)),
            transfers_at_once: 0,
            live_flows: n,
        };
    }
    let windows = if window > 0.0 {
        ((duration + sc.sim.drain_s) / window).floor() as u64 + 1
    } else {
        0
    };
    let mut p = Point {
        flows: 0,
        largest: None,
        flow_bytes: 0,
        window_bytes: 0,
        windows,
        events_per_s: 0.0,
        run_events: 0.0,
        state: 0,
        counters: 0,
        result_points: 0,
        result_rows: 0,
        transfers_at_once: 0,
        live_flows: 0,
    };
    let load = transfer_load(sc);
    for (i, f) in sc.flows.iter().enumerate() {
        let copies = f.count as u64;
        let name = name_len(f, i);
        let bytes = footprint::flow_state_bytes(f, name, duration);
        p.flows = p.flows.saturating_add(copies);
        // A transfer's window in flight only while it runs (see the module contract).
        let window = footprint::window_bytes(f);
        p.flow_bytes = p.flow_bytes.max(bytes - window);
        p.window_bytes = p.window_bytes.max(window);
        let running = match transfer(sc, f) {
            Some(t) => running_at_once(f, &t, load),
            None => copies,
        };
        if f.app == AppKind::Ftp {
            p.transfers_at_once = p.transfers_at_once.saturating_add(running);
        }
        p.live_flows = p.live_flows.saturating_add(running);
        p.state = p
            .state
            .saturating_add(copies.saturating_mul(bytes - window))
            .saturating_add(running.saturating_mul(window));
        let points = copies.saturating_mul(windows);
        p.counters = p
            .counters
            .saturating_add(points.saturating_mul(footprint::SERIES_POINT_BYTES));
        p.result_points = p
            .result_points
            .saturating_add(points.saturating_mul(footprint::result_point_bytes(name)));
        p.result_rows = p
            .result_rows
            .saturating_add(copies.saturating_mul(footprint::result_flow_bytes(name)));
        if p.largest.as_ref().is_none_or(|l| f.count > l.count) {
            p.largest = Some(LargestFlow {
                index: i,
                name: f.name.clone(),
                count: f.count,
            });
        }
    }
    let (per_s, total) = events(sc);
    p.events_per_s = per_s;
    p.run_events = total;
    p
}

/// What one `ftp` copy needs of its path: how long it lasts alone, and the share of the
/// bottleneck its copies offer.
struct Transfer {
    /// Seconds one copy lasts on an idle path.
    lasts_s: f64,
    /// Copies started per second (infinite when they all start at once).
    arrivals_per_s: f64,
    /// Bits per second the copies offer the bottleneck, over the bottleneck's rate.
    load: f64,
}

/// The transfer figures of flow `f` (an `ftp` entry on a path), else `None`.
fn transfer(sc: &Scenario, f: &Flow) -> Option<Transfer> {
    if f.app != AppKind::Ftp {
        return None;
    }
    let (lo, hi) = (f.from.min(f.to), f.from.max(f.to));
    let segs = sc.segments.get(lo..hi).filter(|s| !s.is_empty())?;
    let bottleneck = segs.iter().map(|s| s.rate()).fold(f64::INFINITY, f64::min);
    let rtt = segs.iter().map(|s| 2.0 * s.delay_ms() / 1e3).sum::<f64>();
    let mss = f64::from(f.tcp.mss.max(1));
    let segments = (f.size_bytes as f64 / mss).ceil().max(1.0);
    // The handshake, then slow start doubling from the initial window.
    let iw = f64::from(f.tcp.initial_window.max(1));
    let rounds = 1.0 + (segments / iw + 1.0).log2().ceil();
    let bits = f.size_bytes as f64 * 8.0;
    let lasts_s = rounds * rtt + bits / bottleneck;
    let spread_s = match f.start {
        Some(crate::scenario::StartDist::Uniform { spread_s }) => spread_s,
        Some(crate::scenario::StartDist::Exponential { mean_gap_s }) => mean_gap_s * f.count as f64,
        None => 0.0,
    };
    let arrivals_per_s = if spread_s > 0.0 {
        f.count as f64 / spread_s
    } else {
        f64::INFINITY
    };
    Some(Transfer {
        lasts_s,
        arrivals_per_s,
        load: arrivals_per_s * bits / bottleneck,
    })
}

/// The load every `ftp` entry of the path offers its bottleneck, together.
fn transfer_load(sc: &Scenario) -> f64 {
    sc.flows
        .iter()
        .filter_map(|f| transfer(sc, f))
        .map(|t| t.load)
        .sum()
}

/// Copies of transfer `f` running at once when all transfers offer `load` (Little's law,
/// stretched by 1 / (1 - load); every copy from [`SATURATED_LOAD`] on), at least one.
fn running_at_once(f: &Flow, t: &Transfer, load: f64) -> u64 {
    let copies = f.count as u64;
    if load >= SATURATED_LOAD || load.is_nan() || !t.arrivals_per_s.is_finite() {
        return copies;
    }
    let n = (t.arrivals_per_s * t.lasts_s / (1.0 - load)).ceil();
    (n as u64).clamp(1, copies.max(1))
}

/// A stream of packets one way along the path: every copy of a flow offers `pps` packets per
/// second of `bytes` each, for `active_s` seconds (or until `packets` have gone).
struct Stream {
    copies: f64,
    pps: f64,
    bytes: f64,
    lo: usize,
    hi: usize,
    dir: usize,
    active_s: f64,
    packets: Option<f64>,
    /// TCP: the source sends only as fast as its path carries (ACK clocking).
    clocked: bool,
}

/// The packet streams of a path scenario's flows: per flow one each way it sends (data, and
/// a TCP flow's ACKs), with its rate, size, hops and active time.
fn streams(sc: &Scenario) -> Vec<Stream> {
    let duration = sc.sim.duration_s;
    let segs = &sc.segments;
    let mut streams: Vec<Stream> = Vec::new();
    for f in &sc.flows {
        let (lo, hi) = (f.from.min(f.to), f.from.max(f.to));
        if lo == hi || hi > segs.len() {
            continue;
        }
        let dir = usize::from(f.to < f.from);
        let start = f.start_s.max(0.0);
        let stop = if f.stop_s > 0.0 {
            f.stop_s.min(duration)
        } else {
            duration
        };
        let active_s = (stop - start).max(0.0);
        let bytes = f.packet_bytes as f64;
        let clocked = matches!(f.app, AppKind::Ftp | AppKind::Www);
        let stream = |pps: f64, bytes: f64, dir: usize, packets: Option<f64>| Stream {
            copies: f.count as f64,
            pps,
            bytes,
            lo,
            hi,
            dir,
            active_s,
            packets,
            clocked,
        };
        let bottleneck = segs[lo..hi]
            .iter()
            .map(|s| s.rate())
            .fold(f64::INFINITY, f64::min);
        match f.app {
            AppKind::Cbr => {
                // A spurt of exponential length T (mean talk_s) sends at its start and then
                // every interval i before its end: ceil(T / i) packets, on average
                // 1 / (1 - exp(-i / talk_s)) (about talk_s / i when i is short, 1 when long).
                let interval = 8.0 * bytes / f.rate_bps;
                let per_spurt = 1.0 / (1.0 - (-interval / f.talk_s).exp());
                streams.push(stream(
                    per_spurt / (f.talk_s + f.silence_s),
                    bytes,
                    dir,
                    None,
                ))
            }
            AppKind::Constant => streams.push(stream(f.rate_bps / (8.0 * bytes), bytes, dir, None)),
            AppKind::Ping => {
                let pps = f.rate_bps / (8.0 * bytes);
                streams.push(stream(pps, bytes, dir, None));
                streams.push(stream(pps, bytes, 1 - dir, None));
            }
            AppKind::Spray => {
                let first = &segs[f.from.min(f.to)];
                streams.push(stream(first.rate() / (8.0 * bytes), bytes, dir, None));
            }
            AppKind::Ftp | AppKind::Www => {
                let segment = f64::from(f.tcp.mss) + f64::from(crate::tcp::HEADERS);
                let pps = bottleneck / (8.0 * segment);
                let acks = if f.tcp.delayed_ack { 0.5 } else { 1.0 };
                let (fwd, back) = if f.app == AppKind::Ftp {
                    let n = (f.size_bytes as f64 / f64::from(f.tcp.mss.max(1))).ceil();
                    (Some(n), Some(n * acks))
                } else {
                    (None, None)
                };
                streams.push(stream(pps, segment, dir, fwd));
                streams.push(stream(
                    pps * acks,
                    f64::from(crate::tcp::HEADERS),
                    1 - dir,
                    back,
                ));
            }
        }
    }
    streams
}

/// (events per simulated second, events of one run) of a path scenario.
fn events(sc: &Scenario) -> (f64, f64) {
    let segs = &sc.segments;
    let streams = streams(sc);
    // Bits per second offered to each segment and direction, and the share it carries.
    let mut load = vec![[0.0f64; 2]; segs.len()];
    for s in &streams {
        for l in &mut load[s.lo..s.hi] {
            l[s.dir] += s.copies * s.pps * s.bytes * 8.0;
        }
    }
    let carried = |seg: &crate::scenario::Segment, load: &[f64; 2], dir: usize| -> f64 {
        if load[dir] > 0.0 {
            (seg.rate() / load[dir]).min(1.0)
        } else {
            1.0
        }
    };
    let (mut per_s, mut total) = (0.0, 0.0);
    for s in &streams {
        let (mut per_packet, mut crossing) = (SOURCE_EVENTS, SOURCE_EVENTS);
        let mut share = 1.0f64;
        for (seg, load) in segs[s.lo..s.hi].iter().zip(&load[s.lo..s.hi]) {
            share = share.min(carried(seg, load, s.dir));
            let e = match seg.kind {
                SegmentKind::Wired => WIRED_EVENTS,
                SegmentKind::Wireless => WIRELESS_EVENTS,
            };
            per_packet += share * e;
            crossing += e;
        }
        // A TCP source sends at the share its path carries, so its packets all cross it; a
        // datagram source sends at its rate whatever is dropped on the way.
        let rate = if s.clocked {
            s.copies * s.pps * share * crossing
        } else {
            s.copies * s.pps * per_packet
        };
        per_s += rate;
        // A transfer goes at the share its path carries, and stops when its bytes are sent.
        let seconds = match s.packets {
            Some(n) if s.pps * share > 0.0 => s.active_s.min(n / (s.pps * share)),
            _ => s.active_s,
        };
        total += rate * seconds;
    }
    (per_s, total)
}

/// `n` bytes in binary units: "512 B", "16.9 KiB", "4.3 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// A count in SI units: "950", "5.3 k", "28.1 M", "1.3 G".
fn count(x: f64) -> String {
    const UNITS: [(f64, &str); 5] = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    match UNITS.iter().find(|(scale, _)| x >= *scale) {
        Some((scale, unit)) if x < 1e18 => format!("{:.1} {unit}", x / scale),
        Some(_) => format!("{x:.1e}"),
        None => format!("{x:.0}"),
    }
}

/// A wall time for humans: "under a second", "40 s", "12 min", "5.2 h", "3.0 days", "17 years".
pub fn duration(s: f64) -> String {
    if s < 1.0 {
        "under a second".to_string()
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 2.0 * 3600.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 48.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s < 365.0 * 86400.0 {
        format!("{:.1} days", s / 86400.0)
    } else {
        format!("{} years", count(s / (365.25 * 86400.0)))
    }
}

/// A short duration for a breakdown: "0.4 s", "40 s", "12 min", "5.2 h".
fn duration_short(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        duration(s)
    }
}

impl fmt::Display for Estimate {
    /// Several lines, the first without indentation, the others indented by two spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} run{} over {} sweep point{}, {} at a time",
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.points,
            if self.points == 1 { "" } else { "s" },
            self.at_once
        )?;
        write!(f, "  flows    {} per run", self.flows)?;
        if let Some(l) = &self.largest {
            if l.count > 1 {
                let name = if l.name.is_empty() {
                    String::new()
                } else {
                    format!(" `{}`", l.name)
                };
                write!(f, " (flow[{}]{name}: count = {})", l.index, l.count)?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "  events   {} per simulated second, {} per run, {} in all",
            count(self.events_per_s),
            count(self.run_events),
            count(self.events),
        )?;
        let time = if self.wall_s < 1.0 {
            duration(self.wall_s)
        } else {
            format!("about {}", duration(self.wall_s))
        };
        writeln!(
            f,
            "  time     {time}: {} of runs on {} thread{}{}",
            duration_short(self.cpu_s),
            self.at_once,
            if self.at_once == 1 { "" } else { "s" },
            if self.trace_s > 0.0 {
                format!(", {} reading traces", duration_short(self.trace_s))
            } else {
                String::new()
            }
        )?;
        writeln!(f, "           costs {}", self.costs)?;
        let m = &self.memory;
        writeln!(f, "  memory   about {} at the peak:", bytes(m.total()))?;
        writeln!(
            f,
            "    flow state    {:>10}  {} flow{} x {} x {} run{} at a time{}",
            bytes(m.flows),
            self.flows,
            if self.flows == 1 { "" } else { "s" },
            bytes(self.flow_bytes),
            self.at_once,
            if self.at_once == 1 { "" } else { "s" },
            if self.transfers_at_once > 0 {
                format!(
                    ", and {} transfer{} running at once x {} in flight",
                    self.transfers_at_once,
                    if self.transfers_at_once == 1 { "" } else { "s" },
                    bytes(self.window_bytes)
                )
            } else {
                String::new()
            }
        )?;
        if self.windows > 0 {
            writeln!(
                f,
                "    time series   {:>10}  {} windows per flow, in every run's results",
                bytes(m.series),
                self.windows
            )?;
        } else {
            writeln!(
                f,
                "    time series   {:>10}  (no moving window)",
                bytes(m.series)
            )?;
        }
        writeln!(
            f,
            "    writing       {:>10}  summary.json, one flow at a time",
            bytes(m.writing)
        )?;
        writeln!(
            f,
            "    results       {:>10}  a row per flow of {} run{} at a time (written as they finish)",
            bytes(m.results),
            self.runs.min(3 * self.at_once),
            if self.runs.min(3 * self.at_once) == 1 { "" } else { "s" }
        )?;
        writeln!(
            f,
            "    traces        {:>10}  each file once",
            bytes(m.traces)
        )?;
        writeln!(
            f,
            "    sweep points  {:>10}  {} point scenario{}",
            bytes(m.points),
            self.points,
            if self.points == 1 { "" } else { "s" }
        )?;
        write!(f, "    program       {:>10}", bytes(m.base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE_FLOW: &str = "[sim]\nduration_s = 100\n[[segment]]\nkind = \"wired\"\n[[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\n[[flow]]\nname = \"a\"\nfrom = 0\nto = 2\n";

    fn sc(text: &str) -> Scenario {
        let s = Scenario::parse(text).unwrap();
        s.validate().unwrap();
        s
    }

    #[test]
    fn flows_multiply_the_state_and_runs_at_once_too() {
        let one = estimate(&[sc(ONE_FLOW)], 1, &BTreeMap::new(), &Costs::builtin());
        let many = estimate(
            &[sc(&ONE_FLOW.replace("to = 2", "to = 2\ncount = 100000000"))],
            2,
            &BTreeMap::new(),
            &Costs::builtin(),
        );
        assert_eq!(one.flows, 1);
        assert_eq!(many.flows, 100_000_000);
        assert_eq!(many.at_once, 1, "one run cannot run twice at once");
        assert_eq!(many.memory.flows, 100_000_000 * many.flow_bytes);
        assert!(
            many.memory.total() > 80 << 30,
            "{}",
            bytes(many.memory.total())
        );
        assert!(!many.fits(64 << 30));
        assert!(one.fits(64 << 20));
        let text = many.to_string();
        assert!(text.contains("count = 100000000"), "{text}");
        assert!(many.advice().contains("lower flow[0].count (100000000)"));
    }

    #[test]
    fn events_follow_the_offered_load_and_the_segments_crossed() {
        // 1 Mbit/s of 1000-byte packets in talk spurts of 1 s mean every 2.35 s: a spurt sends
        // 1 / (1 - exp(-0.008)) = 125.5 packets on average, each one source event, two on the
        // wired segment and three on the wireless one.
        let e = estimate(&[sc(ONE_FLOW)], 1, &BTreeMap::new(), &Costs::builtin());
        let pps = 1.0 / (1.0 - (-0.008f64).exp()) / 2.35;
        assert!(
            (e.events_per_s - pps * 6.0).abs() < 1e-6,
            "{}",
            e.events_per_s
        );
        assert!((e.run_events - pps * 6.0 * 100.0).abs() < 1e-3);
        // A segment carries at most its rate: 20 Mbit/s of spray on a 5 Mbit/s hop.
        let over = estimate(
            &[sc(&ONE_FLOW.replace(
                "to = 2",
                "to = 2\napp = \"constant\"\nrate_bps = 2e7",
            ))],
            1,
            &BTreeMap::new(),
            &Costs::builtin(),
        );
        let sent = 2500.0;
        let expect = sent * (1.0 + 2.0 * 0.5 + 3.0 * 0.25);
        assert!(
            (over.events_per_s - expect).abs() < 1e-6,
            "{}",
            over.events_per_s
        );
    }

    #[test]
    fn series_and_traces_and_reps_add_up() {
        let text = ONE_FLOW.replace("[sim]\n", "[sim]\nreps = 3\n");
        let mut files = BTreeMap::new();
        files.insert(
            "t.trace".to_string(),
            TraceFile {
                bytes: 4000,
                held: 1000,
            },
        );
        let traced = text.replace(
            "preset = \"wlan\"",
            "preset = \"wlan\"\nerror = { model = \"trace\", file = \"t.trace\" }",
        );
        let c = Costs::builtin();
        let e = estimate(&[sc(&traced), sc(&traced)], 4, &files, &c);
        assert_eq!((e.runs, e.at_once), (6, 4));
        assert_eq!(e.memory.traces, 1000, "one file, counted once");
        // 100 s of traffic and 10 s of drain in 1 s windows: 111 points per flow and run.
        assert_eq!(e.windows, 111);
        let quiet = estimate(
            &[sc(
                &text.replace("reps = 3", "reps = 3\ntimeseries_window_s = 0")
            )],
            1,
            &BTreeMap::new(),
            &Costs::builtin(),
        );
        assert_eq!((quiet.windows, quiet.memory.series), (0, 0));
        assert!((e.events - 6.0 * e.run_events).abs() < 1e-3);
        // Six runs of one flow on four threads, after the trace's 4000 bytes are read.
        let run = c.run_time(1.0, e.run_events);
        assert!((e.cpu_s - 6.0 * run).abs() < 1e-12);
        assert!((e.trace_s - 4000.0 * c.trace_byte_s).abs() < 1e-15);
        assert!((e.wall_s - (e.trace_s + 6.0 * run / 4.0)).abs() < 1e-12);
    }

    /// 100,000 web transfers of 20 kB over a 500 Mbit/s bottleneck (12 ms of round trip),
    /// started uniformly over 60 s: about 1,667 a second offering 53% of the bottleneck.
    const TRANSFERS: &str = "[sim]\nduration_s = 120\ntimeseries_window_s = 0\n[[segment]]\nkind = \"wired\"\nrate_bps = 1e9\ndelay_ms = 5\n[[segment]]\nkind = \"wired\"\nrate_bps = 5e8\ndelay_ms = 1\n[[flow]]\nname = \"web\"\napp = \"ftp\"\nfrom = 0\nto = 2\nsize_bytes = 20000\ncount = 100000\nstart = { dist = \"uniform\", spread_s = 60 }\n[flow.tcp]\nmss = 1000\ninitial_window = 10\n";

    #[test]
    fn transfers_hold_their_windows_only_while_they_run() {
        let c = Costs::builtin();
        let e = estimate(&[sc(TRANSFERS)], 1, &BTreeMap::new(), &c);
        // Little's law: 1,666.7 arrivals/s x (3 round trips of 12 ms + 20 kB at 500 Mbit/s)
        // / (1 - 0.533): the handshake, then 20 segments from a window of 10 in two rounds.
        let (rate, lasts, load): (f64, f64, f64) =
            (100_000.0 / 60.0, 3.0 * 0.012 + 160_000.0 / 5e8, 0.5333);
        let want = (rate * lasts / (1.0 - load)).ceil() as u64;
        assert!(
            e.transfers_at_once.abs_diff(want) <= 1,
            "{} vs {want}",
            e.transfers_at_once
        );
        assert!(
            e.window_bytes > 20_000,
            "a 20-segment window: {}",
            e.window_bytes
        );
        assert_eq!(
            e.memory.flows,
            100_000 * e.flow_bytes + e.transfers_at_once * e.window_bytes
        );
        // Events cost as for the flows live at once, not all 100,000.
        let per_event = (e.cpu_s - c.run_s - 100_000.0 * c.flow_s) / e.run_events;
        let live = e.transfers_at_once as f64;
        assert!((per_event - c.event_s(live)).abs() < 1e-12);
        assert!(c.event_s(live) < c.event_s(100_000.0));
        // All at once, or a saturated bottleneck: every copy holds its window.
        for text in [
            TRANSFERS.replace("start = { dist = \"uniform\", spread_s = 60 }\n", ""),
            TRANSFERS.replace("spread_s = 60", "spread_s = 30"),
        ] {
            let all = estimate(&[sc(&text)], 1, &BTreeMap::new(), &c);
            assert_eq!(all.transfers_at_once, 100_000);
        }
    }

    #[test]
    fn sweep_points_count_their_scenarios() {
        let one = estimate(&[sc(ONE_FLOW)], 1, &BTreeMap::new(), &Costs::builtin());
        let many = estimate(
            &vec![sc(ONE_FLOW); 1000],
            2,
            &BTreeMap::new(),
            &Costs::builtin(),
        );
        assert!(one.memory.points > 2048);
        assert_eq!(many.memory.points, 1000 * one.memory.points);
        assert_eq!(many.memory.total() - many.memory.points, {
            let mut m = many.memory.clone();
            m.points = 0;
            m.total()
        });
    }

    #[test]
    fn units_for_humans() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 * 1024 + 16), "16.0 KiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
        assert_eq!(count(5_300.0), "5.3 k");
        assert_eq!(count(950.0), "950");
        assert_eq!(duration(40.0), "40 s");
        assert_eq!(duration(0.2), "under a second");
        assert_eq!(duration(3.0 * 3600.0), "3.0 h");
        assert_eq!(duration(1e12), "31.7 k years");
    }
}
