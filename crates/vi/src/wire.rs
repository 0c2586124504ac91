//! The byte pipe under a connected VI: a backend moves bytes, the VI (nic.rs) frames
//! messages and matches them to descriptors.
//!
//! Contract: `write` and `read` never block (0 means "not now"); `wait` may block up to
//! its timeout and may return early; a vanished or misbehaving peer is an `Err`, never a
//! hang or a panic.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// What carries a connection's bytes, as the kernel describes its socket (`SO_DOMAIN`,
/// `SO_TYPE`, `SO_PROTOCOL`), not as the backend is named: the bench checks every backend
/// against it (issue 34 found `--backend udp` running over TCP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Carrier {
    /// An IPv4 or IPv6 stream socket of protocol TCP.
    Tcp,
    /// An IPv4 or IPv6 datagram socket of protocol UDP.
    Udp,
    /// Shared memory: rings in mapped memory, a Unix socket for rendezvous and wake-ups only.
    SharedMemory,
}

impl Carrier {
    /// Its short name ("tcp", "udp", "shared-memory").
    pub fn name(self) -> &'static str {
        match self {
            Carrier::Tcp => "tcp",
            Carrier::Udp => "udp",
            Carrier::SharedMemory => "shared-memory",
        }
    }
}

/// The (domain, type, protocol) the kernel reports for socket `fd`.
pub(crate) fn socket_kind(fd: RawFd) -> io::Result<(i32, i32, i32)> {
    let opt = |name: libc::c_int| -> io::Result<i32> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid for writes of an int and its length.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r == 0 {
            Ok(v)
        } else {
            Err(io::Error::last_os_error())
        }
    };
    Ok((
        opt(libc::SO_DOMAIN)?,
        opt(libc::SO_TYPE)?,
        opt(libc::SO_PROTOCOL)?,
    ))
}

/// The carrier of an IP socket `fd`: TCP or UDP, else an error naming what it is.
pub(crate) fn ip_carrier(fd: RawFd) -> io::Result<Carrier> {
    let (domain, ty, proto) = socket_kind(fd)?;
    let ip = domain == libc::AF_INET || domain == libc::AF_INET6;
    match (ip, ty, proto) {
        (true, libc::SOCK_STREAM, libc::IPPROTO_TCP) => Ok(Carrier::Tcp),
        (true, libc::SOCK_DGRAM, libc::IPPROTO_UDP) => Ok(Carrier::Udp),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "socket of domain {domain}, type {ty}, protocol {proto} is neither TCP nor UDP"
            ),
        )),
    }
}

/// Why a pipe stopped working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The peer disconnected in order and everything it sent has been read.
    Closed,
    /// The peer vanished (process died, socket reset).
    PeerGone,
    /// The peer broke the shared-ring protocol.
    Corrupt,
}

/// Where a buffer handed to a wire lives: a registered memory region (000 §III.A), so a
/// backend that registers memory with the kernel (io_uring fixed buffers) can name it.
/// The region outlives any operation on it: it cannot be deregistered while a posted
/// descriptor references it, and a wire finishes or cancels its operations before it drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionRef {
    /// Region handle number (never reused by a NIC).
    pub id: u32,
    /// Start address of the whole region.
    pub base: usize,
    /// Length of the whole region.
    pub len: usize,
    /// A shareable region's memfd and its mapped length (shared-memory backend), which the
    /// peer may map read-only; valid while the region is registered.
    pub fd: Option<(std::os::fd::RawFd, usize)>,
}

/// One piece of a message handed to an asynchronous wire.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WireBuf<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// Their registered region, or `None` for provider memory (the header).
    pub region: Option<RegionRef>,
}

/// A connected byte pipe: reliable and in order (TCP, shared memory), or one message per
/// datagram (UDP: each `write` is one whole message, each datagram is read as one message).
pub(crate) trait Wire: Send {
    /// Write as much of `bufs` (in order) as possible now; returns bytes taken.
    fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, WireError>;
    /// Send whole messages, each gathered from its pieces, as many as the wire takes now
    /// (in order); returns how many went. A datagram wire sends one datagram per message,
    /// the batch in one system call where it can (UDP: `sendmmsg(2)`). The default sends
    /// them one `write` at a time and stops at the first that does not go whole.
    fn write_messages(&mut self, msgs: &[&[&[u8]]]) -> Result<usize, WireError> {
        for (k, m) in msgs.iter().enumerate() {
            let want: usize = m.iter().map(|b| b.len()).sum();
            if self.write(m)? != want {
                return Ok(k);
            }
        }
        Ok(msgs.len())
    }
    /// Read up to `out.len()` bytes available now; `Ok(0)` when none. `region` says that
    /// `out` lies in a registered region (the payload of a posted receive descriptor).
    fn read(&mut self, out: &mut [u8], region: Option<RegionRef>) -> Result<usize, WireError>;
    /// Does this wire take whole messages with `submit` and report finished bytes with
    /// `take_sent` (io_uring), instead of `write`?
    fn is_async(&self) -> bool {
        false
    }
    /// Queue one whole message (header first) for sending; `Ok(false)` if it cannot be
    /// taken now. The bytes must stay untouched until `take_sent` has reported them.
    fn submit(&mut self, _msg: &[WireBuf<'_>]) -> Result<bool, WireError> {
        Ok(false)
    }
    /// Bytes of submitted messages the kernel has finished with, in submission order.
    fn take_sent(&mut self) -> Result<usize, WireError> {
        Ok(0)
    }
    /// Zero-copy sends so far and how many of them the kernel copied after all.
    fn zc_counts(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Block until input may be available (or output space, if `want_write`), at most
    /// `timeout`. Also detects a dead peer.
    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError>;
    /// Cheap-as-possible check that the peer is alive (may make one system call; called
    /// only from idle spinning, never per message).
    fn check_alive(&mut self) -> Result<(), WireError>;
    /// Send one whole message (the two header words, payload length and immediate data,
    /// then the payload pieces) if it can go at once *and* is complete once gone (a
    /// shared-memory inline record): `Ok(true)` when it has, and its bytes are no longer
    /// needed; `Ok(false)` when the caller must queue it as usual. An error also means "queue
    /// it": the usual path meets it again and reports it.
    fn send_now(&mut self, _words: [u32; 2], _payload: &[&[u8]]) -> Result<bool, WireError> {
        Ok(false)
    }
    /// Does this wire ever take a send with `send_now`? The provider asks before it prepares
    /// one, so the other wires pay nothing for the short cut.
    fn sends_now(&self) -> bool {
        false
    }
    /// Take the next message whole into `dst` if it is there whole and fits: its payload
    /// length and immediate data. `Ok(None)` leaves everything to `read` (nothing there, a
    /// message part-way, or one longer than `dst`).
    fn recv_now(&mut self, _dst: &mut [u8]) -> Result<Option<(usize, u32)>, WireError> {
        Ok(None)
    }
    /// Nothing has arrived, nothing submitted is outstanding and no wake-up is owed: a
    /// progress pass would find nothing to do. A cheap check (a load or two, no system
    /// call) that a polling wait makes before each pass; `false` when unsure.
    fn quiet(&self) -> bool {
        false
    }
    /// End of a batch of `write`/`read` calls: deliver any deferred wake-up to the peer.
    fn flush(&mut self) {}
    /// Orderly close: the peer reads what was sent, then `Closed`.
    fn close(&mut self);
    /// What carries the bytes, asked of the kernel ([`Carrier`]).
    fn carrier(&self) -> io::Result<Carrier>;
}
