//! The rows of a benchmark report and the statistics behind them.
//!
//! Contract: times are microseconds; percentiles are nearest-rank over the sorted round
//! trips; [`fit_line`] is 000 §IV.C.2's round-trip equation fitted by relative error. Every
//! row serializes to the JSON `mslink bench --json` prints.

use serde::Serialize;

use super::BenchBackend;
use crate::WaitMode;

/// One ping-pong point: round-trip percentiles of `iters` round trips.
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
    /// Round trips measured.
    pub iters: usize,
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
}

/// One throughput point, with the CPU each process spent.
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
    /// Messages sent.
    pub messages: usize,
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
    /// io_uring SEND_ZC sends during this point (client side) and how many the kernel copied.
    pub zc_sends: u64,
    /// Of `zc_sends`, those with IORING_NOTIF_USAGE_ZC_COPIED set.
    pub zc_copied: u64,
}

/// The mean cost of one call (000 Tables 1 and 2).
#[derive(Serialize, Debug, Clone)]
pub struct CallRow {
    /// "socket" or "vi".
    pub api: &'static str,
    /// The call.
    pub call: &'static str,
    /// Mean wall time per call.
    pub mean_us: f64,
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
}

/// Everything a client run measured.
#[derive(Serialize, Debug, Default)]
pub struct Report {
    /// Ping-pong points.
    pub pingpong: Vec<PingRow>,
    /// A fitted line per backend and mode.
    pub rtt_fit: Vec<Fit>,
    /// Throughput points.
    pub throughput: Vec<ThroughputRow>,
    /// Per-call costs.
    pub callcost: Vec<CallRow>,
    /// Socket send+recv pair over VI post send + send wait + post recv + recv wait.
    pub socket_over_vi_ratio: f64,
}

impl PingRow {
    /// The row of a loopback ping-pong from its round trips (ns, any order).
    pub fn from_rtts(
        backend: BenchBackend,
        mode: WaitMode,
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

/// The nearest-rank `q` quantile of `sorted` nanoseconds, in microseconds (0 if empty).
pub fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1e3
}

/// Least-squares line y = a + b·x (000 §IV.C.2's round-trip equation), weighted by 1/y²
/// so that every size counts by its relative error: with sizes in powers of two an
/// unweighted fit is set by the largest messages alone and can give a negative fixed cost.
/// Returns `(a, b)`.
pub fn fit_line(pts: &[(f64, f64)]) -> (f64, f64) {
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
