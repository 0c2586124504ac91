//! Strict priority: the most urgent non-empty queue always goes first.
//!
//! Contract: with no `order` configured queue 0 is the most urgent, then 1, and so on; an
//! `order` lists the queues from most to least urgent and must name each queue exactly once.
//! Within a queue frames leave in FIFO order. A lower queue is served only when every more
//! urgent queue is empty, so it can starve (this is the "priority-based scheduler" that 003
//! §5.1 warns about). O(n/64) per dequeue through a bitmap of non-empty ranks; no allocation.

use super::{check_queues, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;

/// Strict priority settings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriorityConfig {
    /// Queues from most to least urgent; empty means `0, 1, 2, ...`.
    pub order: Vec<QueueId>,
}

/// Strict priority scheduler.
#[derive(Clone, Debug)]
pub struct Priority {
    /// Frames queued per queue.
    counts: Vec<usize>,
    /// Rank (0 = most urgent) of each queue.
    rank_of: Vec<u32>,
    /// Queue at each rank.
    queue_at: Vec<u32>,
    /// Bit `r` set when the queue at rank `r` is non-empty.
    nonempty: Vec<u64>,
    frames: usize,
}

impl Priority {
    /// A strict priority scheduler over `queues` queues.
    pub fn new(queues: usize, config: &PriorityConfig) -> Result<Self, SchedConfigError> {
        check_queues(queues)?;
        let queue_at: Vec<u32> = if config.order.is_empty() {
            (0..queues as u32).collect()
        } else {
            let problem = |p: String| SchedConfigError::NotAPermutation { queues, problem: p };
            if config.order.len() != queues {
                return Err(problem(format!(
                    "{} entries for {queues} queues",
                    config.order.len()
                )));
            }
            let mut seen = vec![false; queues];
            for &q in &config.order {
                if q >= queues {
                    return Err(problem(format!("queue {q} does not exist")));
                }
                if std::mem::replace(&mut seen[q], true) {
                    return Err(problem(format!("queue {q} appears twice")));
                }
            }
            config.order.iter().map(|&q| q as u32).collect()
        };
        let mut rank_of = vec![0u32; queues];
        for (r, &q) in queue_at.iter().enumerate() {
            rank_of[q as usize] = r as u32;
        }
        Ok(Priority {
            counts: vec![0; queues],
            rank_of,
            queue_at,
            nonempty: vec![0; queues.div_ceil(64)],
            frames: 0,
        })
    }
}

impl Scheduler for Priority {
    fn name(&self) -> &'static str {
        "priority"
    }
    fn queues(&self) -> usize {
        self.counts.len()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, _len: u32) {
        self.counts[q] += 1;
        let r = self.rank_of[q] as usize;
        self.nonempty[r / 64] |= 1 << (r % 64);
        self.frames += 1;
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        let (w, bits) = self.nonempty.iter().enumerate().find(|(_, b)| **b != 0)?;
        let r = w * 64 + bits.trailing_zeros() as usize;
        let q = self.queue_at[r] as usize;
        self.counts[q] -= 1;
        if self.counts[q] == 0 {
            self.nonempty[w] &= !(1 << (r % 64));
        }
        self.frames -= 1;
        Some(q)
    }
    fn len(&self) -> usize {
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{check_deterministic, op_strategy, Op};
    use super::*;
    use proptest::prelude::*;

    /// Naive model: per-queue counts, scan the order for the first non-empty queue.
    fn model(order: &[usize], ops: &[Op], n: usize) -> Vec<Option<QueueId>> {
        let mut counts = vec![0usize; n];
        let mut out = Vec::new();
        let pick = |counts: &mut Vec<usize>| {
            let q = order.iter().copied().find(|&q| counts[q] > 0)?;
            counts[q] -= 1;
            Some(q)
        };
        for op in ops {
            match op {
                Op::Enqueue(q, _) => counts[*q] += 1,
                Op::Dequeue => out.push(pick(&mut counts)),
                _ => {}
            }
        }
        while let Some(q) = pick(&mut counts) {
            out.push(Some(q));
        }
        out
    }

    proptest! {
        #[test]
        fn priority_matches_model(
            perm in Just((0..70usize).collect::<Vec<_>>()).prop_shuffle(),
            custom in any::<bool>(),
            ops in proptest::collection::vec(op_strategy(70, 1500), 0..400),
        ) {
            let order = if custom { perm } else { (0..70).collect() };
            let cfg = PriorityConfig { order: if custom { order.clone() } else { vec![] } };
            let trace = check_deterministic(
                || Box::new(Priority::new(70, &cfg).unwrap()), 70, &ops);
            prop_assert_eq!(trace, model(&order, &ops, 70));
        }
    }

    #[test]
    fn lower_queue_waits_for_higher() {
        let cfg = PriorityConfig {
            order: vec![2, 0, 1],
        };
        let mut s = Priority::new(3, &cfg).unwrap();
        let t = Instant::ZERO;
        for q in [0, 1, 2, 0, 2] {
            s.enqueue(t, q, 100);
        }
        let got: Vec<_> = std::iter::from_fn(|| s.dequeue(t)).collect();
        assert_eq!(got, vec![2, 2, 0, 0, 1]);
    }

    #[test]
    fn bad_orders_are_refused() {
        for order in [vec![0, 0, 1], vec![0, 1], vec![0, 1, 3]] {
            let e = Priority::new(3, &PriorityConfig { order }).unwrap_err();
            assert!(e.to_string().contains("`order`"), "{e}");
        }
    }
}
