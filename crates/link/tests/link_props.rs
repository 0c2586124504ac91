//! Property tests of whole link ends: two `MultiServiceLink`s over a hop that loses,
//! duplicates and corrupts frames in both directions, with segmentation and CRC.
//!
//! Reliable schemes (Selective Repeat, Go-Back-N, persistent, Reed-Solomon FEC over persistent
//! ARQ, which repairs corrupted frames instead of relying on the link CRC) deliver every accepted packet
//! exactly once and in order; bounded schemes (Karn and OOS RLP, XOR FEC) never deliver a
//! packet twice and never deliver a corrupted one. Raw Link has no sequence number, so like IP
//! it passes a channel's duplicates on; it still never delivers a corrupted packet. Every packet carries its id and a CRC of its
//! payload so the receiver can tell.

use mslink_link::config::LinkConfig;
use mslink_link::hop::{Channel, Fate, Hop};
use mslink_link::link::MultiServiceLink;
use mslink_link::{Duration, Instant, Side};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const RELIABLE: &[&str] = &["selective_repeat", "go_back_n", "persistent", "rs_fec"];
const BOUNDED: &[&str] = &["karn_rlp", "oos_rlp", "xor_fec"];

/// An IPv4/UDP packet whose payload is `id`, filler, and a CRC-32 of both.
fn packet(id: u32, len: usize) -> Vec<u8> {
    let len = len.max(36);
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&4000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5004u16.to_be_bytes());
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    p[28..32].copy_from_slice(&id.to_be_bytes());
    for (i, b) in p[32..len - 4].iter_mut().enumerate() {
        *b = (id as usize * 31 + i) as u8;
    }
    let crc = crc32fast::hash(&p[28..len - 4]);
    p[len - 4..].copy_from_slice(&crc.to_be_bytes());
    p
}

/// The id of an intact packet, or `None` if its payload CRC fails.
fn check(p: &[u8]) -> Option<u32> {
    if p.len() < 36 {
        return None;
    }
    let n = p.len();
    let crc = u32::from_be_bytes(p[n - 4..].try_into().unwrap());
    (crc32fast::hash(&p[28..n - 4]) == crc)
        .then(|| u32::from_be_bytes(p[28..32].try_into().unwrap()))
}

fn channel(seed: u64, loss: f64, dup: f64, corrupt: f64) -> Channel {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Box::new(move |_, _| {
        let x: f64 = rng.gen();
        if x < loss {
            Fate::Lose
        } else if x < loss + dup {
            Fate::Duplicate
        } else if x < loss + dup + corrupt {
            Fate::Corrupt { bit: rng.gen() }
        } else {
            Fate::Deliver
        }
    })
}

struct Run {
    accepted: Vec<u32>,
    delivered: Vec<Option<u32>>,
}

#[allow(clippy::too_many_arguments)]
fn run(
    scheme: &str,
    frame_size: usize,
    seq_bits: u32,
    n: usize,
    size: usize,
    loss: f64,
    dup: f64,
    corrupt: f64,
    seed: u64,
) -> Run {
    let text = format!(
        "frame_size = {frame_size}\nmtu = 1500\nseq_bits = {seq_bits}\n[[service]]\nname = \"s\"\nscheme = \"{scheme}\"\n"
    );
    let config: LinkConfig = toml::from_str(&text).unwrap();
    let a = MultiServiceLink::new(&config).unwrap();
    let b = MultiServiceLink::new(&config).unwrap();
    let mut hop = Hop::new(
        a,
        b,
        2_000_000,
        Duration::from_millis(2),
        channel(seed, loss, dup, corrupt),
        channel(seed ^ 0x5555, loss, dup, corrupt),
    );
    let mut accepted = Vec::new();
    let mut delivered = Vec::new();
    for i in 0..n as u32 {
        let t = Instant::from_millis(5 * i as u64);
        hop.run_until(t);
        if hop
            .send(Side::Left, &packet(i, size + (i as usize * 97) % 400))
            .is_ok()
        {
            accepted.push(i);
        }
        while let Some((_, p)) = hop.recv(Side::Right) {
            delivered.push(check(&p));
        }
    }
    hop.run_idle(hop.now() + Duration::from_secs(3600));
    while let Some((_, p)) = hop.recv(Side::Right) {
        delivered.push(check(&p));
    }
    Run {
        accepted,
        delivered,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn reliable_schemes_deliver_exactly_once_in_order(
        scheme in proptest::sample::select(RELIABLE),
        frame_size in prop_oneof![Just(100usize), Just(300), Just(1500)],
        seq_bits in prop_oneof![Just(8u32), Just(16)],
        n in 1usize..120,
        size in 36usize..1100,
        loss in 0.0f64..0.3,
        dup in 0.0f64..0.05,
        corrupt in 0.0f64..0.1,
        seed: u64,
    ) {
        let r = run(scheme, frame_size, seq_bits, n, size, loss, dup, corrupt, seed);
        prop_assert!(r.delivered.iter().all(|d| d.is_some()), "{scheme} delivered a corrupted packet");
        let got: Vec<u32> = r.delivered.into_iter().flatten().collect();
        prop_assert_eq!(got, r.accepted, "{} must deliver every accepted packet once, in order", scheme);
    }

    #[test]
    fn bounded_schemes_never_duplicate_or_corrupt(
        scheme in proptest::sample::select(BOUNDED),
        frame_size in prop_oneof![Just(100usize), Just(300), Just(1500)],
        seq_bits in prop_oneof![Just(8u32), Just(16)],
        n in 1usize..120,
        size in 36usize..1100,
        loss in 0.0f64..0.3,
        dup in 0.0f64..0.05,
        corrupt in 0.0f64..0.1,
        seed: u64,
    ) {
        let r = run(scheme, frame_size, seq_bits, n, size, loss, dup, corrupt, seed);
        prop_assert!(r.delivered.iter().all(|d| d.is_some()), "{scheme} delivered a corrupted packet");
        let got: Vec<u32> = r.delivered.into_iter().flatten().collect();
        let mut unique = got.clone();
        unique.sort_unstable();
        unique.dedup();
        prop_assert_eq!(unique.len(), got.len(), "{} delivered a packet twice", scheme);
        prop_assert!(got.iter().all(|id| r.accepted.contains(id)));
        if scheme == "karn_rlp" {
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "Karn's RLP delivers in order");
        }
    }

    #[test]
    fn raw_never_delivers_corrupted_packets(
        frame_size in prop_oneof![Just(100usize), Just(1500)],
        n in 1usize..80,
        size in 36usize..1100,
        corrupt in 0.0f64..0.3,
        seed: u64,
    ) {
        let r = run("raw", frame_size, 8, n, size, 0.05, 0.02, corrupt, seed);
        prop_assert!(r.delivered.iter().all(|d| d.is_some()));
    }

    #[test]
    fn arbitrary_frames_never_panic_a_link(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..40)) {
        let config: LinkConfig = toml::from_str(include_str!("fixtures/all_services.toml")).unwrap();
        let mut link = MultiServiceLink::new(&config).unwrap();
        let mut buf = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let t = Instant::from_millis(i as u64 * 7);
            link.handle_frame(t, f);
            link.handle_timeout(t);
            while link.poll_transmit(t, &mut buf).is_some() {
                buf.clear();
            }
            while link.poll_deliver().is_some() {}
        }
        let s = link.stats();
        prop_assert_eq!(s.frames_received, frames.len() as u64);
    }
}

#[test]
fn lossless_hop_delivers_everything_for_every_scheme() {
    for scheme in RELIABLE.iter().chain(BOUNDED).chain(&["raw"]) {
        let r = run(scheme, 300, 8, 200, 500, 0.0, 0.0, 0.0, 1);
        let got: Vec<u32> = r.delivered.into_iter().flatten().collect();
        assert_eq!(got, r.accepted, "{scheme}");
        assert_eq!(r.accepted.len(), 200, "{scheme}");
    }
}

/// `queued_bytes` (an XCP router's view of the interface queue) counts what waits and only
/// that: every packet's bytes once taken, less as frames go out, nothing once all went out.
#[test]
fn queued_bytes_follow_the_send_queue_for_every_scheme() {
    for scheme in RELIABLE.iter().chain(BOUNDED).chain(&["raw", "snoop"]) {
        // 1500-byte frames: no packet is fragmented, so the queue holds packets whole.
        let text = format!(
            "frame_size = 1500\nmtu = 1500\nseq_bits = 8\n[[service]]\nname = \"s\"\nscheme = \"{scheme}\"\n"
        );
        let config: LinkConfig = toml::from_str(&text).unwrap();
        let mut link = MultiServiceLink::new(&config).unwrap();
        let now = Instant::ZERO;
        assert_eq!(link.queued_bytes(), 0, "{scheme}");
        let sizes = [100usize, 700, 1200];
        for (i, &len) in sizes.iter().enumerate() {
            link.handle_packet(now, &packet(i as u32, len)).unwrap();
        }
        let total: usize = sizes.iter().sum();
        assert_eq!(link.queued_bytes(), total, "{scheme}: everything waits");
        let mut buf = Vec::new();
        let mut left = total;
        for _ in 0..sizes.len() {
            buf.clear();
            // FEC schemes may send parity between data frames; skip those.
            while link.poll_transmit(now, &mut buf).is_some() {
                let q = link.queued_bytes();
                assert!(q <= left, "{scheme}: the queue never grows by sending");
                let sent_data = q < left;
                left = q;
                buf.clear();
                if sent_data {
                    break;
                }
            }
        }
        assert_eq!(link.queued_bytes(), 0, "{scheme}: all sent once");
    }
}

/// `handle_packet_owned` (which queues a packet that fits one SDU without copying it) and
/// `handle_packet` give the same frames and the same counters, for packets that travel whole,
/// packets cut into fragments, and packets refused as too large.
#[test]
fn owned_and_borrowed_packets_make_the_same_frames() {
    for scheme in RELIABLE.iter().chain(BOUNDED).chain(&["raw"]) {
        let text = format!(
            "frame_size = 400\nmtu = 1500\nseq_bits = 8\n[[service]]\nname = \"s\"\nscheme = \"{scheme}\"\n"
        );
        let config: LinkConfig = toml::from_str(&text).unwrap();
        let (mut a, mut b) = (
            MultiServiceLink::new(&config).unwrap(),
            MultiServiceLink::new(&config).unwrap(),
        );
        let now = Instant::ZERO;
        for (i, len) in [60usize, 300, 390, 1000, 1400, 1600]
            .into_iter()
            .enumerate()
        {
            let p = packet(i as u32, len.min(1500));
            let p = if len > 1500 { vec![0u8; len] } else { p };
            assert_eq!(
                a.handle_packet(now, &p),
                b.handle_packet_owned(now, p.clone()),
                "{scheme}: packet of {len} bytes"
            );
        }
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        loop {
            fa.clear();
            fb.clear();
            let (ta, tb) = (a.poll_transmit(now, &mut fa), b.poll_transmit(now, &mut fb));
            assert_eq!(ta.is_some(), tb.is_some(), "{scheme}");
            assert_eq!(fa, fb, "{scheme}: the same frame");
            if ta.is_none() {
                break;
            }
        }
        assert_eq!(a.stats(), b.stats(), "{scheme}: the same counters");
    }
}
