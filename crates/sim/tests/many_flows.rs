//! Issue 18: flows past the 16-bit port range, and start times spread over `count` copies.
//!
//! Before, flow `i` sent from port `55000 + i as u16`: TCP flows from index 65,536 on
//! received nothing (their segments were taken for flow `i - 65536`), and flows 0-63 saw
//! duplicates. Every flow now has an (address, port) pair of its own (`packet.rs`).

use mslink_sim::world::FlowResult;
use mslink_sim::{run, Scenario, ScenarioError};

fn runs(text: &str, rep: u32) -> Vec<FlowResult> {
    let sc = Scenario::parse(text).unwrap();
    sc.validate().unwrap();
    run(&sc, rep, &mut |_| Err(std::io::Error::other("no traces")))
        .unwrap()
        .flows
}

/// A fast, error-free wired hop with room for every packet.
const PATH: &str = "[sim]\nduration_s = 20\ntimeseries_window_s = 0\n\
    [[segment]]\nkind = \"wired\"\nrate_bps = 1e9\ndelay_ms = 1\nqueue_packets = 1000000\n";

#[test]
fn tcp_flows_past_65536_each_deliver_their_bytes_once() {
    let n = 65_537;
    let flows = runs(
        &format!(
            "{PATH}[[flow]]\nname = \"bulk\"\napp = \"ftp\"\nfrom = 0\nto = 1\n\
             size_bytes = 1000\ncount = {n}\nstart = {{ dist = \"uniform\", spread_s = 2 }}\n"
        ),
        0,
    );
    assert_eq!(flows.len(), n);
    for f in &flows {
        assert!(f.completed, "{f:?}");
        assert_eq!((f.bytes, f.duplicates, f.malformed), (1000, 0, 0), "{f:?}");
        assert_eq!(f.retransmits, 0, "{f:?}");
    }
}

#[test]
fn datagram_flows_past_65536_are_received_once() {
    let n = 65_537;
    let flows = runs(
        &format!(
            "{PATH}[[flow]]\nname = \"udp\"\napp = \"constant\"\nfrom = 0\nto = 1\n\
             rate_bps = 8000\npacket_bytes = 100\nstop_s = 0.25\ncount = {n}\n\
             start = {{ dist = \"uniform\", spread_s = 0.05 }}\n"
        ),
        0,
    );
    assert_eq!(flows.len(), n);
    for f in &flows {
        assert!(f.sent >= 2, "{f:?}");
        assert_eq!((f.received, f.duplicates), (f.sent, 0), "{f:?}");
    }
}

/// Start of each flow as its results tell it: a datagram flow that runs to the end of the run
/// reports `duration_s = duration - start`.
fn starts(dist: &str, seed: u32) -> Vec<f64> {
    runs(
        &format!(
            "[sim]\nduration_s = 100\ntimeseries_window_s = 0\n\
             [[segment]]\nkind = \"wired\"\n\
             [[flow]]\nname = \"before\"\napp = \"constant\"\nrate_bps = 1000\npacket_bytes = 100\n\
             [[flow]]\nname = \"c\"\napp = \"constant\"\nrate_bps = 1000\npacket_bytes = 100\n\
             count = 2000\nstart_s = 10\nstart = {dist}\n"
        ),
        seed,
    )
    .iter()
    .skip(1)
    .map(|f| 100.0 - f.duration_s)
    .collect()
}

#[test]
fn uniform_starts_fill_their_window_and_follow_the_seed() {
    let s = starts("{ dist = \"uniform\", spread_s = 20 }", 0);
    assert_eq!(s.len(), 2000);
    assert!(s.iter().all(|&t| (10.0..30.0).contains(&t)), "{s:?}");
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    // Uniform on [10, 30): mean 20, standard error 20 / sqrt(12 * 2000) = 0.13.
    assert!((mean - 20.0).abs() < 0.6, "{mean}");
    // Each quarter of the window holds about a quarter of the starts.
    for q in 0..4 {
        let lo = 10.0 + 5.0 * q as f64;
        let k = s.iter().filter(|&&t| t >= lo && t < lo + 5.0).count();
        assert!((400..600).contains(&k), "quarter {q}: {k}");
    }
    assert_eq!(s, starts("{ dist = \"uniform\", spread_s = 20 }", 0));
    assert_ne!(s, starts("{ dist = \"uniform\", spread_s = 20 }", 1));
}

#[test]
fn exponential_starts_arrive_as_a_poisson_process() {
    let s = starts("{ dist = \"exponential\", mean_gap_s = 0.02 }", 0);
    assert!(s.windows(2).all(|w| w[0] <= w[1]), "copies start in order");
    assert!(s[0] > 10.0);
    // 2000 gaps of mean 0.02 s: the last start near 10 + 40 s (standard deviation 0.9 s).
    assert!((s[1999] - 50.0).abs() < 3.0, "{}", s[1999]);
}

#[test]
fn start_distributions_are_checked() {
    let bad = |start: &str| {
        let sc = Scenario::parse(&format!(
            "[[segment]]\nkind = \"wired\"\n[[flow]]\ncount = 3\nstart = {start}\n"
        ));
        match sc {
            Ok(sc) => sc.validate().unwrap_err(),
            Err(e) => e,
        }
        .to_string()
    };
    let e = bad("{ dist = \"uniform\", spread_s = 0 }");
    assert!(
        e.contains("flow[0].start.spread_s") && e.contains("positive"),
        "{e}"
    );
    let e = bad("{ dist = \"exponential\", mean_gap_s = -1 }");
    assert!(e.contains("flow[0].start.mean_gap_s"), "{e}");
    let e = bad("{ dist = \"normal\", spread_s = 1 }");
    assert!(
        e.contains("line 5") && e.contains("uniform") && e.contains("exponential"),
        "{e}"
    );
    let e = bad("{ dist = \"uniform\", spread = 1 }");
    assert!(e.contains("line 5") && e.contains("spread"), "{e}");
}

#[test]
fn limits_are_errors_that_say_why() {
    let mut text =
        String::from("[[flow]]\nto = 1\ncount = 300000000\n[[flow]]\ncount = 30000000\n");
    text.push_str(&"[[segment]]\nkind = \"wired\"\n".repeat(2));
    let e = Scenario::parse(&text).unwrap().validate().unwrap_err();
    let ScenarioError::Invalid { key, what } = e else {
        panic!("{e:?}")
    };
    assert_eq!(key, "flow[1].count");
    assert!(what.contains("327745536"), "{what}");
    let long = "[[segment]]\nkind = \"wired\"\n".repeat(254);
    let e = Scenario::parse(&long).unwrap().validate().unwrap_err();
    assert!(e.to_string().contains("at most 254 nodes"), "{e}");
}
