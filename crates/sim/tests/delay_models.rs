//! Jitter, reordering and on/off outages on simulator segments, wired and wireless (issue 17):
//! the delay models are `mslink_channel::delay`, the emulator's.

use mslink_sim::world::FlowResult;
use mslink_sim::{run, Scenario};

/// A CBR flow of 200-byte packets every 2 ms over one segment of `kind` with `extra` keys.
fn cbr(kind: &str, extra: &str) -> FlowResult {
    cbr_at(kind, extra, 800_000)
}

/// A CBR flow of 200-byte packets at `rate_bps` over one segment of `kind` with `extra` keys.
fn cbr_at(kind: &str, extra: &str, rate_bps: u32) -> FlowResult {
    let text = format!(
        "[sim]\nduration_s = 10\ndrain_s = 2\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = '{kind}'\nrate_bps = 10000000\ndelay_ms = 20\n{extra}\n\
         [[flow]]\nname = 'cbr'\napp = 'constant'\nfrom = 0\nto = 1\nrate_bps = {rate_bps}\npacket_bytes = 200\n"
    );
    let sc = Scenario::parse(&text).unwrap();
    sc.validate().unwrap();
    let mut r = run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
    r.flows.remove(0)
}

#[test]
fn jitter_spreads_delay_on_both_kinds_of_segment() {
    for kind in ["wired", "wireless"] {
        let fixed = cbr(kind, "");
        let jittered = cbr(
            kind,
            "jitter_ms = 5\njitter_dist = 'uniform'\nreorder = true",
        );
        assert!(fixed.delay_std_s < 1e-4, "{kind}: {fixed:?}");
        // Uniform with deviation 5 ms: the delays' deviation is about 5 ms.
        assert!(
            (jittered.delay_std_s - 0.005).abs() < 0.001,
            "{kind}: {}",
            jittered.delay_std_s
        );
        assert_eq!(jittered.received, fixed.received, "{kind}: nothing lost");
    }
}

#[test]
fn percentiles_and_rfc3550_jitter_follow_the_jitter_distribution() {
    // Uniform jitter of deviation 5 ms is uniform over +-a, a = 5 ms * sqrt(3), around the
    // fixed delay: the p-th percentile is a * (2p - 1) above it.
    let a = 0.005 * 3f64.sqrt();
    let fixed = cbr("wired", "");
    let j = cbr(
        "wired",
        "jitter_ms = 5\njitter_dist = 'uniform'\nreorder = true",
    );
    let base = fixed.delay_p50_s;
    assert!(
        (fixed.delay_p99_s - base).abs() <= 0.01 * base && fixed.jitter_s < 1e-6,
        "{fixed:?}"
    );
    for (p, got) in [
        (0.50, j.delay_p50_s),
        (0.95, j.delay_p95_s),
        (0.99, j.delay_p99_s),
    ] {
        let expect = base + a * (2.0 * p - 1.0);
        // The sketch is within 1% of the order statistic; 5,000 packets add about 0.2 ms.
        assert!((got - expect).abs() < 0.0006, "p{p}: {got} vs {expect}");
    }
    // RFC 3550's jitter estimates E|D1 - D2| of consecutive arrivals. Packets 40 ms apart
    // (more than 2a) arrive in order, with independent delays: 2a/3. The EWMA of gain 1/16
    // over |D| (deviation a * sqrt(2) / 3) wanders by about a fifth of that.
    let sparse = cbr_at(
        "wired",
        "jitter_ms = 5\njitter_dist = 'uniform'\nreorder = true",
        40_000,
    );
    assert!(
        (sparse.jitter_s - 2.0 * a / 3.0).abs() < 0.0015,
        "jitter {} vs {}",
        sparse.jitter_s,
        2.0 * a / 3.0
    );
    // 2 ms apart, many are reordered: consecutive arrivals have closer delays.
    assert!(
        j.jitter_s < sparse.jitter_s,
        "{} {}",
        j.jitter_s,
        sparse.jitter_s
    );
}

#[test]
fn outages_put_a_tail_on_the_delay() {
    // Off 100 ms in every 500: a fifth of the packets wait up to 100 ms, the rest none.
    let on = cbr("wired", "");
    let off = cbr(
        "wired",
        "onoff = { on_ms = 400, off_ms = 100, dist = 'fixed' }",
    );
    assert!((off.delay_p50_s - on.delay_p50_s).abs() < 0.001, "{off:?}");
    assert!(off.delay_p95_s > on.delay_p95_s + 0.05, "{off:?}");
    assert!(off.delay_p99_s > off.delay_p95_s, "{off:?}");
}

#[test]
fn outages_delay_but_do_not_drop() {
    for kind in ["wired", "wireless"] {
        let on = cbr(kind, "");
        let off = cbr(
            kind,
            "onoff = { on_ms = 400, off_ms = 100, dist = 'fixed' }",
        );
        // A fifth of the time off: packets wait (up to 100 ms) and all arrive.
        assert_eq!(off.received, on.received, "{kind}");
        assert!(
            off.delay_mean_s > on.delay_mean_s + 0.005,
            "{kind}: {} vs {}",
            off.delay_mean_s,
            on.delay_mean_s
        );
    }
}

/// Drop mode, as mm-onoff: what arrives while off is lost, counted by the segment
/// (`outage_drops`), and only in the direction asked for.
#[test]
fn outages_in_drop_mode_lose_what_arrives_while_off() {
    for kind in ["wired", "wireless"] {
        let run_with = |onoff: &str| {
            let text = format!(
                "[sim]\nduration_s = 10\ndrain_s = 2\ntimeseries_window_s = 0\n\
                 [[segment]]\nkind = '{kind}'\nrate_bps = 10000000\ndelay_ms = 20\n\
                 onoff = {{ on_ms = 400, off_ms = 100, dist = 'fixed', {onoff} }}\n\
                 [[flow]]\nname = 'cbr'\napp = 'constant'\nfrom = 0\nto = 1\n\
                 rate_bps = 800000\npacket_bytes = 200\n"
            );
            let sc = Scenario::parse(&text).unwrap();
            sc.validate().unwrap();
            run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap()
        };
        let r = run_with("mode = 'drop'");
        let f = &r.flows[0];
        let drops = r.segments[0].directions[0].outage_drops;
        // A fifth of the time off: about a fifth of the packets lost, each counted once.
        assert_eq!(f.sent - f.received, drops, "{kind}: {f:?}");
        let fifth = f.sent as f64 / 5.0;
        assert!(
            (drops as f64 - fifth).abs() < 0.05 * fifth,
            "{kind}: {drops} of {}",
            f.sent
        );
        // The flow's reverse direction has the outages: nothing of the flow is lost.
        let r = run_with("mode = 'drop', direction = 'downlink'");
        assert_eq!(r.flows[0].received, r.flows[0].sent, "{kind}");
        assert_eq!(r.segments[0].directions[0].outage_drops, 0, "{kind}");
    }
}

#[test]
fn queue_keys_are_refused_on_wireless_segments() {
    let text = "[[segment]]\nkind = 'wireless'\nqueue = 'codel'\n[[flow]]\nname = 'x'\napp = 'constant'\nfrom = 0\nto = 1\n";
    let e = Scenario::parse(text)
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("segment[0].queue"), "{e}");
}
