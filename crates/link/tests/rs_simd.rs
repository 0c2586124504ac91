//! The SIMD Reed-Solomon path against the scalar one (the oracle): for random codes, messages,
//! error and erasure patterns, up to and beyond the code's power, `RsCodec::new` (SIMD where
//! the CPU has AVX2 and GFNI) and `RsCodec::new_scalar` must give the same parity, the same
//! verdicts and leave the same bytes. On a CPU without the SIMD kernel both sides are scalar
//! and the tests still pass, which the first test makes visible.

use mslink_link::fec::RsCodec;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Parity counts to draw from: every small one, the service's, and wide registers.
fn nsym_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![
        1usize..=40,
        41usize..=254,
        Just(32),
        Just(74),
        Just(198),
        Just(254)
    ]
}

/// `count` distinct random positions with nonzero error values; returns the positions.
fn inject(rng: &mut ChaCha8Rng, cw: &mut [u8], count: usize) -> Vec<usize> {
    let mut hit = Vec::with_capacity(count);
    while hit.len() < count.min(cw.len()) {
        let p = rng.gen_range(0..cw.len());
        if !hit.contains(&p) {
            hit.push(p);
            cw[p] ^= rng.gen_range(1..=255u8);
        }
    }
    hit
}

#[test]
fn reports_which_path_runs() {
    let c = RsCodec::new(32).unwrap();
    eprintln!("RsCodec::new uses SIMD: {}", c.uses_simd());
    assert!(!RsCodec::new_scalar(32).unwrap().uses_simd());
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("gfni") {
        assert!(
            c.uses_simd(),
            "the CPU has AVX2 and GFNI but the codec is scalar"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn encode_matches_scalar(nsym in nsym_strategy(), len in 0usize..=254, seed in any::<u64>()) {
        let k = len.min(255 - nsym);
        let (fast, slow) = (RsCodec::new(nsym).unwrap(), RsCodec::new_scalar(nsym).unwrap());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let msg: Vec<u8> = (0..k).map(|_| rng.gen()).collect();
        let (mut p1, mut p2) = (vec![0u8; nsym], vec![0u8; nsym]);
        fast.encode(&msg, &mut p1).unwrap();
        slow.encode(&msg, &mut p2).unwrap();
        prop_assert_eq!(&p1, &p2);
        let mut cw = msg.clone();
        cw.resize(k + nsym, 0x5a);
        fast.encode_in_place(&mut cw).unwrap();
        prop_assert_eq!(&cw[k..], &p2[..]);
        prop_assert!(fast.is_codeword(&cw).unwrap());
    }

    #[test]
    fn decode_matches_scalar_within_and_beyond_capacity(
        nsym in nsym_strategy(),
        extra in 0usize..=254,
        seed in any::<u64>(),
        // Errors as a fraction of nsym: up to t is correctable, beyond usually refused.
        frac in 0.0f64..=1.2,
        erase in 0.0f64..=1.0,
    ) {
        let n = (nsym + extra).min(255);
        let (fast, slow) = (RsCodec::new(nsym).unwrap(), RsCodec::new_scalar(nsym).unwrap());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cw: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        slow.encode_in_place(&mut cw).unwrap();
        let errors = ((nsym as f64 * frac).round() as usize).min(n);
        let hit = inject(&mut rng, &mut cw, errors);
        // Declare a share of the hit positions as erasures (at most nsym of them).
        let erasures: Vec<usize> =
            hit.iter().copied().take(((hit.len() as f64 * erase) as usize).min(nsym)).collect();
        let mut w1 = cw.clone();
        let mut w2 = cw.clone();
        let r1 = fast.decode_with_erasures(&mut w1, &erasures);
        let r2 = slow.decode_with_erasures(&mut w2, &erasures);
        prop_assert_eq!(r1, r2);
        prop_assert_eq!(&w1, &w2);
        prop_assert_eq!(fast.is_codeword(&cw).unwrap(), slow.is_codeword(&cw).unwrap());
    }

    #[test]
    fn arbitrary_words_decode_alike(nsym in nsym_strategy(), bytes in proptest::collection::vec(any::<u8>(), 0..=256)) {
        let (fast, slow) = (RsCodec::new(nsym).unwrap(), RsCodec::new_scalar(nsym).unwrap());
        let mut w1 = bytes.clone();
        let mut w2 = bytes;
        prop_assert_eq!(fast.decode(&mut w1), slow.decode(&mut w2));
        prop_assert_eq!(w1, w2);
    }
}
