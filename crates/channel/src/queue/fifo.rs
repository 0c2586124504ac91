//! The packet buffer every discipline keeps: packets in arrival order with their bytes
//! counted (drop-tail and drop-head are limits on it, applied by `Queue`).

use super::*;

/// A FIFO of entries with its byte count.
#[derive(Clone, Debug)]
pub(super) struct Fifo<T> {
    pub(super) items: VecDeque<Entry<T>>,
    pub(super) bytes: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            items: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<T> Fifo<T> {
    pub(super) fn push(&mut self, e: Entry<T>) {
        self.bytes += e.len;
        self.items.push_back(e);
    }

    pub(super) fn pop(&mut self) -> Option<Entry<T>> {
        let e = self.items.pop_front()?;
        self.bytes -= e.len;
        Some(e)
    }
}
