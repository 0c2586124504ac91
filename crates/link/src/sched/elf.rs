//! Effort-limited fair (ELF) scheduling (003 §6): weighted fair queueing whose weights grow
//! with each flow's error rate, up to a limit set by the flow's power factor.
//!
//! Contract. Queue `i` is a flow with weight `W_i`, power factor `P_i >= 1` and error rate
//! `E_i`. Its adjusted weight is `A_i = min(W_i / (1 - E_i), P_i * W_i)` (003 §6.2 eq. (1)):
//! in the *outcome region* `E_i < E_c = (P_i - 1) / P_i` the extra air time exactly cancels
//! the losses; beyond it (the *effort region*) the flow keeps `P_i` times its air time and
//! bears its losses. A flow with a reservation `B_i` is *guaranteed* and weighs
//! `W_i = B_i / B` of the error-free link rate `B`; all best-effort flows share the aggregate
//! `A_BE = 1 - sum_{i in G} A_i` (003 §6.3), split among them by the §6.2 rule with their own
//! weights and power factors. Air time then goes in proportion to these weights:
//! [`allocate`] is the closed form, used by the scenario tools and the tests, and [`Elf`] is
//! the scheduler.
//!
//! The scheduler orders frames with SCFQ (the tagging of [`super::scfq`]; byte-based tags, so
//! air time is shared in proportion to weights on a link of constant rate), in two levels that
//! follow §6.3's construction: the top level holds the guaranteed flows, weighted `A_i`, and
//! one virtual best-effort flow weighted `A_BE`; the inner level orders the best-effort flows
//! by their own `A_j`. A change in `A_BE` then touches one heap entry instead of every
//! best-effort head. (The top level stamps the aggregate's head with the length of the frame
//! the inner level picks at that moment, and that frame is the one sent.)
//!
//! Error rates are estimated per queue from the outcomes the MAC reports (`report`), with an
//! EWMA or a sliding window ([`ErrorEstimator`]), or fixed per flow for analysis. When an
//! estimate changes, only that flow's weight and two running sums are updated (O(1)), and at
//! most two waiting heads are re-stamped (the flow's and, for a guaranteed flow, the
//! aggregate's; see [`super::scfq::RERATE_TOLERANCE`]), O(log n). Guards (ours): `E_i` is capped at
//! `1 - `[`E_EPSILON`] so `A_i` stays finite even with an infinite power factor, and the
//! best-effort aggregate never drops below [`BE_FLOOR`] in the scheduler, so best-effort flows
//! are still served when reservations overbook a lossy link (the closed form gives them 0).
//!
//! Lag compensation (003 §7, Fig. 12; off by default). Eq. (1) shares air time by the *current*
//! error rates, so service a flow lost in an error burst (in its effort region, or while the
//! estimate trailed the errors) is never made up. 003's Fig. 12 shows the scheduler making it
//! up afterwards: "the video flow receives throughput beyond its reservation so it can clear
//! its lag, but its power factor still limits its link time so that the FTP flows are not
//! starved. Likewise, the ill-fated FTP1 flow receives more throughput than FTP2 so it can
//! achieve long-term fairness". With `lag_compensation`, each flow's lag (service owed minus
//! delivered; owed is the reservation for a guaranteed flow and the weighted share of what the
//! best-effort flows deliver for a best-effort flow, see `elf_lag.rs`) is tracked, and a flow
//! more than one frame behind is scheduled with its full power `P_i * W_i` instead of eq. (1)
//! until it has caught up: its catch-up is bounded by the same power factor that bounds its
//! effort in errors, and the best-effort aggregate `A_BE = 1 - sum_G A_i` shrinks accordingly.
//! (A flow with an infinite power factor keeps eq. (1): it has no bound to catch up within.)
//! Lags are clamped to `[-lag_limit_bytes, lag_limit_bytes]` (ours), so neither an error burst
//! nor a period of extra service is remembered without bound. With constant error rates the
//! lags stay within a few frames and long-run shares are eq. (1)'s (003 Tables 2-3).

use super::error_estimate::{ErrorEstimator, Estimates};
use super::scfq::ScfqLevel;
use super::{check_count, check_positive, check_queues, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;
use lag::Lags;
use std::collections::VecDeque;

/// Largest error rate used in eq. (1) is `1 - E_EPSILON`: keeps `A_i` finite as `E_i -> 1`.
pub const E_EPSILON: f64 = 1e-6;
/// Smallest best-effort aggregate weight the scheduler uses (liveness guard, ours).
pub const BE_FLOOR: f64 = 1e-6;
/// Default power factor: 003 §6.5 and §7 give best-effort flows 110-120%; we take 120%.
pub const DEFAULT_POWER_FACTOR: f64 = 1.2;
/// Default bound on a flow's lag (ours; 003 gives none): 1 MB, ten seconds of an 800 kbit/s
/// cell such as 003 §7's.
pub const DEFAULT_LAG_LIMIT_BYTES: f64 = 1e6;
/// The running weight sums are recomputed from scratch after this many updates (bounds
/// floating-point drift).
const RESUM_EVERY: u32 = 4096;

/// Adjusted weight `A = min(W / (1 - E), P * W)`, 003 §6.2 eq. (1), with `E` clamped to
/// `[0, 1 - E_EPSILON]`.
pub fn adjusted_weight(weight: f64, power_factor: f64, error_rate: f64) -> f64 {
    let e = error_rate.clamp(0.0, 1.0 - E_EPSILON);
    (weight / (1.0 - e)).min(power_factor * weight)
}

/// Crossover error rate `E_c = (P - 1) / P` between the outcome and effort regions (003 §6.2).
pub fn crossover(power_factor: f64) -> f64 {
    (power_factor - 1.0) / power_factor
}

/// A flow as seen by the closed form [`allocate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElfFlow {
    /// Reserved throughput `B_i` in bit/s for a guaranteed flow; `None` for best effort.
    pub reserved_bps: Option<f64>,
    /// Weight `W_i` among best-effort flows (unused for guaranteed flows).
    pub weight: f64,
    /// Power factor `P_i` (>= 1; may be infinite).
    pub power_factor: f64,
    /// Error rate `E_i` in `[0, 1]`.
    pub error_rate: f64,
}

/// What [`allocate`] gives one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElfShare {
    /// The weight the flow is scheduled with: `A_i` of eq. (1) for a guaranteed flow; for a
    /// best-effort flow its slice `A_BE * A_j / sum_BE A_k` of the aggregate (003 §6.3).
    pub adjusted_weight: f64,
    /// Fraction of the link's air time the flow receives.
    pub air_share: f64,
    /// Delivered throughput `T_i = air_share * B * (1 - E_i)` in bit/s.
    pub throughput_bps: f64,
}

/// ELF's allocation of a link of error-free rate `link_rate_bps` (`B`) among always-backlogged
/// `flows` (003 §6.2-6.3): guaranteed flows weigh `W_i = B_i / B` and get `A_i` of eq. (1); the
/// best-effort aggregate gets `A_BE = max(0, 1 - sum_G A_i)` (all of the link when no flow is
/// guaranteed), split in proportion to each best-effort flow's own eq. (1) weight. Air time is
/// shared in proportion to the resulting weights, so `T_i = A_i / sum_j A_j * B * (1 - E_i)`.
pub fn allocate(link_rate_bps: f64, flows: &[ElfFlow]) -> Vec<ElfShare> {
    let own: Vec<f64> = flows
        .iter()
        .map(|f| {
            let w = match f.reserved_bps {
                Some(b) => b / link_rate_bps, // 003 §6.3: W_i = B_i / B
                None => f.weight,
            };
            adjusted_weight(w, f.power_factor, f.error_rate)
        })
        .collect();
    let guaranteed = |i: usize| flows[i].reserved_bps.is_some();
    let sum_g: f64 = (0..flows.len())
        .filter(|&i| guaranteed(i))
        .map(|i| own[i])
        .sum();
    let sum_be: f64 = (0..flows.len())
        .filter(|&i| !guaranteed(i))
        .map(|i| own[i])
        .sum();
    let any_g = flows.iter().any(|f| f.reserved_bps.is_some());
    // 003 §6.3: A_BE = 1 - sum_{i in G} A_i.
    let a_be = if any_g { (1.0 - sum_g).max(0.0) } else { 1.0 };
    let eff: Vec<f64> = (0..flows.len())
        .map(|i| {
            if guaranteed(i) {
                own[i]
            } else {
                a_be * own[i] / sum_be
            }
        })
        .collect();
    let total: f64 = eff.iter().sum();
    flows
        .iter()
        .zip(eff)
        .map(|(f, a)| {
            let air = if total > 0.0 { a / total } else { 0.0 };
            ElfShare {
                adjusted_weight: a,
                air_share: air,
                throughput_bps: air * link_rate_bps * (1.0 - f.error_rate.clamp(0.0, 1.0)),
            }
        })
        .collect()
}

/// One ELF flow (one queue) in a configuration.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ElfFlowConfig {
    /// Reserved throughput `B_i` in bit/s: makes the flow guaranteed (003 §6.3). Absent:
    /// best effort.
    pub reserved_bps: Option<f64>,
    /// Weight `W_i` among best-effort flows (positive; ignored for guaranteed flows).
    pub weight: f64,
    /// Power factor `P_i` (>= 1; `inf` allowed: pure outcome fairness, 003 §6.4).
    pub power_factor: f64,
    /// Fixed error rate `E_i` in `[0, 1]`, for analysis: outcome reports are then ignored.
    pub error_rate: Option<f64>,
}

impl Default for ElfFlowConfig {
    fn default() -> Self {
        ElfFlowConfig {
            reserved_bps: None,
            weight: 1.0,
            power_factor: DEFAULT_POWER_FACTOR,
            error_rate: None,
        }
    }
}

/// ELF settings.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ElfConfig {
    /// Error-free link rate `B` in bit/s; needed when a flow has a reservation.
    pub link_rate_bps: f64,
    /// One entry per queue; empty means every queue is a best-effort flow with the defaults.
    pub flows: Vec<ElfFlowConfig>,
    /// How error rates are estimated from outcome reports.
    pub estimator: ErrorEstimator,
    /// Lag compensation (003 §7, Fig. 12): a flow behind its owed service is scheduled with
    /// its full power `P_i * W_i` until it catches up. Off by default.
    pub lag_compensation: bool,
    /// Bound on each flow's lag (and lead), bytes (positive).
    pub lag_limit_bytes: f64,
}

impl ElfConfig {
    /// 003 §6.3's admission condition for the reservations, `sum_G W_i * P_i <= 1` with
    /// `W_i = B_i / B`: above it, the guaranteed flows together need more air time than the
    /// link has when every one of them is error-limited, so not every guarantee can hold.
    /// Returns `sum_G W_i * P_i` when it exceeds 1 (the configuration is still valid: the
    /// error-free condition `sum_G W_i <= 1` is what construction refuses).
    pub fn overcommitted(&self) -> Option<f64> {
        if self.link_rate_bps.is_nan() || self.link_rate_bps <= 0.0 {
            return None;
        }
        let worst: f64 = self
            .flows
            .iter()
            .filter_map(|f| {
                f.reserved_bps
                    .map(|b| b / self.link_rate_bps * f.power_factor)
            })
            .sum();
        (worst > 1.0 + 1e-12).then_some(worst)
    }
}

impl Default for ElfConfig {
    fn default() -> Self {
        ElfConfig {
            link_rate_bps: 0.0,
            flows: Vec::new(),
            estimator: ErrorEstimator::default(),
            lag_compensation: false,
            lag_limit_bytes: DEFAULT_LAG_LIMIT_BYTES,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct FlowState {
    /// `W_i` (for guaranteed flows `B_i / B`).
    weight: f64,
    power: f64,
    guaranteed: bool,
    /// Error rate fixed by configuration.
    fixed: bool,
    /// Current `E_i`.
    error: f64,
    /// Lagging (lag compensation): scheduled with its full power.
    boosted: bool,
    /// Current weight: eq. (1), or `P_i * W_i` while boosted.
    adj: f64,
}

impl FlowState {
    /// Eq. (1)'s weight, or the full power `P_i * W_i` for a lagging flow (003 §7).
    fn effective(&self) -> f64 {
        let a = adjusted_weight(self.weight, self.power, self.error);
        if self.boosted && self.power.is_finite() {
            a.max(self.power * self.weight)
        } else {
            a
        }
    }
}

/// Flow weights with running sums (incremental recomputation).
#[derive(Clone, Debug)]
struct Weights {
    flows: Vec<FlowState>,
    any_g: bool,
    /// `sum_{i in G} A_i`.
    sum_g: f64,
    /// `sum_{j in BE} A_j`.
    sum_be: f64,
    updates: u32,
}

impl Weights {
    fn resum(&mut self) {
        let (mut g, mut be) = (0.0, 0.0);
        for f in &self.flows {
            if f.guaranteed {
                g += f.adj;
            } else {
                be += f.adj;
            }
        }
        self.sum_g = g;
        self.sum_be = be;
        self.updates = 0;
    }

    /// The best-effort aggregate `A_BE = 1 - sum_{i in G} A_i` (003 §6.3), floored; all of
    /// the link when no flow is guaranteed.
    #[inline]
    fn a_be(&self) -> f64 {
        if self.any_g {
            (1.0 - self.sum_g).max(BE_FLOOR)
        } else {
            1.0
        }
    }

    /// The flat weight of queue `q`: `A_q` if guaranteed, else its slice of `A_BE`.
    fn rate(&self, q: QueueId) -> f64 {
        let f = &self.flows[q];
        if f.guaranteed {
            f.adj
        } else {
            self.a_be() * f.adj / self.sum_be
        }
    }

    /// Sets `E_q` and whether `q` is lagging; true if the flow's weight changed.
    #[inline]
    fn set(&mut self, q: QueueId, e: f64, boosted: bool) -> bool {
        let f = &mut self.flows[q];
        f.error = e;
        f.boosted = boosted;
        let adj = f.effective();
        let delta = adj - f.adj;
        if delta == 0.0 {
            return false;
        }
        f.adj = adj;
        if f.guaranteed {
            self.sum_g += delta;
        } else {
            self.sum_be += delta;
        }
        self.updates += 1;
        if self.updates >= RESUM_EVERY {
            self.resum();
        }
        true
    }
}

/// The ELF scheduler of 003 §6.
#[derive(Clone, Debug)]
pub struct Elf {
    fifos: Vec<VecDeque<u32>>,
    frames: usize,
    /// Guaranteed flows (entry = queue) and the best-effort aggregate (entry [`Elf::agg`]).
    top: ScfqLevel,
    /// Best-effort flows (entry = queue).
    inner: ScfqLevel,
    /// The best-effort queue whose head the aggregate's top-level head stands for.
    committed: QueueId,
    weights: Weights,
    estimates: Estimates,
    /// Lag bookkeeping, when lag compensation is on.
    lags: Option<Lags>,
}

impl Elf {
    /// An ELF scheduler over `queues` queues.
    pub fn new(queues: usize, config: &ElfConfig) -> Result<Self, SchedConfigError> {
        check_queues(queues)?;
        check_count("flows", &config.flows, queues)?;
        config.estimator.validate()?;
        let flows = if config.flows.is_empty() {
            vec![ElfFlowConfig::default(); queues]
        } else {
            config.flows.clone()
        };
        let mut reserved = 0.0;
        let mut states = Vec::with_capacity(queues);
        for (i, f) in flows.iter().enumerate() {
            let field = |name: &str| format!("flows[{i}].{name}");
            let weight = check_positive(&field("weight"), f.weight)?;
            if f.power_factor.is_nan() || f.power_factor < 1.0 {
                return Err(SchedConfigError::BadValue {
                    field: field("power_factor"),
                    value: f.power_factor,
                    expected: "a power factor >= 1 (inf allowed)",
                });
            }
            if let Some(e) = f.error_rate {
                if !(0.0..=1.0).contains(&e) {
                    return Err(SchedConfigError::BadValue {
                        field: field("error_rate"),
                        value: e,
                        expected: "an error rate in [0, 1]",
                    });
                }
            }
            let weight = match f.reserved_bps {
                None => weight,
                Some(b) => {
                    check_positive(&field("reserved_bps"), b)?;
                    let link = check_positive("link_rate_bps", config.link_rate_bps)?;
                    reserved += b;
                    b / link // 003 §6.3: W_i = B_i / B
                }
            };
            let error = f.error_rate.unwrap_or(0.0);
            states.push(FlowState {
                weight,
                power: f.power_factor,
                guaranteed: f.reserved_bps.is_some(),
                fixed: f.error_rate.is_some(),
                error,
                boosted: false,
                adj: adjusted_weight(weight, f.power_factor, error),
            });
        }
        // Admission in the error-free case (003 §6.3: sum_{i in G} W_i <= 1).
        if reserved > config.link_rate_bps {
            return Err(SchedConfigError::Overbooked {
                reserved_bps: reserved,
                link_rate_bps: config.link_rate_bps,
            });
        }
        let mut weights = Weights {
            any_g: states.iter().any(|f| f.guaranteed),
            flows: states,
            sum_g: 0.0,
            sum_be: 0.0,
            updates: 0,
        };
        weights.resum();
        let lags = if config.lag_compensation {
            let limit = config.lag_limit_bytes;
            if limit.is_nan() || limit <= 0.0 {
                return Err(SchedConfigError::BadValue {
                    field: "lag_limit_bytes".into(),
                    value: limit,
                    expected: "a positive number of bytes (inf allowed)",
                });
            }
            Some(Lags::new(
                weights.flows.iter().map(|f| (f.weight, f.guaranteed)),
                limit,
            ))
        } else {
            None
        };
        Ok(Elf {
            fifos: vec![VecDeque::new(); queues],
            frames: 0,
            top: ScfqLevel::new(queues + 1),
            inner: ScfqLevel::new(queues),
            committed: 0,
            weights,
            estimates: Estimates::new(&config.estimator, queues),
            lags,
        })
    }

    /// Current error-rate estimate (or fixed value) `E_q`.
    pub fn error_rate(&self, q: QueueId) -> f64 {
        self.weights.flows[q].error
    }

    /// Lag of queue `q` in bytes (service owed minus delivered; positive: behind), or `None`
    /// without lag compensation.
    pub fn lag(&self, q: QueueId) -> Option<f64> {
        self.lags.as_ref().map(|l| l.lag(q))
    }

    /// True while queue `q` is scheduled with its full power to make up its lag.
    pub fn is_lagging(&self, q: QueueId) -> bool {
        self.weights.flows[q].boosted
    }

    /// The weight queue `q` is scheduled with now (see [`ElfShare::adjusted_weight`]).
    pub fn adjusted_weight(&self, q: QueueId) -> f64 {
        self.weights.rate(q)
    }

    /// The air-time share queue `q` gets now if every queue is backlogged. O(n).
    pub fn air_share(&self, q: QueueId) -> f64 {
        let total: f64 = (0..self.fifos.len()).map(|i| self.weights.rate(i)).sum();
        self.weights.rate(q) / total
    }

    /// Re-evaluates whether `q` is lagging (lag compensation) with error rate `e`, and
    /// re-stamps waiting heads if its weight moved.
    fn reweigh(&mut self, q: QueueId, e: f64) {
        let boosted = self.lags.as_ref().is_some_and(|l| l.lagging(q));
        if !self.weights.set(q, e, boosted) {
            return;
        }
        let adj = self.weights.flows[q].adj;
        if self.weights.flows[q].guaranteed {
            self.top.rerate(q, adj);
            // A_BE = 1 - sum_G A_i moved too.
            let agg = self.agg();
            let a_be = self.weights.a_be();
            self.top.rerate(agg, a_be);
        } else {
            self.inner.rerate(q, adj);
        }
    }

    /// Top-level entry of the best-effort aggregate.
    fn agg(&self) -> usize {
        self.fifos.len()
    }

    /// Stamps the aggregate's top-level head with the inner level's next frame, or retires
    /// the aggregate when no best-effort frame is queued.
    #[inline]
    fn commit_aggregate(&mut self) {
        let agg = self.agg();
        match self.inner.peek() {
            Some(j) => {
                self.committed = j;
                self.top
                    .set_head(agg, self.fifos[j][0], self.weights.a_be());
            }
            None => self.top.remove(agg),
        }
    }
}

impl Scheduler for Elf {
    fn name(&self) -> &'static str {
        "elf"
    }
    fn queues(&self) -> usize {
        self.fifos.len()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, len: u32) {
        self.fifos[q].push_back(len);
        self.frames += 1;
        if self.fifos[q].len() > 1 {
            return;
        }
        if let Some(lags) = &mut self.lags {
            lags.backlogged(q);
            let e = self.weights.flows[q].error;
            self.reweigh(q, e);
        }
        let f = &self.weights.flows[q];
        if f.guaranteed {
            self.top.set_head(q, len, f.adj);
        } else {
            self.inner.set_head(q, len, f.adj);
            let agg = self.agg();
            if !self.top.is_active(agg) {
                self.commit_aggregate();
            } else if let Some(best) = self.inner.peek().filter(|&b| b != self.committed) {
                // A best-effort queue came back with a lower stamp than the frame the
                // aggregate had committed to: send that one instead. Without this, a queue
                // that empties and refills at every frame (a link keeps one frame per service
                // in its scheduler) would always lose to the flow committed while it was
                // empty, and best-effort flows would alternate whatever their weights.
                self.committed = best;
                self.top.relength(agg, self.fifos[best][0]);
            }
        }
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        let e = self.top.peek()?;
        self.top.serve(e);
        let aggregate = e == self.agg();
        let q = if aggregate { self.committed } else { e };
        let fifo = &mut self.fifos[q];
        let len = fifo.pop_front().expect("a served entry has a head frame");
        let next = fifo.front().copied();
        self.frames -= 1;
        if let Some(lags) = &mut self.lags {
            lags.sent(q, len, next.is_none());
        }
        let adj = self.weights.flows[q].adj;
        let level = if aggregate {
            self.inner.serve(q);
            &mut self.inner
        } else {
            &mut self.top
        };
        match next {
            Some(len) => level.set_head(q, len, adj),
            None => level.remove(q),
        }
        if aggregate {
            self.commit_aggregate();
        }
        Some(q)
    }
    fn len(&self) -> usize {
        self.frames
    }
    fn report(&mut self, _now: Instant, q: QueueId, delivered: bool) {
        if let Some(lags) = &mut self.lags {
            lags.report(q, delivered);
        }
        let e = if self.weights.flows[q].fixed {
            self.weights.flows[q].error
        } else {
            self.estimates.record(q, delivered)
        };
        self.reweigh(q, e);
    }
    /// 003 §6.2's `T_i = A_i / sum A_j * B * (1 - E_i)` makes `1 - E_i` the share of a flow's
    /// air time that delivers payload, so the capacity a frame's coding and headers cost
    /// counts as error, as its loss does: the EWMA estimator averages `1 - share`; the window
    /// estimator counts whole outcomes (lost when less than half the air time delivered).
    /// Lag accounting counts a frame with any delivered payload as delivered.
    fn report_share(&mut self, _now: Instant, q: QueueId, share: f64) {
        let share = share.clamp(0.0, 1.0);
        if let Some(lags) = &mut self.lags {
            lags.report(q, share > 0.0);
        }
        let e = if self.weights.flows[q].fixed {
            self.weights.flows[q].error
        } else {
            self.estimates.record_share(q, 1.0 - share)
        };
        self.reweigh(q, e);
    }
}

#[cfg(test)]
#[path = "elf_tests.rs"]
mod tests;

#[path = "elf_lag.rs"]
mod lag;
