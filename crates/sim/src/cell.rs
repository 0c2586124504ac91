//! A centralized poll/response wireless cell (003 §5-7): the cell's scheduler decides which
//! station's flow sends in each slot and learns each transmission's outcome.
//!
//! Contract. The cell has an error-free rate and a frame size; one frame takes one slot. Each
//! flow belongs to a station, and each station has its own error model and random stream, so
//! errors are location dependent (003 §5.2). Flows are continuously backlogged, as in 003 §7's
//! scheduler simulation: every slot, the scheduler (any engine policy: ELF, WRR, SCFQ, ...)
//! picks a flow, the frame meets the flow's station's channel, and the outcome goes back to the
//! scheduler (a poll/response MAC acknowledges each frame). Throughput counts delivered frames
//! only. [`run_cell`] is deterministic for a seed and does no I/O.

use mslink_channel::config::TraceLoader;
use mslink_channel::{ErrorModel, ErrorModelConfig};
use mslink_link::sched::SchedulerConfig;
use mslink_link::{Duration, Instant};
use rand_chacha::ChaCha8Rng;

use crate::scenario::{ScenarioError, TRACE_STAND_IN};
use crate::world::{stream, FlowResult, TimePoint};

/// The cell as configured.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    /// Error-free rate, bit/s (003 §5: 800 kbit/s).
    pub rate_bps: f64,
    /// Frame size, bytes (one frame per slot).
    #[serde(default = "default_frame")]
    pub frame_bytes: usize,
    /// The cell's scheduler; it gets one queue per flow, in flow order.
    pub scheduler: SchedulerConfig,
    /// Stations and their channels.
    #[serde(rename = "station")]
    pub stations: Vec<Station>,
    /// Flows, each at a station.
    #[serde(rename = "flow")]
    pub flows: Vec<CellFlow>,
}

fn default_frame() -> usize {
    1000
}

/// One station of the cell.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Station {
    /// Name (and the seed stream of its channel).
    pub name: String,
    /// Its channel's error model.
    #[serde(default)]
    pub error: ErrorModelConfig,
}

/// One flow of the cell.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellFlow {
    /// Name in results.
    pub name: String,
    /// Index of its station.
    pub station: usize,
}

impl CellConfig {
    /// Checks the cell.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |key: String, what: String| ScenarioError::Invalid { key, what };
        if !(self.rate_bps > 0.0 && self.rate_bps.is_finite()) {
            return Err(bad(
                "cell.rate_bps".into(),
                format!("must be a positive rate, got {}", self.rate_bps),
            ));
        }
        if self.frame_bytes == 0 {
            return Err(bad("cell.frame_bytes".into(), "must be at least 1".into()));
        }
        if self.flows.is_empty() {
            return Err(bad(
                "cell.flow".into(),
                "a cell needs at least one [[cell.flow]]".into(),
            ));
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.station >= self.stations.len() {
                return Err(bad(
                    format!("cell.flow[{i}].station"),
                    format!(
                        "{} is not a station index (0..{})",
                        f.station,
                        self.stations.len()
                    ),
                ));
            }
        }
        for (i, s) in self.stations.iter().enumerate() {
            s.error
                .build(&mut |_| Ok(TRACE_STAND_IN.into()))
                .map_err(|e| bad(format!("cell.station[{i}].error"), e.to_string()))?;
        }
        self.scheduler
            .build(self.flows.len())
            .map_err(|e| bad("cell.scheduler".into(), e.to_string()))?;
        Ok(())
    }
}

/// Flow results, the moving-window series and the slot count of one cell run.
pub struct CellRun {
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Moving-window throughput per flow (and the whole `Link` pseudo-flow, 003 §7).
    pub timeseries: Vec<TimePoint>,
    /// Slots simulated.
    pub slots: u64,
}

/// Runs the cell for `duration`, seed `seed`; `window` is the moving-average window (zero for
/// none).
pub fn run_cell(
    cell: &CellConfig,
    duration: Duration,
    window: Duration,
    seed: u64,
    traces: &mut dyn TraceLoader,
) -> Result<CellRun, ScenarioError> {
    let n = cell.flows.len();
    let mut sched = cell
        .scheduler
        .build(n)
        .map_err(|e| ScenarioError::Invalid {
            key: "cell.scheduler".into(),
            what: e.to_string(),
        })?;
    let mut models: Vec<Box<dyn ErrorModel>> = Vec::new();
    let mut rngs: Vec<ChaCha8Rng> = Vec::new();
    for (i, s) in cell.stations.iter().enumerate() {
        models.push(
            s.error
                .build_with(traces)
                .map_err(|e| ScenarioError::Invalid {
                    key: format!("cell.station[{i}].error"),
                    what: e.to_string(),
                })?,
        );
        rngs.push(stream(seed, &format!("cell.station.{i}.{}", s.name)));
    }
    let frame = cell.frame_bytes as u32;
    let slot = Duration::transmission(cell.frame_bytes as u64, cell.rate_bps.round() as u64);
    let mut t = Instant::ZERO;
    for q in 0..n {
        sched.enqueue(t, q, frame);
    }
    let (mut sent, mut ok) = (vec![0u64; n], vec![0u64; n]);
    let win_slots = if window > Duration::ZERO {
        (window.as_nanos() / slot.as_nanos().max(1)).max(1)
    } else {
        0
    };
    let mut win = vec![0u64; n + 1];
    let mut timeseries = Vec::new();
    let end = Instant::ZERO + duration;
    let mut slots = 0u64;
    while t < end {
        let q = sched.dequeue(t).expect("every queue is always backlogged");
        let st = cell.flows[q].station;
        let delivered = !models[st]
            .outcome(t, cell.frame_bytes, &mut rngs[st])
            .is_damaged();
        sched.report(t, q, delivered);
        sent[q] += 1;
        if delivered {
            ok[q] += 1;
            win[q] += 1;
            win[n] += 1;
        }
        sched.enqueue(t, q, frame);
        t += slot;
        slots += 1;
        if win_slots > 0 && slots % win_slots == 0 {
            let secs = (win_slots * slot.as_nanos()) as f64 * 1e-9;
            for (i, w) in win.iter_mut().enumerate() {
                let name = if i < n {
                    cell.flows[i].name.clone()
                } else {
                    "Link".to_string()
                };
                let bps = *w as f64 * cell.frame_bytes as f64 * 8.0 / secs;
                timeseries.push(TimePoint {
                    time_s: t.as_secs_f64(),
                    flow: name,
                    throughput_bps: bps,
                });
                *w = 0;
            }
        }
    }
    let secs = t.as_secs_f64();
    let flows = (0..n)
        .map(|q| FlowResult {
            flow: cell.flows[q].name.clone(),
            app: "backlogged".into(),
            service: cell.scheduler.policy().into(),
            sent: sent[q],
            received: ok[q],
            duplicates: 0,
            bytes: ok[q] * frame as u64,
            duration_s: secs,
            throughput_bps: (ok[q] * frame as u64 * 8) as f64 / secs,
            loss_rate: if sent[q] == 0 {
                0.0
            } else {
                1.0 - ok[q] as f64 / sent[q] as f64
            },
            delay_mean_s: 0.0,
            delay_std_s: 0.0,
            playback_miss_rate: 0.0,
            transport: "udp".into(),
            completed: true,
            ..FlowResult::default()
        })
        .collect();
    Ok(CellRun {
        flows,
        timeseries,
        slots,
    })
}
