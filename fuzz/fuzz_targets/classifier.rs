//! Fuzz target: the IP classifier on arbitrary packets.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::classifier::{Classifier, PortRange, Protocol, Rule};

fuzz_target!(|data: &[u8]| {
    let rules = [
        Rule { service: "rt".into(), dscp: Some(46), ..Default::default() },
        Rule { service: "bulk".into(), protocol: Some(Protocol(6)), port: Some(PortRange { lo: 1, hi: 1024 }), ..Default::default() },
        Rule { service: "rt".into(), ip_version: Some(6), dst_port: Some(PortRange { lo: 5000, hi: 5010 }), ..Default::default() },
    ];
    let c = Classifier::new(&rules, &["raw", "bulk", "rt"], 0).expect("valid rules");
    let out = c.classify(data);
    assert!(out.service < 3);
});
