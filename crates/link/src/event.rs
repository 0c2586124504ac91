//! The virtual-time kernel: a queue of events in a total order, a heap of (time, sequence
//! number) (docs/architecture.md rule 4). One kernel under every in-memory driver:
//! the simulator's world, the link's [`crate::hop`] and the test kit's pair.
//!
//! Contract: events pop in time order; events at the same time pop in the order they were
//! scheduled (the sequence number breaks ties), so a run is a pure function of its inputs.
//! Scheduling before the last popped event's time is clamped to that time.
//!
//! Layout: a binary min-heap of (time and sequence number as one `u128` key, slot), and the
//! events wait in a slab of slots reused last-freed first. A heap operation moves its entries
//! about log2(n) times; `std`'s heap of entries carrying the event itself (the simulator's are
//! 40 bytes) spent a third of the simulator's time in `pop`.

use crate::time::Instant;

#[derive(Clone, Copy)]
struct Entry {
    /// Time in ns (high 64 bits) and sequence number (low 64): one comparison orders both.
    key: u128,
    /// Where the event waits in `EventQueue::slots`.
    slot: u32,
}

/// Children per node of the heap (`pop` compares them as two pairs).
const ARITY: usize = 4;

/// A min-heap of entries by key.
#[derive(Default)]
struct Heap(Vec<Entry>);

impl Heap {
    fn push(&mut self, e: Entry) {
        let v = &mut self.0;
        let mut i = v.len();
        v.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if v[parent].key <= e.key {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = e;
    }

    /// Removes the least entry. Bottom-up (Floyd's variant, as `std`'s heap does): the hole
    /// left at the root walks down to a leaf along the least children, without comparing
    /// them to the entry being placed and without a branch on which child wins (a coin toss
    /// the predictor loses), and the last entry then rises from there, usually by a level or
    /// two. Four children per node halve the levels; each level's children share two cache
    /// lines and are compared pairwise, so a level costs little more than a binary one.
    fn pop(&mut self) -> Option<Entry> {
        let v = &mut self.0;
        let last = v.pop()?;
        if v.is_empty() {
            return Some(last);
        }
        let top = v[0];
        let n = v.len();
        let mut i = 0;
        let mut first = 1;
        while first + ARITY <= n {
            let c = &v[first..first + ARITY];
            let a = usize::from(c[1].key < c[0].key);
            let b = 2 + usize::from(c[3].key < c[2].key);
            let child = first + if c[b].key < c[a].key { b } else { a };
            v[i] = v[child];
            i = child;
            first = ARITY * i + 1;
        }
        if first < n {
            let mut child = first;
            for c in first + 1..n {
                if v[c].key < v[child].key {
                    child = c;
                }
            }
            v[i] = v[child];
            i = child;
        }
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if v[parent].key <= last.key {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = last;
        Some(top)
    }

    fn peek(&self) -> Option<&Entry> {
        self.0.first()
    }
}

/// A time-ordered queue of events of type `E`.
pub struct EventQueue<E> {
    heap: Heap,
    /// The waiting events, by slot; `None` in a free slot.
    slots: Vec<Option<E>>,
    /// Free slots, the last freed on top.
    free: Vec<u32>,
    seq: u64,
    now: Instant,
    executed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: Heap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            now: Instant::ZERO,
            executed: 0,
        }
    }
}

fn at_of(key: u128) -> Instant {
    Instant::from_nanos((key >> 64) as u64)
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
        self.heap.0.len()
    }
    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.0.is_empty()
    }
    /// Schedules `event` at `at` (clamped to now).
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(event);
                s
            }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 events waiting")
            }
        };
        self.heap.push(Entry {
            key: u128::from(at.as_nanos()) << 64 | u128::from(self.seq),
            slot,
        });
    }
    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| at_of(e.key))
    }

    /// The next event if it is due at or before `limit`; advances the clock to it.
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, E)> {
        if self.heap.peek().is_some_and(|e| at_of(e.key) <= limit) {
            let e = self.heap.pop().expect("peeked");
            let at = at_of(e.key);
            self.now = at;
            self.executed += 1;
            let event = self.slots[e.slot as usize].take().expect("a waiting event");
            self.free.push(e.slot);
            Some((at, event))
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

    /// Against a sorted list: pops interleaved with schedules, many at equal times.
    #[test]
    fn pops_in_time_then_schedule_order_under_churn() {
        let mut q = EventQueue::default();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let (mut x, mut seq) = (12345u64, 0u64);
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if x >> 62 != 0 || model.is_empty() {
                let at = q.now().as_nanos() + (x >> 40) % 50;
                seq += 1;
                q.schedule(Instant::from_nanos(at), (at, seq));
                model.push((at, seq));
            } else {
                model.sort_unstable();
                let want = model.remove(0);
                let (t, got) = q.pop_until(Instant::MAX).expect("an event waits");
                assert_eq!((t.as_nanos(), got), (want.0, want), "step {step}");
            }
            assert_eq!(q.len(), model.len());
        }
    }
}
