//! The 802.11b DCF of a wireless hop (crates/sim/src/world/dcf.rs) through the simulator:
//! closed forms for a lone ping (001 §III.A's calibration), bulk TCP against the serial
//! mean-backoff model it replaces, and determinism.

use mslink_channel::airtime::Dot11b;
use mslink_sim::{run, RunResult, Scenario};

/// One error-free 11 Mbit/s short-preamble 802.11b hop (1 µs propagation) between two hosts
/// with `nic_us` of NIC delay each, a 64-byte ping a second for `secs` seconds; `extra` is
/// appended to the hop's `dot11b` table.
fn ping(nic_us: u32, extra: &str, secs: u32, seed: u64) -> RunResult {
    let text = format!(
        "[sim]\nduration_s = {secs}\ndrain_s = 1\nseed = {seed}\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = \"wireless\"\nrate_bps = 11000000\ndelay_ms = 0.001\n\
         error = {{ model = \"perfect\" }}\n\
         dot11b = {{ preamble = \"short\", basic_rate_bps = 2000000{extra} }}\n\
         [segment.link]\nframe_size = 1500\nmtu = 1500\ncrc = false\n\
         [[segment.link.service]]\nname = \"ip\"\nscheme = \"raw\"\n\
         [[host]]\nnode = 0\nnic_delay_us = {nic_us}\n\
         [[host]]\nnode = 1\nnic_delay_us = {nic_us}\n\
         [[flow]]\nname = \"ping\"\napp = \"ping\"\nfrom = 0\nto = 1\npacket_bytes = 64\nrate_bps = 512\n"
    );
    let sc = Scenario::parse(&text).unwrap();
    sc.validate().unwrap();
    run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap()
}

fn us(d: mslink_link::Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A lone ping on an idle medium whose hosts take longer to answer than the request's SIFS +
/// MAC ACK (NIC_3's 375 µs): each way DIFS + the data frame (no backoff: the medium is idle
/// when the frame reaches the MAC), plus propagation; the MAC ACKs overlap the answering
/// host's NIC delay and the next ping, outside the round trip.
#[test]
fn a_lone_ping_takes_difs_and_the_data_frame_each_way() {
    let d = Dot11b::short_preamble();
    let r = ping(375, "", 8, 1);
    let f = &r.flows[0];
    assert_eq!((f.sent, f.received), (8, 8));
    let one_way = 375.0 + us(d.difs()) + us(d.data_frame(64)) + 1.0;
    // 375 + 50 + (96 + 100 × 8 / 11) + 1 = 594.73 µs each way.
    assert!((one_way - 594.727).abs() < 0.001, "{one_way}");
    let rtt = f.delay_mean_s * 1e6;
    assert!(
        (rtt - 2.0 * one_way).abs() < 0.002,
        "{rtt} vs {}",
        2.0 * one_way
    );
    assert!(f.delay_std_s < 1e-9, "every round trip alike");
}

/// With no NIC delay the answer is ready while the request's SIFS + MAC ACK still hold the
/// medium: by §9.2.5.2 it waits for the medium to be idle for DIFS and backs off. With
/// CWmin = 0 that backoff is zero and the round trip is DIFS + data frame + SIFS + ACK + DIFS +
/// data frame + propagation (the request's ACK inside, the reply's outside); with CWmin = 31
/// every round trip is that plus 0-31 whole slots.
#[test]
fn an_immediate_answer_finds_the_medium_busy_and_backs_off() {
    let d = Dot11b::short_preamble();
    let base = us(d.difs()) + us(d.busy(64)) + us(d.difs()) + us(d.data_frame(64)) + 1.0;
    // 50 + (168.73 + 10 + 152) + 50 + 168.73 + 1 = 600.45 µs.
    assert!((base - 600.455).abs() < 0.001, "{base}");
    let r = ping(0, ", cw_min = 0", 8, 1);
    let f = &r.flows[0];
    assert!(
        (f.delay_mean_s * 1e6 - base).abs() < 0.002,
        "{}",
        f.delay_mean_s
    );
    let r = ping(0, "", 64, 1);
    let f = &r.flows[0];
    let extra = f.delay_mean_s * 1e6 - base;
    assert!(
        (0.0..=31.0 * 20.0).contains(&extra),
        "backoff {extra} µs on average"
    );
    // Uniform over 0-31 slots: mean 310 µs, standard deviation about 185 µs.
    assert!((150.0..470.0).contains(&extra), "{extra}");
    assert!((100.0..270.0).contains(&(f.delay_std_s * 1e6)));
}

/// Same scenario and seed, same results; another seed draws other backoffs.
#[test]
fn backoffs_come_from_the_seed() {
    let a = ping(0, "", 16, 3);
    let b = ping(0, "", 16, 3);
    assert_eq!(a.flows[0].delay_mean_s, b.flows[0].delay_mean_s);
    assert_eq!(a.flows[0].delay_std_s, b.flows[0].delay_std_s);
    let c = ping(0, "", 16, 4);
    assert_ne!(a.flows[0].delay_mean_s, c.flows[0].delay_mean_s);
}

/// Bulk TCP (1460-byte segments, an ACK per segment, no NIC delay) over the hop
/// (scenarios/001/fig2_nic_delay.toml): the data sender and the ACK sender count their backoffs
/// down together, so throughput rises clearly above the serial model that charged every frame
/// DIFS + the mean backoff alone (4.85 Mbit/s), and stays below the medium's ceiling with no
/// backoff at all (DIFS before each frame only).
#[test]
fn bulk_tcp_beats_the_serial_mean_backoff_model() {
    let sc = Scenario::parse(include_str!("../../../scenarios/001/fig2_nic_delay.toml")).unwrap();
    let rate = |seed: &str| {
        let sets = [
            ("host.0.nic_delay_us", "0"),
            ("host.1.nic_delay_us", "0"),
            ("flow.0.size_bytes", "5000000"),
            ("sim.seed", seed),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let sc = sc.with_overrides(&sets).unwrap();
        sc.validate().unwrap();
        let r = run(&sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
        assert!(r.flows[0].completed);
        assert_eq!(r.flows[0].retransmits, 0, "collisions stay inside the MAC");
        r.flows[0].throughput_bps
    };
    let d = Dot11b::short_preamble();
    let bits = 1460.0 * 8.0;
    let serial = bits / (d.exchange(1500) + d.exchange(40)).as_secs_f64();
    let no_backoff = bits / (d.difs() + d.busy(1500) + d.difs() + d.busy(40)).as_secs_f64();
    assert!((serial / 1e6 - 4.85).abs() < 0.01, "{serial}");
    for seed in ["1", "2"] {
        let bps = rate(seed);
        eprintln!("seed {seed}: {bps:.0} (serial {serial:.0}, no backoff {no_backoff:.0})");
        assert!(bps > 1.05 * serial, "{bps} vs serial {serial}");
        assert!(bps < no_backoff, "{bps} vs {no_backoff}");
    }
}
