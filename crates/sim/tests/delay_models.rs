//! Jitter, reordering and on/off outages on simulator segments, wired and wireless (issue 17):
//! the delay models are `mslink_channel::delay`, the emulator's.

use mslink_sim::world::FlowResult;
use mslink_sim::{run, Scenario};

/// A CBR flow of 200-byte packets every 2 ms over one segment of `kind` with `extra` keys.
fn cbr(kind: &str, extra: &str) -> FlowResult {
    let text = format!(
        "[sim]\nduration_s = 10\ndrain_s = 2\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = '{kind}'\nrate_bps = 10000000\ndelay_ms = 20\n{extra}\n\
         [[flow]]\nname = 'cbr'\napp = 'constant'\nfrom = 0\nto = 1\nrate_bps = 800000\npacket_bytes = 200\n"
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
