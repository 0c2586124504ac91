//! Plain-sockets backend: a VI over one TCP connection (the baseline of 000 §IV, where
//! every send and receive is a system call and two copies).
//!
//! Contract: the socket is non-blocking with Nagle off; small reads are served from a
//! staging buffer filled by one `read(2)` (header and small payload in one call); `wait` is
//! `poll(2)`; end of file
//! after an orderly close is `Closed`, a reset or error is `PeerGone`.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::sys::poll_fd;
use crate::wire::{RegionRef, Wire, WireError};

/// Reads shorter than this go through the staging buffer (one `read(2)` then serves the
/// header and a small payload); longer ones go straight into the registered buffer.
const STAGE_BYPASS: usize = 16 * 1024;

/// A connected TCP stream used as a VI byte pipe.
#[derive(Debug)]
pub(crate) struct TcpWire {
    stream: TcpStream,
    /// Bytes read from the socket and not yet handed out: `stage[at..len]`.
    stage: Box<[u8]>,
    at: usize,
    len: usize,
}

impl TcpWire {
    /// Wrap a connected stream (sets non-blocking and TCP_NODELAY).
    pub(crate) fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(Self {
            stream,
            stage: vec![0; STAGE_BYPASS].into_boxed_slice(),
            at: 0,
            len: 0,
        })
    }
}

fn map_err(e: &io::Error) -> Option<WireError> {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => None,
        _ => Some(WireError::PeerGone),
    }
}

impl Wire for TcpWire {
    fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, WireError> {
        let slices: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
        match self.stream.write_vectored(&slices) {
            Ok(n) => Ok(n),
            Err(e) => map_err(&e).map_or(Ok(0), Err),
        }
    }

    fn read(&mut self, out: &mut [u8], _region: Option<RegionRef>) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.at < self.len {
            let n = out.len().min(self.len - self.at);
            out[..n].copy_from_slice(&self.stage[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        if out.len() < STAGE_BYPASS {
            // One system call for a header and a small payload (and whatever follows).
            return match self.stream.read(&mut self.stage) {
                Ok(0) => Err(WireError::Closed),
                Ok(got) => {
                    let n = out.len().min(got);
                    out[..n].copy_from_slice(&self.stage[..n]);
                    (self.at, self.len) = (n, got);
                    Ok(n)
                }
                Err(e) => map_err(&e).map_or(Ok(0), Err),
            };
        }
        match self.stream.read(out) {
            Ok(0) => Err(WireError::Closed),
            Ok(n) => Ok(n),
            Err(e) => map_err(&e).map_or(Ok(0), Err),
        }
    }

    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError> {
        if self.at < self.len {
            return Ok(());
        }
        poll_fd(self.stream.as_raw_fd(), want_write, timeout).map_err(|_| WireError::PeerGone)?;
        Ok(())
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        // End of file or reset shows up on the next read.
        Ok(())
    }

    fn carrier(&self) -> std::io::Result<crate::wire::Carrier> {
        use std::os::fd::AsRawFd;
        crate::wire::ip_carrier(self.stream.as_raw_fd())
    }

    fn close(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}
