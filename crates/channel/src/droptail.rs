//! A drop-tail queue limited in packets and in bytes.
//!
//! Contract (sans-IO). [`DropTail::push`] takes an item unless doing so would exceed either
//! limit, and otherwise hands it back so the caller counts the drop (nothing disappears
//! silently); a limit of `None` is no limit. Order is first in, first out; [`DropTail::stats`]
//! counts what entered, left and was refused.

use std::collections::VecDeque;

/// Counters of a drop-tail queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueStats {
    /// Items taken.
    pub enqueued: u64,
    /// Items refused because a limit was reached.
    pub dropped: u64,
    /// Bytes refused.
    pub dropped_bytes: u64,
    /// Items handed out.
    pub dequeued: u64,
}

/// A FIFO with a packet limit and a byte limit.
#[derive(Clone, Debug)]
pub struct DropTail<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    max_packets: Option<usize>,
    max_bytes: Option<usize>,
    stats: QueueStats,
}

impl<T> DropTail<T> {
    /// A queue holding at most `max_packets` items and `max_bytes` bytes.
    pub fn new(max_packets: Option<usize>, max_bytes: Option<usize>) -> Self {
        DropTail {
            items: VecDeque::new(),
            bytes: 0,
            max_packets,
            max_bytes,
            stats: QueueStats::default(),
        }
    }

    /// Takes `item` of `len` bytes, or hands it back if a limit would be exceeded.
    pub fn push(&mut self, item: T, len: usize) -> Result<(), T> {
        let full = self.max_packets.is_some_and(|m| self.items.len() >= m)
            || self.max_bytes.is_some_and(|m| self.bytes + len > m);
        if full {
            self.stats.dropped += 1;
            self.stats.dropped_bytes += len as u64;
            return Err(item);
        }
        self.stats.enqueued += 1;
        self.bytes += len;
        self.items.push_back((item, len));
        Ok(())
    }

    /// The oldest item, removed.
    pub fn pop(&mut self) -> Option<T> {
        let (item, len) = self.items.pop_front()?;
        self.bytes -= len;
        self.stats.dequeued += 1;
        Some(item)
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True if nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counters.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limits_in_packets_and_bytes() {
        let mut q = DropTail::new(Some(2), None);
        assert!(q.push(1, 100).is_ok());
        assert!(q.push(2, 100).is_ok());
        assert_eq!(q.push(3, 1), Err(3));
        assert_eq!(q.pop(), Some(1));
        assert!(q.push(4, 1).is_ok());
        let mut b = DropTail::new(None, Some(1500));
        assert!(b.push('a', 1000).is_ok());
        assert_eq!(b.push('b', 501), Err('b'));
        assert!(b.push('c', 500).is_ok());
        assert_eq!(b.bytes(), 1500);
        assert_eq!(b.stats().dropped_bytes, 501);
    }

    proptest! {
        #[test]
        fn conserves_items(ops in proptest::collection::vec((any::<bool>(), 1usize..2000), 0..300)) {
            let mut q = DropTail::new(Some(20), Some(10_000));
            let mut offered = 0u64;
            for (push, len) in ops {
                if push { offered += 1; let _ = q.push(len, len); } else { q.pop(); }
                prop_assert!(q.len() <= 20 && q.bytes() <= 10_000);
            }
            let s = q.stats();
            prop_assert_eq!(s.enqueued + s.dropped, offered);
            prop_assert_eq!(s.enqueued, s.dequeued + q.len() as u64);
        }
    }
}
