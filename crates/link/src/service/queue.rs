//! The bounded queue of SDUs in front of every service's sender.
//!
//! Contract: [`SendQueue::offer`] takes an SDU unless the queue holds `limit` already (or the
//! SDU is longer than `max_len`), counting `sdus_in` or `sdus_refused` in the service's stats
//! either way, and hands a refused SDU back so the caller counts the drop: nothing is lost
//! silently. Order is first in, first out.

use std::collections::VecDeque;

use super::{Sdu, ServiceStats};

/// A FIFO of SDUs with a length limit.
#[derive(Debug, Clone)]
pub struct SendQueue {
    sdus: VecDeque<Sdu>,
    limit: usize,
    max_len: usize,
    /// Payload bytes of the SDUs waiting.
    bytes: usize,
}

impl SendQueue {
    /// A queue holding at most `limit` SDUs of any length.
    pub fn new(limit: usize) -> Self {
        SendQueue {
            sdus: VecDeque::new(),
            limit,
            max_len: usize::MAX,
            bytes: 0,
        }
    }

    /// The same, refusing SDUs longer than `max_len` bytes.
    pub fn with_max_len(limit: usize, max_len: usize) -> Self {
        SendQueue {
            max_len,
            ..SendQueue::new(limit)
        }
    }

    /// Takes `sdu`, or hands it back if the queue is full or the SDU too long.
    pub fn offer(&mut self, sdu: Sdu, stats: &mut ServiceStats) -> Result<(), Sdu> {
        if self.sdus.len() >= self.limit || sdu.data.len() > self.max_len {
            stats.sdus_refused += 1;
            return Err(sdu);
        }
        stats.sdus_in += 1;
        self.bytes += sdu.data.len();
        self.sdus.push_back(sdu);
        Ok(())
    }

    /// The oldest SDU, removed.
    pub fn pop_front(&mut self) -> Option<Sdu> {
        let sdu = self.sdus.pop_front()?;
        self.bytes -= sdu.data.len();
        Some(sdu)
    }

    /// Payload bytes of the SDUs waiting (an XCP router's queue, for one).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The oldest SDU.
    pub fn front(&self) -> Option<&Sdu> {
        self.sdus.front()
    }

    /// SDUs waiting.
    pub fn len(&self) -> usize {
        self.sdus.len()
    }

    /// True when no SDU waits.
    pub fn is_empty(&self) -> bool {
        self.sdus.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_when_full_or_too_long_and_counts() {
        let mut q = SendQueue::with_max_len(2, 3);
        let mut s = ServiceStats::default();
        assert!(q.offer(Sdu::whole(vec![1]), &mut s).is_ok());
        assert_eq!(
            q.offer(Sdu::whole(vec![1, 2, 3, 4]), &mut s)
                .unwrap_err()
                .data
                .len(),
            4
        );
        assert!(q.offer(Sdu::whole(vec![2]), &mut s).is_ok());
        assert!(q.offer(Sdu::whole(vec![3]), &mut s).is_err());
        assert_eq!((s.sdus_in, s.sdus_refused, q.len()), (2, 2, 2));
        assert_eq!(q.bytes(), 2, "refused SDUs are not counted");
        assert_eq!(q.pop_front().unwrap().data, vec![1]);
        assert_eq!(q.bytes(), 1);
    }
}
