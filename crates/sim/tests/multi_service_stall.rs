//! Regression: 004 Figs. 15/20's multi-service run with Snoop at the base stations and OOS
//! RLP (k = 1) for speech, at 10% loss. Snoop's local timer once came out in the past, the
//! simulator then never armed another timer of that link end, and the speech service's OOS
//! RLP receiver stopped NACKing and giving up gaps: its sender's window stayed full and the
//! speech stopped after about 1,350 of 8,492 packets. The same run with Raw for TCP is the
//! control: the speech must get through about as well with Snoop beside it.

use mslink_sim::{run, Scenario};

/// Speech packets (sent, received) for the sweep point with 10% loss and TCP curve `curve`.
/// Snoop's local timer is set to guard every cached segment (`all_segments`), the setting
/// under which it fired the most and the stall was found; the default guards only Snoop's own
/// retransmissions and fires far less.
fn speech(sc: &Scenario, curve: usize) -> (u64, u64) {
    let points = sc.sweep_points().unwrap();
    let mut p = points
        .iter()
        .filter(|p| p[0].1.parse::<f64>() == Ok(0.1))
        .nth(curve)
        .unwrap_or_else(|| panic!("no sweep point for curve {curve}"))
        .clone();
    for (_, value) in p.iter_mut() {
        *value = value.replace(
            r#"scheme = "snoop""#,
            r#"scheme = "snoop", local_timer = "all_segments""#,
        );
    }
    let all = p.iter().any(|(_, v)| v.contains("all_segments"));
    assert_eq!(all, curve == 3, "curve 3, and only it, is Snoop");
    p.push(("flow.0.size_bytes".into(), "500000".into()));
    p.push(("sim.duration_s".into(), "1000".into()));
    let s = sc.with_overrides(&p).unwrap();
    s.validate().unwrap();
    let f = run(&s, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .into_iter()
        .find(|f| f.flow == "speech")
        .expect("a speech flow");
    (f.sent, f.received)
}

#[test]
fn speech_keeps_flowing_beside_snoop() {
    let sc = Scenario::parse(include_str!(
        "../../../scenarios/004/fig15_fig20_multi_two_hscsd.toml"
    ))
    .unwrap();
    // Curves: 0 Raw (Raw), 1 SR (OOS RLP), 2 Karn (OOS RLP), 3 Snoop (OOS RLP).
    let (sent_snoop, got_snoop) = speech(&sc, 3);
    let (sent_sr, got_sr) = speech(&sc, 1);
    assert!(sent_snoop > 5000, "speech offered over the whole run");
    // Two 10%-loss links with one retransmission each lose about 2 * 0.1^2 = 2% end to end;
    // allow generous slack for queueing, but a stalled sender loses most of the speech.
    let ratio = |got: u64, sent: u64| got as f64 / sent as f64;
    assert!(
        ratio(got_snoop, sent_snoop) > 0.9,
        "speech beside Snoop: {got_snoop} of {sent_snoop}"
    );
    assert!(
        ratio(got_snoop, sent_snoop) > ratio(got_sr, sent_sr) - 0.05,
        "Snoop {got_snoop}/{sent_snoop} vs SR {got_sr}/{sent_sr}"
    );
}
