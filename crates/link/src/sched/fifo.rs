//! FIFO: one queue over all services, in arrival order (the single-service baseline of 004 §IV,
//! where the most aggressive service grabs the largest share).
//!
//! Contract: `dequeue` returns queues in exactly the order their frames were enqueued, across
//! all queues. O(1) per frame; after warm-up no allocation.

use super::{check_queues, QueueId, SchedConfigError, Scheduler};
use crate::time::Instant;
use std::collections::VecDeque;

/// FIFO has no settings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FifoConfig {}

/// First in, first out over all queues.
#[derive(Clone, Debug)]
pub struct Fifo {
    queues: usize,
    /// Queue of each queued frame, oldest first.
    order: VecDeque<u32>,
}

impl Fifo {
    /// A FIFO over `queues` queues.
    pub fn new(queues: usize, _config: &FifoConfig) -> Result<Self, SchedConfigError> {
        check_queues(queues)?;
        Ok(Fifo {
            queues,
            order: VecDeque::new(),
        })
    }
}

impl Scheduler for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn queues(&self) -> usize {
        self.queues
    }
    fn enqueue(&mut self, _now: Instant, q: QueueId, _len: u32) {
        assert!(q < self.queues, "queue {q} out of range");
        self.order.push_back(q as u32);
    }
    fn dequeue(&mut self, _now: Instant) -> Option<QueueId> {
        self.order.pop_front().map(|q| q as usize)
    }
    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{check_deterministic, op_strategy, Op};
    use super::*;
    use proptest::prelude::*;

    fn make(n: usize) -> Box<dyn Scheduler> {
        Box::new(Fifo::new(n, &FifoConfig::default()).unwrap())
    }

    proptest! {
        #[test]
        fn fifo_is_arrival_order(ops in proptest::collection::vec(op_strategy(4, 1500), 0..300)) {
            let trace = check_deterministic(|| make(4), 4, &ops);
            // Model: the list of enqueued queue ids, consumed from the front.
            let mut model = VecDeque::new();
            let mut expect = Vec::new();
            for op in &ops {
                match op {
                    Op::Enqueue(q, _) => model.push_back(*q),
                    Op::Dequeue => expect.push(model.pop_front()),
                    _ => {}
                }
            }
            expect.extend(model.into_iter().map(Some));
            prop_assert_eq!(trace, expect);
        }
    }
}
