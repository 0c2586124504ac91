//! Packet devices: what the driver loop ([`crate::driver`]) reads packets from and writes
//! packets to.
//!
//! Contract. A [`Device`] is a non-blocking descriptor on which each read or write is one
//! whole packet: `read` and `write` return `io::ErrorKind::WouldBlock` when the device has
//! nothing or can take nothing now, and the caller polls the descriptor (`POLLIN`,
//! `POLLOUT`). [`crate::tun::Tun`] is the device of the emulator and the tunnel. A
//! [`PacketPipe`] is one end of a `SOCK_SEQPACKET` Unix socket pair with the same semantics:
//! what one end writes the other reads packet by packet, and a writer whose reader does not
//! read fills the pair's buffer and gets `WouldBlock` — a device that really saturates,
//! which a TUN device almost never does (the kernel takes each write within the call), so
//! the tests of the back-pressure rule use it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::coalesce::Plan;

/// A non-blocking descriptor carrying one packet per read or write.
pub trait Device: AsRawFd {
    /// Reads one packet into `buf`.
    fn read(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes one packet gathered from `parts` (`writev(2)`).
    fn write_vectored(&self, parts: &[io::IoSlice<'_>]) -> io::Result<usize>;
    /// True if every read and write starts with a virtio-net header ([`crate::gso`]).
    fn has_vnet_hdr(&self) -> bool {
        false
    }
}

/// Writes the first `plan.count` of `packets` as [`crate::coalesce::plan`] planned them:
/// `head`, then each packet from `plan.header_len` on. Returns the bytes written and the
/// bytes the write should take (a packet device takes all or fails).
pub fn write_planned<'a>(
    device: &impl Device,
    head: &[u8],
    plan: Plan,
    packets: impl IntoIterator<Item = &'a [u8]>,
) -> io::Result<(usize, usize)> {
    let mut iov = [io::IoSlice::new(&[]); crate::coalesce::MAX_SEGMENTS + 1];
    iov[0] = io::IoSlice::new(head);
    for (k, p) in packets.into_iter().take(plan.count).enumerate() {
        iov[k + 1] = io::IoSlice::new(&p[plan.header_len..]);
    }
    let parts = &iov[..plan.count + 1];
    let want = parts.iter().map(|s| s.len()).sum();
    device.write_vectored(parts).map(|n| (n, want))
}

/// `read(2)` on a descriptor, as an `io::Result`.
pub(crate) fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `writev(2)` on a descriptor, as an `io::Result`.
pub(crate) fn writev_fd(fd: RawFd, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: IoSlice is ABI-compatible with struct iovec on Unix; parts is valid for reads
    // of parts.len() entries, each valid for its length.
    let n = unsafe { libc::writev(fd, parts.as_ptr().cast(), parts.len() as libc::c_int) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One end of a non-blocking `SOCK_SEQPACKET` Unix socket pair (see the module contract).
#[derive(Debug)]
pub struct PacketPipe {
    fd: OwnedFd,
}

impl PacketPipe {
    /// Two connected ends.
    pub fn pair() -> io::Result<(PacketPipe, PacketPipe)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: socketpair writes two descriptors into fds on success.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors are new and owned by nobody else.
        let [a, b] = fds.map(|fd| PacketPipe {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        });
        Ok((a, b))
    }

    /// Writes one packet.
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        writev_fd(self.as_raw_fd(), &[io::IoSlice::new(packet)])
    }
}

impl Device for PacketPipe {
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        read_fd(self.as_raw_fd(), buf)
    }
    fn write_vectored(&self, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
        writev_fd(self.as_raw_fd(), parts)
    }
}

impl AsRawFd for PacketPipe {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_carries_whole_packets_and_fills_up() {
        let (a, b) = PacketPipe::pair().unwrap();
        a.write(&[1, 2, 3]).unwrap();
        a.write(&[4]).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(b.read(&mut buf).unwrap(), 3);
        assert_eq!(b.read(&mut buf).unwrap(), 1);
        assert_eq!(buf[0], 4);
        assert_eq!(
            b.read(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        // A writer whose reader does not read gets WouldBlock, not a silent drop.
        let p = [0u8; 1400];
        let mut sent = 0;
        let err = loop {
            match a.write(&p) {
                Ok(_) => sent += 1,
                Err(e) => break e,
            }
            assert!(sent < 1_000_000, "never filled");
        };
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(sent > 0);
    }
}
