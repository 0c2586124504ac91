//! The networkwide-unique demux key of DAA (002 §4.2.1): (station address, protocol id,
//! application id), and the allocator that hands out application ids.
//!
//! Contract: [`AppIdAllocator`] belongs to the protocol that demultiplexes (the DAA Ethernet
//! layer, through its graph), the one party that interprets the field. An application may ask
//! for a particular id (a server that remote applications know by it, like an IPC port); the
//! request is honoured when the id is free and refused otherwise. Without a request the next free
//! id at or above [`FIRST_DYNAMIC_APP_ID`] is given. Id 0 is never given (it means "none").
//! Because the station address is part of the key, ids allocated independently on each station
//! still form keys unique across the network.

use std::collections::HashSet;

/// The first application id handed out without a request; ids below are for requests
/// (well-known servers), as with ports.
pub const FIRST_DYNAMIC_APP_ID: u32 = 0x8000_0000;

/// A networkwide-unique demux key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DemuxKey {
    /// The station (MAC) address of the receiving machine.
    pub station: [u8; 6],
    /// The protocol stack above the demultiplexing layer (its ethertype).
    pub protocol: u16,
    /// The application id.
    pub app: u32,
}

/// Why an application id could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// The requested id is already assigned to another application on this station and protocol.
    #[error("application id {0} is already in use")]
    Taken(u32),
    /// Id 0 cannot be requested.
    #[error("application id 0 is reserved")]
    Reserved,
    /// Every dynamic id is in use.
    #[error("no free application id")]
    Exhausted,
}

/// The central allocator of application ids for one station.
#[derive(Clone, Debug, Default)]
pub struct AppIdAllocator {
    in_use: HashSet<DemuxKey>,
    next: u32,
}

impl AppIdAllocator {
    /// An allocator with no ids in use.
    pub fn new() -> Self {
        AppIdAllocator {
            in_use: HashSet::new(),
            next: FIRST_DYNAMIC_APP_ID,
        }
    }

    /// Allocates an id for (`station`, `protocol`): `requested` if given and free, else the next
    /// free dynamic id.
    pub fn allocate(
        &mut self,
        station: [u8; 6],
        protocol: u16,
        requested: Option<u32>,
    ) -> Result<DemuxKey, AllocError> {
        if let Some(app) = requested {
            if app == 0 {
                return Err(AllocError::Reserved);
            }
            let key = DemuxKey {
                station,
                protocol,
                app,
            };
            if !self.in_use.insert(key) {
                return Err(AllocError::Taken(app));
            }
            return Ok(key);
        }
        if self.next < FIRST_DYNAMIC_APP_ID {
            self.next = FIRST_DYNAMIC_APP_ID;
        }
        let span = u32::MAX - FIRST_DYNAMIC_APP_ID + 1;
        for _ in 0..span {
            let app = self.next;
            self.next = if self.next == u32::MAX {
                FIRST_DYNAMIC_APP_ID
            } else {
                self.next + 1
            };
            let key = DemuxKey {
                station,
                protocol,
                app,
            };
            if self.in_use.insert(key) {
                return Ok(key);
            }
        }
        Err(AllocError::Exhausted)
    }

    /// Returns `key` to the pool.
    pub fn release(&mut self, key: DemuxKey) {
        self.in_use.remove(&key);
    }

    /// Whether `key` is assigned.
    pub fn in_use(&self, key: &DemuxKey) -> bool {
        self.in_use.contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: [u8; 6] = [2, 0, 0, 0, 0, 1];

    #[test]
    fn honours_request_once() {
        let mut a = AppIdAllocator::new();
        assert_eq!(a.allocate(S, 0x0800, Some(80)).unwrap().app, 80);
        assert_eq!(a.allocate(S, 0x0800, Some(80)), Err(AllocError::Taken(80)));
        // Another protocol stack or another station: a different key.
        assert_eq!(a.allocate(S, 0x86dd, Some(80)).unwrap().app, 80);
        assert_eq!(
            a.allocate([2, 0, 0, 0, 0, 2], 0x0800, Some(80))
                .unwrap()
                .app,
            80
        );
        assert_eq!(a.allocate(S, 0x0800, Some(0)), Err(AllocError::Reserved));
    }

    #[test]
    fn dynamic_ids_skip_requested_and_reuse_released() {
        let mut a = AppIdAllocator::new();
        a.allocate(S, 1, Some(FIRST_DYNAMIC_APP_ID)).unwrap();
        let k = a.allocate(S, 1, None).unwrap();
        assert_eq!(k.app, FIRST_DYNAMIC_APP_ID + 1);
        a.release(k);
        assert!(!a.in_use(&k));
        assert_eq!(a.allocate(S, 1, Some(k.app)).unwrap(), k);
    }
}
