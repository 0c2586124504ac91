//! Steady-state cost of the fair schedulers: one `dequeue` plus one `enqueue` (the frame
//! refilling the queue just served) per iteration, with every queue backlogged, for SCFQ and
//! ELF over 8 and 1024 queues. The ELF variants also time the per-frame outcome `report`.
//!
//! Run: `cargo bench -p mslink-link --bench sched -- --warm-up-time 1 --measurement-time 3`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mslink_link::sched::elf::{ElfConfig, ElfFlowConfig};
use mslink_link::sched::scfq::ScfqConfig;
use mslink_link::sched::{Scheduler, SchedulerConfig};
use mslink_link::Instant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Frames kept queued per queue.
const DEPTH: usize = 4;

/// Frame lengths and loss outcomes drawn once, cycled through during the measurement.
struct Tape {
    lengths: Vec<u32>,
    outcomes: Vec<bool>,
}

fn tape() -> Tape {
    let mut rng = ChaCha8Rng::seed_from_u64(0xbe_4c4);
    Tape {
        lengths: (0..4096).map(|_| rng.gen_range(40..=1500)).collect(),
        outcomes: (0..4096).map(|_| rng.gen_bool(0.8)).collect(),
    }
}

fn fill(s: &mut dyn Scheduler, tape: &Tape) {
    let mut k = 0;
    for _ in 0..DEPTH {
        for q in 0..s.queues() {
            s.enqueue(Instant::ZERO, q, tape.lengths[k % tape.lengths.len()]);
            k += 1;
        }
    }
}

fn scfq(queues: usize) -> Box<dyn Scheduler> {
    let rates = (0..queues).map(|q| 1.0 + (q % 7) as f64).collect();
    SchedulerConfig::Scfq(ScfqConfig {
        rates: Some(rates),
        ..Default::default()
    })
    .build(queues)
    .unwrap()
}

/// A quarter of the queues reserved (half the link among them), the rest best effort.
fn elf(queues: usize) -> Box<dyn Scheduler> {
    let link = 100e6;
    let reserved = queues.div_ceil(4);
    let flows = (0..queues)
        .map(|q| ElfFlowConfig {
            reserved_bps: (q < reserved).then(|| link * 0.5 / reserved as f64),
            weight: 1.0 + (q % 3) as f64,
            power_factor: 2.0,
            error_rate: None,
        })
        .collect();
    SchedulerConfig::Elf(ElfConfig {
        link_rate_bps: link,
        flows,
        ..Default::default()
    })
    .build(queues)
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let tape = tape();
    let mask = tape.lengths.len() - 1;
    let mut g = c.benchmark_group("sched_push_pop");
    g.throughput(Throughput::Elements(1));
    type Make = fn(usize) -> Box<dyn Scheduler>;
    for (name, make, report) in [
        ("scfq", scfq as Make, false),
        ("elf", elf as Make, false),
        ("elf_with_report", elf as Make, true),
    ] {
        for queues in [8usize, 1024] {
            let mut s = make(queues);
            fill(s.as_mut(), &tape);
            let mut k = 0usize;
            g.bench_function(BenchmarkId::new(name, queues), |b| {
                b.iter(|| {
                    let now = Instant::ZERO;
                    let q = s.dequeue(now).unwrap();
                    if report {
                        s.report(now, q, tape.outcomes[k & mask]);
                    }
                    s.enqueue(now, q, tape.lengths[k & mask]);
                    k = k.wrapping_add(1);
                    black_box(q)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
