//! Shared-memory backend: two processes on one host exchange messages through the rings of
//! `ring.rs` in a file mapped by both, after a rendezvous over a Unix-domain socket.
//!
//! Contract: connect/accept (control path, like the VI kernel agent of 000 §III.A) go
//! through the kernel: the connector creates `/dev/shm/mslink-vi-*`, sends its name over
//! the Unix socket, waits for the acceptor's one-byte ack, then unlinks the file so nothing
//! is left behind. The socket stays open for the life of the connection only as a liveness
//! signal: when the peer process dies the kernel closes it, and the survivor sees a
//! hang-up and reports `PeerGone` (after draining what the peer had already published)
//! instead of waiting forever. The data path never touches the socket.

pub(crate) mod ring;

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sys::{poll_fd, SharedMap};
use crate::wire::{RegionRef, Wire, WireError};
use ring::{mapping_len, Endpoint};

const SHM_PREFIX: &str = "/dev/shm/mslink-vi-";
/// Longest slice of a blocking wait before the peer's liveness is checked again.
const WAIT_SLICE: Duration = Duration::from_millis(20);

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// A connected shared-memory pipe.
#[derive(Debug)]
pub(crate) struct ShmWire {
    ep: Endpoint,
    ctrl: UnixStream,
}

/// Connect to the acceptor listening on the Unix socket `path`, with rings of `cap` bytes
/// per direction (a power of two).
pub(crate) fn connect(path: &str, cap: usize, timeout: Duration) -> io::Result<ShmWire> {
    if !cap.is_power_of_two() || cap < 64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "ring size must be a power of two >= 64",
        ));
    }
    let mut ctrl = UnixStream::connect(path)?;
    ctrl.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "{SHM_PREFIX}{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&name)?;
    let result = (|| {
        file.set_len(mapping_len(cap) as u64)?;
        let map = SharedMap::map(&file, mapping_len(cap))?;
        let ep = Endpoint::create(map, cap).ok_or_else(|| invalid("bad ring geometry"))?;
        let len = u16::try_from(name.len()).map_err(|_| invalid("name too long"))?;
        ctrl.write_all(&len.to_le_bytes())?;
        ctrl.write_all(name.as_bytes())?;
        let mut ack = [0u8; 1];
        ctrl.read_exact(&mut ack)?;
        if ack[0] != 1 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "acceptor refused the mapping",
            ));
        }
        ctrl.set_nonblocking(true)?;
        Ok(ShmWire { ep, ctrl })
    })();
    let _ = std::fs::remove_file(&name);
    result
}

/// Accept one connection on `listener`, waiting at most `timeout`.
pub(crate) fn accept(listener: &UnixListener, timeout: Duration) -> io::Result<ShmWire> {
    let ev = poll_fd(listener.as_raw_fd(), false, timeout)?;
    if !ev.readable {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no connect request",
        ));
    }
    let (mut ctrl, _) = listener.accept()?;
    ctrl.set_nonblocking(false)?;
    ctrl.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    let mut len = [0u8; 2];
    ctrl.read_exact(&mut len)?;
    let mut name = vec![0u8; u16::from_le_bytes(len) as usize];
    ctrl.read_exact(&mut name)?;
    let name = String::from_utf8(name).map_err(|_| invalid("mapping name not UTF-8"))?;
    if !name.starts_with(SHM_PREFIX) || name.contains("..") {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("unexpected mapping name"));
    }
    // No symlinks: /dev/shm is world-writable, the name comes from the peer.
    let file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&name)?;
    if !file.metadata()?.file_type().is_file() {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("mapping is not a regular file"));
    }
    let len = usize::try_from(file.metadata()?.len()).map_err(|_| invalid("mapping too big"))?;
    let map = SharedMap::map(&file, len)?;
    let Some(ep) = Endpoint::attach(map) else {
        let _ = ctrl.write_all(&[0]);
        return Err(invalid("shared mapping header invalid"));
    };
    ctrl.write_all(&[1])?;
    ctrl.set_nonblocking(true)?;
    Ok(ShmWire { ep, ctrl })
}

impl Drop for ShmWire {
    /// A connection dropped without `disconnect` still closes in order (the peer sees
    /// `PeerClosed`); only a process that dies without running this reads as `PeerGone`.
    fn drop(&mut self) {
        self.ep.flush();
        self.ep.set_closed();
    }
}

impl ShmWire {
    fn corrupt<T>(_: ring::Corrupt) -> Result<T, WireError> {
        Err(WireError::Corrupt)
    }
}

impl Wire for ShmWire {
    fn write(&mut self, bufs: &[&[u8]]) -> Result<usize, WireError> {
        if self.ep.peer_closed() {
            return Err(WireError::Closed);
        }
        self.ep.write(bufs).or_else(Self::corrupt)
    }

    fn read(&mut self, out: &mut [u8], _region: Option<RegionRef>) -> Result<usize, WireError> {
        let n = self.ep.read(out).or_else(Self::corrupt)?;
        if n == 0 && !out.is_empty() && self.ep.peer_closed() {
            // The closed flag is set after the peer's last write: re-check, then report.
            if self.ep.rx_available().or_else(Self::corrupt)? == 0 {
                return Err(WireError::Closed);
            }
            return self.ep.read(out).or_else(Self::corrupt);
        }
        Ok(n)
    }

    fn wait(&mut self, want_write: bool, timeout: Duration) -> Result<(), WireError> {
        self.ep
            .wait(want_write, timeout.min(WAIT_SLICE))
            .or_else(Self::corrupt)?;
        self.check_alive()
    }

    fn check_alive(&mut self) -> Result<(), WireError> {
        let ev = poll_fd(self.ctrl.as_raw_fd(), false, Duration::ZERO)
            .map_err(|_| WireError::PeerGone)?;
        if (ev.hangup || ev.readable)
            && !self.ep.peer_closed()
            && self.ep.rx_available().or_else(Self::corrupt)? == 0
        {
            return Err(WireError::PeerGone);
        }
        Ok(())
    }

    fn flush(&mut self) {
        self.ep.flush();
    }

    fn close(&mut self) {
        self.ep.flush();
        self.ep.set_closed();
    }
}
