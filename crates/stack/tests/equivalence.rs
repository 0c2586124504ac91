//! DAA and ILLM deliver exactly what LLM delivers (issue 7, "Done when"): the same application
//! traffic over 10,000 connections with random ports and application ids (seeded ChaCha8),
//! including traffic to ports/applications nobody opened and to endpoints closed half way,
//! checked against each other and against an expectation the test computes on its own.

use std::collections::HashSet;

use mslink_link::Instant;
use mslink_stack::demux_key::FIRST_DYNAMIC_APP_ID;
use mslink_stack::wire::Wire;
use mslink_stack::{Architecture, Stack, StackConfig, UdpConn};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SESSIONS: usize = 10_000;
const STRAYS: usize = 50;
const MESSAGES: usize = 30_000;

struct Conn {
    a_port: u16,
    b_port: u16,
    a_app: u32,
    b_app: u32,
    checksum: bool,
}

/// (receiving side 0=A 1=B, endpoint index, data)
type Log = Vec<(u8, u32, Vec<u8>)>;

/// (connection index, sent from A to B, user data)
type Msg = (usize, bool, Vec<u8>);

fn plan(seed: u64) -> (Vec<Conn>, Vec<Msg>, HashSet<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ports: Vec<u16> = (1024..=u16::MAX).collect();
    ports.shuffle(&mut rng);
    let mut b_ports = ports.clone();
    b_ports.shuffle(&mut rng);
    let mut apps = HashSet::new();
    while apps.len() < 2 * (SESSIONS + STRAYS) {
        apps.insert(rng.gen_range(1..FIRST_DYNAMIC_APP_ID));
    }
    let mut apps: Vec<u32> = apps.into_iter().collect();
    apps.sort_unstable();
    apps.shuffle(&mut rng);
    let conns: Vec<Conn> = (0..SESSIONS + STRAYS)
        .map(|i| Conn {
            a_port: ports[i],
            b_port: b_ports[i],
            a_app: apps[2 * i],
            b_app: apps[2 * i + 1],
            checksum: rng.gen_bool(0.5),
        })
        .collect();
    // Connections SESSIONS.. are strays: opened on A only, so their frames find nobody on B.
    let msgs = (0..MESSAGES)
        .map(|_| {
            let i = if rng.gen_bool(0.02) {
                SESSIONS + rng.gen_range(0..STRAYS)
            } else {
                rng.gen_range(0..SESSIONS)
            };
            let a_to_b = i >= SESSIONS || rng.gen_bool(0.5);
            let len = rng.gen_range(0..=1472usize);
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            (i, a_to_b, data)
        })
        .collect();
    // 1% of B's endpoints close half way through.
    let closed: HashSet<usize> = (0..SESSIONS / 100)
        .map(|_| rng.gen_range(0..SESSIONS))
        .collect();
    (conns, msgs, closed)
}

fn run(
    arch: Architecture,
    ilp: bool,
    conns: &[Conn],
    msgs: &[Msg],
    closed: &HashSet<usize>,
) -> (Log, u64, u64) {
    let ca = StackConfig {
        architecture: arch,
        ilp,
        ..Default::default()
    };
    let cb = StackConfig {
        architecture: arch,
        ilp,
        ..StackConfig::host(2)
    };
    let (mut a, ia) = Stack::udp_ip_eth(ca.clone());
    let (mut b, ib) = Stack::udp_ip_eth(cb.clone());
    let mut ea = Vec::new();
    let mut eb = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let conn = UdpConn {
            local_port: c.a_port,
            remote_port: c.b_port,
            local_app: c.a_app,
            remote_app: c.b_app,
            checksum: c.checksum,
            ..Default::default()
        };
        ea.push(a.open_udp_to(ia.udp, &cb, conn).unwrap().0);
        if i < SESSIONS {
            let (e, app) = b.open_udp_to(ib.udp, &ca, conn.reversed()).unwrap();
            if arch == Architecture::Daa {
                assert_eq!(app, c.b_app, "requested application id honoured");
            }
            eb.push(e);
        }
    }
    let mut w = Wire::new();
    let mut log = Log::new();
    let now = Instant::ZERO;
    for (k, (i, a_to_b, data)) in msgs.iter().enumerate() {
        if k == msgs.len() / 2 {
            for &c in closed {
                b.close(eb[c]);
            }
        }
        if *a_to_b {
            a.send(now, ea[*i], data).unwrap();
        } else if b.send(now, eb[*i], data).is_err() {
            continue; // closed endpoint: nothing sent
        }
        w.pump(now, &mut a, &mut b);
        while let Some(d) = a.poll_deliver() {
            log.push((0, d.endpoint.0, d.data));
        }
        while let Some(d) = b.poll_deliver() {
            log.push((1, d.endpoint.0, d.data));
        }
    }
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!(
        sa.rx_frames,
        sa.delivered + sa.dropped(),
        "every frame delivered or counted"
    );
    assert_eq!(
        sb.rx_frames,
        sb.delivered + sb.dropped(),
        "every frame delivered or counted"
    );
    (
        log,
        sa.dropped() + sb.dropped(),
        sb.delivered + sa.delivered,
    )
}

#[test]
fn daa_and_illm_deliver_what_llm_delivers() {
    let (conns, msgs, closed) = plan(0x5eed_0007);
    // Independent expectation: every message to an open, existing peer endpoint arrives intact.
    let mut expect = Log::new();
    for (k, (i, a_to_b, data)) in msgs.iter().enumerate() {
        let closed_now = k >= msgs.len() / 2 && closed.contains(i);
        if *a_to_b {
            if *i < SESSIONS && !closed_now {
                expect.push((1, *i as u32, data.clone()));
            }
        } else if !closed_now {
            expect.push((0, *i as u32, data.clone()));
        }
    }
    let (llm, llm_drops, _) = run(Architecture::Llm, false, &conns, &msgs, &closed);
    assert_eq!(llm.len(), expect.len());
    assert!(llm == expect, "LLM differs from the expectation");
    // The other architectures, and every architecture with integrated copy-and-checksum.
    let others = [
        (Architecture::Daa, false),
        (Architecture::Illm, false),
        (Architecture::Llm, true),
        (Architecture::Daa, true),
        (Architecture::Illm, true),
    ];
    for (arch, ilp) in others {
        let (got, drops, _) = run(arch, ilp, &conns, &msgs, &closed);
        assert_eq!(got.len(), llm.len(), "{arch:?} ilp {ilp}");
        assert!(
            got == llm,
            "{arch:?} (ilp {ilp}) delivers something else than LLM"
        );
        assert_eq!(
            drops, llm_drops,
            "{arch:?} (ilp {ilp}) drops a different number of frames"
        );
    }
    assert!(
        llm_drops > 0,
        "the stray and closed traffic was dropped and counted"
    );
}
