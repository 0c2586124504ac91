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
    crate::handshake::test_pair()
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
    inject(&[3, 2]); // truncated preamble
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

/// An initiation from someone who knows B's public key (so its mac1 is right) but is not the
/// peer: the Noise message fails only after the responder's Diffie-Hellman work.
fn mallory_initiation(k: u32) -> Vec<u8> {
    let b_public = Key([2; 32]).public();
    let mallory = Credentials::Keys {
        private: Key([7; 32]),
        peer_public: b_public,
    };
    let mut msg = [0u8; MAX_NOISE_LEN];
    let (_, n) = Initiator::start(&mallory, [k as u8; 32], u64::from(k), 0, &mut msg);
    let repr = DatagramRepr::Initiation {
        sender: k,
        noise: &msg[..n],
        macs: [0; MACS_LEN],
    };
    let mut d = vec![0; repr.buffer_len()];
    repr.emit(&mut d);
    cookie::Initiator::new(&mallory).stamp(Instant::ZERO, &mut d);
    d
}

#[test]
fn a_flood_of_initiations_is_rate_limited_and_the_peer_still_gets_through() {
    // A genuine initiation altered 100 times: mac1 no longer matches, so none of them costs
    // the responder a Diffie-Hellman operation.
    let (_, init, _) = after_first_handshake();
    let mut fresh = Pair::new(SessionConfig::default(), false);
    let attacker = addr("203.0.113.9:9");
    for k in 0..100u8 {
        let mut f = init.clone();
        f[40] ^= k | 1;
        fresh.ends[1].handle_datagram(fresh.now, attacker, &mut f);
    }
    let r = fresh.ends[1].stats().rejected;
    assert_eq!((r.forged, r.rate_limited), (100, 0), "{r:?}");
    // 100 with a right mac1 from one address: only its burst (2) is opened.
    for k in 0..100 {
        let mut d = mallory_initiation(k);
        fresh.ends[1].handle_datagram(fresh.now, attacker, &mut d);
    }
    let r = fresh.ends[1].stats().rejected;
    assert_eq!((r.forged, r.rate_limited), (102, 98), "{r:?}");
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
fn under_a_spoofed_flood_the_peer_gets_in_with_a_cookie_and_the_flood_gets_no_work() {
    // 50,000 initiations per second with a right mac1, each from another address, for two
    // seconds; the real peer starts its handshake in the middle of it.
    let mut n = Pair::new(SessionConfig::default(), false);
    let b = 1;
    let mut buf = Vec::new();
    let pool: Vec<Vec<u8>> = (0..64).map(mallory_initiation).collect();
    let flood = |n: &mut Pair, k: u32| {
        let mut d = pool[k as usize % pool.len()].clone();
        let from = SocketAddr::from(([10, (k >> 16) as u8, (k >> 8) as u8, k as u8], 4000));
        n.ends[b].handle_datagram(n.now, from, &mut d);
    };
    let step = Duration::from_micros(20);
    let mut k = 0u32;
    let mut answered_to_flood = 0;
    let mut delivered_at = None;
    let started = n.now + Duration::from_secs(1);
    while n.now < Instant::from_secs(3) {
        flood(&mut n, k);
        k += 1;
        // What B sends to flood sources goes nowhere; to A it is delivered.
        while let Some(to) = n.ends[b].poll_transmit(n.now, &mut buf) {
            if to == n.addrs[0] {
                let mut d = buf.clone();
                n.ends[0].handle_datagram(n.now, n.addrs[1], &mut d);
            } else {
                answered_to_flood += 1;
                assert_eq!(buf[0], 4, "only cookie replies go to flood sources");
            }
        }
        if n.now >= started && n.ends[0].stats().packets_in == 0 {
            n.ends[0].handle_packet(n.now, &packet(1, 10)).unwrap();
        }
        while let Some(to) = n.ends[0].poll_transmit(n.now, &mut buf) {
            assert_eq!(to, n.addrs[1]);
            let mut d = buf.clone();
            n.ends[b].handle_datagram(n.now, n.addrs[0], &mut d);
        }
        while n.ends[b].poll_deliver().is_some() {
            delivered_at.get_or_insert(n.now);
        }
        n.now += step;
        for e in &mut n.ends {
            if e.poll_timeout().is_some_and(|t| t <= n.now) {
                e.handle_timeout(n.now);
            }
        }
    }
    let (sa, sb) = (n.ends[0].stats(), n.ends[b].stats());
    let delivered_at = delivered_at.expect("the peer got through during the flood");
    // One round trip for the cookie, one for the handshake: no waiting for a retry.
    assert!(
        delivered_at.saturating_since(started) < Duration::from_millis(1),
        "{:?}",
        delivered_at.saturating_since(started)
    );
    assert_eq!(sa.cookies_received, 1);
    assert_eq!(sa.handshakes_completed, 1);
    // The handshake's own clock agrees: its two round trips, in this virtual time's steps,
    // from the first initiation (the cookie retry included).
    assert!(
        sa.last_handshake_us > 0
            && sa.last_handshake_us <= delivered_at.saturating_since(started).as_nanos() / 1_000,
        "{} µs",
        sa.last_handshake_us
    );
    // Diffie-Hellman work for the flood: the total budget (200 per second, burst 200), no
    // more; everything else got a cookie reply.
    assert!(sb.rejected.forged <= 200 * 3, "{:?}", sb.rejected);
    // Every flood initiation refused (and A's first, which got the cookie); one cookie reply
    // went to A, the others to the flood's addresses.
    let r = sb.rejected;
    assert_eq!(
        r.busy + r.forged + r.rate_limited,
        u64::from(k) + 1,
        "{r:?}"
    );
    assert_eq!(answered_to_flood, sb.cookie_replies_sent - 1);
    assert!(r.busy > 90_000, "{r:?}");
    assert!(n.ends[b].footprint().control <= MAX_CONTROL);
}

#[test]
fn a_flood_never_crowds_out_the_answer_to_a_proven_initiation() {
    // The driver is slow (B's handshake datagrams are not taken): the flood's cookie replies
    // stop at the backlog bound, and the peer's initiation with a cookie is still answered.
    let mut n = Pair::new(SessionConfig::default(), false);
    let pool: Vec<Vec<u8>> = (0..16).map(mallory_initiation).collect();
    let spoofed = |k: u32| SocketAddr::from(([10, 9, (k >> 8) as u8, k as u8], 4000));
    let mut buf = Vec::new();
    for k in 0..300u32 {
        let mut d = pool[k as usize % 16].clone();
        n.ends[1].handle_datagram(n.now, spoofed(k), &mut d);
    }
    while n.ends[1].poll_transmit(n.now, &mut buf).is_some() {}
    // A's first initiation gets a cookie; its second (with mac2) is held back for now.
    n.ends[0].handle_packet(n.now, &packet(1, 10)).unwrap();
    let mut take = |from: usize, n: &mut Pair| {
        let mut out = Vec::new();
        while let Some(to) = n.ends[from].poll_transmit(n.now, &mut buf) {
            out.push((to, buf.clone()));
        }
        out
    };
    let init = take(0, &mut n);
    assert_eq!(init.len(), 1);
    n.ends[1].handle_datagram(n.now, n.addrs[0], &mut init[0].1.clone());
    let cookie = take(1, &mut n);
    assert_eq!((cookie.len(), cookie[0].1[0]), (1, 4), "a cookie reply");
    n.ends[0].handle_datagram(n.now, n.addrs[1], &mut cookie[0].1.clone());
    let proven = take(0, &mut n);
    assert_eq!(proven.len(), 1);
    for k in 300..3300u32 {
        let mut d = pool[k as usize % 16].clone();
        n.ends[1].handle_datagram(n.now, spoofed(k), &mut d);
    }
    assert_eq!(n.ends[1].footprint().control, MAX_COOKIE_BACKLOG);
    n.ends[1].handle_datagram(n.now, n.addrs[0], &mut proven[0].1.clone());
    let s = n.ends[1].stats();
    assert_eq!(s.handshakes_answered, 1, "{:?}", s.rejected);
    assert!(n.ends[1].footprint().control <= MAX_CONTROL);
    assert_eq!(s.rejected.busy + s.rejected.forged, 3300 + 1);
}

/// Sends a numbered packet from `from` every 50 ms until `until`, restarting end `restart` at
/// `at` (with `configured_peer` given to the new end); returns the times B delivered a packet
/// and the packets, in order.
fn restart_run(
    restart: usize,
    configured_peer: bool,
    cfg: SessionConfig,
) -> (Pair, Instant, Vec<(Instant, Vec<u8>)>) {
    let mut n = Pair::new(cfg.clone(), false);
    let at = Instant::from_secs(20);
    let until = Instant::from_secs(60);
    let mut got = Vec::new();
    let mut k = 0;
    let mut restarted = false;
    while n.now < until {
        if !restarted && n.now >= at {
            let (ca, cb) = creds(false);
            n.ends[restart] = if restart == 0 {
                Tunnel::new(&cfg, ca, &link(), Some(n.addrs[1]), [11; 32]).unwrap()
            } else {
                let peer = configured_peer.then_some(n.addrs[0]);
                Tunnel::new(&cfg, cb, &link(), peer, [12; 32]).unwrap()
            };
            n.delivered[1].clear();
            restarted = true;
        }
        n.send(0, &packet(k, 100));
        k += 1;
        let t = n.now + Duration::from_millis(50);
        n.run_until(t);
        for p in n.delivered[1].drain(..) {
            got.push((n.now, p));
        }
    }
    (n, at, got)
}

/// The outage after the restart at `at`, and a check that the recovery services deliver in
/// order again afterwards (the link state of both ends was started over).
fn outage(at: Instant, got: &[(Instant, Vec<u8>)]) -> Duration {
    let after: Vec<_> = got.iter().filter(|(t, _)| *t > at).collect();
    let first = after.first().expect("traffic resumed after the restart");
    // In order, without gaps, from the first packet after the outage to the end.
    let tag = |p: &[u8]| p[28];
    for w in after.windows(2) {
        assert_eq!(
            tag(&w[1].1),
            tag(&w[0].1).wrapping_add(1),
            "in order, none lost"
        );
    }
    first.0.saturating_since(at)
}

#[test]
fn a_restarted_responder_is_found_again_by_the_silence_timer() {
    // B learns its peer: after it restarts only A can start the handshake, which A does when
    // its data has gone unanswered for keepalive + retry (10 s + 5 s).
    let (n, at, got) = restart_run(1, false, SessionConfig::default());
    let out = outage(at, &got);
    assert!(
        out > Duration::from_secs(14) && out <= Duration::from_secs(16),
        "outage {out:?}"
    );
    let s = n.ends[0].stats();
    assert_eq!(s.handshakes_after_silence, 1);
    assert_eq!(s.link_resets, 1, "A started its link over for the new B");
    assert!(n.ends[1].stats().rejected.unknown_session > 0);
}

#[test]
fn a_restarted_end_that_knows_its_peer_reconnects_at_once() {
    // B with a configured peer: A's next datagram on the old session tells it to handshake.
    let (n, at, got) = restart_run(1, true, SessionConfig::default());
    assert!(outage(at, &got) <= Duration::from_millis(100));
    assert_eq!(n.ends[0].stats().link_resets, 1);
    // A restarts: it has data and no session, so it handshakes at once; B starts over.
    let (n, at, got) = restart_run(0, true, SessionConfig::default());
    assert!(outage(at, &got) <= Duration::from_millis(100));
    assert_eq!(n.ends[1].stats().link_resets, 1);
    assert_eq!(n.ends[0].stats().link_resets, 0);
}

#[test]
fn a_responder_awaiting_confirmation_starts_no_handshake_of_its_own() {
    // B restarts without a configured peer; A finds it again after the silence timer. B's
    // response is lost, so A goes on sending on the old session: B must not answer those
    // datagrams with a handshake of its own (a second session): A's retry brings it back.
    let (mut n, _, _) = after_first_handshake();
    let (_, cb) = creds(false);
    n.ends[1] = Tunnel::new(&SessionConfig::default(), cb, &link(), None, [12; 32]).unwrap();
    n.drop_next[1] = 1;
    let mut k = 10;
    // B's count of datagrams on unknown sessions when it first answered.
    let mut at_answer = None;
    let until = n.now + Duration::from_secs(30);
    // Until A's retry reached B.
    while n.now < until && n.ends[1].stats().handshakes_answered < 2 {
        n.send(0, &packet(k, 10));
        k += 1;
        let t = n.now + Duration::from_millis(50);
        n.run_until(t);
        let b = n.ends[1].stats();
        if b.handshakes_answered == 1 && at_answer.is_none() {
            at_answer = Some(b.rejected.unknown_session);
        }
    }
    let b = n.ends[1].stats();
    assert_eq!(b.handshakes_initiated, 0, "{b:?}");
    let old = b.rejected.unknown_session - at_answer.expect("B answered");
    assert!(old > 10, "old-session datagrams after the answer: {old}");
    let t = n.now + Duration::from_secs(1);
    n.run_until(t);
    let b = n.ends[1].stats();
    assert_eq!((b.handshakes_answered, b.sessions_started), (2, 1), "{b:?}");
    assert!(!n.delivered[1].is_empty(), "traffic resumed");
}

#[test]
fn a_vanished_peer_is_retried_every_retry_interval_and_no_faster() {
    let mut n = Pair::new(SessionConfig::default(), false);
    n.send(0, &packet(1, 10));
    // B disappears for good: A's datagrams go nowhere.
    n.drop_next[0] = usize::MAX;
    n.send(0, &packet(2, 10));
    let t0 = n.now;
    n.run_until(t0 + Duration::from_secs(200));
    let s = n.ends[0].stats();
    // Silence noticed after 15 s, then a try every 5 s for up to 90 s at a time, for as long
    // as the link has data to send (its retransmissions re-arm the silence timer).
    assert!(s.handshakes_after_silence >= 1);
    let tries = s.handshakes_initiated - 1;
    assert!((18..=200 / 5 + 1).contains(&tries), "{tries}");
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
                    + s.handshakes_answered + s.handshakes_completed + s.cookies_received,
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

/// Every event an end hands out, in order.
fn events(t: &mut Tunnel) -> Vec<TunnelEvent> {
    std::iter::from_fn(|| t.poll_event()).collect()
}

#[test]
fn every_handshake_and_session_is_an_event_even_several_between_polls() {
    // Three initiations, two answers and one session, all before anyone polls: a driver that
    // diffed counters once per turn would have logged each kind once.
    let mut n = Pair::new(SessionConfig::default(), false);
    n.drop_next = [1, 1];
    n.send(0, &packet(1, 10));
    let t = n.now + Duration::from_secs(12);
    n.run_until(t);
    let (a, b) = (n.ends[0].stats(), n.ends[1].stats());
    let ea = events(&mut n.ends[0]);
    let eb = events(&mut n.ends[1]);
    let count =
        |es: &[TunnelEvent], f: fn(&TunnelEvent) -> bool| es.iter().filter(|e| f(e)).count() as u64;
    let peer_b = Some(n.addrs[1]);
    assert_eq!(
        count(&ea, |e| matches!(e, TunnelEvent::HandshakeInitiated { .. })),
        a.handshakes_initiated
    );
    assert_eq!(a.handshakes_initiated, 3);
    assert!(
        ea.contains(&TunnelEvent::HandshakeCompleted { peer: peer_b }),
        "{ea:?}"
    );
    assert!(
        ea.contains(&TunnelEvent::SessionStarted { number: 1 }),
        "{ea:?}"
    );
    assert_eq!(
        count(&eb, |e| matches!(e, TunnelEvent::HandshakeAnswered { .. })),
        b.handshakes_answered
    );
    assert!(b.handshakes_answered >= 2, "{b:?}");
    // Handed out once: nothing is left.
    assert!(n.ends[0].poll_event().is_none() && n.ends[1].poll_event().is_none());
}

#[test]
fn refused_datagrams_come_out_as_events_whose_counts_are_the_counters() {
    let (mut n, init, data) = after_first_handshake();
    let _ = events(&mut n.ends[1]);
    let b0 = n.ends[1].stats().rejected;
    let from = addr("203.0.113.9:9");
    for d in [
        &data[..],
        &init[..],
        &data[..20],
        &[3, 2][..],
        &b"GET /"[..],
    ] {
        let mut d = d.to_vec();
        n.ends[1].handle_datagram(n.now, from, &mut d);
    }
    let mut got = Rejected::default();
    for e in events(&mut n.ends[1]) {
        match e {
            TunnelEvent::Rejected(r) => got.add(&r),
            other => panic!("only refusals expected, got {other:?}"),
        }
    }
    let b1 = n.ends[1].stats().rejected;
    assert_eq!(got.total(), b1.total() - b0.total());
    assert_eq!(got.total(), 5);
    assert_eq!((got.replayed, got.truncated, got.garbage), (2, 2, 1));
}
