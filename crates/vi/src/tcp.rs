//! Plain-sockets backend: a VI over one TCP connection (the baseline of 000 §IV, where
//! every send and receive is a system call and two copies).
//!
//! Contract: the socket is non-blocking with Nagle off; `wait` is `poll(2)`; end of file
//! after an orderly close is `Closed`, a reset or error is `PeerGone`.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::sys::poll_fd;
use crate::wire::{Wire, WireError};

/// A connected TCP stream used as a VI byte pipe.
#[derive(Debug)]
pub(crate) struct TcpWire {
    stream: TcpStream,
}

impl TcpWire {
    /// Wrap a connected stream (sets non-blocking and TCP_NODELAY).
    pub(crate) fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(Self { stream })
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

    fn read(&mut self, out: &mut [u8]) -> Result<usize, WireError> {
        if out.is_empty() {
            return Ok(0);
        }
        match self.stream.read(out) {
            Ok(0) => Err(WireError::Closed),
            Ok(n) => Ok(n),
            Err(e) => map_err(&e).map_or(Ok(0), Err),
        }
    }

    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError> {
        poll_fd(self.stream.as_raw_fd(), want_write, timeout).map_err(|_| WireError::PeerGone)?;
        Ok(())
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        // End of file or reset shows up on the next read.
        Ok(())
    }

    fn close(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}
