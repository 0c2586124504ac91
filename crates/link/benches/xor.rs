//! XOR parity throughput (issue target: >= 5 GB/s): folding 1000-byte frames into a parity
//! buffer, as the XOR FEC sender does for every data frame (004 §III.D).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::fec::xor::xor_into;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("xor_parity");
    for len in [100usize, 1000, 1500, 9000] {
        let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::from_parameter(len), &len, |b, _| {
            b.iter(|| xor_into(std::hint::black_box(&mut dst), std::hint::black_box(&src)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
