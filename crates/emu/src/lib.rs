//! mslink-emu: the multi-service link in real time, between network namespaces.
//!
//! Contract. The engine (`mslink_link::link::MultiServiceLink`) is sans-IO; this crate is its
//! real-time driver, the twin of the in-memory `mslink_link::hop::Hop`:
//!
//! * [`hop::EmulatedHop`] is still sans-IO: two link ends joined by an emulated wireless hop
//!   (queue discipline, capacity model, delay model, on/off outages and error model per
//!   direction, from `mslink_channel`), with every packet accounted for by cause. It applies
//!   the same per-frame step as the simulator (`mslink_channel::medium::on_air`), so an error
//!   trace gives the same per-frame outcomes in both.
//! * [`runtime`] feeds real packets and real time to the hop through the one driver loop of
//!   `mslink_io::driver` (shared with the tunnel): TUN devices with their offloads, the
//!   monotonic clock, nanosecond timer deadlines, back-pressure. The unnamed network
//!   namespaces that vanish with the process (no leftovers after a crash), and the netlink
//!   requests that configure the devices in them, are `mslink_netns`'s.
//! * [`linkpcap`] writes the frames on the emulated air to a pcap file (`--pcap-link`).
//! * [`linklog`] writes per-packet logs in Mahimahi's format (the driver feeds it) and
//!   [`linklog_read`] reads them back (ours or Mahimahi's) for `mslink graph`.
//! * [`nat`] lets a single-mode command reach whatever the host reaches (nftables masquerade,
//!   per-device forwarding, removed by a reaper even after SIGKILL); [`dns`] gives it a
//!   resolver when the host's listens on loopback.
//! * [`session`] puts it all together: commands in namespaces on both sides of the hop, run
//!   to their end, with every packet accounted for (what `mslink emulate` runs).
//! * [`verb`] is `mslink emulate` itself as a library: its options (plain data; the CLI only
//!   parses arguments into them), the link configuration they make, the live view, the
//!   notes and the summary it prints and writes as JSON.
//!
//! 003 §1.3 and §4 run unmodified kernel TCP over an emulated error environment; this crate
//! does that with real kernel stacks on both sides of the hop.

#![warn(missing_docs)]

pub mod config;
pub mod dns;
pub mod hop;
pub mod linklog;
pub mod linklog_read;
pub mod linklog_summary;
pub mod linkpcap;
pub mod nat;
pub mod runtime;
pub mod session;
pub mod verb;

pub use config::{EmuConfig, EmuConfigError};
pub use hop::{ClassCounts, EmulatedHop, PacketCounts, Summary};
pub use session::{Session, SessionConfig, SessionEnd, SessionError};
