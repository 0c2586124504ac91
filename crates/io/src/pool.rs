//! A bounded free-list of byte buffers for the real-time driver.
//!
//! Contract. [`BufferPool::take`] hands out an empty buffer (a spare one when there is one);
//! [`BufferPool::give`] takes a buffer back, cleared, but keeps at most `max_buffers` spares,
//! and none whose capacity exceeds `max_capacity` bytes: anything beyond is freed at once.
//! So the memory held by the pool is bounded by `max_buffers * max_capacity` whatever the
//! traffic does. This matters because buffers are drawn on one path (datagrams to send) and
//! returned from another (packets delivered to the TUN device): an end that receives far more
//! than it sends returns many more buffers than it takes, and an unbounded free-list grew by
//! about a byte of memory for every byte received.

/// A free-list of `Vec<u8>` with a bound on what it keeps.
#[derive(Debug)]
pub struct BufferPool {
    spare: Vec<Vec<u8>>,
    max_buffers: usize,
    max_capacity: usize,
}

impl BufferPool {
    /// A pool keeping at most `max_buffers` spares of at most `max_capacity` bytes each.
    pub fn new(max_buffers: usize, max_capacity: usize) -> Self {
        BufferPool {
            spare: Vec::with_capacity(max_buffers),
            max_buffers,
            max_capacity,
        }
    }

    /// An empty buffer, reused when one is spare.
    pub fn take(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Returns a buffer; it is kept (cleared) only if the pool has room and it is not
    /// oversized, otherwise freed.
    pub fn give(&mut self, mut b: Vec<u8>) {
        if self.spare.len() < self.max_buffers && b.capacity() <= self.max_capacity {
            b.clear();
            self.spare.push(b);
        }
    }

    /// Spare buffers held.
    pub fn len(&self) -> usize {
        self.spare.len()
    }

    /// True when no buffer is spare.
    pub fn is_empty(&self) -> bool {
        self.spare.is_empty()
    }

    /// Bytes of capacity held by the spares.
    pub fn held_bytes(&self) -> usize {
        self.spare.iter().map(Vec::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_beyond_the_bound_are_freed() {
        // The receive-heavy pattern of the tunnel: many more buffers come back than are taken.
        let mut p = BufferPool::new(8, 2048);
        for _ in 0..10_000 {
            p.give(vec![0u8; 1500]);
        }
        assert_eq!(p.len(), 8);
        assert!(p.held_bytes() <= 8 * 2048);
    }

    #[test]
    fn oversized_buffers_are_not_kept() {
        let mut p = BufferPool::new(8, 2048);
        p.give(Vec::with_capacity(65_536));
        assert!(p.is_empty());
    }

    #[test]
    fn taken_buffers_are_empty_and_reused() {
        let mut p = BufferPool::new(2, 2048);
        let mut b = Vec::with_capacity(1600);
        b.extend_from_slice(&[1, 2, 3]);
        let ptr = b.as_ptr();
        p.give(b);
        let b = p.take();
        assert!(b.is_empty());
        assert_eq!(b.as_ptr(), ptr);
        assert!(p.take().is_empty()); // none spare: a fresh one
    }
}
