//! The checks of the `stack_receive` fuzz target, shared with the seed test
//! (crates/cli/tests/fuzz_seeds.rs), which runs every committed seed through them.
//!
//! Input: `[sel][frame...]`. `sel % 3` picks the architecture (LLM, DAA, ILLM, in
//! `Architecture::ALL` order), bit 2 the UDP checksum, bit 3 integrated layer processing; the
//! rest is one frame received by host 1 (`StackConfig::host(1)`), which has a UDP endpoint on
//! port 7 talking to host 2's port 7 (DAA application 7 at both ends) and a TCP endpoint on
//! port 7 talking to host 2's port 7 (DAA application 8 at both ends, sequence numbers as
//! `mslink_stack::tcp::initial_seq` gives them). Invariant: no panic, and the frame is
//! delivered, consumed (a TCP pure ACK) or counted as dropped, exactly once. Returns the
//! stack's counters.

use mslink_link::Instant;
use mslink_stack::{Architecture, Participants, Stack, StackConfig, StackStats};

/// The stack configuration a selector byte picks (host 1).
pub fn config(sel: u8) -> StackConfig {
    StackConfig {
        architecture: Architecture::ALL[(sel % 3) as usize],
        ilp: sel & 8 != 0,
        ..Default::default()
    }
}

/// Host 1's view of its peer: host 2, UDP port 7 at both ends, DAA application 7.
pub fn participants(sel: u8) -> Participants {
    Participants {
        remote_mac: [2, 0, 0, 0, 0, 2],
        remote_ip: [10, 0, 0, 2],
        local_port: 7,
        remote_port: 7,
        remote_app: 7,
        udp_checksum: sel & 4 != 0,
        ..Default::default()
    }
}

/// Runs the target's checks on one input.
pub fn run(data: &[u8]) -> Option<StackStats> {
    let (&sel, frame) = data.split_first()?;
    let (mut s, ids) = Stack::udp_ip_eth(config(sel));
    let _ = s.open(ids.udp, participants(sel), 0, Some(7));
    let tcp = Participants {
        remote_app: 8,
        ..participants(sel)
    };
    let _ = s.open(ids.tcp, tcp, 0, Some(8));
    s.handle_frame(Instant::ZERO, frame);
    let st = s.stats();
    assert_eq!(st.delivered + st.consumed + st.dropped(), 1);
    while s.poll_deliver().is_some() {}
    Some(st)
}
