//! Long-run shares of the fair schedulers against their closed forms.
//!
//! * SCFQ (004 §IV): with static rates `r_i` and every queue backlogged, queue `i` sends a
//!   share `r_i / sum r` of the bytes; idle queues' capacity goes to the busy ones in
//!   proportion to their rates; with measured rates the shares follow the classifier input
//!   (impartiality), whatever each service adds in overhead.
//! * ELF (003 §6): always-backlogged flows with Bernoulli losses at fixed rates `E_i`, outcomes
//!   reported back to the scheduler, deliver the throughput `elf::allocate` predicts for 003's
//!   Table 2 and Table 3 setups.
//!
//! All randomness comes from named ChaCha8 streams; expected shares are computed here.

use mslink_link::sched::elf::{allocate, ElfConfig, ElfFlow, ElfFlowConfig};
use mslink_link::sched::error_estimate::ErrorEstimator;
use mslink_link::sched::scfq::ScfqConfig;
use mslink_link::sched::{Scheduler, SchedulerConfig};
use mslink_link::{Duration, Instant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Frames kept queued per busy queue.
const DEPTH: usize = 4;
/// Link rate for the timed (measured-rate) runs.
const LINK_BPS: u64 = 2_000_000;

/// Keeps the `busy` queues backlogged with frames of random length (40..=1500 bytes, from the
/// stream `lengths`) and sends `frames` frames over a `LINK_BPS` link; after each send calls
/// `hook(scheduler, now, step, queue, length)`.
fn drive(
    s: &mut dyn Scheduler,
    busy: &[usize],
    frames: usize,
    lengths: &mut ChaCha8Rng,
    mut hook: impl FnMut(&mut dyn Scheduler, Instant, usize, usize, u32),
) {
    let mut now = Instant::from_secs(1);
    let mut queued: Vec<VecDeque<u32>> = vec![VecDeque::new(); s.queues()];
    for &q in busy {
        for _ in 0..DEPTH {
            let len = lengths.gen_range(40..=1500);
            s.enqueue(now, q, len);
            queued[q].push_back(len);
        }
    }
    for step in 0..frames {
        let q = s.dequeue(now).expect("work-conserving");
        let len = queued[q].pop_front().expect("dequeued a busy queue");
        now += Duration::transmission(u64::from(len), LINK_BPS);
        hook(s, now, step, q, len);
        let next = lengths.gen_range(40..=1500);
        s.enqueue(now, q, next);
        queued[q].push_back(next);
    }
}

fn shares(bytes: &[u64]) -> Vec<f64> {
    let total: u64 = bytes.iter().sum();
    bytes.iter().map(|&b| b as f64 / total as f64).collect()
}

/// Each `got[i]` within `rel` (relative) of `want[i]`.
fn assert_within(got: &[f64], want: &[f64], rel: f64, what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * w,
            "{what}: queue {i}: got {g:.5}, want {w:.5} (error {:.2}%)\n got {got:?}\nwant {want:?}",
            (g - w).abs() / w * 100.0
        );
    }
}

fn static_scfq(rates: &[f64]) -> Box<dyn Scheduler> {
    SchedulerConfig::Scfq(ScfqConfig {
        rates: Some(rates.to_vec()),
        ..Default::default()
    })
    .build(rates.len())
    .unwrap()
}

const RATES: [f64; 6] = [1.0, 2.0, 3.5, 0.25, 8.0, 5.25];

#[test]
fn scfq_static_rates_share_bytes_in_proportion() {
    let mut s = static_scfq(&RATES);
    let mut bytes = vec![0u64; RATES.len()];
    let all: Vec<usize> = (0..RATES.len()).collect();
    let mut lengths = ChaCha8Rng::seed_from_u64(0x5cf9_0001);
    drive(
        s.as_mut(),
        &all,
        100_000,
        &mut lengths,
        |_, _, _, q, len| bytes[q] += u64::from(len),
    );
    let sum: f64 = RATES.iter().sum();
    let want: Vec<f64> = RATES.iter().map(|r| r / sum).collect();
    assert_within(&shares(&bytes), &want, 0.01, "SCFQ static, all busy");
}

#[test]
fn scfq_idle_capacity_is_shared_proportionally() {
    let mut s = static_scfq(&RATES);
    let busy = [0usize, 2, 3, 5];
    let mut bytes = vec![0u64; RATES.len()];
    let mut lengths = ChaCha8Rng::seed_from_u64(0x5cf9_0002);
    drive(
        s.as_mut(),
        &busy,
        100_000,
        &mut lengths,
        |_, _, _, q, len| bytes[q] += u64::from(len),
    );
    assert_eq!((bytes[1], bytes[4]), (0, 0));
    let sum: f64 = busy.iter().map(|&q| RATES[q]).sum();
    let got: Vec<f64> = busy.iter().map(|&q| shares(&bytes)[q]).collect();
    let want: Vec<f64> = busy.iter().map(|&q| RATES[q] / sum).collect();
    assert_within(&got, &want, 0.01, "SCFQ static, queues 1 and 4 idle");
}

/// Measured-rate SCFQ: the classifier hands queue `i` input in the ratio `input[i]` (at the
/// link rate in total) while every queue is kept backlogged, e.g. by retransmissions and
/// parity frames that inflate some services' streams. Returns bytes sent per queue after
/// `settle` frames.
fn measured_run(input: &[f64], frames: usize, settle: usize, seed: u64) -> Vec<u64> {
    let n = input.len();
    let mut s = SchedulerConfig::Scfq(ScfqConfig::default())
        .build(n)
        .unwrap();
    let mut bytes = vec![0u64; n];
    let sum: f64 = input.iter().sum();
    let all: Vec<usize> = (0..n).collect();
    let mut lengths = ChaCha8Rng::seed_from_u64(seed);
    drive(
        s.as_mut(),
        &all,
        frames,
        &mut lengths,
        |s, now, step, q, len| {
            for (i, a) in input.iter().enumerate() {
                let b = (f64::from(len) * a / sum).round() as u32;
                if b > 0 {
                    s.observe_input(now, i, b);
                }
            }
            if step >= settle {
                bytes[q] += u64::from(len);
            }
        },
    );
    bytes
}

#[test]
fn scfq_measured_rates_follow_the_classifier_input() {
    // 004 §IV impartiality: service i gets f_i = a_i / sum a_j of the link.
    let input = [1.0, 3.0, 4.0, 0.5];
    let bytes = measured_run(&input, 100_000, 1_000, 0x5cf9_0003);
    let sum: f64 = input.iter().sum();
    let want: Vec<f64> = input.iter().map(|a| a / sum).collect();
    assert_within(&shares(&bytes), &want, 0.01, "SCFQ measured");
}

#[test]
fn scfq_measured_floor_serves_a_queue_without_input() {
    // Queue 2 gets no classifier input (only, say, retransmissions): it is served at the
    // floor share (min_share = 0.01 by default) instead of starving.
    let input = [3.0, 1.0, 0.0];
    let bytes = measured_run(&input, 100_000, 1_000, 0x5cf9_0004);
    let floor = ScfqConfig::default().min_share;
    let f = [0.75f64.max(floor), 0.25f64.max(floor), floor];
    let sum: f64 = f.iter().sum();
    let want: Vec<f64> = f.iter().map(|x| x / sum).collect();
    assert!(bytes[2] > 0);
    assert_within(&shares(&bytes), &want, 0.01, "SCFQ measured with floor");
}

// ---- ELF over long runs -----------------------------------------------------------------

/// 003 §5: the example cell of 800 kbit/s.
const B: f64 = 800_000.0;
const WARMUP: usize = 200_000;
const FRAMES: usize = 2_000_000;

#[derive(Clone, Copy)]
struct Flow {
    reserved_kbit: Option<f64>,
    power_factor: f64,
    error_rate: f64,
}

fn res(kbit: f64, p: f64, e: f64) -> Flow {
    Flow {
        reserved_kbit: Some(kbit),
        power_factor: p,
        error_rate: e,
    }
}

fn be(p: f64, e: f64) -> Flow {
    Flow {
        reserved_kbit: None,
        power_factor: p,
        error_rate: e,
    }
}

/// Runs ELF over always-backlogged flows whose frames are lost with probability `E_i`,
/// reporting every outcome back; returns each flow's delivered throughput (bit/s, as a share
/// of the air time used times `B`) and the closed form's prediction.
/// `fixed`: give the scheduler the true error rates instead of letting it estimate them.
fn elf_run(
    flows: &[Flow],
    estimator: ErrorEstimator,
    fixed: bool,
    seed: u64,
) -> (Vec<f64>, Vec<f64>) {
    let cfg = ElfConfig {
        link_rate_bps: B,
        flows: flows
            .iter()
            .map(|f| ElfFlowConfig {
                reserved_bps: f.reserved_kbit.map(|k| k * 1e3),
                weight: 1.0,
                power_factor: f.power_factor,
                error_rate: fixed.then_some(f.error_rate),
            })
            .collect(),
        estimator,
        ..Default::default()
    };
    let mut s = SchedulerConfig::Elf(cfg).build(flows.len()).unwrap();
    let mut lengths = ChaCha8Rng::seed_from_u64(seed);
    let mut outcomes = ChaCha8Rng::seed_from_u64(seed ^ 0x00c0_ffee);
    let mut delivered = vec![0u64; flows.len()];
    let mut sent = 0u64;
    let all: Vec<usize> = (0..flows.len()).collect();
    drive(
        s.as_mut(),
        &all,
        WARMUP + FRAMES,
        &mut lengths,
        |s, now, step, q, len| {
            let ok = !outcomes.gen_bool(flows[q].error_rate);
            s.report(now, q, ok);
            if step >= WARMUP {
                sent += u64::from(len);
                if ok {
                    delivered[q] += u64::from(len);
                }
            }
        },
    );
    let got = delivered
        .iter()
        .map(|&d| d as f64 / sent as f64 * B)
        .collect();
    let model: Vec<ElfFlow> = flows
        .iter()
        .map(|f| ElfFlow {
            reserved_bps: f.reserved_kbit.map(|k| k * 1e3),
            weight: 1.0,
            power_factor: f.power_factor,
            error_rate: f.error_rate,
        })
        .collect();
    let want = allocate(B, &model)
        .iter()
        .map(|s| s.throughput_bps)
        .collect();
    (got, want)
}

/// A low-noise window: the test's 2% tolerance needs the estimate's own noise well below it
/// (a best-effort flow's share is 1 minus the reserved flows' weights, which amplifies it).
const WINDOW: ErrorEstimator = ErrorEstimator::Window { outcomes: 20_000 };
const EWMA: ErrorEstimator = ErrorEstimator::Ewma { alpha: 1e-3 };

fn table2(p: f64, e: f64) -> [Flow; 4] {
    [res(8.0, p, e), res(350.0, p, e), be(p, e), be(p, e)]
}

fn check_elf(flows: &[Flow], estimator: ErrorEstimator, fixed: bool, seed: u64, what: &str) {
    let (got, want) = elf_run(flows, estimator, fixed, seed);
    assert_within(&got, &want, 0.02, what);
}

#[test]
fn elf_table2_error_free() {
    check_elf(
        &table2(1.2, 0.0),
        WINDOW,
        false,
        0xe1f0_0001,
        "Table 2, E = 0",
    );
}

#[test]
fn elf_table2_effort_fair() {
    check_elf(
        &table2(1.0, 0.5),
        WINDOW,
        false,
        0xe1f0_0002,
        "Table 2 effort-fair",
    );
}

#[test]
fn elf_table2_preferable_estimated() {
    // P = 3 (>= 2 as the column asks) keeps E = 0.5 inside the outcome region; exactly at the
    // crossover (P = 2) a noisy estimate is capped on one side only, which biases the weight
    // down, so P = 2 is checked with the error rates fixed below.
    check_elf(
        &table2(3.0, 0.5),
        WINDOW,
        false,
        0xe1f0_0003,
        "Table 2 preferable, window",
    );
    check_elf(
        &table2(3.0, 0.5),
        EWMA,
        false,
        0xe1f0_0004,
        "Table 2 preferable, EWMA",
    );
}

#[test]
fn elf_table2_preferable_fixed_at_crossover() {
    check_elf(
        &table2(2.0, 0.5),
        WINDOW,
        true,
        0xe1f0_0005,
        "Table 2 preferable, P = 2, fixed E",
    );
}

fn table3(p_reserved: f64, p_be: f64) -> [Flow; 4] {
    [
        res(100.0, p_reserved, 0.0),
        be(p_be, 0.0),
        res(100.0, p_reserved, 0.5),
        be(p_be, 0.5),
    ]
}

#[test]
fn elf_table3_effort() {
    check_elf(
        &table3(1.0, 1.0),
        WINDOW,
        false,
        0xe1f0_0006,
        "Table 3 effort",
    );
}

#[test]
fn elf_table3_priority() {
    check_elf(
        &table3(3.0, 1.0),
        WINDOW,
        false,
        0xe1f0_0007,
        "Table 3 priority",
    );
}

#[test]
fn elf_table3_desirable() {
    check_elf(
        &table3(3.0, 3.0),
        EWMA,
        false,
        0xe1f0_0008,
        "Table 3 desirable, EWMA",
    );
    check_elf(
        &table3(2.0, 2.0),
        WINDOW,
        true,
        0xe1f0_0009,
        "Table 3 desirable, P = 2, fixed E",
    );
}
