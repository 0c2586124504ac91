//! Namespaces, veth pairs, addresses, routes and neighbour entries made through the crate, as
//! root in real network namespaces: what they make is there (seen from inside, by the kernel's
//! own views and by a UDP datagram across the veth), refusals carry the kernel's errno and the
//! operation, and everything goes away with the descriptors. Each test makes its own unnamed
//! namespaces, so tests run in parallel and nothing outside them is touched.
//!
//! Without root each test returns early with a note; with `MSLINK_REQUIRE_ROOT=1` the missing
//! privilege is a failure.

#![cfg(target_os = "linux")]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use mslink_netns::{rtnl, sweep_stale, Family, LinkChange, Netns, VethPair};

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0x5a, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0x5a, 2];

/// True (with a note on stderr) when the test cannot run because this is not root; with
/// `MSLINK_REQUIRE_ROOT=1` the missing privilege is a failure.
fn skip_without_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    assert!(
        root || std::env::var("MSLINK_REQUIRE_ROOT").as_deref() != Ok("1"),
        "MSLINK_REQUIRE_ROOT=1 but not running as root: the namespace tests need it"
    );
    if !root {
        eprintln!("skipped: needs root for network namespaces");
    }
    !root
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

/// An interface ioctl (`SIOCGIF*`) on `dev` in the calling thread's namespace.
fn ifreq(dev: &str, request: libc::c_ulong) -> io::Result<libc::ifreq> {
    use std::os::fd::AsRawFd;
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    // SAFETY: a zeroed ifreq is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    assert!(dev.len() < req.ifr_name.len());
    for (d, s) in req.ifr_name.iter_mut().zip(dev.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: the SIOCGIF* requests fill the ifreq we pass.
    if unsafe { libc::ioctl(sock.as_raw_fd(), request, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(req)
}

/// The station address of `dev` in the calling thread's namespace.
fn mac_of(dev: &str) -> [u8; 6] {
    let req = ifreq(dev, libc::SIOCGIFHWADDR).unwrap();
    // SAFETY: SIOCGIFHWADDR set the ifru_hwaddr member.
    let data = unsafe { req.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (m, d) in mac.iter_mut().zip(data) {
        *m = d as u8;
    }
    mac
}

/// Whether `dev` is up in the calling thread's namespace.
fn is_up(dev: &str) -> bool {
    let req = ifreq(dev, libc::SIOCGIFFLAGS).unwrap();
    // SAFETY: SIOCGIFFLAGS set the ifru_flags member.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    flags as libc::c_int & libc::IFF_UP != 0
}

/// Whether `/proc/self/mountinfo` mounts the namespace with inode `ino` anywhere (as iproute2
/// does for a named namespace, under /var/run/netns).
fn mounted(ino: u64) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(&format!("net:[{ino}]"))
}

#[test]
fn a_veth_pair_joins_two_fresh_namespaces_and_carries_a_datagram() {
    if skip_without_root() {
        return;
    }
    let home = Netns::current().unwrap().inode().unwrap();
    let p = VethPair::create("v0", "v1", Some([MAC_A, MAC_B])).expect("namespaces and veth");
    let (ia, ib) = (p.a.inode().unwrap(), p.b.inode().unwrap());
    assert!(ia != ib && ia != home && ib != home, "{ia} {ib} {home}");
    // Unnamed: nothing mounted for them.
    assert!(!mounted(ia) && !mounted(ib));
    // Each end inside its own namespace only, up (with lo), with the asked station address.
    let dev_a = p.a.net_dev().unwrap();
    assert!(dev_a.contains("v0:") && dev_a.contains("lo:") && !dev_a.contains("v1:"));
    let dev_b = p.b.net_dev().unwrap();
    assert!(dev_b.contains("v1:") && !dev_b.contains("v0:"));
    assert!(p.a.index("v0").unwrap() > 0);
    let e = p.a.index("v1").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    assert_eq!(p.a.run(|| mac_of("v0")).unwrap(), MAC_A);
    assert_eq!(p.b.run(|| mac_of("v1")).unwrap(), MAC_B);
    assert!(p.a.run(|| is_up("v0") && is_up("lo")).unwrap());
    assert!(p.b.run(|| is_up("v1") && is_up("lo")).unwrap());

    p.a.add_address("v0", v4(10, 211, 0, 1), 24).unwrap();
    p.b.add_address("v1", v4(10, 211, 0, 2), 24).unwrap();
    // A UDP datagram from A to B over the veth (binding proves the address is B's).
    let rx =
        p.b.run(|| UdpSocket::bind("10.211.0.2:7100"))
            .unwrap()
            .expect("bind B's address in B");
    rx.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    p.a.run(|| {
        let tx = UdpSocket::bind("10.211.0.1:0")?;
        tx.send_to(b"over the veth", "10.211.0.2:7100")
    })
    .unwrap()
    .expect("send from A");
    let mut buf = [0u8; 64];
    let (n, from) = rx.recv_from(&mut buf).expect("B received A's datagram");
    assert_eq!(&buf[..n], b"over the veth");
    assert_eq!(from.ip(), v4(10, 211, 0, 1));
    // B's address is not A's: binding it in A is refused.
    let e = p.a.run(|| UdpSocket::bind("10.211.0.2:0")).unwrap();
    assert!(e.is_err());
    // And nothing of it in the caller's namespace.
    let e = UdpSocket::bind("10.211.0.2:0").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AddrNotAvailable, "{e}");
}

#[test]
fn addresses_routes_and_neighbours_and_the_kernels_refusals() {
    if skip_without_root() {
        return;
    }
    let p = VethPair::create("r0", "r1", None).unwrap();
    let a = &p.a;
    a.add_address("r0", v4(10, 212, 0, 1), 24).unwrap();
    // The same address again: refused, with the operation and the kernel's errno.
    let e = a.add_address("r0", v4(10, 212, 0, 1), 24).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("adding address 10.212.0.1/24 to r0: File exists"),
        "{text}"
    );
    // Kernels since 6.x also say why in words (extended ack): "ipv4: Address already assigned".
    if let Some((_, said)) = text.split_once("(kernel: ") {
        assert!(said.contains("already"), "{text}");
    }
    // No such link: refused before anything is sent.
    let e = a.add_address("nosuch0", v4(10, 212, 0, 9), 24).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");

    // No route off the subnet until the default route is added.
    let probe = |ns: &Netns, to: &'static str| {
        ns.run(move || {
            let s = if to.starts_with('[') {
                UdpSocket::bind("[::]:0")?
            } else {
                UdpSocket::bind("0.0.0.0:0")?
            };
            s.connect(to.parse::<SocketAddr>().unwrap())
        })
        .unwrap()
    };
    let e = probe(a, "198.51.100.7:9").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH), "{e}");
    a.add_default_route("r0", Family::V4).unwrap();
    probe(a, "198.51.100.7:9").expect("a route now");
    let e = a.add_default_route("r0", Family::V4).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    assert!(e.to_string().contains("default IPv4 route via r0"), "{e}");

    // IPv6: a default route out of the link, with an address to send from.
    let b = &p.b;
    let v6: IpAddr = "2001:db8:212::2".parse::<Ipv6Addr>().unwrap().into();
    if b.sysctl("net/ipv6/conf/r1/disable_ipv6", "0").is_ok() {
        b.add_address("r1", v6, 64).unwrap();
        b.add_default_route("r1", Family::V6).unwrap();
        let e = b.add_default_route("r1", Family::V6).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    }

    // A point-to-point address: a host prefix and a route to the peer through the link.
    let q = VethPair::create("p0", "p1", None).unwrap();
    let e = probe(&q.a, "10.213.0.2:9").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH), "{e}");
    q.a.add_peer_address("p0", v4(10, 213, 0, 1), v4(10, 213, 0, 2))
        .unwrap();
    probe(&q.a, "10.213.0.2:9").expect("a route to the peer");
    let e = probe(&q.a, "10.213.0.3:9").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH), "{e}");
    let e =
        q.a.add_peer_address("p0", v4(10, 213, 0, 1), "::1".parse().unwrap())
            .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");

    // A permanent neighbour entry: the kernel's table holds it (a duplicate is refused).
    b.add_address("r1", v4(10, 212, 0, 2), 24).unwrap();
    b.add_neighbour("r1", v4(10, 212, 0, 1), MAC_A).unwrap();
    let arp = b
        .run(|| std::fs::read_to_string("/proc/thread-self/net/arp"))
        .unwrap()
        .unwrap();
    let line = arp
        .lines()
        .find(|l| l.starts_with("10.212.0.1 "))
        .unwrap_or_else(|| panic!("no entry: {arp}"));
    assert!(
        line.contains("02:00:00:00:5a:01") && line.contains(" 0x6 "),
        "{line}"
    );
    let e = b.add_neighbour("r1", v4(10, 212, 0, 1), MAC_A).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
}

#[test]
fn links_change_and_go_and_namespaces_vanish_with_their_descriptors() {
    if skip_without_root() {
        return;
    }
    let n = Netns::create().unwrap();
    let m = Netns::create().unwrap();
    // A veth from n into m; m sees its end.
    n.add_veth("x0", &m, "x1").unwrap();
    assert!(m.index("x1").is_ok());
    let e = n.add_veth("x0", &m, "x2").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    // MTU and queue length, read back from the kernel's view inside.
    n.set_link(
        "x0",
        &LinkChange {
            up: true,
            mtu: Some(1280),
            txqueuelen: Some(77),
            ..LinkChange::default()
        },
    )
    .unwrap();
    let (mtu, qlen) = n
        .run(|| {
            let mtu = ifreq("x0", libc::SIOCGIFMTU).unwrap();
            let qlen = ifreq("x0", libc::SIOCGIFTXQLEN).unwrap();
            // SAFETY: the ioctls set these members (the queue length comes back in the
            // index's place).
            unsafe { (mtu.ifr_ifru.ifru_mtu, qlen.ifr_ifru.ifru_ifindex) }
        })
        .unwrap();
    assert_eq!((mtu, qlen), (1280, 77));
    let e = n
        .set_link(
            "x0",
            &LinkChange {
                mtu: Some(1 << 20),
                ..LinkChange::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    // The errno, and the kernel's own words (extended ack): "mtu greater than device maximum".
    let text = e.to_string();
    assert!(
        text.starts_with("changing link x0: Invalid argument") && text.contains("(kernel: mtu"),
        "{text}"
    );

    // Deleting one end deletes the pair.
    n.del_link("x0").unwrap();
    assert_eq!(m.index("x1").unwrap_err().kind(), io::ErrorKind::NotFound);
    // Dropping the only descriptor of n removes it and all it holds: the peer end in m goes.
    n.add_veth("y0", &m, "y1").unwrap();
    assert!(m.index("y1").is_ok());
    drop(n);
    let mut gone = false;
    for _ in 0..200 {
        if m.index("y1").is_err() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone, "y1 outlived its namespace's last descriptor");
}

#[test]
fn threads_commands_and_entering_are_inside() {
    if skip_without_root() {
        return;
    }
    let ns = Netns::create().unwrap();
    let ino = ns.inode().unwrap();
    let home = Netns::current().unwrap().inode().unwrap();
    let inode_here = || Netns::current().unwrap().inode().unwrap();
    assert_eq!(ns.run(inode_here).unwrap(), ino);
    assert_eq!(ns.thread(inode_here).unwrap().join().unwrap(), ino);
    {
        let _inside = ns.enter().unwrap();
        assert_eq!(inode_here(), ino);
        // A thread started meanwhile starts inside.
        assert_eq!(std::thread::spawn(inode_here).join().unwrap(), ino);
    }
    assert_eq!(inode_here(), home);
    // A command sees the namespace as its own.
    let out = ns
        .command("readlink")
        .arg("/proc/self/ns/net")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("net:[{ino}]")
    );
    // And so does a spawned script, with its environment.
    let child = ns
        .spawn(
            "test \"$(readlink /proc/self/ns/net)\" = \"net:[$WANT]\"",
            &[("WANT".into(), ino.to_string())],
            true,
            None,
        )
        .unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    // With an overlay, the command (only) sees another file in place of the target.
    let dir = std::env::temp_dir().join(format!("mslink-overlay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (source, target) = (dir.join("source"), dir.join("target"));
    std::fs::write(&source, "mounted\n").unwrap();
    std::fs::write(&target, "original\n").unwrap();
    let overlay = mslink_netns::FileOverlay::new(&source, &target).unwrap();
    let script = format!("test \"$(cat {})\" = mounted", target.display());
    let child = ns.spawn(&script, &[], true, Some(&overlay)).unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
    std::fs::remove_dir_all(&dir).unwrap();
    // sysctl inside, not outside.
    ns.sysctl("net/ipv4/ip_forward", "1").unwrap();
    let inside = ns
        .run(|| std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward"))
        .unwrap()
        .unwrap();
    assert_eq!(inside.trim(), "1");
}

#[test]
fn sweep_removes_devices_of_dead_emulators_only() {
    if skip_without_root() {
        return;
    }
    let ns = Netns::create().unwrap();
    // A pid that is gone: a child that has been reaped.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let alive = std::process::id();
    let fd = {
        use std::os::fd::AsRawFd;
        ns.as_raw_fd()
    };
    let removed = ns
        .run(move || -> io::Result<Vec<String>> {
            rtnl::add_veth(&format!("msl{dead}l"), &format!("msl{dead}r"), fd)?;
            rtnl::add_veth(&format!("msl{alive}l"), &format!("msl{alive}r"), fd)?;
            let removed = sweep_stale();
            assert!(rtnl::index(&format!("msl{dead}l")).is_err());
            assert!(rtnl::index(&format!("msl{alive}l")).is_ok());
            Ok(removed)
        })
        .unwrap()
        .unwrap();
    // One deletion took both ends of the dead one's pair.
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].starts_with(&format!("msl{dead}")));
}
