//! 004 Fig. 7-8's relations, from the scenario file in the library: Raw shows the native loss
//! (the exponential model's closed form), XOR FEC (1 parity per 12) brings 3% to about 1%,
//! Selective Repeat loses nothing and has the highest delay of the retransmission schemes,
//! Karn's and OOS RLP lose the same and OOS RLP is faster (and faster than XOR FEC on WLAN).

use mslink_sim::{run, Scenario};

fn point(sc: &Scenario, mean_bytes: u32, scheme: usize) -> mslink_sim::world::FlowResult {
    let points = sc.sweep_points().unwrap();
    let want = mean_bytes.to_string();
    let p = points
        .iter()
        .filter(|p| p[0].1 == want)
        .nth(scheme)
        .unwrap_or_else(|| panic!("no sweep point for {mean_bytes} / {scheme}"));
    let s = sc.with_overrides(p).unwrap();
    s.validate().unwrap();
    run(&s, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .remove(0)
}

#[test]
fn fig7_relations_hold_at_3_percent() {
    let text = include_str!("../../../scenarios/004/fig7_cbr_one_wlan.toml");
    let mut sc = Scenario::parse(text).unwrap();
    sc.sim.duration_s = 400.0;
    let [raw, xor, sr, karn, oos] = [0, 1, 2, 3, 4].map(|i| point(&sc, 32768, i));
    assert_eq!(
        [&raw, &xor, &sr, &karn, &oos].map(|f| f.service.as_str()),
        ["cbr"; 5]
    );
    // Raw: the native frame loss 1 - exp(-8000 / 2^18) = 3.0%, within 4 binomial sigmas.
    let p = 1.0 - (-8000.0f64 / (8.0 * 32768.0)).exp();
    let sd = (p * (1.0 - p) / raw.sent as f64).sqrt();
    assert!(
        (raw.loss_rate - p).abs() < 4.0 * sd,
        "raw {} vs {p}",
        raw.loss_rate
    );
    // XOR FEC: "the 3% native loss rate is reduced to 1%".
    assert!(
        xor.loss_rate > 0.004 && xor.loss_rate < 0.015,
        "xor {}",
        xor.loss_rate
    );
    // Selective Repeat: full recovery.
    assert_eq!(sr.loss_rate, 0.0);
    // Karn's and OOS RLP: the same recovery, so the same loss (here the same draws); well
    // below XOR FEC.
    assert_eq!(karn.loss_rate, oos.loss_rate);
    assert!(karn.loss_rate < xor.loss_rate / 3.0);
    // Delay (mean + std, 004's metric): OOS < Karn < SR; OOS faster than XOR FEC on WLAN.
    let d = |f: &mslink_sim::world::FlowResult| f.delay_mean_s + f.delay_std_s;
    assert!(d(&oos) < d(&karn), "oos {} karn {}", d(&oos), d(&karn));
    assert!(d(&karn) < d(&sr), "karn {} sr {}", d(&karn), d(&sr));
    assert!(d(&oos) < d(&xor), "oos {} xor {}", d(&oos), d(&xor));
    assert!(d(&raw) < d(&oos));
}

/// 004 Fig. 9 against Fig. 8: over two WLAN links the delay gap between Karn's RLP and OOS
/// RLP grows ("the delay for Karn's RLP increases at a faster rate than that of OOS RLP").
#[test]
fn fig9_karn_oos_gap_grows_over_two_links() {
    let d = |f: &mslink_sim::world::FlowResult| f.delay_mean_s + f.delay_std_s;
    let mut one = Scenario::parse(include_str!(
        "../../../scenarios/004/fig7_cbr_one_wlan.toml"
    ))
    .unwrap();
    let mut two = Scenario::parse(include_str!(
        "../../../scenarios/004/fig9_cbr_two_wlan.toml"
    ))
    .unwrap();
    one.sim.duration_s = 300.0;
    two.sim.duration_s = 300.0;
    for mean in [32768, 16384] {
        let gap1 = d(&point(&one, mean, 3)) - d(&point(&one, mean, 4));
        let gap2 = d(&point(&two, mean, 3)) - d(&point(&two, mean, 4));
        assert!(
            gap1 > 0.0 && gap2 > 1.5 * gap1,
            "mean {mean}: one link {gap1}, two links {gap2}"
        );
        // Selective Repeat stays the slowest retransmission scheme over two links.
        assert!(d(&point(&two, mean, 2)) > d(&point(&two, mean, 3)));
    }
}

/// Every complete scenario in docs/simulator.md (a block with `[sim]`, `[[segment]]` or
/// `[cell]`) parses and validates.
#[test]
fn simulator_doc_examples_are_valid() {
    let doc = include_str!("../../../docs/simulator.md");
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match (&mut cur, line.trim_start()) {
            (None, "```toml") => cur = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    let complete: Vec<&String> = blocks
        .iter()
        .filter(|b| b.contains("[cell]") || b.contains("[[segment]]"))
        .collect();
    assert!(!complete.is_empty());
    for b in complete {
        let s = Scenario::parse(b).unwrap_or_else(|e| panic!("{b}\n{e}"));
        s.validate().unwrap_or_else(|e| panic!("{b}\n{e}"));
    }
}
