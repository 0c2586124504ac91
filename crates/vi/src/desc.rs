//! Descriptors, their states, and completions (000 §III.A: "a descriptor is a memory
//! structure that contains all the information ... the provider needs to process the
//! request. After a request is processed, the VI provider marks the descriptors with a
//! status value").
//!
//! Contract: a descriptor is `Posted` when queued, `InProgress` once the provider has moved
//! some of its bytes, then exactly one of `Done` or `Error(status)`, reported by exactly
//! one [`Completion`]. Completions of one work queue appear in posting order.

use serde::{Deserialize, Serialize};

use crate::error::VipError;
use crate::mem::Segment;

/// Most scatter-gather segments one descriptor may carry.
pub const MAX_SEGMENTS: usize = 4;

/// Identifier of a posted descriptor, unique per VI and work queue (posting order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DescId(pub u64);

/// Which work queue of a VI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkQueue {
    /// The send queue.
    Send,
    /// The receive queue.
    Recv,
}

/// Final status of a descriptor (or of a message that found none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// Transferred in full.
    Success,
    /// Flushed by a local disconnect before it completed.
    Flushed,
    /// The peer disconnected before it completed.
    PeerClosed,
    /// The peer vanished (process died) before it completed.
    PeerGone,
    /// A message arrived and no receive descriptor was posted (VI: an error, never a
    /// silent drop). The completion carries no descriptor id; the message is discarded.
    NoRecvDescriptor,
    /// The arriving message was longer than the receive descriptor's buffers.
    LengthError,
    /// The peer broke the wire protocol.
    ProtocolError,
}

/// Where a descriptor is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DescState {
    /// On the work queue, untouched.
    Posted,
    /// The provider has moved some of its bytes.
    InProgress,
    /// Completed successfully (completion not yet reaped).
    Done,
    /// Completed with an error (completion not yet reaped).
    Error(Status),
}

/// A work request: scatter-gather list, user tag, and 32 bits of immediate data carried to
/// the receiver's completion.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    segs: [Segment; MAX_SEGMENTS],
    n: u8,
    /// Opaque user value returned in the completion.
    pub tag: u64,
    /// Immediate data (sent with the message; ignored on receive descriptors).
    pub immediate: u32,
}

impl Descriptor {
    /// An empty descriptor (zero-length message) with a tag.
    pub fn new(tag: u64) -> Self {
        let zero = Segment {
            mem: crate::mem::MemHandle(u32::MAX),
            offset: 0,
            len: 0,
        };
        Self {
            segs: [zero; MAX_SEGMENTS],
            n: 0,
            tag,
            immediate: 0,
        }
    }

    /// A descriptor with a single segment.
    pub fn single(seg: Segment, tag: u64) -> Self {
        let mut d = Self::new(tag);
        d.segs[0] = seg;
        d.n = 1;
        d
    }

    /// Append a segment (gather on send, scatter on receive).
    pub fn push(&mut self, seg: Segment) -> Result<&mut Self, VipError> {
        let i = self.n as usize;
        if i >= MAX_SEGMENTS {
            return Err(VipError::TooManySegments);
        }
        self.segs[i] = seg;
        self.n += 1;
        Ok(self)
    }

    /// The segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segs[..self.n as usize]
    }

    /// Total bytes over all segments.
    pub fn total_len(&self) -> usize {
        self.segments().iter().map(|s| s.len).sum()
    }
}

/// One entry of a completion queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    /// The VI it belongs to.
    pub vi: crate::ViHandle,
    /// The work queue.
    pub queue: WorkQueue,
    /// The descriptor, or `None` for an event with no descriptor (a message that found no
    /// receive descriptor, or a connection lost while nothing was posted).
    pub id: Option<DescId>,
    /// The descriptor's tag (0 when `id` is `None`).
    pub tag: u64,
    /// Outcome.
    pub status: Status,
    /// Bytes transferred (for `NoRecvDescriptor`/`LengthError`: the message length).
    pub len: usize,
    /// Immediate data of a received message.
    pub immediate: u32,
}

impl Completion {
    /// Did it succeed?
    pub fn is_ok(&self) -> bool {
        self.status == Status::Success
    }
}
