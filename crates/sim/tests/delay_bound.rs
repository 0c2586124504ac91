//! The scheduler's delay bound holds (`crates/sim/src/budget.rs`, `mslink_link::budget`):
//! on loss-free links (one or two wireless hops; SCFQ, WFQ or ELF), whatever the shares and
//! loads, a real-time class whose framed peak
//! fits its share has a 95th-percentile delay beside a backlogged bulk class no more than its
//! 95th percentile alone plus the bound the scenario reports; and where the peak does not
//! fit, the scenario says so in a note and reports no bound.

use mslink_sim::{run, Scenario};
use proptest::prelude::*;

/// A wired LAN and `hops` WLAN-like hops (`rate` bit/s, 3 ms, 1000-byte frames), each with two
/// Raw services under `policy` at `rates` (bulk, media; ELF: best-effort weights); media: CBR
/// in talk spurts at `media_bps` with `packet`-byte packets across every hop; bulk: constant
/// UDP at the whole link rate across every hop, when `bulk`.
struct Setup {
    policy: &'static str,
    rates: [f64; 2],
    rate: f64,
    media_bps: f64,
    packet: usize,
    hops: usize,
}

fn scenario(s: &Setup, bulk: bool) -> Scenario {
    let Setup {
        policy,
        rates,
        rate,
        media_bps,
        packet,
        hops,
    } = *s;
    let weights = match policy {
        "wfq" => format!("weights = [{}, {}]", rates[0], rates[1]),
        "elf" => format!(
            "link_rate_bps = {rate}\n[[segment.link.scheduler.flows]]\nweight = {}\n\
             [[segment.link.scheduler.flows]]\nweight = {}",
            rates[0], rates[1]
        ),
        _ => format!("rates = [{}, {}]", rates[0], rates[1]),
    };
    let mut text = "[sim]\nduration_s = 30\nseed = 5\ntimeseries_window_s = 0\n\
         [[segment]]\nkind = \"wired\"\nrate_bps = 100000000\ndelay_ms = 1\n"
        .to_string();
    for _ in 0..hops {
        text.push_str(&format!(
            "[[segment]]\nkind = \"wireless\"\nrate_bps = {rate}\ndelay_ms = 3\nframe_bytes = 1000\n\
             [segment.link]\nmtu = 994\n\
             [segment.link.scheduler]\npolicy = \"{policy}\"\n{weights}\n\
             [[segment.link.service]]\nname = \"bulk\"\nscheme = \"raw\"\n\
             [[segment.link.service]]\nname = \"media\"\nscheme = \"raw\"\n\
             [[segment.link.rule]]\nservice = \"media\"\ndst_port = 5004\n"
        ));
    }
    let to = hops + 1;
    text.push_str(&format!(
        "[[flow]]\nname = \"media\"\napp = \"cbr\"\nfrom = 0\nto = {to}\nport = 5004\n\
         rate_bps = {media_bps}\npacket_bytes = {packet}\n"
    ));
    if bulk {
        text.push_str(&format!(
            "[[flow]]\nname = \"bulk\"\napp = \"constant\"\nfrom = 0\nto = {to}\nport = 9\n\
             rate_bps = {rate}\npacket_bytes = 994\n"
        ));
    }
    let sc = Scenario::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    sc.validate().unwrap_or_else(|e| panic!("{e}\n{text}"));
    sc
}

fn media(sc: &Scenario) -> mslink_sim::world::FlowResult {
    let r = run(sc, 0, &mut |_| Err(std::io::Error::other("no traces"))).unwrap();
    r.flows.into_iter().find(|f| f.flow == "media").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn a_class_within_its_share_stays_within_the_bound(
        policy in prop::sample::select(vec!["scfq", "wfq", "elf"]),
        hops in 1usize..=2,
        share in 0.1f64..0.6,
        fill in 0.5f64..0.97,
        rate in prop::sample::select(vec![2e6, 5e6, 11e6]),
        packet in 200usize..994,
    ) {
        // Media's framed peak (packet + tag + CRC) is `fill` of its share.
        let framed = packet as f64 + 5.0;
        let media_bps = fill * share * rate * packet as f64 / framed;
        let rates = [1.0 - share, share];
        let setup = Setup { policy, rates, rate, media_bps, packet, hops };
        let (beside, alone) = (scenario(&setup, true), scenario(&setup, false));
        prop_assert!(beside.notes().iter().all(|n| !n.contains("no bound")), "{:?}", beside.notes());
        let (b, a) = (media(&beside), media(&alone));
        let bound = b.delay_bound_s.expect("a bound");
        prop_assert_eq!(b.loss_rate, 0.0);
        prop_assert!(
            b.delay_p95_s <= a.delay_p95_s + bound,
            "p95 beside {} > alone {} + bound {}", b.delay_p95_s, a.delay_p95_s, bound
        );
    }
}

#[test]
fn a_class_above_its_share_gets_a_note_and_no_bound() {
    // 004's own setting: 1 Mbit/s media with a 1 Mbit/s share of 5 Mbit/s, framed above it.
    let paper = Setup {
        policy: "scfq",
        rates: [4.0, 1.0],
        rate: 5e6,
        media_bps: 1e6,
        packet: 994,
        hops: 1,
    };
    let sc = scenario(&paper, true);
    let notes = sc.notes();
    let note = notes
        .iter()
        .find(|n| n.contains("service `media`"))
        .expect("a note");
    for want in [
        "1.000 Mbit/s",
        "1.005 Mbit/s on the air",
        "no bound",
        "rates [3.995, 1.005]",
    ] {
        assert!(note.contains(want), "{want} in {note}");
    }
    assert_eq!(media(&sc).delay_bound_s, None);
    // Alone on the link the class has all of it (the schedulers are work-conserving): no note.
    let alone = scenario(&paper, false);
    assert!(alone.notes().is_empty(), "{:?}", alone.notes());
}
