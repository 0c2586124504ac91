//! The SIMD Reed-Solomon paths against the scalar one (the oracle): for random codes, messages,
//! error and erasure patterns, up to and beyond the code's power, every kernel this CPU can
//! run (`RsCodec::with_kernel`: GFNI, AVX2 and SSSE3 shuffles; an AVX-512 GFNI host runs them
//! all) and `RsCodec::new_scalar` must give the same parity, the same verdicts and leave the
//! same bytes. On a CPU without SIMD kernels only the scalar side is left and the tests still
//! pass, which the first test makes visible.

use mslink_link::fec::{RsCodec, RsError, RsKernel};
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

/// The SIMD kernels this CPU can run, each as a codec for `nsym`.
fn simd_codecs(nsym: usize) -> Vec<RsCodec> {
    RsKernel::available()
        .filter(|&k| k != RsKernel::Scalar)
        .map(|k| RsCodec::with_kernel(nsym, k).unwrap())
        .collect()
}

#[test]
fn reports_which_paths_run() {
    let c = RsCodec::new(32).unwrap();
    let available: Vec<RsKernel> = RsKernel::available().collect();
    // The best kernel unless the scalar one is faster for the code: SSSE3 with up to 8
    // parity bytes (a one-word LFSR register).
    for nsym in [1, 4, 8, 9, 16, 32] {
        let want = available
            .iter()
            .copied()
            .find(|&k| k == RsKernel::Scalar || k.beats_scalar(nsym))
            .unwrap();
        assert_eq!(RsCodec::new(nsym).unwrap().kernel(), want, "nsym {nsym}");
    }
    assert!(!RsKernel::Ssse3Shuffle.beats_scalar(8) && RsKernel::Ssse3Shuffle.beats_scalar(9));
    assert!(RsKernel::Avx2Shuffle.beats_scalar(4) && !RsKernel::Scalar.beats_scalar(32));
    eprintln!(
        "RsCodec::new runs {:?}; available: {available:?}",
        c.kernel()
    );
    assert_eq!(Some(&c.kernel()), available.first());
    assert_eq!(available.last(), Some(&RsKernel::Scalar));
    assert_eq!(c.uses_simd(), c.kernel() != RsKernel::Scalar);
    let scalar = RsCodec::new_scalar(32).unwrap();
    assert!(!scalar.uses_simd());
    assert_eq!(scalar.kernel(), RsKernel::Scalar);
    for k in RsKernel::ALL {
        match RsCodec::with_kernel(32, k) {
            Ok(c) => {
                assert!(k.is_available());
                assert_eq!(c.kernel(), k);
            }
            Err(e) => {
                assert!(!k.is_available());
                assert_eq!(e, RsError::KernelUnavailable(k));
            }
        }
    }
    assert_eq!(
        RsCodec::with_kernel(0, RsKernel::Scalar).unwrap_err(),
        RsError::BadParity(0)
    );
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: &str| match f {
            "avx2" => std::is_x86_feature_detected!("avx2"),
            "gfni" => std::is_x86_feature_detected!("gfni"),
            "avx512f" => std::is_x86_feature_detected!("avx512f"),
            _ => std::is_x86_feature_detected!("ssse3"),
        };
        assert_eq!(RsKernel::Ssse3Shuffle.is_available(), has("ssse3"));
        assert_eq!(RsKernel::Avx2Shuffle.is_available(), has("avx2"));
        assert_eq!(
            RsKernel::Avx2Gfni.is_available(),
            has("avx2") && has("gfni")
        );
        assert_eq!(
            RsKernel::Avx512Gfni.is_available(),
            has("avx2") && has("gfni") && has("avx512f")
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn encode_matches_scalar(nsym in nsym_strategy(), len in 0usize..=254, seed in any::<u64>()) {
        let k = len.min(255 - nsym);
        let slow = RsCodec::new_scalar(nsym).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let msg: Vec<u8> = (0..k).map(|_| rng.gen()).collect();
        let mut p2 = vec![0u8; nsym];
        slow.encode(&msg, &mut p2).unwrap();
        for fast in simd_codecs(nsym) {
            let mut p1 = vec![0u8; nsym];
            fast.encode(&msg, &mut p1).unwrap();
            prop_assert_eq!(&p1, &p2, "{:?}", fast.kernel());
            let mut cw = msg.clone();
            cw.resize(k + nsym, 0x5a);
            fast.encode_in_place(&mut cw).unwrap();
            prop_assert_eq!(&cw[k..], &p2[..]);
            prop_assert!(fast.is_codeword(&cw).unwrap());
            // One flipped byte is never a codeword (minimum distance nsym + 1).
            cw[rng.gen_range(0..k + nsym)] ^= rng.gen_range(1..=255u8);
            prop_assert!(!fast.is_codeword(&cw).unwrap());
        }
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
        let slow = RsCodec::new_scalar(nsym).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cw: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        slow.encode_in_place(&mut cw).unwrap();
        let errors = ((nsym as f64 * frac).round() as usize).min(n);
        let hit = inject(&mut rng, &mut cw, errors);
        // Declare a share of the hit positions as erasures (at most nsym of them).
        let erasures: Vec<usize> =
            hit.iter().copied().take(((hit.len() as f64 * erase) as usize).min(nsym)).collect();
        let mut w2 = cw.clone();
        let r2 = slow.decode_with_erasures(&mut w2, &erasures);
        for fast in simd_codecs(nsym) {
            let mut w1 = cw.clone();
            let r1 = fast.decode_with_erasures(&mut w1, &erasures);
            prop_assert_eq!(r1, r2, "{:?}", fast.kernel());
            prop_assert_eq!(&w1, &w2);
            prop_assert_eq!(fast.is_codeword(&cw).unwrap(), slow.is_codeword(&cw).unwrap());
        }
    }

    #[test]
    fn arbitrary_words_decode_alike(nsym in nsym_strategy(), bytes in proptest::collection::vec(any::<u8>(), 0..=256)) {
        let slow = RsCodec::new_scalar(nsym).unwrap();
        let mut w2 = bytes.clone();
        let r2 = slow.decode(&mut w2);
        for fast in simd_codecs(nsym) {
            let mut w1 = bytes.clone();
            prop_assert_eq!(fast.decode(&mut w1), r2, "{:?}", fast.kernel());
            prop_assert_eq!(&w1, &w2);
        }
    }
}

/// A frame of consecutive codewords of `n` bytes (the last piece `last` bytes shorter than a
/// full one, if `last > 0`), each encoded on its own by the scalar codec.
fn frame(slow: &RsCodec, n: usize, full: usize, last: usize, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut f: Vec<u8> = (0..full * n + last).map(|_| rng.gen()).collect();
    for piece in f.chunks_mut(n) {
        slow.encode_in_place(piece).unwrap();
    }
    f
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// `encode_blocks` (codewords in groups, as the RS service encodes a frame) writes what
    /// `encode_in_place` writes piece by piece, on every kernel and the scalar codec.
    #[test]
    fn encode_blocks_matches_one_by_one(
        nsym in nsym_strategy(),
        extra in 0usize..=254,
        full in 0usize..=10,
        last in 0usize..=255,
        seed in any::<u64>(),
    ) {
        let n = (nsym + 1 + extra).min(255);
        let last = if last < nsym { 0 } else { last.min(n - 1) };
        let slow = RsCodec::new_scalar(nsym).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let want = frame(&slow, n, full, last, &mut rng);
        for codec in simd_codecs(nsym).into_iter().chain([slow.clone()]) {
            let mut got = want.clone();
            for (i, b) in got.iter_mut().enumerate() {
                // Garbage where the parity goes: encode_blocks must overwrite all of it.
                if i % n >= n - nsym || (i >= full * n && i - full * n >= last - nsym.min(last)) {
                    *b ^= 0x5a;
                }
            }
            codec.encode_blocks(&mut got, n).unwrap();
            prop_assert_eq!(&got, &want, "{:?}", codec.kernel());
        }
    }

    /// `decode_blocks` gives each block the verdict `decode` gives it alone, stops at the
    /// first block beyond repair and leaves that block and the rest untouched.
    #[test]
    fn decode_blocks_matches_one_by_one(
        nsym in nsym_strategy(),
        full in 0usize..=10,
        last in 0usize..=255,
        seed in any::<u64>(),
        frac in 0.0f64..=1.2,
        hit_share in 0.0f64..=1.0,
    ) {
        let n = 255;
        let last = if last < nsym { 0 } else { last.min(n - 1) };
        let slow = RsCodec::new_scalar(nsym).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut f = frame(&slow, n, full, last, &mut rng);
        // Some blocks get errors, up to 1.2 t (beyond repair sometimes).
        for piece in f.chunks_mut(n) {
            if rng.gen_bool(hit_share) {
                let errors = (piece.len() as f64).min(nsym as f64 * frac / 2.0) as usize;
                inject(&mut rng, piece, errors);
            }
        }
        // What decoding one block at a time does: the counts up to the first failure.
        let mut want_bytes = f.clone();
        let mut want_counts = Vec::new();
        let mut want_result = Ok(());
        for piece in want_bytes.chunks_mut(n) {
            match slow.decode(piece) {
                Ok(c) => want_counts.push(c),
                Err(e) => {
                    want_result = Err(e);
                    break;
                }
            }
        }
        for codec in simd_codecs(nsym).into_iter().chain([slow.clone()]) {
            let mut got = f.clone();
            let mut counts = Vec::new();
            let result = codec.decode_blocks(&mut got, n, |c| counts.push(c));
            prop_assert_eq!(result, want_result, "{:?}", codec.kernel());
            prop_assert_eq!(&counts, &want_counts);
            prop_assert_eq!(&got, &want_bytes);
        }
    }
}

#[test]
fn blocks_with_a_piece_shorter_than_the_parity_are_refused_untouched() {
    let c = RsCodec::new(32).unwrap();
    for (len, n) in [(255 * 2 + 31, 255), (100, 31), (300, 256)] {
        let mut buf = vec![7u8; len];
        let want = if n == 255 { 31 } else { n };
        assert_eq!(
            c.encode_blocks(&mut buf, n),
            Err(RsError::BadLength {
                len: want,
                nsym: 32
            })
        );
        assert_eq!(
            c.decode_blocks(&mut buf, n, |_| panic!("nothing decoded")),
            Err(RsError::BadLength {
                len: want,
                nsym: 32
            })
        );
        assert!(buf.iter().all(|&b| b == 7));
    }
    // An empty frame holds no codeword: nothing to do.
    assert_eq!(c.encode_blocks(&mut [], 255), Ok(()));
}
