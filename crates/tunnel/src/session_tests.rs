//! Tests of the session layer: two `Tunnel` ends joined in memory (virtual time, no I/O).

use super::*;
use crate::keys::Key;
use mslink_link::config::LinkConfig;
use std::net::SocketAddr;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn link() -> LinkConfig {
    toml::from_str("crc = false\n[[service]]\nname = 'sr'\nscheme = 'selective_repeat'\ntimeout_ms = 50\nnack_interval_ms = 20").unwrap()
}

/// A minimal IPv4/UDP packet whose payload is `tag` repeated.
fn packet(tag: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; 28 + len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&((28 + len) as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&1000u16.to_be_bytes());
    p[22..24].copy_from_slice(&2000u16.to_be_bytes());
    p[24..26].copy_from_slice(&((8 + len) as u16).to_be_bytes());
    for (i, b) in p[28..].iter_mut().enumerate() {
        *b = (tag as usize).wrapping_add(i) as u8;
    }
    p
}

fn creds(psk: bool) -> (Credentials, Credentials) {
    if psk {
        let k = Credentials::Psk { psk: Key([9; 32]) };
        return (k, k);
    }
    let (a, b) = (Key([1; 32]), Key([2; 32]));
    (
        Credentials::Keys {
            private: a,
            peer_public: b.public(),
        },
        Credentials::Keys {
            private: b,
            peer_public: a.public(),
        },
    )
}

/// Two ends: A knows B's address, B learns A's.
struct Pair {
    ends: [Tunnel; 2],
    addrs: [SocketAddr; 2],
    now: Instant,
    /// Every datagram that crossed, (to end, bytes), for replay attacks.
    log: Vec<(usize, Vec<u8>)>,
    /// Drop the next n datagrams from end i.
    drop_next: [usize; 2],
    delivered: [Vec<Vec<u8>>; 2],
}

impl Pair {
    fn new(cfg: SessionConfig, psk: bool) -> Pair {
        let (ca, cb) = creds(psk);
        let addrs = [addr("192.0.2.1:1000"), addr("192.0.2.2:2000")];
        let a = Tunnel::new(&cfg, ca, &link(), Some(addrs[1]), [1; 32]).unwrap();
        let b = Tunnel::new(&cfg, cb, &link(), None, [2; 32]).unwrap();
        Pair {
            ends: [a, b],
            addrs,
            now: Instant::from_secs(1),
            log: Vec::new(),
            drop_next: [0, 0],
            delivered: [Vec::new(), Vec::new()],
        }
    }

    /// Moves datagrams until both ends are quiet at the current time.
    fn pump(&mut self) {
        let mut buf = Vec::new();
        loop {
            let mut moved = false;
            for i in 0..2 {
                while let Some(to) = self.ends[i].poll_transmit(self.now, &mut buf) {
                    moved = true;
                    let j = 1 - i;
                    assert_eq!(to, self.addrs[j], "end {i} sends to the peer's address");
                    if self.drop_next[i] > 0 {
                        self.drop_next[i] -= 1;
                        continue;
                    }
                    self.log.push((j, buf.clone()));
                    let mut d = buf.clone();
                    self.ends[j].handle_datagram(self.now, self.addrs[i], &mut d);
                }
                while let Some(p) = self.ends[i].poll_deliver() {
                    self.delivered[i].push(p);
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Advances time to `t`, running timers and pumping on the way.
    fn run_until(&mut self, t: Instant) {
        self.pump();
        loop {
            let next = self.ends.iter().filter_map(|e| e.poll_timeout()).min();
            match next {
                Some(n) if n <= t => {
                    self.now = self.now.max(n);
                    for e in &mut self.ends {
                        e.handle_timeout(self.now);
                    }
                    self.pump();
                }
                _ => break,
            }
        }
        self.now = t;
        self.pump();
    }

    fn send(&mut self, i: usize, p: &[u8]) {
        self.ends[i].handle_packet(self.now, p).unwrap();
        self.pump();
    }
}

#[test]
fn packets_cross_both_ways_in_both_modes() {
    for psk in [false, true] {
        let mut n = Pair::new(SessionConfig::default(), psk);
        for k in 0..20 {
            n.send(0, &packet(k, 100 + k as usize));
            n.send(1, &packet(1000 + k, 50));
        }
        let t = n.now + Duration::from_secs(1);
        n.run_until(t);
        let want_b: Vec<_> = (0..20).map(|k| packet(k, 100 + k as usize)).collect();
        let want_a: Vec<_> = (0..20).map(|k| packet(1000 + k, 50)).collect();
        assert_eq!(n.delivered[1], want_b);
        assert_eq!(n.delivered[0], want_a);
        for e in &n.ends {
            let s = e.stats();
            assert_eq!(s.rejected, Rejected::default());
            assert_eq!(s.sessions_started, 1);
        }
        assert_eq!(n.ends[0].stats().handshakes_completed, 1);
        assert_eq!(n.ends[1].stats().handshakes_answered, 1);
        assert_eq!(
            n.ends[1].peer(),
            Some(n.addrs[0]),
            "responder learned A's address"
        );
    }
}

#[test]
fn lost_handshake_is_retried() {
    let mut n = Pair::new(SessionConfig::default(), false);
    n.drop_next = [1, 1]; // the first initiation and the first response
    n.send(0, &packet(1, 10));
    assert!(n.delivered[1].is_empty());
    let t = n.now + Duration::from_secs(12);
    n.run_until(t);
    assert_eq!(n.delivered[1], vec![packet(1, 10)]);
    assert_eq!(n.ends[0].stats().handshakes_initiated, 3);
    assert_eq!(n.ends[0].stats().handshakes_completed, 1);
}

#[test]
fn rekey_after_datagrams_keeps_traffic_flowing() {
    // A rekey every 40 datagrams is far faster than the initiation limits meant for floods.
    let cfg = SessionConfig {
        rekey_after_datagrams: 40,
        initiations_per_source_per_sec: 0.0,
        ..Default::default()
    };
    let mut n = Pair::new(cfg, false);
    for k in 0..400 {
        n.send(0, &packet(k, 200));
        if k % 50 == 0 {
            let t = n.now + Duration::from_millis(5);
            n.run_until(t);
        }
    }
    let t = n.now + Duration::from_secs(2);
    n.run_until(t);
    let want: Vec<_> = (0..400).map(|k| packet(k, 200)).collect();
    assert_eq!(n.delivered[1], want);
    let a = n.ends[0].stats();
    assert!(a.handshakes_completed >= 400 / 40 - 1, "{a:?}");
    assert_eq!(a.rejected, Rejected::default());
    assert_eq!(n.ends[1].stats().rejected, Rejected::default());
}

#[test]
fn rekey_after_time_and_expiry() {
    let cfg = SessionConfig {
        rekey_after_secs: 10,
        reject_after_secs: 15,
        keepalive_ms: 1000,
        ..Default::default()
    };
    let mut n = Pair::new(cfg, true);
    // Traffic every second for 35 s: at least three sessions on the initiator's clock.
    for k in 0..35 {
        n.send(0, &packet(k, 64));
        let t = n.now + Duration::from_secs(1);
        n.run_until(t);
    }
    assert_eq!(n.delivered[1].len(), 35);
    let a = n.ends[0].stats();
    assert!(a.handshakes_completed >= 3, "{a:?}");
    // Then silence: every session expires and nothing is sent any more.
    let t = n.now + Duration::from_secs(60);
    n.run_until(t);
    assert!(n.ends[0].session_index().is_none());
    assert!(n.ends[1].session_index().is_none());
    assert!(n.ends[0].stats().sessions_expired >= 1);
    let before = n.ends[0].stats().datagrams_sent;
    let t = n.now + Duration::from_secs(60);
    n.run_until(t);
    assert_eq!(n.ends[0].stats().datagrams_sent, before);
}

#[test]
fn passive_keepalive_answers_one_way_traffic() {
    let cfg = SessionConfig {
        keepalive_ms: 500,
        ..Default::default()
    };
    let mut n = Pair::new(cfg, false);
    // A raw link so that B has no acks of its own to send.
    let raw: LinkConfig = toml::from_str("crc = false").unwrap();
    let (ca, cb) = creds(false);
    n.ends[0] = Tunnel::new(
        &SessionConfig {
            keepalive_ms: 500,
            ..Default::default()
        },
        ca,
        &raw,
        Some(n.addrs[1]),
        [3; 32],
    )
    .unwrap();
    n.ends[1] = Tunnel::new(
        &SessionConfig {
            keepalive_ms: 500,
            ..Default::default()
        },
        cb,
        &raw,
        None,
        [4; 32],
    )
    .unwrap();
    n.send(0, &packet(7, 10));
    let k0 = n.ends[1].stats().keepalives_sent;
    let t = n.now + Duration::from_millis(600);
    n.run_until(t);
    assert_eq!(n.ends[1].stats().keepalives_sent, k0 + 1);
    assert!(n.ends[0].stats().keepalives_received >= 1);
}

#[test]
fn peer_address_follows_authentic_datagrams_only() {
    let mut n = Pair::new(SessionConfig::default(), false);
    n.send(0, &packet(1, 10));
    assert_eq!(n.ends[1].peer(), Some(n.addrs[0]));
    // A forged datagram from elsewhere does not move B's idea of A.
    let mut forged = n
        .log
        .iter()
        .rev()
        .find(|(to, d)| *to == 1 && d[0] == 3)
        .unwrap()
        .1
        .clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    n.ends[1].handle_datagram(n.now, addr("203.0.113.9:9"), &mut forged);
    assert_eq!(n.ends[1].peer(), Some(n.addrs[0]));
    // A moves (new address); its next datagram moves B's reply path with it.
    n.addrs[0] = addr("198.51.100.7:3000");
    n.send(0, &packet(2, 10));
    assert_eq!(n.ends[1].peer(), Some(n.addrs[0]));
    assert_eq!(n.ends[1].stats().roams, 1);
    n.send(1, &packet(3, 10));
    assert_eq!(n.delivered[0], vec![packet(3, 10)]);
}

/// A pair after A's first packet reached B (one handshake done), with B's first initiation
/// and last transport datagram as logged on the wire.
fn after_first_handshake() -> (Pair, Vec<u8>, Vec<u8>) {
    let mut n = Pair::new(SessionConfig::default(), false);
    n.send(0, &packet(1, 10));
    let t = n.now + Duration::from_millis(100);
    n.run_until(t);
    let to_b = |kind: u8| n.log.iter().filter(move |(to, d)| *to == 1 && d[0] == kind);
    let init = to_b(1).next().unwrap().1.clone();
    let data = to_b(3).next_back().unwrap().1.clone();
    (n, init, data)
}

#[test]
fn bad_datagrams_are_counted_by_cause_never_delivered_never_answered() {
    let (mut n, init, data) = after_first_handshake();
    let b0 = n.ends[1].stats();
    let link0 = n.ends[1].link_stats().frames_received;
    let from = addr("203.0.113.9:9");
    let mut inject = |d: &[u8]| {
        let mut d = d.to_vec();
        n.ends[1].handle_datagram(n.now, from, &mut d);
        let mut out = Vec::new();
        assert!(
            n.ends[1].poll_transmit(n.now, &mut out).is_none(),
            "answered a bad datagram"
        );
        assert!(
            n.ends[1].poll_deliver().is_none(),
            "delivered a bad datagram"
        );
    };
    inject(&data); // replayed transport
    inject(&init); // replayed initiation (timestamp not newer)
    let mut f = data.clone();
    f[15] ^= 0x40; // a fresh counter (so the replay check passes) ...
    f[20] ^= 0x10; // ... and altered ciphertext
    inject(&f); // forged
    let mut f = init.clone();
    f[40] ^= 1;
    inject(&f); // forged initiation
    inject(&data[..20]); // truncated transport
    inject(&[3, 1]); // truncated preamble
    inject(&[0x47, 0x45, 0x54, 0x20, 0x2f]); // garbage ("GET /")
    inject(&[
        3, 9, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
        23, 24, 25, 26, 27, 28,
    ]); // unknown version
    let mut u = data.clone();
    u[4] ^= 0xff; // another receiver index
    inject(&u);
    let b1 = n.ends[1].stats();
    assert_eq!(b1.rejected.replayed - b0.rejected.replayed, 2);
    assert_eq!(b1.rejected.forged - b0.rejected.forged, 2);
    assert_eq!(b1.rejected.truncated - b0.rejected.truncated, 2);
    assert_eq!(b1.rejected.garbage - b0.rejected.garbage, 2);
    assert_eq!(b1.rejected.unknown_session - b0.rejected.unknown_session, 1);
    assert_eq!(b1.packets_delivered, b0.packets_delivered);
    assert_eq!(b1.datagrams_sent, b0.datagrams_sent);
    assert_eq!(b1.handshakes_answered, b0.handshakes_answered);
    assert_eq!(n.ends[1].link_stats().frames_received, link0);
    assert_eq!(n.ends[1].peer(), Some(n.addrs[0]));
    // The tunnel still works afterwards.
    n.send(0, &packet(9, 10));
    assert_eq!(n.delivered[1].last(), Some(&packet(9, 10)));
}

#[test]
fn a_flood_of_initiations_is_rate_limited_and_the_peer_still_gets_through() {
    // Take a genuine initiation, then replay it altered from an attacker's address 100 times
    // at once: only the per-source burst (2) costs the responder a Noise handshake.
    let (_, init, _) = after_first_handshake();
    let mut fresh = Pair::new(SessionConfig::default(), false);
    let attacker = addr("203.0.113.9:9");
    for k in 0..100u8 {
        let mut f = init.clone();
        f[40] ^= k | 1;
        fresh.ends[1].handle_datagram(fresh.now, attacker, &mut f);
    }
    let r = fresh.ends[1].stats().rejected;
    assert_eq!((r.forged, r.rate_limited), (2, 98), "{r:?}");
    let mut out = Vec::new();
    assert!(fresh.ends[1].poll_transmit(fresh.now, &mut out).is_none());
    // The real peer, from its own address, is not held back by the attacker's bucket.
    fresh.send(0, &packet(2, 10));
    let t = fresh.now + Duration::from_millis(100);
    fresh.run_until(t);
    assert_eq!(fresh.delivered[1], vec![packet(2, 10)]);
    assert_eq!(fresh.ends[1].stats().handshakes_answered, 1);
}

#[test]
fn same_seed_same_datagrams() {
    let run = || {
        let mut n = Pair::new(SessionConfig::default(), false);
        for k in 0..5 {
            n.send(0, &packet(k, 30));
        }
        n.log
    };
    assert_eq!(run(), run());
}

mod accounting {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// A packet from A, its datagrams delivered to B with byte `at % len` xored by `x`.
        Genuine { len: usize, at: usize, x: u8 },
        /// Raw bytes to B.
        Raw(Vec<u8>),
        /// A genuine datagram sent earlier, again.
        Replay(usize),
        /// Time passes.
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1usize..300, any::<usize>(), any::<u8>()).prop_map(|(len, at, x)| Op::Genuine {
                len,
                at,
                x
            }),
            proptest::collection::vec(any::<u8>(), 0..80).prop_map(Op::Raw),
            any::<usize>().prop_map(Op::Replay),
            (0u64..3000).prop_map(Op::Wait),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Every datagram B receives is accounted for exactly once, and a delivered packet is
        /// always one A was given, whole.
        #[test]
        fn every_datagram_is_accounted_for_once(ops in proptest::collection::vec(op(), 1..60)) {
            let cfg = SessionConfig {
                rekey_after_datagrams: 6,
                initiations_per_source_per_sec: 0.0,
                ..Default::default()
            };
            let mut n = Pair::new(cfg, false);
            let mut sent: Vec<Vec<u8>> = Vec::new();
            let mut genuine: Vec<Vec<u8>> = Vec::new();
            let from = n.addrs[0];
            let mut buf = Vec::new();
            for (k, o) in ops.into_iter().enumerate() {
                match o {
                    Op::Genuine { len, at, x } => {
                        let p = packet(k as u32, len);
                        n.ends[0].handle_packet(n.now, &p).unwrap();
                        sent.push(p);
                        while n.ends[0].poll_transmit(n.now, &mut buf).is_some() {
                            genuine.push(buf.clone());
                            let mut d = buf.clone();
                            let i = at % d.len();
                            d[i] ^= x;
                            n.ends[1].handle_datagram(n.now, from, &mut d);
                        }
                    }
                    Op::Raw(mut d) => n.ends[1].handle_datagram(n.now, from, &mut d),
                    Op::Replay(i) if !genuine.is_empty() => {
                        let mut d = genuine[i % genuine.len()].clone();
                        n.ends[1].handle_datagram(n.now, from, &mut d);
                    }
                    Op::Replay(_) => {}
                    Op::Wait(ms) => {
                        let t = n.now + Duration::from_millis(ms);
                        n.run_until(t);
                    }
                }
                n.pump();
            }
            let s = n.ends[1].stats();
            prop_assert_eq!(
                s.datagrams_received,
                s.rejected.total() + s.frames_received + s.keepalives_received
                    + s.handshakes_answered + s.handshakes_completed,
                "{:?}", s
            );
            for p in &n.delivered[1] {
                prop_assert!(sent.contains(p), "B delivered a packet A was never given");
            }
        }
    }
}

#[test]
fn link_counters_match_the_session_counters() {
    let mut n = Pair::new(SessionConfig::default(), false);
    for k in 0..300 {
        n.send(0, &packet(k, 1000));
        n.send(1, &packet(k, 40));
    }
    let t = n.now + Duration::from_secs(2);
    n.run_until(t);
    for i in 0..2 {
        let s = n.ends[i].stats();
        let l = n.ends[i].link_stats();
        let link_in: u64 = l.services.iter().map(|r| r.packets_in).sum();
        let link_out: u64 = l.services.iter().map(|r| r.packets_delivered).sum();
        assert_eq!(link_in, s.packets_in - s.packets_refused, "end {i}: {l:?}");
        assert_eq!(link_out, s.packets_delivered, "end {i}: {l:?}");
        assert_eq!(s.packets_delivered, n.delivered[i].len() as u64);
    }
}
