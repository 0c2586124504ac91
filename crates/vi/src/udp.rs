//! UDP under a VI: the connection set-up shared by the plain-sockets and io_uring UDP
//! backends, and the plain-sockets UDP wire (one `sendmsg(2)`/`recv(2)` per message).
//!
//! Contract: one message is one datagram (8-byte header, then the payload), so a message
//! is at most [`MAX_UDP_MESSAGE`] bytes and is never split. Connect: the client's socket
//! sends `HELLO` to the listener; the listener answers `WELCOME` from a fresh socket bound
//! to an ephemeral port, and both sockets `connect(2)` to each other, so each VI has its own
//! socket and stray datagrams are filtered by the kernel. There is no retransmission: a
//! datagram lost in a full socket buffer is gone (the bench keeps the window within the
//! receive buffer, which is enlarged to [`SOCKET_BUFFER`]). A datagram arriving with no
//! receive descriptor posted is read and reported (`NoRecvDescriptor`), one longer than the
//! posted buffers is reported as `LengthError` (the VI name for a truncated receive). A
//! disconnect sends a `BYE` datagram (header length `u32::MAX`), which reads as `Closed`; a
//! peer whose socket is gone shows as ICMP port unreachable, `ECONNREFUSED`, `PeerGone`.
//! Liveness: a waiting end that has heard nothing for [`PROBE_IDLE`] sends a `PROBE`
//! datagram (header length `u32::MAX - 1`; the peer reads and drops it), so a peer that died
//! without a BYE draws port unreachable and the survivor gets `PeerGone` instead of waiting
//! out its timeout. A peer host that vanishes without answering ICMP still looks silent:
//! UDP cannot tell that from a live peer with nothing to say.

use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use crate::sys::poll_fd;
use crate::wire::{RegionRef, Wire, WireError};

/// Largest message payload one UDP datagram carries: 65,507 bytes of IPv4 UDP payload
/// minus the 8-byte VI header.
pub const MAX_UDP_MESSAGE: usize = 65_507 - crate::HEADER_BYTES;

/// Send and receive buffer asked of the kernel for each UDP socket (bytes).
pub(crate) const SOCKET_BUFFER: usize = 8 << 20;

const HELLO: &[u8; 8] = b"MSVIUDP1";
const WELCOME: &[u8; 8] = b"MSVIUDP2";
/// Header of a disconnect datagram: a length no message can have.
pub(crate) const BYE: [u8; 8] = [0xff, 0xff, 0xff, 0xff, b'B', b'Y', b'E', 0];

/// Header of a liveness probe: a length no message can have (and not BYE's).
pub(crate) const PROBE: [u8; 8] = [0xfe, 0xff, 0xff, 0xff, b'P', b'R', b'B', 0];
/// A waiting end that has heard nothing for this long sends a probe (and sends the next
/// one after as long again).
pub(crate) const PROBE_IDLE: Duration = Duration::from_millis(100);

/// Staging buffer: one whole datagram.
pub(crate) const DATAGRAM_BUF: usize = 64 << 10;

/// Ask for large socket buffers (forced past rmem_max when running as root).
pub(crate) fn enlarge_buffers(s: &UdpSocket) {
    let v = SOCKET_BUFFER as libc::c_int;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        for opt in [force, plain] {
            // SAFETY: setsockopt on a valid socket with a pointer to a c_int and its size.
            let r = unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "no UDP handshake")
}

/// Client side: greet the listener at `to`, adopt the socket that answers.
pub(crate) fn connect(to: SocketAddr, timeout: Duration) -> io::Result<UdpSocket> {
    let bind: SocketAddr = if to.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let s = UdpSocket::bind(bind)?;
    enlarge_buffers(&s);
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 16];
    loop {
        s.send_to(HELLO, to)?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        s.set_read_timeout(Some(left.min(Duration::from_millis(200))))?;
        match s.recv_from(&mut buf) {
            Ok((8, from)) if &buf[..8] == WELCOME && from.ip() == to.ip() => {
                s.connect(from)?;
                s.set_read_timeout(None)?;
                return Ok(s);
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Listener side: wait for a `HELLO` on `l`, answer from a fresh connected socket.
pub(crate) fn accept(l: &UdpSocket, timeout: Duration) -> io::Result<UdpSocket> {
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 16];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !poll_fd(l.as_raw_fd(), false, left)?.readable {
            return Err(timed_out());
        }
        let (n, from) = match l.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        if n != 8 || &buf[..8] != HELLO {
            continue;
        }
        let mut local = l.local_addr()?;
        local.set_port(0);
        let s = UdpSocket::bind(local)?;
        enlarge_buffers(&s);
        s.connect(from)?;
        s.send(WELCOME)?;
        return Ok(s);
    }
}

/// What a received datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Datagram {
    /// A message: header, then exactly the payload length it names.
    Message,
    /// The peer disconnected.
    Bye,
    /// A liveness probe: drop it.
    Probe,
}

/// Check one received datagram of `n` bytes whose first 8 bytes are `hdr`;
/// `Err(Corrupt)` if the header does not match its size.
pub(crate) fn check_datagram(hdr: &[u8], n: usize) -> Result<Datagram, WireError> {
    if n < crate::HEADER_BYTES {
        return Err(WireError::Corrupt);
    }
    if hdr[..8] == BYE {
        return Ok(Datagram::Bye);
    }
    if hdr[..8] == PROBE {
        return Ok(Datagram::Probe);
    }
    let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
    if len != n - crate::HEADER_BYTES {
        return Err(WireError::Corrupt);
    }
    Ok(Datagram::Message)
}

/// The liveness probing of one UDP wire (see the module contract).
#[derive(Debug)]
pub(crate) struct Prober {
    /// When the wire last heard a datagram or sent a probe, as far as `tick` knows.
    quiet_since: Instant,
    /// A datagram arrived since the last `tick`.
    heard: bool,
}

impl Prober {
    pub(crate) fn new() -> Self {
        Self {
            quiet_since: Instant::now(),
            heard: false,
        }
    }

    /// A datagram (of any kind) arrived: the peer is alive.
    pub(crate) fn heard(&mut self) {
        self.heard = true;
    }

    /// Called by a waiting end: send a probe on `fd` if the wire has been quiet for
    /// [`PROBE_IDLE`]; returns how long the caller may block before the next probe is due.
    /// `Err(PeerGone)` if the socket already holds the peer's port-unreachable error.
    pub(crate) fn tick(&mut self, fd: RawFd) -> Result<Duration, WireError> {
        let now = Instant::now();
        if std::mem::take(&mut self.heard) {
            self.quiet_since = now;
        }
        let due = self.quiet_since + PROBE_IDLE;
        if now < due {
            return Ok(due - now);
        }
        self.quiet_since = now;
        // SAFETY: send(2) of 8 bytes from a constant on a socket the caller owns; it never
        // blocks (MSG_DONTWAIT).
        let r = unsafe {
            libc::send(
                fd,
                PROBE.as_ptr().cast(),
                PROBE.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if r < 0 {
            if let Some(e) = map_err(&io::Error::last_os_error()) {
                return Err(e);
            }
        }
        Ok(PROBE_IDLE)
    }
}

/// A connected UDP socket used as a VI message pipe (plain sockets).
#[derive(Debug)]
pub(crate) struct UdpWire {
    sock: UdpSocket,
    /// The datagram being handed out: `stage[at..len]`.
    stage: Box<[u8]>,
    at: usize,
    len: usize,
    closed: bool,
    probe: Prober,
}

impl UdpWire {
    /// Wrap a connected socket (sets non-blocking).
    pub(crate) fn new(sock: UdpSocket) -> io::Result<Self> {
        sock.set_nonblocking(true)?;
        Ok(Self {
            sock,
            stage: vec![0; DATAGRAM_BUF].into_boxed_slice(),
            at: 0,
            len: 0,
            closed: false,
            probe: Prober::new(),
        })
    }
}

fn map_err(e: &io::Error) -> Option<WireError> {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => None,
        // ENOBUFS: the local queue is full for now; try again.
        _ if e.raw_os_error() == Some(libc::ENOBUFS) => None,
        _ => Some(WireError::PeerGone),
    }
}

impl Wire for UdpWire {
    fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, WireError> {
        let slices: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        // SAFETY: msghdr is plain old data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = slices.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len() as _;
        // SAFETY: msg points at IoSlices (ABI-compatible with iovec) that outlive the call.
        let r = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, 0) };
        if r < 0 {
            return map_err(&io::Error::last_os_error()).map_or(Ok(0), Err);
        }
        // A datagram goes whole or not at all.
        Ok(if r as usize == want { want } else { 0 })
    }

    fn write_messages(&mut self, msgs: &[&[&[u8]]]) -> Result<usize, WireError> {
        if msgs.is_empty() {
            return Ok(0);
        }
        let slices: Vec<Vec<IoSlice<'_>>> = msgs
            .iter()
            .map(|m| m.iter().map(|b| IoSlice::new(b)).collect())
            .collect();
        let mut hdrs: Vec<libc::mmsghdr> = slices
            .iter()
            .map(|iov| {
                // SAFETY: mmsghdr is plain old data; all-zero is a valid empty header.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov.as_ptr() as *mut libc::iovec;
                h.msg_hdr.msg_iovlen = iov.len() as _;
                h
            })
            .collect();
        // SAFETY: every header points at IoSlices (ABI-compatible with iovec) that outlive
        // the call; the count is the vector's length.
        let r = unsafe {
            libc::sendmmsg(
                self.sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                hdrs.len() as libc::c_uint,
                0,
            )
        };
        if r < 0 {
            return map_err(&io::Error::last_os_error()).map_or(Ok(0), Err);
        }
        // Each datagram goes whole or not at all; check what the kernel says it took.
        let sent = r as usize;
        for (h, m) in hdrs.iter().zip(msgs).take(sent) {
            if h.msg_len as usize != m.iter().map(|b| b.len()).sum::<usize>() {
                return Err(WireError::PeerGone);
            }
        }
        Ok(sent)
    }

    fn read(&mut self, out: &mut [u8], _region: Option<RegionRef>) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        while self.at == self.len {
            if self.closed {
                return Err(WireError::Closed);
            }
            match self.sock.recv(&mut self.stage) {
                Ok(n) => {
                    self.probe.heard();
                    match check_datagram(&self.stage, n)? {
                        Datagram::Message => (self.at, self.len) = (0, n),
                        Datagram::Bye => {
                            self.closed = true;
                            return Err(WireError::Closed);
                        }
                        Datagram::Probe => {}
                    }
                }
                Err(e) => return map_err(&e).map_or(Ok(0), Err),
            }
        }
        let n = out.len().min(self.len - self.at);
        out[..n].copy_from_slice(&self.stage[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }

    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError> {
        if self.at < self.len {
            return Ok(());
        }
        let next_probe = self.probe.tick(self.sock.as_raw_fd())?;
        poll_fd(self.sock.as_raw_fd(), want_write, timeout.min(next_probe))
            .map_err(|_| WireError::PeerGone)?;
        Ok(())
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        self.probe.tick(self.sock.as_raw_fd()).map(|_| ())
    }

    fn carrier(&self) -> std::io::Result<crate::wire::Carrier> {
        use std::os::fd::AsRawFd;
        crate::wire::ip_carrier(self.sock.as_raw_fd())
    }

    fn close(&mut self) {
        let _ = self.sock.send(&BYE);
    }
}
