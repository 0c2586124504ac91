//! The virtual-time kernel: a queue of events in a total order, a binary heap of (time,
//! sequence number) (docs/architecture.md rule 4). One kernel under every in-memory driver:
//! the simulator's world, the link's [`crate::hop`] and the test kit's pair.
//!
//! Contract: events pop in time order; events at the same time pop in the order they were
//! scheduled (the sequence number breaks ties), so a run is a pure function of its inputs.
//! Scheduling before the last popped event's time is clamped to that time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Instant;

struct Entry<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A time-ordered queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
    now: Instant,
    executed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: Instant::ZERO,
            executed: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// The time of the event last popped.
    pub fn now(&self) -> Instant {
        self.now
    }
    /// Events popped so far.
    pub fn executed(&self) -> u64 {
        self.executed
    }
    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Schedules `event` at `at` (clamped to now).
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
    }
    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    /// The next event if it is due at or before `limit`; advances the clock to it.
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, E)> {
        if self.heap.peek().is_some_and(|Reverse(e)| e.at <= limit) {
            let Reverse(e) = self.heap.pop().expect("peeked");
            self.now = e.at;
            self.executed += 1;
            Some((e.at, e.event))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_schedule_order() {
        let mut q = EventQueue::default();
        q.schedule(Instant::from_millis(5), "b");
        q.schedule(Instant::from_millis(1), "a");
        q.schedule(Instant::from_millis(5), "c");
        let order: Vec<&str> =
            std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "b", "c"]);
        assert_eq!(q.now(), Instant::from_millis(5));
        q.schedule(Instant::ZERO, "late");
        assert_eq!(
            q.pop_until(Instant::MAX),
            Some((Instant::from_millis(5), "late"))
        );
        assert!(q.pop_until(Instant::MAX).is_none());
        assert_eq!(q.executed(), 4);
    }
}
