//! The rows of a benchmark report and the statistics behind them.
//!
//! Contract: times are microseconds. Every point is measured `reps` times (runs); each figure
//! of a row is the mean over its runs, and the row's `ci95` maps the figure's field name to the
//! half-width of its Student-t 95% confidence interval over the runs
//! (`mslink_stats::estimate`; infinite, written `null` in JSON, with one run). Round-trip
//! percentiles of one run come from an HDR histogram of its round trips (3 significant digits:
//! within 0.1% of the exact sample quantile, and never above the run's maximum); max and mean
//! are exact. [`fit_line`] is 000
//! §IV.C.2's round-trip equation fitted by relative error, and [`fit_quality`] its weighted R²
//! and residuals. Every row serializes to the JSON `mslink bench --json` prints; the fields
//! `mslink reproduce --bench` reads (`p50_us`, `mbit_s`, `cpu_s_per_gb`, `mean_us`, ...) keep
//! their names and meaning (the mean over runs).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::BenchBackend;
use crate::WaitMode;

/// Half-widths of 95% confidence intervals, by the name of the field they belong to.
pub type Ci95 = BTreeMap<&'static str, f64>;

/// One run of a ping-pong point, as measured.
#[derive(Debug, Clone, Default)]
pub struct PingRun {
    /// Every recorded round trip (ns), in order.
    pub rtts_ns: Vec<u64>,
    /// Wall time of the whole exchange, warm-up included (s).
    pub seconds: f64,
    /// Round trips in `seconds` (warm-up included).
    pub round_trips: usize,
    /// Client user and system CPU over the exchange (s).
    pub client_cpu: (f64, f64),
    /// Server user and system CPU over the exchange (s), as the server reported it.
    pub server_cpu: (f64, f64),
    /// The server's own wall time over the same exchange (s; it starts when the server acks
    /// the test, a little before the client's first send).
    pub server_seconds: f64,
    /// The CPU the client and the server ran on at the end of the exchange (sched_getcpu).
    pub cpus: (i64, i64),
    /// Echoes whose length and every byte were checked against what was sent (all of them,
    /// warm-up included; 0 where nothing is checked: the C floor).
    pub echoes_checked: u64,
    /// The floor measured just before and just after this run (`--floor`, polling points).
    pub floor: Option<FloorPair>,
}

/// A floor run's round trip (µs) at p50, p99 and p99.9.
pub type FloorQuantiles = [f64; 3];

/// The floor measured just before and just after one run of a VI point.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FloorPair {
    /// Before the run.
    pub before: FloorQuantiles,
    /// After it.
    pub after: FloorQuantiles,
    /// Times the run was measured again because its floors differed by more than
    /// [`FLOOR_GAP_PCT`].
    pub repeats: usize,
}

/// Two floors around a run that differ by more than this (p50, percent of the smaller) say
/// the placement of the processes changed under it (a hypervisor moved a vCPU): the run is
/// measured again, and flagged if they still differ.
pub const FLOOR_GAP_PCT: f64 = 20.0;

/// The p50, p99 and p99.9 of a run's round trips (ns), in µs.
pub fn floor_quantiles(rtts_ns: &[u64]) -> FloorQuantiles {
    let mut v = rtts_ns.to_vec();
    v.sort_unstable();
    [
        percentile(&v, 0.5),
        percentile(&v, 0.99),
        percentile(&v, 0.999),
    ]
}

impl FloorPair {
    /// How far apart the two floors' p50 are, percent of the smaller.
    pub fn gap_pct(&self) -> f64 {
        let (a, b) = (self.before[0], self.after[0]);
        let lo = a.min(b);
        if lo > 0.0 {
            100.0 * (a - b).abs() / lo
        } else {
            f64::INFINITY
        }
    }

    /// The floor a run is compared with: the mean of the two, per quantile.
    pub fn mean(&self) -> FloorQuantiles {
        [0, 1, 2].map(|k| (self.before[k] + self.after[k]) / 2.0)
    }
}

/// A polling point against the floor measured around each of its runs.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct FloorRatios {
    /// The point's p50 over the floor's, mean over runs.
    pub p50: f64,
    /// The same at p99.
    pub p99: f64,
    /// The same at p99.9.
    pub p999: f64,
    /// The floor's p50, mean over runs (µs).
    pub floor_p50_us: f64,
    /// The largest gap between a run's two floors (p50), percent of the smaller.
    pub max_gap_pct: f64,
    /// Runs measured again because their floors differed by more than [`FLOOR_GAP_PCT`].
    pub repeats: usize,
    /// Runs whose floors still differed by more than [`FLOOR_GAP_PCT`]: the placement
    /// changed under them, and their ratios are not to be trusted.
    pub unsteady_runs: usize,
}

/// One ping-pong point: round-trip percentiles and CPU per side, means over `reps` runs of
/// `iters` round trips each.
#[derive(Serialize, Debug, Clone)]
pub struct PingRow {
    /// What was measured.
    pub backend: BenchBackend,
    /// How the client waited.
    pub mode: WaitMode,
    /// "loopback" or "veth" (network namespaces; the `sock` reference always runs on
    /// loopback).
    pub path: &'static str,
    /// Message size in bytes.
    pub size: usize,
    /// Round trips measured per run.
    pub iters: usize,
    /// Runs.
    pub reps: usize,
    /// Median round trip.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest round trip.
    pub max_us: f64,
    /// Mean round trip.
    pub mean_us: f64,
    /// Client CPU (user + system) over the exchange as a share of its wall time, percent:
    /// 100 is one core kept busy (a polling waiter spins).
    pub client_cpu_pct: f64,
    /// Server CPU share of the server's own wall time over the exchange, percent.
    pub server_cpu_pct: f64,
    /// Client CPU per round trip.
    pub client_cpu_us_per_rtt: f64,
    /// Server CPU per round trip.
    pub server_cpu_us_per_rtt: f64,
    /// Runs that ended with client and server on the same CPU. A blocking hand-off between
    /// two processes on one CPU is a context switch; across two CPUs it wakes the other CPU,
    /// which on a VM without guest halt-polling is an inter-processor interrupt to a halted
    /// vCPU: the two give different round trips (docs/bench.md, "blocking round trip").
    pub same_cpu_runs: usize,
    /// Round trips over all runs, warm-up included, and how many of their echoes were
    /// checked, length and bytes, against what was sent (each message carries its round's
    /// number, so a stale or duplicated echo differs too).
    pub echoes: u64,
    /// See `echoes`.
    pub echoes_checked: u64,
    /// Against the floor measured just before and after each run (`--floor`, polling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<FloorRatios>,
    /// 95% interval half-widths of the figures above, by field name.
    pub ci95: Ci95,
    /// Every round trip of every run (ns), for `--log`.
    #[serde(skip)]
    pub runs: Vec<Vec<u64>>,
    /// All runs' round trips in one histogram (ns), for the percentile distribution.
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
}

/// One run of a throughput point, as measured.
#[derive(Debug, Clone, Default)]
pub struct ThroughputRun {
    /// Messages sent.
    pub messages: usize,
    /// Wall time from the first post to the server's final report (s).
    pub seconds: f64,
    /// Client user and system CPU (s).
    pub client_cpu: (f64, f64),
    /// Server user and system CPU (s).
    pub server_cpu: (f64, f64),
    /// io_uring SEND_ZC sends (client) and how many of them the kernel copied.
    pub zc: (u64, u64),
    /// Messages whose content the receiver checked (0 without `--verify`).
    pub verified: u64,
}

/// One throughput point, with the CPU each process spent: means over `reps` runs.
#[derive(Serialize, Debug, Clone)]
pub struct ThroughputRow {
    /// What was measured.
    pub backend: BenchBackend,
    /// How both sides waited.
    pub mode: WaitMode,
    /// "loopback" or "veth" (network namespaces).
    pub path: &'static str,
    /// Message size in bytes.
    pub size: usize,
    /// Messages sent per run.
    pub messages: usize,
    /// Runs.
    pub reps: usize,
    /// Wall time.
    pub seconds: f64,
    /// Payload rate.
    pub mbit_s: f64,
    /// Client user CPU seconds.
    pub client_user_s: f64,
    /// Client system CPU seconds.
    pub client_sys_s: f64,
    /// Server user CPU seconds.
    pub server_user_s: f64,
    /// Server system CPU seconds.
    pub server_sys_s: f64,
    /// Client + server CPU seconds per gigabyte moved.
    pub cpu_s_per_gb: f64,
    /// Client (sender) user+system CPU nanoseconds per byte moved.
    pub client_cpu_ns_per_byte: f64,
    /// Server (receiver) user+system CPU nanoseconds per byte moved.
    pub server_cpu_ns_per_byte: f64,
    /// Client CPU as a share of wall time, percent.
    pub client_cpu_pct: f64,
    /// Server CPU as a share of wall time, percent.
    pub server_cpu_pct: f64,
    /// io_uring SEND_ZC sends during this point (client side, all runs).
    pub zc_sends: u64,
    /// Of `zc_sends`, those with IORING_NOTIF_USAGE_ZC_COPIED set.
    pub zc_copied: u64,
    /// Messages the receiver checked against the sender's seeded pattern (all runs; 0
    /// without `--verify`). A mismatch fails the run instead.
    pub verified_messages: u64,
    /// 95% interval half-widths of the figures above, by field name.
    pub ci95: Ci95,
}

/// The mean cost of one call (000 Tables 1 and 2).
#[derive(Serialize, Debug, Clone)]
pub struct CallRow {
    /// "socket" (000 Table 1) or "vi" (000 Table 2).
    pub api: &'static str,
    /// The call.
    pub call: &'static str,
    /// Mean wall time per call (mean over runs).
    pub mean_us: f64,
    /// CPU time of the measuring thread per call, user and system (mean over runs), for
    /// the rows timed as one loop (a pair of calls, or the four VI calls); NaN (JSON
    /// `null`) for calls timed one by one, too short for the kernel's CPU accounting.
    pub cpu_usr_us: f64,
    /// System part of the above: the kernel's share, which user-level messaging removes.
    pub cpu_sys_us: f64,
    /// Runs.
    pub reps: usize,
    /// 95% interval half-width of `mean_us` (and of the CPU figures) over the runs.
    pub ci95: Ci95,
}

/// How far one size's median round trip lies from the fitted line.
#[derive(Serialize, Debug, Clone)]
pub struct Residual {
    /// Message size (bytes).
    pub size: usize,
    /// Measured median round trip (mean over runs).
    pub p50_us: f64,
    /// The line's value there.
    pub fit_us: f64,
    /// (measured - fitted) / fitted, percent.
    pub pct: f64,
}

/// The line fitted to one backend and mode's median round trips: fixed + per byte · size.
#[derive(Serialize, Debug, Clone)]
pub struct Fit {
    /// What was measured.
    pub backend: BenchBackend,
    /// How the client waited.
    pub mode: WaitMode,
    /// Fixed cost.
    pub fixed_us: f64,
    /// Cost per byte.
    pub us_per_byte: f64,
    /// Goodness of fit: R² of the 1/y²-weighted fit (the share of the relative variation
    /// of the medians the line explains; 1 is a perfect line; null with fewer than three
    /// sizes).
    pub r2: f64,
    /// Largest |residual| in percent of the line.
    pub max_residual_pct: f64,
    /// Each size's residual.
    pub residuals: Vec<Residual>,
    /// 95% interval half-widths of `fixed_us` and `us_per_byte` over lines fitted to each
    /// run alone.
    pub ci95: Ci95,
}

/// What carried a backend's connection, as the kernel reported its socket (checked against
/// the backend's name before any of its rows was kept).
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct CarrierRow {
    /// The backend.
    pub backend: BenchBackend,
    /// What carried it.
    pub carrier: crate::Carrier,
}

/// Everything a client run measured.
#[derive(Serialize, Debug, Default)]
pub struct Report {
    /// The carrier of every backend measured (and of the plain-socket references), in order.
    pub carriers: Vec<CarrierRow>,
    /// Ping-pong points (000 Figs. 5 and 7).
    pub pingpong: Vec<PingRow>,
    /// A fitted line per backend and mode (000 Fig. 7's equation).
    pub rtt_fit: Vec<Fit>,
    /// Throughput points (000 Figs. 4 and 6).
    pub throughput: Vec<ThroughputRow>,
    /// Per-call costs (000 Tables 1 and 2).
    pub callcost: Vec<CallRow>,
    /// Socket send+recv pair over VI post send + send wait + post recv + recv wait.
    pub socket_over_vi_ratio: f64,
}

/// Mean and 95% half-width of `xs` (the project's Student-t interval).
pub(super) fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let e = mslink_stats::estimate(xs);
    (e.mean, e.half)
}

/// Sets `*field = mean(xs)` and `ci[name]` to its half-width.
fn summarize(ci: &mut Ci95, name: &'static str, field: &mut f64, xs: &[f64]) {
    let (m, h) = mean_ci(xs);
    *field = m;
    ci.insert(name, h);
}

/// The HDR histogram of `ns` (3 significant digits, resized as needed).
pub fn histogram(ns: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).expect("3 significant digits is a valid precision");
    for &x in ns {
        // Auto-resizing histogram: recording cannot fail for a u64.
        let _ = h.record(x.max(1));
    }
    h
}

impl PingRow {
    /// The row of a point from its runs (each run's round trips in ns, any order).
    pub fn from_runs(
        backend: BenchBackend,
        mode: WaitMode,
        path: &'static str,
        size: usize,
        iters: usize,
        runs: Vec<PingRun>,
    ) -> PingRow {
        let mut row = PingRow {
            backend,
            mode,
            path,
            size,
            iters,
            reps: runs.len(),
            p50_us: 0.0,
            p90_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            max_us: 0.0,
            mean_us: 0.0,
            client_cpu_pct: 0.0,
            server_cpu_pct: 0.0,
            client_cpu_us_per_rtt: 0.0,
            server_cpu_us_per_rtt: 0.0,
            same_cpu_runs: runs.iter().filter(|r| r.cpus.0 == r.cpus.1).count(),
            echoes: runs.iter().map(|r| r.round_trips as u64).sum(),
            echoes_checked: runs.iter().map(|r| r.echoes_checked).sum(),
            floor: None,
            ci95: Ci95::new(),
            runs: Vec::new(),
            hist: None,
        };
        let mut all = histogram(&[]);
        let mut per: [Vec<f64>; 10] = Default::default();
        for r in &runs {
            let h = histogram(&r.rtts_ns);
            let _ = all.add(&h);
            let max = r.rtts_ns.iter().max().map_or(0.0, |&x| x as f64 / 1e3);
            // A bucket's highest equivalent value may lie above the exact maximum.
            let q = |q: f64| {
                if r.rtts_ns.is_empty() {
                    0.0
                } else {
                    (h.value_at_quantile(q) as f64 / 1e3).min(max)
                }
            };
            let n = r.rtts_ns.len().max(1) as f64;
            let wall = r.seconds.max(1e-12);
            let server_wall = r.server_seconds.max(1e-12);
            let trips = r.round_trips.max(1) as f64;
            let (c, s) = (
                r.client_cpu.0 + r.client_cpu.1,
                r.server_cpu.0 + r.server_cpu.1,
            );
            let vals = [
                q(0.5),
                q(0.9),
                q(0.99),
                q(0.999),
                max,
                r.rtts_ns.iter().sum::<u64>() as f64 / n / 1e3,
                100.0 * c / wall,
                100.0 * s / server_wall,
                c * 1e6 / trips,
                s * 1e6 / trips,
            ];
            for (v, x) in per.iter_mut().zip(vals) {
                v.push(x);
            }
        }
        let ci = &mut row.ci95;
        summarize(ci, "p50_us", &mut row.p50_us, &per[0]);
        summarize(ci, "p90_us", &mut row.p90_us, &per[1]);
        summarize(ci, "p99_us", &mut row.p99_us, &per[2]);
        summarize(ci, "p999_us", &mut row.p999_us, &per[3]);
        summarize(ci, "max_us", &mut row.max_us, &per[4]);
        summarize(ci, "mean_us", &mut row.mean_us, &per[5]);
        summarize(ci, "client_cpu_pct", &mut row.client_cpu_pct, &per[6]);
        summarize(ci, "server_cpu_pct", &mut row.server_cpu_pct, &per[7]);
        let f = &mut row.client_cpu_us_per_rtt;
        summarize(ci, "client_cpu_us_per_rtt", f, &per[8]);
        let f = &mut row.server_cpu_us_per_rtt;
        summarize(ci, "server_cpu_us_per_rtt", f, &per[9]);
        row.floor = floor_ratios(&runs, &per, &mut row.ci95);
        row.hist = Some(all);
        row.runs = runs.into_iter().map(|r| r.rtts_ns).collect();
        row
    }
}

/// The ratios of runs' p50, p99 and p99.9 (`per[0]`, `per[2]`, `per[3]`) to the floors
/// measured around each, when every run has them; their intervals go into `ci`.
fn floor_ratios(runs: &[PingRun], per: &[Vec<f64>; 10], ci: &mut Ci95) -> Option<FloorRatios> {
    let pairs: Vec<FloorPair> = runs.iter().map(|r| r.floor).collect::<Option<_>>()?;
    if pairs.is_empty() {
        return None;
    }
    let mut f = FloorRatios::default();
    let ratio = |k: usize, q: usize| -> Vec<f64> {
        pairs
            .iter()
            .zip(&per[k])
            .map(|(p, v)| v / p.mean()[q])
            .collect()
    };
    summarize(ci, "floor_p50_ratio", &mut f.p50, &ratio(0, 0));
    summarize(ci, "floor_p99_ratio", &mut f.p99, &ratio(2, 1));
    summarize(ci, "floor_p999_ratio", &mut f.p999, &ratio(3, 2));
    let floors: Vec<f64> = pairs.iter().map(|p| p.mean()[0]).collect();
    summarize(ci, "floor_p50_us", &mut f.floor_p50_us, &floors);
    f.max_gap_pct = pairs.iter().map(FloorPair::gap_pct).fold(0.0, f64::max);
    f.repeats = pairs.iter().map(|p| p.repeats).sum();
    f.unsteady_runs = pairs.iter().filter(|p| p.gap_pct() > FLOOR_GAP_PCT).count();
    Some(f)
}

impl ThroughputRow {
    /// The row of a point from its runs of `size`-byte messages.
    pub fn from_runs(
        backend: BenchBackend,
        mode: WaitMode,
        path: &'static str,
        size: usize,
        runs: &[ThroughputRun],
    ) -> ThroughputRow {
        let mut row = ThroughputRow {
            backend,
            mode,
            path,
            size,
            messages: runs.first().map_or(0, |r| r.messages),
            reps: runs.len(),
            seconds: 0.0,
            mbit_s: 0.0,
            client_user_s: 0.0,
            client_sys_s: 0.0,
            server_user_s: 0.0,
            server_sys_s: 0.0,
            cpu_s_per_gb: 0.0,
            client_cpu_ns_per_byte: 0.0,
            server_cpu_ns_per_byte: 0.0,
            client_cpu_pct: 0.0,
            server_cpu_pct: 0.0,
            zc_sends: runs.iter().map(|r| r.zc.0).sum(),
            zc_copied: runs.iter().map(|r| r.zc.1).sum(),
            verified_messages: runs.iter().map(|r| r.verified).sum(),
            ci95: Ci95::new(),
        };
        let mut per: [Vec<f64>; 11] = Default::default();
        for r in runs {
            let bytes = (r.messages * size).max(1) as f64;
            let wall = r.seconds.max(1e-12);
            let (c, s) = (
                r.client_cpu.0 + r.client_cpu.1,
                r.server_cpu.0 + r.server_cpu.1,
            );
            let vals = [
                r.seconds,
                bytes * 8.0 / wall / 1e6,
                r.client_cpu.0,
                r.client_cpu.1,
                r.server_cpu.0,
                r.server_cpu.1,
                (c + s) / (bytes / 1e9),
                c * 1e9 / bytes,
                s * 1e9 / bytes,
                100.0 * c / wall,
                100.0 * s / wall,
            ];
            for (v, x) in per.iter_mut().zip(vals) {
                v.push(x);
            }
        }
        let ci = &mut row.ci95;
        summarize(ci, "seconds", &mut row.seconds, &per[0]);
        summarize(ci, "mbit_s", &mut row.mbit_s, &per[1]);
        summarize(ci, "client_user_s", &mut row.client_user_s, &per[2]);
        summarize(ci, "client_sys_s", &mut row.client_sys_s, &per[3]);
        summarize(ci, "server_user_s", &mut row.server_user_s, &per[4]);
        summarize(ci, "server_sys_s", &mut row.server_sys_s, &per[5]);
        summarize(ci, "cpu_s_per_gb", &mut row.cpu_s_per_gb, &per[6]);
        let f = &mut row.client_cpu_ns_per_byte;
        summarize(ci, "client_cpu_ns_per_byte", f, &per[7]);
        let f = &mut row.server_cpu_ns_per_byte;
        summarize(ci, "server_cpu_ns_per_byte", f, &per[8]);
        summarize(ci, "client_cpu_pct", &mut row.client_cpu_pct, &per[9]);
        summarize(ci, "server_cpu_pct", &mut row.server_cpu_pct, &per[10]);
        row
    }
}

impl CallRow {
    /// The row of a call from its mean cost in each run.
    pub fn from_runs(api: &'static str, call: &'static str, means_us: &[f64]) -> CallRow {
        let mut row = CallRow {
            api,
            call,
            mean_us: 0.0,
            cpu_usr_us: f64::NAN,
            cpu_sys_us: f64::NAN,
            reps: means_us.len(),
            ci95: Ci95::new(),
        };
        summarize(&mut row.ci95, "mean_us", &mut row.mean_us, means_us);
        row
    }

    /// The same row with the measuring thread's CPU per call in each run (user, system);
    /// left NaN when `usr` is empty.
    pub fn with_cpu(mut self, usr: &[f64], sys: &[f64]) -> CallRow {
        if !usr.is_empty() {
            summarize(&mut self.ci95, "cpu_usr_us", &mut self.cpu_usr_us, usr);
            summarize(&mut self.ci95, "cpu_sys_us", &mut self.cpu_sys_us, sys);
        }
        self
    }
}

impl Fit {
    /// The line through one backend and mode's points: `per_run[r]` holds run r's
    /// `(size, p50)` pairs, the line itself is fitted to the means over runs.
    pub fn from_runs(
        backend: BenchBackend,
        mode: WaitMode,
        sizes: &[usize],
        p50_means: &[f64],
        per_run: &[Vec<(f64, f64)>],
    ) -> Fit {
        let pts: Vec<(f64, f64)> = sizes
            .iter()
            .zip(p50_means)
            .map(|(&s, &y)| (s as f64, y))
            .collect();
        let (a, b) = fit_line(&pts);
        let (r2, res) = fit_quality(&pts, a, b);
        let residuals: Vec<Residual> = (sizes.iter().zip(&pts).zip(res))
            .map(|((&size, p), pct)| Residual {
                size,
                p50_us: p.1,
                fit_us: a + b * p.0,
                pct,
            })
            .collect();
        let max_residual_pct = residuals.iter().map(|r| r.pct.abs()).fold(0.0, f64::max);
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        for run in per_run {
            let (ra, rb) = fit_line(run);
            fa.push(ra);
            fb.push(rb);
        }
        let mut ci95 = Ci95::new();
        ci95.insert("fixed_us", mean_ci(&fa).1);
        ci95.insert("us_per_byte", mean_ci(&fb).1);
        Fit {
            backend,
            mode,
            fixed_us: a,
            us_per_byte: b,
            r2,
            max_residual_pct,
            residuals,
            ci95,
        }
    }
}

/// The nearest-rank `q` quantile of `sorted` nanoseconds, in microseconds (0 if empty).
pub fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1e3
}

fn weight(y: f64) -> f64 {
    if y > 0.0 {
        1.0 / (y * y)
    } else {
        0.0
    }
}

/// Least-squares line y = a + b·x (000 §IV.C.2's round-trip equation), weighted by 1/y²
/// so that every size counts by its relative error: with sizes in powers of two an
/// unweighted fit is set by the largest messages alone and can give a negative fixed cost.
/// Returns `(a, b)`.
pub fn fit_line(pts: &[(f64, f64)]) -> (f64, f64) {
    let w = weight;
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

/// Goodness of the line `a + b·x` through `pts`, with the weights [`fit_line`] uses: R² =
/// 1 - Σw·(y - ŷ)² / Σw·(y - ȳ_w)² (1 is a perfect fit; with weights 1/y² it measures
/// relative error, so the smallest sizes count as much as the largest), and each point's
/// residual (y - ŷ)/ŷ in percent. R² is NaN (JSON null) for fewer than three points: a line
/// fits any two, so there is nothing to judge.
pub fn fit_quality(pts: &[(f64, f64)], a: f64, b: f64) -> (f64, Vec<f64>) {
    let res = pts
        .iter()
        .map(|&(x, y)| {
            let f = a + b * x;
            if f != 0.0 {
                100.0 * (y - f) / f
            } else {
                0.0
            }
        })
        .collect();
    let sw: f64 = pts.iter().map(|p| weight(p.1)).sum();
    if pts.len() < 3 || sw <= 0.0 {
        return (f64::NAN, res);
    }
    let my = pts.iter().map(|p| weight(p.1) * p.1).sum::<f64>() / sw;
    let ss_res: f64 = pts
        .iter()
        .map(|&(x, y)| weight(y) * (y - a - b * x).powi(2))
        .sum();
    let ss_tot: f64 = pts.iter().map(|&(_, y)| weight(y) * (y - my).powi(2)).sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    (r2, res)
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
        let (r2, res) = fit_quality(&pts, a, b);
        assert!((r2 - 1.0).abs() < 1e-9, "r2 {r2}");
        assert!(res.iter().all(|r| r.abs() < 1e-6), "{res:?}");
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

    /// A step in the small sizes (7 µs, then 65 µs from 256 B on: the blocking-RTT flip of
    /// issue 20) is not a line: R² drops well below 1 and the residuals show where.
    #[test]
    fn fit_quality_flags_a_step_that_no_line_fits() {
        let pts: Vec<(f64, f64)> = (0..12)
            .map(|k| {
                let x = f64::from(1u32 << k);
                (x, if k < 8 { 7.0 } else { 65.0 })
            })
            .collect();
        let (a, b) = fit_line(&pts);
        let (r2, res) = fit_quality(&pts, a, b);
        assert!(r2 < 0.8, "r2 {r2}");
        let worst = res.iter().map(|r| r.abs()).fold(0.0, f64::max);
        assert!(worst > 50.0, "residuals {res:?}");
        // The same sizes on a line: R² near 1.
        let line: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, 7.0 + 0.01 * p.0)).collect();
        let (a, b) = fit_line(&line);
        assert!(fit_quality(&line, a, b).0 > 0.999);
    }

    /// Issue 34: a polling point is compared with the floors measured around each run, at
    /// p50, p99 and p99.9; floors more than 20% apart flag the run (placement changed).
    #[test]
    fn floor_ratios_use_the_floors_around_each_run_and_flag_a_moved_placement() {
        // Every round trip 2 µs except the slowest 1% at 10 µs; floors 1 µs (p50), 2 (p99),
        // 4 (p99.9) around run 1, 1 and 1.1 µs around run 2 (10% apart: steady), 1 and 2
        // around run 3 (100% apart: moved).
        let rtts: Vec<u64> = (0..1000)
            .map(|i| if i < 990 { 2_000 } else { 10_000 })
            .collect();
        let run = |before: [f64; 3], after: [f64; 3]| PingRun {
            rtts_ns: rtts.clone(),
            seconds: 1.0,
            round_trips: 1000,
            cpus: (0, 1),
            floor: Some(FloorPair {
                before,
                after,
                repeats: 2,
            }),
            ..PingRun::default()
        };
        let runs = vec![
            run([1.0, 2.0, 4.0], [1.0, 2.0, 4.0]),
            run([1.0, 2.0, 4.0], [1.1, 2.0, 4.0]),
            run([1.0, 2.0, 4.0], [2.0, 2.0, 4.0]),
        ];
        assert!((runs[1].floor.unwrap().gap_pct() - 10.0).abs() < 1e-9);
        let r = PingRow::from_runs(
            BenchBackend::Shm,
            WaitMode::Poll,
            "loopback",
            64,
            1000,
            runs,
        );
        let f = r.floor.clone().unwrap();
        // p50 2 µs over floors of 1, 1.05 and 1.5 µs.
        let want = (2.0 / 1.0 + 2.0 / 1.05 + 2.0 / 1.5) / 3.0;
        assert!((f.p50 - want).abs() < 0.01, "{f:?}");
        // p99 of 990 x 2 µs and 10 x 10 µs is 2 µs; p99.9 is 10 µs.
        assert!(
            (f.p99 - 1.0).abs() < 0.01 && (f.p999 - 2.5).abs() < 0.02,
            "{f:?}"
        );
        assert_eq!((f.unsteady_runs, f.repeats), (1, 6));
        assert!((f.max_gap_pct - 100.0).abs() < 1e-9);
        assert!(r.ci95["floor_p50_ratio"].is_finite());
        // Without floors around every run, no ratios.
        let plain = PingRun {
            rtts_ns: rtts.clone(),
            ..PingRun::default()
        };
        let r = PingRow::from_runs(
            BenchBackend::Shm,
            WaitMode::Poll,
            "loopback",
            64,
            1000,
            vec![plain],
        );
        assert!(r.floor.is_none());
    }

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<u64> = (1..=1000).map(|x| x * 1000).collect();
        assert_eq!(percentile(&v, 0.5), 500.0);
        assert_eq!(percentile(&v, 0.999), 999.0);
        assert_eq!(percentile(&v, 1.0), 1000.0);
    }

    /// HDR percentiles agree with the exact nearest-rank ones within the histogram's
    /// precision (3 significant digits), and max and mean are exact.
    #[test]
    fn row_percentiles_match_exact_ones_within_hdr_precision() {
        // A skewed set: 1..=10_000 µs-scale values, in ns, shuffled by a stride.
        let mut v: Vec<u64> = (1..=10_000u64).map(|i| 1_000 + i * i / 7).collect();
        let n = v.len();
        let shuffled: Vec<u64> = (0..n).map(|i| v[(i * 7919) % n]).collect();
        v.sort_unstable();
        let run = PingRun {
            rtts_ns: shuffled,
            seconds: 1.0,
            round_trips: n,
            client_cpu: (0.25, 0.25),
            server_cpu: (1.0, 0.0),
            server_seconds: 2.0,
            cpus: (0, 1),
            echoes_checked: 0,
            floor: None,
        };
        let r = PingRow::from_runs(
            BenchBackend::Tcp,
            WaitMode::Block,
            "loopback",
            8,
            n,
            vec![run],
        );
        for (got, q) in [
            (r.p50_us, 0.5),
            (r.p90_us, 0.9),
            (r.p99_us, 0.99),
            (r.p999_us, 0.999),
        ] {
            let exact = percentile(&v, q);
            assert!(
                (got - exact).abs() <= exact * 1e-3,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(r.max_us, *v.last().unwrap() as f64 / 1e3);
        let mean = v.iter().sum::<u64>() as f64 / n as f64 / 1e3;
        assert!((r.mean_us - mean).abs() < 1e-9);
        // CPU: 0.5 s of 1 s is 50%; per round trip 0.5 s / n.
        assert!((r.client_cpu_pct - 50.0).abs() < 1e-9);
        // The server's share is over its own wall time: 1 s of 2 s.
        assert!((r.server_cpu_pct - 50.0).abs() < 1e-9);
        assert!((r.client_cpu_us_per_rtt - 0.5e6 / n as f64).abs() < 1e-9);
        // One run: no interval.
        assert!(r.ci95["p50_us"].is_infinite());
    }

    /// With few round trips the top percentiles are the slowest one, whose histogram bucket
    /// reaches above it: the percentiles stay at or below the exact maximum.
    #[test]
    fn top_percentiles_never_exceed_the_maximum() {
        let mut rtts: Vec<u64> = (0..49).map(|i| 10_000 + i).collect();
        rtts.push(123_457);
        assert!(
            histogram(&rtts).value_at_quantile(0.999) > 123_457,
            "bucket above max"
        );
        let run = PingRun {
            rtts_ns: rtts,
            seconds: 1.0,
            round_trips: 50,
            ..PingRun::default()
        };
        let r = PingRow::from_runs(
            BenchBackend::Shm,
            WaitMode::Poll,
            "loopback",
            1,
            50,
            vec![run],
        );
        assert_eq!(r.max_us, 123.457);
        assert!(r.p99_us <= r.max_us && r.p999_us <= r.max_us, "{r:?}");
    }

    /// Several runs: each figure is the mean of the runs' figures, with the Student-t half-
    /// width (t(0.975, 2) = 4.303 for three runs), worked out here by hand.
    #[test]
    fn runs_give_means_and_student_t_intervals() {
        let runs: Vec<ThroughputRun> = [1.0, 2.0, 4.0]
            .iter()
            .map(|&s| ThroughputRun {
                messages: 1000,
                seconds: s,
                client_cpu: (s / 2.0, 0.0),
                server_cpu: (0.0, s / 4.0),
                zc: (0, 0),
                verified: 1000,
            })
            .collect();
        let r =
            ThroughputRow::from_runs(BenchBackend::Tcp, WaitMode::Block, "loopback", 1000, &runs);
        // 1e6 bytes: 8, 4 and 2 Mbit/s.
        assert!((r.mbit_s - 14.0 / 3.0).abs() < 1e-9, "{}", r.mbit_s);
        let mean = 14.0 / 3.0;
        let sd = (((8.0 - mean) * (8.0f64 - mean)
            + (4.0 - mean) * (4.0 - mean)
            + (2.0 - mean) * (2.0 - mean))
            / 2.0)
            .sqrt();
        let half = 4.302_652_729_9 * sd / 3f64.sqrt();
        assert!((r.ci95["mbit_s"] - half).abs() < 1e-6, "{:?}", r.ci95);
        // CPU shares do not vary: 50% and 25% in every run, a zero-width interval.
        assert!((r.client_cpu_pct - 50.0).abs() < 1e-9 && r.ci95["client_cpu_pct"] == 0.0);
        assert!((r.server_cpu_pct - 25.0).abs() < 1e-9);
        assert_eq!((r.reps, r.verified_messages), (3, 3000));
    }
}
