//! Tests of the Reed-Solomon FEC service: policy parameters on the wire, repair without
//! retransmission below t, persistent in-order exactly-once delivery above t and under loss
//! and truncation, and FLEX adaptation under a seeded bit-error channel.

use super::frame::{self, data_frame_len, BLOCK_LEN, HEADER_LEN};
use super::*;
use crate::wire::SeqWidth;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn config(policy: Policy) -> RsFecConfig {
    RsFecConfig {
        policy,
        ..RsFecConfig::default()
    }
}

fn end(policy: Policy) -> RsFec {
    RsFec::new(config(policy), HeaderFormat::new(SeqWidth::W8))
}

/// What a channel does to one frame.
enum Fate {
    Deliver,
    Lose,
}

/// Drives `a` -> `b` data (and `b` -> `a` reports) one frame per direction per millisecond.
/// `ab` and `ba` may corrupt, truncate or drop frames. Returns the SDUs `b` delivered.
fn run(
    a: &mut RsFec,
    b: &mut RsFec,
    sdus: &[Vec<u8>],
    mut ab: impl FnMut(&mut Vec<u8>, u64) -> Fate,
    mut ba: impl FnMut(&mut Vec<u8>) -> Fate,
    max_ms: u64,
) -> Vec<Delivery> {
    let mut pending: VecDeque<Vec<u8>> = sdus.iter().cloned().collect();
    let mut got = Vec::new();
    let mut buf = Vec::new();
    let mut tx_index = 0u64;
    for ms in 1..=max_ms {
        let now = Instant::from_millis(ms);
        while let Some(s) = pending.pop_front() {
            if let Err(back) = a.handle_sdu(now, Sdu::whole(s)) {
                pending.push_front(back.data);
                break;
            }
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
        buf.clear();
        if a.poll_transmit(now, &mut buf) {
            tx_index += 1;
            if let Fate::Deliver = ab(&mut buf, tx_index) {
                b.handle_frame(now, &buf);
            }
        }
        buf.clear();
        if b.poll_transmit(now, &mut buf) {
            if let Fate::Deliver = ba(&mut buf) {
                a.handle_frame(now, &buf);
            }
        }
        while let Some(d) = b.poll_deliver() {
            got.push(d);
        }
        if got.len() == sdus.len()
            && pending.is_empty()
            && !a.has_transmit(now)
            && a.inflight.is_empty()
        {
            break;
        }
    }
    got
}

fn sdus(rng: &mut ChaCha8Rng, count: usize, max: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|_| {
            let n = rng.gen_range(1..=max);
            (0..n).map(|_| rng.gen()).collect()
        })
        .collect()
}

fn assert_exactly_once_in_order(got: &[Delivery], sent: &[Vec<u8>]) {
    assert_eq!(
        got.len(),
        sent.len(),
        "delivered {} of {}",
        got.len(),
        sent.len()
    );
    for (i, (d, s)) in got.iter().zip(sent).enumerate() {
        assert_eq!(d.seq, i as u64);
        assert_eq!(&d.data, s, "SDU {i} differs");
    }
}

/// Byte ranges of the blocks of a data frame (after the header), or empty for reports.
fn block_ranges(frame: &[u8]) -> Vec<std::ops::Range<usize>> {
    if frame.len() == frame::REPORT_LEN {
        return Vec::new();
    }
    let nsym = frame[2] as usize;
    let len = ((frame[0] as usize & 7) << 8) | frame[1] as usize;
    let mut out = Vec::new();
    let mut off = HEADER_LEN;
    let mut data = len + 4;
    while data > 0 {
        let k = data.min(BLOCK_LEN - nsym);
        out.push(off..off + k + nsym);
        off += k + nsym;
        data -= k;
    }
    out
}

/// Puts exactly `count` symbol errors into `range` of `frame`.
fn symbol_errors(
    rng: &mut ChaCha8Rng,
    frame: &mut [u8],
    range: std::ops::Range<usize>,
    count: usize,
) {
    let mut hit = Vec::new();
    while hit.len() < count.min(range.len()) {
        let p = rng.gen_range(range.clone());
        if !hit.contains(&p) {
            hit.push(p);
            frame[p] ^= rng.gen_range(1..=255u8);
        }
    }
}

/// A binary symmetric channel: flips each bit independently with probability `ber`.
struct BitErrors {
    rng: ChaCha8Rng,
    ber: f64,
}

impl BitErrors {
    fn apply(&mut self, frame: &mut [u8]) {
        if self.ber <= 0.0 {
            return;
        }
        let bits = frame.len() * 8;
        // Geometric gaps between flipped bits: the same law as a flip per bit, fewer draws.
        let mut pos = 0usize;
        loop {
            let u: f64 = self.rng.gen::<f64>().max(f64::MIN_POSITIVE);
            pos += (u.ln() / (1.0 - self.ber).ln()).floor() as usize;
            if pos >= bits {
                break;
            }
            frame[pos / 8] ^= 1 << (pos % 8);
            pos += 1;
        }
    }
}

#[test]
fn policies_put_their_parameters_on_the_wire() {
    // (policy, payload that fills one frame, frame length, blocks, parity per block)
    let cases = [
        (Policy::Bold, 5 * 255 - 4, 12 + 5 * 255, 5, 0),
        (Policy::Light, 5 * (255 - 12) - 4, 12 + 5 * 255, 5, 12),
        (Policy::Robust, 255 - 74 - 4, 12 + 255, 1, 74),
    ];
    for (p, cap, frame_len, blocks, nsym) in cases {
        let mut a = end(p);
        let now = Instant::ZERO;
        a.handle_sdu(now, Sdu::whole(vec![7u8; cap + 1])).unwrap();
        let mut f = Vec::new();
        assert!(a.poll_transmit(now, &mut f));
        assert_eq!(f.len(), frame_len, "{p:?}");
        assert_eq!(f[2], nsym);
        assert_eq!(f[5], blocks);
        // The one byte that did not fit goes in a second, single-block frame.
        let mut g = Vec::new();
        assert!(a.poll_transmit(now, &mut g));
        assert_eq!(g.len(), data_frame_len(1, nsym as usize));
        assert_eq!(a.stats().parity_sent, (blocks as u64 + 1) * nsym as u64);
    }
    let f = end(Policy::Flex);
    assert_eq!((f.policy().blocks(), f.policy().nsym()), (5, 12));
    assert_eq!(f.data_overhead(), 16);
    assert_eq!(f.name(), "rs_fec");
}

#[test]
fn config_variant_builds_the_service() {
    let c = crate::service::ServiceConfig::RsFec(config(Policy::Robust));
    assert_eq!(c.scheme(), "rs_fec");
    let s = c.build(HeaderFormat::new(SeqWidth::W8));
    assert_eq!(s.name(), "rs_fec");
}

#[test]
fn errors_below_t_are_repaired_without_retransmission() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_0001);
    for p in [Policy::Light, Policy::Robust] {
        let (mut a, mut b) = (end(p), end(p));
        let sent = sdus(&mut rng, 60, 1500);
        let t = a.policy().nsym() as usize / 2;
        let mut chan = ChaCha8Rng::seed_from_u64(0x45_0002);
        let got = run(
            &mut a,
            &mut b,
            &sent,
            |f, _| {
                for r in block_ranges(f) {
                    let e = chan.gen_range(1..=t);
                    symbol_errors(&mut chan, f, r, e);
                }
                Fate::Deliver
            },
            |_| Fate::Deliver,
            20_000,
        );
        assert_exactly_once_in_order(&got, &sent);
        assert_eq!(a.stats().retransmissions, 0, "{p:?}");
        assert_eq!(b.stats().recovered, a.stats().frames_sent, "{p:?}");
        assert!(b.rs_stats().symbols_corrected > 0);
        assert_eq!(b.rs_stats().frames_failed, 0);
    }
}

#[test]
fn errors_above_t_are_retransmitted_and_delivered_once_in_order() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_0003);
    let (mut a, mut b) = (end(Policy::Robust), end(Policy::Robust));
    let sent = sdus(&mut rng, 80, 600);
    let t = 37;
    let mut chan = ChaCha8Rng::seed_from_u64(0x45_0004);
    let got = run(
        &mut a,
        &mut b,
        &sent,
        |f, _| {
            // Every third frame gets more than t errors in its block (header left intact).
            if chan.gen_range(0..3) == 0 {
                for r in block_ranges(f) {
                    let e = t + 1 + chan.gen_range(0..20);
                    symbol_errors(&mut chan, f, r, e);
                }
            }
            Fate::Deliver
        },
        |_| Fate::Deliver,
        20_000,
    );
    assert_exactly_once_in_order(&got, &sent);
    assert!(a.stats().retransmissions > 10);
    assert!(b.rs_stats().frames_failed > 10);
    assert_eq!(a.stats().abandoned, 0);
}

#[test]
fn loss_truncation_and_lost_reports_still_deliver_exactly_once() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_0005);
    for p in [Policy::Bold, Policy::Flex] {
        let (mut a, mut b) = (end(p), end(p));
        let sent = sdus(&mut rng, 100, 3000);
        let mut chan = ChaCha8Rng::seed_from_u64(0x45_0006);
        let mut back = ChaCha8Rng::seed_from_u64(0x45_0007);
        let got = run(
            &mut a,
            &mut b,
            &sent,
            |f, _| match chan.gen_range(0..10) {
                0 => Fate::Lose,
                1 => {
                    let keep = chan.gen_range(0..f.len());
                    f.truncate(keep);
                    Fate::Deliver
                }
                _ => Fate::Deliver,
            },
            |_| {
                if back.gen_range(0..10) == 0 {
                    Fate::Lose
                } else {
                    Fate::Deliver
                }
            },
            200_000,
        );
        assert_exactly_once_in_order(&got, &sent);
        assert!(a.stats().retransmissions > 0);
        assert!(b.rs_stats().frames_truncated > 0, "{p:?}");
    }
}

#[test]
fn flex_raises_parity_under_bit_errors_and_relaxes_after() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_0008);
    let (mut a, mut b) = (end(Policy::Flex), end(Policy::Flex));
    let start = a.policy().nsym();
    // 003 Table 1 "table" scenario: bit error rate 4.9e-3.
    let mut fwd = BitErrors {
        rng: ChaCha8Rng::seed_from_u64(0x45_0009),
        ber: 4.9e-3,
    };
    let mut rev = BitErrors {
        rng: ChaCha8Rng::seed_from_u64(0x45_000a),
        ber: 4.9e-3,
    };
    let noisy = sdus(&mut rng, 150, 1400);
    let got = run(
        &mut a,
        &mut b,
        &noisy,
        |f, _| {
            fwd.apply(f);
            Fate::Deliver
        },
        |f| {
            rev.apply(f);
            Fate::Deliver
        },
        400_000,
    );
    assert_exactly_once_in_order(&got, &noisy);
    let high = a.policy().nsym();
    eprintln!(
        "noisy: nsym {start} -> {high}, blocks {}, sender {:?}, receiver {:?} {:?}",
        a.policy().blocks(),
        a.stats(),
        b.stats(),
        b.rs_stats()
    );
    assert!(high >= 48, "parity only reached {high} under BER 4.9e-3");
    assert!(high > start);
    assert!(b.stats().recovered > 0);
    // The errors stop: FLEX must relax parity and grow frames back.
    let quiet = sdus(&mut rng, 300, 1400);
    let got = run(
        &mut a,
        &mut b,
        &quiet,
        |_, _| Fate::Deliver,
        |_| Fate::Deliver,
        400_000,
    );
    assert_eq!(got.len(), quiet.len());
    for (d, s) in got.iter().zip(&quiet) {
        assert_eq!(&d.data, s);
    }
    assert!(
        a.policy().nsym() <= 4,
        "parity still {} after the errors stopped",
        a.policy().nsym()
    );
    assert_eq!(a.policy().blocks(), 5);
}

#[test]
fn bold_cannot_repair_but_persists() {
    // BOLD sends no parity: any bit error costs a retransmission, yet delivery completes.
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_000b);
    let (mut a, mut b) = (end(Policy::Bold), end(Policy::Bold));
    let sent = sdus(&mut rng, 40, 1200);
    let mut fwd = BitErrors {
        rng: ChaCha8Rng::seed_from_u64(0x45_000c),
        ber: 3.8e-5,
    };
    let got = run(
        &mut a,
        &mut b,
        &sent,
        |f, _| {
            fwd.apply(f);
            Fate::Deliver
        },
        |_| Fate::Deliver,
        100_000,
    );
    assert_exactly_once_in_order(&got, &sent);
    eprintln!("bold: {:?} {:?}", a.stats(), b.rs_stats());
    assert_eq!(a.stats().parity_sent, 0);
    assert_eq!(b.stats().recovered, 0);
}

#[test]
fn garbage_frames_are_counted_not_fatal() {
    let mut b = end(Policy::Flex);
    let mut rng = ChaCha8Rng::seed_from_u64(0x45_000d);
    for len in 0..400 {
        let f: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        b.handle_frame(Instant::ZERO, &f);
    }
    assert_eq!(b.stats().frames_received, 400);
    assert!(b.stats().malformed >= 390);
    assert!(b.poll_deliver().is_none());
}
