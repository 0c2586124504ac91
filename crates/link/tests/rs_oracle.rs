//! Our Reed-Solomon codec, every kernel this CPU runs, against the reedsolo oracle
//! (tests/oracle/rs_vectors.py).
//!
//! The fixture holds codewords reedsolo produced; we must reproduce every parity byte and
//! repair errors and erasures injected into them. Regenerate the fixture with
//! `python3 tests/oracle/rs_vectors.py` (tests/python/test_rs_oracle.py checks it is current).

use mslink_link::fec::{RsCodec, RsKernel};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const FIXTURE: &str = include_str!("fixtures/rs_reedsolo.txt");

struct Vector {
    nsym: usize,
    codeword: Vec<u8>,
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn vectors() -> Vec<Vector> {
    FIXTURE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "bad fixture line {l}");
            let nsym: usize = f[0].parse().unwrap();
            let n: usize = f[1].parse().unwrap();
            let codeword = hex(f[2]);
            assert_eq!(codeword.len(), n);
            Vector { nsym, codeword }
        })
        .collect()
}

#[test]
fn fixture_covers_the_codes_the_service_uses() {
    let v = vectors();
    assert!(v.len() >= 30, "only {} vectors", v.len());
    for (n, nsym) in [
        (255, 32),
        (255, 16),
        (255, 4),
        (100, 16),
        (12, 6),
        (255, 74),
        (255, 198),
    ] {
        assert!(
            v.iter().any(|x| x.nsym == nsym && x.codeword.len() == n),
            "missing RS({n},{})",
            n - nsym
        );
    }
}

/// A codec per kernel this CPU runs (the scalar one always): each is held to the oracle.
fn codecs(nsym: usize) -> Vec<RsCodec> {
    RsKernel::available()
        .map(|k| RsCodec::with_kernel(nsym, k).unwrap())
        .collect()
}

#[test]
fn encoder_reproduces_reedsolo_byte_for_byte() {
    for v in vectors() {
        for c in codecs(v.nsym) {
            encodes_like_the_oracle(&c, &v);
        }
    }
}

fn encodes_like_the_oracle(c: &RsCodec, v: &Vector) {
    let k = v.codeword.len() - v.nsym;
    let mut parity = vec![0u8; v.nsym];
    c.encode(&v.codeword[..k], &mut parity).unwrap();
    assert_eq!(
        parity,
        &v.codeword[k..],
        "nsym {} n {} kernel {:?}",
        v.nsym,
        v.codeword.len(),
        c.kernel()
    );
    let mut cw = v.codeword[..k].to_vec();
    cw.resize(v.codeword.len(), 0);
    c.encode_in_place(&mut cw).unwrap();
    assert_eq!(cw, v.codeword);
    assert!(c.is_codeword(&v.codeword).unwrap());
}

#[test]
fn decoder_repairs_errors_injected_into_reedsolo_codewords() {
    for c in RsKernel::available() {
        decodes_like_the_oracle(c);
    }
}

fn decodes_like_the_oracle(kernel: RsKernel) {
    let mut rng = ChaCha8Rng::seed_from_u64(0x0_7ac1e);
    for v in vectors() {
        let c = RsCodec::with_kernel(v.nsym, kernel).unwrap();
        let n = v.codeword.len();
        for errors in [0, 1, c.t() / 2, c.t()] {
            let mut cw = v.codeword.clone();
            let mut hit = Vec::new();
            while hit.len() < errors.min(n) {
                let p = rng.gen_range(0..n);
                if !hit.contains(&p) {
                    hit.push(p);
                    cw[p] ^= rng.gen_range(1..=255u8);
                }
            }
            assert_eq!(c.decode(&mut cw), Ok(hit.len()), "nsym {} n {n}", v.nsym);
            assert_eq!(cw, v.codeword);
        }
        // All-erasure decoding: nsym erased symbols, no errors.
        let mut cw = v.codeword.clone();
        let erased: Vec<usize> = (0..v.nsym).map(|i| (i * 7) % n).collect();
        let mut uniq = erased.clone();
        uniq.sort_unstable();
        uniq.dedup();
        for &p in &uniq {
            cw[p] ^= 0xa5;
        }
        assert_eq!(c.decode_with_erasures(&mut cw, &uniq), Ok(uniq.len()));
        assert_eq!(cw, v.codeword);
    }
}
