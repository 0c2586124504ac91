//! 003 Tables 2 and 3 from the simulated poll/response cell, with ELF estimating each flow's
//! error rate from the outcomes the MAC reports: every rate within 2% of the table over a long
//! run. The expected rates are the tables' own numbers.

use mslink_sim::{run, Scenario};

fn rates(text: &str, sets: &[(&str, &str)]) -> Vec<(String, f64)> {
    let sc = Scenario::parse(text).unwrap();
    // 50,000 s = 5 M slots: the audio flow (1% of the air time) then has 50,000 attempts, so
    // binomial noise in its throughput is about 0.4%, well inside the 2% checked.
    let mut sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    sets.push(("sim.duration_s".into(), "50000".into()));
    sets.push(("sim.timeseries_window_s".into(), "0".into()));
    let sc = sc.with_overrides(&sets).unwrap();
    sc.validate().unwrap();
    run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .into_iter()
        .map(|f| (f.flow, f.throughput_bps / 1e3))
        .collect()
}

fn check(got: &[(String, f64)], want: &[f64], what: &str) {
    for ((name, g), w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 0.02 * w,
            "{what}: {name} {g:.2} kbit/s vs table {w} (got {got:?})"
        );
    }
}

#[test]
fn table2_pervasive_errors() {
    let text = include_str!("../../../scenarios/003/table2_elf_cell.toml");
    // "Preferable rate" column: reserved flows meet their reservations, FTP flows share the rest.
    check(
        &rates(text, &[]),
        &[8.0, 350.0, 21.0, 21.0],
        "Table 2 preferable",
    );
    // "Effort-fair rate" column: every power factor 1.0.
    let effort = [
        ("cell.scheduler.flows.0.power_factor", "1.0"),
        ("cell.scheduler.flows.1.power_factor", "1.0"),
        ("cell.scheduler.flows.2.power_factor", "1.0"),
        ("cell.scheduler.flows.3.power_factor", "1.0"),
    ];
    check(
        &rates(text, &effort),
        &[4.0, 175.0, 110.5, 110.5],
        "Table 2 effort-fair",
    );
}

#[test]
fn table3_location_dependent_errors() {
    let text = include_str!("../../../scenarios/003/table3_elf_cell.toml");
    // "Desirable rate" column: 100 / 166.7 / 100 / 166.7, 534 in all (67% efficiency).
    let got = rates(text, &[]);
    check(
        &got,
        &[100.0, 500.0 / 3.0, 100.0, 500.0 / 3.0],
        "Table 3 desirable",
    );
    let total: f64 = got.iter().map(|(_, r)| r).sum();
    assert!((total - 533.3).abs() < 0.02 * 533.3, "total {total}");
    // "Effort rate" column: power factors 1.0 give 100 / 300 / 50 / 150.
    let effort = [
        ("cell.scheduler.flows.0.power_factor", "1.0"),
        ("cell.scheduler.flows.1.power_factor", "1.0"),
        ("cell.scheduler.flows.2.power_factor", "1.0"),
        ("cell.scheduler.flows.3.power_factor", "1.0"),
    ];
    check(
        &rates(text, &effort),
        &[100.0, 300.0, 50.0, 150.0],
        "Table 3 effort",
    );
}

/// 003 Fig. 11: in the "walls" environment the protected flows keep their rates and the two
/// best-effort flows bear the loss equally.
#[test]
fn fig11_reserved_flows_keep_their_rates_in_the_walls_trace() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/003");
    let text = std::fs::read_to_string(dir.join("fig11_elf_walls.toml")).unwrap();
    let sc = Scenario::parse(&text)
        .unwrap()
        .with_overrides(&[
            ("sim.duration_s".into(), "5000".into()),
            ("sim.timeseries_window_s".into(), "0".into()),
        ])
        .unwrap();
    sc.validate().unwrap();
    let mut load = |f: &str| std::fs::read_to_string(dir.join(f));
    let flows = run(&sc, 0, &mut load).unwrap().flows;
    let r: Vec<f64> = flows.iter().map(|f| f.throughput_bps / 1e3).collect();
    // Audio: 1% of the link (about 5,000 frames in this run, so 4% allows for binomial noise).
    assert!((r[0] - 8.0).abs() < 0.04 * 8.0, "audio {}", r[0]);
    assert!((r[1] - 352.0).abs() < 0.02 * 352.0, "video {}", r[1]);
    assert!(
        (r[2] - r[3]).abs() < 0.02 * r[3],
        "best effort {} vs {}",
        r[2],
        r[3]
    );
    // The trace damages about 30% of frames. Error-free, the best-effort flows would share
    // 800 - 360 = 440 kbit/s; they keep less than 70% of it because the reserved flows' extra
    // air time to make up for their losses comes out of the best-effort share.
    assert!(r[2] + r[3] < 0.7 * 440.0, "best effort {} + {}", r[2], r[3]);
}
