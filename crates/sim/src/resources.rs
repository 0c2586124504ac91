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
//! * the traces, each file once (shared by every run): at most the file's size, the bound of
//!   the packed form (`mslink_channel::trace::PackedTrace`);
//! * per run executing at once, every flow's state for the whole run (`world/footprint.rs`:
//!   `size_of` of the world's per-flow types, a datagram flow's duplicate window at its
//!   largest, TCP windows in flight) and the moving-window byte counters of every flow;
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

use std::collections::BTreeMap;
use std::fmt;

use crate::scenario::{AppKind, Flow, Scenario, SegmentKind};
use crate::world::footprint;

/// Memory of the program itself, its link ends, queues and plots: the smallest runs peak at
/// 7-13 MB (`/usr/bin/time -v`, docs/PERFORMANCE.md); 16 MiB leaves room.
pub const BASE_BYTES: u64 = 16 << 20;

/// Simulator events per second of wall time on one thread, for the time estimate: the
/// slowest simulator row of docs/PERFORMANCE.md (10,000 CBR flows, 3.5 M events per second;
/// 1,000 flows make 6.2 M per CPU-second and 004 Fig. 7's one flow 9.2 M). Many flows are
/// slower than few (their state leaves the caches), so the slowest row errs on the long side.
pub const EVENTS_PER_SECOND: f64 = 3.5e6;

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
    /// Memory one flow of that run keeps for the whole run, its largest kind (bytes).
    pub flow_bytes: u64,
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
    /// Wall-clock seconds at [`EVENTS_PER_SECOND`] per run executing at once.
    pub wall_s: f64,
}

/// Estimates the runs of `points` (validated scenarios, one per sweep point, each run
/// `sim.reps` times), `threads` at once; `trace_bytes` gives the size of each trace file as
/// the scenarios name it (a file it does not know counts as empty: the run will say why).
pub fn estimate(
    points: &[Scenario],
    threads: usize,
    trace_bytes: &BTreeMap<String, u64>,
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
        windows: 0,
        events_per_s: 0.0,
        run_events: 0.0,
        events: 0.0,
        memory: Memory {
            base: BASE_BYTES,
            ..Memory::default()
        },
        wall_s: 0.0,
    };
    let mut files: Vec<String> = Vec::new();
    let (mut run_state, mut run_counters) = (0u64, 0u64);
    for sc in points {
        let reps = u64::from(sc.sim.reps);
        let p = point(sc);
        if p.flows > e.flows || e.largest.is_none() {
            e.flows = p.flows;
            e.largest = p.largest.clone();
            e.flow_bytes = p.flow_bytes;
        }
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
    e.memory.traces = files
        .iter()
        .filter_map(|f| trace_bytes.get(f))
        .fold(0, |a: u64, b| a.saturating_add(*b));
    e.wall_s =
        (e.events / (EVENTS_PER_SECOND * at_once as f64)).max(e.run_events / EVENTS_PER_SECOND);
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
    /// Largest per-flow state of the run's flows.
    flow_bytes: u64,
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
        windows,
        events_per_s: 0.0,
        run_events: 0.0,
        state: 0,
        counters: 0,
        result_points: 0,
        result_rows: 0,
    };
    for (i, f) in sc.flows.iter().enumerate() {
        let copies = f.count as u64;
        let name = name_len(f, i);
        let bytes = footprint::flow_state_bytes(f, name, duration);
        p.flows = p.flows.saturating_add(copies);
        p.flow_bytes = p.flow_bytes.max(bytes);
        p.state = p.state.saturating_add(copies.saturating_mul(bytes));
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
            "  time     {time}, at {} events/s per thread",
            count(EVENTS_PER_SECOND)
        )?;
        let m = &self.memory;
        writeln!(f, "  memory   about {} at the peak:", bytes(m.total()))?;
        writeln!(
            f,
            "    flow state    {:>10}  {} flow{} x {} x {} run{} at a time",
            bytes(m.flows),
            self.flows,
            if self.flows == 1 { "" } else { "s" },
            bytes(self.flow_bytes),
            self.at_once,
            if self.at_once == 1 { "" } else { "s" }
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
        let one = estimate(&[sc(ONE_FLOW)], 1, &BTreeMap::new());
        let many = estimate(
            &[sc(&ONE_FLOW.replace("to = 2", "to = 2\ncount = 100000000"))],
            2,
            &BTreeMap::new(),
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
        let e = estimate(&[sc(ONE_FLOW)], 1, &BTreeMap::new());
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
        files.insert("t.trace".to_string(), 1000);
        let traced = text.replace(
            "preset = \"wlan\"",
            "preset = \"wlan\"\nerror = { model = \"trace\", file = \"t.trace\" }",
        );
        let e = estimate(&[sc(&traced), sc(&traced)], 4, &files);
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
        );
        assert_eq!((quiet.windows, quiet.memory.series), (0, 0));
        assert!((e.events - 6.0 * e.run_events).abs() < 1e-3);
        assert!((e.wall_s - e.events / (4.0 * EVENTS_PER_SECOND)).abs() < 1e-9);
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
