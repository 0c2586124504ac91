//! The checks of the `classifier` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: one IP packet (or anything else). Services `raw` (0, the default), `bulk` (1: TCP
//! with either port in 1-1024) and `rt` (2: DSCP 46, or IPv6 to ports 5000-5010). Invariant:
//! classification never panics and names one of the three services.

use mslink_link::classifier::{Classification, Classifier, PortRange, Protocol, Rule};

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Classification {
    let rules = [
        Rule {
            service: "rt".into(),
            dscp: Some(46),
            ..Default::default()
        },
        Rule {
            service: "bulk".into(),
            protocol: Some(Protocol(6)),
            port: Some(PortRange { lo: 1, hi: 1024 }),
            ..Default::default()
        },
        Rule {
            service: "rt".into(),
            ip_version: Some(6),
            dst_port: Some(PortRange { lo: 5000, hi: 5010 }),
            ..Default::default()
        },
    ];
    let c = Classifier::new(&rules, &["raw", "bulk", "rt"], 0).expect("valid rules");
    let out = c.classify(data);
    assert!(out.service < 3);
    out
}
