//! Two network namespaces joined by a veth pair, for the AF_PACKET device (Linux, needs root).
//! I/O helper for tests and `mslink stack-bench`; not part of the protocol core.
//!
//! Contract: [`pair`] makes two fresh unnamed namespaces ([`mslink_netns::VethPair`]) with
//! interface `v0` in `a` and `v1` in `b`, station addresses [`MAC_A`] and [`MAC_B`], both
//! ends and both loopbacks up; nothing outside those namespaces is touched and nothing is
//! named or mounted under /var/run/netns. Dropping the value closes the namespaces'
//! descriptors, and the kernel removes them (and so the pair) once no socket opened inside is
//! left. Sockets are opened inside with `pair.a.run(..)` / `pair.b.run(..)`
//! ([`mslink_netns::Netns::run`]): an AF_PACKET socket opened there stays bound to that
//! namespace's interface whatever thread uses it afterwards.

use std::io;

pub use mslink_netns::VethPair;

/// Station address of `v0` (namespace A).
pub const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
/// Station address of `v1` (namespace B).
pub const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// Creates the namespaces and the pair (see the module contract).
pub fn pair() -> io::Result<VethPair> {
    VethPair::create("v0", "v1", Some([MAC_A, MAC_B]))
}
