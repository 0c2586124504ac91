//! The byte pipe under a connected VI: a backend moves bytes, the VI (nic.rs) frames
//! messages and matches them to descriptors.
//!
//! Contract: `write` and `read` never block (0 means "not now"); `wait` may block up to
//! its timeout and may return early; a vanished or misbehaving peer is an `Err`, never a
//! hang or a panic.

use std::time::Duration;

/// Why a pipe stopped working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The peer disconnected in order and everything it sent has been read.
    Closed,
    /// The peer vanished (process died, socket reset).
    PeerGone,
    /// The peer broke the shared-ring protocol.
    Corrupt,
}

/// A connected, reliable, in-order byte pipe.
pub(crate) trait Wire: Send {
    /// Write as much of `bufs` (in order) as possible now; returns bytes taken.
    fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, WireError>;
    /// Read up to `out.len()` bytes available now; `Ok(0)` when none.
    fn read(&mut self, out: &mut [u8]) -> Result<usize, WireError>;
    /// Block until input may be available (or output space, if `want_write`), at most
    /// `timeout`. Also detects a dead peer.
    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError>;
    /// Cheap-as-possible check that the peer is alive (may make one system call; called
    /// only from idle spinning, never per message).
    fn check_alive(&mut self) -> Result<(), WireError>;
    /// End of a batch of `write`/`read` calls: deliver any deferred wake-up to the peer.
    fn flush(&mut self) {}
    /// Orderly close: the peer reads what was sent, then `Closed`.
    fn close(&mut self);
}
