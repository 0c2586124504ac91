//! The multi-service promise under contention (004 §V.D): a traffic class keeps the behaviour
//! it has alone while other classes load the same link. Run from 004's own multi-service
//! scenario (FTP and WWW on one service, continuous media on another, SCFQ 4 : 1 over one WLAN
//! link), with shorter transfers.
//!
//! * On a loss-free channel no service retransmits anything that had arrived, whatever shares
//!   the link: every recovery timer counts from the frame's departure (the link builds a frame
//!   only when the scheduler releases it), so waiting behind another class never looks like a
//!   loss.
//! * With loss, the media class's residual loss beside TCP stays near its value alone. Before
//!   the link bound frames late it was close to Raw's (2.2-3.3% at 3% native loss, against
//!   0.09% alone), because its repairs arrived after its receiver had given up.

use mslink_sim::world::RunResult;
use mslink_sim::{run, Scenario};

#[path = "common/wlan.rs"]
#[allow(dead_code)]
mod wlan;
use wlan::*;

fn multi() -> Scenario {
    Scenario::parse(include_str!(
        "../../../scenarios/004/fig13_fig16_fig18_multi_one_wlan.toml"
    ))
    .unwrap()
}

fn run_with(sc: &Scenario, sets: &[(&str, &str)], rep: u32) -> RunResult {
    run(&overridden(sc, sets), rep, &mut |_| {
        Err(std::io::Error::other("no traces"))
    })
    .unwrap()
}

/// Every (TCP service, media service) pair the test puts side by side: the ARQ schemes on
/// both classes, with 004's tight WLAN timers (the ones a waiting frame would trip).
const PAIRS: [(&str, &str); 5] = [
    (
        SR,
        r#"{ name = "cbr", scheme = "oos_rlp", max_retransmissions = 1, nack_interval_ms = 15, keepalive_interval_ms = 10, gap_wait_ms = 60 }"#,
    ),
    (
        KARN,
        r#"{ name = "cbr", scheme = "selective_repeat", timeout_ms = 20, nack_interval_ms = 15 }"#,
    ),
    (
        GBN,
        r#"{ name = "cbr", scheme = "karn_rlp", max_retransmissions = 1, nack_interval_ms = 15, keepalive_interval_ms = 10, gap_wait_ms = 60 }"#,
    ),
    (
        r#"{ name = "tcp", scheme = "persistent" }"#,
        r#"{ name = "cbr", scheme = "go_back_n", timeout_ms = 20 }"#,
    ),
    (SNOOP, r#"{ name = "cbr", scheme = "persistent" }"#),
];

#[test]
fn no_spurious_retransmission_on_a_loss_free_link_under_contention() {
    let sc = multi();
    for (tcp, cbr) in PAIRS {
        let svc = format!("[{tcp}, {cbr}]");
        let r = run_with(
            &sc,
            &[
                ("segment.1.error", r#"{ model = "perfect" }"#),
                ("segment.1.link.service", &svc),
                ("flow.0.size_bytes", "5000000"),
            ],
            0,
        );
        for seg in &r.segments {
            for end in &seg.ends {
                for row in &end.services {
                    let s = &row.service;
                    assert_eq!(
                        (s.spurious, s.late, s.duplicates),
                        (0, 0, 0),
                        "{} ({}) with {svc}: {s:?}",
                        row.name,
                        row.scheme
                    );
                    assert_eq!(s.retransmissions, 0, "{} with {svc}: {s:?}", row.name);
                }
            }
        }
        // Both classes moved: the FTP finished and the media flow delivered everything.
        let media = r.flows.iter().find(|f| f.flow == "media").unwrap();
        assert!(media.sent > 500, "{media:?}");
        assert_eq!(media.received, media.sent, "{svc}: {media:?}");
    }
}

/// Residual media loss (packets lost / sent, summed over `reps` runs) at one error rate.
fn media_loss(sc: &Scenario, sets: &[(&str, &str)], reps: u32) -> (u64, u64) {
    let (mut lost, mut sent) = (0, 0);
    for rep in 0..reps {
        let r = run_with(sc, sets, rep);
        let m = r.flows.iter().find(|f| f.flow == "media").unwrap();
        lost += m.sent - m.received;
        sent += m.sent;
    }
    (lost, sent)
}

/// OOS RLP media beside TCP on Selective Repeat at 004's 3% WLAN loss: measured 0.20%
/// (8 x 20 MB runs; 0.09% alone, 3.3% before late binding). The bound is the alone value's
/// order, far below the 2-3% the class lost when its repairs came too late.
#[test]
fn media_beside_tcp_keeps_most_of_its_recovery() {
    let sc = multi();
    let svc = format!("[{}, {}]", PAIRS[0].0, PAIRS[0].1);
    let (lost, sent) = media_loss(
        &sc,
        &[
            ("segment.1.error.mean_bytes", "32768"),
            ("segment.1.link.service", &svc),
            ("flow.0.size_bytes", "20000000"),
        ],
        4,
    );
    let rate = lost as f64 / sent as f64;
    eprintln!(
        "media beside SR at 3%: {lost} of {sent} lost ({:.3}%)",
        rate * 100.0
    );
    assert!(sent > 10_000);
    assert!(rate < 0.005, "{lost} of {sent}");
}
