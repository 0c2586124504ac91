//! Errors of the VI API calls (one enum: every call can fail the same few ways).
//!
//! Contract: an error returned by a call means the call had no effect; errors of the
//! transfer itself (peer gone, no receive descriptor, ...) arrive as completions with a
//! [`crate::Status`], not as call errors.

use thiserror::Error;

/// Why a VI API call was refused.
#[derive(Debug, Error)]
pub enum VipError {
    /// The handle names no live object of this NIC.
    #[error("invalid handle")]
    InvalidHandle,
    /// A segment lies (partly) outside its registered memory region.
    #[error("segment outside registered region (offset {offset}, len {len}, region {region_len})")]
    OutOfBounds {
        /// Segment start.
        offset: usize,
        /// Segment length.
        len: usize,
        /// Length of the region.
        region_len: usize,
    },
    /// Deregistering a region that posted descriptors still reference.
    #[error("memory region in use by {0} posted descriptor(s)")]
    MemoryInUse(u32),
    /// More segments than [`crate::MAX_SEGMENTS`].
    #[error("too many segments")]
    TooManySegments,
    /// A message longer than the wire header can describe (u32 bytes).
    #[error("message too long")]
    TooLong,
    /// The VI is not connected (never, or no longer).
    #[error("VI not connected")]
    NotConnected,
    /// The VI is already connected (or connecting).
    #[error("VI already connected")]
    AlreadyConnected,
    /// Destroying a VI that is still connected, or a CQ that VIs still use.
    #[error("object busy")]
    Busy,
    /// The backend does not offer this operation or address form.
    #[error("backend mismatch: {0}")]
    Backend(&'static str),
    /// Nothing completed within the timeout.
    #[error("timed out")]
    Timeout,
    /// Registering a region could not pin it in RAM (`mlock` refused).
    #[error(
        "cannot pin a {bytes}-byte memory region in RAM: mlock refused ({cause}); the \
         locked-memory limit (RLIMIT_MEMLOCK) of this process is {limit}, shared by every \
         region it has registered. Raise it with `ulimit -l <KiB>` (or `ulimit -l unlimited`), \
         LimitMEMLOCK= in a systemd unit, or run with CAP_IPC_LOCK"
    )]
    MemLock {
        /// Bytes the region needed locked (rounded up to whole pages).
        bytes: usize,
        /// The limit, as text ("65536 bytes", "unlimited").
        limit: String,
        /// What the kernel said.
        cause: std::io::Error,
    },
    /// An operating-system call on the control path failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}
