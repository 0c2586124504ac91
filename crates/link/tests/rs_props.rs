//! Property tests of the Reed-Solomon decoder: within its power it always restores the word;
//! beyond it, it either says so or its mistake is caught by a CRC-32 over the message, which is
//! how the rs_fec service uses it (003 §4: a frame it cannot repair is retransmitted).

use mslink_link::fec::{RsCodec, RsError};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Distinct random positions with nonzero error values.
fn inject(rng: &mut ChaCha8Rng, cw: &mut [u8], count: usize) {
    let mut hit = Vec::with_capacity(count);
    while hit.len() < count {
        let p = rng.gen_range(0..cw.len());
        if !hit.contains(&p) {
            hit.push(p);
            cw[p] ^= rng.gen_range(1..=255u8);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn up_to_t_errors_decode_to_the_original(
        nsym in 1usize..=80,
        extra in 0usize..=175,
        seed in any::<u64>(),
        frac in 0.0f64..=1.0,
    ) {
        let n = (nsym + extra).min(255);
        let c = RsCodec::new(nsym).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cw: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        c.encode_in_place(&mut cw).unwrap();
        let orig = cw.clone();
        let errors = ((c.t() as f64 * frac).round() as usize).min(n);
        inject(&mut rng, &mut cw, errors);
        prop_assert_eq!(c.decode(&mut cw), Ok(errors));
        prop_assert_eq!(cw, orig);
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(nsym in 1usize..=254, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let c = RsCodec::new(nsym).unwrap();
        let mut w = bytes.clone();
        match c.decode(&mut w) {
            Ok(_) => prop_assert!(c.is_codeword(&w).unwrap()),
            Err(RsError::BadLength { .. }) => prop_assert!(bytes.len() < nsym || bytes.len() > 255),
            Err(RsError::TooManyErrors) => prop_assert_eq!(w, bytes),
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }
}

/// Beyond t errors: count decoder refusals, wrong "successes", and wrong successes that a
/// CRC-32 over the message would let through. The last must be zero.
#[test]
fn beyond_t_errors_are_refused_or_caught_by_the_crc() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xbad_c0de);
    let mut refused = 0u32;
    let mut miscorrected = 0u32;
    let mut silent = 0u32;
    let mut trials = 0u32;
    for (n, nsym) in [
        (255usize, 2usize),
        (255, 4),
        (60, 4),
        (255, 12),
        (255, 32),
        (40, 10),
    ] {
        let c = RsCodec::new(nsym).unwrap();
        let k = n - nsym;
        for _ in 0..3000 {
            trials += 1;
            // Message = payload + CRC-32 of the payload, as the service frames it.
            let mut cw: Vec<u8> = (0..k - 4).map(|_| rng.gen()).collect();
            let crc = crc32fast::hash(&cw);
            cw.extend_from_slice(&crc.to_be_bytes());
            cw.resize(n, 0);
            c.encode_in_place(&mut cw).unwrap();
            let orig = cw.clone();
            let errors = c.t() + 1 + rng.gen_range(0..=c.t() + 2);
            inject(&mut rng, &mut cw, errors.min(n));
            match c.decode(&mut cw) {
                Err(RsError::TooManyErrors) => refused += 1,
                Ok(_) => {
                    assert!(c.is_codeword(&cw).unwrap());
                    if cw != orig {
                        miscorrected += 1;
                        let body = &cw[..k - 4];
                        let want = u32::from_be_bytes(cw[k - 4..k].try_into().unwrap());
                        if crc32fast::hash(body) == want {
                            silent += 1;
                        }
                    }
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
    }
    eprintln!("{trials} trials beyond t: {refused} refused, {miscorrected} miscorrected, {silent} past the CRC");
    assert_eq!(
        refused + miscorrected,
        trials,
        "a word beyond t decoded to the original"
    );
    // Short codes (t = 1) miscorrect often; the CRC must catch every one.
    assert!(miscorrected > 0, "trial set too easy to exercise the CRC");
    assert_eq!(silent, 0);
}
