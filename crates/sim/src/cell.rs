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
//!
//! Error control (optional, `[cell.error_control]`). 003 §7: "Once a time slot is allocated to a
//! given flow, the FLEX adaptive error control policy decides which error control techniques
//! to use and the simulator applies the next event in the trace stream to determine success or
//! failure." With it, each station keeps one policy state of the Reed-Solomon service (003 §4's
//! BOLD, LIGHT, ROBUST or FLEX, `mslink_link::service::rs_fec::policy`; its flows share its
//! channel). A slot carries one frame shaped as that service's: the 12-byte header codeword and
//! `blocks` full 255-byte blocks of `nsym` parity each, holding
//! `capacity(blocks, nsym)` payload bytes; the slot lasts that frame's air time (so coding
//! and shrinking cost air time, as in 003 §5) and the channel's outcome for that length decides
//! the frame ([`decode`]): a block with more corrupted bytes than `t = nsym / 2` fails (RS
//! corrects up to `t` symbol errors; we count a miscorrection beyond `t`, which the frame CRC
//! would catch, as a failure), a corrupted header beyond its own `t = 3` fails, a truncated
//! frame is truncated. The outcome goes back to the policy as the service's report would (the
//! poll/response MAC acknowledges every frame), and to the scheduler as the share of the slot
//! that delivered payload (`Scheduler::report_share`: for ELF, 003 §6.2's `1 - E_i`, so the
//! air time coding costs counts as capacity loss, as a lost frame does); throughput counts
//! delivered payload bytes. Without error control a slot is one
//! `frame_bytes` frame and any damage loses it.

use mslink_channel::config::TraceLoader;
use mslink_channel::Outcome;
use mslink_channel::{ErrorModel, ErrorModelConfig};
use mslink_link::sched::SchedulerConfig;
use mslink_link::service::rs_fec::frame::{self, BLOCK_LEN, HEADER_LEN, HEADER_NSYM, LOAD_MAX};
use mslink_link::service::rs_fec::{FlexConfig, Policy, PolicyState};
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
    /// Link-level error control of every station's frames (none: a damaged frame is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_control: Option<CellErrorControl>,
}

/// `[cell.error_control]`: the Reed-Solomon service's policy in the cell's frames (003 §4, §7).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellErrorControl {
    /// `bold`, `light`, `robust` or `flex` (003 §4).
    pub policy: Policy,
    /// FLEX's tuning (docs/engine.md).
    #[serde(default)]
    pub flex: FlexConfig,
}

/// What a frame of `blocks` blocks at `nsym` parity made of the channel's `outcome`: the
/// service's report outcome and its `load` (worst block's corrected bytes as a fraction of
/// `t`, scaled to 0..=31), or None when it was lost. Bytes are RS symbols; the header codeword
/// comes first (`HEADER_LEN` bytes, `t = HEADER_NSYM / 2`), then the blocks.
pub fn decode(outcome: &Outcome, blocks: u8, nsym: u8) -> Option<(frame::Outcome, u8)> {
    let len = HEADER_LEN + usize::from(blocks) * BLOCK_LEN;
    match outcome.clipped_to(len) {
        Outcome::Lost => None,
        Outcome::Delivered => Some((frame::Outcome::Clean, 0)),
        Outcome::Truncated { .. } => Some((frame::Outcome::Truncated, 0)),
        Outcome::Corrupted { bits } => {
            // Distinct corrupted bytes per codeword: index 0 is the header, 1.. the blocks.
            let mut bad = vec![0u32; usize::from(blocks) + 1];
            let mut last = None;
            for b in bits {
                let byte = b as usize / 8;
                if last == Some(byte) {
                    continue;
                }
                last = Some(byte);
                let word = if byte < HEADER_LEN {
                    0
                } else {
                    1 + (byte - HEADER_LEN) / BLOCK_LEN
                };
                bad[word] += 1;
            }
            let t = u32::from(nsym / 2);
            if bad[0] as usize > HEADER_NSYM / 2 || bad[1..].iter().any(|&n| n > t) {
                return Some((frame::Outcome::Failed, 0));
            }
            let worst = bad[1..].iter().copied().max().unwrap_or(0);
            if worst == 0 {
                // Only the header was hit, and its code repaired it.
                return Some((frame::Outcome::Clean, 0));
            }
            let load = (u32::from(LOAD_MAX) * worst).div_ceil(t) as u8;
            Some((frame::Outcome::Corrected, load))
        }
    }
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
    let (mut models, mut rngs) = station_channels(cell, seed, traces)?;
    let rate = cell.rate_bps.round() as u64;
    let mut policies: Vec<PolicyState> = match &cell.error_control {
        Some(ec) => cell
            .stations
            .iter()
            .map(|_| PolicyState::new(ec.policy, ec.flex.clone()))
            .collect(),
        None => Vec::new(),
    };
    // The next frame of station `st`: (blocks, nsym, air bytes, payload bytes).
    let shape = |policies: &[PolicyState], st: usize| -> (u8, u8, usize, usize) {
        match policies.get(st) {
            Some(p) => {
                let (b, k) = (p.blocks(), p.nsym());
                let air = HEADER_LEN + usize::from(b) * BLOCK_LEN;
                (b, k, air, frame::capacity(usize::from(b), usize::from(k)))
            }
            None => (0, 0, cell.frame_bytes, cell.frame_bytes),
        }
    };
    let mut t = Instant::ZERO;
    for q in 0..n {
        let air = shape(&policies, cell.flows[q].station).2;
        sched.enqueue(t, q, air as u32);
    }
    let (mut sent, mut ok, mut bytes) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    // Moving windows: whole slots of a `frame_bytes` frame without error control (as before),
    // the window itself with it (frames differ in length).
    let win_len = window_len(cell, window, rate, !policies.is_empty());
    let mut next_win = Instant::ZERO + win_len;
    let mut win = vec![0u64; n + 1];
    let mut timeseries = Vec::new();
    let end = Instant::ZERO + duration;
    let mut slots = 0u64;
    while t < end {
        let q = sched.dequeue(t).expect("every queue is always backlogged");
        let st = cell.flows[q].station;
        let (blocks, nsym, air, payload) = shape(&policies, st);
        let outcome = models[st].outcome(t, air, &mut rngs[st]);
        let delivered = match policies.get_mut(st) {
            None => {
                let d = !outcome.is_damaged();
                sched.report(t, q, d);
                d
            }
            // 003 §7: the policy learns each frame's fate (the MAC acknowledges every frame).
            Some(p) => {
                let d = match decode(&outcome, blocks, nsym) {
                    None => {
                        p.on_loss();
                        false
                    }
                    Some((o, load)) => {
                        p.on_report(o, load, nsym);
                        o.received()
                    }
                };
                // The scheduler learns what share of the slot delivered payload, so the air
                // time coding and headers cost counts as capacity loss (003 §5-6).
                let share = if d { payload as f64 / air as f64 } else { 0.0 };
                sched.report_share(t, q, share);
                d
            }
        };
        sent[q] += 1;
        if delivered {
            ok[q] += 1;
            bytes[q] += payload as u64;
            win[q] += payload as u64;
            win[n] += payload as u64;
        }
        let next_air = shape(&policies, st).2;
        sched.enqueue(t, q, next_air as u32);
        t += Duration::transmission(air as u64, rate);
        slots += 1;
        if win_len > Duration::ZERO && t >= next_win {
            close_window(cell, &mut win, t, win_len, &mut timeseries);
            next_win += win_len;
        }
    }
    let flows = flow_results(cell, &sent, &ok, &bytes, t.as_secs_f64());
    Ok(CellRun {
        flows,
        timeseries,
        slots,
    })
}

/// Each station's error model and the stream it draws from.
#[allow(clippy::type_complexity)]
fn station_channels(
    cell: &CellConfig,
    seed: u64,
    traces: &mut dyn TraceLoader,
) -> Result<(Vec<Box<dyn ErrorModel>>, Vec<ChaCha8Rng>), ScenarioError> {
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
    Ok((models, rngs))
}

/// The moving window: whole slots of a `frame_bytes` frame without error control, the window
/// itself with it (frames differ in length); zero for none.
fn window_len(cell: &CellConfig, window: Duration, rate: u64, error_control: bool) -> Duration {
    let fixed_slot = Duration::transmission(cell.frame_bytes as u64, rate);
    if window == Duration::ZERO {
        Duration::ZERO
    } else if !error_control {
        Duration::from_nanos(
            (window.as_nanos() / fixed_slot.as_nanos().max(1)).max(1) * fixed_slot.as_nanos(),
        )
    } else {
        window
    }
}

/// Ends a window at `t`: one throughput point per flow and the `Link` pseudo-flow (003 §7),
/// and the window's byte counts back to zero.
fn close_window(
    cell: &CellConfig,
    win: &mut [u64],
    t: Instant,
    win_len: Duration,
    timeseries: &mut Vec<TimePoint>,
) {
    let n = cell.flows.len();
    let secs = win_len.as_secs_f64();
    for (i, w) in win.iter_mut().enumerate() {
        let name = if i < n {
            cell.flows[i].name.clone()
        } else {
            "Link".to_string()
        };
        let bps = *w as f64 * 8.0 / secs;
        timeseries.push(TimePoint {
            time_s: t.as_secs_f64(),
            flow: name,
            throughput_bps: bps,
        });
        *w = 0;
    }
}

/// Each flow's results after `secs` seconds: frames sent and delivered, payload bytes.
fn flow_results(
    cell: &CellConfig,
    sent: &[u64],
    ok: &[u64],
    bytes: &[u64],
    secs: f64,
) -> Vec<FlowResult> {
    (0..cell.flows.len())
        .map(|q| FlowResult {
            flow: cell.flows[q].name.clone(),
            app: "backlogged".into(),
            service: cell.scheduler.policy().into(),
            sent: sent[q],
            received: ok[q],
            duplicates: 0,
            bytes: bytes[q],
            duration_s: secs,
            throughput_bps: (bytes[q] * 8) as f64 / secs,
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
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_link::service::rs_fec::frame::Outcome as Fo;

    /// Bit positions that hit `per_block[j]` distinct bytes of block `j` (and `header` of the
    /// header codeword), one bit in each.
    fn hits(header: usize, per_block: &[usize]) -> Outcome {
        let mut bits: Vec<u32> = (0..header).map(|i| (i * 8) as u32).collect();
        for (j, &k) in per_block.iter().enumerate() {
            let start = HEADER_LEN + j * BLOCK_LEN;
            bits.extend((0..k).map(|i| ((start + 2 * i) * 8 + 3) as u32));
        }
        Outcome::Corrupted { bits }
    }

    #[test]
    fn a_block_is_repaired_up_to_t_corrupted_bytes() {
        // 20 parity bytes: t = 10 (003 §4's RS(255, k) blocks).
        assert_eq!(decode(&Outcome::Delivered, 3, 20), Some((Fo::Clean, 0)));
        assert_eq!(decode(&Outcome::Lost, 3, 20), None);
        assert_eq!(
            decode(&hits(0, &[10, 0, 3]), 3, 20),
            Some((Fo::Corrected, LOAD_MAX))
        );
        assert_eq!(
            decode(&hits(0, &[5, 0, 3]), 3, 20),
            Some((Fo::Corrected, 16))
        );
        assert_eq!(decode(&hits(0, &[0, 11, 0]), 3, 20), Some((Fo::Failed, 0)));
        // Uncoded: any corrupted byte fails the frame.
        assert_eq!(decode(&hits(0, &[1]), 1, 0), Some((Fo::Failed, 0)));
        // Several bits of one byte are one symbol error.
        let one_byte = Outcome::Corrupted {
            bits: (0..8).map(|b| (HEADER_LEN * 8 + b) as u32).collect(),
        };
        assert_eq!(decode(&one_byte, 1, 4), Some((Fo::Corrected, 16)));
        // The header codeword repairs 3 bytes, not 4.
        assert_eq!(decode(&hits(3, &[0]), 1, 0), Some((Fo::Clean, 0)));
        assert_eq!(decode(&hits(4, &[0]), 1, 0), Some((Fo::Failed, 0)));
        // Damage past a shorter frame's end does not touch it; a cut inside it truncates it.
        assert_eq!(decode(&hits(0, &[0, 0, 40]), 2, 0), Some((Fo::Clean, 0)));
        assert_eq!(
            decode(&Outcome::Truncated { at: 300 }, 2, 0),
            Some((Fo::Truncated, 0))
        );
        assert_eq!(
            decode(&Outcome::Truncated { at: 600 }, 2, 0),
            Some((Fo::Clean, 0))
        );
    }

    fn cell(policy: Option<Policy>, error: &str) -> CellConfig {
        let mut c: CellConfig = toml::from_str(&format!(
            "rate_bps = 800000\n\
             [scheduler]\npolicy = \"elf\"\nlink_rate_bps = 800000\n\
             flows = [{{ weight = 1.0, power_factor = 1.2 }}, {{ weight = 1.0, power_factor = 1.2 }}]\n\
             [[station]]\nname = \"s\"\nerror = {error}\n\
             [[flow]]\nname = \"a\"\nstation = 0\n[[flow]]\nname = \"b\"\nstation = 0\n"
        ))
        .unwrap();
        c.error_control = policy.map(|policy| CellErrorControl {
            policy,
            flex: FlexConfig::default(),
        });
        c
    }

    fn run(c: &CellConfig) -> CellRun {
        c.validate().unwrap();
        let mut no_traces = |_: &str| -> std::io::Result<String> { unreachable!() };
        run_cell(
            c,
            Duration::from_secs(20),
            Duration::from_secs(1),
            7,
            &mut mslink_channel::config::TextLoader(&mut no_traces),
        )
        .unwrap()
    }

    fn total_bps(r: &CellRun) -> f64 {
        r.flows.iter().map(|f| f.throughput_bps).sum()
    }

    #[test]
    fn flex_on_a_clean_channel_sheds_its_coding() {
        // FLEX starts as LIGHT (5 blocks, 12 parity bytes) and relaxes to uncoded 5-block
        // frames: 1271 payload bytes in 1287 bytes of air, 98.8% of the link.
        let r = run(&cell(Some(Policy::Flex), "{ model = \"perfect\" }"));
        let eff = frame::capacity(5, 0) as f64 / (HEADER_LEN + 5 * BLOCK_LEN) as f64;
        assert!(
            (total_bps(&r) / 800_000.0 - eff).abs() < 0.002,
            "{}",
            total_bps(&r)
        );
        assert!(r.timeseries.iter().any(|p| p.flow == "Link"));
    }

    #[test]
    fn flex_recovers_corrupted_frames_that_an_uncoded_cell_loses() {
        // Every frame has bit errors (a few bytes per 1000): the uncoded cell delivers nothing,
        // FLEX finds a parity level that repairs them.
        let err = "{ model = \"exponential\", mean_bytes = 300, effect = \"corrupt\" }";
        let plain = run(&cell(None, err));
        let bold = run(&cell(Some(Policy::Bold), err));
        let flex = run(&cell(Some(Policy::Flex), err));
        assert!(total_bps(&plain) < 0.1 * 800_000.0, "{}", total_bps(&plain));
        assert!(total_bps(&bold) < 0.1 * 800_000.0, "{}", total_bps(&bold));
        assert!(total_bps(&flex) > 0.6 * 800_000.0, "{}", total_bps(&flex));
        // The two best-effort flows of one station share equally.
        let (a, b) = (flex.flows[0].throughput_bps, flex.flows[1].throughput_bps);
        assert!((a / b - 1.0).abs() < 0.02, "{a} {b}");
    }
}
