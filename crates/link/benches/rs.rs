//! Reed-Solomon codec throughput (003 §4 codes; targets in the engine issue, item 3).
//!
//! Run: `cargo bench -p mslink-link --bench rs -- --warm-up-time 1 --measurement-time 3`.
//! Every case runs once per kernel this CPU has, in the same process, on the same codewords
//! ([`RsCodec::with_kernel`], labelled by [`RsKernel::name`]): `scalar` (the portable kernels),
//! `ssse3-shuffle` and `avx2-shuffle` (split tables and `pshufb`, the paths of CPUs without
//! GFNI), `avx2-gfni` and `avx512-gfni` on x86-64, `neon-shuffle` on aarch64; rows for
//! kernels the CPU lacks are missing. The
//! shuffle rows measured on a GFNI host stand for AVX2-only (or SSSE3-only) hosts: the codec
//! there runs the same code. Pick one with criterion's filter, e.g. `-- 'RS\(255,223\)/encode'`.
//! Throughput counts the bytes each operation consumes: message bytes (k per codeword) for
//! `encode` and `encode_blocks`, codeword bytes (n) for the `decode_*` cases. Multiply a
//! decode figure by k/n for message bytes. The `*_blocks` cases run the path of the RS
//! service, a frame's codewords together (`RsCodec::encode_blocks`, `decode_blocks`).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::fec::{RsCodec, RsKernel};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Codewords per iteration: enough to amortise criterion's per-iteration cost.
const BATCH: usize = 64;
/// Codewords per frame in the `*_blocks` cases: an RS service frame at its largest payload
/// (2,047 bytes and the CRC) with 32 parity bytes per block holds ten, with 16 nine.
const FRAME: usize = 8;

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
        // The same codewords and error patterns go through every path in the same run, the
        // scalar one first.
        let paths: Vec<(&str, RsCodec)> = RsKernel::available()
            .rev()
            .map(|k| (k.name(), RsCodec::with_kernel(nsym, k).unwrap()))
            .collect();
        let c = &paths[0].1;
        let label = format!("RS({n},{k})");
        let mut g = cr.benchmark_group(label.clone());

        let msgs: Vec<Vec<u8>> = (0..BATCH)
            .map(|_| (0..k).map(|_| rng.gen()).collect())
            .collect();
        let clean = codewords(c, n, &mut rng);
        let mut bad = Vec::new();
        for errors in [c.t() / 2, c.t()] {
            let mut words = clean.clone();
            corrupt(&mut words, errors, &mut rng);
            bad.push((errors, words));
        }
        let mut parity = vec![0u8; nsym];
        let mut work = clean.clone();
        for (path, c) in &paths {
            g.throughput(Throughput::Bytes((k * BATCH) as u64));
            g.bench_function(BenchmarkId::new("encode", path), |b| {
                b.iter(|| {
                    for m in &msgs {
                        c.encode(black_box(m), &mut parity).unwrap();
                    }
                    black_box(&parity);
                })
            });

            g.throughput(Throughput::Bytes((n * BATCH) as u64));
            g.bench_function(BenchmarkId::new("decode_clean", path), |b| {
                b.iter(|| {
                    for cw in work.iter_mut() {
                        assert_eq!(c.decode(black_box(cw)), Ok(0));
                    }
                })
            });

            // The path the RS service runs: a frame's blocks encoded and checked together
            // (`RsCodec::encode_blocks`, `decode_blocks`), FRAME codewords back to back; the
            // same codewords as above, so the parity is checked against them first.
            let mut frames: Vec<Vec<u8>> = clean.chunks(FRAME).map(|f| f.concat()).collect();
            for f in &mut frames {
                let want = f.clone();
                f.iter_mut().enumerate().for_each(|(i, b)| {
                    if i % n >= k {
                        *b = 0
                    }
                });
                c.encode_blocks(f, n).unwrap();
                assert_eq!(
                    *f, want,
                    "{path}: encode_blocks differs from encode_in_place"
                );
            }
            g.throughput(Throughput::Bytes((k * BATCH) as u64));
            g.bench_function(BenchmarkId::new("encode_blocks", path), |b| {
                b.iter(|| {
                    for f in frames.iter_mut() {
                        c.encode_blocks(black_box(f), n).unwrap();
                    }
                })
            });
            g.throughput(Throughput::Bytes((n * BATCH) as u64));
            g.bench_function(BenchmarkId::new("decode_blocks_clean", path), |b| {
                b.iter(|| {
                    for f in frames.iter_mut() {
                        let mut fixed = 0;
                        c.decode_blocks(black_box(f), n, |s| fixed += s).unwrap();
                        assert_eq!(fixed, 0);
                    }
                })
            });

            for (name, (errors, bad)) in ["decode_t_half", "decode_t"].iter().zip(&bad) {
                g.bench_function(BenchmarkId::new(*name, path), |b| {
                    b.iter(|| {
                        // Restore then correct: copying 255-byte words is noise next to decoding.
                        for (w, src) in work.iter_mut().zip(bad) {
                            w.copy_from_slice(src);
                            assert_eq!(c.decode(w), Ok(*errors));
                        }
                    })
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, bench_rs);
criterion_main!(benches);
