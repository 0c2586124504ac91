//! 004 Table I through the simulator: the HSCSD link's independent losses come out at exactly
//! their configured rates in expectation, and the WLAN link's exponential error intervals give
//! Table I's measured frame loss rates within 5% (Table I prints one decimal of a percentage,
//! so "0.8%" stands for anything in [0.75%, 0.85%)).

use mslink_sim::{run, Scenario};

fn losses(text: &str) -> Vec<(f64, f64, u64)> {
    let sc = Scenario::parse(text).unwrap();
    sc.sweep_points()
        .unwrap()
        .iter()
        .map(|p| {
            let s = sc.with_overrides(p).unwrap();
            s.validate().unwrap();
            let f = run(&s, 0, &mut |_| Err(std::io::Error::other("no traces")))
                .unwrap()
                .flows
                .remove(0);
            (p[0].1.parse::<f64>().unwrap(), f.loss_rate, f.sent)
        })
        .collect()
}

#[test]
fn hscsd_losses_are_the_configured_rates() {
    for (p, got, n) in losses(include_str!("../../../scenarios/004/table1_hscsd.toml")) {
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (got - p).abs() < 4.0 * sd,
            "HSCSD p = {p}: measured {got} (sd {sd})"
        );
    }
}

#[test]
fn wlan_losses_match_table_1() {
    let table = [
        (131072.0, 0.008),
        (65536.0, 0.015),
        (32768.0, 0.03),
        (16384.0, 0.059),
    ];
    for ((mean, got, n), (m, t)) in losses(include_str!("../../../scenarios/004/table1_wlan.toml"))
        .into_iter()
        .zip(table)
    {
        assert_eq!(mean, m);
        let nearest = got.clamp(t - 0.0005, t + 0.0005);
        assert!(
            (got - nearest).abs() / nearest < 0.05,
            "WLAN mean {mean} B: measured {got} vs Table I {t}"
        );
        // And the closed form for 1000-byte frames, within 4 binomial sigmas.
        let p = 1.0 - (-8000.0 / (8.0 * mean)).exp();
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (got - p).abs() < 4.0 * sd,
            "WLAN mean {mean} B: measured {got} vs {p}"
        );
    }
}
