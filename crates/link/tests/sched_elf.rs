//! ELF's closed form (`elf::allocate`) against 003's worked examples (Tables 2 and 3) and
//! against the formulas of 003 §6.2-6.3 for arbitrary flows.
//!
//! Every expected number is derived here from the paper's text and tables, never taken from
//! the code under test.

use mslink_link::sched::elf::{adjusted_weight, allocate, crossover, ElfFlow};
use proptest::prelude::*;

/// 003 §5: "an example wireless cell with a capacity of 800 kilobits per second".
const B: f64 = 800_000.0;
const KBIT: f64 = 1_000.0;

fn reserved(kbit: f64, p: f64, e: f64) -> ElfFlow {
    ElfFlow {
        reserved_bps: Some(kbit * KBIT),
        weight: 1.0,
        power_factor: p,
        error_rate: e,
    }
}

fn best_effort(w: f64, p: f64, e: f64) -> ElfFlow {
    ElfFlow {
        reserved_bps: None,
        weight: w,
        power_factor: p,
        error_rate: e,
    }
}

fn kbits(flows: &[ElfFlow]) -> Vec<f64> {
    allocate(B, flows)
        .iter()
        .map(|s| s.throughput_bps / KBIT)
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: flow {i}: got {g}, want {w}");
    }
}

/// Table 2: Audio reserved 8, Video reserved 350, FTP1/FTP2 best effort with equal weights.
fn table2(p_reserved: f64, p_be: f64, e: f64) -> Vec<ElfFlow> {
    vec![
        reserved(8.0, p_reserved, e),
        reserved(350.0, p_reserved, e),
        best_effort(1.0, p_be, e),
        best_effort(1.0, p_be, e),
    ]
}

#[test]
fn table2_expected_rate_column_error_free() {
    // "Expected rate": the reservations, and the FTP flows share what is left equally:
    // (800 - 8 - 350) / 2 = 221 kbit/s each.
    let ftp = (800.0 - 8.0 - 350.0) / 2.0;
    assert_eq!(ftp, 221.0);
    for p in [1.0, 2.0, 3.0, f64::INFINITY] {
        assert_close(
            &kbits(&table2(p, p, 0.0)),
            &[8.0, 350.0, ftp, ftp],
            1e-9,
            "Table 2 expected",
        );
    }
}

#[test]
fn table2_effort_fair_column_at_50_percent_errors() {
    // §5.1: "each flow receives 100% of its expected effort (air time), but errors degrade its
    // performance to only 50% of its expected outcome": half of 8 / 350 / 221 / 221.
    let want = [8.0 * 0.5, 350.0 * 0.5, 221.0 * 0.5, 221.0 * 0.5];
    assert_eq!(want, [4.0, 175.0, 110.5, 110.5]);
    assert_close(
        &kbits(&table2(1.0, 1.0, 0.5)),
        &want,
        1e-9,
        "Table 2 effort-fair",
    );
}

#[test]
fn table2_preferable_column_at_50_percent_errors() {
    // §5.1 column 6: audio and video get extra effort and meet their reservations. At a 50%
    // error rate that takes twice their error-free air time, 2 * (8 + 350) / 800; the FTP
    // flows split the rest of the air time equally and deliver half of it.
    let reserved_air = 2.0 * (8.0 + 350.0) / 800.0;
    let ftp: f64 = (1.0 - reserved_air) / 2.0 * 800.0 * 0.5;
    assert!((ftp - 21.0).abs() < 1e-12);
    for p in [2.0, 2.5, 3.0, 10.0, f64::INFINITY] {
        assert_close(
            &kbits(&table2(p, p, 0.5)),
            &[8.0, 350.0, ftp, ftp],
            1e-9,
            &format!("Table 2 preferable, P = {p}"),
        );
    }
    // "the priority-based scheduler would allocate 89% of the useful bandwidth to the
    // reserved flows".
    let t = kbits(&table2(2.0, 2.0, 0.5));
    let useful = t.iter().sum::<f64>();
    assert_eq!(((t[0] + t[1]) / useful * 100.0).floor(), 89.0);
}

#[test]
fn table2_priority_starves_ftp_beyond_55_percent_errors() {
    // §5.1: with unlimited extra effort, "if the error rate exceeded 55%, the FTP flows would
    // get no air time": the reservations alone need (8 + 350) / (1 - E) of the 800 kbit/s.
    let limit = 1.0 - (8.0 + 350.0) / 800.0;
    assert!((0.55..0.56).contains(&limit));
    let below = allocate(B, &table2(f64::INFINITY, 1.0, limit - 0.01));
    assert!(below[2].air_share > 0.0);
    let above = allocate(B, &table2(f64::INFINITY, 1.0, limit + 0.01));
    assert_eq!(above[2].air_share, 0.0);
    assert_eq!(above[3].air_share, 0.0);
}

/// Table 3: Video1 (reserved 100, E = 0), FTP1 (E = 0), Video2 (reserved 100, E = 0.5),
/// FTP2 (E = 0.5); FTP flows best effort with equal weights.
fn table3(p_reserved: f64, p_be: f64) -> Vec<ElfFlow> {
    vec![
        reserved(100.0, p_reserved, 0.0),
        best_effort(1.0, p_be, 0.0),
        reserved(100.0, p_reserved, 0.5),
        best_effort(1.0, p_be, 0.5),
    ]
}

/// Checks one Table 3 column: per-flow rates as printed (rounded to whole kbit/s), the total
/// throughput row and the efficiency row (total / 800, whole percent).
fn check_table3(flows: &[ElfFlow], column: [f64; 4], total: f64, efficiency: f64, what: &str) {
    let t = kbits(flows);
    assert_close(&t, &column, 0.5, what);
    let sum: f64 = t.iter().sum();
    // The table's total is the sum of its rounded entries.
    let printed: f64 = t.iter().map(|x| x.round()).sum();
    assert_eq!(printed, total, "{what}: total {sum}");
    assert_eq!(
        (sum / 800.0 * 100.0).round(),
        efficiency,
        "{what}: efficiency"
    );
}

#[test]
fn table3_effort_column() {
    // Effort-based WFQ (all P = 1): the videos keep 100/800 of the air each, the FTP flows
    // split the remaining 600/800 equally; station 2's flows deliver half of theirs.
    check_table3(
        &table3(1.0, 1.0),
        [100.0, 300.0, 50.0, 150.0],
        600.0,
        75.0,
        "Table 3 effort",
    );
}

#[test]
fn table3_priority_column() {
    // Reserved flows with P >= 2 meet their reservations; best effort with P = 1.
    for p in [2.0, 3.0, f64::INFINITY] {
        check_table3(
            &table3(p, 1.0),
            [100.0, 250.0, 100.0, 125.0],
            575.0,
            72.0,
            &format!("Table 3 priority, P = {p}"),
        );
    }
}

#[test]
fn table3_desirable_column() {
    // All P >= 2: both videos meet their needs and the FTP flows get equal throughput
    // (outcome fairness): the videos take 100/800 + 200/800 of the air, the FTP flows deliver
    // x each with x/800 + 2x/800 = 500/800 of air, so x = 500/3 = 166.7 kbit/s.
    let x = 500.0 / 3.0;
    for p in [2.0, 4.0, f64::INFINITY] {
        let t = kbits(&table3(p, p));
        assert_close(&t, &[100.0, x, 100.0, x], 1e-9, "Table 3 desirable (exact)");
        check_table3(
            &table3(p, p),
            [100.0, 166.7, 100.0, 166.7],
            534.0,
            67.0,
            &format!("Table 3 desirable, P = {p}"),
        );
    }
}

// ---- 003 §6.2 for arbitrary flows -------------------------------------------------------

/// Arbitrary best-effort flows: (W, P, E).
fn flows_strategy() -> impl Strategy<Value = Vec<(f64, f64, f64)>> {
    proptest::collection::vec(
        (
            0.1f64..10.0,
            prop_oneof![Just(1.0), Just(f64::INFINITY), 1.0f64..5.0],
            prop_oneof![Just(0.0), 0.0f64..0.99],
        ),
        1..8,
    )
}

fn as_flows(v: &[(f64, f64, f64)]) -> Vec<ElfFlow> {
    v.iter().map(|&(w, p, e)| best_effort(w, p, e)).collect()
}

/// Eq. (1), written out here.
fn a(w: f64, p: f64, e: f64) -> f64 {
    (w / (1.0 - e)).min(p * w)
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs()))
}

proptest! {
    #[test]
    fn throughput_is_air_time_times_success(v in flows_strategy()) {
        // T_i = (A_i / sum_j A_j * B) * (1 - E_i)
        let sum_a: f64 = v.iter().map(|&(w, p, e)| a(w, p, e)).sum();
        let got = allocate(B, &as_flows(&v));
        for (s, &(w, p, e)) in got.iter().zip(&v) {
            prop_assert!(close(s.air_share, a(w, p, e) / sum_a));
            prop_assert!(close(s.throughput_bps, a(w, p, e) / sum_a * B * (1.0 - e)));
        }
    }

    #[test]
    fn outcome_region_identity(v in flows_strategy()) {
        // A flow in its outcome region (E_i < E_c) gets T_i = W_i / sum_j A_j * B.
        let sum_a: f64 = v.iter().map(|&(w, p, e)| a(w, p, e)).sum();
        let got = allocate(B, &as_flows(&v));
        for (s, &(w, p, e)) in got.iter().zip(&v) {
            if e < (p - 1.0) / p {
                prop_assert!(close(s.throughput_bps, w / sum_a * B),
                    "{} vs {}", s.throughput_bps, w / sum_a * B);
            }
        }
    }

    #[test]
    fn same_error_rate_in_outcome_region_is_wfq_on_a_degraded_link(
        v in proptest::collection::vec((0.1f64..10.0, 1.0f64..5.0), 1..8),
        frac in 0.0f64..1.0,
    ) {
        // Everyone in the outcome region with the same E: T_i = W_i / sum W * B (1 - E).
        let p_min = v.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let e = frac * (p_min - 1.0) / p_min * 0.999;
        let flows: Vec<_> = v.iter().map(|&(w, p)| best_effort(w, p, e)).collect();
        let sum_w: f64 = v.iter().map(|x| x.0).sum();
        for (s, &(w, _)) in allocate(B, &flows).iter().zip(&v) {
            prop_assert!(close(s.throughput_bps, w / sum_w * B * (1.0 - e)));
        }
    }

    #[test]
    fn effort_region_formula(
        v in proptest::collection::vec((0.1f64..10.0, 1.0f64..5.0, 0.0f64..1.0), 1..8),
    ) {
        // Every flow beyond its crossover: T_i = P_i W_i / sum_j P_j W_j * B (1 - E_i).
        let v: Vec<(f64, f64, f64)> = v
            .into_iter()
            .map(|(w, p, u)| {
                let ec = (p - 1.0) / p;
                (w, p, ec + (0.99 - ec) * u + 1e-9)
            })
            .collect();
        let sum_pw: f64 = v.iter().map(|&(w, p, _)| p * w).sum();
        for (s, &(w, p, e)) in allocate(B, &as_flows(&v)).iter().zip(&v) {
            prop_assert!(close(s.throughput_bps, p * w / sum_pw * B * (1.0 - e)));
        }
    }

    #[test]
    fn crossover_is_where_the_cap_takes_over(w in 0.1f64..10.0, p in 1.0f64..10.0, d in 1e-6f64..0.01) {
        let ec = crossover(p);
        prop_assert!(close(ec, (p - 1.0) / p));
        // At E_c both branches of eq. (1) agree.
        prop_assert!(close(w / (1.0 - ec), p * w));
        prop_assert!(close(adjusted_weight(w, p, ec), p * w));
        // Below: outcome region, A = W / (1 - E) < P W. Above: effort region, A = P W.
        if ec - d >= 0.0 {
            let below = adjusted_weight(w, p, ec - d);
            prop_assert!(close(below, w / (1.0 - (ec - d))));
            prop_assert!(below < p * w);
        }
        prop_assert_eq!(adjusted_weight(w, p, (ec + d).min(0.999)), p * w);
    }

    #[test]
    fn max_air_time_bound(v in flows_strategy(), i in 0usize..8) {
        // "The highest fraction of the link time that flow i can take":
        // P_i W_i / (P_i W_i + sum_{j != i} W_j), reached in its effort region with every other
        // flow error-free.
        let i = i % v.len();
        let (wi, pi, _) = v[i];
        let others: f64 = v.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, f)| f.0).sum();
        let bound = if pi.is_infinite() { 1.0 } else { pi * wi / (pi * wi + others) };
        let got = allocate(B, &as_flows(&v));
        prop_assert!(got[i].air_share <= bound * (1.0 + 1e-9));
        if pi.is_finite() {
            let mut worst = v.clone();
            for (j, f) in worst.iter_mut().enumerate() {
                f.2 = if j == i { 0.995f64.max((pi - 1.0) / pi) } else { 0.0 };
            }
            let got = allocate(B, &as_flows(&worst));
            prop_assert!(close(got[i].air_share, bound), "{} vs {}", got[i].air_share, bound);
        }
    }

    #[test]
    fn reservations_are_met_in_the_outcome_region(
        g in proptest::collection::vec((1.0f64..100.0, 1.0f64..4.0, 0.0f64..1.0), 1..4),
        be in proptest::collection::vec((0.1f64..10.0, 1.0f64..4.0, 0.0f64..0.9), 0..4),
    ) {
        // 003 §6.3: with admission (sum_G W_i P_i <= 1) and E_i < E_c, T_i = B_i exactly.
        let sum_pw: f64 = g.iter().map(|&(k, p, _)| k * KBIT / B * p).sum();
        let scale = if sum_pw > 1.0 { 0.99 / sum_pw } else { 1.0 };
        let mut flows = Vec::new();
        for &(k, p, u) in &g {
            flows.push(reserved(k * scale, p, u * crossover(p) * 0.999));
        }
        flows.extend(be.iter().map(|&(w, p, e)| best_effort(w, p, e)));
        let got = allocate(B, &flows);
        for (s, f) in got.iter().zip(&flows) {
            if let Some(b) = f.reserved_bps {
                if be.is_empty() {
                    // No best-effort flow to take the rest: the reserved flows share it.
                    prop_assert!(s.throughput_bps >= b * (1.0 - 1e-9));
                } else {
                    prop_assert!(close(s.throughput_bps, b), "{} vs {}", s.throughput_bps, b);
                }
            }
        }
        let air: f64 = got.iter().map(|s| s.air_share).sum();
        prop_assert!(close(air, 1.0));
    }
}
