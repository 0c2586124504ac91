//! mslink-netns: the one place where the workspace makes network namespaces and configures the
//! links, addresses and routes inside them (Linux only; the library is empty elsewhere).
//!
//! Contract. Every namespace made here is *unnamed*: a thread unshares `CLONE_NEWNET` and a
//! descriptor of the new namespace is kept ([`Netns`]). Nothing is mounted under
//! /var/run/netns and no `ip netns` name is taken, so the kernel removes the namespace, and
//! every veth, TUN device, address and route in it, when the last descriptor closes and the
//! last process inside exits — also when the process that made it is killed with SIGKILL.
//! Links, addresses, routes and neighbour entries are configured with route-netlink requests
//! ([`rtnl`]) sent from a thread inside the namespace ([`Netns::run`]), not by running `ip(8)`:
//! no subprocess, no iproute2 needed, and a refusal comes back as an `io::Error` carrying the
//! kernel's errno and, where the kernel gives one, its extended-ack message.
//!
//! * [`Netns`]: create / current / inode; run a closure or a thread inside; commands inside
//!   (`Netns::command`, `Netns::spawn`) with a parent-death signal; sysctl and /proc/net/dev
//!   inside; the [`rtnl`] requests inside.
//! * [`VethPair`]: two fresh namespaces joined by a veth pair, both ends and `lo` up.
//! * [`rtnl`]: the requests themselves, in the calling thread's namespace.
//! * [`dev_counters`] reads /proc/net/dev text; [`DeviceOwner`] names an emulator's devices
//!   (`msl<pid><side><tag>`, the tag naming its PID namespace) and [`sweep_stale`] removes
//!   those of dead emulators of the caller's PID namespace from the caller's namespace.

#![warn(missing_docs)]

#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
pub mod rtnl;
#[cfg(target_os = "linux")]
mod veth;

#[cfg(target_os = "linux")]
pub use netns::{
    dev_counters, in_terminal_foreground, sweep_stale, take_terminal, DeviceOwner, Entered,
    FileOverlay, Netns,
};
#[cfg(target_os = "linux")]
pub use rtnl::{Family, LinkChange};
#[cfg(target_os = "linux")]
pub use veth::VethPair;
