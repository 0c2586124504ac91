//! The ping and spray applications against closed forms.

use mslink_sim::{run, Scenario};

fn one_flow(text: &str) -> mslink_sim::world::FlowResult {
    let sc = Scenario::parse(text).unwrap();
    sc.validate().unwrap();
    run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
        .remove(0)
}

/// Over an error-free wired (10 Mbit/s, 1 ms) + WLAN (5 Mbit/s, 3 ms) path, a 100-byte echo
/// and its reply each take 100 B / 10 Mbit/s + 1 ms + 104 B / 5 Mbit/s + 3 ms one way (the
/// wireless frame adds a 4-byte CRC and, with one Raw service whose packets fit a frame,
/// nothing else): 8.4928 ms.
#[test]
fn ping_measures_the_round_trip() {
    let f = one_flow(
        "[sim]\nduration_s = 10\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 10000000\ndelay_ms = 1\n\
         [[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\n[segment.link]\nmtu = 996\n\
         [[flow]]\nname = \"ping\"\napp = \"ping\"\nfrom = 0\nto = 2\nrate_bps = 8000\npacket_bytes = 100\n",
    );
    let one_way = 100.0 * 8.0 / 10e6 + 1e-3 + 104.0 * 8.0 / 5e6 + 3e-3;
    assert_eq!(f.sent, 100);
    assert_eq!(f.received, 100);
    assert!(
        (f.delay_mean_s - 2.0 * one_way).abs() < 1e-8,
        "rtt {} vs {}",
        f.delay_mean_s,
        2.0 * one_way
    );
    assert!(f.delay_std_s < 1e-8);
}

/// UDP spray over one WLAN hop losing 10% of frames independently: packets go out at the line
/// rate, the MAC carries frames of packet + 4 bytes, so arrivals are
/// 5 Mbit/s * 0.9 * 996 / 1000 of payload-carrying bits.
#[test]
fn spray_gets_the_link_rate_after_losses() {
    let f = one_flow(
        "[sim]\nduration_s = 100\ndrain_s = 0\n\
         [[segment]]\nkind = \"wireless\"\npreset = \"wlan\"\nerror = { model = \"independent\", loss = 0.1 }\n\
         [segment.link]\nmtu = 996\n\
         [[flow]]\nname = \"spray\"\napp = \"spray\"\nfrom = 0\nto = 1\npacket_bytes = 996\n",
    );
    let want = 5e6 * 0.9 * 996.0 / 1000.0;
    assert!(
        (f.throughput_bps - want).abs() < 0.01 * want,
        "spray {} vs {}",
        f.throughput_bps,
        want
    );
}
