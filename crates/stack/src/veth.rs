//! Two network namespaces joined by a veth pair, for the AF_PACKET device (Linux, needs root).
//! I/O helper for tests and `mslink stack-bench`; not part of the protocol core.
//!
//! Contract: [`pair`] makes two fresh unnamed namespaces ([`mslink_netns::VethPair`]) with
//! interface `v0` in `a` and `v1` in `b`, station addresses [`MAC_A`] and [`MAC_B`], both
//! ends and both loopbacks up; nothing outside those namespaces is touched and nothing is
//! named or mounted under /var/run/netns; [`pair_apart`] gives the interfaces addresses other
//! than the stacks' stations. Dropping the value closes the namespaces'
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

/// Interface address of `v0` in [`pair_apart`]: not a station any stack here uses.
pub const IF_MAC_A: [u8; 6] = [2, 0, 0, 0, 1, 1];
/// Interface address of `v1` in [`pair_apart`].
pub const IF_MAC_B: [u8; 6] = [2, 0, 0, 0, 1, 2];

/// Creates the namespaces and the pair (see the module contract).
pub fn pair() -> io::Result<VethPair> {
    VethPair::create("v0", "v1", Some([MAC_A, MAC_B]))
}

/// Like [`pair`], but the interfaces carry addresses of their own ([`IF_MAC_A`],
/// [`IF_MAC_B`]), not the stations [`MAC_A`] and [`MAC_B`] the stacks use. Frames between the
/// stacks are then, to each namespace's kernel, for another host (`PACKET_OTHERHOST`): its IPv4
/// input discards them at its first check instead of routing them (with no address there the
/// route lookup fails and `ip_error` drops them, about 0.5 µs a frame: docs/stack.md, "the veth
/// anomaly"). The packet sockets still receive every frame. For benchmarks; a test that talks
/// to the kernel's own IP stack needs [`pair`].
pub fn pair_apart() -> io::Result<VethPair> {
    VethPair::create("v0", "v1", Some([IF_MAC_A, IF_MAC_B]))
}
