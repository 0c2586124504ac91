//! Frame schedulers: who sends next when several queues share one physical link.
//!
//! Contract. A scheduler owns `n` queues numbered `0..n`, fixed at construction, and tracks only
//! frame *lengths*: the frames themselves stay with their owner (the link keeps them per
//! service), so a scheduler is a pure ordering policy. The driver calls, with non-decreasing
//! `now`:
//!
//! * `enqueue(now, q, len)` when a frame of `len` bytes joins the tail of queue `q`;
//! * `dequeue(now)` when the link is free: the queue whose head frame goes next (that head is
//!   removed), or `None` when every queue is empty;
//! * `observe_input(now, q, bytes)` for each packet the classifier gives queue `q`, before any
//!   link-layer overhead (SCFQ measures its rates from this, 004 §IV);
//! * `report(now, q, delivered)` when the MAC learns the outcome of a transmission from queue
//!   `q` (ELF estimates error rates from this, 003 §6).
//!
//! Work-conserving schedulers never return `None` while a frame is queued. Nothing here reads a
//! clock or allocates per frame on the hot path once queues have grown.

use crate::time::Instant;

/// Index of a scheduler queue.
pub type QueueId = usize;

/// An ordering policy over `n` FIFO queues of frames.
pub trait Scheduler: Send {
    /// The policy's name, as used in configuration.
    fn name(&self) -> &'static str;
    /// Number of queues.
    fn queues(&self) -> usize;
    /// A frame of `len` bytes joins the tail of queue `q`.
    fn enqueue(&mut self, now: Instant, q: QueueId, len: u32);
    /// Removes and returns the queue whose head frame is sent next.
    fn dequeue(&mut self, now: Instant) -> Option<QueueId>;
    /// Frames queued in all queues.
    fn len(&self) -> usize;
    /// True when no frame is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Classifier input of `bytes` to queue `q` (before link overhead). Default: ignored.
    fn observe_input(&mut self, _now: Instant, _q: QueueId, _bytes: u32) {}
    /// MAC outcome of a transmission from queue `q`. Default: ignored.
    fn report(&mut self, _now: Instant, _q: QueueId, _delivered: bool) {}
}
