//! Registered memory (000 §III.A: "the VI consumer identifies the memory used for a data
//! transfer before requesting the data transfer").
//!
//! Contract: a region is a buffer handed to the NIC and owned by it until deregistered, so
//! the provider may copy into and out of it at any time without a Rust borrow being
//! outstanding. The consumer reads and writes it through `Nic::mem`/`Nic::mem_mut`.
//! Descriptors name memory by (region, offset, length): bounds are checked when a
//! descriptor is posted, and a region referenced by a posted descriptor cannot be
//! deregistered (lifetime check) — the refusal is an error, never a dangling buffer.

use crate::error::VipError;

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
    buf: Vec<u8>,
    /// Posted descriptors (send or receive, any VI) that reference this region.
    in_use: u32,
}

/// The NIC's table of registered regions. Handles are never reused.
#[derive(Debug, Default)]
pub(crate) struct MemTable {
    regions: Vec<Option<Region>>,
}

impl MemTable {
    pub(crate) fn register(&mut self, buf: Vec<u8>) -> MemHandle {
        self.regions.push(Some(Region { buf, in_use: 0 }));
        MemHandle((self.regions.len() - 1) as u32)
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
        Ok(slot.take().map(|r| r.buf).unwrap_or_default())
    }

    pub(crate) fn bytes(&self, h: MemHandle) -> Result<&[u8], VipError> {
        Ok(&self.region(h)?.buf)
    }

    pub(crate) fn bytes_mut(&mut self, h: MemHandle) -> Result<&mut [u8], VipError> {
        Ok(&mut self.region_mut(h)?.buf)
    }

    /// Check that a segment lies inside its region.
    pub(crate) fn check(&self, s: &Segment) -> Result<(), VipError> {
        let region_len = self.region(s.mem)?.buf.len();
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
        Some(crate::wire::RegionRef {
            id: h.0,
            base: r.buf.as_ptr() as usize,
            len: r.buf.len(),
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
