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

use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
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
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
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

/// Check one received datagram of `n` bytes whose first 8 bytes are `hdr`: `Ok(true)` for
/// a message, `Ok(false)` for a BYE, `Err(Corrupt)` if the header does not match its size.
pub(crate) fn check_datagram(hdr: &[u8], n: usize) -> Result<bool, WireError> {
    if n < crate::HEADER_BYTES {
        return Err(WireError::Corrupt);
    }
    if hdr[..8] == BYE {
        return Ok(false);
    }
    let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
    if len != n - crate::HEADER_BYTES {
        return Err(WireError::Corrupt);
    }
    Ok(true)
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

    fn read(&mut self, out: &mut [u8], _region: Option<RegionRef>) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.at == self.len {
            if self.closed {
                return Err(WireError::Closed);
            }
            match self.sock.recv(&mut self.stage) {
                Ok(n) => {
                    if !check_datagram(&self.stage, n)? {
                        self.closed = true;
                        return Err(WireError::Closed);
                    }
                    (self.at, self.len) = (0, n);
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
        poll_fd(self.sock.as_raw_fd(), want_write, timeout).map_err(|_| WireError::PeerGone)?;
        Ok(())
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        Ok(())
    }

    fn close(&mut self) {
        let _ = self.sock.send(&BYE);
    }
}
