//! Fuzz target: the mslink-stack receive path (Ethernet/ETHDAA, IPv4, UDP) under LLM, DAA and
//! ILLM. The first byte picks architecture, checksum and ILP; the rest is one received frame.
//! Invariant: no panic, and the frame is delivered or counted as dropped exactly once.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mslink_link::Instant;
use mslink_stack::{Architecture, Participants, Stack, StackConfig};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else { return };
    let arch = Architecture::ALL[(sel % 3) as usize];
    let cfg = StackConfig { architecture: arch, ilp: sel & 8 != 0, ..Default::default() };
    let (mut s, ids) = Stack::udp_ip_eth(cfg);
    let p = Participants {
        remote_mac: [2, 0, 0, 0, 0, 2],
        remote_ip: [10, 0, 0, 2],
        local_port: 7,
        remote_port: 7,
        remote_app: 7,
        udp_checksum: sel & 4 != 0,
        ..Default::default()
    };
    let _ = s.open(ids.udp, p, 0, Some(7));
    s.handle_frame(Instant::ZERO, frame);
    let st = s.stats();
    assert_eq!(st.delivered + st.dropped(), 1);
    while s.poll_deliver().is_some() {}
});
