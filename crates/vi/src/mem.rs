//! Registered memory (000 §III.A: "the VI consumer identifies the memory used for a data
//! transfer before requesting the data transfer").
//!
//! Contract: a region is a buffer handed to the NIC and owned by it until deregistered, so
//! the provider may copy into and out of it at any time without a Rust borrow being
//! outstanding. The consumer reads and writes it through `Nic::mem`/`Nic::mem_mut`.
//! Descriptors name memory by (region, offset, length): bounds are checked when a
//! descriptor is posted, and a region referenced by a posted descriptor cannot be
//! deregistered (lifetime check) — the refusal is an error, never a dangling buffer.
//! Registered memory is pinned as in 000 §III.A: each region gets its own page-aligned
//! mapping, locked with `mlock(2)` until deregistered (or the NIC drops); if RLIMIT_MEMLOCK
//! refuses, registration fails with [`VipError::MemLock`] naming the size and the limit.
//! Registration copies the caller's buffer in, deregistration copies it back out (control
//! path). On the shared-memory backend a region is a sealed memfd the peer may map
//! read-only, so a message moves with one copy (see `shm`).

use std::os::fd::AsRawFd;

use crate::error::VipError;
use crate::sys::{PinError, PinnedBuf};

/// Handle of a registered memory region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemHandle(pub(crate) u32);

/// One scatter-gather element: `len` bytes at `offset` in region `mem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Region the bytes live in.
    pub mem: MemHandle,
    /// Start within the region.
    pub offset: usize,
    /// Number of bytes.
    pub len: usize,
}

#[derive(Debug)]
struct Region {
    buf: PinnedBuf,
    /// Posted descriptors (send or receive, any VI) that reference this region.
    in_use: u32,
}

/// The NIC's table of registered regions. Handles are never reused.
#[derive(Debug, Default)]
pub(crate) struct MemTable {
    regions: Vec<Option<Region>>,
}

impl MemTable {
    /// Pin a copy of `buf` (a memfd the peer may map if `shareable`) and register it.
    pub(crate) fn register(
        &mut self,
        buf: Vec<u8>,
        shareable: bool,
    ) -> Result<MemHandle, VipError> {
        let mut pinned = PinnedBuf::new(buf.len(), shareable).map_err(|e| match e {
            PinError::Io(e) => VipError::Io(e),
            PinError::Lock(l) => VipError::MemLock {
                bytes: l.bytes,
                limit: l
                    .limit
                    .map_or_else(|| "unlimited".to_string(), |b| format!("{b} bytes")),
                cause: l.err,
            },
        })?;
        pinned.as_mut_slice().copy_from_slice(&buf);
        self.regions.push(Some(Region {
            buf: pinned,
            in_use: 0,
        }));
        Ok(MemHandle((self.regions.len() - 1) as u32))
    }

    fn region(&self, h: MemHandle) -> Result<&Region, VipError> {
        self.regions
            .get(h.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(VipError::InvalidHandle)
    }

    fn region_mut(&mut self, h: MemHandle) -> Result<&mut Region, VipError> {
        self.regions
            .get_mut(h.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(VipError::InvalidHandle)
    }

    pub(crate) fn deregister(&mut self, h: MemHandle) -> Result<Vec<u8>, VipError> {
        let r = self.region(h)?;
        if r.in_use > 0 {
            return Err(VipError::MemoryInUse(r.in_use));
        }
        let slot = &mut self.regions[h.0 as usize];
        Ok(slot
            .take()
            .map(|r| r.buf.as_slice().to_vec())
            .unwrap_or_default())
    }

    pub(crate) fn bytes(&self, h: MemHandle) -> Result<&[u8], VipError> {
        Ok(self.region(h)?.buf.as_slice())
    }

    pub(crate) fn bytes_mut(&mut self, h: MemHandle) -> Result<&mut [u8], VipError> {
        Ok(self.region_mut(h)?.buf.as_mut_slice())
    }

    /// Check that a segment lies inside its region.
    pub(crate) fn check(&self, s: &Segment) -> Result<(), VipError> {
        let region_len = self.region(s.mem)?.buf.as_slice().len();
        match s.offset.checked_add(s.len) {
            Some(end) if end <= region_len => Ok(()),
            _ => Err(VipError::OutOfBounds {
                offset: s.offset,
                len: s.len,
                region_len,
            }),
        }
    }

    /// Count (+1) or release (-1) a posted descriptor's references.
    pub(crate) fn pin(&mut self, segs: &[Segment], up: bool) {
        for s in segs {
            if let Ok(r) = self.region_mut(s.mem) {
                r.in_use = if up {
                    r.in_use.saturating_add(1)
                } else {
                    r.in_use.saturating_sub(1)
                };
            }
        }
    }

    /// Where a segment's region lives, for backends that register memory with the kernel.
    pub(crate) fn region_ref(&self, h: MemHandle) -> Option<crate::wire::RegionRef> {
        let r = self.region(h).ok()?;
        let b = r.buf.as_slice();
        Some(crate::wire::RegionRef {
            id: h.0,
            base: b.as_ptr() as usize,
            len: b.len(),
            fd: r.buf.fd().map(|f| (f.as_raw_fd(), r.buf.map_len())),
        })
    }

    /// The bytes of a (checked) segment.
    pub(crate) fn seg(&self, s: &Segment) -> &[u8] {
        self.bytes(s.mem)
            .map(|b| &b[s.offset..s.offset + s.len])
            .unwrap_or(&[])
    }

    /// The bytes of a (checked) segment, writable.
    pub(crate) fn seg_mut(&mut self, s: &Segment) -> &mut [u8] {
        match self.bytes_mut(s.mem) {
            Ok(b) => &mut b[s.offset..s.offset + s.len],
            Err(_) => &mut [],
        }
    }
}
