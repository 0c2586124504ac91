//! Reed-Solomon codec throughput (003 §4 codes; targets in the engine issue, item 3).
//!
//! Run: `cargo bench -p mslink-link --bench rs -- --warm-up-time 1 --measurement-time 3`.
//! Throughput counts the bytes each operation consumes: message bytes (k per codeword) for
//! `encode`, codeword bytes (n) for the `decode_*` cases. Multiply a decode figure by k/n for
//! message bytes.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::fec::RsCodec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Codewords per iteration: enough to amortise criterion's per-iteration cost.
const BATCH: usize = 64;

fn codewords(c: &RsCodec, n: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<u8>> {
    (0..BATCH)
        .map(|_| {
            let mut cw: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            c.encode_in_place(&mut cw).unwrap();
            cw
        })
        .collect()
}

fn corrupt(words: &mut [Vec<u8>], errors: usize, rng: &mut ChaCha8Rng) {
    for cw in words {
        let mut done = Vec::new();
        while done.len() < errors {
            let p = rng.gen_range(0..cw.len());
            if !done.contains(&p) {
                done.push(p);
                cw[p] ^= rng.gen_range(1..=255u8);
            }
        }
    }
}

fn bench_rs(cr: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(0xbe4c_0001);
    for (n, nsym) in [
        (255usize, 32usize),
        (255, 16),
        (255, 4),
        (255, 74),
        (255, 198),
    ] {
        let k = n - nsym;
        let c = RsCodec::new(nsym).unwrap();
        let label = format!("RS({n},{k})");
        let mut g = cr.benchmark_group(label.clone());
        g.throughput(Throughput::Bytes((k * BATCH) as u64));

        let msgs: Vec<Vec<u8>> = (0..BATCH)
            .map(|_| (0..k).map(|_| rng.gen()).collect())
            .collect();
        let mut parity = vec![0u8; nsym];
        g.bench_function("encode", |b| {
            b.iter(|| {
                for m in &msgs {
                    c.encode(black_box(m), &mut parity).unwrap();
                }
                black_box(&parity);
            })
        });

        g.throughput(Throughput::Bytes((n * BATCH) as u64));
        let clean = codewords(&c, n, &mut rng);
        let mut work = clean.clone();
        g.bench_function("decode_clean", |b| {
            b.iter(|| {
                for cw in work.iter_mut() {
                    assert_eq!(c.decode(black_box(cw)), Ok(0));
                }
            })
        });

        for (name, errors) in [("t_half", c.t() / 2), ("t", c.t())] {
            let mut bad = clean.clone();
            corrupt(&mut bad, errors, &mut rng);
            g.bench_with_input(BenchmarkId::new("decode_errors", name), &bad, |b, bad| {
                b.iter(|| {
                    // Restore then correct: copying 255-byte words is noise next to decoding.
                    for (w, src) in work.iter_mut().zip(bad) {
                        w.copy_from_slice(src);
                        assert_eq!(c.decode(w), Ok(errors));
                    }
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench_rs);
criterion_main!(benches);
