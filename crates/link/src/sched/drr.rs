//! Deficit round robin in bytes (Shreedhar and Varghese).
//!
//! Contract: backlogged queues take turns in a ring. When queue `i` reaches the front its
//! deficit grows by its quantum `Q_i` bytes; it then sends head frames while the head fits in
//! the deficit, paying each frame's length, and goes to the back of the ring when the head no
//! longer fits. A queue that empties loses its deficit. With every queue backlogged, queue `i`
//! gets a share of *bytes* that tends to `Q_i / sum Q`. Within a queue frames leave in FIFO
//! order. O(1) per frame when quanta are at least the frame lengths; rounds in which nobody
//! can send are skipped in one step, so small quanta cost at most one extra pass over the ring.

use super::{nonzero_list, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;
use std::collections::VecDeque;

/// Default quantum: one Ethernet-sized frame, so that any usual frame fits in one round.
pub const DEFAULT_QUANTUM: u32 = 1500;

/// Deficit round robin settings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DrrConfig {
    /// Bytes added per turn for each queue (each >= 1); empty means [`DEFAULT_QUANTUM`].
    pub quanta: Vec<u32>,
}

/// Deficit round robin scheduler.
#[derive(Clone, Debug)]
pub struct Drr {
    quanta: Vec<u32>,
    fifos: Vec<VecDeque<u32>>,
    deficit: Vec<u64>,
    /// Backlogged queues; the front one has the turn.
    ring: VecDeque<u32>,
    /// The front queue has not received its quantum for this turn yet.
    fresh: bool,
    /// Turns in a row that ended without sending (to skip fruitless rounds).
    idle_turns: usize,
    frames: usize,
}

impl Drr {
    /// A DRR scheduler over `queues` queues.
    pub fn new(queues: usize, config: &DrrConfig) -> Result<Self, SchedConfigError> {
        let quanta = nonzero_list("quanta", &config.quanta, queues, DEFAULT_QUANTUM)?;
        Ok(Drr {
            quanta,
            fifos: vec![VecDeque::new(); queues],
            deficit: vec![0; queues],
            ring: VecDeque::with_capacity(queues),
            fresh: true,
            idle_turns: 0,
            frames: 0,
        })
    }

    /// A full round passed without anyone sending: give every backlogged queue the number of
    /// further quanta after which the first of them can send, all at once. Exactly what
    /// that many fruitless rounds would do, since such rounds only add quanta and rotate the
    /// ring back to where it was.
    fn skip_fruitless_rounds(&mut self) {
        let rounds = self
            .ring
            .iter()
            .map(|&q| {
                let q = q as usize;
                let need = u64::from(self.fifos[q][0]).saturating_sub(self.deficit[q]);
                need.div_ceil(u64::from(self.quanta[q]))
            })
            .min()
            .unwrap_or(1)
            .saturating_sub(1);
        for &q in &self.ring {
            self.deficit[q as usize] += rounds * u64::from(self.quanta[q as usize]);
        }
        self.idle_turns = 0;
    }
}

impl Scheduler for Drr {
    fn name(&self) -> &'static str {
        "drr"
    }
    fn queues(&self) -> usize {
        self.quanta.len()
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, len: u32) {
        if self.fifos[q].is_empty() {
            self.ring.push_back(q as u32);
        }
        self.fifos[q].push_back(len);
        self.frames += 1;
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        loop {
            let q = *self.ring.front()? as usize;
            if self.fresh {
                self.deficit[q] += u64::from(self.quanta[q]);
                self.fresh = false;
            }
            let head = u64::from(self.fifos[q][0]);
            if head <= self.deficit[q] {
                self.deficit[q] -= head;
                self.fifos[q].pop_front();
                self.frames -= 1;
                self.idle_turns = 0;
                if self.fifos[q].is_empty() {
                    self.deficit[q] = 0;
                    self.ring.pop_front();
                    self.fresh = true;
                }
                return Some(q);
            }
            // The head does not fit: the turn ends (the deficit carries over).
            self.ring.rotate_left(1);
            self.fresh = true;
            self.idle_turns += 1;
            if self.idle_turns >= self.ring.len() {
                // Every backlogged queue has had a fruitless turn since the last send
                // (the ring is back at its start) and holds its deficit: skip ahead.
                self.skip_fruitless_rounds();
            }
        }
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

    /// Naive model: textbook DRR, one quantum per visit, no skipping.
    fn model(quanta: &[u32], ops: &[Op]) -> Vec<Option<QueueId>> {
        let n = quanta.len();
        let mut fifos: Vec<VecDeque<u32>> = vec![VecDeque::new(); n];
        let mut deficit = vec![0u64; n];
        let mut ring: Vec<usize> = Vec::new();
        let mut fresh = true;
        let mut out = Vec::new();
        let mut pick = |fifos: &mut Vec<VecDeque<u32>>, ring: &mut Vec<usize>| loop {
            let &q = ring.first()?;
            if fresh {
                deficit[q] += u64::from(quanta[q]);
                fresh = false;
            }
            let head = u64::from(fifos[q][0]);
            if head <= deficit[q] {
                deficit[q] -= head;
                fifos[q].pop_front();
                if fifos[q].is_empty() {
                    deficit[q] = 0;
                    ring.remove(0);
                    fresh = true;
                }
                return Some(q);
            }
            ring.remove(0);
            ring.push(q);
            fresh = true;
        };
        for op in ops {
            match *op {
                Op::Enqueue(q, len) => {
                    if fifos[q].is_empty() {
                        ring.push(q);
                    }
                    fifos[q].push_back(len);
                }
                Op::Dequeue => out.push(pick(&mut fifos, &mut ring)),
                _ => {}
            }
        }
        while let Some(q) = pick(&mut fifos, &mut ring) {
            out.push(Some(q));
        }
        out
    }

    proptest! {
        #[test]
        fn drr_matches_textbook_model(
            quanta in proptest::collection::vec(1u32..3000, 4),
            ops in proptest::collection::vec(op_strategy(4, 4000), 0..400),
        ) {
            let cfg = DrrConfig { quanta: quanta.clone() };
            let trace = check_deterministic(|| Box::new(Drr::new(4, &cfg).unwrap()), 4, &ops);
            prop_assert_eq!(trace, model(&quanta, &ops));
        }
    }

    #[test]
    fn backlogged_byte_shares_follow_quanta() {
        let cfg = DrrConfig {
            quanta: vec![500, 1000, 2500],
        };
        let mut s = Drr::new(3, &cfg).unwrap();
        let t = Instant::ZERO;
        let lens = [[300u32, 1200, 700], [64, 1500, 900], [1000, 40, 1400]];
        // Four frames per queue keep every queue backlogged (a queue that empties forfeits
        // its deficit, which is not what this test is about).
        let mut queued: Vec<VecDeque<u32>> = vec![VecDeque::new(); 3];
        let mut next = [0usize; 3];
        let mut push = |s: &mut Drr, queued: &mut Vec<VecDeque<u32>>, q: usize| {
            let len = lens[q][next[q] % 3];
            next[q] += 1;
            s.enqueue(t, q, len);
            queued[q].push_back(len);
        };
        for q in 0..3 {
            for _ in 0..4 {
                push(&mut s, &mut queued, q);
            }
        }
        let mut bytes = [0u64; 3];
        for _ in 0..60_000 {
            let q = s.dequeue(t).unwrap();
            bytes[q] += u64::from(queued[q].pop_front().unwrap());
            push(&mut s, &mut queued, q);
        }
        let total: u64 = bytes.iter().sum();
        for (q, want) in [0.125, 0.25, 0.625].into_iter().enumerate() {
            let got = bytes[q] as f64 / total as f64;
            assert!((got - want).abs() < 0.002, "queue {q}: {got} vs {want}");
        }
    }

    #[test]
    fn tiny_quanta_skip_rounds_without_spinning() {
        let cfg = DrrConfig { quanta: vec![1, 2] };
        let mut s = Drr::new(2, &cfg).unwrap();
        let t = Instant::ZERO;
        s.enqueue(t, 0, u32::MAX);
        s.enqueue(t, 1, 3_000_000_000);
        // Queue 1 needs 1.5e9 rounds, queue 0 ~4.3e9: queue 1 goes first.
        assert_eq!(s.dequeue(t), Some(1));
        assert_eq!(s.dequeue(t), Some(0));
        assert_eq!(s.dequeue(t), None);
    }
}
