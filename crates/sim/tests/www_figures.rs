//! 004 Figs. 5-6 (WWW browsing over one and two WLAN links) and the multi-service runs of
//! 004 §V (Figs. 13-14), run from the scenario files themselves with shorter runs and a few
//! repetitions; the relations the paper reports, with generous margins.

use std::collections::BTreeMap;

use mslink_sim::world::FlowResult;
use mslink_sim::{run, Scenario};

#[path = "common/wlan.rs"]
#[allow(dead_code)]
mod wlan;
use wlan::*;

/// The flows of `sc` with `sets` applied, for each of `reps` repetitions.
fn runs(sc: &Scenario, sets: &[(String, String)], reps: u32) -> Vec<Vec<FlowResult>> {
    let s = sc.with_overrides(sets).unwrap();
    s.validate().unwrap();
    (0..reps)
        .map(|r| {
            run(&s, r, &mut |_| Err(std::io::Error::other("no traces")))
                .unwrap()
                .flows
        })
        .collect()
}

/// Mean throughput of the flow named `flow` over the runs.
fn mean(runs: &[Vec<FlowResult>], flow: &str) -> f64 {
    let x: Vec<f64> = runs
        .iter()
        .map(|fs| fs.iter().find(|f| f.flow == flow).unwrap().throughput_bps)
        .collect();
    x.iter().sum::<f64>() / x.len() as f64
}

/// (loss, scheme) -> mean WWW throughput over `reps` runs of `secs` seconds, with the same
/// error rate and scheme on every wireless segment in `wireless`.
fn www_grid(
    sc: &Scenario,
    wireless: &[usize],
    secs: &str,
    reps: u32,
) -> BTreeMap<(&'static str, &'static str), f64> {
    let mut t = BTreeMap::new();
    for (loss, m) in WLAN_LOSS {
        for (name, svc) in SCHEMES {
            let mut sets = vec![("sim.duration_s".to_string(), secs.to_string())];
            for w in wireless {
                sets.push((format!("segment.{w}.error.mean_bytes"), m.to_string()));
                sets.push((format!("segment.{w}.link.service.0"), svc.to_string()));
            }
            let r = runs(sc, &sets, reps);
            let x = mean(&r, "www");
            let n: u64 = r.iter().map(|f| f[0].transactions).sum();
            eprintln!(
                "{} {loss} {name}: {:.3} Mbit/s ({n} transactions)",
                sc.sim.name,
                x / 1e6
            );
            t.insert((loss, name), x);
        }
    }
    t
}

/// 004 Figs. 5-6 (§III.C): SR and Karn's RLP well above Raw, Karn's RLP keeping up with SR
/// at the highest loss, Go-Back-N in between, two links lower than one. Berkeley Snoop, which
/// cannot recover lost requests and, recovering only on duplicate ACKs, few losses of short
/// replies, stays near Raw: over one link nearer Raw than SR from 1.5% on, over two links
/// "even closer to Raw" at every loss rate.
#[test]
fn fig5_fig6_www_orderings() {
    let one = Scenario::parse(include_str!(
        "../../../scenarios/004/fig5_www_one_wlan.toml"
    ))
    .unwrap();
    let two = Scenario::parse(include_str!(
        "../../../scenarios/004/fig6_www_two_wlan.toml"
    ))
    .unwrap();
    let t1 = www_grid(&one, &[1], "100", 3);
    let t2 = www_grid(&two, &[0, 2], "100", 3);
    for t in [&t1, &t2] {
        for (loss, _) in WLAN_LOSS {
            let raw = t[&(loss, "raw")];
            for s in ["sr", "karn"] {
                assert!(t[&(loss, s)] >= 1.5 * raw, "{s} well above Raw at {loss}");
                assert!(
                    t[&(loss, "snoop")] <= 0.8 * t[&(loss, s)],
                    "Snoop below {s}"
                );
            }
            assert!(
                t[&(loss, "snoop")] >= raw,
                "Snoop no worse than Raw at {loss}"
            );
            // Go-Back-N between Raw and the selective schemes.
            let best = t[&(loss, "sr")].max(t[&(loss, "karn")]);
            assert!(t[&(loss, "gbn")] > raw && t[&(loss, "gbn")] <= 1.02 * best);
        }
        // Karn's RLP keeps up with SR at the highest loss (its keepalives probe an idle link).
        assert!(t[&("5.9%", "karn")] >= 0.95 * t[&("5.9%", "sr")]);
        assert!(t[&("5.9%", "snoop")] <= 0.7 * t[&("5.9%", "sr")]);
    }
    for (loss, _) in WLAN_LOSS {
        for (s, _) in SCHEMES {
            assert!(
                t2[&(loss, s)] < t1[&(loss, s)],
                "two links lower: {s} at {loss}"
            );
        }
        // Where Snoop sits between Raw (0) and SR (1). Measured (3 x 100 s): one link 0.55,
        // 0.40, 0.27, 0.13 at 0.8-5.9%; two links 0.20, 0.11, 0.08, 0.02.
        let place = |t: &BTreeMap<_, f64>| {
            let raw = t[&(loss, "raw")];
            (t[&(loss, "snoop")] - raw) / (t[&(loss, "sr")] - raw)
        };
        if loss != "0.8%" {
            assert!(
                place(&t1) < 0.5,
                "one link: Snoop nearer Raw than SR at {loss}"
            );
        }
        assert!(place(&t2) < 0.3, "two links: Snoop close to Raw at {loss}");
        assert!(
            place(&t2) < place(&t1),
            "two links: even closer to Raw at {loss}"
        );
    }
}

/// The UDP service of the multi-service curves (OOS RLP, 1 retransmission).
const OOS: &str = r#"{ name = "cbr", scheme = "oos_rlp", max_retransmissions = 1, nack_interval_ms = 15, keepalive_interval_ms = 10, gap_wait_ms = 60 }"#;

/// (loss, TCP scheme) -> (FTP, WWW) mean throughput of a multi-service scenario (FTP of
/// 10 MB, `reps` runs), with the multi-service configuration on every segment in `wireless`.
fn multi_grid(
    sc: &Scenario,
    wireless: &[usize],
    losses: &[(&'static str, &'static str)],
    reps: u32,
) -> BTreeMap<(&'static str, &'static str), (f64, f64)> {
    let mut t = BTreeMap::new();
    for &(loss, m) in losses {
        for (name, svc) in [("raw", RAW), ("sr", SR), ("karn", KARN), ("snoop", SNOOP)] {
            let udp = if name == "raw" {
                r#"{ name = "cbr", scheme = "raw" }"#
            } else {
                OOS
            };
            let mut sets = vec![("flow.0.size_bytes".to_string(), "10000000".to_string())];
            for w in wireless {
                sets.push((format!("segment.{w}.error.mean_bytes"), m.to_string()));
                sets.push((
                    format!("segment.{w}.link.service"),
                    format!("[{svc}, {udp}]"),
                ));
            }
            let r = runs(sc, &sets, reps);
            let (ftp, www) = (mean(&r, "ftp"), mean(&r, "www"));
            let cbr = mean(&r, "media");
            eprintln!(
                "{} {loss} {name}: FTP {:.3} WWW {:.3} CBR {:.3} Mbit/s",
                sc.sim.name,
                ftp / 1e6,
                www / 1e6,
                cbr / 1e6
            );
            t.insert((loss, name), (ftp, www));
        }
    }
    t
}

/// 004 Figs. 13-14, 16-17 (§V.B-C): with FTP, WWW and CBR sharing the link, every link-layer
/// scheme gives FTP far more than Raw over one WLAN link, and Snoop's FTP is ahead of SR's and
/// Karn's RLP's while its WWW falls behind theirs ("the performance gains of Berkeley Snoop at
/// the expense of WWW browsing"); over two WLAN links Snoop stays well behind SR and Karn's
/// RLP. Measured one WLAN, FTP / WWW Mbit/s: 1.5% Snoop 3.48 / 0.73, SR 3.27 / 0.93; 3%
/// Snoop 3.53 / 0.60, SR 3.23 / 0.91.
#[test]
fn fig13_fig14_multi_service_ftp() {
    let one = Scenario::parse(include_str!(
        "../../../scenarios/004/fig13_fig16_fig18_multi_one_wlan.toml"
    ))
    .unwrap();
    let two = Scenario::parse(include_str!(
        "../../../scenarios/004/fig14_fig17_fig19_multi_two_wlan.toml"
    ))
    .unwrap();
    let losses = [("1.5%", "65536"), ("3%", "32768")];
    // Six runs: Raw TCP at 1.5% swings by a third from run to run (a few timeouts more or less).
    let t1 = multi_grid(&one, &[1], &losses, 6);
    let t2 = multi_grid(&two, &[0, 2], &losses, 2);
    for (loss, _) in losses {
        let raw1 = t1[&(loss, "raw")].0;
        let gain = if loss == "3%" { 2.0 } else { 1.3 };
        for s in ["sr", "karn", "snoop"] {
            assert!(
                t1[&(loss, s)].0 >= gain * raw1,
                "one WLAN: {s} FTP at {loss}"
            );
        }
        for s in ["sr", "karn"] {
            assert!(
                t1[&(loss, "snoop")].0 > t1[&(loss, s)].0,
                "Snoop FTP vs {s} at {loss}"
            );
            assert!(
                t1[&(loss, "snoop")].1 < 0.9 * t1[&(loss, s)].1,
                "Snoop WWW vs {s} at {loss}"
            );
        }
        // Snoop recovers over the receiver's link only: well behind SR and Karn's RLP, the
        // more so as loss grows (at 1.5% ours gains more over Raw than 004's "marginal").
        // (3%: 0.43 of SR once the base stations' local timers fire, see world.rs `arm`.)
        let share = if loss == "3%" { 0.5 } else { 0.8 };
        for s in ["sr", "karn"] {
            assert!(
                t2[&(loss, "snoop")].0 <= share * t2[&(loss, s)].0,
                "two WLAN: Snoop vs {s} FTP at {loss}"
            );
            assert!(t2[&(loss, s)].0 >= 2.0 * t2[&(loss, "raw")].0);
        }
    }
}

/// Every 004 WWW, multi-service and HSCSD file parses, validates and expands its sweep (run in
/// full by `mslink reproduce`, claims/004.toml).
#[test]
fn www_and_multi_service_scenarios_validate() {
    for text in [
        include_str!("../../../scenarios/004/fig5_www_one_wlan.toml"),
        include_str!("../../../scenarios/004/fig6_www_two_wlan.toml"),
        include_str!("../../../scenarios/004/fig13_fig16_fig18_multi_one_wlan.toml"),
        include_str!("../../../scenarios/004/fig14_fig17_fig19_multi_two_wlan.toml"),
        include_str!("../../../scenarios/004/fig15_fig20_multi_two_hscsd.toml"),
        include_str!("../../../scenarios/004/www_one_hscsd.toml"),
        include_str!("../../../scenarios/004/www_two_hscsd.toml"),
        include_str!("../../../scenarios/004/cbr_one_hscsd.toml"),
        include_str!("../../../scenarios/004/fig10_cbr_two_hscsd.toml"),
    ] {
        let sc = Scenario::parse(text).unwrap();
        sc.validate().unwrap();
        for p in sc.sweep_points().unwrap() {
            sc.with_overrides(&p).unwrap().validate().unwrap();
        }
    }
}

/// 004 Fig. 15 (§V.D): FTP with WWW and speech over two HSCSD links. "Karn's RLP lags behind
/// Selective Repeat, while Berkeley Snoop is closer to Raw Link", both far below the two
/// fully recovering schemes. (Until 2026-11-24 the file's `mtu = 94` made Selective Repeat
/// segment, which cut its window to 15 frames, below the hop's bandwidth-delay product, and
/// SR fell behind Karn's RLP.) Measured at 500 KB, FTP kbit/s: 2% Raw 3.2, SR 17.6, Karn
/// 16.4, Snoop 4.6; 10% 0.3, 9.3, 7.2, 0.4.
#[test]
fn fig15_two_hscsd_multi_service_ftp() {
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/004/fig15_fig20_multi_two_hscsd.toml"
    ))
    .unwrap();
    let oos = r#"{ name = "cbr", scheme = "oos_rlp", max_retransmissions = 1 }"#;
    let schemes = [
        (
            "raw",
            r#"{ name = "tcp", scheme = "raw" }"#.to_string(),
            r#"{ name = "cbr", scheme = "raw" }"#,
        ),
        (
            "sr",
            r#"{ name = "tcp", scheme = "selective_repeat" }"#.to_string(),
            oos,
        ),
        (
            "karn",
            r#"{ name = "tcp", scheme = "karn_rlp", max_retransmissions = 3 }"#.to_string(),
            oos,
        ),
        (
            "snoop",
            r#"{ name = "tcp", scheme = "snoop" }"#.to_string(),
            oos,
        ),
    ];
    for loss in ["0.02", "0.10"] {
        let mut ftp = BTreeMap::new();
        for (name, tcp, udp) in &schemes {
            let mut sets = vec![("flow.0.size_bytes".to_string(), "500000".to_string())];
            for seg in [0, 2] {
                sets.push((format!("segment.{seg}.error.loss"), loss.to_string()));
                sets.push((
                    format!("segment.{seg}.link.service"),
                    format!("[{tcp}, {udp}]"),
                ));
            }
            let x = mean(&runs(&sc, &sets, 1), "ftp");
            eprintln!("004-fig15 {loss} {name}: FTP {:.1} kbit/s", x / 1e3);
            ftp.insert(*name, x);
        }
        assert!(
            ftp["sr"] > ftp["karn"],
            "Karn's RLP lags behind SR at {loss}"
        );
        assert!(
            ftp["karn"] >= 3.0 * ftp["raw"],
            "Karn's RLP vs Raw at {loss}"
        );
        assert!(
            ftp["snoop"] <= 0.4 * ftp["sr"],
            "Snoop close to Raw at {loss}"
        );
    }
}
