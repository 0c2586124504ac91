//! Closed-form checks of residual loss and retransmission counts.
//!
//! Setting: one-way traffic over a link that loses each *data* frame independently with
//! probability p in the forward direction; control frames (keepalives forward, NACKs and acks
//! back) are never lost, so every loss is detected and NACKed. Then:
//!
//! * Karn's RLP with at most k retransmissions loses a frame exactly when all k + 1 copies are
//!   lost: residual loss p^(k+1) (003 §3.2.3, Fig. 5). The retransmissions of one frame are
//!   R = min(G, k), G the number of copies lost before the first success, so
//!   E[R] = sum_{j=1..k} P(R >= j) = sum p^j and E[R^2] = sum_{j=1..k} (2j - 1) p^j.
//! * Selective Repeat never gives up: residual loss 0, and the copies of one frame are
//!   geometric, mean 1/(1-p), variance p/(1-p)^2 (004 §III.A: full recovery).
//! * Persistent retransmission (003 §3) likewise loses nothing.
//!
//! Each count over n frames is checked against an interval of 4 standard deviations around
//! its expectation (normal approximation of a sum of n independent per-frame outcomes; the
//! chance that a correct implementation falls outside is about 6e-5 per check). Channels draw
//! from ChaCha8 generators with fixed seeds, so each run is reproducible.

use mslink_link::service::karn_rlp::KarnRlpConfig;
use mslink_link::service::persistent::PersistentConfig;
use mslink_link::service::selective_repeat::SelectiveRepeatConfig;
use mslink_link::service::ServiceConfig;
use mslink_link::testkit::{Fate, LinkParams, Pair};
use mslink_link::wire::{HeaderFormat, SeqWidth};
use mslink_link::{Duration, Instant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Frames per (p, k) point.
const N: u64 = 20_000;
/// Width of the acceptance interval in standard deviations.
const SIGMAS: f64 = 4.0;

/// Runs `n` SDUs of 100 bytes, one per millisecond, from end 0 to end 1 over an unlimited-rate
/// link with 5 ms delay; forward data frames are lost with probability `p`.
fn run(cfg: ServiceConfig, p: f64, n: u64, seed: u64) -> Pair {
    let f = HeaderFormat::new(SeqWidth::W16);
    let link = LinkParams {
        rate_bps: 0,
        delay: Duration::from_millis(5),
        frame_overhead: 0,
    };
    let mut pair = Pair::new(cfg.build(f), cfg.build(f), link);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    pair.set_channel(0, move |_: Instant, frame: &[u8]| {
        let data = frame.first().is_some_and(|b| b & 0x80 == 0);
        if data && rng.gen_bool(p) {
            Fate::Lose
        } else {
            Fate::Deliver
        }
    });
    for i in 0..n {
        pair.offer(0, Instant::from_millis(i), 100);
    }
    assert!(
        pair.run_until_idle(Instant::from_secs(3600)),
        "did not drain"
    );
    pair.check_at_most_once(0).unwrap();
    pair
}

/// Asserts that `observed` lies within SIGMAS standard deviations of `mean`.
fn within(what: &str, observed: f64, mean: f64, sd: f64) {
    let lo = mean - SIGMAS * sd;
    let hi = mean + SIGMAS * sd;
    assert!(
        (lo..=hi).contains(&observed),
        "{what}: observed {observed}, expected {mean} (interval [{lo:.2}, {hi:.2}])"
    );
}

fn karn(k: u32) -> ServiceConfig {
    // Round trip 10 ms: NACKs repeat after 20 ms, the receiver waits far longer than k + 1
    // NACK rounds, and the window (W16 space) covers every frame in recovery.
    ServiceConfig::KarnRlp(KarnRlpConfig {
        window: 2000,
        max_retransmissions: k,
        nack_interval_ms: 20.0,
        keepalive_interval_ms: 20.0,
        gap_wait_ms: 2000.0,
        queue_limit: 100_000,
    })
}

#[test]
fn karn_rlp_residual_loss_is_p_to_the_k_plus_1() {
    for (i, &p) in [0.1, 0.2, 0.3, 0.5].iter().enumerate() {
        for k in 0..=3u32 {
            let pair = run(karn(k), p, N, 1000 + 10 * i as u64 + k as u64);
            let n = N as f64;
            let lost = n - pair.delivered_order(1).len() as f64;
            // Independent derivation: a frame is lost iff all k + 1 copies are lost.
            let q = p.powi(k as i32 + 1);
            within(
                &format!("lost frames, p={p} k={k}"),
                lost,
                n * q,
                (n * q * (1.0 - q)).sqrt(),
            );
            let rtx = pair.end(0).stats().retransmissions as f64;
            let m1: f64 = (1..=k).map(|j| p.powi(j as i32)).sum();
            let m2: f64 = (1..=k).map(|j| (2 * j - 1) as f64 * p.powi(j as i32)).sum();
            within(
                &format!("retransmissions, p={p} k={k}"),
                rtx,
                n * m1,
                (n * (m2 - m1 * m1)).sqrt(),
            );
            // Every loss is given up by the receiver at its last NACK and abandoned by the
            // sender on reading it; nothing is delivered twice (checked in `run`).
            assert_eq!(pair.end(0).stats().abandoned as f64, lost, "p={p} k={k}");
            assert_eq!(pair.end(1).stats().abandoned as f64, lost, "p={p} k={k}");
        }
    }
}

#[test]
fn selective_repeat_loses_nothing_and_sends_1_over_1_minus_p_copies() {
    for (i, &p) in [0.1, 0.2, 0.3, 0.5].iter().enumerate() {
        let cfg = ServiceConfig::SelectiveRepeat(SelectiveRepeatConfig {
            window: 2000,
            timeout_ms: 100.0,
            nack_interval_ms: 20.0,
            ack_delay_ms: 0.0,
            queue_limit: 100_000,
        });
        let pair = run(cfg, p, N, 2000 + i as u64);
        pair.check_exactly_once_in_order(0).unwrap();
        let copies = (N + pair.end(0).stats().retransmissions) as f64;
        let n = N as f64;
        within(
            &format!("copies per frame, p={p}"),
            copies,
            n / (1.0 - p),
            (n * p).sqrt() / (1.0 - p),
        );
    }
}

#[test]
fn persistent_loses_nothing() {
    for (i, &p) in [0.3, 0.6].iter().enumerate() {
        let cfg = ServiceConfig::Persistent(PersistentConfig {
            window: 2000,
            nack_interval_ms: 20.0,
            keepalive_interval_ms: 20.0,
            queue_limit: 100_000,
        });
        let pair = run(cfg, p, 5_000, 3000 + i as u64);
        pair.check_exactly_once_in_order(0).unwrap();
        let copies = (5_000 + pair.end(0).stats().retransmissions) as f64;
        within(
            &format!("copies per frame, p={p}"),
            copies,
            5_000.0 / (1.0 - p),
            (5_000.0 * p).sqrt() / (1.0 - p),
        );
    }
}
