//! Weighted round robin in frames (the packet-slot WRR that 003 §7 builds its ELF prototype on).
//!
//! Contract: backlogged queues take turns in a ring; on its turn queue `i` sends up to `w_i`
//! frames (fewer if it empties), then goes to the back of the ring. A queue that becomes
//! backlogged joins at the back. With every queue backlogged, queue `i` gets exactly `w_i`
//! frames of every `sum w` — a share of *frames*, not bytes. Within a queue frames leave in
//! FIFO order. O(1) per frame: only backlogged queues are in the ring.

use super::{nonzero_list, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;
use std::collections::VecDeque;

/// Weighted round robin settings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WrrConfig {
    /// Frames per turn for each queue (each >= 1); empty means 1 for every queue.
    pub weights: Vec<u32>,
}

/// Weighted round robin scheduler.
#[derive(Clone, Debug)]
pub struct Wrr {
    weights: Vec<u32>,
    counts: Vec<usize>,
    /// Backlogged queues; the front one has the turn.
    ring: VecDeque<u32>,
    /// Frames the front queue may still send in its turn (valid unless `fresh`).
    credit: u32,
    /// The front queue has not started its turn yet.
    fresh: bool,
    frames: usize,
}

impl Wrr {
    /// A WRR scheduler over `queues` queues.
    pub fn new(queues: usize, config: &WrrConfig) -> Result<Self, SchedConfigError> {
        let weights = nonzero_list("weights", &config.weights, queues, 1)?;
        Ok(Wrr {
            weights,
            counts: vec![0; queues],
            ring: VecDeque::with_capacity(queues),
            credit: 0,
            fresh: true,
            frames: 0,
        })
    }
}

impl Scheduler for Wrr {
    fn name(&self) -> &'static str {
        "wrr"
    }
    fn queues(&self) -> usize {
        self.weights.len()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, _len: u32) {
        if self.counts[q] == 0 {
            self.ring.push_back(q as u32);
        }
        self.counts[q] += 1;
        self.frames += 1;
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        let q = *self.ring.front()? as usize;
        if self.fresh {
            self.credit = self.weights[q];
            self.fresh = false;
        }
        self.counts[q] -= 1;
        self.credit -= 1;
        self.frames -= 1;
        if self.counts[q] == 0 {
            self.ring.pop_front();
            self.fresh = true;
        } else if self.credit == 0 {
            self.ring.rotate_left(1);
            self.fresh = true;
        }
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

    /// Naive model: an explicit list of (queue, frames left in turn), rebuilt per turn.
    fn model(w: &[u32], ops: &[Op]) -> Vec<Option<QueueId>> {
        let mut counts = vec![0usize; w.len()];
        let mut ring: Vec<usize> = Vec::new();
        let mut left: Option<u32> = None;
        let mut out = Vec::new();
        let mut pick = |counts: &mut Vec<usize>, ring: &mut Vec<usize>| {
            if ring.is_empty() {
                return None;
            }
            let q = ring[0];
            let l = left.unwrap_or(w[q]) - 1;
            counts[q] -= 1;
            if counts[q] == 0 {
                ring.remove(0);
                left = None;
            } else if l == 0 {
                ring.remove(0);
                ring.push(q);
                left = None;
            } else {
                left = Some(l);
            }
            Some(q)
        };
        for op in ops {
            match *op {
                Op::Enqueue(q, _) => {
                    if counts[q] == 0 {
                        ring.push(q);
                    }
                    counts[q] += 1;
                }
                Op::Dequeue => out.push(pick(&mut counts, &mut ring)),
                _ => {}
            }
        }
        while let Some(q) = pick(&mut counts, &mut ring) {
            out.push(Some(q));
        }
        out
    }

    proptest! {
        #[test]
        fn wrr_matches_model(
            w in proptest::collection::vec(1u32..5, 5),
            ops in proptest::collection::vec(op_strategy(5, 1500), 0..400),
        ) {
            let cfg = WrrConfig { weights: w.clone() };
            let trace = check_deterministic(|| Box::new(Wrr::new(5, &cfg).unwrap()), 5, &ops);
            prop_assert_eq!(trace, model(&w, &ops));
        }
    }

    #[test]
    fn backlogged_shares_are_weights_in_frames() {
        let cfg = WrrConfig {
            weights: vec![1, 2, 5],
        };
        let mut s = Wrr::new(3, &cfg).unwrap();
        let t = Instant::ZERO;
        // Several frames per queue keep every queue backlogged.
        for q in 0..3 {
            for _ in 0..6 {
                s.enqueue(t, q, 100);
            }
        }
        let mut sent = [0u32; 3];
        for _ in 0..8_000 {
            let q = s.dequeue(t).unwrap();
            sent[q] += 1;
            s.enqueue(t, q, 1500 - 400 * q as u32);
        }
        assert_eq!(sent, [1_000, 2_000, 5_000]);
    }
}
