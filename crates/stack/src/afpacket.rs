//! The AF_PACKET device (Linux): a raw Ethernet socket bound to one interface, driving a
//! [`Stack`] with real frames (issue 7, "Devices"). This module does I/O and is **not** part of
//! the sans-IO protocol core; the core never calls it.
//!
//! Contract: [`AfPacket::open`] opens a `SOCK_RAW` packet socket for every protocol
//! (`ETH_P_ALL`) bound to the named interface *in the calling thread's network namespace*
//! (the socket stays in that namespace whatever the thread does afterwards), with a receive
//! timeout. [`AfPacket::transmit`] sends every frame the stack has queued; [`AfPacket::receive`]
//! hands one received frame to the stack, skipping the frames this host itself sent (which
//! packet sockets also see). Errors are `std::io::Error`s; a timeout is `Ok(false)`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use mslink_link::Instant;

use crate::graph::Stack;

/// `ETH_P_ALL` in network byte order, as `socket(2)` and `sockaddr_ll` want it.
const ETH_P_ALL_BE: u16 = (libc::ETH_P_ALL as u16).to_be();

/// A packet socket bound to one interface.
#[derive(Debug)]
pub struct AfPacket {
    fd: OwnedFd,
    ifindex: i32,
}

impl AfPacket {
    /// Opens a packet socket on interface `ifname` with receive timeout `timeout`.
    pub fn open(ifname: &str, timeout: Duration) -> io::Result<AfPacket> {
        let name = CString::new(ifname).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "interface name contains NUL")
        })?;
        // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                ETH_P_ALL_BE as i32,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: an all-zero sockaddr_ll is a valid value; we then set the fields bind needs.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL_BE;
        sll.sll_ifindex = ifindex;
        // SAFETY: `sll` is a properly initialised sockaddr_ll and the length matches it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let tv = libc::timeval {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_usec: timeout.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: `tv` is a valid timeval and the length matches it.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(AfPacket { fd, ifindex })
    }

    /// The interface index the socket is bound to.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// Sends one frame.
    pub fn send_frame(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is a valid readable buffer of the given length.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receives one frame sent by another host into `buf`; `Ok(None)` on timeout.
    pub fn recv_frame(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: zeroed sockaddr_ll is valid; recvfrom writes at most `len` bytes into it.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: `buf` is a valid writable buffer; `sll`/`len` are valid out-parameters.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                    &mut sll as *mut _ as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue; // our own transmission, looped back to packet sockets
            }
            return Ok(Some(n as usize));
        }
    }

    /// Sends every frame `stack` has queued; returns how many.
    pub fn transmit(&self, stack: &mut Stack) -> io::Result<usize> {
        let mut n = 0;
        while let Some(m) = stack.poll_transmit_msg() {
            self.send_frame(m.bytes())?;
            n += 1;
        }
        Ok(n)
    }

    /// Receives one frame (or times out, `Ok(false)`) and hands it to `stack` at `now`.
    pub fn receive(&self, now: Instant, stack: &mut Stack) -> io::Result<bool> {
        let mut buf = [0u8; 2048];
        match self.recv_frame(&mut buf)? {
            Some(n) => {
                stack.handle_frame(now, &buf[..n]);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
