//! Property tests of the ARQ services over the testkit's simulated link.
//!
//! Two ends exchange SDUs in both directions over a link that loses (0-30%), duplicates,
//! corrupts and reorders frames (a delayed frame arrives after later ones; only with 16- and
//! 32-bit sequence numbers, which these runs never wrap) per direction, independently or in Gilbert-Elliott bursts (a bad state where most frames are
//! lost), with random rates, delays, windows, sequence widths and timer scales. After the run
//! drains:
//! - Selective Repeat, Go-Back-N and persistent retransmission delivered every SDU exactly
//!   once, intact and in order;
//! - Karn's RLP delivered each SDU at most once, intact and in order; OOS RLP at most once and
//!   intact (the testkit checks every delivered byte against the SDU's id);
//! - every service's byte counters agree: bytes sent minus overhead equals the payload of the
//!   SDUs it accepted (each sent once as a first copy); a service counts a frame as malformed
//!   only if one came out of order (the services assume an in-order link, and an overtaken
//!   acknowledgement falls outside their window).
//!
//! A last property feeds arbitrary bytes to `handle_frame` of every service, both through the
//! channel and directly at random points of a run: nothing panics and no service loops at one
//! instant.
//! Every random draw comes from proptest or a ChaCha8 generator seeded by it.

use mslink_link::service::go_back_n::GoBackNConfig;
use mslink_link::service::karn_rlp::KarnRlpConfig;
use mslink_link::service::persistent::PersistentConfig;
use mslink_link::service::selective_repeat::SelectiveRepeatConfig;
use mslink_link::service::ServiceConfig;
use mslink_link::testkit::{Fate, LinkParams, Pair};
use mslink_link::wire::{HeaderFormat, SeqWidth};
use mslink_link::{Duration, Instant};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scheme {
    GoBackN,
    SelectiveRepeat,
    KarnRlp,
    OosRlp,
    Persistent,
}

const ALL: [Scheme; 5] = [
    Scheme::GoBackN,
    Scheme::SelectiveRepeat,
    Scheme::KarnRlp,
    Scheme::OosRlp,
    Scheme::Persistent,
];

/// Loss, duplication, corruption and reordering probabilities of one direction, and its
/// bursts: `(p, r, loss)` moves good -> bad with probability p and back with r after each
/// frame, and loses frames with `loss` while bad.
#[derive(Clone, Copy, Debug)]
struct Errors {
    loss: f64,
    dup: f64,
    corrupt: f64,
    reorder: f64,
    burst: Option<(f64, f64, f64)>,
}

#[derive(Clone, Debug)]
struct Scenario {
    width: SeqWidth,
    segmented: bool,
    window: u64,
    rate_bps: u64,
    delay_ms: u64,
    /// Multiplies every timer (below 1: spurious retransmissions and early NACKs).
    timer_scale: f64,
    errors: [Errors; 2],
    seed: u64,
    /// Per end: (gap before the SDU in ms, length).
    sdus: [Vec<(u64, usize)>; 2],
}

fn errors() -> impl Strategy<Value = Errors> {
    (
        0.0..0.3f64,
        0.0..0.1f64,
        0.0..0.1f64,
        0.0..0.1f64,
        proptest::option::of((0.001..0.05f64, 0.1..0.5f64, 0.5..1.0f64)),
    )
        .prop_map(|(loss, dup, corrupt, reorder, burst)| Errors {
            loss,
            dup,
            corrupt,
            reorder,
            burst,
        })
}

fn sdus(max: usize) -> impl Strategy<Value = Vec<(u64, usize)>> {
    proptest::collection::vec((0u64..40, 8usize..300), 0..max)
}

fn scenario(max_sdus: usize) -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just(SeqWidth::W8), Just(SeqWidth::W16)],
        any::<bool>(),
        1u64..80,
        prop_oneof![Just(0u64), Just(86_400), Just(5_000_000)],
        0u64..120,
        0.5..3.0f64,
        [errors(), errors()],
        any::<u64>(),
        [sdus(max_sdus), sdus(max_sdus)],
    )
        .prop_map(
            |(width, segmented, window, rate_bps, delay_ms, timer_scale, errors, seed, sdus)| {
                Scenario {
                    width,
                    segmented,
                    window,
                    rate_bps,
                    delay_ms,
                    timer_scale,
                    errors,
                    seed,
                    sdus,
                }
            },
        )
}

impl Scenario {
    /// A round trip on this link with a 300-byte frame each way, in ms.
    fn rtt_ms(&self) -> f64 {
        let frame = if self.rate_bps == 0 {
            0.0
        } else {
            300.0 * 8.0 * 1e3 / self.rate_bps as f64
        };
        2.0 * (self.delay_ms as f64 + frame)
    }

    fn config(&self, s: Scheme) -> ServiceConfig {
        let k = self.timer_scale;
        let rtt = self.rtt_ms();
        let nack = k * (rtt + 50.0);
        let timeout = k * (2.0 * rtt + 100.0);
        match s {
            Scheme::GoBackN => ServiceConfig::GoBackN(GoBackNConfig {
                window: self.window,
                timeout_ms: timeout,
                ack_delay_ms: if self.seed.is_multiple_of(2) {
                    0.0
                } else {
                    k * 5.0
                },
                queue_limit: 20,
            }),
            Scheme::SelectiveRepeat => ServiceConfig::SelectiveRepeat(SelectiveRepeatConfig {
                window: self.window,
                timeout_ms: timeout,
                nack_interval_ms: nack,
                ack_delay_ms: if self.seed.is_multiple_of(2) {
                    0.0
                } else {
                    k * 5.0
                },
                queue_limit: 20,
            }),
            Scheme::KarnRlp | Scheme::OosRlp => {
                let c = KarnRlpConfig {
                    window: self.window,
                    max_retransmissions: (self.seed % 4) as u32,
                    nack_interval_ms: nack,
                    keepalive_interval_ms: nack,
                    gap_wait_ms: k * 5.0 * (rtt + 50.0),
                    queue_limit: 20,
                };
                if s == Scheme::KarnRlp {
                    ServiceConfig::KarnRlp(c)
                } else {
                    ServiceConfig::OosRlp(c)
                }
            }
            Scheme::Persistent => ServiceConfig::Persistent(PersistentConfig {
                window: self.window,
                nack_interval_ms: nack,
                keepalive_interval_ms: nack,
                queue_limit: 20,
            }),
        }
    }

    fn pair(&self, s: Scheme) -> Pair {
        let f = HeaderFormat {
            width: self.width,
            segmented: self.segmented,
            piggyback_ack: false,
        };
        let c = self.config(s);
        let link = LinkParams {
            rate_bps: self.rate_bps,
            delay: Duration::from_millis(self.delay_ms),
            frame_overhead: 0,
        };
        let mut p = Pair::new(c.build(f), c.build(f), link);
        // A delayed frame arrives after a few more frame times and round trips' worth of
        // later frames at most: reordering within what a link layer's window can absorb.
        let frame_ms = if self.rate_bps == 0 {
            1.0
        } else {
            300.0 * 8.0 * 1e3 / self.rate_bps as f64
        };
        let max_delay_ms = 4.0 * frame_ms + self.delay_ms as f64;
        // An 8-bit sequence number comes round again after 256 frames, and a frame delayed past
        // that is indistinguishable from a new one (TCP's maximum segment lifetime rule, RFC
        // 9293 §3.4.1): a link with 8-bit sequence numbers must keep frames in order, so
        // frames are reordered only on 16- and 32-bit links, where these runs never wrap.
        let may_reorder = self.width != SeqWidth::W8;
        for d in 0..2 {
            let mut e = self.errors[d];
            if !may_reorder {
                e.reorder = 0.0;
            }
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (d as u64 + 1));
            let mut bad = false;
            p.set_channel(d, move |_: Instant, _: &[u8]| {
                let loss = match (e.burst, bad) {
                    (Some((_, _, l)), true) => l,
                    _ => e.loss,
                };
                if let Some((p_bad, r_good, _)) = e.burst {
                    let flip: f64 = rng.gen();
                    bad = if bad { flip >= r_good } else { flip < p_bad };
                }
                let x: f64 = rng.gen();
                if x < loss {
                    Fate::Lose
                } else if x < loss + e.dup {
                    Fate::Duplicate
                } else if x < loss + e.dup + e.corrupt {
                    Fate::Corrupt
                } else if x < loss + e.dup + e.corrupt + e.reorder {
                    let ms = rng.gen_range(0.0..=max_delay_ms);
                    Fate::Delay(Duration::from_secs_f64(ms / 1e3))
                } else {
                    Fate::Deliver
                }
            });
        }
        for (end, list) in self.sdus.iter().enumerate() {
            let mut t = Instant::ZERO;
            for &(gap, len) in list {
                t += Duration::from_millis(gap);
                p.offer(end, t, len);
            }
        }
        p
    }
}

/// Bytes sent minus overhead is the payload of the SDUs the end accepted.
fn check_accounting(p: &Pair, end: usize) -> Result<(), TestCaseError> {
    let st = p.end(end).stats();
    let payload: u64 = p
        .records()
        .iter()
        .filter(|r| r.from == end && r.accepted.is_some())
        .map(|r| r.len as u64)
        .sum();
    prop_assert_eq!(st.bytes_sent - st.overhead_bytes, payload);
    prop_assert_eq!(st.frames_sent, p.dir_stats(end).frames);
    // The services assume a link that keeps frames in order: an acknowledgement overtaken by a
    // later one is out of their window and counted as malformed (and ignored). Only then.
    let reordered = p.dir_stats(1 - end).delayed;
    prop_assert!(
        st.malformed <= reordered,
        "{} malformed, but only {} frames came out of order and no garbage was sent",
        st.malformed,
        reordered
    );
    Ok(())
}

fn run(sc: &Scenario, s: Scheme) -> Result<(), TestCaseError> {
    let mut p = sc.pair(s);
    let idle = p.run_until_idle(Instant::from_secs(24 * 3600));
    prop_assert!(idle, "{s:?} did not drain by {}", p.now());
    for from in 0..2 {
        let to = 1 - from;
        let res = match s {
            Scheme::GoBackN | Scheme::SelectiveRepeat | Scheme::Persistent => {
                p.check_exactly_once_in_order(from)
            }
            Scheme::KarnRlp => p.check_at_most_once(from).and_then(|()| {
                let o = p.delivered_order(to);
                match o.windows(2).find(|w| w[0] >= w[1]) {
                    Some(w) => Err(format!("{} delivered after {}", w[1], w[0])),
                    None => Ok(()),
                }
            }),
            Scheme::OosRlp => p.check_at_most_once(from),
        };
        if let Err(e) = res {
            return Err(TestCaseError::fail(format!("{s:?}, from end {from}: {e}")));
        }
        check_accounting(&p, from)?;
        prop_assert_eq!(
            p.end(to).stats().delivered,
            p.delivered_order(to).len() as u64
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn selective_repeat_delivers_everything_once_in_order(sc in scenario(150)) {
        run(&sc, Scheme::SelectiveRepeat)?;
    }

    #[test]
    fn go_back_n_delivers_everything_once_in_order(sc in scenario(120)) {
        run(&sc, Scheme::GoBackN)?;
    }

    #[test]
    fn persistent_delivers_everything_once_in_order(sc in scenario(150)) {
        run(&sc, Scheme::Persistent)?;
    }

    #[test]
    fn karn_rlp_never_duplicates_damages_or_reorders(sc in scenario(150)) {
        run(&sc, Scheme::KarnRlp)?;
    }

    #[test]
    fn oos_rlp_delivers_at_most_once_and_intact(sc in scenario(150)) {
        run(&sc, Scheme::OosRlp)?;
    }

    #[test]
    fn arbitrary_frame_bytes_never_panic(
        sc in scenario(40),
        garbage_p in 0.0..0.3f64,
        injections in proptest::collection::vec(
            (0usize..2, 0u64..400, proptest::collection::vec(any::<u8>(), 0..24)),
            0..40,
        ),
    ) {
        for s in ALL {
            let mut p = sc.pair(s);
            for d in 0..2 {
                let mut rng = ChaCha8Rng::seed_from_u64(sc.seed.wrapping_add(17 + d as u64));
                p.set_channel(d, move |_: Instant, frame: &[u8]| {
                    if rng.gen_bool(garbage_p) {
                        // Sometimes a real frame with a few bytes changed, sometimes noise.
                        let mut g = if rng.gen_bool(0.5) { frame.to_vec() } else {
                            (0..rng.gen_range(0..12)).map(|_| rng.gen()).collect()
                        };
                        for _ in 0..rng.gen_range(0..3) {
                            if !g.is_empty() {
                                let i = rng.gen_range(0..g.len());
                                g[i] = rng.gen();
                            }
                        }
                        Fate::Garbage(g)
                    } else {
                        Fate::Deliver
                    }
                });
            }
            let mut t = Instant::ZERO;
            for (end, gap, bytes) in &injections {
                t += Duration::from_millis(*gap);
                p.run_until(t);
                p.inject(*end, bytes);
            }
            // Garbage can forge acknowledgements, so a fully reliable scheme may legitimately
            // never converge (on a real link the CRC keeps garbage out); what must hold is that
            // nothing panics and no service loops at one instant (the testkit asserts that).
            p.run_until(t + Duration::from_secs(60));
            for end in 0..2 {
                let st = p.end(end).stats();
                prop_assert!(st.frames_received >= st.malformed);
            }
        }
    }
}

/// The configuration names (snake_case scheme tags) and the defaults they build, read through
/// serde's own in-memory deserializer.
#[test]
fn configs_are_named_in_snake_case_and_refuse_unknown_keys() {
    use serde::de::value::{Error, MapDeserializer};
    use serde::Deserialize;
    let read = |pairs: Vec<(&'static str, &'static str)>| {
        ServiceConfig::deserialize(MapDeserializer::<_, Error>::new(pairs.into_iter()))
    };
    let f = HeaderFormat::new(SeqWidth::W8);
    for (tag, want) in [
        (
            "go_back_n",
            ServiceConfig::GoBackN(GoBackNConfig::default()),
        ),
        (
            "selective_repeat",
            ServiceConfig::SelectiveRepeat(SelectiveRepeatConfig::default()),
        ),
        ("karn_rlp", ServiceConfig::KarnRlp(KarnRlpConfig::default())),
        ("oos_rlp", ServiceConfig::OosRlp(KarnRlpConfig::default())),
        (
            "persistent",
            ServiceConfig::Persistent(PersistentConfig::default()),
        ),
    ] {
        let got = read(vec![("scheme", tag)]).unwrap();
        assert_eq!(got, want);
        assert_eq!(got.scheme(), tag);
        let end = got.build(f);
        assert_eq!(end.name(), tag);
        // 004 §III.A: GBN/SR 2 bytes (sequence + ack), the RLP family 1 byte.
        let hdr = if tag == "go_back_n" || tag == "selective_repeat" {
            2
        } else {
            1
        };
        assert_eq!(end.data_overhead(), hdr, "{tag}");
        assert!(read(vec![("scheme", tag), ("bogus", "1")]).is_err());
    }
    // 004 §III.A: Karn's RLP gives up after 3 retransmissions by default.
    assert_eq!(KarnRlpConfig::default().max_retransmissions, 3);
}
