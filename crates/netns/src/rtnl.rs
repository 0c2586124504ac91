//! Route-netlink requests (RFC 3549; rtnetlink(7)) for the links, addresses, routes and
//! neighbour entries of the calling thread's network namespace: what `ip link`, `ip addr`,
//! `ip route` and `ip neigh` would do, without a subprocess. Messages are built and parsed by
//! `netlink-packet-route`.
//!
//! Contract. Each function sends one request with `NLM_F_ACK` on a fresh `NETLINK_ROUTE`
//! socket opened in the calling thread's namespace (so a caller that means another namespace
//! runs it inside [`crate::Netns::run`], or uses the `Netns` methods of the same names) and
//! waits for the kernel's answer. Nothing is retried and nothing is left half-done by this
//! module beyond what the kernel did for the one request. A refusal comes back as an
//! `io::Error` whose kind follows the kernel's errno and whose text names the operation, the
//! errno's text and, when the kernel attached one (extended ack), its own message, e.g.
//! `adding address 10.0.0.1/24 to v0: File exists (os error 17)`.

use std::ffi::CString;
use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_ACK_TLVS, NLM_F_CREATE,
    NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// `NLMSGERR_ATTR_MSG` (linux/netlink.h): the extended ack's text.
const NLMSGERR_ATTR_MSG: u16 = 1;
/// Length of `struct nlmsghdr`, which an error message echoes (only the header, with
/// `NETLINK_CAP_ACK`) before its extended-ack attributes.
const NLMSGHDR_LEN: usize = 16;

/// The text of the `NLMSGERR_ATTR_MSG` attribute among the extended-ack attributes `tlvs`.
fn ext_ack_message(tlvs: &[u8]) -> Option<String> {
    let mut at = 0;
    while at + 4 <= tlvs.len() {
        let len = u16::from_ne_bytes([tlvs[at], tlvs[at + 1]]) as usize;
        let kind = u16::from_ne_bytes([tlvs[at + 2], tlvs[at + 3]]) & 0x3fff;
        if len < 4 || at + len > tlvs.len() {
            return None;
        }
        if kind == NLMSGERR_ATTR_MSG {
            let text = &tlvs[at + 4..at + len];
            let text = text.split(|&b| b == 0).next().unwrap_or_default();
            return Some(String::from_utf8_lossy(text).into_owned()).filter(|t| !t.is_empty());
        }
        at += (len + 3) & !3;
    }
    None
}

/// Sends `msg` with `flags` (plus REQUEST and ACK) and waits for the acknowledgement.
fn request(what: &str, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
    let ctx = |e: io::Error| io::Error::new(e.kind(), format!("{what}: netlink socket: {e}"));
    let mut sock = Socket::new(NETLINK_ROUTE).map_err(ctx)?;
    // The kernel's own words on a refusal, and only the header of our request echoed back.
    // Kernels without them simply send less.
    let _ = sock.set_ext_ack(true);
    let _ = sock.set_cap_ack(true);
    sock.bind_auto().map_err(ctx)?;
    sock.connect(&SocketAddr::new(0, 0)).map_err(ctx)?;
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
    hdr.sequence_number = 1;
    let mut m = NetlinkMessage::new(hdr, NetlinkPayload::from(msg));
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    sock.send(&buf, 0).map_err(ctx)?;
    let mut rx = vec![0u8; 16384];
    loop {
        let n = sock.recv(&mut &mut rx[..], 0).map_err(ctx)?;
        let mut at = 0;
        while at < n {
            let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rx[at..n])
                .map_err(|e| io::Error::other(format!("{what}: unreadable netlink reply: {e}")))?;
            let len = reply.header.length as usize;
            let tlvs = reply.header.flags & NLM_F_ACK_TLVS != 0;
            if let NetlinkPayload::Error(e) = reply.payload {
                let Some(code) = e.code else {
                    return Ok(());
                };
                let errno = io::Error::from_raw_os_error(-code.get());
                let said = if tlvs {
                    e.header.get(NLMSGHDR_LEN..).and_then(ext_ack_message)
                } else {
                    None
                };
                let text = match said {
                    Some(s) => format!("{what}: {errno} (kernel: {s})"),
                    None => format!("{what}: {errno}"),
                };
                return Err(io::Error::new(errno.kind(), text));
            }
            if len == 0 {
                break;
            }
            at += (len + 3) & !3;
        }
    }
}

/// The index of link `name` in the calling thread's namespace.
pub fn index(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("link name {name:?} holds a NUL byte"),
        )
    })?;
    // SAFETY: if_nametoindex reads a NUL-terminated string we own.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no link named {name:?} in this namespace"),
        )),
        i => Ok(i),
    }
}

/// Creates veth `name` here with its peer `peer` in the namespace of descriptor `peer_ns`
/// (which may be this namespace's own). Both ends start down.
pub fn add_veth(name: &str, peer: &str, peer_ns: RawFd) -> io::Result<()> {
    let mut p = LinkMessage::default();
    p.attributes.push(LinkAttribute::IfName(peer.into()));
    p.attributes.push(LinkAttribute::NetNsFd(peer_ns));
    let mut m = LinkMessage::default();
    m.attributes.push(LinkAttribute::IfName(name.into()));
    m.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Veth),
        LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(p))),
    ]));
    request(
        &format!("creating veth {name}/{peer}"),
        RouteNetlinkMessage::NewLink(m),
        NLM_F_CREATE | NLM_F_EXCL,
    )
}

/// What to change on a link: state, MTU, station address, transmit queue length. Fields left
/// at their default are not touched (`up: false` leaves the state as it is).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkChange {
    /// Bring it up.
    pub up: bool,
    /// New MTU.
    pub mtu: Option<u32>,
    /// New station (MAC) address.
    pub mac: Option<[u8; 6]>,
    /// New transmit queue length.
    pub txqueuelen: Option<u32>,
}

impl LinkChange {
    /// Only: bring it up.
    pub fn up() -> LinkChange {
        LinkChange {
            up: true,
            ..LinkChange::default()
        }
    }
}

/// Applies `change` to link `name` in one request.
pub fn set_link(name: &str, change: &LinkChange) -> io::Result<()> {
    let mut m = LinkMessage::default();
    m.header.index = index(name)?;
    if change.up {
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
    }
    if let Some(v) = change.mtu {
        m.attributes.push(LinkAttribute::Mtu(v));
    }
    if let Some(a) = change.mac {
        m.attributes.push(LinkAttribute::Address(a.to_vec()));
    }
    if let Some(q) = change.txqueuelen {
        m.attributes.push(LinkAttribute::TxQueueLen(q));
    }
    request(
        &format!("changing link {name}"),
        RouteNetlinkMessage::SetLink(m),
        0,
    )
}

/// Deletes link `name` (for a veth, both ends).
pub fn del_link(name: &str) -> io::Result<()> {
    let mut m = LinkMessage::default();
    m.header.index = index(name)?;
    request(
        &format!("deleting link {name}"),
        RouteNetlinkMessage::DelLink(m),
        0,
    )
}

fn family(addr: IpAddr) -> AddressFamily {
    match addr {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn address(name: &str, local: IpAddr, peer: IpAddr, prefix: u8, what: String) -> io::Result<()> {
    if family(local) != family(peer) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}: {local} and {peer} are of different families"),
        ));
    }
    let mut m = AddressMessage::default();
    m.header.index = index(name)?;
    m.header.prefix_len = prefix;
    m.header.family = family(local);
    m.attributes.push(AddressAttribute::Local(local));
    m.attributes.push(AddressAttribute::Address(peer));
    request(
        &what,
        RouteNetlinkMessage::NewAddress(m),
        NLM_F_CREATE | NLM_F_EXCL,
    )
}

/// Adds address `addr/prefix` to link `name` (`ip addr add ADDR/PREFIX dev NAME`: no
/// broadcast address, the kernel adds the prefix route). Adding an address the link already
/// has is refused (`AlreadyExists`).
pub fn add_address(name: &str, addr: IpAddr, prefix: u8) -> io::Result<()> {
    address(
        name,
        addr,
        addr,
        prefix,
        format!("adding address {addr}/{prefix} to {name}"),
    )
}

/// Adds point-to-point address `local` with peer `peer` to link `name` (`ip addr add LOCAL
/// peer PEER dev NAME`: a host prefix, and a route to the peer through the link).
pub fn add_peer_address(name: &str, local: IpAddr, peer: IpAddr) -> io::Result<()> {
    let prefix = if local.is_ipv4() { 32 } else { 128 };
    address(
        name,
        local,
        peer,
        prefix,
        format!("adding address {local} peer {peer} to {name}"),
    )
}

/// An IP version, for requests that need one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// Adds a default route of `family` out of link `name`, no gateway (`ip route add default
/// dev NAME`).
pub fn add_default_route(name: &str, family: Family) -> io::Result<()> {
    let mut m = RouteMessage::default();
    m.header.address_family = match family {
        Family::V4 => AddressFamily::Inet,
        Family::V6 => AddressFamily::Inet6,
    };
    m.header.table = RouteHeader::RT_TABLE_MAIN;
    m.header.protocol = RouteProtocol::Boot;
    m.header.scope = RouteScope::Link;
    m.header.kind = RouteType::Unicast;
    m.attributes.push(RouteAttribute::Oif(index(name)?));
    request(
        &format!(
            "adding a default {} route via {name}",
            match family {
                Family::V4 => "IPv4",
                Family::V6 => "IPv6",
            }
        ),
        RouteNetlinkMessage::NewRoute(m),
        NLM_F_CREATE | NLM_F_EXCL,
    )
}

/// Adds a route to `dst/prefix` through the router `via` on link `name` (`ip route add
/// DST/PREFIX via VIA dev NAME`); both addresses of one family.
pub fn add_route_via(name: &str, dst: IpAddr, prefix: u8, via: IpAddr) -> io::Result<()> {
    if family(dst) != family(via) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("route to {dst}/{prefix} via {via}: two address families"),
        ));
    }
    let addr = |a: IpAddr| match a {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    };
    let mut m = RouteMessage::default();
    m.header.address_family = family(dst);
    m.header.destination_prefix_length = prefix;
    m.header.table = RouteHeader::RT_TABLE_MAIN;
    m.header.protocol = RouteProtocol::Boot;
    m.header.scope = RouteScope::Universe;
    m.header.kind = RouteType::Unicast;
    m.attributes.push(RouteAttribute::Destination(addr(dst)));
    m.attributes.push(RouteAttribute::Gateway(addr(via)));
    m.attributes.push(RouteAttribute::Oif(index(name)?));
    request(
        &format!("adding a route to {dst}/{prefix} via {via} dev {name}"),
        RouteNetlinkMessage::NewRoute(m),
        NLM_F_CREATE | NLM_F_EXCL,
    )
}

/// Adds a permanent neighbour entry: `addr` is at station `mac` on link `name` (`ip neigh add
/// ADDR lladdr MAC dev NAME nud permanent`), for a peer that does not answer ARP or ND.
pub fn add_neighbour(name: &str, addr: IpAddr, mac: [u8; 6]) -> io::Result<()> {
    let mut m = NeighbourMessage::default();
    m.header.family = family(addr);
    m.header.ifindex = index(name)?;
    m.header.state = NeighbourState::Permanent;
    m.header.kind = RouteType::Unicast;
    m.attributes
        .push(NeighbourAttribute::Destination(match addr {
            IpAddr::V4(a) => NeighbourAddress::Inet(a),
            IpAddr::V6(a) => NeighbourAddress::Inet6(a),
        }));
    m.attributes
        .push(NeighbourAttribute::LinkLayerAddress(mac.to_vec()));
    request(
        &format!("adding neighbour {addr} on {name}"),
        RouteNetlinkMessage::NewNeighbour(m),
        NLM_F_CREATE | NLM_F_EXCL,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_extended_ack_message() {
        // NLMSGERR_ATTR_MSG "bad\0" (len 8), then NLMSGERR_ATTR_OFFS (type 2, a u32).
        let mut tlvs = Vec::new();
        tlvs.extend_from_slice(&8u16.to_ne_bytes());
        tlvs.extend_from_slice(&1u16.to_ne_bytes());
        tlvs.extend_from_slice(b"bad\0");
        tlvs.extend_from_slice(&8u16.to_ne_bytes());
        tlvs.extend_from_slice(&2u16.to_ne_bytes());
        tlvs.extend_from_slice(&20u32.to_ne_bytes());
        assert_eq!(ext_ack_message(&tlvs).as_deref(), Some("bad"));
        // The message second, after an attribute that needs padding.
        let mut t2 = Vec::new();
        t2.extend_from_slice(&5u16.to_ne_bytes());
        t2.extend_from_slice(&3u16.to_ne_bytes());
        t2.extend_from_slice(&[7, 0, 0, 0]);
        t2.extend_from_slice(&tlvs);
        assert_eq!(ext_ack_message(&t2).as_deref(), Some("bad"));
        assert_eq!(ext_ack_message(&tlvs[..6]), None);
        assert_eq!(ext_ack_message(&[]), None);
    }

    #[test]
    fn a_link_name_with_a_nul_is_refused_before_any_request() {
        let e = index("a\0b").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = index("nosuchlink0").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
