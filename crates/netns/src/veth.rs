//! Two fresh network namespaces joined by a veth pair: the fixture of the stack's AF_PACKET
//! tests and `mslink stack-bench --veth`, `mslink bench local --netns` and the tunnel tests.
//!
//! Contract. [`VethPair::create`] makes two new unnamed namespaces ([`crate::Netns::create`])
//! and a veth pair between them, end `dev_a` in `a` and `dev_b` in `b`, with the given station
//! addresses (else the kernel's random ones), both ends and both loopbacks up; nothing outside
//! the two namespaces is touched and nothing is named under /var/run/netns. Addresses,
//! routes and sockets are the caller's business (the [`crate::Netns`] methods, inside
//! `a` and `b`). Dropping the value closes both descriptors: the kernel then removes the
//! namespaces, and with them the pair and everything configured on it, as soon as no process
//! or socket of the caller's still lives inside. A failure half-way drops what was made.

use std::io;

use crate::rtnl::LinkChange;
use crate::Netns;

/// Two namespaces and the veth pair between them; gone when dropped.
#[derive(Debug)]
pub struct VethPair {
    /// Namespace A (holds `dev_a`).
    pub a: Netns,
    /// Namespace B (holds `dev_b`).
    pub b: Netns,
    /// Name of the end in A.
    pub dev_a: String,
    /// Name of the end in B.
    pub dev_b: String,
}

impl VethPair {
    /// Creates the namespaces and the pair (see the module contract); `macs` are the station
    /// addresses of `dev_a` and `dev_b`.
    pub fn create(dev_a: &str, dev_b: &str, macs: Option<[[u8; 6]; 2]>) -> io::Result<VethPair> {
        let p = VethPair {
            a: Netns::create()?,
            b: Netns::create()?,
            dev_a: dev_a.to_string(),
            dev_b: dev_b.to_string(),
        };
        p.a.add_veth(dev_a, &p.b, dev_b)?;
        for (i, (ns, dev)) in [(&p.a, dev_a), (&p.b, dev_b)].into_iter().enumerate() {
            ns.set_link(
                dev,
                &LinkChange {
                    up: true,
                    mac: macs.map(|m| m[i]),
                    ..LinkChange::default()
                },
            )?;
            ns.set_link("lo", &LinkChange::up())?;
        }
        Ok(p)
    }
}
