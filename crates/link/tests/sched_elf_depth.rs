//! ELF keeps its shares when each queue holds a single frame at a time, which is how a
//! `MultiServiceLink` feeds its scheduler (one staged frame per service): a regression test for
//! the best-effort aggregate once committing to a flow while the other was momentarily empty,
//! which made best-effort flows alternate whatever their weights.

use mslink_link::sched::elf::{ElfConfig, ElfFlowConfig};
use mslink_link::sched::SchedulerConfig;
use mslink_link::Instant;

/// 003 Table 3 with every power factor 2 and the error rates fixed: air-time shares of
/// Video1 100/800, FTP1 (166.7/800), Video2 100/(800 * 0.5), FTP2 166.7/(800 * 0.5), i.e.
/// 0.125, 0.2083, 0.25, 0.4167 of the slots.
fn slots(depth: usize) -> Vec<f64> {
    let f = |r: Option<f64>, e: f64| ElfFlowConfig {
        reserved_bps: r,
        weight: 1.0,
        power_factor: 2.0,
        error_rate: Some(e),
    };
    let cfg = ElfConfig {
        link_rate_bps: 800_000.0,
        flows: vec![
            f(Some(1e5), 0.0),
            f(None, 0.0),
            f(Some(1e5), 0.5),
            f(None, 0.5),
        ],
        ..Default::default()
    };
    let mut s = SchedulerConfig::Elf(cfg).build(4).unwrap();
    let t = Instant::ZERO;
    for q in 0..4 {
        for _ in 0..depth {
            s.enqueue(t, q, 1000);
        }
    }
    let n = 120_000;
    let mut count = [0u64; 4];
    for _ in 0..n {
        let q = s.dequeue(t).unwrap();
        count[q] += 1;
        s.enqueue(t, q, 1000);
    }
    count.iter().map(|&c| c as f64 / n as f64).collect()
}

#[test]
fn elf_shares_hold_with_one_frame_per_queue() {
    let want = [
        100.0 / 800.0,
        (500.0 / 3.0) / 800.0,
        100.0 / 400.0,
        (500.0 / 3.0) / 400.0,
    ];
    for depth in [1, 2, 4] {
        for (got, want) in slots(depth).iter().zip(want) {
            assert!(
                (got - want).abs() < 0.002,
                "depth {depth}: share {got} vs {want}"
            );
        }
    }
}
