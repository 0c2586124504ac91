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
//! the scheduler, which orders frames with the SCFQ core of [`super::scfq`] (byte-based tags,
//! so air time is shared in proportion to weights on a link of constant rate).
//!
//! Error rates are estimated per queue from the outcomes the MAC reports (`report`), with an
//! EWMA or a sliding window ([`ErrorEstimator`]), or fixed per flow for analysis. When an
//! estimate changes only that flow's weight and two running sums are updated (O(1)); the
//! best-effort split is derived from the sums when a frame reaches the head of its queue, so a
//! new weight applies from the next head on. Guards (ours): `E_i` is capped at
//! `1 - `[`E_EPSILON`] so `A_i` stays finite even with an infinite power factor, and the
//! best-effort aggregate never drops below [`BE_FLOOR`] in the scheduler, so best-effort flows
//! are still served when reservations overbook a lossy link (the closed form gives them 0).

use super::error_estimate::{ErrorEstimator, Estimates};
use super::scfq::ScfqCore;
use super::{check_count, check_positive, check_queues, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;

/// Largest error rate used in eq. (1) is `1 - E_EPSILON`: keeps `A_i` finite as `E_i -> 1`.
pub const E_EPSILON: f64 = 1e-6;
/// Smallest best-effort aggregate weight the scheduler uses (liveness guard, ours).
pub const BE_FLOOR: f64 = 1e-6;
/// Default power factor: 003 §6.5 and §7 give best-effort flows 110-120%; we take 120%.
pub const DEFAULT_POWER_FACTOR: f64 = 1.2;
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
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ElfConfig {
    /// Error-free link rate `B` in bit/s; needed when a flow has a reservation.
    pub link_rate_bps: f64,
    /// One entry per queue; empty means every queue is a best-effort flow with the defaults.
    pub flows: Vec<ElfFlowConfig>,
    /// How error rates are estimated from outcome reports.
    pub estimator: ErrorEstimator,
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
    /// Current eq. (1) weight.
    adj: f64,
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

    /// The weight queue `q` is tagged with: `A_q` if guaranteed, else its slice of `A_BE`.
    #[inline]
    fn rate(&self, q: QueueId) -> f64 {
        let f = &self.flows[q];
        if f.guaranteed {
            f.adj
        } else {
            let a_be = if self.any_g {
                (1.0 - self.sum_g).max(BE_FLOOR) // 003 §6.3, floored
            } else {
                1.0
            };
            a_be * f.adj / self.sum_be
        }
    }

    #[inline]
    fn set_error(&mut self, q: QueueId, e: f64) {
        let f = &mut self.flows[q];
        f.error = e;
        let adj = adjusted_weight(f.weight, f.power, e);
        let delta = adj - f.adj;
        if delta == 0.0 {
            return;
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
    }
}

/// The ELF scheduler of 003 §6.
#[derive(Clone, Debug)]
pub struct Elf {
    core: ScfqCore,
    weights: Weights,
    estimates: Estimates,
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
        Ok(Elf {
            core: ScfqCore::new(queues),
            weights,
            estimates: Estimates::new(&config.estimator, queues),
        })
    }

    /// Current error-rate estimate (or fixed value) `E_q`.
    pub fn error_rate(&self, q: QueueId) -> f64 {
        self.weights.flows[q].error
    }

    /// The weight queue `q` is scheduled with now (see [`ElfShare::adjusted_weight`]).
    pub fn adjusted_weight(&self, q: QueueId) -> f64 {
        self.weights.rate(q)
    }

    /// The air-time share queue `q` gets now if every queue is backlogged. O(n).
    pub fn air_share(&self, q: QueueId) -> f64 {
        let total: f64 = (0..self.core.queues()).map(|i| self.weights.rate(i)).sum();
        self.weights.rate(q) / total
    }
}

impl Scheduler for Elf {
    fn name(&self) -> &'static str {
        "elf"
    }
    fn queues(&self) -> usize {
        self.core.queues()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, len: u32) {
        let w = &self.weights;
        self.core.enqueue(q, len, || w.rate(q));
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        let w = &self.weights;
        self.core.dequeue(|q| w.rate(q))
    }
    fn len(&self) -> usize {
        self.core.len()
    }
    fn report(&mut self, _now: Instant, q: QueueId, delivered: bool) {
        if self.weights.flows[q].fixed {
            return;
        }
        let e = self.estimates.record(q, delivered);
        self.weights.set_error(q, e);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{check_deterministic, de, op_strategy, Op, Val};
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// A flow for the generated configurations: (reserved share of 1 Mbit/s or best-effort
    /// weight, power factor, fixed error rate).
    fn flow_strategy() -> impl Strategy<Value = ElfFlowConfig> {
        (
            prop_oneof![
                Just(None),
                (1u32..100).prop_map(|k| Some(f64::from(k) * 1_000.0))
            ],
            0.1f64..4.0,
            prop_oneof![Just(1.0), Just(2.0), Just(f64::INFINITY), 1.0f64..4.0],
            prop_oneof![
                Just(None),
                Just(Some(0.0)),
                Just(Some(1.0)),
                (0.0f64..1.0).prop_map(Some)
            ],
        )
            .prop_map(
                |(reserved_bps, weight, power_factor, error_rate)| ElfFlowConfig {
                    reserved_bps,
                    weight,
                    power_factor,
                    error_rate,
                },
            )
    }

    fn config(flows: Vec<ElfFlowConfig>) -> ElfConfig {
        ElfConfig {
            link_rate_bps: 1e6,
            flows,
            estimator: ErrorEstimator::Window { outcomes: 16 },
        }
    }

    /// The rates 003 §6.2-6.3 prescribe, computed here from the formulas (fixed error rates).
    fn oracle_rates(c: &ElfConfig) -> Vec<f64> {
        let own: Vec<f64> = c
            .flows
            .iter()
            .map(|f| {
                let w = f.reserved_bps.map_or(f.weight, |b| b / c.link_rate_bps);
                let e = f.error_rate.unwrap().min(1.0 - E_EPSILON);
                (w / (1.0 - e)).min(f.power_factor * w)
            })
            .collect();
        let (mut sum_g, mut sum_be) = (0.0, 0.0);
        for (f, a) in c.flows.iter().zip(&own) {
            if f.reserved_bps.is_some() {
                sum_g += a;
            } else {
                sum_be += a;
            }
        }
        let any_g = c.flows.iter().any(|f| f.reserved_bps.is_some());
        let a_be = if any_g {
            (1.0 - sum_g).max(BE_FLOOR)
        } else {
            1.0
        };
        c.flows
            .iter()
            .zip(own)
            .map(|(f, a)| {
                if f.reserved_bps.is_some() {
                    a
                } else {
                    a_be * a / sum_be
                }
            })
            .collect()
    }

    /// SCFQ as 004 §IV words it (stamp on arrival, linear scan), over the oracle's rates.
    fn literal_scfq(rates: &[f64], ops: &[Op]) -> Vec<Option<QueueId>> {
        let n = rates.len();
        let mut stamps: Vec<VecDeque<f64>> = vec![VecDeque::new(); n];
        let mut last = vec![0.0f64; n];
        let mut v = 0.0f64;
        let mut out = Vec::new();
        let pick = |stamps: &mut Vec<VecDeque<f64>>, v: &mut f64| {
            let (t, q) = stamps
                .iter()
                .enumerate()
                .filter_map(|(q, s)| s.front().map(|&t| (t, q)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))?;
            stamps[q].pop_front();
            *v = if stamps.iter().all(|s| s.is_empty()) {
                0.0
            } else {
                t
            };
            Some(q)
        };
        for op in ops {
            match *op {
                Op::Enqueue(q, len) => {
                    let prev = if stamps[q].is_empty() { v } else { last[q] };
                    last[q] = prev.max(v) + f64::from(len) / rates[q];
                    stamps[q].push_back(last[q]);
                }
                Op::Dequeue => out.push(pick(&mut stamps, &mut v)),
                _ => {}
            }
        }
        while let Some(q) = pick(&mut stamps, &mut v) {
            out.push(Some(q));
        }
        out
    }

    proptest! {
        #[test]
        fn fixed_error_elf_is_scfq_over_the_formula_weights(
            mut flows in proptest::collection::vec(flow_strategy(), 5),
            ops in proptest::collection::vec(op_strategy(5, 1500), 0..300),
        ) {
            for f in &mut flows {
                f.error_rate.get_or_insert(0.25);
            }
            let c = config(flows);
            let trace = check_deterministic(|| Box::new(Elf::new(5, &c).unwrap()), 5, &ops);
            prop_assert_eq!(trace, literal_scfq(&oracle_rates(&c), &ops));
        }

        #[test]
        fn estimated_elf_keeps_the_invariants_and_tracks_allocate(
            flows in proptest::collection::vec(flow_strategy(), 5),
            ops in proptest::collection::vec(op_strategy(5, 1500), 0..400),
        ) {
            let c = config(flows);
            check_deterministic(|| Box::new(Elf::new(5, &c).unwrap()), 5, &ops);
            // After the reports, the incrementally kept weights give the closed form's air
            // shares for the current estimates.
            let mut s = Elf::new(5, &c).unwrap();
            for op in &ops {
                if let Op::Report(q, d) = *op {
                    s.report(Instant::ZERO, q, d);
                }
            }
            let model: Vec<ElfFlow> = c.flows.iter().enumerate().map(|(q, f)| ElfFlow {
                reserved_bps: f.reserved_bps,
                weight: f.weight,
                power_factor: f.power_factor,
                error_rate: s.error_rate(q),
            }).collect();
            let want = allocate(c.link_rate_bps, &model);
            let sum_g: f64 = (0..5).filter(|&q| c.flows[q].reserved_bps.is_some())
                .map(|q| want[q].adjusted_weight).sum();
            for q in 0..5 {
                let got = s.air_share(q);
                prop_assert!(got.is_finite() && got > 0.0);
                if sum_g < 1.0 - 1e-3 {
                    // Not overbooked: the scheduler's floor is inactive.
                    prop_assert!((got - want[q].air_share).abs() < 1e-9,
                        "queue {}: {} vs {}", q, got, want[q].air_share);
                }
            }
        }
    }

    #[test]
    fn weights_stay_finite_as_errors_approach_one() {
        let f = |reserved_bps, error_rate| ElfFlowConfig {
            reserved_bps,
            weight: 1.0,
            power_factor: f64::INFINITY,
            error_rate,
        };
        let c = ElfConfig {
            link_rate_bps: 1e6,
            flows: vec![f(Some(1e5), Some(1.0)), f(None, Some(1.0)), f(None, None)],
            ..Default::default()
        };
        let mut s = Elf::new(3, &c).unwrap();
        let t = Instant::ZERO;
        for _ in 0..100_000 {
            s.report(t, 2, false);
        }
        assert!(s.error_rate(2) > 1.0 - 1e-9, "{}", s.error_rate(2));
        for q in 0..3 {
            let a = s.adjusted_weight(q);
            assert!(a.is_finite() && a > 0.0, "queue {q}: {a}");
        }
        // Still work-conserving: every queue gets served.
        for q in 0..3 {
            s.enqueue(t, q, 1000);
        }
        let mut got: Vec<_> = std::iter::from_fn(|| s.dequeue(t)).collect();
        got.sort();
        assert_eq!(got, [0, 1, 2]);
        assert!(adjusted_weight(1.0, f64::INFINITY, 1.0).is_finite());
    }

    #[test]
    fn fixed_error_rates_ignore_reports() {
        let c = ElfConfig {
            flows: vec![ElfFlowConfig {
                error_rate: Some(0.5),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut s = Elf::new(1, &c).unwrap();
        for _ in 0..100 {
            s.report(Instant::ZERO, 0, true);
        }
        assert_eq!(s.error_rate(0), 0.5);
    }

    #[test]
    fn bad_flows_are_named() {
        let flow = ElfFlowConfig::default;
        let cases = [
            (
                ElfFlowConfig {
                    power_factor: 0.5,
                    ..flow()
                },
                "flows[1].power_factor",
            ),
            (
                ElfFlowConfig {
                    power_factor: f64::NAN,
                    ..flow()
                },
                "flows[1].power_factor",
            ),
            (
                ElfFlowConfig {
                    weight: 0.0,
                    ..flow()
                },
                "flows[1].weight",
            ),
            (
                ElfFlowConfig {
                    weight: -1.0,
                    ..flow()
                },
                "flows[1].weight",
            ),
            (
                ElfFlowConfig {
                    error_rate: Some(1.5),
                    ..flow()
                },
                "flows[1].error_rate",
            ),
            (
                ElfFlowConfig {
                    reserved_bps: Some(f64::NAN),
                    ..flow()
                },
                "flows[1].reserved_bps",
            ),
        ];
        for (bad, field) in cases {
            let c = ElfConfig {
                link_rate_bps: 1e6,
                flows: vec![flow(), bad],
                ..Default::default()
            };
            let e = Elf::new(2, &c).unwrap_err();
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
        // A reservation needs the link rate; reservations may not exceed it.
        let reserved = |b| ElfFlowConfig {
            reserved_bps: Some(b),
            ..flow()
        };
        let c = ElfConfig {
            flows: vec![reserved(1e5)],
            ..Default::default()
        };
        assert!(Elf::new(1, &c)
            .unwrap_err()
            .to_string()
            .contains("link_rate_bps"));
        let c = ElfConfig {
            link_rate_bps: 1e6,
            flows: vec![reserved(6e5), reserved(5e5)],
            ..Default::default()
        };
        assert!(matches!(
            Elf::new(2, &c),
            Err(SchedConfigError::Overbooked { .. })
        ));
        let c = ElfConfig {
            flows: vec![flow(); 3],
            ..Default::default()
        };
        assert!(Elf::new(2, &c)
            .unwrap_err()
            .to_string()
            .contains("`flows` has 3"));
    }

    #[test]
    fn config_reads_flows_and_estimator() {
        let c: super::super::SchedulerConfig = de(&[
            ("policy", Val::S("elf")),
            ("link_rate_bps", Val::I(800_000)),
            (
                "flows",
                Val::Seq(vec![
                    Val::M(vec![
                        ("reserved_bps", Val::I(8_000)),
                        ("power_factor", Val::F(3.0)),
                    ]),
                    Val::M(vec![("weight", Val::F(2.0)), ("error_rate", Val::F(0.1))]),
                ]),
            ),
            (
                "estimator",
                Val::M(vec![("kind", Val::S("window")), ("outcomes", Val::I(500))]),
            ),
        ])
        .unwrap();
        let want = ElfConfig {
            link_rate_bps: 800_000.0,
            flows: vec![
                ElfFlowConfig {
                    reserved_bps: Some(8_000.0),
                    power_factor: 3.0,
                    ..Default::default()
                },
                ElfFlowConfig {
                    weight: 2.0,
                    error_rate: Some(0.1),
                    ..Default::default()
                },
            ],
            estimator: ErrorEstimator::Window { outcomes: 500 },
        };
        assert_eq!(c, super::super::SchedulerConfig::Elf(want));
        let e = de::<ElfConfig>(&[(
            "flows",
            Val::Seq(vec![Val::M(vec![("wieght", Val::F(1.0))])]),
        )]);
        assert!(e.unwrap_err().contains("wieght"));
    }
}
