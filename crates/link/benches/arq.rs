//! Selective Repeat frames per second through a loss-free in-memory pair.
//!
//! A tight loop without the testkit's event machinery: for each frame, `a.handle_sdu` ->
//! `a.poll_transmit` -> `b.handle_frame` -> `b.poll_deliver`; after every batch of 32 frames
//! (half the 8-bit window) `b`'s cumulative acknowledgement goes back to `a`. The delivered
//! payload buffer is handed back in as the next SDU, so the only per-frame allocation left is
//! the receiver's copy of the payload into the `Delivery` it owns. Throughput is in data frames.
//!
//! Run: `cargo bench -p mslink-link --bench arq -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::service::selective_repeat::{SelectiveRepeat, SelectiveRepeatConfig};
use mslink_link::service::{Sdu, Service};
use mslink_link::wire::{HeaderFormat, SeqWidth};
use mslink_link::Instant;

const BATCH: usize = 32;

fn selective_repeat(c: &mut Criterion) {
    let mut g = c.benchmark_group("selective_repeat_loss_free");
    g.throughput(Throughput::Elements(BATCH as u64));
    for size in [64usize, 1000] {
        g.bench_with_input(BenchmarkId::new("sdu_bytes", size), &size, |bch, &size| {
            let cfg = SelectiveRepeatConfig::default();
            let f = HeaderFormat::new(SeqWidth::W8);
            let mut a = SelectiveRepeat::new(cfg.clone(), f);
            let mut b = SelectiveRepeat::new(cfg, f);
            let mut buf = Vec::with_capacity(2048);
            let mut spare = vec![0u8; size];
            let now = Instant::ZERO;
            bch.iter(|| {
                for _ in 0..BATCH {
                    let data = std::mem::take(&mut spare);
                    if a.handle_sdu(now, Sdu::whole(data)).is_err() {
                        panic!("queue full");
                    }
                    buf.clear();
                    assert!(a.poll_transmit(now, &mut buf));
                    b.handle_frame(now, &buf);
                    spare = b.poll_deliver().expect("delivered").data;
                }
                buf.clear();
                while b.poll_transmit(now, &mut buf) {
                    a.handle_frame(now, &buf);
                    buf.clear();
                }
            });
            assert_eq!(a.stats().retransmissions, 0);
        });
    }
    g.finish();
}

criterion_group!(benches, selective_repeat);
criterion_main!(benches);
