//! DAA priority processing (002 §5.5, Fig. 4): a server whose receive work waits in a queue
//! ordered by the ETHDAA deadline/priority field keeps a prioritised flow's round trip short
//! while background ping-pong flows load it; the same flow without priority waits behind them.
//!
//! Virtual time only (no wall clock): the server's processor does one queued frame's work per
//! `SERVICE` nanoseconds, the wire and the client take no time, every flow is a ping-pong loop.

use mslink_link::Instant;
use mslink_stack::bench::fig4_flows;
use mslink_stack::wire::Wire;
use mslink_stack::{Architecture, StackConfig};

const SERVICE: u64 = 10_000;

/// p50 round trip (ns) of a 1-byte probe flow with `probe_priority`, against `background`
/// ping-pong flows of `bg_size` bytes at priority 0.
fn probe_p50(probe_priority: u32, background: usize, bg_size: usize) -> u64 {
    let (cc, mut cs) = StackConfig::pair(Architecture::Daa);
    cs.priority_queue = 1024;
    let flows = background + 1; // flow 0 is the probe
    let (mut client, mut server, ce) = fig4_flows(&cc, &cs, flows, probe_priority).unwrap();
    let size = |f: usize| if f == 0 { 1 } else { bg_size };
    let mut sent_at = vec![0u64; flows];
    let mut now = 0u64;
    // Background flows start first, so the probe always meets a loaded server.
    for f in (0..flows).rev() {
        client
            .send(Instant::from_nanos(now), ce[f], &vec![f as u8; size(f)])
            .unwrap();
    }
    let mut w = Wire::new();
    let mut rtts = Vec::new();
    while rtts.len() < 300 {
        let t = Instant::from_nanos(now);
        w.pump(t, &mut client, &mut server);
        while let Some(d) = client.poll_deliver() {
            let f = d.endpoint.0 as usize;
            if f == 0 {
                rtts.push(now - sent_at[0]);
            }
            sent_at[f] = now;
            client.send(t, ce[f], &d.data).unwrap();
        }
        w.pump(t, &mut client, &mut server);
        // One unit of server processing: the most urgent queued frame, then its echo.
        now += SERVICE;
        if let Some(d) = server.poll_deliver() {
            server
                .send(Instant::from_nanos(now), d.endpoint, &d.data)
                .unwrap();
        }
    }
    assert_eq!(server.stats().dropped(), 0);
    rtts.sort_unstable();
    rtts[rtts.len() / 2]
}

#[test]
fn prioritised_flow_keeps_its_round_trip_under_load() {
    for bg_size in [1usize, 1000] {
        let idle = probe_p50(7, 0, bg_size);
        let prio = probe_p50(7, 8, bg_size);
        let plain = probe_p50(0, 8, bg_size);
        eprintln!("bg {bg_size} B: idle {idle} ns, prioritised {prio} ns, plain {plain} ns");
        // Closed forms for this model: alone, one service time; with priority, at most the
        // frame in service ahead plus its own (2 S); without, behind all 8 background frames.
        assert_eq!(idle, SERVICE);
        assert!(prio <= 2 * SERVICE, "prioritised p50 {prio} ns");
        assert!(plain >= 8 * SERVICE, "plain p50 {plain} ns");
        assert!(2 * prio < plain, "generous margin: {prio} vs {plain}");
    }
}
