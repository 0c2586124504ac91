//! 004 Figs. 2-4 and 003 Figs. 1 and 3 through the simulator: the relations the papers
//! report, run from the scenario files themselves (smaller transfers, a few repetitions).

use std::collections::BTreeMap;

use mslink_sim::{run, Scenario};

#[path = "common/wlan.rs"]
#[allow(dead_code)]
mod wlan;
use wlan::*;

/// Mean throughput (bit/s) of flow 0 of `sc` with `sets` applied, over `reps` repetitions.
fn mean_throughput(sc: &Scenario, sets: &[(&str, &str)], reps: u32) -> f64 {
    let s = overridden(sc, sets);
    (0..reps)
        .map(|r| {
            let f = run(&s, r, &mut |_| Err(std::io::Error::other("no traces")))
                .unwrap()
                .flows
                .remove(0);
            assert!(f.completed, "{sets:?} rep {r} did not finish");
            f.throughput_bps
        })
        .sum::<f64>()
        / reps as f64
}

/// (loss, scheme) -> mean throughput over 3 repetitions of a 10 MB transfer, with the same
/// error rate and scheme on every wireless segment in `wireless`.
fn wlan_grid(sc: &Scenario, wireless: &[usize]) -> BTreeMap<(&'static str, &'static str), f64> {
    let mut t = BTreeMap::new();
    for (loss, mean) in WLAN_LOSS {
        for (name, svc) in SCHEMES {
            let mut keys = Vec::new();
            for w in wireless {
                keys.push((format!("segment.{w}.error.mean_bytes"), mean));
                keys.push((format!("segment.{w}.link.service.0"), svc));
            }
            let mut sets: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            sets.push(("flow.0.size_bytes", "10000000"));
            let x = mean_throughput(sc, &sets, 3);
            eprintln!("{} {loss} {name}: {:.3} Mbit/s", sc.sim.name, x / 1e6);
            t.insert((loss, name), x);
        }
    }
    t
}

/// 004 Fig. 2 (§III.B): from 0.8% to 1.5% frame loss Raw TCP loses about 30%; Selective
/// Repeat and Karn's RLP recover most of it (at 1.5% they beat Raw at 0.8%); every
/// retransmitting scheme is above Raw, and Raw falls with each step of loss.
#[test]
fn fig2_one_wlan_orderings() {
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/004/fig2_ftp_one_wlan.toml"
    ))
    .unwrap();
    let t = wlan_grid(&sc, &[1]);
    let drop = 1.0 - t[&("1.5%", "raw")] / t[&("0.8%", "raw")];
    assert!(
        (0.2..=0.4).contains(&drop),
        "Raw loses {drop:.2} from 0.8% to 1.5%"
    );
    for s in ["sr", "karn"] {
        assert!(
            t[&("1.5%", s)] >= t[&("0.8%", "raw")],
            "{s} recovers the loss"
        );
        assert!(
            t[&("5.9%", s)] >= 0.85 * t[&("0.8%", s)],
            "{s} holds up at 5.9%"
        );
    }
    for (loss, _) in WLAN_LOSS {
        for s in ["gbn", "sr", "karn"] {
            assert!(t[&(loss, s)] > t[&(loss, "raw")], "{s} above Raw at {loss}");
        }
        assert!(
            t[&(loss, "sr")] >= 0.99 * t[&(loss, "karn")],
            "SR at least Karn at {loss}"
        );
    }
    for w in WLAN_LOSS.windows(2) {
        assert!(t[&(w[1].0, "raw")] < t[&(w[0].0, "raw")]);
    }
    // Berkeley Snoop at the base station: nearly equal to SR and Karn's RLP at modest loss,
    // clearly above Raw at 1.5%, and not ahead of the most persistent scheme at the highest.
    for loss in ["0.8%", "1.5%"] {
        for s in ["sr", "karn"] {
            let r = t[&(loss, "snoop")] / t[&(loss, s)];
            assert!((0.95..=1.05).contains(&r), "Snoop/{s} = {r:.2} at {loss}");
        }
    }
    assert!(t[&("1.5%", "snoop")] >= 1.5 * t[&("1.5%", "raw")]);
    assert!(t[&("5.9%", "snoop")] <= t[&("5.9%", "sr")]);
}

/// 004 Fig. 3: over two WLAN links Raw suffers both links' losses (below its Fig. 2 values);
/// Selective Repeat and Karn's RLP, retransmitting on both links, gain a lot (at least twice
/// Raw's throughput from 1.5% loss on). Berkeley Snoop, which can only retransmit toward the
/// receiving host (over the second link), gains little: at most 60% of what SR and Karn's
/// RLP reach from 1.5% loss on.
#[test]
fn fig3_two_wlan_orderings() {
    let one = Scenario::parse(include_str!(
        "../../../scenarios/004/fig2_ftp_one_wlan.toml"
    ))
    .unwrap();
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/004/fig3_ftp_two_wlan.toml"
    ))
    .unwrap();
    let t = wlan_grid(&sc, &[0, 2]);
    eprintln!("GRID {t:?}");
    for (loss, mean) in WLAN_LOSS {
        for s in ["sr", "karn"] {
            assert!(t[&(loss, s)] > t[&(loss, "raw")]);
            if loss != "0.8%" {
                assert!(t[&(loss, s)] >= 2.0 * t[&(loss, "raw")], "{s} at {loss}");
                // Measured: Snoop reaches 0.38, 0.16, 0.04 of SR at 1.5%, 3%, 5.9%: "only
                // minor improvements over Raw Link, similar to those of Go Back N" (ours
                // stays below our Go-Back-N, which does better than 004's).
                assert!(
                    t[&(loss, "snoop")] <= 0.5 * t[&(loss, s)],
                    "Snoop vs {s} at {loss}"
                );
                assert!(
                    t[&(loss, "snoop")] <= t[&(loss, "gbn")],
                    "Snoop vs GBN at {loss}"
                );
            }
        }
        let single = mean_throughput(
            &one,
            &[
                ("flow.0.size_bytes", "10000000"),
                ("segment.1.error.mean_bytes", mean),
            ],
            3,
        );
        assert!(
            t[&(loss, "raw")] < single,
            "two links hurt Raw more at {loss}"
        );
    }
}

/// 004 Fig. 4: one HSCSD link (86.4 kbit/s, 100 ms, 100-byte frames, independent loss):
/// Selective Repeat, Karn's RLP and Snoop (at the base station) stay well above Raw at every
/// loss rate and within the link's payload rate (86.4 kbit/s * 54 / 100 for 54-byte segments
/// in 100-byte frames). Snoop, with no frame overhead, is best at 1% and "deteriorates at
/// higher loss rates due to the loss of duplicate TCP ACKs" (004 §III.B): its share of SR's
/// throughput falls as loss grows.
#[test]
fn fig4_one_hscsd_orderings() {
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/004/fig4_ftp_one_hscsd.toml"
    ))
    .unwrap();
    let svc = |s: &str| format!("{{ name = \"tcp\", scheme = \"{s}\" }}");
    let mut share = Vec::new();
    for loss in ["0.01", "0.02", "0.05", "0.1"] {
        let mut t = BTreeMap::new();
        for s in ["raw", "go_back_n", "selective_repeat", "karn_rlp", "snoop"] {
            let x = mean_throughput(
                &sc,
                &[
                    ("flow.0.size_bytes", "300000"),
                    ("segment.1.error.loss", loss),
                    ("segment.1.link.service.0", &svc(s)),
                ],
                2,
            );
            eprintln!("fig4 {loss} {s}: {:.1} kbit/s", x / 1e3);
            t.insert(s, x);
        }
        for s in ["selective_repeat", "karn_rlp", "snoop"] {
            assert!(t[s] >= 1.5 * t["raw"], "{s} at {loss}");
            assert!(t[s] <= 86_400.0 * 54.0 / 100.0);
        }
        share.push(t["snoop"] / t["selective_repeat"]);
        if loss == "0.01" {
            assert!(t["snoop"] >= t["selective_repeat"] && t["snoop"] >= t["karn_rlp"]);
        }
    }
    assert!(
        share.windows(2).all(|w| w[1] < w[0]),
        "Snoop's share of SR falls with loss: {share:?}"
    );
}

/// 003 Fig. 1 and Fig. 3 (§3.1). Without local retransmission, single drops per hundred cost
/// little, a burst of two brings a timeout and halves throughput, and as bursts outgrow the
/// 8 KB window (five segments) they swallow the timeout's retransmission as well, so the timer
/// backs off and TCP collapses. With persistent local retransmission the throughput follows
/// the link's remaining capacity, (1 - loss) times the error-free rate, within 6%, all the way
/// to 83% loss; at 5% loss it is far above TCP alone at 5%.
#[test]
fn fig003_persistent_retransmission_hides_loss() {
    let f1 = Scenario::parse(include_str!("../../../scenarios/003/fig1_tcp_bursts.toml")).unwrap();
    let pattern = |good: u32, bad: u32| {
        format!("{{ model = \"pattern\", min_bytes = 200, good = {good}, bad = {bad} }}")
    };
    let raw: Vec<f64> = (0..=8)
        .map(|k| {
            let x = mean_throughput(&f1, &[("segment.0.error", &pattern(100 - k, k))], 1);
            eprintln!("003 fig1 {k}%: {:.1} kbit/s", x / 1e3);
            x
        })
        .collect();
    assert!(raw[1] >= 0.9 * raw[0], "single drops are handled");
    assert!(
        raw[2] <= 0.65 * raw[0],
        "two-packet bursts halve throughput"
    );
    for k in 3..=8 {
        assert!(
            raw[k] <= 1.03 * raw[k - 1],
            "{k}%: no recovery with more loss"
        );
    }
    assert!(
        raw[6] <= 0.4 * raw[0],
        "bursts longer than the window: collapse"
    );
    assert!(raw[8] <= 0.15 * raw[0], "8% in bursts of eight");
    let f3 = Scenario::parse(include_str!(
        "../../../scenarios/003/fig3_tcp_persistent.toml"
    ))
    .unwrap();
    let clean = mean_throughput(&f3, &[("segment.0.error", "{ model = \"perfect\" }")], 1);
    for w in [100u32, 50, 25, 12, 6] {
        let loss = 5.0 / w as f64;
        let x = mean_throughput(&f3, &[("segment.0.error", &pattern(w - 5, 5))], 1);
        let want = (1.0 - loss) * clean;
        eprintln!(
            "003 fig3 {:.0}%: {:.1} kbit/s (linear: {:.1})",
            loss * 100.0,
            x / 1e3,
            want / 1e3
        );
        assert!(
            (x - want).abs() <= 0.06 * want,
            "{:.0}% loss: {x} vs {want}",
            loss * 100.0
        );
        if w == 100 {
            assert!(x >= 1.5 * raw[5], "local retransmission vs TCP alone at 5%");
        }
    }
    // At 83% the result must not hinge on the TCP window: with empty keepalives the link's
    // poll/retransmission rhythm phase-locked with the five-in-six pattern at a 10 KB window
    // and TCP moved 0.56 kbit/s (persistent.rs). Measured now: 123, 122, 122, 123 kbit/s.
    let want = clean / 6.0;
    for buf in ["8192", "10240", "16384", "32768"] {
        let x = mean_throughput(
            &f3,
            &[
                ("segment.0.error", &pattern(1, 5)),
                ("flow.0.tcp.recv_buffer_bytes", buf),
                ("flow.0.tcp.send_buffer_bytes", buf),
            ],
            1,
        );
        assert!(
            x >= 0.8 * want,
            "83% loss, {buf}-byte buffers: {x} vs {want}"
        );
    }
}

/// 003 Figs. 6-7 (§3.2.3): 400 good data frames then 100 lost, over persistent local
/// retransmission. The burst holds every packet back for more than a second, so TCP's timer
/// fires and TCP resends packets the link delivers anyway, but those redundant packets stay a
/// few percent of the transfer (003: about 3%) and TCP keeps most of the link's remaining
/// capacity (003: 80% of it).
#[test]
fn fig003_competing_retransmissions_cost_little() {
    let f6 = Scenario::parse(include_str!(
        "../../../scenarios/003/fig6_competing_retransmission.toml"
    ))
    .unwrap();
    let clean = mean_throughput(&f6, &[("segment.0.error", "{ model = \"perfect\" }")], 1);
    let f = run(&f6, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .remove(0);
    assert!(f.completed);
    let available = 0.8 * clean;
    let redundant = f.duplicates as f64 / f.received as f64;
    eprintln!(
        "003 fig6: {:.1} kbit/s of {:.1} available, {} timeouts, {:.1}% redundant",
        f.throughput_bps / 1e3,
        available / 1e3,
        f.timeouts,
        redundant * 100.0
    );
    assert!(f.timeouts >= 3, "the bursts must set off TCP's timer");
    assert!(redundant > 0.0 && redundant <= 0.08, "{redundant}");
    assert!(
        f.throughput_bps >= 0.75 * available && f.throughput_bps <= 1.03 * available,
        "{} vs {available}",
        f.throughput_bps
    );
}
