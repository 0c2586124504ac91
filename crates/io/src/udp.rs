//! A UDP socket for a real-time driver: batched receive and send, UDP GSO, back-pressure.
//!
//! Contract. A [`UdpPort`] owns a non-blocking UDP socket. [`UdpPort::receive`] takes up to
//! [`BURST`] datagrams with one `recvmmsg(2)`; [`UdpPort::transmit`] draws datagrams from the
//! caller until it has none and sends them in batches of up to [`BURST`] with one
//! `sendmmsg(2)`, each run of equal-sized datagrams to one address as one UDP GSO message
//! (`UDP_SEGMENT`) while the kernel takes those (it falls back by itself where it refuses).
//! Back-pressure: when the send buffer is full the datagrams drawn stay queued, in order,
//! [`UdpPort::stalled`] says so, and the driver waits for `POLLOUT` and stops reading what
//! would make more (nothing is dropped for a full buffer). A datagram the socket refuses for
//! good (no route, ICMP errors reported on the socket) is dropped, counted and reported.
//! Buffers come from and go back to a bounded [`BufferPool`]; the driver also gives it the
//! packets it wrote to its devices.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use crate::pool::BufferPool;

/// Most datagrams received or sent per system call.
pub const BURST: usize = 64;

/// Spare buffers a port keeps, and the largest it keeps ([`BufferPool`]).
const POOL_BUFFERS: usize = 2 * BURST;
const POOL_BUFFER_BYTES: usize = 65_536;

/// What a UDP port did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SocketCounts {
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Datagrams the socket took.
    pub datagrams_sent: u64,
    /// Of those, datagrams sent inside UDP GSO messages.
    pub gso_datagrams: u64,
    /// Datagrams the socket refused for good (dropped).
    pub send_errors: u64,
    /// Times the send buffer was full and the driver waited.
    pub would_block: u64,
    /// Receive calls that failed (other than "nothing to read").
    pub receive_errors: u64,
}

/// Something a port met that its driver may want to log.
#[derive(Debug)]
pub enum SocketNote<'a> {
    /// A datagram to `to` was refused for good and dropped.
    SendFailed {
        /// Its destination.
        to: SocketAddr,
        /// Why.
        error: &'a io::Error,
    },
    /// A receive call failed (e.g. an ICMP error reported on the socket); not fatal.
    ReceiveFailed(&'a io::Error),
}

/// A non-blocking UDP socket with batched I/O (see the module contract).
pub struct UdpPort {
    sock: UdpSocket,
    recv: RecvBatch,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Spare buffers for datagrams.
    pub pool: BufferPool,
    gso: bool,
    /// What the port did.
    pub counts: SocketCounts,
}

impl UdpPort {
    /// A port on `sock` (made non-blocking here) with the given buffer sizes (0: the
    /// system's default); `gso`: try UDP GSO.
    pub fn new(sock: UdpSocket, buffer_bytes: usize, gso: bool) -> io::Result<UdpPort> {
        sock.set_nonblocking(true)?;
        if buffer_bytes > 0 {
            let b = libc::c_int::try_from(buffer_bytes).unwrap_or(libc::c_int::MAX);
            set_buffer(&sock, libc::SO_RCVBUF, b);
            set_buffer(&sock, libc::SO_SNDBUF, b);
        }
        Ok(UdpPort {
            sock,
            recv: RecvBatch::new(),
            out: VecDeque::with_capacity(BURST),
            pool: BufferPool::new(POOL_BUFFERS, POOL_BUFFER_BYTES),
            gso,
            counts: SocketCounts::default(),
        })
    }

    /// The socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    /// The socket's receive buffer in bytes as the kernel reports it (0 if unknown).
    pub fn receive_buffer_bytes(&self) -> usize {
        receive_buffer(&self.sock)
    }

    /// True while datagrams wait for room in the send buffer.
    pub fn stalled(&self) -> bool {
        !self.out.is_empty()
    }

    /// Receives up to [`BURST`] datagrams and hands each to `feed` with its sender, those
    /// for which `first` holds before the others (each group in arrival order); returns how
    /// many came.
    pub fn receive(
        &mut self,
        first: impl Fn(&[u8]) -> bool,
        mut feed: impl FnMut(SocketAddr, &mut [u8]),
        note: &mut dyn FnMut(SocketNote<'_>),
    ) -> usize {
        match self.recv.recv(&self.sock) {
            Ok(n) => {
                self.counts.datagrams_received += n as u64;
                for pass in [true, false] {
                    for i in 0..n {
                        if let Some((from, d)) = self.recv.datagram(i) {
                            if first(d) == pass {
                                feed(from, d);
                            }
                        }
                    }
                }
                n
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => {
                self.counts.receive_errors += 1;
                note(SocketNote::ReceiveFailed(&e));
                0
            }
        }
    }

    /// Draws datagrams from `poll` (which writes one into the buffer it is given and returns
    /// its destination) and sends them until `poll` has none or the send buffer is full.
    pub fn transmit(
        &mut self,
        poll: &mut dyn FnMut(&mut Vec<u8>) -> Option<SocketAddr>,
        note: &mut dyn FnMut(SocketNote<'_>),
    ) {
        loop {
            while self.out.len() < BURST {
                let mut b = self.pool.take();
                match poll(&mut b) {
                    Some(to) => self.out.push_back((to, b)),
                    None => {
                        self.pool.give(b);
                        break;
                    }
                }
            }
            if self.out.is_empty() {
                return;
            }
            match send_batch(&self.sock, &self.out, &mut self.gso) {
                Ok((k, in_gso)) => {
                    self.counts.datagrams_sent += k as u64;
                    self.counts.gso_datagrams += in_gso as u64;
                    for (_, b) in self.out.drain(..k) {
                        self.pool.give(b);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.counts.would_block += 1;
                    return;
                }
                Err(e) => {
                    // The first datagram failed for good (e.g. no route): count it, go on.
                    self.counts.send_errors += 1;
                    let (to, b) = self.out.pop_front().expect("not empty");
                    note(SocketNote::SendFailed { to, error: &e });
                    self.pool.give(b);
                }
            }
        }
    }
}

/// The path MTU the kernel knows for datagrams to `to`: the MTU of the route's device, or a
/// smaller one it learned from ICMP "fragmentation needed" messages. Read from a UDP socket
/// connected to `to` (`IP_MTU`, `IPV6_MTU`); nothing is sent.
pub fn path_mtu(to: SocketAddr) -> io::Result<usize> {
    let any: SocketAddr = match to {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = UdpSocket::bind(any)?;
    sock.connect(to)?;
    let (level, name) = match to {
        SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_MTU),
        SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_MTU),
    };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `mtu`, an int, on our socket.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(mtu.max(0) as usize)
}

/// Bytes of the IP and UDP headers in front of a datagram's payload to `to`.
pub fn ip_udp_header_len(to: SocketAddr) -> usize {
    match to {
        SocketAddr::V4(_) => 20 + 8,
        SocketAddr::V6(_) => 40 + 8,
    }
}

/// Sets a socket buffer size: with the `*FORCE` option first, which goes past
/// `net.core.rmem_max` / `wmem_max` (212,992 bytes on a stock kernel) for a process with
/// CAP_NET_ADMIN, as the tunnel and the emulator have; else capped by the kernel.
fn set_buffer(sock: &UdpSocket, opt: libc::c_int, bytes: libc::c_int) {
    let force = if opt == libc::SO_RCVBUF {
        libc::SO_RCVBUFFORCE
    } else {
        libc::SO_SNDBUFFORCE
    };
    let set = |opt| {
        // SAFETY: setsockopt with an int option on our socket; failure only leaves the size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if set(force) != 0 {
        set(opt);
    }
}

/// The socket's receive buffer as the kernel reports it (twice what was set: the kernel
/// counts its bookkeeping), or 0 if it cannot say.
fn receive_buffer(sock: &UdpSocket) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt with an int option into a local int of the given length.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        usize::try_from(v).unwrap_or(0)
    } else {
        0
    }
}

/// Largest UDP payload.
const RECV_LEN: usize = 65_536;

/// Buffers for one recvmmsg(2) call of up to [`BURST`] datagrams.
struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    fn new() -> RecvBatch {
        // SAFETY: sockaddr_storage, iovec and mmsghdr are plain data; zeroed is valid.
        let z = || unsafe { std::mem::zeroed() };
        RecvBatch {
            bufs: (0..BURST).map(|_| vec![0u8; RECV_LEN]).collect(),
            names: (0..BURST).map(|_| z()).collect(),
            iovs: (0..BURST).map(|_| unsafe { std::mem::zeroed() }).collect(),
            hdrs: (0..BURST).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }

    /// Receives up to BURST datagrams without blocking; returns how many.
    fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        for i in 0..BURST {
            self.iovs[i] = libc::iovec {
                iov_base: self.bufs[i].as_mut_ptr().cast(),
                iov_len: RECV_LEN,
            };
            // SAFETY: zeroed msghdr is valid; the pointers set below outlive the call.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            self.hdrs[i] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
        }
        // SAFETY: BURST headers, each pointing at its own buffer, name and iovec.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                BURST as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Datagram `i` of the last call and its sender.
    fn datagram(&mut self, i: usize) -> Option<(SocketAddr, &mut [u8])> {
        let len = self.hdrs[i].msg_len as usize;
        let from = from_storage(&self.names[i])?;
        Some((from, &mut self.bufs[i][..len]))
    }
}

fn from_storage(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn to_storage(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: plain data; zeroed is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in.
            let s: &mut libc::sockaddr_in =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = v4.port().to_be();
            s.sin_addr.s_addr = u32::from_be_bytes(v4.ip().octets()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: sockaddr_storage is large enough and aligned for sockaddr_in6.
            let s: &mut libc::sockaddr_in6 =
                unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = v6.port().to_be();
            s.sin6_addr.s6_addr = v6.ip().octets();
            s.sin6_flowinfo = v6.flowinfo();
            s.sin6_scope_id = v6.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// `UDP_SEGMENT` from linux/udp.h (Linux 4.18): the socket option and control message that
/// ask the kernel to cut one send into datagrams of the given size (UDP GSO).
const UDP_SEGMENT: libc::c_int = 103;
/// Most bytes of payload one UDP GSO send carries (the IP packet limit, with room for headers).
const GSO_MAX_BYTES: usize = 65_000;
/// Most datagrams one UDP GSO send carries (the kernel's `UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGMENTS: usize = 64;

/// Sends up to [`BURST`] datagrams from the front of `out` with one sendmmsg(2); returns how
/// many went and how many of those went in UDP GSO messages. With `gso`, each run of datagrams to one address whose sizes are equal (the last
/// may be shorter) goes as one message with a `UDP_SEGMENT` control message: the kernel builds
/// the datagrams from it in one pass through its UDP/IP stack (UDP GSO), the same datagrams on
/// the wire. A kernel that refuses UDP GSO clears `gso` and the batch is sent datagram by
/// datagram.
fn send_batch(
    sock: &UdpSocket,
    out: &VecDeque<(SocketAddr, Vec<u8>)>,
    gso: &mut bool,
) -> io::Result<(usize, usize)> {
    let n = out.len().min(BURST);
    let mut names = [(unsafe { std::mem::zeroed::<libc::sockaddr_storage>() }, 0); BURST];
    // SAFETY: plain data; zeroed is valid.
    let mut iovs: [libc::iovec; BURST] = unsafe { std::mem::zeroed() };
    let mut hdrs: [libc::mmsghdr; BURST] = unsafe { std::mem::zeroed() };
    // One control buffer per message, u64-aligned as cmsghdr needs.
    let mut cmsgs = [[0u64; 4]; BURST];
    // Datagrams carried by each message.
    let mut counts = [0usize; BURST];
    let mut msgs = 0;
    let mut i = 0;
    while i < n {
        let (to, first) = &out[i];
        let size = first.len();
        let mut run = 1;
        let mut bytes = size;
        if *gso {
            while i + run < n && run < GSO_MAX_SEGMENTS {
                let (t, d) = &out[i + run];
                if t != to || d.len() > size || bytes + d.len() > GSO_MAX_BYTES {
                    break;
                }
                bytes += d.len();
                run += 1;
                if d.len() < size {
                    break; // a shorter datagram ends the run
                }
            }
        }
        names[msgs] = to_storage(to);
        for (k, (_, d)) in out.iter().skip(i).take(run).enumerate() {
            iovs[i + k] = libc::iovec {
                iov_base: d.as_ptr() as *mut libc::c_void,
                iov_len: d.len(),
            };
        }
        let h = &mut hdrs[msgs].msg_hdr;
        h.msg_name = (&mut names[msgs].0 as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = names[msgs].1;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = run;
        if run > 1 {
            // SAFETY: the control buffer is 32 bytes, enough for one cmsghdr and a u16, and
            // outlives the call; CMSG_* only compute offsets within it.
            unsafe {
                let space = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
                h.msg_control = cmsgs[msgs].as_mut_ptr().cast();
                h.msg_controllen = space;
                let c = libc::CMSG_FIRSTHDR(h);
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size as u16);
            }
        }
        counts[msgs] = run;
        msgs += 1;
        i += run;
    }
    // SAFETY: `msgs` headers pointing at live names, iovecs, control buffers and datagram
    // buffers (sendmmsg only reads them).
    let k = unsafe {
        libc::sendmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            msgs as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if k < 0 {
        let e = io::Error::last_os_error();
        let refused = matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::EIO | libc::ENOPROTOOPT)
        );
        if *gso && refused && counts[0] > 1 {
            // UDP GSO refused (old kernel, or a device without checksum offload): go on
            // without it; the caller retries the same datagrams.
            *gso = false;
            return Ok((0, 0));
        }
        Err(e)
    } else {
        let sent = &counts[..k as usize];
        let in_gso = sent.iter().filter(|&&c| c > 1).sum();
        Ok((sent.iter().sum(), in_gso))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_privileged_process_gets_the_buffer_it_asks_for_past_rmem_max() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            assert_ne!(
                std::env::var("MSLINK_REQUIRE_ROOT").as_deref(),
                Ok("1"),
                "MSLINK_REQUIRE_ROOT=1 but not root: SO_RCVBUFFORCE needs CAP_NET_ADMIN"
            );
            eprintln!("skipped: not root");
            return;
        }
        let rmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let ask = 2 * rmem_max.max(1 << 20);
        let port = UdpPort::new(UdpSocket::bind("127.0.0.1:0").unwrap(), ask, false).unwrap();
        // The kernel reports twice what was set.
        assert_eq!(port.receive_buffer_bytes(), 2 * ask, "rmem_max {rmem_max}");
    }

    #[test]
    fn datagrams_marked_first_are_handed_over_before_the_rest_of_their_batch() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let mut port = UdpPort::new(rx, 0, false).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Kind byte 3 is data; the others go first, each group in arrival order.
        let sent: [&[u8]; 6] = [&[3, 0], &[3, 1], &[1, 2], &[3, 3], &[4, 4], &[3, 5]];
        for d in sent {
            tx.send_to(d, to).unwrap();
        }
        // Loopback usually delivers all six before `send_to` returns, so one batch holds
        // them; on a busy host the kernel may defer delivery and cut them into several
        // batches, and the rule holds within each.
        let mut batches: Vec<Vec<u8>> = Vec::new();
        let mut received = 0;
        while received < sent.len() {
            let mut fds = [libc::pollfd {
                fd: port.socket().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: one valid pollfd; a bound on the wait, not a timed assertion.
            assert_eq!(
                unsafe { libc::poll(fds.as_mut_ptr(), 1, 10_000) },
                1,
                "no datagram"
            );
            let mut got = Vec::new();
            received += port.receive(
                |d| d[0] != 3,
                |from, d| {
                    assert_eq!(from, tx.local_addr().unwrap());
                    got.push(d[1]);
                },
                &mut |note| panic!("{note:?}"),
            );
            batches.push(got);
        }
        let mut all: Vec<u8> = Vec::new();
        for got in &batches {
            // Arrival order is send order on loopback: the batch's firsts, then its rest.
            let mut arrived = got.clone();
            arrived.sort_unstable();
            let (first, rest): (Vec<u8>, Vec<u8>) =
                arrived.iter().partition(|&&i| sent[usize::from(i)][0] != 3);
            assert_eq!(*got, [first, rest].concat(), "batches {batches:?}");
            all.extend(got);
        }
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
        if batches.len() == 1 {
            assert_eq!(batches[0], [2, 4, 0, 1, 3, 5]);
        }
        assert_eq!(port.counts.datagrams_received, 6);
    }

    #[test]
    fn the_path_mtu_to_loopback_is_the_loopback_device_s() {
        let mtu = path_mtu("127.0.0.1:9".parse().unwrap()).unwrap();
        let lo: usize = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // An IPv4 packet is at most 65,535 bytes, so the kernel caps the route's MTU there.
        assert_eq!(mtu, lo.min(65_535));
    }
}
