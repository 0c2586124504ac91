//! Unit tests of the ELF scheduler (003 §6), kept beside `elf.rs` in their own file because
//! the reference model (two-level SCFQ written out naively) is long. The closed form's tests
//! against 003's Tables 2 and 3 are in `tests/sched_elf.rs`.

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

/// The weights 003 §6.2-6.3 prescribe (fixed error rates): each flow's eq. (1) weight,
/// and `A_BE = 1 - sum_G A_i` (floored as documented).
fn oracle_weights(c: &ElfConfig) -> (Vec<f64>, f64) {
    let own: Vec<f64> = c
        .flows
        .iter()
        .map(|f| {
            let w = f.reserved_bps.map_or(f.weight, |b| b / c.link_rate_bps);
            let e = f.error_rate.unwrap().min(1.0 - E_EPSILON);
            (w / (1.0 - e)).min(f.power_factor * w)
        })
        .collect();
    let mut sum_g = 0.0;
    for (f, a) in c.flows.iter().zip(&own) {
        if f.reserved_bps.is_some() {
            sum_g += a;
        }
    }
    let any_g = c.flows.iter().any(|f| f.reserved_bps.is_some());
    let a_be = if any_g {
        (1.0 - sum_g).max(BE_FLOOR)
    } else {
        1.0
    };
    (own, a_be)
}

/// Two-level SCFQ written out naively (linear scans, explicit stamps): guaranteed flows and
/// one best-effort aggregate on top, best-effort flows inside (003 §6.3, 004 §IV).
struct TwoLevel {
    own: Vec<f64>,
    a_be: f64,
    guaranteed: Vec<bool>,
    fifos: Vec<VecDeque<u32>>,
    top: Vec<Option<f64>>, // n flows + the aggregate at index n
    inner: Vec<Option<f64>>,
    v_top: f64,
    v_in: f64,
    committed: usize,
    /// Virtual time at which the aggregate's current head was stamped.
    agg_start: f64,
}

fn argmin(tags: &[Option<f64>]) -> Option<usize> {
    let mut best: Option<(f64, usize)> = None;
    for (i, t) in tags.iter().enumerate() {
        if let Some(t) = *t {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, i));
            }
        }
    }
    best.map(|b| b.1)
}

impl TwoLevel {
    fn commit(&mut self) {
        let n = self.fifos.len();
        match argmin(&self.inner) {
            Some(j) => {
                self.committed = j;
                self.agg_start = self.v_top;
                self.top[n] = Some(self.v_top + f64::from(self.fifos[j][0]) / self.a_be);
            }
            None => self.top[n] = None,
        }
    }
    fn idle_resets(&mut self) {
        if self.top.iter().all(Option::is_none) {
            self.v_top = 0.0;
        }
        if self.inner.iter().all(Option::is_none) {
            self.v_in = 0.0;
        }
    }
    fn enqueue(&mut self, q: usize, len: u32) {
        self.fifos[q].push_back(len);
        if self.fifos[q].len() > 1 {
            return;
        }
        if self.guaranteed[q] {
            self.top[q] = Some(self.v_top + f64::from(len) / self.own[q]);
        } else {
            self.inner[q] = Some(self.v_in + f64::from(len) / self.own[q]);
            let n = self.fifos.len();
            if self.top[n].is_none() {
                self.commit();
            } else if let Some(best) = argmin(&self.inner).filter(|&b| b != self.committed) {
                // The aggregate switches to the best-effort head that is now lowest, keeping
                // the start of its own head.
                self.committed = best;
                let len = f64::from(self.fifos[best][0]);
                self.top[n] = Some((self.agg_start + len / self.a_be).max(self.v_top));
            }
        }
    }
    fn dequeue(&mut self) -> Option<usize> {
        let n = self.fifos.len();
        let e = argmin(&self.top)?;
        self.v_top = self.v_top.max(self.top[e].unwrap());
        let q = if e == n { self.committed } else { e };
        self.fifos[q].pop_front();
        let next = self.fifos[q].front().copied();
        if e == n {
            self.v_in = self.v_in.max(self.inner[q].unwrap());
            self.inner[q] = next.map(|l| self.v_in + f64::from(l) / self.own[q]);
            self.idle_resets();
            self.commit();
        } else {
            self.top[q] = next.map(|l| self.v_top + f64::from(l) / self.own[q]);
        }
        self.idle_resets();
        Some(q)
    }
}

fn two_level_trace(c: &ElfConfig, ops: &[Op]) -> Vec<Option<QueueId>> {
    let n = c.flows.len();
    let (own, a_be) = oracle_weights(c);
    let mut m = TwoLevel {
        own,
        a_be,
        guaranteed: c.flows.iter().map(|f| f.reserved_bps.is_some()).collect(),
        fifos: vec![VecDeque::new(); n],
        top: vec![None; n + 1],
        inner: vec![None; n],
        v_top: 0.0,
        v_in: 0.0,
        committed: 0,
        agg_start: 0.0,
    };
    let mut out = Vec::new();
    for op in ops {
        match *op {
            Op::Enqueue(q, len) => m.enqueue(q, len),
            Op::Dequeue => out.push(m.dequeue()),
            _ => {}
        }
    }
    while let Some(q) = m.dequeue() {
        out.push(Some(q));
    }
    out
}

proptest! {
    #[test]
    fn fixed_error_elf_is_two_level_scfq_over_the_formula_weights(
        mut flows in proptest::collection::vec(flow_strategy(), 5),
        ops in proptest::collection::vec(op_strategy(5, 1500), 0..300),
    ) {
        for f in &mut flows {
            f.error_rate.get_or_insert(0.25);
        }
        let c = config(flows);
        let trace = check_deterministic(|| Box::new(Elf::new(5, &c).unwrap()), 5, &ops);
        prop_assert_eq!(trace, two_level_trace(&c, &ops));
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
        for (q, w) in want.iter().enumerate() {
            let got = s.air_share(q);
            prop_assert!(got.is_finite() && got > 0.0);
            if sum_g < 1.0 - 1e-3 {
                // Not overbooked: the scheduler's floor is inactive.
                prop_assert!((got - w.air_share).abs() < 1e-9,
                    "queue {}: {} vs {}", q, got, w.air_share);
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
fn best_effort_recovers_promptly_after_an_error_burst() {
    // A reserved flow with an unlimited power factor meets a burst of 90% errors: its
    // weight outgrows the link and the best-effort aggregate drops to the floor. When the
    // burst ends the aggregate's waiting head must be re-stamped, not left with a
    // timestamp a million frames away (003 §7, Fig. 12: flows recover right after).
    let c = ElfConfig {
        link_rate_bps: 800_000.0,
        flows: vec![
            ElfFlowConfig {
                reserved_bps: Some(700_000.0),
                power_factor: f64::INFINITY,
                ..Default::default()
            },
            ElfFlowConfig::default(),
        ],
        estimator: ErrorEstimator::Ewma { alpha: 0.05 },
    };
    let mut s = Elf::new(2, &c).unwrap();
    let t = Instant::ZERO;
    for _ in 0..4 {
        s.enqueue(t, 0, 1000);
        s.enqueue(t, 1, 1000);
    }
    let mut sent = [0usize; 2];
    for i in 0..5_000 {
        let q = s.dequeue(t).unwrap();
        // Burst: 9 of every 10 video frames lost.
        s.report(t, q, q == 1 || i % 10 == 0);
        s.enqueue(t, q, 1000);
    }
    assert!(
        s.adjusted_weight(1) <= 2.0 * BE_FLOOR,
        "aggregate at the floor"
    );
    for i in 0..2_000 {
        let q = s.dequeue(t).unwrap();
        s.report(t, q, true);
        s.enqueue(t, q, 1000);
        if i >= 300 {
            sent[q] += 1;
        }
    }
    // Error-free again: A_video = 7/8, A_BE = 1/8.
    let be = sent[1] as f64 / (sent[0] + sent[1]) as f64;
    assert!((be - 0.125).abs() < 0.01, "best-effort share {be}");
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
