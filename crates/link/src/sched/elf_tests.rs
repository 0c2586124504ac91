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
        ..Default::default()
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

proptest! {
    #[test]
    fn lag_compensated_elf_keeps_the_invariants_and_bounds_lags(
        flows in proptest::collection::vec(flow_strategy(), 5),
        ops in proptest::collection::vec(op_strategy(5, 1500), 0..400),
        limit in prop_oneof![Just(f64::INFINITY), 1_000.0f64..1e5],
    ) {
        // Any mix of enqueues, dequeues and reports: work-conserving, deterministic, finite
        // positive weights, idle flows' lags within the limit.
        let c = ElfConfig { lag_compensation: true, lag_limit_bytes: limit, ..config(flows) };
        check_deterministic(|| Box::new(Elf::new(5, &c).unwrap()), 5, &ops);
        let mut s = Elf::new(5, &c).unwrap();
        let t = Instant::ZERO;
        for op in &ops {
            match *op {
                Op::Enqueue(q, len) => s.enqueue(t, q, len),
                Op::Dequeue => { s.dequeue(t); }
                Op::Report(q, d) => s.report(t, q, d),
                _ => {}
            }
        }
        for q in 0..5 {
            let a = s.air_share(q);
            prop_assert!(a.is_finite() && a > 0.0, "queue {}: air share {}", q, a);
            let l = s.lag(q).unwrap();
            prop_assert!(l.is_finite(), "queue {}: lag {}", q, l);
            if s.fifos[q].is_empty() {
                // A frozen lag is clamped whenever it is set; a backlogged flow's grows
                // with the clock between its own events and is clamped at the next one.
                prop_assert!(l.abs() <= limit, "queue {}: lag {} over {}", q, l, limit);
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
        ..Default::default()
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
        ..Default::default()
    };
    assert_eq!(c, super::super::SchedulerConfig::Elf(want));
    let e = de::<ElfConfig>(&[(
        "flows",
        Val::Seq(vec![Val::M(vec![("wieght", Val::F(1.0))])]),
    )]);
    assert!(e.unwrap_err().contains("wieght"));
}

/// Drives `s` with every queue holding one 1000-byte frame (a backlogged cell, 003 §7) for
/// `slots` slots; `lost(slot, q)` says which transmissions fail. Returns frames delivered per
/// queue.
fn drive(s: &mut Elf, slots: u64, mut lost: impl FnMut(u64, usize) -> bool) -> Vec<u64> {
    let t = Instant::ZERO;
    for q in 0..s.queues() {
        if s.fifos[q].is_empty() {
            s.enqueue(t, q, 1000);
        }
    }
    let mut got = vec![0; s.queues()];
    for i in 0..slots {
        let q = s.dequeue(t).unwrap();
        let ok = !lost(i, q);
        s.report(t, q, ok);
        got[q] += u64::from(ok);
        s.enqueue(t, q, 1000);
    }
    got
}

fn lag_config(flows: Vec<ElfFlowConfig>, lag: bool) -> ElfConfig {
    ElfConfig {
        link_rate_bps: 800_000.0,
        flows,
        estimator: ErrorEstimator::Window { outcomes: 50 },
        lag_compensation: lag,
        lag_limit_bytes: f64::INFINITY,
    }
}

#[test]
fn lag_compensation_makes_up_a_reservation_within_the_power_factor() {
    // 003 §7, Fig. 12: after an error burst a reserved flow "receives throughput beyond its
    // reservation so it can clear its lag, but its power factor still limits its link time".
    // Video reserves W = 0.4 of the link with P = 1.5 (crossover 1/3), one best-effort flow.
    let flows = vec![
        ElfFlowConfig {
            reserved_bps: Some(320_000.0),
            power_factor: 1.5,
            ..Default::default()
        },
        ElfFlowConfig::default(),
    ];
    // Burst: 3 of every 5 video frames lost (E = 0.6, effort region) for 10,000 slots.
    let burst = |_: u64, q: usize| q == 0;
    let mut lossy = 0u64;
    let mut burst_pattern = |i: u64, q: usize| {
        if burst(i, q) {
            lossy += 1;
            lossy % 5 < 3
        } else {
            false
        }
    };
    for lag in [false, true] {
        let mut s = Elf::new(2, &lag_config(flows.clone(), lag)).unwrap();
        let during = drive(&mut s, 10_000, &mut burst_pattern);
        // Effort region: video holds P * W = 0.6 of the air (A_BE = 0.4), delivers 40% of it.
        assert!(
            (during[0] as f64 / 10_000.0 - 0.6 * 0.4).abs() < 0.01,
            "{during:?}"
        );
        // Clean again. The first 60 slots flush the estimator's 50-outcome window.
        drive(&mut s, 60, |_, _| false);
        let after = drive(&mut s, 1_000, |_, _| false);
        let share = after[0] as f64 / 1_000.0;
        if lag {
            // Owed 0.4 of 10,000 slots, got 2,400: 1,600 frames behind, made up at
            // 0.6 - 0.4 = 0.2 frame per slot, so the first 1,000 slots run at P * W.
            assert!((share - 0.6).abs() < 0.01, "lagging share {share}");
            assert!(s.is_lagging(0));
            // Another 10,000 clean slots clear the rest; then the reservation again.
            drive(&mut s, 10_000, |_, _| false);
            assert!(!s.is_lagging(0));
            let lag0 = s.lag(0).unwrap();
            assert!(lag0.abs() <= 2_000.0, "lag {lag0} bytes");
            let settled = drive(&mut s, 1_000, |_, _| false);
            assert!((settled[0] as f64 / 1_000.0 - 0.4).abs() < 0.01);
        } else {
            assert!(
                (share - 0.4).abs() < 0.01,
                "share without compensation {share}"
            );
            assert_eq!(s.lag(0), None);
        }
    }
}

#[test]
fn lag_compensation_restores_long_term_best_effort_fairness() {
    // 003 §7, Fig. 12: "FTP1 receives more throughput than FTP2 so it can achieve long-term
    // fairness with FTP2 ... this short-term unfairness is limited by its power factor".
    let flows = vec![ElfFlowConfig::default(), ElfFlowConfig::default()];
    let mut s = Elf::new(2, &lag_config(flows, true)).unwrap();
    // FTP1 loses every other frame (E = 0.5 > crossover 1/6): it holds 1.2 / 2.2 of the air.
    let mut n = 0u64;
    let during = drive(&mut s, 22_000, |_, q| {
        n += u64::from(q == 0);
        q == 0 && n.is_multiple_of(2)
    });
    assert!(
        (during[0] as f64 - 22_000.0 * 1.2 / 2.2 * 0.5).abs() < 100.0,
        "{during:?}"
    );
    assert!(
        (during[1] as f64 - 22_000.0 / 2.2).abs() < 100.0,
        "{during:?}"
    );
    // Clean: FTP1 is lagging and gets P : 1 = 1.2 : 1 of the air until the counts match.
    let after = drive(&mut s, 2_200, |_, _| false);
    assert!((after[0] as f64 - 1_200.0).abs() < 20.0, "{after:?}");
    // FTP2 is ahead by 10,000 - 6,000 = 4,000 frames; catching up at 200 per 2,200 slots
    // takes 44,000 slots. After 60,000 slots the totals are equal within a few frames.
    let rest = drive(&mut s, 60_000 - 2_200, |_, _| false);
    let total = [
        during[0] + after[0] + rest[0],
        during[1] + after[1] + rest[1],
    ];
    assert!(total[0].abs_diff(total[1]) <= 3, "{total:?}");
    assert!(!s.is_lagging(0));
}

#[test]
fn lag_stays_within_its_limit() {
    let mut c = lag_config(vec![ElfFlowConfig::default(); 2], true);
    c.lag_limit_bytes = 50_000.0;
    let mut s = Elf::new(2, &c).unwrap();
    drive(&mut s, 20_000, |_, q| q == 0);
    for q in 0..2 {
        let l = s.lag(q).unwrap();
        assert!(l.abs() <= 50_000.0 + 1_000.0, "queue {q}: lag {l}");
    }
    // Behind by the limit (50 frames). Clean, it gets 1.2 / 2.2 of the slots against the
    // 1 / 2 it is owed, gaining 0.2 / 4.4 frame per slot: 1,100 slots, plus about 100 for the
    // estimator's window to forget the losses.
    drive(&mut s, 1_300, |_, _| false);
    assert!(s.lag(0).unwrap() < 2_000.0);
    c.lag_limit_bytes = 0.0;
    let e = Elf::new(2, &c).unwrap_err();
    assert!(e.to_string().contains("lag_limit_bytes"), "{e}");
}

#[test]
fn lag_compensation_keeps_eq1_shares_under_constant_errors() {
    // 003 Table 3's setup (W = 1/8 reserved at each station, 50% loss at station B, every
    // P = 2): with constant errors the lags stay small, so long-run throughput is the
    // closed form's whether or not lag compensation is on.
    let flows: Vec<ElfFlowConfig> = [Some(100_000.0), None, Some(100_000.0), None]
        .into_iter()
        .map(|r| ElfFlowConfig {
            reserved_bps: r,
            power_factor: 2.0,
            ..Default::default()
        })
        .collect();
    let want = allocate(
        800_000.0,
        &flows
            .iter()
            .enumerate()
            .map(|(i, f)| ElfFlow {
                reserved_bps: f.reserved_bps,
                weight: 1.0,
                power_factor: 2.0,
                error_rate: if i >= 2 { 0.5 } else { 0.0 },
            })
            .collect::<Vec<_>>(),
    );
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut s = Elf::new(4, &lag_config(flows, true)).unwrap();
    let slots = 200_000u64;
    let got = drive(&mut s, slots, |_, q| q >= 2 && rng.gen_bool(0.5));
    for (q, w) in want.iter().enumerate() {
        let bps = got[q] as f64 * 8_000.0 / (slots as f64 / 100.0);
        assert!(
            (bps - w.throughput_bps).abs() < 0.02 * w.throughput_bps,
            "queue {q}: {bps} vs {}",
            w.throughput_bps
        );
    }
}
