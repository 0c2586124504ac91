//! Two network namespaces for a local benchmark run (`mslink bench local --netns`), joined by
//! a veth pair, so the bench crosses a real (virtual) link instead of loopback.
//!
//! Contract: the namespaces are fresh and unnamed ([`mslink_netns::VethPair`]): veth end `v0`
//! in the server's namespace `a` with 10.201.0.1/30, `v1` in the client's namespace `b` with
//! 10.201.0.2/30, loopback up in both; nothing outside them is touched and nothing is named or
//! mounted under /var/run/netns. The server child runs inside `a` ([`mslink_netns::Netns::command`]:
//! it enters the namespace before exec and is killed by the kernel if the thread that started
//! it dies); the client thread enters `b` with setns(2) ([`NetnsPair::enter_client`]) and
//! returns to its own namespace when the pair drops. The kernel removes both namespaces, with
//! the veth, as soon as the pair is dropped and the server has exited — on success, on error,
//! and when this process is killed (even by SIGKILL), with no janitor. Needs root
//! (CAP_SYS_ADMIN, CAP_NET_ADMIN).

use std::net::{IpAddr, Ipv4Addr};

use mslink_netns::{Entered, Netns, VethPair};

use super::{BenchError, Context};

type Result<T> = std::result::Result<T, BenchError>;

/// Server address inside namespace `a`.
pub const SERVER_IP: &str = "10.201.0.1";
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 2);
const PREFIX: u8 = 30;

/// The two namespaces; gone when dropped (once the server has exited).
pub struct NetnsPair {
    pair: VethPair,
    /// Set while the calling thread is in the client namespace.
    entered: Option<Entered>,
}

impl NetnsPair {
    /// Create both namespaces and the veth between them.
    pub fn create() -> Result<Self> {
        let pair = VethPair::create("v0", "v1", None)
            .context(|| "create two namespaces and a veth pair (needs root)".into())?;
        pair.a
            .add_address("v0", IpAddr::V4(SERVER), PREFIX)
            .context(|| "address the server's end".into())?;
        pair.b
            .add_address("v1", IpAddr::V4(CLIENT), PREFIX)
            .context(|| "address the client's end".into())?;
        Ok(Self {
            pair,
            entered: None,
        })
    }

    /// The server's namespace.
    pub fn server(&self) -> &Netns {
        &self.pair.a
    }

    /// Move the calling thread (and threads it starts later) into the client namespace,
    /// until the pair drops.
    pub fn enter_client(&mut self) -> Result<()> {
        self.entered = Some(
            self.pair
                .b
                .enter()
                .context(|| "setns into the client namespace".into())?,
        );
        Ok(())
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Back to the namespace the thread came from first; the namespaces' descriptors close
        // after.
        self.entered.take();
    }
}
